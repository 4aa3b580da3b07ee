"""What a runtime tells a protocol node: the inputs of :meth:`hzfast.protocol.Node.handle`."""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from hzfast.protocol.messages import Message

__all__ = ["EffectDone", "Event", "MembershipChanged", "MessageReceived", "TimerFired"]


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event."""


@dataclass(frozen=True, slots=True)
class MembershipChanged(Event):
    """The membership view: member ids, oldest first (the first is the master), one
    lite flag per member (lite members hold no replicas; one may be master), and the
    term of the list (docs/design.md §13.1; 0 where no membership machine runs)."""

    members: tuple[int, ...]
    lite: tuple[bool, ...] = ()
    term: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.members, tuple) or not all(
                isinstance(m, int) and not isinstance(m, bool) and 0 <= m < 2**31 - 1
                for m in self.members):
            raise TypeError("members must be a tuple of member ids (ints in [0, 2**31 - 1))")
        if len(set(self.members)) != len(self.members):
            raise ValueError("members must not repeat a member id")
        if self.lite and len(self.lite) != len(self.members):
            raise ValueError(f"lite must have one flag per member ({len(self.members)}), "
                             f"got {len(self.lite)}")
        if not all(isinstance(f, bool) for f in self.lite):
            raise TypeError("lite flags must be bools")
        if type(self.term) is not int or not 0 <= self.term < 2**63:
            raise TypeError("term must be an int in [0, 2**63)")


@dataclass(frozen=True, slots=True)
class MessageReceived(Event):
    """A message arrived from ``sender`` (the network's word for who sent it), sent
    under ``term`` (the sender's :attr:`hzfast.protocol.outputs.Send.term`)."""

    sender: int
    message: Message
    term: int = 0


@dataclass(frozen=True, slots=True)
class TimerFired(Event):
    """A timer the node set (:class:`~hzfast.protocol.outputs.SetTimer`) fired."""

    key: Hashable


@dataclass(frozen=True, slots=True)
class EffectDone(Event):
    """The runtime performed effect ``effect_id``; ``ok`` False: it could not."""

    effect_id: int
    ok: bool = True
