"""The migration simulator's membership layer (docs/design.md §12.6): every member runs its
own :class:`~hzfast.protocol.membership.Membership` beside its protocol node, so the member
lists the nodes act on come from heartbeats, suspicions and quorums, not from the run.

This layer owns, for one run of :class:`hzfast.sim.Simulation`:

- each member's membership machine, its timer, and the messages it sends (through the
  run's :class:`~hzfast.sim.network.Network`, with all its faults);
- the pauses (a paused member handles nothing; every event addressed to it waits and
  arrives in one burst when it resumes, its timers late: the SIGSTOP pattern) and the
  partitions (links cut in Jepsen's shapes, :func:`~hzfast.sim.network.cut_links`);
- the checks only the true time and every member's state can make: one list per
  ``(term, version)`` and one master per term (with protection), and, at every write a
  member takes, that it may (its lease), that no committed list leaves it out, and that no
  other member takes writes for the same partition at that moment (with protection).

It returns what the run must act on (a member's new committed list, a member out of the
cluster) and never touches a protocol node or the data itself.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hzfast.protocol.common import RECEIVED
from hzfast.protocol.events import TimerFired
from hzfast.protocol.membership import (
    MEMBERSHIP_MESSAGES,
    TICK,
    ListChanged,
    MemberList,
    Membership,
    MembershipConfig,
    MembershipMark,
    Removed,
)
from hzfast.protocol.node import Node
from hzfast.protocol.outputs import Mark, Send, SetTimer
from hzfast.sim.network import PARTITION_SHAPES, Network, cut_between, cut_links
from hzfast.sim.timeline import MS_TIMER, PARTITION, PAUSE, RESUME, UNPARTITION, Timeline

__all__ = ["MEMBERSHIP_TYPES", "NEMESES", "Members"]

#: The membership messages (the event loop routes them to this layer).
MEMBERSHIP_TYPES = frozenset(MEMBERSHIP_MESSAGES)
#: The faults this layer adds to a swarm run.
NEMESES = ("pause", "partition")

_START = TimerFired(("start",))
_TICK = TimerFired(TICK)


class Members:
    """The membership layer of one run (see the module's doc).

    ``nodes`` is the run's own (live protocol nodes by id); ``config`` the members'
    membership settings, in ticks.
    """

    def __init__(self, timeline: Timeline, net: Network, nodes: dict[int, Node],
                 config: MembershipConfig,
                 factory: Callable[..., Membership] = Membership) -> None:
        self.factory = factory            # (a test's broken rule stands in for Membership)
        self.tl = timeline
        self.net = net
        self.nodes = nodes
        self.config = config
        self.protected = config.protected
        self.ms: dict[int, Membership] = {}
        #: members out of the cluster whose process still answers: a heartbeat from a
        #: member behind gets the list that left them out (docs/design.md §13.3(b))
        self.out: dict[int, Membership] = {}
        self.timer_tok: dict[int, int] = {}
        self.paused: dict[int, int] = {}                  # member -> resume time
        self.backlog: dict[int, list[tuple[Any, Any]]] = {}
        # what the checker knows: every committed list by key, each term's master
        self.committed: dict[tuple[int, int], tuple[int, ...]] = {}
        self.term_master: dict[int, int] = {}
        self.newest: tuple[int, int] = (0, 0)
        self.known: list[int] = []                        # every id there was
        # may_serve by member at ``_lease_at``: a lease changes only with the time or an
        # event its member handles (which drops its entry), and a tick's writes ask often
        self._lease: dict[int, bool] = {}
        self._lease_at = -1

    # ------------------------------------------------------------------ members
    def found(self, members: tuple[int, ...]) -> None:
        """The founding members start with list ``(1, 1, members)``, committed."""
        lst = MemberList(1, 1, members)
        self.committed[lst.key] = members
        self.term_master[1] = lst.master
        self.newest = lst.key
        for m in members:
            self.known.append(m)
            self.ms[m] = self.factory(m, self.config, founding=lst)
        for m in members:
            self.handle(m, _START)

    def join(self, m: int) -> None:
        """A new member ``m`` starts outside any cluster and asks every id it knows."""
        seeds = tuple(self.known)
        self.known.append(m)
        for ms in self.ms.values():          # (discovery: every member learns of it)
            ms.discover((m,))
        self.ms[m] = self.factory(m, self.config, seeds=seeds)
        self.handle(m, _START)

    def drop(self, m: int, removed: bool = False) -> None:
        """Member ``m`` is gone: crashed, or (``removed``) out of the cluster, when its
        machine still answers heartbeats from members behind."""
        ms = self.ms.pop(m, None)
        if removed and ms is not None:
            self.out[m] = ms
        self.timer_tok.pop(m, None)
        self.paused.pop(m, None)
        self.backlog.pop(m, None)
        self._lease.pop(m, None)

    # ------------------------------------------------------------------ events
    def receive(self, src: int, dst: int, m: Any) -> tuple[MemberList | None, Removed | None]:
        """A membership message from ``src`` reaches ``dst``."""
        if dst not in self.ms:
            if dst in self.out:
                self.handle(dst, RECEIVED(src, m, 0))
            return None, None
        return self.handle(dst, RECEIVED(src, m, 0))

    def timer(self, mid: int, tok: int) -> tuple[MemberList | None, Removed | None]:
        """Member ``mid``'s heartbeat timer fires (if ``tok`` is still its timer's)."""
        if mid not in self.ms or self.timer_tok.get(mid) != tok:
            return None, None
        return self.handle(mid, _TICK)

    def handle(self, mid: int, ev: Any) -> tuple[MemberList | None, Removed | None]:
        """Member ``mid``'s machine takes ``ev``; its sends and timer are carried out.
        Returns its new committed list and its removal (each None if none)."""
        node = self.ms.get(mid) or self.out[mid]
        self._lease.pop(mid, None)
        tl = self.tl
        changed: MemberList | None = None
        removed: Removed | None = None
        for o in node.handle(ev, tl.now):
            t = type(o)
            if t is Send:
                to = o.to                                    # type: ignore[attr-defined]
                if to in self.ms or to in self.out:
                    self.net.deliver(mid, to, o.message)     # type: ignore[attr-defined]
            elif t is SetTimer:
                tok = self.timer_tok.get(mid, 0) + 1
                self.timer_tok[mid] = tok
                tl.push(o.at, MS_TIMER, (mid, tok))          # type: ignore[attr-defined]
            elif t is Mark:
                if o.name == MembershipMark.COMMITTED:      # type: ignore[attr-defined]
                    self._committed(node)
            elif t is ListChanged:
                changed = o.lst                              # type: ignore[attr-defined]
            elif t is Removed:
                removed = o                                  # type: ignore[assignment]
        return changed, removed

    def _committed(self, node: Membership) -> None:
        """A member committed a list: with protection, it is the only one at its key and
        its term has one master."""
        lst = node.newest              # (a recovered list may leave its proposer out)
        if lst is None:
            return
        seen = self.committed.get(lst.key)
        if self.protected:
            if seen is not None and seen != lst.members:
                self.tl.violation(f"two lists committed at {lst.key}: {seen} and "
                                  f"{lst.members}")
            was = self.term_master.setdefault(lst.term, lst.master)
            if was != lst.master:
                self.tl.violation(f"two masters in term {lst.term}: {was} and {lst.master}")
        self.committed[lst.key] = lst.members
        if lst.key > self.newest:
            self.newest = lst.key

    # ------------------------------------------------------------------ serving
    def serves(self, m: int, p: int, owner: int) -> bool:
        """Whether member ``m`` takes a write of partition ``p`` now, as its owner
        (``m == owner``) or as a backup of ``owner``: not paused, reachable from the owner,
        and holding its membership's lease. With protection, a write the owner takes is
        checked: no committed list leaves it out, and no other member would take a write
        of ``p`` as its owner now."""
        if m in self.paused:
            return False
        if m != owner and self.net.cut and (owner, m) in self.net.cut:
            return False
        now = self.tl.now
        if not self._leased(m, now):
            return False
        if m == owner and self.protected:
            self._check_writer(m, p, now)
        return True

    def _leased(self, m: int, now: int) -> bool:
        """``may_serve(now)`` of member ``m`` (False if it is gone), cached for the tick."""
        if now != self._lease_at:
            self._lease_at = now
            self._lease.clear()
        ok = self._lease.get(m)
        if ok is None:
            ms = self.ms.get(m)
            ok = self._lease[m] = ms is not None and ms.may_serve(now)
        return ok

    def _check_writer(self, m: int, p: int, now: int) -> None:
        newest = self.committed[self.newest]
        if m not in newest:
            self.tl.violation(f"m{m} takes a write of partition {p} while the committed "
                              f"list {self.newest} {newest} leaves it out")
        for o in self.ms:
            if o == m or o in self.paused:
                continue
            node = self.nodes.get(o)
            if node is None or not node.initialized or node.replicas.item(p, 0) != o:
                continue
            if node.accepts_write(p) and self._leased(o, now):
                self.tl.violation(f"m{m} and m{o} both take writes of partition {p}")
                return

    def current(self) -> tuple[int, ...]:
        """The member list the run's checks follow: with protection, the newest committed
        one; without, the list most live members hold (ties: the newest key), since
        the two sides of a split commit keys that do not compare."""
        if self.protected:
            return self.committed[self.newest]
        count: dict[MemberList, int] = {}
        for ms in self.ms.values():
            if ms.list is not None:
                count[ms.list] = count.get(ms.list, 0) + 1
        if not count:
            return ()
        return max(count, key=lambda lst: (count[lst], lst.key)).members

    def cluster_of(self, m: int) -> MemberList | None:
        """Member ``m``'s committed list (None outside a cluster): without protection two
        clusters may commit lists at one key, so the list itself names the cluster."""
        ms = self.ms.get(m)
        return ms.list if ms is not None and not ms.removed else None

    def one_cluster(self) -> bool:
        """Every live member in one committed list that lists exactly them, all serving."""
        if not self.ms:
            return False
        now = self.tl.now
        lists = {ms.list for ms in self.ms.values()}
        if len(lists) != 1:
            return False
        lst = next(iter(lists))
        return (lst is not None and set(lst.members) == set(self.ms)
                and all(ms.may_serve(now) for ms in self.ms.values()))

    def quorum_lost(self) -> bool:
        """With protection: crashes left the newest committed list without its quorum, or
        left the newest list any live member (or one out of the cluster) knows without
        its quorum when none of them knows the newer one committed (a successor is
        settled only by a quorum of its base): no side may serve again (stuck by design,
        as any quorum system)."""
        if not self.protected:
            return False
        alive = self.ms
        quorum = self.config.quorum
        newest = self.committed[self.newest]
        if sum(1 for m in newest if m in alive) < quorum(len(newest)):
            return True
        lists = [ms.newest for ms in (*alive.values(), *self.out.values())
                 if ms.newest is not None]
        if not lists:
            return True                   # (only joiners: nobody can admit them)
        known = max(lists, key=lambda lst: lst.key).members
        return sum(1 for m in known if m in alive) < quorum(len(known))

    # ------------------------------------------------------------------ faults
    def schedule(self, rng: random.Random, nemesis: tuple[str, ...], until: int) -> None:
        """Draw this run's pauses and partitions (from ``rng``, the layer's own stream)."""
        T = self.config.heartbeat_timeout
        tl = self.tl
        if "pause" in nemesis:
            for _ in range(rng.choice((0, 1, 2, 3))):
                tl.push(rng.randint(50, until - 50), PAUSE,
                        rng.choice((T // 3, T, 2 * T, 5 * T, 20 * T)))
        if "partition" in nemesis:
            for _ in range(rng.choice((0, 1, 1, 2))):
                tl.push(rng.randint(50, until - 50), PARTITION,
                        (rng.choice(PARTITION_SHAPES), rng.choice((T // 2, 2 * T, 8 * T))))

    def pause(self, rng: random.Random, length: int) -> None:
        """Pause a random live member for ``length`` ticks."""
        live = sorted(m for m in self.ms if m not in self.paused)
        if live:
            self.pause_member(rng.choice(live), length)

    def pause_member(self, m: int, length: int) -> None:
        """Pause member ``m`` (if live and running) for ``length`` ticks."""
        if m not in self.ms or m in self.paused:
            return
        self.paused[m] = self.tl.now + length
        self.backlog[m] = []
        self.tl.inject("member_paused")
        self.tl.push(self.tl.now + length, RESUME, m)

    def resume(self, m: int) -> None:
        """Member ``m`` runs again: what waited for it arrives now, in its order."""
        if self.paused.pop(m, None) is None:
            return
        tl = self.tl
        for kind, payload in self.backlog.pop(m, []):
            tl.push(tl.now, kind, payload)

    def partition(self, rng: random.Random, shape: str, length: int) -> None:
        """Cut the links of a ``shape`` partition among the live members for ``length``."""
        live = sorted(self.ms)
        if len(live) < 2:
            return
        self.net.cut |= cut_links(rng, live, shape)
        self.tl.inject(f"partition_{shape}")
        self.tl.push(self.tl.now + length, UNPARTITION, None)

    def cut_group(self, group: tuple[int, ...], length: int) -> None:
        """Cut every link between the members of ``group`` and the others, both ways,
        for ``length`` ticks."""
        self.net.cut |= cut_between(set(group), set(self.ms) - set(group))
        self.tl.inject("partition_scripted")
        self.tl.push(self.tl.now + length, UNPARTITION, None)

    def heal(self) -> None:
        """The faults stop: every link works, every paused member resumes."""
        self.net.cut.clear()
        for m in sorted(self.paused):
            self.resume(m)


def nemeses(text: str) -> tuple[str, ...]:
    """A comma-separated nemesis list (``"pause,partition"``, ``""``) as a tuple."""
    out = tuple(x for x in (s.strip() for s in text.split(",")) if x)
    for x in out:
        if x not in NEMESES:
            raise ValueError(f"nemesis must name some of {NEMESES}, got {x!r}")
    return out
