"""The protocol node: one per member, the same code on every member (docs/design.md §7).

A :class:`Node` owns one member's view of the partition table (replicas and versions),
its completed-migration list and its active migrations, and — while it is the oldest
member of its view — the master's work: repair, promotions, planning, the parallel
execution of the plan, commits, publication and, after a master change, the recovery of
the table from every member. It performs no I/O: :meth:`Node.handle` takes one event and
the current time and returns the outputs (messages to send, timers, effects on replica
data, marks). The same events give the same outputs.

Two designs are implemented. ``"safe"`` commits every migration on the destination, then
on the master, then lets the source drop its copy (Hazelcast 3.7+; docs/design.md §7
rules 1–9). ``"legacy"`` is the earlier design that lost data in Hazelcast's issue #5444
(rule 10); it exists so that the simulator can show its checker sees loss.
"""
from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast._check import owned
from hzfast.arrangement import arrange
from hzfast.hashing import stamp as _stamp
from hzfast.members import Members
from hzfast.migration.apply import apply_migrations
from hzfast.migration._executor import ANSWER_ACCEPTED as _ACCEPTED
from hzfast.migration.executor import Executor
from hzfast.migration.plan import MigrationPlan
from hzfast.protocol import _lists, _merge, _scan
from hzfast.protocol import messages as msg
from hzfast.protocol._build import Builder
from hzfast.protocol.events import (
    EffectDone,
    Event,
    MembershipChanged,
    MessageReceived,
    TimerFired,
)
from hzfast.protocol.messages import Message, MigrationInfo, MigrationStatus
from hzfast.protocol.outputs import Effect, Mark, Output, Send, SetTimer
from hzfast.protocol.tables import DivergedTableError, merge_tables

__all__ = ["DESIGNS", "Config", "MemberState", "Node"]

DESIGNS = ("safe", "legacy")
SUCCESS, FAILED, ACTIVE = MigrationStatus.SUCCESS, MigrationStatus.FAILED, MigrationStatus.ACTIVE
MigrationId = tuple[int, int]
_INT32_END = 2**31                  # versions and member ids travel as int32
#: versions a member accepts from others are below this: the bumps a master adds on
#: failures then never wrap an int32 (an honest partition needs a billion changes)
VERSION_LIMIT = 2**30
# the list kernels, bound once: a module attribute costs a lookup at every call
_well_formed, _unchanged = _lists.well_formed, _lists.unchanged
_attention, _keyed, _keep_kernel = _lists.attention, _lists.keyed, _lists.keep_current
_of_partition, _apply_to, _settled_copy = _lists.of_partition, _lists.apply_to, _lists.settled
_plain_vector, _apply_fitting = _lists.plain_vector, _lists.apply_fitting
_WAKE = ("wake",)                   # the one timer key a node asks its runtime for

# The frozen dataclasses a step makes most, built straight into their slots (every field,
# in field order; docs/design.md §12): the same objects their constructors make.
_SEND = Builder(Send)
_MARK = Builder(Mark)
_EFFECT = Builder(Effect)
_SET_TIMER = Builder(SetTimer)
_INFO = Builder(MigrationInfo)
_REQUEST = Builder(msg.MigrationRequest)
_TRANSFER = Builder(msg.MigrationTransfer)
_TRANSFER_ACK = Builder(msg.MigrationTransferAck)
_RESULT = Builder(msg.MigrationResult)
_COMMIT = Builder(msg.MigrationCommit)
_COMMIT_RESPONSE = Builder(msg.MigrationCommitResponse)
_PUBLISH = Builder(msg.PublishCompletedMigrations)
_PUBLISH_ACK = Builder(msg.PublishCompletedAck)


@dataclass(frozen=True, slots=True)
class Config:
    """A cluster's protocol settings (the same on every member).

    Times are in the runtime's abstract units (the simulator's ticks).
    """

    partition_count: int = 271
    backup_count: int = 1
    max_parallel_migrations: int = 10
    design: str = "safe"
    replica_count: int = 7             #: table width (Hazelcast: 7)
    timeout: int = 200                 #: a request, commit, fetch or promotion unanswered
    retry_delay: int = 60              #: the master's pause after a failed migration run
    state_check_interval: int = 500    #: the master's stamp check period (0: off)
    publish_threshold: int = 10        #: publish the completed list at this many entries

    def __post_init__(self) -> None:
        for name in ("partition_count", "backup_count", "max_parallel_migrations",
                     "replica_count", "timeout", "retry_delay", "state_check_interval",
                     "publish_threshold"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"Config.{name} must be an int, got {type(v).__name__}")
        if not 1 <= self.partition_count <= 10_000_000:
            raise ValueError(f"Config.partition_count must be in 1..10,000,000, got "
                             f"{self.partition_count}")
        if not 1 <= self.replica_count <= 7:
            raise ValueError(f"Config.replica_count must be in 1..7, got {self.replica_count}")
        if not 0 <= self.backup_count < self.replica_count:
            raise ValueError(f"Config.backup_count must be in 0..replica_count - 1 "
                             f"({self.replica_count - 1}), got {self.backup_count}")
        if self.max_parallel_migrations < 1:
            raise ValueError("Config.max_parallel_migrations must be >= 1")
        if self.timeout < 1 or self.retry_delay < 0 or self.state_check_interval < 0:
            raise ValueError("Config.timeout must be >= 1 and the other periods >= 0")
        if self.publish_threshold < 1:
            raise ValueError("Config.publish_threshold must be >= 1")
        if self.design not in DESIGNS:
            raise ValueError(f"Config.design must be one of {DESIGNS}, got {self.design!r}")


class MemberState:
    """A member's partition-service state (docs/design.md §7 rule 9), first match wins."""

    FETCHING_PARTITION_TABLE = "FETCHING_PARTITION_TABLE"
    MIGRATION_LOCAL = "MIGRATION_LOCAL"
    REPLICA_NOT_OWNED = "REPLICA_NOT_OWNED"
    MIGRATION_ON_MASTER = "MIGRATION_ON_MASTER"
    REPLICA_NOT_SYNC = "REPLICA_NOT_SYNC"
    SAFE = "SAFE"


@functools.lru_cache(maxsize=64)
def _registry(n: int, lite: tuple[bool, ...]) -> Members:
    """The arranger's member registry for ``n`` view positions with these lite flags, kept
    (a registry is immutable, and what the arranger derives from it is cached on it: a
    master rebuilding it for every plan built the members' uuid strings and group layout
    anew each time)."""
    return Members.from_count(n, lite=lite)


def _positions(members: tuple[int, ...], lite: frozenset[int]) -> NDArray[np.int32]:
    """The repair's lookup table (read-only): each data member's id gives its view
    position, every other id up to the largest member id gives -1. Kept per view while
    the ids are small (at most 256 KiB each)."""
    if max(members, default=-1) < 1 << 16:
        return _positions_kept(members, lite)
    return _positions_made(members, lite)


def _positions_made(members: tuple[int, ...], lite: frozenset[int]) -> NDArray[np.int32]:
    code = np.full(max(members, default=-1) + 1, -1, dtype=np.int32)
    code[np.asarray(members, dtype=np.int64)] = np.arange(len(members), dtype=np.int32)
    if lite:
        code[np.asarray(sorted(lite), dtype=np.int64)] = -1
    code.setflags(write=False)
    return code


_positions_kept = functools.lru_cache(maxsize=64)(_positions_made)


def apply_to_row(row: NDArray[np.int32], x: MigrationInfo) -> None:
    """Apply migration ``x`` to one table row in place (Hazelcast's slot updates)."""
    if x.source_current_index >= 0:
        row[x.source_current_index] = -1
    if x.destination_current_index >= 0:
        row[x.destination_current_index] = -1
    if x.source_new_index >= 0:
        row[x.source_new_index] = x.source
    if x.destination_new_index >= 0:
        row[x.destination_new_index] = x.destination


def migration_fits_row(row: NDArray[np.int32], x: MigrationInfo) -> bool:
    """Whether ``x`` was made from this row and writes a valid one: its source at
    ``source_current_index`` and its destination at ``destination_current_index`` (where
    those are slots), and each member it writes (-1 or a member id) held nowhere else in
    the row once applied. A member's row at the entry's initial version is the master's
    row then, so an honest entry always fits; one that does not is rejected like a
    version that does not line up (docs/design.md §7.5)."""
    R = len(row)
    sci, dci = x.source_current_index, x.destination_current_index
    sni, dni = x.source_new_index, x.destination_new_index
    if sci >= 0 and int(row[sci]) != x.source or dci >= 0 and int(row[dci]) != x.destination:
        return False
    after = [int(v) for v in row]
    for j, v in ((sci, -1), (dci, -1), (sni, x.source), (dni, x.destination)):
        if 0 <= j < R:
            after[j] = v
    for j in {j for j in (sni, dni) if 0 <= j < R}:
        v = after[j]
        if v < -1 or v >= 0 and any(after[k] == v for k in range(R) if k != j):
            return False
    return True


def _apply_fitting_row(table: NDArray[np.int32], p: int, x: MigrationInfo) -> bool:
    """``_apply_row(table, p, x)`` when ``migration_fits_row(table[p], x)``, and whether
    it did: in C where the table and ``x`` allow it, by the Python rule otherwise."""
    done = _apply_fitting(table, p, x, MigrationInfo)
    if done >= 0:
        return done > 0
    if not migration_fits_row(table[p], x):
        return False
    apply_to_row(table[p], x)
    return True


def _apply_row(table: NDArray[np.int32], p: int, x: MigrationInfo) -> None:
    """``apply_to_row(table[p], x)``: in C where the table and ``x`` allow it (docs/design.md
    §11), by the Python rule otherwise."""
    if not _apply_to(table, p, x, MigrationInfo):
        apply_to_row(table[p], x)


def _settled(x: MigrationInfo, status: MigrationStatus, final: int | None = None
             ) -> MigrationInfo:
    """``x`` with another status (and, given, final version): ``dataclasses.replace``
    without its per-call field introspection (it runs for every commit and failure);
    a slot copy in C for a plain MigrationInfo."""
    y: MigrationInfo | None = _settled_copy(x, status, final, MigrationInfo)
    if y is not None:
        return y
    return _INFO(x.id, x.partition, x.source, x.source_current_index,
                 x.source_new_index, x.destination, x.destination_current_index,
                 x.destination_new_index, x.master, x.initial,
                 x.final if final is None else final, status, x.promotion)


def _is_table(a: NDArray[Any]) -> bool:
    """A C-contiguous int32 (P, R) array, as the _scan kernels take it."""
    return a.dtype == np.int32 and a.ndim == 2 and a.flags.c_contiguous


def _ids_of(dense: NDArray[np.int32], ids: NDArray[np.int64]) -> NDArray[np.int32]:
    """A table in view positions (as the arranger and planner see it) back in member ids."""
    return np.where(dense >= 0, ids[np.maximum(dense, 0)], -1).astype(np.int32)


class _Run:
    """The master's running plan: the executor and the migrations in flight."""

    __slots__ = ("aborted", "changes", "core", "executor", "idle_at", "ids", "inflight")

    def __init__(self, executor: Executor, ids: NDArray[np.int64]) -> None:
        self.executor = executor
        # the executor's kernel, called directly on the hot path (the wrapper's checks are
        # for callers outside hzfast; a refusal goes back through the wrapper to raise)
        self.core = executor._core
        self.ids = ids                                  # dense index -> member id
        self.inflight: dict[MigrationId, tuple[int, MigrationInfo, str, int]] = {}
        self.aborted = False
        self.changes = 0            # executor calls that change its state (started/finished)
        self.idle_at = -1           # ``changes`` when ready() last had nothing to start


def _finished(run: _Run, i: int, ok: bool) -> None:
    """``run.executor.finished(i, ok)`` through its kernel (``i``: a row in flight)."""
    if not 0 <= i < run.core.n or run.core.finish(i, ok) != _ACCEPTED:
        run.executor.finished(i, ok)          # raises the refusal (or the bad row)


class Node:
    """One member's protocol state machine (sans-I/O).

    Parameters
    ----------
    member_uuid : int
        This member's id: an int in ``[0, 2**31 - 1)``, unique over the cluster's life.
    config : Config
        The cluster's settings (the same on every member).

    Notes
    -----
    :meth:`handle` is the only mutator. Outputs are returned in the order the node made
    them; messages a node sends to itself are handled inside the same call.
    """

    def __init__(self, member_uuid: int, config: Config | None = None) -> None:
        if not isinstance(member_uuid, int) or isinstance(member_uuid, bool):
            raise TypeError(f"member_uuid must be an int, got {type(member_uuid).__name__}")
        if not 0 <= member_uuid < 2**31 - 1:
            raise ValueError(f"member_uuid must be in [0, 2**31 - 1), got {member_uuid}")
        if config is None:
            config = Config()
        if not isinstance(config, Config):
            raise TypeError(f"config must be a hzfast.protocol.Config, got {type(config).__name__}")
        self.me = member_uuid
        self.config = config
        self._legacy = config.design == "legacy"
        P, R = config.partition_count, config.replica_count
        # the settings read on every message, as fields (the Config is frozen)
        self._P, self._R, self._bc = P, R, config.backup_count
        self._timeout = config.timeout
        self.replicas = np.full((P, R), -1, dtype=np.int32)
        self.versions = np.zeros(P, dtype=np.int32)
        self.initialized = False
        self.members: tuple[int, ...] = ()
        self.lite: frozenset[int] = frozenset()
        # the completed list (:attr:`completed`) in three parts: the entries received last
        # (or, on the master, all of them), then the retained ones: _front in reverse
        # order, then _back (docs/design.md §11)
        self._completed: dict[MigrationId, MigrationInfo] = {}
        self._front: dict[MigrationId, MigrationInfo] = {}
        self._back: dict[MigrationId, MigrationInfo] = {}
        self.active: dict[int, MigrationInfo] = {}
        self._carried: dict[int, tuple[MigrationInfo, ...]] = {}   # a request's list, forwarded
        self._install_eid: dict[MigrationId, int] = {}   # destination: its install effect
        # new owner by a destination commit the master has not confirmed yet: no writes
        self._unconfirmed: dict[int, MigrationId] = {}
        self._waiters: dict[int, list[tuple[int, msg.Message] | MigrationInfo]] = {}
        self._finalized: set[MigrationId] = set()
        self._finalizing: dict[int, int] = {}              # partition -> pending effects
        # copies a source kept past its finalization because its table's data slots for
        # the partition listed no live member (§7.3(i)): partition -> the migration (None:
        # a plain clear) they go with once the row lists one
        self._kept: dict[int, MigrationInfo | None] = {}
        self._effects: dict[int, tuple[str, MigrationInfo | None, int]] = {}
        self._effect_seq = 0
        self._out: list[Output] = []
        self._inbox: deque[tuple[int, msg.Message]] = deque()
        self._now = 0
        # master state
        self._seq = 0
        self._run: _Run | None = None
        self._run_plan: MigrationPlan | None = None
        self._legacy_seen = self.replicas.copy()
        self._dirty = False
        self._paused_until: int | None = None       # after a failed run: no plan before
        self._fetching: dict[int, msg.PartitionStateReply | None] | None = None
        self._promotions: dict[int, tuple[int, tuple[MigrationInfo, ...], bool | None]] = {}
        self._promotion_seq = 0
        self._publish: tuple[tuple[MigrationId, ...], dict[int, bool | None]] | None = None
        self._check_timer = False
        self._was_master = False
        # the timeouts (key -> time), the one runtime timer asked for (its time, None if
        # none) and whether the node is running the timeouts that timer found due
        self._deadlines: dict[Hashable, int] = {}
        self._wake: int | None = None
        self._waking = False
        self._told: set[int] = set()                          # members sent the full table
        self.diverged = 0                                     # diverged partitions seen
        # _keep_current's bookkeeping: the dict it returned, its length, the versions then,
        # partition -> ids in it, and ids kept then without being current
        self._kc_dict: dict[MigrationId, MigrationInfo] | None = None
        self._kc_len = 0
        self._kc_vers = self.versions.copy()
        self._kc_index: dict[int, set[MigrationId]] = {}
        self._kc_recheck: set[MigrationId] = set()

    # ------------------------------------------------------------------ views
    @property
    def completed(self) -> dict[MigrationId, MigrationInfo]:
        """The completed-migration list this member holds, by id, in list order (the dict
        itself: changes to it are the node's)."""
        if self._front or self._back:
            self._join_completed()
        return self._completed

    @completed.setter
    def completed(self, value: dict[MigrationId, MigrationInfo]) -> None:
        self._completed = value
        self._front, self._back = {}, {}

    def _join_completed(self) -> None:
        """Join the list's parts into one dict (same entries, same order)."""
        d = dict(self._completed)
        front = self._front
        for mid in reversed(front):
            d[mid] = front[mid]
        d.update(self._back)
        if self._kc_dict is self._completed:    # the same entries: the index still holds
            self._kc_dict = d
            self._kc_len = len(d)
        self._completed = d
        self._front, self._back = {}, {}

    @property
    def master(self) -> int:
        """The master of this node's view (the oldest member), -1 before any view."""
        return self.members[0] if self.members else -1

    @property
    def is_master(self) -> bool:
        return bool(self.members) and self.members[0] == self.me

    @property
    def data_members(self) -> tuple[int, ...]:
        return tuple(m for m in self.members if m not in self.lite)

    @property
    def stamp(self) -> int:
        """The stamp of this node's partition versions (docs/design.md §3)."""
        return int(_stamp(self.versions))

    @property
    def busy(self) -> bool:
        """The master has work queued or in flight (a run, promotions, a recovery, a plan due)."""
        return (self._run is not None or bool(self._promotions) or self._fetching is not None
                or self._dirty)

    def state(self, master_busy: bool = False) -> str:
        """This member's :class:`MemberState`; ``master_busy``: the master's :attr:`busy`."""
        cfg = self.config
        if self._fetching is not None:
            return MemberState.FETCHING_PARTITION_TABLE
        if not self.initialized:
            return MemberState.MIGRATION_LOCAL
        groups = len(self.data_members)
        need = min(groups, cfg.replica_count)
        members = np.asarray(self.data_members, dtype=np.int32)
        head = self.replicas[:, :need]
        if need and not self._held_by(head, members).all():
            return MemberState.REPLICA_NOT_OWNED
        if self.active or self._finalizing or (self.is_master and self.busy):
            return MemberState.MIGRATION_LOCAL
        if not self.is_master and master_busy:
            return MemberState.MIGRATION_ON_MASTER
        return MemberState.SAFE

    def accepts_writes(self, partition: int) -> bool:
        """Whether this member takes client writes to ``partition`` now (it owns it and
        nothing migrates it here)."""
        return (self.initialized and self._fetching is None
                and self.replicas.item(partition, 0) == self.me
                and partition not in self.active and partition not in self._finalizing
                and partition not in self._unconfirmed)

    def backups(self, partition: int) -> NDArray[np.int32]:
        """The members this node lists at backup indices ``1..backup_count``."""
        return self.replicas[partition, 1:self._bc + 1]

    # ------------------------------------------------------------------ input
    def handle(self, event: Event, now: int) -> list[Output]:
        """Process one event at time ``now``; return the outputs it causes.

        Raises
        ------
        TypeError
            ``event`` is not an event, ``now`` not an int. Nothing a faulty network can
            deliver raises: bad messages are rejected with a mark and, where the sender
            waits for one, a negative reply.
        """
        if type(now) is not int and (not isinstance(now, int) or isinstance(now, bool)):
            raise TypeError(f"now must be an int, got {type(now).__name__}")
        self._now = now
        self._out = []
        waking = False
        t = type(event)
        if t is MessageReceived or isinstance(event, MessageReceived):
            m = event.message                        # type: ignore[attr-defined]
            if not isinstance(m, Message):
                raise TypeError(f"message must be a hzfast.protocol message, got "
                                f"{type(m).__name__}")
            self._receive(event.sender, m)           # type: ignore[attr-defined]
        elif t is EffectDone or isinstance(event, EffectDone):
            self._effect_done(event.effect_id, bool(event.ok))  # type: ignore[attr-defined]
        elif isinstance(event, MembershipChanged):
            self._membership(event)
        elif isinstance(event, TimerFired):
            key = event.key
            if key is _WAKE or (type(key) is tuple and len(key) == 1 and type(key[0]) is str
                                and key[0] == "wake"):
                waking = True
            else:
                self._timer(key)
        else:
            raise TypeError(f"event must be a hzfast.protocol event, got {type(event).__name__}")
        if waking:
            self._wake_up()
        else:
            self._settle()
        if self._legacy and self.initialized:
            seen = self._legacy_seen
            if not np.array_equal(seen, self.replicas):
                self._legacy_seen = self.replicas.copy()
                self._legacy_finalize(seen, self.replicas)
        if self._kept:
            self._recheck_kept()
        out, self._out = self._out, []
        return out

    def _settle(self) -> None:
        """After an input: the messages sent to itself, then the master's step, until
        neither has anything left to do."""
        inbox = self._inbox
        me = self.me
        for _ in range(10_000):
            if inbox:
                self._drain()
            members = self.members
            if members and members[0] == me:
                self._master_step()
            if not inbox:
                break

    def _drain(self) -> None:
        inbox = self._inbox
        for _ in range(100_000):
            if not inbox:
                return
            sender, m = inbox.popleft()
            self._receive(sender, m)

    # ------------------------------------------------------------------ output helpers
    def _send(self, to: int, m: msg.Message) -> None:
        if to == self.me:
            self._inbox.append((to, m))
        else:
            self._out.append(_SEND(to, m))

    def _mark(self, name: str, x: MigrationInfo | None = None, partition: int = -1,
              detail: str = "") -> None:
        self._out.append(_MARK(name, x.partition if x is not None else partition, x, detail))

    def _effect(self, kind: str, partition: int, x: MigrationInfo | None = None,
                to: int = -1) -> None:
        self._effect_seq += 1
        eid = self._effect_seq
        self._effects[eid] = (kind, x, partition)
        if kind not in ("copy", "sync"):
            self._finalizing[partition] = self._finalizing.get(partition, 0) + 1
        self._out.append(_EFFECT(eid, kind, partition, x, to))

    def _timer_set(self, key: Hashable, delay: int) -> None:
        """Run the timeout ``key`` at ``now + delay`` (replacing a pending one of that key).

        The node keeps its own deadlines and asks the runtime for one timer, ``_WAKE``,
        at the earliest of them (docs/design.md §11 "Timers"): most timeouts are cancelled
        by the answer they wait for, so setting and cancelling them cost the runtime
        nothing."""
        at = self._now + delay
        d = self._deadlines
        if key in d:
            del d[key]                       # a re-set timeout runs after those set before
        d[key] = at
        w = self._wake
        if not self._waking and (w is None or at < w):   # (waking: the wake-up asks)
            self._wake = at
            self._out.append(_SET_TIMER(_WAKE, at))

    def _timer_cancel(self, key: Hashable) -> None:
        """Forget the timeout ``key`` (a no-op when none is pending)."""
        self._deadlines.pop(key, None)

    def _wake_up(self) -> None:
        """The runtime's timer fired: run the timeouts that are due, earliest first (in
        the order they were set among equal times), each followed by the node's usual
        settling, as if each had been its own event; then ask for the next wake-up."""
        self._wake = None
        self._waking = True
        d = self._deadlines
        now = self._now
        try:
            due = [k for k, at in d.items() if at <= now]
            if len(due) > 1:
                due.sort(key=d.__getitem__)          # (stable: set order among equals)
            ran = False
            for k in due:
                at = d.get(k)
                if at is None or at > now:       # cancelled or re-set by an earlier one
                    continue
                del d[k]
                self._timer(k)
                self._settle()
                ran = True
            if not ran:
                self._settle()
        finally:
            self._waking = False
        if d:
            w = min(d.values())
            self._wake = w
            self._out.append(_SET_TIMER(_WAKE, w))

    def _reject(self, sender: int, m: msg.Message, why: str) -> None:
        self._mark("message_rejected", detail=f"{type(m).__name__} from {sender}: {why}")

    # ------------------------------------------------------------------ dispatch
    def _receive(self, sender: int, m: msg.Message) -> None:
        if sender != m.sender:
            self._reject(sender, m, "sender does not match the connection")
            return
        if sender != self.me and sender not in self.members:
            self._reject(sender, m, "unknown member")
            return
        handler = _HANDLERS.get(type(m))
        if handler is None:
            self._reject(sender, m, "unknown message")
            return
        handler(self, m)

    # ------------------------------------------------------------------ membership
    def _membership(self, ev: MembershipChanged) -> None:
        old = set(self.members)
        old_master = self.master
        self._kc_dict = None             # the master role may move: _keep_current starts over
        lite = ev.lite or (False,) * len(ev.members)
        self.members = ev.members
        self.lite = frozenset(m for m, f in zip(ev.members, lite) if f)
        gone = old - set(ev.members)
        if self._legacy and gone and self.initialized:
            self._legacy_drop(gone)
        if not self.is_master:
            self._drop_master_state()
            return
        if not self._check_timer and self.config.state_check_interval:
            self._check_timer = True
            self._timer_set(("check",), self.config.state_check_interval)
        became = not self._was_master
        self._was_master = True
        if became:             # a former member's holds: its own table is the confirmation now
            self._unconfirmed.clear()
        if (became and old_master not in (-1, self.me) and old_master not in ev.members
                and not self._legacy):
            self._start_recovery()
            return
        if self._fetching is not None:
            for m in gone:
                if m in self._fetching:
                    del self._fetching[m]
                    self._timer_cancel(("fetch", m))
            self._maybe_finish_recovery()
            return
        run = self._run
        if run is not None:
            run.aborted = True
            for mid, (_i, x, stage, owner) in list(run.inflight.items()):
                parts = {owner, x.destination} | ({x.source} if x.source >= 0 else set())
                if stage == "commit":
                    parts = {x.destination}
                elif stage == "installing":
                    parts = set()
                if parts & gone:
                    self._timer_cancel(("mig", mid))
                    self._fail(x, (), f"member {sorted(parts & gone)} left")
        for dest, (batch, proms, ans) in list(self._promotions.items()):
            if dest in gone and ans is None:
                self._promotions[dest] = (batch, proms, False)
        self._promotions_maybe_done()
        if self._publish is not None:
            for m in gone:
                self._publish[1].pop(m, None)
            self._publish_maybe_done()
        self._dirty = True

    def _drop_master_state(self) -> None:
        self._run = None
        self._fetching = None
        self._promotions = {}
        self._publish = None
        self._dirty = False
        self._was_master = False

    # ------------------------------------------------------------------ timers
    def _timer(self, key: Hashable) -> None:
        if not isinstance(key, tuple) or not key:
            return
        try:
            self._deadlines.pop(key, None)      # (fired from outside: not again at its time)
        except TypeError:                       # unhashable: not one of the node's keys
            return
        kind = key[0]
        if kind == "check":
            self._check_timer = False
            if self.is_master and self.config.state_check_interval:
                self._check_timer = True
                self._timer_set(("check",), self.config.state_check_interval)
                if self.initialized and self._fetching is None:
                    st = self.stamp
                    for m in self.members:
                        if m != self.me:
                            self._send(m, msg.PartitionStateCheck(self.me, st))
                    if self.completed and self._publish is None and self._run is None:
                        self._publish_completed()
        elif not self.is_master:
            return
        elif kind == "mig" and self._run is not None:
            ent = self._run.inflight.get(key[1])
            if ent is None:
                return
            _, x, stage, owner = ent
            if stage == "request":
                self._fail(x, (owner, x.destination), "no answer from the owner")
            elif x.destination in self.members:          # commit: re-send while a member
                self._send(x.destination, _COMMIT(self.me, x))
                self._timer_set(("mig", x.id), self._timeout)
            else:
                self._fail(x, (), "destination left during commit")
        elif kind == "fetch" and self._fetching is not None:
            m = key[1]
            if m in self._fetching and self._fetching[m] is None and m in self.members:
                self._send(m, msg.FetchPartitionState(self.me))
                self._timer_set(("fetch", m), self._timeout)
        elif kind == "promotion":
            dest = key[1]
            ent2 = self._promotions.get(dest)
            if ent2 is not None and ent2[2] is None:
                if dest in self.members:
                    self._send_promotions(dest)
                else:
                    self._promotions[dest] = (ent2[0], ent2[1], False)
                    self._promotions_maybe_done()
        elif kind == "publish" and self._publish is not None:
            # §7 rule 6: no answer is a failed answer: those members get the full table,
            # nothing is evicted this round, and a later publication tries again
            pub = self._publish
            for m, ans in pub[1].items():
                if ans is None and m in self.members:
                    self._send(m, self._table_message())
            self._publish = None
        elif kind == "retry":
            pass   # the master step below picks the paused work up

    # ------------------------------------------------------------------ effects
    def _effect_done(self, eid: int, ok: bool) -> None:
        ent = self._effects.pop(eid, None)
        if ent is None:
            return
        kind, x, p = ent
        if kind == "sync" and x is None:
            return                                   # a legacy replica sync: nothing waits
        if kind not in ("copy", "sync"):
            n = self._finalizing.get(p, 0) - 1
            if n > 0:
                self._finalizing[p] = n
            else:
                self._finalizing.pop(p, None)
            if x is not None and kind == "install":
                self._install_eid.pop(x.id, None)
            for w in self._waiters.pop(eid, ()):   # answers that wait for the data
                if isinstance(w, MigrationInfo):
                    run = self._run
                    if run is not None and w.id in run.inflight and self.is_master:
                        self._master_commit(w)
                else:
                    self._send(w[0], w[1])
            return
        assert x is not None
        if self.active.get(p) is not x:
            return                                  # rolled back meanwhile
        if not ok:
            self._send(x.master, _RESULT(self.me, x, False, "copy failed"))
            return
        self._mark("replica_copied", x)
        if self._legacy:
            # legacy: no registration on the destination; the data was applied on arrival
            self._send(x.master, _RESULT(self.me, x, True, ""))
            return
        self._send(x.destination, _TRANSFER(self.me, x, self._carried.pop(p, ())))

    # ------------------------------------------------------------------ completed lists
    def _completed_tuple(self) -> tuple[MigrationInfo, ...]:
        return tuple(self.completed.values())

    def _completed_of(self, p: int) -> tuple[MigrationInfo, ...]:
        """The completed migrations of partition ``p``, in list order: what a
        ``MigrationRequest`` carries (§7.3(a)), not the whole list."""
        return _of_partition(self.completed, p)

    def _apply_completed(self, lst: tuple[MigrationInfo, ...]) -> bool:
        """Rule 5: a partial update. True iff no entry was rejected.

        Entries apply in order: a malformed or ACTIVE one rejects itself and the rest; one
        at or below the local version is kept (and finalized where this member took part);
        one that starts at the local version is applied; any other is rejected as a
        partial update that does not line up (the master then sends the full table).
        Entries that are only to be kept, and entries that are simply applied (this
        member took no part in them), are handled in C (docs/design.md §11)."""
        if self.is_master:
            return True            # the master's own table is the one the lists come from
        if not self.initialized:
            return False
        if not lst and not self._kc_recheck and self._completed is self._kc_dict \
                and len(self._completed) == self._kc_len \
                and _unchanged(self.versions, self._kc_vers):
            return True            # nothing received and nothing to recheck: no change
        ok = True
        vers = self.versions
        unconfirmed = self._unconfirmed
        finalized = self._finalized
        active = self.active
        me = self.me
        R = self._R
        table = self.replicas
        try:                 # (the kernel takes a tuple and a C-contiguous int32 vector)
            i = _attention(lst, 0, vers, MigrationInfo, R, finalized, active,
                           unconfirmed, me, table, SUCCESS, FAILED)
        except (TypeError, ValueError):
            return self._apply_completed_slow(lst)
        n = len(lst)
        stop = n
        for _ in range(n + 1):
            if i >= n:
                break
            x = lst[i]                         # the full rule for this one entry
            if self._check_migration(x) or x.status == ACTIVE:
                ok = False                     # malformed: reject it and the rest (rule 5)
                stop = i
                break
            p = x.partition
            if unconfirmed.get(p) == x.id:
                del unconfirmed[p]             # the master's word on it
            cur = vers.item(p)
            if x.final > cur:
                if x.initial != cur:
                    ok = False
                    stop = i
                    self._mark("partial_update_rejected", x,
                               detail=f"local version {cur}, migration from {x.initial}")
                    break
                if x.status == SUCCESS:
                    if self._legacy:     # (legacy members shift leavers out alone)
                        _apply_row(self.replicas, p, x)
                    elif not _apply_fitting_row(self.replicas, p, x):
                        ok = False
                        stop = i
                        self._mark("partial_update_rejected", x,
                                   detail=f"does not fit the row at version {cur}")
                        break
                vers[p] = x.final
                self._finalize(x)
            elif x.id not in finalized:
                self._finalize(x)
            i = _attention(lst, i + 1, vers, MigrationInfo, R, finalized, active,
                           unconfirmed, me, table, SUCCESS, FAILED)
        if not self.is_master:
            self._keep_current(_keyed(lst, stop, self._completed))
        return ok

    def _apply_completed_slow(self, lst: tuple[MigrationInfo, ...]) -> bool:
        """:meth:`_apply_completed` entry by entry in Python (any sequence, any table)."""
        ok = True
        keep: dict[MigrationId, MigrationInfo] = {}
        for x in lst:
            if self._check_migration(x) or x.status == ACTIVE:
                ok = False
                break
            p = x.partition
            if self._unconfirmed.get(p) == x.id:
                del self._unconfirmed[p]
            cur = int(self.versions[p])
            if x.final <= cur:
                keep[x.id] = x
                if x.id not in self._finalized:
                    self._finalize(x)
                continue
            if x.initial != cur:
                ok = False
                self._mark("partial_update_rejected", x,
                           detail=f"local version {cur}, migration from {x.initial}")
                break
            if x.status == SUCCESS:
                if self._legacy:
                    apply_to_row(self.replicas[p], x)
                elif not _apply_fitting_row(self.replicas, p, x):
                    ok = False
                    self._mark("partial_update_rejected", x,
                               detail=f"does not fit the row at version {cur}")
                    break
            self.versions[p] = x.final
            keep[x.id] = x
            self._finalize(x)
        if not self.is_master:
            self._keep_current(keep)
        return ok

    def _keep_current(self, keep: dict[MigrationId, MigrationInfo]
                      ) -> dict[MigrationId, MigrationInfo]:
        """Rules 4–5 keep only the received entries; a late message must not make this
        member forget a migration that is still its partition's latest state (a destination
        commit the master may not have published yet): a new master's recovery needs it.

        Makes :attr:`completed` ``keep`` followed by the entries of the list before that
        are not in it and whose partition is still at their final version (in their
        order), and returns ``keep``. A non-master's list holds up to one such entry per
        partition, so instead of reading every entry's version on every call, one kernel
        pass looks only at the entries of partitions whose version changed since the last
        call, and at those it kept then without being current; and instead of copying the
        retained entries behind ``keep`` on every call, they stay where they are (the
        list's parts: docs/design.md §11). Any change of :attr:`completed` it did not see
        (a membership change, another length) starts it over from every entry.
        """
        old = self._completed
        front, back = self._front, self._back
        vers = self.versions
        if not _plain_vector(vers):            # (the kernel reads it in place)
            vers = np.ascontiguousarray(vers, dtype=np.int32)
        seen = self._kc_vers
        if old is not self._kc_dict or len(old) != self._kc_len or len(seen) != len(vers):
            index: dict[int, set[MigrationId]] = {}
            recheck: set[MigrationId] = set()
            for part in (old, front, back):
                for mid, x in part.items():
                    index.setdefault(x.partition, set()).add(mid)
                recheck.update(part)
            self._kc_index = index
            seen = vers.copy()
        else:
            recheck = self._kc_recheck
        self._kc_recheck = _keep_kernel(keep, old, front, back, recheck,
                                        self._kc_index, vers, seen)
        self._completed = keep
        self._kc_dict = keep
        self._kc_len = len(keep)
        self._kc_vers = seen
        return keep

    def _put_completed(self, x: MigrationInfo) -> None:
        """``completed[x.id] = x`` without joining the list's parts."""
        mid = x.id
        if mid in self._front:
            self._front[mid] = x
        elif mid in self._back or ((self._front or self._back) and mid not in self._completed):
            self._back[mid] = x
        else:
            self._completed[mid] = x

    def _finalize(self, x: MigrationInfo) -> None:
        """Rule 3(h)/(i): a participant finalizes ``x`` once."""
        if x.id in self._finalized:
            return
        p = x.partition
        act = self.active.get(p)
        bc = self._bc
        if act is not None and act.id == x.id:
            del self.active[p]
            self._finalized.add(x.id)
            if x.destination == self.me:
                self._effect("install" if x.status == SUCCESS else "discard", p, x)
                if x.status == SUCCESS:
                    self._install_eid[x.id] = self._effect_seq
                self._mark("destination_finalized", x)
            elif x.source == self.me:
                sni = x.source_new_index
                # a copy stays while this member's table lists it at a data index: a
                # later commit that came with the list (a promotion) may list it again
                if self.me not in self.replicas[p, :bc + 1].tolist():
                    if x.status == SUCCESS and (sni == -1 or sni > bc):
                        self._clear_copy(p, x)
                    else:
                        # the table moved past the migration while it was active here
                        # (the partition was skipped when that table arrived): it goes now
                        self._clear_copy(p, None)
                self._mark("source_finalized", x)
            return
        if x.source == self.me and x.source_current_index > 0 and not x.promotion:
            self._finalized.add(x.id)              # a passive source: on arrival (§7 3(h))
            sni = x.source_new_index
            if x.status == SUCCESS and (sni == -1 or sni > bc) \
                    and self.me not in self.replicas[p, :bc + 1].tolist():
                self._clear_copy(p, x)
            self._mark("source_finalized", x)

    def _clear_copy(self, p: int, x: MigrationInfo | None) -> None:
        """A source's copy of ``p`` goes (``x``: the migration it goes with), unless every
        member the table lists at a data slot of ``p`` is gone: then it may be the last
        copy, and the master's next step (a promotion) may list this member at a data slot
        again. It is kept until the row lists a live member there (§7.3(i))."""
        if not self._legacy and self._copy_may_be_last(p):
            self._kept[p] = x
        else:
            self._kept.pop(p, None)
            self._effect("clear", p, x)

    def _copy_may_be_last(self, p: int) -> bool:
        """No member the table lists at a data slot of ``p`` is in the view."""
        members = self.members
        for m in self.replicas[p, :self._bc + 1].tolist():
            if m >= 0 and m in members:
                return False
        return True

    def _recheck_kept(self) -> None:
        """Kept copies (:meth:`_clear_copy`) whose row changed: kept for good where the
        row lists this member at a data slot now, cleared where it lists a live member
        there."""
        bc = self._bc
        for p in sorted(self._kept):
            if self.me in self.replicas[p, :bc + 1].tolist():
                del self._kept[p]
            elif p not in self.active and not self._copy_may_be_last(p):
                x = self._kept.pop(p)
                self._effect("clear", p, x)

    # ------------------------------------------------------------------ full table (rule 4)
    def _take_table(self, replicas: NDArray[np.int32], versions: NDArray[np.int32],
                    completed: tuple[MigrationInfo, ...]) -> tuple[bool, tuple[int, ...]]:
        P, R = self.replicas.shape
        if (not isinstance(replicas, np.ndarray) or not isinstance(versions, np.ndarray)
                or replicas.shape != (P, R) or versions.shape != (P,)
                or replicas.dtype != np.int32 or versions.dtype != np.int32):
            return False, ()
        replicas, versions = np.ascontiguousarray(replicas), np.ascontiguousarray(versions)
        if not self.initialized:
            if self._bad_table(replicas, versions, None, "a table"):
                return False, ()
            self.replicas = replicas.copy()
            self.versions = versions.copy()
            self.initialized = True
            accepted = True
        else:
            try:
                new_r, new_v, updated = merge_tables(self.replicas, self.versions,
                                                     replicas, versions)
            except DivergedTableError as e:
                self.diverged += len(e.partitions)
                self._mark("diverged_rejected", partition=int(e.partitions[0]),
                           detail=f"{len(e.partitions)} partitions diverged")
                return False, tuple(int(p) for p in e.partitions)
            if self._bad_table(replicas, versions, updated, "a table"):
                return False, ()                   # (the rows it would take: valid ones)
            accepted = bool((versions >= self.versions).any())
            for p in [q for q in self._unconfirmed if versions[q] >= new_v[q]]:
                del self._unconfirmed[p]          # the master's table has caught up
            old = self.replicas
            self.replicas, self.versions = new_r, new_v
            if not self._legacy and updated.any():
                self._drop_stale(old, updated)
        keep: dict[MigrationId, MigrationInfo] = {}
        for x in completed:
            if not self._check_migration(x) and x.status != ACTIVE:
                keep[x.id] = x
                self._finalize(x)
        if not self.is_master:
            self._keep_current(keep)
        return accepted, ()

    def _bad_table(self, replicas: NDArray[np.int32], versions: NDArray[np.int32],
                   updated: NDArray[np.bool_] | None, what: str) -> bool:
        """True, with a ``message_rejected`` mark, when a received table (C-contiguous
        int32 replicas and versions) has, among the rows this member would take from it
        (``updated``, or all), a slot below -1 or a member twice, or a version outside
        ``[0, VERSION_LIMIT)``: no honest member sends one, and taking it would leave this
        member's table invalid (a master could not plan) or let a master's version bumps
        wrap."""
        p = _merge.first_invalid(replicas, versions, updated, VERSION_LIMIT)
        if p < 0:
            return False
        self._mark("message_rejected", partition=p,
                   detail=f"{what} with partition {p} at version {versions[p]}: "
                          f"{replicas[p].tolist()} (a member twice, a slot below -1 or "
                          f"a version out of range)")
        return True

    def _drop_stale(self, old: NDArray[np.int32], updated: NDArray[np.bool_]) -> None:
        """A newer table from the master no longer lists this member at a data index of a
        partition it held (a completed migration it never heard of moved it out): the
        master committed that, so its copy goes (no data stays on non-replicas)."""
        # (merge_tables took ``old`` only as a C-contiguous int32 table, and made the new
        # table and ``updated`` itself: the kernel's inputs)
        gone = _merge.left(old, self.replicas, updated.view(np.uint8), self.me,
                           self._bc + 1)
        for p in gone:
            if p not in self.active:
                self._kept.pop(p, None)
                self._effect("clear", p)

    # ------------------------------------------------------------------ handlers (any member)
    def _from_master(self, m: msg.Message) -> bool:
        if m.sender != self.master:
            self._reject(m.sender, m, f"not from my master {self.master}")
            return False
        return True

    def _on_table(self, m: msg.PartitionTableUpdate) -> None:
        if m.sender == self.me:
            return
        if not self._from_master(m):
            self._send(m.sender, msg.PartitionTableAck(self.me, False))
            return
        ok, diverged = self._take_table(m.replicas, m.versions, m.completed)
        self._send(m.sender, msg.PartitionTableAck(self.me, ok, diverged))

    def _on_publish(self, m: msg.PublishCompletedMigrations) -> None:
        ids = tuple(x.id for x in m.completed if isinstance(x, MigrationInfo))
        if not self._from_master(m) or self._fetching is not None:
            self._send(m.sender, _PUBLISH_ACK(self.me, ids, False))
            return
        ok = self._apply_completed(m.completed)
        self._send(m.sender, _PUBLISH_ACK(self.me, ids, ok))

    def _on_state_check(self, m: msg.PartitionStateCheck) -> None:
        if not self._from_master(m):
            return
        self._send(m.sender, msg.PartitionStateCheckReply(
            self.me, self.initialized and m.stamp == self.stamp))

    def _check_migration(self, x: object) -> str:
        """Why ``x`` is not a well-formed migration for this cluster ("" if it is)."""
        if _well_formed(x, MigrationInfo, self._P, self._R):
            return ""                                # (the usual case, read in C)
        if not isinstance(x, MigrationInfo):
            return "not a migration"
        if not 0 <= x.partition < self._P:
            return f"unknown partition {x.partition}"
        R = self._R
        if not 0 <= x.destination_new_index < R or not -1 <= x.source_current_index < R \
                or not -1 <= x.source_new_index < R or not -1 <= x.destination_current_index < R:
            return "replica index out of range"
        if not 0 <= x.initial <= x.final < VERSION_LIMIT:    # tables hold int32 versions
            return "version out of range"
        if not (-1 <= x.source < _INT32_END and -1 <= x.destination < _INT32_END
                and 0 <= x.master < _INT32_END):
            return "member id out of range"
        return ""

    def _on_request(self, m: msg.MigrationRequest) -> None:
        x = m.migration
        why = self._check_migration(x)
        if not why and (m.sender != self.master or x.master != m.sender):
            why = f"not from my master {self.master}"
        if why:
            self._reject(m.sender, m, why)
            if isinstance(x, MigrationInfo):
                self._send(m.sender, _RESULT(self.me, x, False, why))
            return
        p = x.partition
        act = self.active.get(p)
        if (act is not None and act.id == x.id) or x.id in self._finalized:
            return                                   # a duplicate: the first one runs/ran
        legacy = self._legacy
        if x.source_current_index == 0 and x.source != self.me:
            why = "the source of an owner migration must be the owner"
        elif not legacy and not self._apply_completed(m.completed):
            why = "version mismatch (completed migrations do not apply)"
        elif not self.initialized or self.replicas.item(p, 0) != self.me:
            why = "not the owner"
        elif x.destination not in self.members:
            why = "destination is not a member"
        elif not legacy and self.versions.item(p) != x.initial:
            why = f"version {int(self.versions[p])} != initial {x.initial}"
        elif self.active.get(p) is not None:        # (the list may have finalized one)
            why = "another migration is active"
        if why:
            self._send(m.sender, _RESULT(self.me, x, False, why))
            return
        self.active[p] = x
        self._carried[p] = m.completed
        self._effect("sync" if legacy else "copy", p, x, to=x.destination)

    def _on_transfer(self, m: msg.MigrationTransfer) -> None:
        x = m.migration
        why = self._check_migration(x)
        if not why and x.id in self._finalized:       # a duplicate of a finished one
            self._send(m.sender, _TRANSFER_ACK(self.me, x, False))
            return
        if not why:
            if x.master != self.master:
                why = "migration not from my master"
            elif x.destination != self.me:
                why = "not the destination"
            elif not self._apply_completed(m.completed) \
                    or self.versions.item(x.partition) != x.initial:
                why = "version mismatch"
            else:
                act = self.active.get(x.partition)
                if act is not None and act.id != x.id:
                    why = "another migration is active"
        if why:
            if isinstance(x, MigrationInfo):
                self._send(m.sender, _TRANSFER_ACK(self.me, x, False))
            self._reject(m.sender, m, why)
            return
        self.active[x.partition] = x
        self._send(m.sender, _TRANSFER_ACK(self.me, x, True))

    def _on_transfer_ack(self, m: msg.MigrationTransferAck) -> None:
        x = m.migration
        if not isinstance(x, MigrationInfo) or m.sender != x.destination:
            self._reject(m.sender, m, "not the destination")
            return
        act = self.active.get(x.partition)
        if act is None or act.id != x.id:
            return
        self._send(x.master, _RESULT(self.me, x, bool(m.ok),
                                     "" if m.ok else "destination refused"))

    def _on_commit(self, m: msg.MigrationCommit) -> None:
        x = m.migration
        why = self._check_migration(x)
        if not why and m.sender != self.master:
            why = f"not from my master {self.master}"
        if not why and x.destination != self.me:
            why = "not the destination"
        if why:
            self._reject(m.sender, m, why)
            if isinstance(x, MigrationInfo):
                self._send(m.sender, _COMMIT_RESPONSE(self.me, x, False))
            return
        ok = self._destination_commit(x)
        reply = _COMMIT_RESPONSE(self.me, x, ok)
        eid = self._install_eid.get(x.id)
        if ok and eid is not None:         # answer once the data is in place
            self._waiters.setdefault(eid, []).append((m.sender, reply))
        else:
            self._send(m.sender, reply)

    def _destination_commit(self, x: MigrationInfo) -> bool:
        p = x.partition
        cur = self.versions.item(p)
        if x.final == cur:
            return True
        if x.final < cur or x.initial != cur:
            return False
        done = _settled(x, SUCCESS)
        if self._legacy:       # (legacy members shift leavers out alone: rows differ there)
            _apply_row(self.replicas, p, done)
        elif not _apply_fitting_row(self.replicas, p, done):
            return False
        self.versions[p] = x.final
        self._put_completed(done)
        if self._kc_dict is self._completed:    # _keep_current's index follows the insert
            self._kc_index.setdefault(p, set()).add(done.id)
            self._kc_recheck.add(done.id)
            self._kc_len = len(self._completed)
        if x.destination_new_index == 0 and not self.is_master:
            self._unconfirmed[p] = x.id        # the master may still fail it: hold writes
        self._mark("destination_committed", done)
        act = self.active.get(p)
        if act is None or act.id != x.id:
            self.active[p] = x          # finalize below drops it
        self._finalize(done)
        return True

    def _on_fetch(self, m: msg.FetchPartitionState) -> None:
        if m.sender != self.master:
            self._reject(m.sender, m, "fetch not from my master")
            return
        if self._fetching is not None or not self.initialized:
            self._send(m.sender, msg.PartitionStateReply(self.me, False))
            return
        self._send(m.sender, msg.PartitionStateReply(
            self.me, True, self.replicas.copy(), self.versions.copy(),
            self._completed_tuple(), tuple(self.active[p] for p in sorted(self.active))))

    def _on_promotion(self, m: msg.PromotionCommit) -> None:
        if m.destination != self.me or m.sender != self.master:
            self._reject(m.sender, m, "promotion not for me or not from my master")
            self._send(m.sender, msg.PromotionCommitResponse(self.me, m.batch, False))
            return
        if m.sender == self.me:             # the master promotes itself: its table moves later
            for x in m.promotions:
                self._effect("promote", x.partition, x)
            self._send(m.sender, msg.PromotionCommitResponse(self.me, m.batch, True))
            return
        if (self.initialized and isinstance(m.versions, np.ndarray)
                and m.versions.dtype == np.int32 and m.versions.shape == self.versions.shape
                and int(_stamp(m.versions)) == self.stamp):
            self._send(m.sender, msg.PromotionCommitResponse(self.me, m.batch, True))
            return
        todo = [x for x in m.promotions if isinstance(x, MigrationInfo)
                and 0 <= x.partition < self._P
                and int(self.versions[x.partition]) < x.final]
        if not todo:
            self._send(m.sender, msg.PromotionCommitResponse(self.me, m.batch, True))
            return
        ok, _ = self._take_table(m.replicas, m.versions, m.completed)
        if ok:
            for x in todo:
                self._effect("promote", x.partition, x)
        self._send(m.sender, msg.PromotionCommitResponse(self.me, m.batch, ok))

    def _on_sync(self, m: msg.ReplicaSyncRequest) -> None:
        p = m.partition
        if (isinstance(p, int) and 0 <= p < self._P and self.initialized
                and self.replicas[p, 0] == self.me):
            self._effect("sync", p, None, to=m.sender)

    # ------------------------------------------------------------------ handlers (master)
    def _on_result(self, m: msg.MigrationResult) -> None:
        run = self._run
        x = m.migration
        if run is None or not isinstance(x, MigrationInfo):
            return
        ent = run.inflight.get(x.id)
        if ent is None or ent[2] != "request" or m.sender != ent[3]:
            return
        self._timer_cancel(("mig", x.id))
        if not m.ok:
            self._fail(ent[1], (ent[3], x.destination), m.reason or "owner refused")
            return
        x = ent[1]
        if self._legacy:
            self._master_commit(x)
            return
        if x.destination == self.me:        # the master's own commit is the destination's
            done = _settled(x, SUCCESS)
            self._mark("destination_committed", done)
            self._finalize(done)                 # install the data, then commit the table
            eid = self._install_eid.get(x.id)
            if eid is None:
                self._master_commit(x)
            else:
                run.inflight[x.id] = (ent[0], x, "installing", ent[3])
                self._waiters.setdefault(eid, []).append(x)
            return
        run.inflight[x.id] = (ent[0], x, "commit", ent[3])
        self._send(x.destination, _COMMIT(self.me, x))
        self._timer_set(("mig", x.id), self._timeout)

    def _on_commit_response(self, m: msg.MigrationCommitResponse) -> None:
        run = self._run
        x = m.migration
        if run is None or not isinstance(x, MigrationInfo):
            return
        ent = run.inflight.get(x.id)
        if ent is None or ent[2] != "commit" or m.sender != ent[1].destination:
            return
        self._timer_cancel(("mig", x.id))
        if m.ok:
            self._master_commit(ent[1])
        else:
            self._fail(ent[1], (ent[1].destination,), "destination refused the commit")

    def _master_commit(self, x: MigrationInfo) -> None:
        run = self._run
        assert run is not None
        p = x.partition
        if self.versions.item(p) != x.initial:
            if self._legacy:        # leavers are shifted out locally there
                self._fail(x, (), "the partition moved under the migration")
                return
            raise AssertionError(f"partition {p} moved under migration {x}")   # pragma: no cover
        i = run.inflight.pop(x.id)[0]
        done = _settled(x, SUCCESS)
        _apply_row(self.replicas, p, done)
        self.versions[p] = x.final
        self.completed[done.id] = done
        if x.destination == self.me and x.destination_new_index == 0 \
                and not self._legacy:
            # the master took the partition: no writes until every member knows, or a new
            # master that never heard of the commit would fail it and lose them
            self._unconfirmed[p] = x.id
        self._mark("master_committed", done)
        self._finalize(done)
        _finished(run, i, True)
        run.changes += 1
        if self._legacy:
            self._publish_table()
        elif len(self.completed) >= self.config.publish_threshold and self._publish is None:
            self._publish_completed()

    def _fail(self, x: MigrationInfo, notify: tuple[int, ...], why: str) -> None:
        run = self._run
        assert run is not None
        ent = run.inflight.pop(x.id, None)
        p = x.partition
        self.versions[p] += x.increment + 1
        failed = _settled(x, FAILED, final=self.versions.item(p))
        self.completed[failed.id] = failed
        self._mark("migration_failed", failed, detail=why)
        act = self.active.get(p)
        if act is not None and act.id == x.id:
            self._finalize(failed)
        for m in sorted(set(notify)):
            if m != self.me and m in self.members:
                self._send(m, self._table_message())
        if ent is not None:
            _finished(run, ent[0], False)
            run.changes += 1

    def _on_publish_ack(self, m: msg.PublishCompletedAck) -> None:
        pub = self._publish
        if pub is None or tuple(m.ids) != pub[0] or m.sender not in pub[1]:
            return
        pub[1][m.sender] = bool(m.ok)
        if not m.ok:
            self._send(m.sender, self._table_message())
        self._publish_maybe_done()

    def _publish_maybe_done(self) -> None:
        pub = self._publish
        if pub is None or any(v is None for v in pub[1].values()):
            return
        self._publish = None
        self._timer_cancel(("publish",))
        if all(pub[1].values()):
            self._evict(pub[0])
            if self.completed and self._run is None:
                self._publish_completed()   # committed while it was out: tell them now

    def _evict(self, ids: tuple[MigrationId, ...]) -> None:
        """Every member accepted these completed migrations: drop them, and lift the write
        holds of partitions the master took through them (no new master can fail them)."""
        held = {mid: p for p, mid in self._unconfirmed.items()}
        for mid in ids:
            self.completed.pop(mid, None)
            if mid in held:
                del self._unconfirmed[held[mid]]
        self._mark("completed_evicted", detail=f"{len(ids)} migrations")

    def _on_table_ack(self, m: msg.PartitionTableAck) -> None:
        pass

    def _on_state_reply(self, m: msg.PartitionStateCheckReply) -> None:
        if self.is_master and not m.ok:
            self._send(m.sender, self._table_message())

    def _on_promotion_response(self, m: msg.PromotionCommitResponse) -> None:
        ent = self._promotions.get(m.sender)
        if ent is None or ent[0] != m.batch or ent[2] is not None:
            return
        self._timer_cancel(("promotion", m.sender))
        self._promotions[m.sender] = (ent[0], ent[1], bool(m.ok))
        self._promotions_maybe_done()

    def _on_state(self, m: msg.PartitionStateReply) -> None:
        if self._fetching is None or m.sender not in self._fetching:
            return
        if self._fetching[m.sender] is not None:
            return
        self._fetching[m.sender] = m
        self._timer_cancel(("fetch", m.sender))
        self._maybe_finish_recovery()

    # ------------------------------------------------------------------ master loop
    def _publish_table(self) -> None:
        self._told = set(self.members)
        self._mark("table_published")
        update = self._table_message()
        for m in self.members:
            if m != self.me:
                self._send(m, update)

    def _table_message(self) -> msg.PartitionTableUpdate:
        """The full table as one message (read-only copies, shared by every recipient)."""
        r, v = self.replicas.copy(), self.versions.copy()
        r.setflags(write=False)
        v.setflags(write=False)
        return msg.PartitionTableUpdate(self.me, r, v, self._completed_tuple())

    def _publish_completed(self) -> None:
        others = [m for m in self.members if m != self.me]
        ids = tuple(self.completed)
        if not ids:
            return
        if not others:                    # nobody else to tell: every member knows
            self._evict(ids)
            return
        self._publish = (ids, {m: None for m in others})
        self._timer_set(("publish",), self._timeout)
        lst = self._completed_tuple()
        for m in others:
            self._send(m, _PUBLISH(self.me, lst))

    def _master_step(self) -> None:
        if self._fetching is not None:
            return
        if self._run is not None:
            self._drive()
            return
        if self._promotions or not self._dirty or (
                self._paused_until is not None and self._now < self._paused_until):
            return
        if not self.initialized:
            if not self.data_members:
                return
            self._initialize()
        self._dirty = False
        repaired: NDArray[np.int32] | None = None
        if not self._legacy:
            waiting, repaired = self._repair()
            if waiting:
                return
        else:
            self._legacy_repair()
        self._plan(repaired)

    def _initialize(self) -> None:
        P, R = self.replicas.shape
        ids = np.asarray(self.members, dtype=np.int64)
        lite = [m in self.lite for m in self.members]
        empty = np.full((P, R), -1, dtype=np.int32)
        dense = arrange(empty, _registry(len(ids), tuple(lite)), replica_count=R)
        self.replicas = _ids_of(dense, ids)
        self.versions = (self.replicas >= 0).sum(axis=1).astype(np.int32)
        self.initialized = True
        self._publish_table()

    @staticmethod
    def _held_by(table: NDArray[np.int32], members: NDArray[np.int32]) -> NDArray[np.bool_]:
        """``np.isin(table, members)`` through a lookup table (member ids are small)."""
        top = max(int(table.max(initial=-1)), int(members.max(initial=-1)))
        if top >= 1 << 22:
            return np.isin(table, members)
        lut = np.zeros(top + 2, dtype=bool)
        lut[members] = True
        return lut[table]              # -1 reads lut[-1], which is False

    def _dense(self, known: NDArray[np.int32] | None = None
               ) -> tuple[NDArray[np.int32], NDArray[np.int64], Members]:
        """The table in member-index form (view position), for the arranger and planner
        (``known``: that table, already made by :meth:`_repair` from the table as it is)."""
        ids = np.asarray(self.members, dtype=np.int64)
        r = self.replicas
        lite = [m in self.lite for m in self.members]
        if known is not None:
            return known, ids, _registry(len(ids), tuple(lite))
        top_id = int(ids.max(initial=-1))
        if top_id < 1 << 22 and _is_table(r):   # one kernel pass through a lookup table
            at = np.full(top_id + 1, -1, dtype=np.int32)
            at[ids] = np.arange(len(ids), dtype=np.int32)
            return _scan.dense(r, at), ids, _registry(len(ids), tuple(lite))
        top = max(int(r.max(initial=-1)), top_id)
        if top < 1 << 22:                       # a lookup table (member ids are small)
            lut = np.full(top + 2, -1, dtype=np.int32)
            lut[ids] = np.arange(len(ids), dtype=np.int32)
            dense = lut[r]                      # r == -1 reads lut[-1] == -1
        else:
            uniq, inv = np.unique(r, return_inverse=True)
            pos = {int(m): i for i, m in enumerate(self.members)}
            code = np.asarray([pos.get(int(u), -1) for u in uniq], dtype=np.int32)
            dense = code[inv.reshape(r.shape)]
        return np.ascontiguousarray(dense, dtype=np.int32), ids, _registry(len(ids),
                                                                            tuple(lite))

    def _repair(self) -> tuple[bool, NDArray[np.int32] | None]:
        """Rule 7: empty departed/lite slots; start promotions. Returns (waiting for them,
        the repaired table in view positions when the one-pass kernel made it, else None)."""
        r, vs = self.replicas, self.versions
        top = max(self.members, default=-1)
        repaired: NDArray[np.int32] | None = None
        if top < 1 << 22 and _is_table(r) and r.flags.writeable and vs.flags.writeable \
                and vs.dtype == np.int32 and vs.flags.c_contiguous and vs.shape == r.shape[:1]:
            # one kernel pass (§11): a data member's id reads its view position, any other
            # id -1; the pass clears those slots and writes the table in view positions
            cleared, need, repaired = _scan.repair_dense(r, vs,
                                                         _positions(self.members, self.lite))
        else:
            members = np.asarray(self.data_members, dtype=np.int32)
            bad = (r >= 0) & ~self._held_by(r, members)
            cleared = int(bad.sum())
            if cleared:
                r[bad] = -1
                self.versions += bad.sum(axis=1).astype(np.int32)
            need = np.flatnonzero((r[:, 0] == -1) & (r >= 0).any(axis=1))
        if not len(need):
            if cleared:
                self._publish_table()
            return False, repaired
        by_dest: dict[int, list[MigrationInfo]] = {}
        vers = self.versions
        for p, row in zip(need.tolist(), self.replicas[need].tolist()):
            idx = 0                        # the first filled slot (a row of ``need`` has one)
            while row[idx] < 0:
                idx += 1
            dest = row[idx]
            self._seq += 1
            v = vers.item(p)
            x = _INFO((self.me, self._seq), p, -1, -1, -1, dest, idx, 0, self.me, v, v + 2,
                      ACTIVE, True)
            by_dest.setdefault(dest, []).append(x)
        for dest in sorted(by_dest):
            self._promotion_seq += 1
            self._promotions[dest] = (self._promotion_seq, tuple(by_dest[dest]), None)
            self._send_promotions(dest)
        return True, None

    def _send_promotions(self, dest: int) -> None:
        batch, proms, _ = self._promotions[dest]
        reps, vers = self.replicas.copy(), self.versions.copy()
        for x in proms:
            apply_to_row(reps[x.partition], x)
            vers[x.partition] = x.final
        self._send(dest, msg.PromotionCommit(self.me, reps, vers, proms, dest, batch,
                                             self._completed_tuple()))
        self._timer_set(("promotion", dest), self._timeout)

    def _promotions_maybe_done(self) -> None:
        if not self._promotions or any(a is None for _, _, a in self._promotions.values()):
            return
        all_ok = True
        for dest in sorted(self._promotions):
            _, proms, ok = self._promotions[dest]
            for x in proms:
                p = x.partition
                if ok:
                    apply_to_row(self.replicas[p], x)
                    self.versions[p] += 2
                    self._mark("promotion_committed", _settled(x, SUCCESS))
                else:
                    self.versions[p] += 3
                    all_ok = False
                    self._mark("migration_failed", _settled(x, FAILED, int(self.versions[p])),
                               detail="promotion")
        self._promotions = {}
        self._publish_table()
        self._dirty = True
        if not all_ok:
            self._paused_until = self._now + self.config.retry_delay
            self._timer_set(("retry",), self.config.retry_delay)

    def _plan(self, repaired: NDArray[np.int32] | None = None) -> None:
        if any(m not in self._told for m in self.members):   # joiners get the table first
            self._publish_table()
        dense, ids, members = self._dense(repaired)
        if not self.data_members:
            return
        with owned(dense):            # fresh arrays of this call: read without snapshots
            target = arrange(dense, members, replica_count=self.replicas.shape[1])
        if self._legacy:
            self._legacy_plan(dense, target, ids)
            return
        with owned(dense, target):   # (the plan and its executor at once: docs/design.md §11)
            executor = Executor._planned(dense, target, self.config.max_parallel_migrations)
        plan = executor.plan
        if not len(plan):
            return
        instant = np.flatnonzero(plan.instant)
        if len(instant):                    # §6: instant decisions at once, then publish
            after, self.versions = apply_migrations(dense, self.versions, plan[instant])
            self.replicas = _ids_of(after, ids)
            self._publish_table()
        self._start_run(plan, executor, ids)

    def _start_run(self, plan: MigrationPlan, executor: Executor,
                   ids: NDArray[np.int64]) -> None:
        self._run = _Run(executor, ids)
        self._run_plan = plan
        self._drive()

    def _legacy_plan(self, dense: NDArray[np.int32], target: NDArray[np.int32],
                     ids: NDArray[np.int64]) -> None:
        """Rule 10(a): backup slots take their target at once; owner changes migrate."""
        old = dense
        moved = (target != old).any(axis=1)
        if not moved.any():
            return
        owner_change = moved & (target[:, 0] != old[:, 0]) & (old[:, 0] >= 0)
        interim = target.copy()
        rows = np.flatnonzero(owner_change)
        src = old[rows, 0]
        interim[rows, 0] = src
        sni = np.full(len(rows), -1, dtype=np.int32)
        for k, p in enumerate(rows.tolist()):       # the old owner waits at 0 until the move
            hit = np.flatnonzero(interim[p, 1:] == src[k])
            if len(hit):
                sni[k] = hit[0] + 1
                interim[p, hit[0] + 1] = -1
        n_changed = (interim != old).sum(axis=1).astype(np.int32)
        self.versions += n_changed
        self.replicas = _ids_of(interim, ids)
        self._publish_table()
        if not len(rows):
            return
        n = len(rows)
        plan = MigrationPlan(rows, src, np.zeros(n, np.int32), sni, target[rows, 0],
                             np.full(n, -1, np.int32), np.zeros(n, np.int32))
        self._start_run(plan, Executor(plan, np.ascontiguousarray(interim, dtype=np.int32),
                                       self.config.max_parallel_migrations), ids)

    def _info(self, plan: MigrationPlan, i: int, ids: NDArray[np.int64]) -> MigrationInfo:
        """Plan row ``i`` as a migration of this master, from the partition's version now."""
        p, s, sci, sni, d, dci, dni = plan._columns[:, i].tolist()
        self._seq += 1
        v = self.versions.item(p)
        inc = 1 + (sni > -1) + (dci > -1)
        return _INFO((self.me, self._seq), p, int(ids[s]) if s >= 0 else -1, sci, sni,
                     int(ids[d]), dci, dni, self.me, v, v + inc, ACTIVE, False)

    def _drive(self) -> None:
        run = self._run
        assert run is not None
        core = run.core
        if not run.aborted and not core.failed and run.idle_at != run.changes:
            rows = core.ready().tolist()    # (unchanged executor: the same empty answer)
            if not rows:
                run.idle_at = run.changes
            for i in rows:
                if core.failed:
                    break
                self._start(int(i))
        if not run.inflight and (run.aborted or core.failed or (          # Executor.done
                core.in_flight == 0 and (core.waiting == 0 or core.stopped))):
            self._run = None
            failed = bool(core.failed)
            if self._publish is None:
                self._publish_completed()
            self._dirty = True
            if failed:
                self._paused_until = self._now + self.config.retry_delay
                self._timer_set(("retry",), self.config.retry_delay)

    def _start(self, i: int) -> None:
        run = self._run
        assert run is not None
        assert self._run_plan is not None
        x = self._info(self._run_plan, i, run.ids)
        p = x.partition
        owner = self.replicas.item(p, 0)
        members = self.members
        if not 0 <= i < run.core.n or run.core.start(i) != _ACCEPTED:
            run.executor.started(i)           # raises the refusal (or the bad row)
        run.changes += 1
        if (owner == -1 or owner not in members or x.destination not in members
                or (x.source >= 0 and x.source not in members)):
            _finished(run, i, False)
            run.changes += 1
            self._mark("migration_failed", x, detail="dropped at start: a participant is gone")
            return
        run.inflight[x.id] = (i, x, "request", owner)
        self._mark("migration_started", x)
        self._send(owner, _REQUEST(self.me, x, self._completed_of(p)))
        self._timer_set(("mig", x.id), self._timeout)

    # ------------------------------------------------------------------ recovery (rule 8)
    def _start_recovery(self) -> None:
        self._run = None
        self._promotions = {}
        self._publish = None
        others = [m for m in self.members if m != self.me]
        self._fetching = {m: None for m in others}
        for m in others:
            self._send(m, msg.FetchPartitionState(self.me))
            self._timer_set(("fetch", m), self._timeout)
        self._maybe_finish_recovery()

    def _maybe_finish_recovery(self) -> None:
        f = self._fetching
        if f is None or any(v is None for v in f.values()):
            return
        self._fetching = None
        P, R = self.replicas.shape
        have = self.initialized
        reps = self.replicas.copy()
        vers = self.versions.copy() if have else np.full(P, -1, dtype=np.int32)
        completed = dict(self.completed)
        active = {x.id: x for x in self.active.values()}
        for m in sorted(f):
            st = f[m]
            if st is None or not st.initialized or st.replicas is None or st.versions is None:
                continue
            if st.replicas.shape != (P, R) or st.versions.shape != (P,) \
                    or st.replicas.dtype != np.int32 or st.versions.dtype != np.int32 \
                    or self._bad_table(np.ascontiguousarray(st.replicas),
                                       np.ascontiguousarray(st.versions), None,
                                       f"m{m}'s table"):
                continue
            newer = st.versions > vers
            same = (st.versions == vers) & (st.replicas != reps).any(axis=1)
            self.diverged += int(same.sum())
            reps[newer] = st.replicas[newer]
            vers[newer] = st.versions[newer]
            have = True
            for x in st.completed:
                if not self._check_migration(x) and x.status != ACTIVE:
                    completed.setdefault(x.id, x)
            for x in st.active:
                if not self._check_migration(x):
                    active.setdefault(x.id, x)
        self._mark("tables_fetched", detail=f"{len(f)} members")
        if not have:
            self._dirty = True
            return
        for x in sorted(active.values(), key=lambda y: y.id):
            if x.id not in completed:
                completed[x.id] = _settled(x, FAILED, final=x.initial + x.increment + 1)
        for x in completed.values():
            if x.status == FAILED:
                vers[x.partition] = max(int(vers[x.partition]), x.final)
        self.initialized = True
        self.replicas, self.versions = reps, vers.astype(np.int32)
        self.completed = completed
        for x in completed.values():
            self._finalize(x)
        self._mark("recovery_published")
        self._publish_table()
        self._dirty = True

    # ------------------------------------------------------------------ legacy (rule 10)
    def _legacy_drop(self, gone: set[int]) -> None:
        """Every member drops leavers locally and shifts the rest of each row up."""
        reps = self.replicas
        hit = np.isin(reps, np.asarray(sorted(gone), dtype=np.int32)) & (reps >= 0)
        rows = np.flatnonzero(hit.any(axis=1))
        for p in rows.tolist():
            keep = [int(v) for v, h in zip(reps[p], hit[p]) if v >= 0 and not h]
            new = keep + [-1] * (reps.shape[1] - len(keep))
            self.versions[p] += int((np.asarray(new, dtype=np.int32) != reps[p]).sum())
            reps[p] = new

    def _legacy_repair(self) -> None:
        members = np.asarray(self.data_members, dtype=np.int32)
        bad = (self.replicas >= 0) & ~np.isin(self.replicas, members)
        if bad.any():
            self._legacy_drop({int(v) for v in self.replicas[bad].tolist()})

    def _legacy_finalize(self, old: NDArray[np.int32], new: NDArray[np.int32]) -> None:
        """Each member acts alone on the table it now sees (rule 10(a)-(b))."""
        bc = self._bc
        me = self.me
        was = (old[:, :bc + 1] == me).any(axis=1)
        now = (new[:, :bc + 1] == me).any(axis=1)
        lost_owner = (old[:, 0] == me) & (new[:, 0] != me)
        clear = was & (~now | lost_owner)
        for p in np.flatnonzero(clear).tolist():
            self._effect("clear", p)
            self._mark("source_finalized", partition=p)
        fresh = now & (new[:, 0] != me) & (~was | lost_owner)
        for p in np.flatnonzero(fresh).tolist():
            owner = int(new[p, 0])
            if owner >= 0 and owner != me:
                self._send(owner, msg.ReplicaSyncRequest(self.me, p))


_HANDLERS: dict[type, Callable[[Node, Any], None]] = {
    msg.PartitionTableUpdate: Node._on_table,
    msg.PublishCompletedMigrations: Node._on_publish,
    msg.PartitionStateCheck: Node._on_state_check,
    msg.MigrationRequest: Node._on_request,
    msg.MigrationTransfer: Node._on_transfer,
    msg.MigrationTransferAck: Node._on_transfer_ack,
    msg.MigrationCommit: Node._on_commit,
    msg.FetchPartitionState: Node._on_fetch,
    msg.PromotionCommit: Node._on_promotion,
    msg.ReplicaSyncRequest: Node._on_sync,
    msg.MigrationResult: Node._on_result,
    msg.MigrationCommitResponse: Node._on_commit_response,
    msg.PublishCompletedAck: Node._on_publish_ack,
    msg.PartitionTableAck: Node._on_table_ack,
    msg.PartitionStateCheckReply: Node._on_state_reply,
    msg.PromotionCommitResponse: Node._on_promotion_response,
    msg.PartitionStateReply: Node._on_state,
}
