"""A deterministic simulation of membership alone: pauses, partitions, crashes and joins
against :class:`hzfast.protocol.membership.Membership`, with its invariants checked as the
run goes (docs/design.md §13.4).

One seed gives one run: the cluster's size, the split-brain protection, and every fault.
The faults, as Jepsen's nemeses draw them:

- **pause** (SIGSTOP): a member handles nothing for a while; its timer fires late and the
  messages sent to it arrive in one burst when it resumes;
- **partition**: links between groups of members drop everything for a while, in one of
  the shapes ``halves``, ``majority`` (a minority cut off), ``bridge`` (two halves that
  one member still joins), ``ring`` (each member hears only its neighbours) and
  ``one-way`` (one group's messages to the other are lost, not the replies);
- **crash** (the member is gone; a new one may join under a new id), **join**, message
  drops and delays.

Checked as the run goes: every committed list is the only one at its key; with protection,
one master per term, and no member serves (``may_serve``) while a committed list without it
exists (the split-brain rule). Checked at the end, after the faults stopped: one cluster,
whose list is every live member, with one master, every member serving.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from hzfast.protocol.events import MessageReceived, TimerFired
from hzfast.protocol.membership import (
    TICK,
    MemberList,
    Membership,
    MembershipConfig,
    MembershipMark,
    Removed,
)
from hzfast.protocol.outputs import Mark, Send, SetTimer
from hzfast.sim.network import PARTITION_SHAPES, cut_links
from hzfast.sim.timeline import (
    CRASH,
    HEAL,
    JOIN,
    MSG,
    PARTITION,
    PAUSE,
    RESUME,
    TIMER,
    UNPARTITION,
    Timeline,
)

__all__ = ["MembershipFaults", "MembershipResult", "run_membership"]

SAFETY_TICKS = 3_000        # faults on
LIVENESS_TICKS = 6_000      # faults off: one cluster must form within this
CHECK_EVERY = 5



@dataclass(frozen=True, slots=True)
class MembershipFaults:
    """The faults of one membership run (drawn from the seed in swarm mode)."""

    drop: float = 0.0
    max_delay: int = 3
    pauses: int = 0
    partitions: int = 0
    crashes: int = 0
    restarts: float = 1.0
    joins: int = 0

    @classmethod
    def draw(cls, rng: random.Random) -> MembershipFaults:
        return cls(drop=rng.choice((0.0, 0.01, 0.05)), max_delay=rng.choice((1, 3, 8)),
                   pauses=rng.choice((0, 1, 2, 3)), partitions=rng.choice((0, 1, 1, 2)),
                   crashes=rng.choice((0, 0, 1)), restarts=rng.choice((0.5, 1.0)),
                   joins=rng.choice((0, 0, 1)))


@dataclass(slots=True)
class MembershipResult:
    """What one membership run did and what its checks found."""

    seed: int
    members: int
    min_cluster_size: int | str | None
    faults: MembershipFaults
    injected: dict[str, int] = field(default_factory=dict)
    lists_committed: int = 0
    masters: int = 0
    heal_time: int = -1           #: ticks from the end of the faults to one cluster
    #: with protection, crashes left the newest committed list without its quorum: no
    #: side may serve again (expected, as in any quorum system; not a violation)
    quorum_lost: bool = False
    final: tuple[int, ...] = ()
    violations: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations and (self.heal_time >= 0 or self.quorum_lost)


class _Run:
    def __init__(self, seed: int, members: int, min_cluster_size: int | str | None,
                 faults: MembershipFaults, config: MembershipConfig | None,
                 factory: Any, trace: bool) -> None:
        self.rng = random.Random(seed)
        self.tl = Timeline()
        self.cfg = config or MembershipConfig(heartbeat_interval=10, heartbeat_timeout=60,
                                              min_cluster_size=min_cluster_size)
        self.factory = factory
        self.fp = faults
        self.trace_on = trace
        self.result = MembershipResult(seed, members, self.cfg.min_cluster_size, faults)
        self.nodes: dict[int, Membership] = {}
        self.paused: dict[int, int] = {}            # member -> resume time
        self.backlog: dict[int, list[tuple[str, Any]]] = {}
        self.timer_tok: dict[int, int] = {}
        self.cut: set[tuple[int, int]] = set()
        self.faulty = True
        # what the checker knows: every committed list by key, the master of each term
        self.committed: dict[tuple[int, int], tuple[int, ...]] = {}
        founding = MemberList(1, 1, tuple(range(1, members + 1)))
        self.term_master: dict[int, int] = {1: founding.master}
        self.newest = founding.key
        self.committed[founding.key] = founding.members
        self.next_id = members + 1
        for m in founding.members:
            self._add(self.factory(m, self.cfg, founding=founding))
        self._schedule()

    # ------------------------------------------------------------------ members
    def _add(self, node: Membership) -> None:
        self.nodes[node.me] = node
        self._handle(node.me, None)

    def _schedule(self) -> None:
        rng, tl, fp = self.rng, self.tl, self.fp
        T = self.cfg.heartbeat_timeout
        for _ in range(fp.pauses):
            length = rng.choice((T // 3, T, 2 * T, 5 * T, 20 * T))
            tl.push(rng.randint(50, SAFETY_TICKS - 50), PAUSE, length)
        for _ in range(fp.partitions):
            tl.push(rng.randint(50, SAFETY_TICKS - 50), PARTITION,
                    (rng.choice(PARTITION_SHAPES), rng.choice((T // 2, 2 * T, 8 * T, 30 * T))))
        for _ in range(fp.crashes):
            tl.push(rng.randint(50, SAFETY_TICKS - 50), CRASH, None)
        for _ in range(fp.joins):
            tl.push(rng.randint(50, SAFETY_TICKS - 50), JOIN, None)
        tl.push(SAFETY_TICKS, HEAL, None)

    def _live(self) -> list[int]:
        return sorted(m for m, n in self.nodes.items() if not n.removed)

    def _join(self, seeds: tuple[int, ...]) -> None:
        m = self.next_id
        self.next_id += 1
        self.tl.inject("member_joined")
        self._add(self.factory(m, self.cfg, seeds=seeds))

    # ------------------------------------------------------------------ delivery
    def _send(self, src: int, dst: int, m: Any) -> None:
        tl = self.tl
        if not self.faulty:
            tl.push(tl.now + 1, MSG, (src, dst, m))
            return
        if (src, dst) in self.cut:
            tl.inject("message_cut")
            return
        if self.fp.drop and self.rng.random() < self.fp.drop:
            tl.inject("message_dropped")
            return
        tl.push(tl.now + self.rng.randint(1, self.fp.max_delay), MSG, (src, dst, m))

    def _handle(self, mid: int, ev: Any) -> None:
        node = self.nodes[mid]
        now = self.tl.now
        if ev is None:
            outs = node.handle(TimerFired(("start",)), now)
        else:
            outs = node.handle(ev, now)
        for o in outs:
            if isinstance(o, Send):
                if o.to in self.nodes:
                    self._send(mid, o.to, o.message)
            elif isinstance(o, SetTimer):
                tok = self.timer_tok.get(mid, 0) + 1
                self.timer_tok[mid] = tok
                self.tl.push(o.at, TIMER, (mid, tok))
            elif isinstance(o, Mark):
                if o.name == MembershipMark.COMMITTED:
                    self._committed(mid, node)
                if self.trace_on:
                    self.result.trace.append(f"{now} m{mid} {o.name} {o.detail}")
            elif isinstance(o, Removed):
                self.tl.inject("member_removed")
                if self.trace_on:
                    self.result.trace.append(f"{now} m{mid} REMOVED {o.reason}")
                self.tl.push(now + self.rng.randint(5, 50), JOIN, None)
        self._check_member(mid, node)

    def _committed(self, mid: int, node: Membership) -> None:
        lst = node.newest           # (a recovered list may leave its proposer out)
        assert lst is not None
        r = self.result
        r.lists_committed += 1
        seen = self.committed.get(lst.key)
        if seen is not None and seen != lst.members and self.cfg.protected:
            self.tl.violation(f"two lists committed at {lst.key}: {seen} and {lst.members}")
        self.committed[lst.key] = lst.members
        if lst.key > self.newest:
            self.newest = lst.key
            for m, n in self.nodes.items():   # (a member serves only after an event of
                self._check_member(m, n)       # its own, checked there, or until now)
        if self.cfg.protected:
            was = self.term_master.setdefault(lst.term, lst.master)
            if was != lst.master:
                self.tl.violation(f"two masters in term {lst.term}: {was} and {lst.master}")

    def _check_member(self, mid: int, node: Membership) -> None:
        """The split-brain rule: with protection, a member serving is in the newest
        committed list."""
        if not self.cfg.protected or mid in self.paused or node.removed:
            return
        if mid not in self.committed[self.newest] and node.may_serve(self.tl.now):
            self.tl.violation(f"m{mid} serves under {node.list.key if node.list else None} "
                              f"while the committed list {self.newest} "
                              f"{self.committed[self.newest]} leaves it out")

    # ------------------------------------------------------------------ faults
    def _pause(self, length: int) -> None:
        live = [m for m in self._live() if m not in self.paused]
        if not live:
            return
        m = self.rng.choice(live)
        self.paused[m] = self.tl.now + length
        self.backlog[m] = []
        self.tl.inject("member_paused")
        self.tl.push(self.tl.now + length, RESUME, m)

    def _resume(self, m: int) -> None:
        self.paused.pop(m, None)
        for kind, payload in self.backlog.pop(m, []):
            if m not in self.nodes:
                return
            if kind == TIMER:
                self._handle(m, TimerFired(TICK))
            else:
                self._handle(m, MessageReceived(payload[0], payload[2]))

    def _partition(self, shape: str, length: int) -> None:
        live = self._live()
        if len(live) < 2:
            return
        self.cut |= cut_links(self.rng, live, shape)
        self.tl.inject(f"partition_{shape}")
        self.tl.push(self.tl.now + length, UNPARTITION, None)

    # ------------------------------------------------------------------ the loop
    def run(self) -> MembershipResult:
        tl, q = self.tl, self.tl.queue
        end = SAFETY_TICKS + LIVENESS_TICKS
        healed_at = -1
        next_check = 0
        for _ in range(20_000_000):
            if not len(q):
                break
            t = q.pop()
            kind, payload = q.kind, q.payload
            if t > end:
                break
            tl.now = t
            if kind == MSG:
                src, dst, m = payload
                if dst in self.nodes:
                    if dst in self.paused:
                        self.backlog[dst].append((kind, payload))
                    else:
                        self._handle(dst, MessageReceived(src, m))
            elif kind == TIMER:
                mid, tok = payload
                if mid in self.nodes and self.timer_tok.get(mid) == tok:
                    if mid in self.paused:
                        self.backlog[mid].append((kind, payload))
                    else:
                        self._handle(mid, TimerFired(TICK))
            elif kind == RESUME:
                self._resume(payload)
            elif kind == PAUSE:
                self._pause(payload)
            elif kind == PARTITION:
                self._partition(*payload)
            elif kind == UNPARTITION:
                self.cut.clear()
            elif kind == CRASH:
                live = self._live()
                if len(live) > 1:
                    m = self.rng.choice(live)
                    del self.nodes[m]
                    self.paused.pop(m, None)
                    tl.inject("member_crashed")
                    if self.rng.random() < self.fp.restarts:
                        tl.push(t + self.rng.randint(10, 300), JOIN, None)
            elif kind == JOIN:              # (every id there was: the addresses it knows)
                self._join(tuple(range(1, self.next_id)))
            elif kind == HEAL:
                self.faulty = False
                self.cut.clear()
                for m in list(self.paused):
                    self._resume(m)
                healed_at = t
            if t >= next_check:
                next_check = t + CHECK_EVERY
                if healed_at >= 0 and self._one_cluster():
                    self.result.heal_time = t - healed_at
                    break
        r = self.result
        r.injected = dict(tl.injected)
        r.masters = len(self.term_master)
        live = self._live()
        r.final = tuple(live)
        newest = self.committed[self.newest]
        alive = [m for m in newest if m in self.nodes]
        if r.heal_time < 0 and self.cfg.protected and len(alive) < self.cfg.quorum(len(newest)):
            r.quorum_lost = True
        elif r.heal_time < 0:
            lists = sorted({(n.list.key if n.list else None, n.members) for n in
                            (self.nodes[m] for m in live)}, key=str)
            tl.violation(f"no single cluster {LIVENESS_TICKS} ticks after the faults "
                         f"stopped: {lists[:4]}")
        r.violations = list(tl.violations)
        return r

    def _one_cluster(self) -> bool:
        live = self._live()
        if not live:
            return False
        first = self.nodes[live[0]]
        if first.list is None or set(first.list.members) != set(live):
            return False
        now = self.tl.now
        return all(self.nodes[m].list == first.list and self.nodes[m].may_serve(now)
                   for m in live)


def run_membership(seed: int, *, members: int = 4,
                   min_cluster_size: int | str | None = "majority",
                   faults: str | MembershipFaults = "swarm",
                   config: MembershipConfig | None = None,
                   factory: Any = Membership, trace: bool = False) -> MembershipResult:
    """Run one seeded membership simulation and check it.

    Parameters
    ----------
    seed : int
        Everything derives from it.
    members : int
        The founding members (in swarm mode, drawn in ``[3, members + 2]``; 4 as in
        :func:`hzfast.sim.run`).
    min_cluster_size : int, "majority" or None
        Split-brain protection (ignored when ``config`` is given).
    faults : "swarm", "none" or MembershipFaults
        The swarm draws the faults from the seed.
    config : MembershipConfig, optional
        The members' settings (heartbeat every 10 ticks, timeout 60, by default).
    factory : callable
        Builds a member: ``factory(me, config, founding=..., seeds=...)``; a subclass of
        :class:`Membership` here tests the checker against a broken rule.
    trace : bool
        Keep each member's marks in ``result.trace``.

    Returns
    -------
    MembershipResult
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not isinstance(members, int) or members < 1:
        raise ValueError(f"members must be an int >= 1, got {members!r}")
    rng = random.Random(seed ^ 0x6D656D62)
    if faults == "swarm":
        members = rng.randint(3, members + 2)
        fp = MembershipFaults.draw(rng)
    elif faults == "none":
        fp = MembershipFaults()
    elif isinstance(faults, MembershipFaults):
        fp = faults
    else:
        raise ValueError(f"faults must be 'swarm', 'none' or a MembershipFaults, got {faults!r}")
    return _Run(seed, members, min_cluster_size, fp, config, factory, trace).run()
