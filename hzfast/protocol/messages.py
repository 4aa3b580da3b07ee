"""What protocol nodes send each other (docs/design.md §7).

Every message is a frozen dataclass carrying its ``sender`` (a member id) and, where the
operation is about partitions, the partition versions it was made for (inside its
:class:`MigrationInfo` records or its table copy). Member ids are non-negative ints,
unique over the cluster's lifetime (a restarted member gets a new one); they are what
the int32 slots of a replica table hold.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "FetchPartitionState",
    "Message",
    "MigrationCommit",
    "MigrationCommitResponse",
    "MigrationInfo",
    "MigrationRequest",
    "MigrationResult",
    "MigrationStatus",
    "MigrationTransfer",
    "MigrationTransferAck",
    "PartitionStateCheck",
    "PartitionStateCheckReply",
    "PartitionStateReply",
    "PartitionTableAck",
    "PartitionTableUpdate",
    "PromotionCommit",
    "PromotionCommitResponse",
    "PublishCompletedAck",
    "PublishCompletedMigrations",
    "ReplicaSyncRequest",
    "negative_reply",
]


class MigrationStatus(enum.IntEnum):
    """Where a migration is in its life."""

    ACTIVE = 0
    SUCCESS = 1
    FAILED = 2


@dataclass(frozen=True, slots=True)
class MigrationInfo:
    """One migration (or promotion) of one partition, as the master started it.

    The six decision fields are the planner's (``-1`` = none); ``initial`` is the
    master's version of the partition at start, ``final`` the version after commit, or,
    once FAILED, the bumped version the failure left (docs/design.md §7.2).
    """

    id: tuple[int, int]            #: (master id, sequence number): unique in the cluster
    partition: int
    source: int
    source_current_index: int
    source_new_index: int
    destination: int
    destination_current_index: int
    destination_new_index: int
    master: int
    initial: int
    final: int
    status: MigrationStatus = MigrationStatus.ACTIVE
    promotion: bool = False

    @property
    def increment(self) -> int:
        """Versions a commit adds: 1 + [sni > -1] + [dci > -1] (2 for a promotion)."""
        if self.promotion:
            return 2
        return 1 + (self.source_new_index > -1) + (self.destination_current_index > -1)

    def __str__(self) -> str:
        # never raises, whatever the fields hold: traces and violation messages print
        # records a faulty peer or a caller built with plain ints or odd ids
        i = self.id
        mid = f"{i[0]}.{i[1]}" if type(i) is tuple and len(i) == 2 else repr(i)
        status = self.status
        name = status.name if isinstance(status, MigrationStatus) else repr(status)
        return (f"m{mid}(p{self.partition} {self.source}@"
                f"{self.source_current_index}->{self.source_new_index} {self.destination}@"
                f"{self.destination_current_index}->{self.destination_new_index} "
                f"v{self.initial}->{self.final} {name})")


Completed = tuple[MigrationInfo, ...]


@dataclass(frozen=True, slots=True)
class Message:
    """Base of every protocol message."""

    sender: int


@dataclass(frozen=True, slots=True)
class MigrationRequest(Message):
    """Master -> owner: run ``migration`` (with the master's completed list)."""

    migration: MigrationInfo
    completed: Completed = ()


@dataclass(frozen=True, slots=True)
class MigrationTransfer(Message):
    """Owner -> destination: the replica data for ``migration`` was sent; register it."""

    migration: MigrationInfo
    completed: Completed = ()


@dataclass(frozen=True, slots=True)
class MigrationTransferAck(Message):
    """Destination -> owner: registered (``ok``) or refused."""

    migration: MigrationInfo
    ok: bool


@dataclass(frozen=True, slots=True)
class MigrationResult(Message):
    """Owner -> master: the migration's first phase succeeded or failed."""

    migration: MigrationInfo
    ok: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class MigrationCommit(Message):
    """Master -> destination: commit ``migration``."""

    migration: MigrationInfo


@dataclass(frozen=True, slots=True)
class MigrationCommitResponse(Message):
    """Destination -> master: committed (or had already), or refused."""

    migration: MigrationInfo
    ok: bool


@dataclass(frozen=True, slots=True)
class PublishCompletedMigrations(Message):
    """Master -> member: the completed-migration list (a partial table update)."""

    completed: Completed


@dataclass(frozen=True, slots=True)
class PublishCompletedAck(Message):
    """Member -> master: the list applied in full (``ok``) or was rejected part way."""

    ids: tuple[tuple[int, int], ...]
    ok: bool


def _table_eq(a: PartitionTableUpdate, b: object) -> bool:
    return (isinstance(b, PartitionTableUpdate) and type(a) is type(b) and a.sender == b.sender
            and np.array_equal(a.versions, b.versions)
            and np.array_equal(a.replicas, b.replicas) and a.completed == b.completed)


@dataclass(frozen=True, slots=True, eq=False)
class PartitionTableUpdate(Message):
    """Master -> member: the full table (replicas, versions) and completed list."""

    replicas: NDArray[np.int32]
    versions: NDArray[np.int32]
    completed: Completed = ()

    def __eq__(self, other: object) -> bool:
        return _table_eq(self, other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class PartitionTableAck(Message):
    """Member -> master: the full table was accepted (some partition equal or newer)."""

    ok: bool
    diverged: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionStateCheck(Message):
    """Master -> member: my table's stamp."""

    stamp: int


@dataclass(frozen=True, slots=True)
class PartitionStateCheckReply(Message):
    """Member -> master: whether its stamp equals the master's."""

    ok: bool


@dataclass(frozen=True, slots=True)
class FetchPartitionState(Message):
    """New master -> member: send me your table, completed list and active migrations."""


@dataclass(frozen=True, slots=True, eq=False)
class PartitionStateReply(Message):
    """Member -> new master: its state (``initialized`` False: "no table")."""

    initialized: bool
    replicas: NDArray[np.int32] | None = None
    versions: NDArray[np.int32] | None = None
    completed: Completed = ()
    active: tuple[MigrationInfo, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not PartitionStateReply:
            return False
        same = (self.replicas is None) == (other.replicas is None)
        if same and self.replicas is not None and other.replicas is not None:
            same = (np.array_equal(self.replicas, other.replicas)
                    and np.array_equal(self.versions, other.versions))  # type: ignore[arg-type]
        return (same and self.sender == other.sender and self.initialized == other.initialized
                and self.completed == other.completed and self.active == other.active)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True, eq=False)
class PromotionCommit(Message):
    """Master -> destination: these promotions, the table with them applied, and the
    master's completed list (a table without it could move a partition past a migration
    the member still has active, and nothing would settle it)."""

    replicas: NDArray[np.int32]
    versions: NDArray[np.int32]
    promotions: tuple[MigrationInfo, ...]
    destination: int = -1
    batch: int = 0
    completed: Completed = ()

    def __eq__(self, other: object) -> bool:
        return (type(other) is PromotionCommit and self.sender == other.sender
                and self.promotions == other.promotions and self.batch == other.batch
                and self.completed == other.completed
                and np.array_equal(self.replicas, other.replicas)
                and np.array_equal(self.versions, other.versions))

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class PromotionCommitResponse(Message):
    """Destination -> master: the promotion batch was applied (``ok``) or not."""

    batch: int
    ok: bool


@dataclass(frozen=True, slots=True)
class ReplicaSyncRequest(Message):
    """Legacy design: a new backup asks the owner for a copy of ``partition``."""

    partition: int


def negative_reply(receiver: int, m: Message, reason: str = "refused") -> Message | None:
    """The refusal member ``receiver`` sends for ``m`` when it does not take it, or None
    when ``m`` waits for no answer (docs/design.md §7.3, §7.6, §7.7). ``reason`` goes
    into the one refusal that carries one (a ``MigrationResult``)."""
    make = _REFUSALS.get(type(m))
    return make(receiver, m, reason) if make is not None else None


_REFUSALS: dict[type, Callable[[int, Any, str], Message]] = {
    MigrationRequest: lambda r, m, why: MigrationResult(r, m.migration, False, why),
    MigrationTransfer: lambda r, m, why: MigrationTransferAck(r, m.migration, False),
    MigrationCommit: lambda r, m, why: MigrationCommitResponse(r, m.migration, False),
    PublishCompletedMigrations: lambda r, m, why: PublishCompletedAck(
        r, tuple(x.id for x in m.completed), False),
    PromotionCommit: lambda r, m, why: PromotionCommitResponse(r, m.batch, False),
    PartitionStateCheck: lambda r, m, why: PartitionStateCheckReply(r, False),
    PartitionTableUpdate: lambda r, m, why: PartitionTableAck(r, False),
}
