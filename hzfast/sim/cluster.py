"""A deterministic, fault-injecting cluster of protocol nodes with real data: the event
loop (docs/design.md §12.1).

Everything derives from one seed: the cluster shape and fault rates (``faults="swarm"``),
every message delay, drop, duplicate and clog, every crash and join, every client write.
One heap of ``(time, sequence)`` keys, each naming an event, drives the run, so the same
seed replays the same run event for event. The loop owns the members and the member list
and routes each event to its layer: :mod:`~hzfast.sim.network` (delivery and its faults),
:mod:`~hzfast.sim.data` (replica data, writes, effects, the ghost model) and
:mod:`~hzfast.sim.checks` (the checker); scripted runs observe and steer it through a
:class:`Hooks` object.
"""
from __future__ import annotations

import gc
import random
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast.protocol import messages as msg
from hzfast.protocol._build import Builder
from hzfast.protocol.common import RECEIVED
from hzfast.protocol.events import (
    EffectDone,
    MembershipChanged,
    MessageReceived,
    TimerFired,
)
from hzfast.protocol.kinds import MarkName
from hzfast.protocol.membership import MemberList, Membership, MembershipConfig, Removed
from hzfast.protocol.node import Config, Node
from hzfast.protocol.outputs import MARKS, Effect, Mark, Send, SetTimer
from hzfast.sim.checks import MARKS_WATCHED, Checker
from hzfast.sim.data import Data
from hzfast.sim.network import FaultPlan, Network
from hzfast.sim.members import MEMBERSHIP_TYPES, NEMESES, Members
from hzfast.sim.timeline import (
    ACTION,
    ARRIVE,
    CLOG,
    CRASH,
    DONE,
    EFFECT,
    FILTER,
    HEAL,
    JOIN,
    LEAVE,
    MERGE,
    MS_TIMER,
    MSG,
    PARTITION,
    PAUSE,
    RESUME,
    SYNC_START,
    TIMER,
    UNPARTITION,
    VIEW,
    WRITE,
    Timeline,
    randbits,
)

__all__ = ["FAULT_MODES", "ROLES", "Action", "CrashAt", "FaultPlan", "Hooks", "Simulation",
           "SimulationResult"]


ROLES = ("master", "source", "destination", "owner")
ACTIONS = ("join", "crash", "crash_nth", "note", "pause", "partition")
FAULT_MODES = ("swarm", "none")

# the events a run makes most, built straight into their slots (docs/speed.md §2)
_DONE = Builder(EffectDone)
_FIRED = Builder(TimerFired)
_PUBLISH = msg.PublishCompletedMigrations
_PUBLISH_ACK = msg.PublishCompletedAck
_COMMITTED, _FAILED = MarkName.MASTER_COMMITTED, MarkName.MIGRATION_FAILED

#: the events addressed to one member, and where their payload names it: a paused member
#: handles none of them until it resumes
_MEMBER_EVENTS = {MSG: 1, EFFECT: 0, DONE: 0, TIMER: 0, ARRIVE: 1, SYNC_START: 0, VIEW: 0,
                  MS_TIMER: 0}

SAFETY_TICKS = 3_000          # the safety phase: faults on
HEARTBEAT_TICKS = 50          # with the nodes' own lists: a member's heartbeat interval
LIVENESS_TICKS = 40_000       # the liveness phase's bound: faults off, must converge
CHECK_EVERY = 100             # ticks between the periodic checks


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
        if self.mark not in MARKS:
            raise ValueError(f"CrashAt.mark must be one of hzfast.protocol.MARKS, got {self.mark!r}")
        if not isinstance(self.nth, int) or self.nth < 1:
            raise ValueError(f"CrashAt.nth must be an int >= 1, got {self.nth!r}")


@dataclass(frozen=True, slots=True)
class Action:
    """A scripted action at a time (an ``action`` event): ``join`` (a new member,
    ``lite`` or not), ``crash`` (member ``member``), ``crash_nth`` (the ``member``-th live
    member in id order), ``note`` (nothing happens; the hooks see it), and with the
    members' own lists ``pause`` (member ``member`` handles nothing for ``length`` ticks)
    and ``partition`` (the members of ``group`` and the others cannot reach each other
    for ``length`` ticks)."""

    kind: str
    member: int = -1
    lite: bool = False
    length: int = 0
    group: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ACTIONS:
            raise ValueError(f"Action.kind must be one of {ACTIONS}, got {self.kind!r}")
        if self.kind in ("pause", "partition") and (not isinstance(self.length, int)
                                                    or self.length < 1):
            raise ValueError(f"Action.length must be an int >= 1 for {self.kind}, got "
                             f"{self.length!r}")


class Hooks:
    """What a scripted run sees and steers (:mod:`hzfast.sim.scenario`); every method
    does nothing here. A run without hooks calls none of them."""

    def on_view(self, view: tuple[int, ...], lite: tuple[bool, ...]) -> None:
        """A new member list was published."""

    def on_join(self, m: int) -> None:
        """Member ``m`` is about to join."""

    def on_crash(self, m: int, why: str) -> None:
        """Live member ``m`` is about to crash."""

    def on_action(self, a: Action) -> None:
        """A scripted action is about to run."""

    def before_event(self, mid: int, ev: Any) -> None:
        """Member ``mid`` is about to handle ``ev``."""

    def on_mark(self, mid: int, mk: Mark, crashes: list[int]) -> None:
        """Member ``mid`` emitted ``mk``; ``crashes``: the members the script crashes for
        it (after the event's outputs)."""

    def on_send(self, src: int, dst: int, m: msg.Message, term: int = 0) -> bool:
        """Member ``src`` sends ``m`` to ``dst`` under ``term``: True if the hook took the
        message over (the network does not deliver it)."""
        return False


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
    #: the lost entries by cause: ``crashes`` (expected: their last copy went in a crash
    #: after at least backup_count + 1 of their holders crashed), ``few_crashes``,
    #: ``clear``, ``not_on_owner`` (violations)
    lost_by: dict[str, int] = field(default_factory=dict)
    #: where the member lists came from: ``"nodes"`` (each member's own membership
    #: machine) or ``"oracle"`` (the run published them)
    membership: str = "oracle"
    #: with the nodes' own lists: the split-brain protection the members ran with
    min_cluster_size: int | str | None = None
    #: with protection: crashes left the newest committed list without its quorum, so no
    #: side may serve again (stuck by design, as any quorum system; not a failure)
    quorum_lost: bool = False

    @property
    def ok(self) -> bool:
        """No violation, and converged (or stuck by design: ``quorum_lost``)."""
        return (self.converged or self.quorum_lost) and not self.violations

    def summary(self) -> str:
        f = ", ".join(f"{k}={v}" for k, v in sorted(self.faults_injected.items()) if v)
        return (f"seed={self.seed} design={self.design} members={self.members} "
                f"partitions={self.partitions} backups={self.backup_count} "
                f"acked={self.entries_acknowledged}/{self.entries} lost={self.entries_lost} "
                f"(expected {self.entries_lost_expected}) converged={self.converged} "
                f"events={self.events} faults: {f or 'none'}")


class Simulation:
    """One seeded run (see :func:`hzfast.sim.run` for the parameters).

    Besides :func:`~hzfast.sim.run`'s: ``fault_plan`` (instead of the swarm's draw),
    ``actions`` (``(time, Action)`` pairs), ``write_window`` (the times of the first
    writes), ``sync_ticks`` (a replica sync's duration), ``lite`` (initial member ids that
    are lite), ``tables`` (initial member id -> its ``(replicas, versions)`` to start
    from), ``rejoin`` (bring the cluster back to its first size at the heal) and
    ``hooks``.
    """

    def __init__(self, seed: int, *, members: int = 4, partitions: int = 271,
                 backup_count: int = 1, entries: int = 10_000, faults: str = "swarm",
                 script: tuple[CrashAt, ...] = (), design: str = "safe", joins: int = 0,
                 trace: bool = False, max_parallel_migrations: int = 10,
                 fault_plan: FaultPlan | None = None,
                 actions: tuple[tuple[int, Action], ...] = (),
                 write_window: tuple[int, int] = (1, SAFETY_TICKS),
                 sync_ticks: int = 20, strict: bool = False,
                 lite: frozenset[int] | set[int] = frozenset(),
                 tables: Mapping[int, tuple[NDArray[np.int32], NDArray[np.int32]]] | None = None,
                 rejoin: bool = True, hooks: Hooks | None = None,
                 membership: str = "oracle", min_cluster_size: int | str | None = "majority",
                 merge_policy: str = "put_if_absent",
                 nemesis: tuple[str, ...] = NEMESES,
                 membership_factory: Callable[..., Membership] = Membership) -> None:
        self.rng = rng = random.Random(seed)
        self.getrandbits = rng.getrandbits
        self.seed = seed
        self.design = design
        self.trace_on = trace
        if min_cluster_size == "drawn":     # (its own stream: the other draws stay)
            drawn = random.Random(seed ^ 0x70726F74).random() < 0.5
            min_cluster_size = "majority" if drawn else None
        if faults == "swarm" and fault_plan is None:
            # (a protected cluster of 2 is stuck after any failure: 3 at least then)
            least = 3 if membership == "nodes" and min_cluster_size is not None else 2
            members = rng.randint(max(least, backup_count + 1), members + 2)
            fault_plan = FaultPlan.draw(rng)
        elif fault_plan is None:
            fault_plan = FaultPlan()
        if joins:
            fault_plan = replace(fault_plan, joins=fault_plan.joins + joins)
        self.fp = fault_plan
        self.config = Config(partition_count=partitions, backup_count=backup_count,
                             max_parallel_migrations=max_parallel_migrations, design=design)
        self.result = SimulationResult(seed, design, members, partitions, backup_count, entries,
                                       faults=fault_plan, membership=membership)
        self.tl = Timeline()
        self.marks: dict[str, int] = {}
        self.nodes: dict[int, Node] = {}
        self.view: list[int] = []
        self.lite: set[int] = set(lite)
        self.view_no = 0
        self.seen_view: dict[int, int] = {}
        self.next_id = 1
        self.timer_tok: dict[tuple[int, object], int] = {}
        self.effect_free: dict[int, int] = {}
        self.script = [(c, 0) for c in script]
        self.recent: deque[tuple[int, int, object]] = deque(maxlen=60)
        self.trace: list[str] = []
        self.events = 0
        self.hooks = hooks
        self.net = Network(self.tl, rng, fault_plan, faults == "swarm")
        # the members a client may reach: with the nodes' own lists, every live member (a
        # cut-off side's too), else the member list
        self.reachable: list[int] = self.view if membership == "oracle" else []
        self.data = Data(self.tl, self.net, rng, self.nodes, self.reachable, partitions,
                         backup_count, entries, write_window, sync_ticks)
        self.checks = Checker(self.tl, self.data, self.config, self.nodes, self.view,
                              self.lite, strict)
        self.members: Members | None = None
        self.merge_policy = merge_policy
        self._view_key = (1, 1)
        if membership == "nodes":
            self.members = self._own_lists(min_cluster_size, membership_factory)
        self.initial_members = members if rejoin else 0
        for _ in range(members):
            self._new_member(tables)
        self._publish_view()
        if self.members is not None:
            self.members.found(tuple(self.view))
            if faults == "swarm":    # (their own stream: the other draws stay as they were)
                self.members.schedule(random.Random(seed ^ 0x6E656D65), nemesis,
                                      SAFETY_TICKS)
        self._schedule_faults()
        self.data.schedule_writes()
        for t, a in actions:
            self.tl.push(t, ACTION, a)

    def _own_lists(self, min_cluster_size: int | str | None,
                   factory: Callable[..., Membership]) -> Members:
        """The membership layer: heartbeats every HEARTBEAT_TICKS, a member suspected
        after six times that (a lease needs echoes fresher than half of it; §12.6)."""
        mcfg = MembershipConfig(heartbeat_interval=HEARTBEAT_TICKS,
                                heartbeat_timeout=6 * HEARTBEAT_TICKS,
                                min_cluster_size=min_cluster_size)
        members = Members(self.tl, self.net, self.nodes, mcfg, factory)
        self.data.serves = members.serves
        self.checks.cluster_of = members.cluster_of
        self.checks.protected = mcfg.protected
        self.result.min_cluster_size = min_cluster_size
        return members

    # ------------------------------------------------------------------ members
    def _new_member(self, tables: Mapping[int, tuple[Any, Any]] | None = None) -> int:
        mid = self.next_id
        self.next_id += 1
        if tables is not None and mid in tables:
            replicas, versions = tables[mid]
            node = Node(mid, self.config, replicas=replicas, versions=versions)
        else:
            node = Node(mid, self.config)
        self.nodes[mid] = node
        self.data.add_member(mid)
        self.checks.add_member(mid, node)
        if self.members is None or not self.members.ms:    # (the founders join the list)
            self.view.append(mid)
        if self.reachable is not self.view:
            self.reachable.append(mid)
        return mid

    def _publish_view(self) -> None:
        self.view_no += 1
        view = tuple(self.view)
        lite = tuple([m in self.lite for m in view])
        ev = MembershipChanged(view, lite)
        for m in view:
            jitter = self.rng.randint(0, 3) if self.net.faulty else 0
            self.tl.push(self.tl.now + jitter, VIEW, (m, self.view_no, ev))
        if self.hooks is not None:
            self.hooks.on_view(view, lite)

    def _schedule_faults(self) -> None:
        rng, fp, tl = self.rng, self.fp, self.tl
        for _ in range(fp.crashes):
            tl.push(rng.randint(200, SAFETY_TICKS), CRASH, None)
        for _ in range(fp.joins):
            tl.push(rng.randint(100, SAFETY_TICKS), JOIN, None)
        for _ in range(fp.clogs):
            tl.push(rng.randint(1, SAFETY_TICKS), CLOG, None)
        for _ in range(fp.filters):
            tl.push(rng.randint(1, SAFETY_TICKS), FILTER, None)
        tl.push(SAFETY_TICKS, HEAL, None)

    def master_row(self, p: int) -> NDArray[np.int32] | None:
        """Partition ``p``'s row in the master's table (None without a master or table)."""
        if not self.view:
            return None
        node = self.nodes[self.view[0]]
        return node.replicas[p] if node.initialized else None

    def crash(self, m: int, why: str) -> None:
        """Member ``m`` crashes: it and its data vanish; its leave is detected later."""
        if m not in self.nodes:
            return
        if self.hooks is not None:
            self.hooks.on_crash(m, why)
        tl = self.tl
        self.checks.crash(m)
        self.data.crash(m)
        self._gone(m)
        tl.inject("member_crashed")
        self.recent.append((tl.now, m, f"CRASH ({why})"))
        if self.trace_on:
            self.trace.append(f"{tl.now} CRASH m{m} ({why})")
        faulty = self.net.faulty
        delay = self.fp.detect_delay if faulty else 10
        if self.members is None:             # (else the members' heartbeats detect it)
            tl.push(tl.now + delay, LEAVE, m)
        if faulty and self.rng.random() < self.fp.restarts and tl.now < SAFETY_TICKS:
            tl.push(tl.now + delay + self.rng.randint(10, 300), JOIN, None)

    def _gone(self, m: int, removed: bool = False) -> None:
        """Member ``m`` left the run (crashed, or ``removed`` from the cluster): out of
        every list of it."""
        del self.nodes[m]
        if m in self.view:
            self.view.remove(m)
        if self.reachable is not self.view:
            self.reachable.remove(m)
        if self.members is not None:
            self.members.drop(m, removed)

    def join(self, lite: bool = False) -> None:
        """A new member joins (``lite``: holding no data)."""
        if self.hooks is not None:
            self.hooks.on_join(self.next_id)
        if lite:
            self.lite.add(self.next_id)
        m = self._new_member()
        self.tl.inject("member_joined")
        self.recent.append((self.tl.now, m, "JOIN"))
        if self.members is None:
            self._publish_view()
        else:                                # it asks to be let in
            self.members.join(m)

    # ------------------------------------------------------------------ own member lists
    def _ms(self, changed: MemberList | None, removed: Removed | None, mid: int) -> None:
        """Act on what member ``mid``'s membership machine returned: its node takes its
        new committed list; a member out of the cluster merges its data by the merge
        policy and stops, and a new member starts in its place (a supervisor's restart)."""
        members = self.members
        assert members is not None
        if members.newest != self._view_key or changed is not None or removed is not None:
            self._view_key = members.newest
            self.view[:] = [m for m in members.current() if m in self.nodes]
        if changed is not None and mid in self.nodes:
            lite = tuple([m in self.lite for m in changed.members])
            self._handle(mid, MembershipChanged(changed.members, lite, changed.term))
        if removed is not None and mid in self.nodes:
            tl = self.tl
            tl.inject("member_removed")
            self.recent.append((tl.now, mid, f"REMOVED ({removed.reason})"))
            if self.trace_on:
                self.trace.append(f"{tl.now} REMOVED m{mid} ({removed.reason})")
            self.checks.crash(mid)
            self.data.remove(mid, self.merge_policy != "discard")
            self._gone(mid, True)
            if tl.now < SAFETY_TICKS + LIVENESS_TICKS // 2:
                tl.push(tl.now + self.rng.randint(5, 50), JOIN, None)

    def _act(self, a: Action) -> None:
        if self.hooks is not None:
            self.hooks.on_action(a)
        if a.kind == "join":
            self.join(a.lite)
        elif a.kind == "crash":
            self.crash(a.member, "scripted at a time")
        elif a.kind == "crash_nth":
            order = sorted(self.nodes)
            if a.member < len(order):
                self.crash(order[a.member], "timeline")
        elif a.kind in ("pause", "partition"):
            if self.members is None:
                raise ValueError(f"Action {a.kind!r} needs the members' own lists "
                                 f"(membership='nodes')")
            if a.kind == "pause":
                self.members.pause_member(a.member, a.length)
            else:
                self.members.cut_group(a.group, a.length)

    # ------------------------------------------------------------------ node calls
    def _handle(self, mid: int, ev: Any) -> None:
        node = self.nodes[mid]
        hooks = self.hooks
        if hooks is not None:
            hooks.before_event(mid, ev)
        self.events += 1
        now = self.tl.now
        outs = node.handle(ev, now)
        if self.trace_on:
            self.trace.append(f"{now} m{mid} <- {_short(ev)}")
        self.recent.append((now, mid, ev))
        self.checks.after_event(mid, node)
        if not outs:
            return
        crash: list[int] = []
        tracing = self.trace_on
        for o in outs:
            t = type(o)
            if t is Send:
                m = o.message                               # type: ignore[attr-defined]
                to = o.to                                   # type: ignore[attr-defined]
                if type(m) is _PUBLISH:
                    self.checks.on_publish(mid, to, m)
                term = o.term                               # type: ignore[attr-defined]
                if hooks is None or not hooks.on_send(mid, to, m, term):
                    self.net.deliver(mid, to, m, term)
            elif t is Mark:
                self._on_mark(mid, o, crash)               # type: ignore[arg-type]
            elif t is SetTimer:
                tok = self.tl.seq + 1                     # the number push gives it
                self.timer_tok[(mid, o.key)] = tok          # type: ignore[attr-defined]
                self.tl.push(o.at, TIMER, (mid, o.key, tok))  # type: ignore[attr-defined]
            elif t is Effect:        # a member's effects are performed in order
                at = max(now + (randbits(self.getrandbits, 1, 3) if self.net.faulty else 1),
                         self.effect_free.get(mid, 0))
                self.effect_free[mid] = at
                self.tl.push(at, EFFECT, (mid, o))
            if tracing:
                self.trace.append(f"{now} m{mid} -> {_short(o)}")
        for c in crash:
            self.crash(c, "scripted")

    def _on_mark(self, mid: int, mk: Mark, crash: list[int]) -> None:
        marks = self.marks
        name = mk.name
        marks[name] = marks.get(name, 0) + 1
        if name in MARKS_WATCHED:
            self.checks.on_mark(mid, name, mk.migration)
        before = len(crash)
        if self.script:
            self._scripted(name, mk.migration, crash)
        if self.hooks is not None:
            self.hooks.on_mark(mid, mk, crash[before:])

    def _scripted(self, name: str, x: msg.MigrationInfo | None, crash: list[int]) -> None:
        """The script's crashes for a mark ``name`` (of migration ``x``)."""
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
                else:           # the owner in the master's table, as it is
                    node = self.nodes.get(self.view[0]) if self.view else None
                    who = int(node.replicas[x.partition, 0]) if node is not None else -1
            if who >= 0:
                self.tl.inject("scripted_crash")
                crash.append(who)

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimulationResult:
        """Run to the end and check (see :func:`hzfast.sim.run`).

        Python's cycle collector is paused for the run: a run makes no reference cycles
        (reference counting frees all it drops), and the collector's passes over the many
        live objects cost several per cent (docs/speed.md §2)."""
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if paused:
                gc.enable()

    def _run(self) -> SimulationResult:
        tl, queue, nodes = self.tl, self.tl.queue, self.nodes
        data, checks = self.data, self.checks
        members = self.members
        paused: dict[int, int] = members.paused if members is not None else {}
        safe = self.design == "safe"
        next_check = CHECK_EVERY
        converged = False
        end = SAFETY_TICKS + LIVENESS_TICKS
        for _ in range(5_000_000):
            if not len(queue):                # (queue: C calls when compiled)
                break
            t = queue.pop()
            kind, payload = queue.kind, queue.payload
            if t > end:
                break
            tl.now = t
            if paused and kind in _MEMBER_EVENTS:
                who = payload[_MEMBER_EVENTS[kind]]
                if who in paused:             # it waits until the member resumes
                    members.backlog[who].append((kind, payload))  # type: ignore[union-attr]
                    continue
            # (the commonest kinds first: kinds are compared by identity)
            if kind is MSG:
                src, dst, m, term = payload
                if members is not None and type(m) in MEMBERSHIP_TYPES:
                    changed, removed = members.receive(src, dst, m)
                    self._ms(changed, removed, dst)
                elif dst in nodes and src in nodes:
                    if type(m) is _PUBLISH_ACK:               # (for the eviction check)
                        checks.on_publish_ack(src, dst, m)
                    self._handle(dst, RECEIVED(src, m, term))
            elif kind is EFFECT:
                mid, e = payload
                if mid in nodes:
                    checks.on_effect(mid, e)
                    data.effect(mid, e)
            elif kind is DONE:
                mid, eid, ok = payload
                if mid in nodes:
                    self._handle(mid, _DONE(eid, ok))
            elif kind is WRITE:
                data.write(payload)
            elif kind is ARRIVE:
                src, to, what, p, x, snap, eid = payload
                data.arrive(src, to, what, p, x, snap, eid)
            elif kind is TIMER:
                mid, key, tok = payload
                if mid in nodes and self.timer_tok.get((mid, key)) == tok:
                    del self.timer_tok[(mid, key)]
                    self._handle(mid, _FIRED(key))
            elif kind is SYNC_START:
                src, to, p, eid, d = payload
                data.sync_start(src, to, p, eid, d)
            elif kind is VIEW:
                mid, no, ev = payload
                if mid in nodes and no > self.seen_view.get(mid, 0):
                    self.seen_view[mid] = no
                    self._handle(mid, ev)
            elif kind is LEAVE:
                self._publish_view()
            elif kind is MS_TIMER:
                assert members is not None
                mid, tok = payload
                changed, removed = members.timer(mid, tok)
                self._ms(changed, removed, mid)
            else:
                self._rare(kind, payload)
            if t >= next_check:
                next_check = t + CHECK_EVERY
                if safe:
                    checks.agreement()
                if t >= SAFETY_TICKS and members is not None and members.quorum_lost():
                    break                     # (for good: no list can commit any more)
                if t >= SAFETY_TICKS and (members is None or members.one_cluster()) \
                        and checks.settled():
                    converged = True
                    break
        return self._finish(converged)

    def _rare(self, kind: object, payload: Any) -> None:
        """The event kinds a run has few of: faults, joins, actions, the heal."""
        members = self.members
        if kind is CRASH:
            if len(self.view) > 1:
                self.crash(self.rng.choice(self.view), "swarm")
        elif kind is JOIN:
            self.join()
        elif kind is CLOG:
            self.net.clog(self.view)
        elif kind is FILTER:
            self.net.filter()
        elif kind is MERGE:
            self.data.merge(payload)
        elif kind is ACTION:
            self._act(payload)
        elif kind is PAUSE:
            assert members is not None
            members.pause(self.rng, payload)
        elif kind is RESUME:
            assert members is not None
            members.resume(payload)
        elif kind is PARTITION:
            assert members is not None
            members.partition(self.rng, *payload)
        elif kind is UNPARTITION:
            self.net.cut.clear()
        elif kind is HEAL:
            self.net.heal()
            if members is not None:
                members.heal()
            self.data.heal()
            live = len(self.view) if members is None else len(self.nodes)
            for _ in range(self.initial_members - live):      # back to full size
                self.join()

    def _finish(self, converged: bool) -> SimulationResult:
        r = self.result
        data = self.data
        r.converged = converged
        r.events = self.events
        r.time = self.tl.now
        r.marks = dict(self.marks)
        r.migrations_committed = self.marks.get(_COMMITTED, 0)
        r.migrations_failed = self.marks.get(_FAILED, 0)
        r.faults_injected = dict(self.tl.injected)
        stuck = not converged and self.members is not None and self.members.quorum_lost()
        r.quorum_lost = stuck
        r.entries_lost, r.entries_lost_expected, r.entries_unexpected, r.lost_by = \
            self.checks.at_end(converged, stuck)
        r.entries_attempted = sum(m.bit_count() for m in data.attempted.values())
        r.entries_acknowledged = sum(m.bit_count() for m in data.acked.values())
        r.violations = list(self.tl.violations)
        r.trace = self.trace
        r.last_events = [f"{t} m{m} {e if isinstance(e, str) else '<- ' + _short(e)}"
                         for t, m, e in self.recent]
        return r


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
    if isinstance(o, (TimerFired, SetTimer)):
        return f"{t} {o.key}"
    if isinstance(o, EffectDone):
        return f"effect_done {o.effect_id} ok={o.ok}"
    if isinstance(o, MembershipChanged):
        return f"members {list(o.members)}"
    return t


def _mig(m: object) -> str:
    x = getattr(m, "migration", None)
    return f" {x}" if x is not None else ""
