"""What a protocol node asks of its runtime: the outputs of :meth:`hzfast.protocol.Node.handle`."""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from hzfast.protocol.kinds import EffectKind, MarkName
from hzfast.protocol.messages import Message, MigrationInfo

__all__ = [
    "EFFECT_KINDS",
    "MARKS",
    "Effect",
    "Mark",
    "Output",
    "Send",
    "SetTimer",
]

#: What an :class:`Effect` asks of the runtime's replica data (see
#: :class:`~hzfast.protocol.kinds.EffectKind` for each).
EFFECT_KINDS = tuple(EffectKind)

#: Every protocol step a node marks (:class:`~hzfast.protocol.kinds.MarkName`).
MARKS = tuple(MarkName)


@dataclass(frozen=True, slots=True)
class Output:
    """Base of every output."""


@dataclass(frozen=True, slots=True)
class Send(Output):
    """Send ``message`` to member ``to``; ``term`` is the sender's term, which the
    runtime delivers with it (:class:`hzfast.protocol.events.MessageReceived`)."""

    to: int
    message: Message
    term: int = 0


@dataclass(frozen=True, slots=True)
class SetTimer(Output):
    """Fire :class:`~hzfast.protocol.events.TimerFired` with ``key`` at time ``at``
    (replaces a pending timer of the same key)."""

    key: Hashable
    at: int


@dataclass(frozen=True, slots=True)
class Effect(Output):
    """Do something to this member's replica data, then report
    :class:`~hzfast.protocol.events.EffectDone` with ``id`` (see :data:`EFFECT_KINDS`).

    A runtime performs one member's effects in the order the node returned them (a
    source's ``clear`` before a later ``install`` of the same partition, an ``install``
    before a later ``copy``); their completions may be reported in any order."""

    id: int
    kind: str
    partition: int
    migration: MigrationInfo | None = None
    to: int = -1
    #: on ``install``: whether the member holds the data as a replica afterwards (the
    #: migration's new index is a data index, ``<= backup_count``); otherwise the install
    #: only settles the transfer and the member drops what it held (docs/design.md §7.3(i))
    keep: bool = True


@dataclass(frozen=True, slots=True)
class Mark(Output):
    """A named protocol step (see :data:`MARKS`), for tests and traces."""

    name: str
    partition: int = -1
    migration: MigrationInfo | None = None
    detail: str = ""
