"""Membership's data: settings, member lists, messages and outputs (docs/design.md §13).

The state machine that uses them is :mod:`hzfast.protocol.membership`, which also exports
every name here.
"""
from __future__ import annotations

from dataclasses import dataclass

from hzfast.protocol.kinds import StrEnum
from hzfast.protocol.messages import Message
from hzfast.protocol.outputs import Output

__all__ = [
    "MEMBERSHIP_MESSAGES",
    "TICK",
    "Claim",
    "ClaimReply",
    "Heartbeat",
    "JoinRequest",
    "ListAccept",
    "ListChanged",
    "ListCommit",
    "ListProposal",
    "ListRequest",
    "Malformed",
    "MemberList",
    "MembershipConfig",
    "MembershipMark",
    "MergeProbe",
    "Removed",
    "valid_key",
    "valid_list",
    "valid_members",
]

TICK = ("membership",)           # the one timer key a Membership asks for


class MembershipMark(StrEnum):
    """The membership steps a member marks."""

    HEARTBEAT_STALE = "heartbeat_stale"
    PAUSE_DETECTED = "pause_detected"
    SUSPECTED = "member_suspected"
    PROPOSED = "list_proposed"
    COMMITTED = "list_committed"
    ADOPTED = "list_adopted"
    CLAIMED = "mastership_claimed"
    REMOVED = "member_removed"
    MERGING = "cluster_merging"
    REJECTED = "membership_rejected"


# ---------------------------------------------------------------------------- settings
@dataclass(frozen=True, slots=True)
class MembershipConfig:
    """Membership settings (the same on every member), in the runtime's time units.

    Parameters
    ----------
    heartbeat_interval : int
        Time between a member's heartbeats (and its membership duties).
    heartbeat_timeout : int
        Silence after which a member is suspected (Hazelcast's "max no heartbeat");
        at least 4 heartbeat intervals.
    min_cluster_size : int, "majority" or None
        Split-brain protection: the smallest side that keeps serving. ``None`` (off, as
        in Hazelcast), an int ``>= 1``, or ``"majority"`` of the last committed list.
    proposal_timeout : int or None
        How long a proposal or claim waits for acceptors (default: the heartbeat timeout).
    """

    heartbeat_interval: int = 10
    heartbeat_timeout: int = 60
    min_cluster_size: int | str | None = None
    proposal_timeout: int | None = None

    def __post_init__(self) -> None:
        for name in ("heartbeat_interval", "heartbeat_timeout"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"MembershipConfig.{name} must be an int >= 1, got {v!r}")
        if self.heartbeat_timeout < 4 * self.heartbeat_interval:
            raise ValueError("MembershipConfig.heartbeat_timeout must be at least 4 "
                             "heartbeat intervals")
        m = self.min_cluster_size
        if not (m is None or m == "majority"
                or (isinstance(m, int) and not isinstance(m, bool) and m >= 1)):
            raise ValueError(f"MembershipConfig.min_cluster_size must be None, an int >= 1 "
                             f"or 'majority', got {m!r}")
        t = self.proposal_timeout
        if t is not None and (not isinstance(t, int) or isinstance(t, bool) or t < 1):
            raise ValueError(f"MembershipConfig.proposal_timeout must be an int >= 1 or "
                             f"None, got {t!r}")

    @property
    def protected(self) -> bool:
        """Whether split-brain protection is on."""
        return self.min_cluster_size is not None

    def quorum(self, size: int) -> int:
        """The members a side of a cluster whose last committed list has ``size`` members
        needs to serve and to commit a change (1 when protection is off)."""
        m = self.min_cluster_size
        if m is None:
            return 1
        if m == "majority":
            return size // 2 + 1
        assert isinstance(m, int)
        return m


# ---------------------------------------------------------------------------- lists
@dataclass(frozen=True, slots=True)
class MemberList:
    """A member list: ``members`` oldest first (the first is the master)."""

    term: int
    version: int
    members: tuple[int, ...]

    @property
    def key(self) -> tuple[int, int]:
        """The list's place in the order of lists."""
        return (self.term, self.version)

    @property
    def master(self) -> int:
        return self.members[0] if self.members else -1


# ---------------------------------------------------------------------------- messages
@dataclass(frozen=True, slots=True)
class Heartbeat(Message):
    """I am alive: my committed list's key, the highest key I promised, my clock, and the
    send time of the last heartbeat I received from you (-1: none, or I vouch for you no
    longer)."""

    key: tuple[int, int]
    promised: tuple[int, int]
    sent_at: int
    echo: int


@dataclass(frozen=True, slots=True)
class Claim(Message):
    """Candidate -> members of its list ``base``: grant me term ``term``; I would keep
    ``members`` (the first phase of a change in a new term)."""

    base: tuple[int, int]
    term: int
    members: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ClaimReply(Message):
    """The answer to a claim of ``term``; ``accepted``: the list this member accepted as
    the successor of the claim's base and has not seen committed (None: none)."""

    term: int
    ok: bool
    accepted: MemberList | None = None


@dataclass(frozen=True, slots=True)
class ListProposal(Message):
    """Proposer -> members: accept ``lst`` as the successor of the committed list
    ``base`` (the second phase). ``recovered``: ``lst`` is a list some member accepted
    for this base in an earlier round (it may have been committed), proposed again."""

    base: tuple[int, int]
    lst: MemberList
    recovered: bool = False


@dataclass(frozen=True, slots=True)
class ListAccept(Message):
    """The answer to a proposal of ``key``."""

    key: tuple[int, int]
    ok: bool


@dataclass(frozen=True, slots=True)
class ListCommit(Message):
    """A committed list: from its proposer, or in answer to a heartbeat of a member the
    sender does not list or that is behind (explicit suspicion), or to a request."""

    lst: MemberList


@dataclass(frozen=True, slots=True)
class ListRequest(Message):
    """Send me your committed list (I saw a newer key than mine)."""


@dataclass(frozen=True, slots=True)
class JoinRequest(Message):
    """Member ``joiner`` asks to join (sent by the joiner to members it knows, and
    forwarded by a member to its master)."""

    joiner: int


@dataclass(frozen=True, slots=True)
class MergeProbe(Message):
    """A master to a member outside its list that it once knew: my committed list. A
    master that receives it and leads the smaller cluster merges (protection off)."""

    lst: MemberList


MEMBERSHIP_MESSAGES = (Heartbeat, Claim, ClaimReply, ListProposal, ListAccept, ListCommit,
                       ListRequest, JoinRequest, MergeProbe)


# ---------------------------------------------------------------------------- outputs
@dataclass(frozen=True, slots=True)
class ListChanged(Output):
    """This member's committed list is now ``lst``: a runtime feeds
    :class:`~hzfast.protocol.events.MembershipChanged` of ``lst.members`` to its node."""

    lst: MemberList


@dataclass(frozen=True, slots=True)
class Removed(Output):
    """This member is out of the cluster (``reason``): it stops serving and rejoins under
    a new member id, through ``into`` (a member of the cluster it joins; -1: any known)."""

    reason: str
    into: int = -1


class Malformed(ValueError):
    """A membership message whose fields are not what its type says."""


def valid_key(k: object) -> bool:
    return (type(k) is tuple and len(k) == 2 and type(k[0]) is int and type(k[1]) is int
            and 0 <= k[0] < 2**62 and 0 <= k[1] < 2**62)


def valid_members(ms: object) -> bool:
    return (type(ms) is tuple and 0 < len(ms) <= 4096
            and all(type(m) is int and 0 <= m < 2**31 - 1 for m in ms)
            and len(set(ms)) == len(ms))


def valid_list(x: object) -> bool:
    return (type(x) is MemberList and type(x.term) is int and type(x.version) is int
            and 0 <= x.term < 2**62 and 0 <= x.version < 2**62 and valid_members(x.members))
