"""The simulator's checker (docs/design.md §12.4): the protocol's rules and the data's
safety, checked as a run goes and at its end.

The event loop calls it through explicit hooks: after each event a member handled
(:meth:`Checker.after_event`), on a mark it watches (:meth:`Checker.on_mark`), on every
effect before it is performed (:meth:`Checker.on_effect`), on the completed lists a master
publishes and the acceptances that reach it, every 100 ticks (:meth:`Checker.agreement`,
:meth:`Checker.settled`) and at the end (:meth:`Checker.at_end`). It reads the members only
through their public queries and never changes a member or its data.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from hzfast.arrangement import arrange
from hzfast.protocol import messages as msg
from hzfast.protocol.config import Config
from hzfast.protocol.kinds import CLEAR, INSTALL, MarkName
from hzfast.protocol.node import MemberState, Node
from hzfast.protocol.outputs import Effect
from hzfast.sim._checks import advance_versions, first_disagreement
from hzfast.sim.data import Data, bits
from hzfast.sim.timeline import Timeline

__all__ = ["MARKS_WATCHED", "Checker"]

_SUCCESS = msg.MigrationStatus.SUCCESS
_STARTED, _COMMITTED, _FAILED = (MarkName.MIGRATION_STARTED, MarkName.MASTER_COMMITTED,
                                 MarkName.MIGRATION_FAILED)
_RECOVERED, _EVICTED = MarkName.RECOVERY_PUBLISHED, MarkName.COMPLETED_EVICTED
#: The marks :meth:`Checker.on_mark` does more with than count.
MARKS_WATCHED = frozenset((_COMMITTED, _RECOVERED, _FAILED, _STARTED, _EVICTED))


class Checker:
    """Every check of one run (see :func:`hzfast.sim.run`).

    ``nodes`` and ``view`` are the run's own; ``lite`` the ids of its lite members (they
    hold no data, so the data checks leave them out).
    """

    def __init__(self, timeline: Timeline, data: Data, config: Config, nodes: dict[int, Node],
                 view: list[int], lite: set[int], strict: bool) -> None:
        self.tl = timeline
        self.data = data
        self.config = config
        self.nodes = nodes
        self.view = view
        self.lite = lite
        self.safe = config.design == "safe"
        self.strict = strict and self.safe
        self.bc = config.backup_count
        self.P = config.partition_count
        self.last_versions: dict[int, NDArray[np.int32]] = {}
        self.committed: set[tuple[int, int]] = set()
        # the parallel limit as the masters keep it: per master, its migrations in flight
        self.limit = config.max_parallel_migrations
        # (partition -> (id, destination, source endpoint)) and each member's load in them
        self.in_flight: dict[int, dict[int, tuple[tuple[int, int], int, int]]] = {}
        self.load: dict[int, dict[int, int]] = {}
        # each master's latest completed list published: its ids, the members it went to,
        # and those whose acceptance of it reached the master
        self.published: dict[int, tuple[tuple[tuple[int, int], ...], set[int], set[int]]] = {}
        #: ``cluster_of(member)``: the key of its committed member list, when members keep
        #: their own lists (two clusters of a split brain may agree on nothing); None: one
        self.cluster_of: Callable[[int], object] | None = None
        #: split-brain protection is on (a loss to a side merged away is then a violation)
        self.protected = True

    # ------------------------------------------------------------------ members
    def add_member(self, m: int, node: Node) -> None:
        """Member ``m`` joined (its versions as they start)."""
        self.last_versions[m] = node.versions.copy()

    def crash(self, m: int) -> None:
        """Member ``m`` crashed: what it kept as a master goes with it."""
        for per_master in (self.in_flight, self.load, self.published):
            per_master.pop(m, None)

    def data_view(self) -> list[int]:
        """The member list without its lite members (all of it if every one is lite)."""
        if not self.lite:
            return self.view
        data = [m for m in self.view if m not in self.lite]
        return data if data else self.view

    # ------------------------------------------------------------------ as the run goes
    def after_event(self, mid: int, node: Node) -> None:
        """Member ``mid`` handled an event: its versions never go down, and (strict) it
        agrees with every other member on the partitions they hold at one version."""
        v = node.versions
        last = self.last_versions[mid]
        try:       # one pass: compare, then remember (§12); it checks the arrays itself
            p = advance_versions(v, last)
        except TypeError:                  # another dtype, layout or length: numpy's way
            lower = np.flatnonzero(v < last) if last.shape == v.shape else np.empty(0, int)
            p = int(lower[0]) if len(lower) else -1
            self.last_versions[mid] = np.array(v, dtype=np.int32)   # (``last``: the old one)
        if p >= 0:
            self.tl.violation(f"versions decreased on m{mid}: partition {p} "
                              f"{int(last[p])} -> {int(v[p])}")
            last[p] = v[p]
        if self.strict:
            self.agreement(mid)

    def on_mark(self, mid: int, name: str, x: msg.MigrationInfo | None) -> None:
        """Member ``mid`` emitted mark ``name`` (one of :data:`MARKS_WATCHED`)."""
        if name == _STARTED and x is not None:
            self._started(mid, x)
        elif name == _COMMITTED and x is not None:
            self.committed.add(x.id)
            self._ended(mid, x)
        if name == _RECOVERED:                # what a destination committed stands
            self.committed |= {y.id for y in self.nodes[mid].completed.values()
                               if y.status == _SUCCESS}
        if name == _FAILED:
            if x is not None:
                self._ended(mid, x)
        elif name == _EVICTED:
            self._evicted(mid)

    def on_effect(self, mid: int, e: Effect) -> None:
        """Member ``mid`` is about to perform ``e``: a destination installs only data it
        holds, and (safe design) a member clears for a migration only once a master
        committed it: never for one still active or failed."""
        kind = e.kind
        x = e.migration
        if kind == INSTALL:
            if e.keep and x is not None and x.id not in self.data.staged[mid]:
                self.tl.violation(f"m{mid} commits {x} without the data")
        elif kind == CLEAR and x is not None and self.safe \
                and (x.status != _SUCCESS or x.id not in self.committed):
            self.tl.violation(f"m{mid} clears partition {e.partition} for {x} before "
                              f"a master committed it")

    def on_publish(self, mid: int, to: int, m: msg.PublishCompletedMigrations) -> None:
        """Master ``mid`` sends its completed list to ``to``."""
        ids = tuple([x.id for x in m.completed])
        pub = self.published.get(mid)
        if pub is None or pub[0] != ids:
            pub = (ids, set(), set())
            self.published[mid] = pub
        pub[1].add(to)

    def on_publish_ack(self, src: int, dst: int, m: msg.PublishCompletedAck) -> None:
        """``src``'s answer to a completed list reaches master ``dst``."""
        if m.ok:
            pub = self.published.get(dst)
            if pub is not None and tuple(m.ids) == pub[0]:
                pub[2].add(src)

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
                self.tl.violation(f"m{mid} started {x} twice")
                return
            self.tl.violation(f"m{mid} started {x} while its migration {other[0][0]}."
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
            self.tl.violation(f"m{mid} started {x} with m{m} in {n} of its migrations at "
                              f"once (max_parallel_migrations={self.limit})")

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
            self.tl.violation(f"m{mid} evicted {len(pub[0])} completed migrations before "
                              f"{', '.join([f'm{m}' for m in missing])} accepted them")

    def agreement(self, mid: int = -1) -> None:
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
                if self.cluster_of is not None and \
                        self.cluster_of(a.me) != self.cluster_of(nodes[j].me):
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
        self.tl.violation(f"m{a.me} and m{b.me} hold partition {p} at version "
                          f"{int(a.versions[p])} with different replicas "
                          f"{a.replicas[p].tolist()} vs {b.replicas[p].tolist()}")
        return True

    # ------------------------------------------------------------------ liveness
    def settled(self) -> bool:
        """The cluster is quiet: no write pending, the master idle with a table, every
        member SAFE (§7.9) with the master's stamp, the table balanced, and every
        partition's owner taking writes (a write hold lifts only when the master's
        completed list reaches the owner, which a lost acknowledgement delays: §7.11)."""
        if not self.view or self.data.pending or self.data.merging:
            return False
        master = self.nodes[self.view[0]]
        if not master.initialized or master.busy:
            return False
        st = master.stamp
        for n in self.nodes.values():
            if n.state(master.busy) != MemberState.SAFE or n.stamp != st:
                return False
        return self._balanced(master) and self._owners_take_writes(master)

    def _balanced(self, master: Node) -> bool:
        """The master sees the live data members, every slot is held by a member, and
        arranging the table changes nothing."""
        if master.data_members != tuple(self.data_view()):
            return False
        dense, _, members = master.view_table()
        if (dense[master.replicas >= 0] < 0).any():
            return False
        target = arrange(dense, members, replica_count=dense.shape[1])
        return bool((target == dense).all())

    def _owners_take_writes(self, master: Node) -> bool:
        """Every partition's owner in the master's table is live and takes writes. (A hold
        that never lifts leaves the run unconverged, which every caller counts as a
        failure.)"""
        nodes = self.nodes
        for p, o in enumerate(master.replicas[:, 0].tolist()):
            node = nodes.get(o)
            if node is None or not node.accepts_write(p):
                return False
        return True

    # ------------------------------------------------------------------ at the end
    def at_end(self, converged: bool, stuck: bool = False) -> tuple[int, int, int,
                                                                    dict[str, int]]:
        """The set check, then (if the run converged) every replica of every partition
        against the ghost model. Returns the entries lost, lost as expected, read
        unexpectedly, and the lost ones by cause. ``stuck``: the cluster lost its quorum
        and can serve no more; an entry counts as kept if any live member holds it."""
        data = self.data
        read: dict[int, int] = {}
        if stuck:                          # (a member out of the cluster still holds
            read = dict(data.merging)      # what it could not merge yet)
            for m in self.nodes:
                for p, d in data.store[m].items():
                    read[p] = read.get(p, 0) | d
        elif self.view:
            master = self.nodes[self.view[0]]
            if master.initialized:
                for p, o in enumerate(master.replicas[:, 0].tolist()):
                    if o in self.nodes:
                        read[p] = data.store[o].get(p, 0)
        n_unexpected = 0
        expected: dict[int, int] = {}
        why = {"crashes": 0, "split_brain": 0, "few_crashes": 0, "clear": 0, "not_on_owner": 0}
        # a side merged away without protection may lose what it acknowledged (its class)
        allowed = data.lost_to_split_brain if not self.protected else {}
        bad: list[int] = []
        for p, a in data.acked.items():
            lost = a & ~read.get(p, 0)
            if not lost:
                continue
            held = data.merging.get(p, 0)  # still held by a live member: not the owner
            for m in self.nodes:
                held |= data.store[m].get(p, 0)
            gone = lost & ~held
            e_p = gone & data.lost_to_crashes.get(p, 0)
            s_p = gone & allowed.get(p, 0)
            for cause, mask in (("crashes", e_p), ("not_on_owner", lost & held),
                                ("few_crashes", gone & data.lost_to_few_crashes.get(p, 0)),
                                ("clear", gone & data.lost_to_clear.get(p, 0)),
                                ("split_brain", gone & data.lost_to_split_brain.get(p, 0))):
                why[cause] += mask.bit_count()
            keys = data.keys_of[p]
            bad.extend(keys[i] for i in bits(lost & ~e_p & ~s_p))
            if e_p or s_p:
                expected[p] = e_p | s_p
        for p, d in read.items():
            n_unexpected += (d & ~data.attempted.get(p, 0)).bit_count()
        n_expected = why["crashes"] + (why["split_brain"] if not self.protected else 0)
        n_lost = n_expected + len(bad)
        bad.sort()
        if bad:
            causes = ", ".join(f"{n} {_CAUSES[c]}" for c, n in why.items()
                               if n and c != "crashes" and (c != "split_brain" or self.protected))
            self.tl.violation(
                f"{len(bad)} acknowledged entries lost with fewer than {self.bc + 1} of "
                f"their holders crashed ({causes}; e.g. keys {bad[:5]}, partitions "
                f"{sorted({int(data.part_of[k]) for k in bad[:5]})})")
        if n_unexpected:
            self.tl.violation(f"{n_unexpected} entries read that were never written")
        if converged:
            self._every_replica(self.data_view(), expected)
        return n_lost, n_expected, n_unexpected, {c: n for c, n in why.items() if n}

    def _every_replica(self, view: list[int], expected: dict[int, int]) -> None:
        """Hazelcast's checks of a settled cluster, replica by replica: every replica
        index below ``min(members, 7)`` is held by a live member (every partition's owner
        takes writes: ``settled`` required it), and each partition's
        data are on exactly its first ``min(backup_count + 1, data members)`` replicas,
        each holding every acknowledged entry not lost as expected, and all the same."""
        data = self.data
        master = self.nodes[view[0]]
        data_members = len(view)
        need = min(data_members, self.config.replica_count)
        reps = master.replicas
        if need and not np.isin(reps[:, :need], np.asarray(view)).all():
            self.tl.violation("a replica index below min(members, 7) is not held by a "
                              "live member")
        copies = min(self.bc + 1, data_members)
        rows = reps[:, :copies].tolist()
        store = data.store
        for p in range(self.P):
            acked = data.acked.get(p)
            if not acked:
                continue
            row = rows[p]
            must = acked & ~expected.get(p, 0)
            holders = sorted(m for m in self.nodes if store[m].get(p))
            if not holders and not must:
                continue                 # every entry of p was lost with its holders
            if holders != sorted(row):
                self.tl.violation(f"partition {p}: data on {holders}, replicas {row}")
                return
            owner = store[row[0]].get(p, 0)
            for b in row:
                have = store[b].get(p, 0)
                if must & ~have:
                    self.tl.violation(f"partition {p}: m{b} lacks {(must & ~have).bit_count()} "
                                      f"acknowledged entries")
                    return
                if have != owner:
                    self.tl.violation(f"partition {p}: backup m{b} differs from the owner")
                    return


_CAUSES = {"few_crashes": "to a crash of their last holder after fewer crashes",
           "clear": "to a clear of their last copy",
           "split_brain": "with a member out of the cluster that dropped its data",
           "not_on_owner": "missing on the owner while another member holds them"}


def _partition_of(x: msg.MigrationInfo) -> int:
    """``x.partition`` as a Python int, or -1 when it is not an integer (a record a test
    forged): the master checks then pass it over."""
    p = x.partition
    if type(p) is int:
        return p
    if isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
        return int(p)
    return -1
