"""What a protocol node asks of its runtime: the outputs of :meth:`hzfast.protocol.Node.handle`."""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from hzfast.protocol.messages import Message, MigrationInfo

__all__ = [
    "EFFECT_KINDS",
    "MARKS",
    "CancelTimer",
    "Effect",
    "Mark",
    "Output",
    "Send",
    "SetTimer",
]

#: What an :class:`Effect` asks of the runtime's replica data:
#:
#: ``copy``     send this member's data of ``partition`` to member ``to``, held there
#:              provisionally under the migration's id (report ok once it arrived);
#: ``install``  make the data held provisionally for ``migration`` this member's replica
#:              data of ``partition`` (a destination's commit);
#: ``discard``  drop the data held provisionally for ``migration`` (a destination's rollback);
#: ``clear``    drop this member's replica data of ``partition``;
#: ``promote``  this member's backup copy of ``partition`` becomes the owner's (no data moves);
#: ``sync``     legacy design: send this member's data of ``partition`` to member ``to``,
#:              which takes it as its replica data on arrival.
EFFECT_KINDS = ("copy", "install", "discard", "clear", "promote", "sync")

#: Every protocol step a node marks.
MARKS = (
    "migration_started", "replica_copied", "destination_committed", "master_committed",
    "table_published", "source_finalized", "destination_finalized", "migration_failed",
    "promotion_committed", "completed_evicted", "tables_fetched", "recovery_published",
    "diverged_rejected", "partial_update_rejected", "message_rejected",
)


@dataclass(frozen=True, slots=True)
class Output:
    """Base of every output."""


@dataclass(frozen=True, slots=True)
class Send(Output):
    """Send ``message`` to member ``to``."""

    to: int
    message: Message


@dataclass(frozen=True, slots=True)
class SetTimer(Output):
    """Fire :class:`~hzfast.protocol.events.TimerFired` with ``key`` at time ``at``
    (replaces a pending timer of the same key)."""

    key: Hashable
    at: int


@dataclass(frozen=True, slots=True)
class CancelTimer(Output):
    """Forget the timer ``key`` (a no-op when none is pending)."""

    key: Hashable


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


@dataclass(frozen=True, slots=True)
class Mark(Output):
    """A named protocol step (see :data:`MARKS`), for tests and traces."""

    name: str
    partition: int = -1
    migration: MigrationInfo | None = None
    detail: str = ""
