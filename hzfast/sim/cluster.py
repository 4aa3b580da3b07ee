"""A deterministic, fault-injecting cluster of protocol nodes with real data.

Everything derives from one seed: the cluster shape and fault rates (``faults="swarm"``),
every message delay, drop, duplicate and clog, every crash and join, every client write.
One heap of ``(time, sequence)`` keys, each naming an event, drives the run, so the same
seed replays the same run event for event. See docs/design.md §12 for the model and the checker.
"""
from __future__ import annotations

import gc
import random
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast.arrangement import arrange
from hzfast.hashing import partition_ids
from hzfast.protocol import messages as msg
from hzfast.protocol._build import Builder
from hzfast.protocol.events import (
    EffectDone,
    MembershipChanged,
    MessageReceived,
    TimerFired,
)
from hzfast.protocol.kinds import CLEAR, COPY, DISCARD, INSTALL, SYNC, MarkName
from hzfast.protocol.node import Config, MemberState, Node
from hzfast.protocol.outputs import CancelTimer, Effect, Mark, Send, SetTimer
from hzfast.sim._checks import advance_versions, first_disagreement
from hzfast.sim._queue import EventQueue

__all__ = ["FAULT_MODES", "ROLES", "CrashAt", "FaultPlan", "Simulation", "SimulationResult"]


ROLES = ("master", "source", "destination", "owner")
FAULT_MODES = ("swarm", "none")
_MESSAGE_TYPES = tuple(sorted(
    (getattr(msg, n) for n in msg.__all__
     if isinstance(getattr(msg, n), type) and issubclass(getattr(msg, n), msg.Message)
     and getattr(msg, n) is not msg.Message), key=lambda t: t.__name__))

# the events a run makes most, built straight into their slots (docs/design.md §12)
_RECEIVED = Builder(MessageReceived)
_DONE = Builder(EffectDone)
_FIRED = Builder(TimerFired)
_SUCCESS = msg.MigrationStatus.SUCCESS
_PUBLISH = msg.PublishCompletedMigrations
_PUBLISH_ACK = msg.PublishCompletedAck
# the marks the simulator does more with than count (one set lookup rules out the rest)
_STARTED, _COMMITTED, _FAILED = (MarkName.MIGRATION_STARTED, MarkName.MASTER_COMMITTED,
                                 MarkName.MIGRATION_FAILED)
_RECOVERED, _EVICTED = MarkName.RECOVERY_PUBLISHED, MarkName.COMPLETED_EVICTED
_MARKS_WATCHED = frozenset((_COMMITTED, _RECOVERED, _FAILED, _STARTED, _EVICTED))

SAFETY_TICKS = 3_000          # the safety phase: faults on
LIVENESS_TICKS = 40_000       # the liveness phase's bound: faults off, must converge


@dataclass(frozen=True, slots=True)
class CrashAt:
    """Crash the ``role`` of a migration (``master``, ``source``, ``destination`` or
    ``owner``) the ``nth`` time any member emits ``mark``."""

    role: str
    mark: str
    nth: int = 1

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"CrashAt.role must be one of {ROLES}, got {self.role!r}")
        from hzfast.protocol.outputs import MARKS
        if self.mark not in MARKS:
            raise ValueError(f"CrashAt.mark must be one of hzfast.protocol.MARKS, got {self.mark!r}")
        if not isinstance(self.nth, int) or self.nth < 1:
            raise ValueError(f"CrashAt.nth must be an int >= 1, got {self.nth!r}")


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """The fault rates of one run (drawn from the seed in swarm mode)."""

    drop: float = 0.0
    duplicate: float = 0.0
    max_delay: int = 5
    slow: float = 0.0             #: probability a message takes up to 10x max_delay
    crashes: int = 0
    restarts: float = 0.0         #: probability a crashed member comes back (new id)
    joins: int = 0
    clogs: int = 0
    filters: int = 0              #: per-message-type drop/delay windows
    detect_delay: int = 20        #: crash -> membership change


@dataclass(slots=True)
class SimulationResult:
    """What one simulation did and found (see :func:`hzfast.sim.run`)."""

    seed: int
    design: str
    members: int
    partitions: int
    backup_count: int
    entries: int
    entries_attempted: int = 0
    entries_acknowledged: int = 0
    entries_lost: int = 0
    entries_lost_expected: int = 0
    entries_unexpected: int = 0
    faults_injected: dict[str, int] = field(default_factory=dict)
    converged: bool = False
    violations: list[str] = field(default_factory=list)
    events: int = 0
    time: int = 0
    marks: dict[str, int] = field(default_factory=dict)
    migrations_committed: int = 0
    migrations_failed: int = 0
    trace: list[str] = field(default_factory=list)
    last_events: list[str] = field(default_factory=list)
    faults: FaultPlan | None = None

    @property
    def ok(self) -> bool:
        """No violation and converged."""
        return self.converged and not self.violations

    def summary(self) -> str:
        f = ", ".join(f"{k}={v}" for k, v in sorted(self.faults_injected.items()) if v)
        return (f"seed={self.seed} design={self.design} members={self.members} "
                f"partitions={self.partitions} backups={self.backup_count} "
                f"acked={self.entries_acknowledged}/{self.entries} lost={self.entries_lost} "
                f"(expected {self.entries_lost_expected}) converged={self.converged} "
                f"events={self.events} faults: {f or 'none'}")


class Simulation:
    """One seeded run (see :func:`hzfast.sim.run` for the parameters)."""

    def __init__(self, seed: int, *, members: int = 4, partitions: int = 271,
                 backup_count: int = 1, entries: int = 10_000, faults: str = "swarm",
                 script: tuple[CrashAt, ...] = (), design: str = "safe", joins: int = 0,
                 trace: bool = False, max_parallel_migrations: int = 10,
                 fault_plan: FaultPlan | None = None,
                 timeline: tuple[tuple[int, str], ...] = (),
                 write_window: tuple[int, int] = (1, SAFETY_TICKS),
                 sync_ticks: int = 20, strict: bool = False) -> None:
        self.rng = random.Random(seed)
        self.strict = strict and design == "safe"
        rng = self.rng
        self.seed = seed
        self.design = design
        self.trace_on = trace
        if faults == "swarm" and fault_plan is None:
            members = rng.randint(max(2, backup_count + 1), members + 2)
            fault_plan = FaultPlan(
                drop=rng.choice((0.0, 0.01, 0.05, 0.15)),
                duplicate=rng.choice((0.0, 0.02, 0.1)),
                max_delay=rng.choice((2, 5, 15)),
                slow=rng.choice((0.0, 0.02, 0.1)),
                crashes=rng.choice((0, 1, 1, 2, 3)),
                restarts=rng.choice((0.0, 0.5, 1.0)),
                joins=rng.choice((0, 1, 2)),
                clogs=rng.choice((0, 2, 5)),
                filters=rng.choice((0, 1, 3)),
                detect_delay=rng.choice((5, 20, 60)))
        elif fault_plan is None:
            fault_plan = FaultPlan()
        if joins:
            fault_plan = replace(fault_plan, joins=fault_plan.joins + joins)
        self.fp = fault_plan
        # what every message, write and transfer reads: C fields when compiled, where the
        # plan's attributes and the generator's bound methods are lookups each time
        self.drop = fault_plan.drop
        self.duplicate = fault_plan.duplicate
        self.slow = fault_plan.slow
        self.max_delay = fault_plan.max_delay
        self.random = rng.random
        self.getrandbits = rng.getrandbits
        self.config = Config(partition_count=partitions, backup_count=backup_count,
                             max_parallel_migrations=max_parallel_migrations, design=design)
        self.bc = backup_count
        self.P = partitions
        self.result = SimulationResult(seed, design, members, partitions, backup_count, entries,
                                       faults=fault_plan)
        # counts by name, in order of first count (plain dicts: a Counter's item
        # assignment dispatches through Python, as Counter defines __delitem__)
        self.injected: dict[str, int] = {}
        self.marks: dict[str, int] = {}
        self.violations: list[str] = []
        # the event queue: (time, sequence) order in a C heap, each event with its kind
        # and payload (hzfast.sim._queue); times past its range queue at its end, which a
        # run never reaches (it stops at its first event past SAFETY + LIVENESS ticks)
        self.queue = EventQueue()
        self.seq = 0
        self.now = 0
        self.nodes: dict[int, Node] = {}
        self.view: list[int] = []
        self.view_no = 0
        self.seen_view: dict[int, int] = {}
        self.next_id = 1
        # replica data: per member, per partition, a bit mask over the partition's keys
        # (bit i = ``keys_of[p][i]``); the same for the staged copies, the pending and
        # acknowledged writes (docs/design.md §12: masks, not sets of keys)
        self.store: dict[int, dict[int, int]] = {}
        self.staged: dict[int, dict[tuple[int, int], int]] = {}
        self.timer_tok: dict[tuple[int, Hashable], int] = {}
        self.last_versions: dict[int, NDArray[np.int32]] = {}
        self.committed: set[tuple[int, int]] = set()
        # the parallel limit as the masters keep it: per master, its migrations in flight
        self.limit = max_parallel_migrations
        # (partition -> (id, destination, source endpoint)) and each member's load in them
        self.in_flight: dict[int, dict[int, tuple[tuple[int, int], int, int]]] = {}
        self.load: dict[int, dict[int, int]] = {}
        # each master's latest completed list published: its ids, the members it went to,
        # and those whose acceptance of it reached the master
        self.published: dict[int, tuple[tuple[tuple[int, int], ...], set[int], set[int]]] = {}
        self.faulty = faults == "swarm"
        self.clogged: dict[tuple[int, int], int] = {}
        self.filters: dict[type, tuple[str, int]] = {}
        self.script = [(c, 0) for c in script]
        self.recent: deque[tuple[int, int, object]] = deque(maxlen=60)
        self.trace: list[str] = []
        self.events = 0
        # data
        keys = np.arange(entries, dtype=np.int64)
        pid = partition_ids(keys, partitions) if entries else np.zeros(0, np.int32)
        self.part_of = pid
        self.keys_of: dict[int, list[int]] = {}      # a partition's keys, ascending
        self.pending: dict[int, int] = {}
        if entries:                                  # keys grouped by partition, at once
            # (a stable sort keeps each group's keys ascending; 16-bit ids sort by radix)
            order = np.argsort(pid.astype(np.uint16) if partitions <= 1 << 16 else pid,
                               kind="stable")
            by_pid = pid[order]
            sorted_keys = keys[order].tolist()
            bounds = [0, *(np.flatnonzero(np.diff(by_pid)) + 1).tolist(), len(sorted_keys)]
            for p, a, b in zip(by_pid[bounds[:-1]].tolist(), bounds, bounds[1:]):
                self.keys_of[p] = sorted_keys[a:b]
                self.pending[p] = (1 << (b - a)) - 1   # (Python ints: no C shift)
        self.acked: dict[int, int] = {}
        self.attempted: dict[int, int] = {}
        # holder crashes counted per entry, as masks per partition in a thermometer code:
        # crashes[p][j] has the bit of every entry of p counted at least j + 1 times;
        # only "at least backup_count + 1" matters, so the count stops there
        self.crashes: dict[int, list[int]] = {}
        self.lost_by_clear: dict[int, int] = {}      # masks, per partition
        self.expected_lost: dict[int, int] = {}
        self.write_batches = 0
        self.write_tries: dict[int, int] = {}
        self.write_window = write_window
        self.sync_ticks = sync_ticks
        self.sync_free: dict[int, int] = {}
        self.effect_free: dict[int, int] = {}
        self.initial_members = members
        # cluster
        for _ in range(members):
            self._new_member()
        self._publish_view()
        self._schedule_faults()
        self._schedule_writes()
        for t, action in timeline:
            self._push(t, "script", action)

    # ------------------------------------------------------------------ plumbing
    def _inject(self, kind: str) -> None:
        """Count one injected fault of ``kind``."""
        self.injected[kind] = self.injected.get(kind, 0) + 1

    def _push(self, t: int, kind: str, payload: Any) -> None:
        self.seq += 1                # (a run has < 5e6 events: far below 2**40)
        self.queue.push(t, self.seq, kind, payload)

    def _new_member(self) -> int:
        mid = self.next_id
        self.next_id += 1
        self.nodes[mid] = Node(mid, self.config)
        self.store[mid] = {}
        self.staged[mid] = {}
        self.last_versions[mid] = self.nodes[mid].versions.copy()
        self.view.append(mid)
        return mid

    def _publish_view(self) -> None:
        self.view_no += 1
        ev = MembershipChanged(tuple(self.view), (False,) * len(self.view))
        for m in self.view:
            jitter = self.rng.randint(0, 3) if self.faulty else 0
            self._push(self.now + jitter, "view", (m, self.view_no, ev))

    def _schedule_faults(self) -> None:
        rng, fp = self.rng, self.fp
        for _ in range(fp.crashes):
            self._push(rng.randint(200, SAFETY_TICKS), "crash", None)
        for _ in range(fp.joins):
            self._push(rng.randint(100, SAFETY_TICKS), "join", None)
        for _ in range(fp.clogs):
            self._push(rng.randint(1, SAFETY_TICKS), "clog", None)
        for _ in range(fp.filters):
            self._push(rng.randint(1, SAFETY_TICKS), "filter", None)
        self._push(SAFETY_TICKS, "heal", None)

    def _schedule_writes(self) -> None:
        parts = sorted(self.pending)
        lo, hi = self.write_window
        for p in parts:
            self._push(_randint(self.rng, lo, hi), "write", p)

    def _alive(self, m: int) -> bool:
        return m in self.nodes

    # ------------------------------------------------------------------ network
    def _deliver(self, src: int, dst: int, m: msg.Message) -> None:
        now = self.now
        if not self.faulty:
            self._push(now + 1, "msg", (src, dst, m))
            return
        bits, uniform = self.getrandbits, self.random
        delay = _randbits(bits, 1, self.max_delay)
        if self.slow and uniform() < self.slow:
            delay += _randbits(bits, 1, 10 * self.max_delay)
        if self.drop and uniform() < self.drop:
            self._inject("message_dropped")
            return
        if self.filters:
            f = self.filters.get(type(m))
            if f is not None and now < f[1]:
                if f[0] == "drop":
                    self._inject("message_filtered")
                    return
                delay += 50
                self._inject("message_delayed")
        if self.clogged:
            until = self.clogged.get((src, dst), 0)
            if until > now:
                delay += until - now
        if self.duplicate and uniform() < self.duplicate:
            self._inject("message_duplicated")
            self._push(now + delay + _randbits(bits, 0, self.max_delay), "msg", (src, dst, m))
        self._push(now + delay, "msg", (src, dst, m))

    # ------------------------------------------------------------------ node calls
    def _handle(self, mid: int, ev: Any) -> None:
        node = self.nodes[mid]
        self.events += 1
        outs = node.handle(ev, self.now)
        if self.trace_on:
            self.trace.append(f"{self.now} m{mid} <- {_short(ev)}")
        self.recent.append((self.now, mid, ev))
        v = node.versions
        last = self.last_versions[mid]
        try:       # one pass: compare, then remember (§12); it checks the arrays itself
            p = advance_versions(v, last)
        except TypeError:                  # another dtype, layout or length: numpy's way
            lower = np.flatnonzero(v < last) if last.shape == v.shape else np.empty(0, int)
            p = int(lower[0]) if len(lower) else -1
            self.last_versions[mid] = np.array(v, dtype=np.int32)   # (``last``: the old one)
        if p >= 0:
            self._violation(f"versions decreased on m{mid}: partition {p} "
                            f"{int(last[p])} -> {int(v[p])}")
            last[p] = v[p]
        if self.strict:
            self._check_agreement(mid)
        if not outs:
            return
        crash: list[int] = []
        tracing = self.trace_on
        for o in outs:
            t = type(o)
            if t is Send:
                m = o.message                               # type: ignore[attr-defined]
                if type(m) is _PUBLISH:
                    self._published(mid, o.to, m)           # type: ignore[attr-defined]
                self._deliver(mid, o.to, m)                 # type: ignore[attr-defined]
            elif t is Mark:
                self._on_mark(mid, o, crash)               # type: ignore[arg-type]
            elif t is SetTimer:
                tok = self.seq + 1                        # the number _push gives it
                self.timer_tok[(mid, o.key)] = tok          # type: ignore[attr-defined]
                self._push(o.at, "timer", (mid, o.key, tok))  # type: ignore[attr-defined]
            elif t is CancelTimer:
                self.timer_tok.pop((mid, o.key), None)     # type: ignore[attr-defined]
            elif t is Effect:        # a member's effects are performed in order
                at = max(self.now + (_randbits(self.getrandbits, 1, 3) if self.faulty else 1),
                         self.effect_free.get(mid, 0))
                self.effect_free[mid] = at
                self._push(at, "effect", (mid, o))
            if tracing:
                self.trace.append(f"{self.now} m{mid} -> {_short(o)}")
        for c in crash:
            if self._alive(c):
                self._crash(c, "scripted")

    def _on_mark(self, mid: int, mk: Mark, crash: list[int]) -> None:
        marks = self.marks
        name = mk.name
        marks[name] = marks.get(name, 0) + 1
        if name not in _MARKS_WATCHED and not self.script:
            return
        x = mk.migration
        if name == _STARTED and x is not None:
            self._started(mid, x)
        elif name == _COMMITTED and x is not None:
            self.committed.add(x.id)
            self._ended(mid, x)
        if name == _RECOVERED:                # what a destination committed stands
            self.committed |= {y.id for y in self.nodes[mid].completed.values()
                               if y.status == _SUCCESS}
        if name == _FAILED:
            self.result.migrations_failed += 1
            if x is not None:
                self._ended(mid, x)
        elif name == _EVICTED:
            self._evicted(mid)
        for i, (c, seen) in enumerate(self.script):
            if c.mark != name or seen >= c.nth:
                continue
            seen += 1
            self.script[i] = (c, seen)
            if seen != c.nth:
                continue
            who = -1
            if c.role == "master":
                who = self.view[0] if self.view else -1
            elif x is not None:
                if c.role == "source":
                    who = x.source
                elif c.role == "destination":
                    who = x.destination
                else:
                    node = self.nodes.get(self.view[0]) if self.view else None
                    who = int(node.replicas[x.partition, 0]) if node is not None else -1
            if who >= 0:
                self._inject("scripted_crash")
                crash.append(who)

    def _started(self, mid: int, x: msg.MigrationInfo) -> None:
        """Master ``mid`` started ``x``: the master may have no other migration of the
        partition in flight, and its destination and source endpoint (the owner in the
        master's table, where backups take their data from; the source itself when it
        owns) each take one more of the master's migrations in flight, after which neither
        may be in more than ``max_parallel_migrations`` (docs/design.md §6)."""
        node = self.nodes.get(mid)
        p = _partition_of(x)
        if node is None or not 0 <= p < self.P:
            return
        xid = x.id
        dest = x.destination
        endpoint = node.replicas.item(p, 0)
        flying = self.in_flight.get(mid)
        if flying is None:
            flying = self.in_flight[mid] = {}
            self.load[mid] = {}
        load = self.load[mid]
        other = flying.get(p)
        if other is not None:
            if other[0] == xid:
                self._violation(f"m{mid} started {x} twice")
                return
            self._violation(f"m{mid} started {x} while its migration {other[0][0]}."
                            f"{other[0][1]} of partition {p} is in flight")
            load[other[1]] -= 1           # (counted as ended: one report, not a cascade)
            load[other[2]] -= 1
        flying[p] = (xid, dest, endpoint)
        n = load.get(dest, 0) + 1
        load[dest] = n
        e = load.get(endpoint, 0) + 1
        load[endpoint] = e
        if n > self.limit or e > self.limit:
            m, n = (dest, n) if n > self.limit else (endpoint, e)
            self._violation(f"m{mid} started {x} with m{m} in {n} of its migrations at once "
                            f"(max_parallel_migrations={self.limit})")

    def _ended(self, mid: int, x: msg.MigrationInfo) -> None:
        """Master ``mid`` committed or failed ``x``: its two members' loads go down (a
        migration it did not start, a promotion or one a new master settled, is no load)."""
        flying = self.in_flight.get(mid)
        if not flying:
            return
        p = _partition_of(x)
        ent = flying.get(p)
        if ent is None or ent[0] != x.id:
            return
        del flying[p]
        load = self.load[mid]
        load[ent[1]] -= 1
        load[ent[2]] -= 1

    def _published(self, mid: int, to: int, m: msg.PublishCompletedMigrations) -> None:
        """Master ``mid`` sends its completed list to ``to``."""
        ids = tuple([x.id for x in m.completed])
        pub = self.published.get(mid)
        if pub is None or pub[0] != ids:
            pub = (ids, set(), set())
            self.published[mid] = pub
        pub[1].add(to)

    def _evicted(self, mid: int) -> None:
        """Master ``mid`` evicted its published completed list: every member it went to
        that is still in the master's view must have accepted it (docs/design.md §7.6; a
        member that joined later got the full table instead)."""
        node = self.nodes.get(mid)
        pub = self.published.pop(mid, None)
        if node is None or pub is None:
            return
        members = set(node.members)
        missing = sorted([m for m in pub[1] if m in members and m not in pub[2]])
        if missing:
            self._violation(f"m{mid} evicted {len(pub[0])} completed migrations before "
                            f"{', '.join([f'm{m}' for m in missing])} accepted them")

    # ------------------------------------------------------------------ faults
    def _crash(self, m: int, why: str) -> None:
        if m not in self.nodes:
            return
        for per_master in (self.in_flight, self.load, self.published):
            per_master.pop(m, None)
        self._ghost_crash(m)
        del self.nodes[m]
        self.store.pop(m, None)
        self.staged.pop(m, None)
        self.view.remove(m)
        self._inject("member_crashed")
        self.recent.append((self.now, m, f"CRASH ({why})"))
        if self.trace_on:
            self.trace.append(f"{self.now} CRASH m{m} ({why})")
        delay = self.fp.detect_delay if self.faulty else 10
        self._push(self.now + delay, "leave", m)
        if self.faulty and self.rng.random() < self.fp.restarts and self.now < SAFETY_TICKS:
            self._push(self.now + delay + self.rng.randint(10, 300), "join", None)

    def _event_crash(self) -> None:
        if len(self.view) <= 1:
            return
        self._crash(self.rng.choice(self.view), "swarm")

    def _event_join(self) -> None:
        m = self._new_member()
        self._inject("member_joined")
        self.recent.append((self.now, m, "JOIN"))
        self._publish_view()

    # ------------------------------------------------------------------ data
    def _master_row(self, p: int) -> NDArray[np.int32] | None:
        if not self.view:
            return None
        node = self.nodes[self.view[0]]
        return node.replicas[p] if node.initialized else None

    def _committed_row(self, p: int) -> NDArray[np.int32] | None:
        """Partition ``p``'s row at the highest version any live member holds: the latest
        commit the cluster knows of. The master's own row can be older: a new master
        that is still fetching tables has not yet learned what its predecessor committed
        (docs/design.md §12, ghost model)."""
        best: NDArray[np.int32] | None = None
        top = -1
        for node in self.nodes.values():
            if node.initialized:
                v = node.versions.item(p)
                if v > top:
                    top, best = v, node.replicas[p]
        return best

    def _stable(self, p: int, held: int, row: NDArray[np.int32] | None) -> int:
        """The entries of ``held`` (a mask) that every member at the committed data slots
        of partition ``p`` (``backup_count + 1`` of them, all live) holds: the ones a crash
        or a clear cannot be the last copy of. One mask intersection per slot."""
        if row is None or not held:
            return 0
        nodes, store = self.nodes, self.store
        out = held
        for s in row[:self.bc + 1].tolist():
            data = store[s].get(p, 0) if s >= 0 and s in nodes else 0
            if not data:
                return 0
            out &= data
        return out

    def _crash_levels(self, p: int) -> list[int]:
        """Partition ``p``'s crash counts (see ``crashes``), made on first use."""
        levels = self.crashes.get(p)
        if levels is None:
            levels = self.crashes[p] = [0] * (self.bc + 1)
        return levels

    def _ghost_crash(self, m: int) -> None:
        """Before member m's data vanishes: count a holder crash for every entry it held
        (an entry every committed data slot held counts this as its first)."""
        for p, data in self.store[m].items():
            acked = self.acked.get(p)
            if not data or not acked:
                continue
            held = data & acked
            _count_crash(self._crash_levels(p), held,
                         self._stable(p, held, self._committed_row(p)))

    def _clear(self, m: int, p: int) -> None:
        data = self.store[m].get(p)
        if not data:
            self.store[m].pop(p, None)
            return
        acked = self.acked.get(p)
        if acked:
            full = self.bc + 1
            held = data & acked
            levels = self._crash_levels(p)
            stable = self._stable(p, held, self._committed_row(p))
            if stable:                           # safe again: their counts start over
                _forget(levels, stable)
            others = 0
            for o in self.nodes:
                if o != m:
                    others |= self.store[o].get(p, 0)
            # a clear, not crashes, dropped the last copy
            dropped = held & ~others & ~levels[full - 1]
            if dropped:
                self.lost_by_clear[p] = self.lost_by_clear.get(p, 0) | dropped
        del self.store[m][p]

    def _effect(self, mid: int, e: Effect) -> None:
        if mid not in self.nodes:
            return
        kind, p, x = e.kind, e.partition, e.migration
        ok = True
        st = self.store[mid]
        if kind == COPY or kind == SYNC:
            snap = st.get(p, 0)                  # (an int: a snapshot as it is)
            to = e.to
            d = _randbits(self.getrandbits, 1, self.max_delay) if self.faulty else 1
            if self.faulty and self.drop and self.random() < self.drop:
                self._inject("transfer_dropped")
                self._push(self.now + d, "done", (mid, e.id, False))
                return
            if kind == SYNC and x is None:       # replica sync: one at a time per owner
                start = max(self.now, self.sync_free.get(mid, 0))
                self.sync_free[mid] = start + self.sync_ticks
                self._push(start, "sync_start", (mid, to, p, e.id, start + self.sync_ticks - start))
                return
            self._push(self.now + d, "arrive", (mid, to, kind, p, x, snap, e.id))
            return
        if kind == INSTALL:
            assert x is not None
            data = self.staged[mid].pop(x.id, None)
            if e.keep:
                if data is None:
                    self._violation(f"m{mid} commits {x} without the data")
                else:
                    st[p] = st.get(p, 0) | data
            elif p in st:
                self._clear(mid, p)
        elif kind == DISCARD:
            assert x is not None
            self.staged[mid].pop(x.id, None)
        elif kind == CLEAR:
            if x is not None and x.status == _SUCCESS \
                    and x.id not in self.committed and self.design == "safe":
                self._violation(f"m{mid} clears partition {p} for {x} before the master "
                                f"committed it")
            self._clear(mid, p)
        self._push(self.now + 1, "done", (mid, e.id, ok))

    def _arrive(self, src: int, to: int, kind: str, p: int, x: msg.MigrationInfo | None,
                snap: int, eid: int) -> None:
        ok = to in self.nodes and src in self.nodes     # a crash cuts transfers in flight
        if ok:
            if kind == COPY:
                assert x is not None
                self.staged[to][x.id] = snap
            else:
                st = self.store[to]
                st[p] = st.get(p, 0) | snap
        self._push(self.now + 1, "done", (src, eid, ok))

    def _write(self, p: int) -> None:
        batch = self.pending.get(p)                   # all the partition's keys not acked yet
        if not batch:
            return
        bits, uniform = self.getrandbits, self.random
        self.write_batches += 1
        tries = self.write_tries.get(p, 0) + 1
        self.write_tries[p] = tries
        retry = self.now + min(10 * tries, 200) + (_randbits(bits, 0, 20) if self.faulty else 0)
        live = [m for m in self.view if self.nodes[m].initialized]
        if not live:
            self._push(retry, "write", p)
            return
        view = self.nodes[live[_randbits(bits, 0, len(live) - 1)]]   # the client's cached table
        owner = view.replicas.item(p, 0)
        self.attempted[p] = self.attempted.get(p, 0) | batch
        if owner < 0 or owner not in self.nodes or (
                self.faulty and self.drop and uniform() < self.drop):
            self._push(retry, "write", p)
            return
        node = self.nodes[owner]
        if not node.accepts_write(p):
            self._push(retry, "write", p)
            return
        st = self.store[owner]
        st[p] = st.get(p, 0) | batch
        ok = True
        drop = self.drop if self.faulty else 0.0
        for j in range(1, self.bc + 1):           # node.backups(p), slot by slot
            b = node.replicas.item(p, j)
            if b < 0 or b not in self.nodes:
                ok = False
                continue
            if drop and uniform() < drop:
                ok = False
                continue
            if not self.nodes[b].accepts_backup(p, owner):
                ok = False
                continue
            st = self.store[b]
            st[p] = st.get(p, 0) | batch
        if ok:
            self.acked[p] = self.acked.get(p, 0) | batch
            del self.pending[p]
        else:
            self._push(retry, "write", p)

    # ------------------------------------------------------------------ checks
    def _violation(self, text: str) -> None:
        if len(self.violations) < 50:
            self.violations.append(f"t={self.now}: {text}")

    def _check_agreement(self, mid: int = -1) -> None:
        """Members holding a partition at one version list the same replicas for it: every
        pair of initialized members, or (``mid``) member ``mid`` against each other one."""
        nodes = [n for n in self.nodes.values() if n.initialized]
        for i in range(len(nodes)):
            a = nodes[i]
            if mid >= 0 and a.me != mid:
                continue
            for j in range(len(nodes)):
                if (j <= i and mid < 0) or j == i:
                    continue
                if self._disagree(a, nodes[j]):
                    return

    def _disagree(self, a: Node, b: Node) -> bool:
        try:                               # one pass in C (§12)
            p = first_disagreement(a.versions, a.replicas, b.versions, b.replicas)
        except TypeError:                  # another dtype, layout or shape: numpy's way
            same = a.versions == b.versions
            bad = np.flatnonzero(same & (a.replicas != b.replicas).any(axis=1))
            p = int(bad[0]) if len(bad) else -1
        if p < 0:
            return False
        self._violation(f"m{a.me} and m{b.me} hold partition {p} at version "
                        f"{int(a.versions[p])} with different replicas "
                        f"{a.replicas[p].tolist()} vs {b.replicas[p].tolist()}")
        return True

    def _quiet(self) -> bool:
        if not self.view or self.pending:
            return False
        master = self.nodes[self.view[0]]
        if not master.initialized or master.busy:
            return False
        st = master.stamp
        for n in self.nodes.values():
            if n.state(master.busy) != MemberState.SAFE or n.stamp != st:
                return False
        return self._balanced(master)

    def _balanced(self, master: Node) -> bool:
        """The master sees the live data members, every slot is held by a member, and
        arranging the table changes nothing."""
        if master.data_members != tuple(self.view):
            return False
        dense, _, members = master.view_table()
        if (dense[master.replicas >= 0] < 0).any():
            return False
        target = arrange(dense, members, replica_count=dense.shape[1])
        return bool((target == dense).all())

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimulationResult:
        """Run to the end and check (see :func:`hzfast.sim.run`).

        Python's cycle collector is paused for the run: a run makes no reference cycles
        (reference counting frees all it drops), and the collector's passes over the many
        live objects cost several per cent (docs/design.md §12)."""
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if paused:
                gc.enable()

    def _run(self) -> SimulationResult:
        safe = self.design == "safe"
        next_check = 100
        converged = False
        end = SAFETY_TICKS + LIVENESS_TICKS
        for _ in range(5_000_000):
            if not len(self.queue):                # (self.queue: C calls when compiled)
                break
            t = self.queue.pop()
            kind, payload = self.queue.kind, self.queue.payload
            if t > end:
                break
            self.now = t
            # (the commonest kinds first: a kind that does not match is a string compare)
            if kind == "msg":
                src, dst, m = payload
                if dst in self.nodes and src in self.nodes:
                    if type(m) is _PUBLISH_ACK and m.ok:     # (for the eviction check)
                        pub = self.published.get(dst)
                        if pub is not None and tuple(m.ids) == pub[0]:
                            pub[2].add(src)
                    self._handle(dst, _RECEIVED(src, m))
            elif kind == "effect":
                mid, e = payload
                self._effect(mid, e)
            elif kind == "done":
                mid, eid, ok = payload
                if mid in self.nodes:
                    self._handle(mid, _DONE(eid, ok))
            elif kind == "write":
                self._write(payload)
            elif kind == "arrive":
                src, to, what, p, x, snap, eid = payload
                self._arrive(src, to, what, p, x, snap, eid)
            elif kind == "timer":
                mid, key, tok = payload
                if mid in self.nodes and self.timer_tok.get((mid, key)) == tok:
                    del self.timer_tok[(mid, key)]
                    self._handle(mid, _FIRED(key))
            elif kind == "sync_start":
                src, to, p, eid, d = payload
                if src in self.nodes:
                    snap = self.store[src].get(p, 0)
                    self._push(t + d, "arrive", (src, to, SYNC, p, None, snap, eid))
            elif kind == "view":
                mid, no, ev = payload
                if mid in self.nodes and no > self.seen_view.get(mid, 0):
                    self.seen_view[mid] = no
                    self._handle(mid, ev)
            elif kind == "leave":
                self._publish_view()
            elif kind == "crash":
                self._event_crash()
            elif kind == "join":
                self._event_join()
            elif kind == "clog":
                if len(self.view) > 1:
                    a, b = self.rng.sample(self.view, 2)
                    self.clogged[(a, b)] = t + self.rng.randint(20, 300)
                    self._inject("link_clogged")
            elif kind == "filter":
                mt = self.rng.choice(_MESSAGE_TYPES)
                self.filters[mt] = (self.rng.choice(("drop", "delay")),
                                    t + self.rng.randint(50, 500))
                self._inject("message_type_filtered")
            elif kind == "script":
                if payload == "join":
                    self._event_join()
                elif payload.startswith("crash:"):
                    i = int(payload.split(":")[1])
                    order = sorted(self.nodes)
                    if i < len(order):
                        self._crash(order[i], "timeline")
            elif kind == "heal":
                self.faulty = False
                self.clogged.clear()
                self.filters.clear()
                for p in sorted(self.pending):
                    self._push(t + 1, "write", p)
                for _ in range(self.initial_members - len(self.view)):  # back to full size
                    self._event_join()
            if t >= next_check:
                next_check = t + 100
                if safe:
                    self._check_agreement()
                if t >= SAFETY_TICKS and self._quiet():
                    converged = True
                    break
        return self._finish(converged)

    def _finish(self, converged: bool) -> SimulationResult:
        r = self.result
        r.converged = converged
        r.events = self.events
        r.time = self.now
        r.marks = dict(self.marks)
        r.migrations_committed = self.marks.get(_COMMITTED, 0)
        r.faults_injected = dict(self.injected)
        # the set check, partition by partition (masks over each partition's keys)
        read: dict[int, int] = {}
        if self.view:
            master = self.nodes[self.view[0]]
            if master.initialized:
                for p, o in enumerate(master.replicas[:, 0].tolist()):
                    if o in self.nodes:
                        read[p] = self.store[o].get(p, 0)
        full = self.bc + 1
        n_lost = n_expected = n_unexpected = 0
        expected: dict[int, int] = {}
        bad: list[int] = []
        for p, a in self.acked.items():
            lost = a & ~read.get(p, 0)
            if not lost:
                continue
            n_lost += lost.bit_count()
            levels = self.crashes.get(p)
            e_p = lost & ~self.lost_by_clear.get(p, 0) & (levels[full - 1] if levels else 0)
            keys = self.keys_of[p]
            bad.extend(keys[i] for i in _bits(lost & ~e_p))
            if e_p:
                expected[p] = e_p
                n_expected += e_p.bit_count()
        for p, d in read.items():
            n_unexpected += (d & ~self.attempted.get(p, 0)).bit_count()
        r.entries_attempted = sum(m.bit_count() for m in self.attempted.values())
        r.entries_acknowledged = sum(m.bit_count() for m in self.acked.values())
        r.entries_lost = n_lost
        r.entries_lost_expected = n_expected
        self.expected_lost = expected
        r.entries_unexpected = n_unexpected
        bad.sort()
        if bad:
            self._violation(f"{len(bad)} acknowledged entries lost with fewer than "
                            f"{self.bc + 1} of their holders crashed (e.g. keys {bad[:5]}, "
                            f"partitions {sorted({int(self.part_of[k]) for k in bad[:5]})})")
        if n_unexpected:
            self._violation(f"{n_unexpected} entries read that were never written")
        if converged:
            self._final_checks()
        r.violations = list(self.violations)
        r.trace = self.trace
        r.last_events = [f"{t} m{m} {e if isinstance(e, str) else '<- ' + _short(e)}"
                         for t, m, e in self.recent]
        return r

    def _final_checks(self) -> None:
        """Hazelcast's own correctness checks on the settled cluster."""
        master = self.nodes[self.view[0]]
        data_members = len(self.view)
        need = min(data_members, self.config.replica_count)
        reps = master.replicas
        if need and not np.isin(reps[:, :need], np.asarray(self.view)).all():
            self._violation("a replica index below min(members, 7) is not held by a live member")
        copies = min(self.bc + 1, data_members)
        rows = reps[:, :copies].tolist()
        for p in range(self.P):
            if not self.acked.get(p):
                continue
            row = rows[p]
            owner = self.store[row[0]].get(p, 0) if row[0] in self.nodes else 0
            for b in row[1:]:          # anti-entropy: backups take what the owner has
                if b in self.nodes:
                    st = self.store[b]
                    st[p] = st.get(p, 0) | owner
            holders = sorted(m for m in self.nodes if self.store[m].get(p))
            if not holders and not self.acked[p] & ~self.expected_lost.get(p, 0):
                continue                 # every entry of p was lost with its holders
            if holders != sorted(row):
                self._violation(f"partition {p}: data on {holders}, replicas {row}")
                return
            for b in row[1:]:
                if self.store[b].get(p, 0) != owner:
                    self._violation(f"partition {p}: backup m{b} differs from the owner")
                    return


def _count_crash(levels: list[int], held: int, first: int) -> None:
    """One more holder crash for the entries of ``held`` in thermometer-coded counts
    (``levels[j]``: the entries counted at least ``j + 1`` times; counts stop at
    ``len(levels)``): the entries of ``first`` (within ``held``) count 1, the others of
    ``held`` one more than before."""
    more = held & ~first
    for j in range(len(levels) - 1, 0, -1):        # from the counts before, top down
        levels[j] = (levels[j] | levels[j - 1] & more) & ~first
    levels[0] |= held


def _forget(levels: list[int], mask: int) -> None:
    """The entries of ``mask`` count 0 again (thermometer-coded counts)."""
    keep = ~mask
    for j in range(len(levels)):
        levels[j] &= keep


def _bits(mask: int) -> list[int]:
    """The positions of the set bits of ``mask`` (>= 0), lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _randint(rng: random.Random, lo: int, hi: int) -> int:
    """``rng.randint(lo, hi)`` with the same draws from the same stream (CPython's
    ``_randbelow_with_getrandbits``), without its two extra Python calls."""
    return _randbits(rng.getrandbits, lo, hi)


def _randbits(getrandbits: Callable[[int], int], lo: int, hi: int) -> int:
    """:func:`_randint` given the generator's bound ``getrandbits``."""
    n = hi - lo + 1
    if n < 1:
        raise ValueError(f"empty range for randint ({lo}, {hi})")
    k = 0                                # n.bit_length(), in C when compiled
    while n >> k:
        k += 1
    for _ in range(10_000):              # each try fails with probability < 1/2
        r = getrandbits(k)
        if r < n:
            return lo + r
    raise AssertionError("getrandbits never fell below the range")   # pragma: no cover


def _partition_of(x: msg.MigrationInfo) -> int:
    """``x.partition`` as a Python int, or -1 when it is not an integer (a record a test
    forged): the master checks then pass it over."""
    p = x.partition
    if type(p) is int:
        return p
    if isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
        return int(p)
    return -1


def _short(o: object) -> str:
    t = type(o).__name__
    if isinstance(o, MessageReceived):
        return f"{type(o.message).__name__} from m{o.sender}{_mig(o.message)}"
    if isinstance(o, Send):
        return f"send {type(o.message).__name__} to m{o.to}{_mig(o.message)}"
    if isinstance(o, Mark):
        return f"mark {o.name} p{o.partition} {o.migration or ''} {o.detail}".rstrip()
    if isinstance(o, Effect):
        return f"effect {o.kind} p{o.partition} {o.migration or ''}".rstrip()
    if isinstance(o, (TimerFired, SetTimer, CancelTimer)):
        return f"{t} {o.key}"
    if isinstance(o, EffectDone):
        return f"effect_done {o.effect_id} ok={o.ok}"
    if isinstance(o, MembershipChanged):
        return f"members {list(o.members)}"
    return t


def _mig(m: object) -> str:
    x = getattr(m, "migration", None)
    return f" {x}" if x is not None else ""
