"""The simulated data (docs/design.md §12.3): the entries and each member's copies of
them, the clients' writes, the effects members perform on their data, and the ghost
model that tells a loss the protocol must prevent from one more crashes than backups
caused.

Replica data are bit masks: per member, per partition, bit ``i`` stands for the
partition's ``i``-th key (``keys_of[p][i]``); staged copies, pending and acknowledged
writes are masks the same way.
"""
from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from hzfast.hashing import partition_ids
from hzfast.protocol import messages as msg
from hzfast.protocol.kinds import CLEAR, COPY, DISCARD, INSTALL, SYNC
from hzfast.protocol.node import Node
from hzfast.protocol.outputs import Effect
from hzfast.sim.network import Network
from hzfast.sim.timeline import (
    ARRIVE,
    DONE,
    SYNC_START,
    MERGE,
    WRITE,
    Timeline,
    randbits,
    randint,
)

__all__ = ["Data", "bits"]


class Data:
    """The entries, the members' copies, the workload and the ghost model of one run.

    ``nodes`` and ``view`` are the run's own (live members by id; the member list in
    order): the data layer reads them, the event loop changes them.
    """

    def __init__(self, timeline: Timeline, net: Network, rng: random.Random,
                 nodes: dict[int, Node], view: list[int], partitions: int, backup_count: int,
                 entries: int, write_window: tuple[int, int], sync_ticks: int) -> None:
        self.tl = timeline
        self.net = net
        self.rng = rng
        self.nodes = nodes
        self.view = view
        self.P = partitions
        self.bc = backup_count
        self.store: dict[int, dict[int, int]] = {}
        self.staged: dict[int, dict[tuple[int, int], int]] = {}
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
        # why each acknowledged entry whose last copy vanished went (masks per partition;
        # an entry is in at most one, the cause of its latest disappearance): a crash after
        # at least backup_count + 1 holder crashes (expected), a crash after fewer, a clear
        self.lost_to_crashes: dict[int, int] = {}
        self.lost_to_few_crashes: dict[int, int] = {}
        self.lost_to_clear: dict[int, int] = {}
        #: entries whose last copy went with a member out of the cluster that dropped its
        #: data (merge policy ``discard``)
        self.lost_to_split_brain: dict[int, int] = {}
        #: removed members' copies waiting to be merged into the cluster, per partition
        self.merging: dict[int, int] = {}
        #: ``serves(member, partition, owner)``: whether a member takes a write now (the
        #: membership layer's lease; None: every member does)
        self.serves: Callable[[int, int, int], bool] | None = None
        self.write_batches = 0
        self.write_tries: dict[int, int] = {}
        self.write_window = write_window
        self.sync_ticks = sync_ticks
        self.sync_free: dict[int, int] = {}

    # ------------------------------------------------------------------ members
    def add_member(self, m: int) -> None:
        """Member ``m`` joins, holding nothing."""
        self.store[m] = {}
        self.staged[m] = {}

    def crash(self, m: int) -> None:
        """Member ``m`` crashes: the ghost model counts the crash against every entry it
        held, then its data vanish."""
        self._ghost_crash(m)
        self.store.pop(m, None)
        self.staged.pop(m, None)

    def remove(self, m: int, merge: bool) -> None:
        """Member ``m`` is out of the cluster and stops: its copies go to the merge
        buffer (``merge``), or are dropped (the ``discard`` policy: an entry whose last
        copy they were is lost to the split brain)."""
        st = self.store[m]
        if merge:
            tl = self.tl
            for p, d in st.items():
                if d:
                    old = self.merging.get(p, 0)
                    self.merging[p] = old | d
                    if not old:
                        tl.push(tl.now + 1, MERGE, p)
        else:
            for p, d in st.items():
                held = d & self.acked.get(p, 0)
                gone = held & ~self._others(m, p)
                if gone:
                    self._vanished(p, 0, 0, 0, gone)
        self.store.pop(m, None)
        self.staged.pop(m, None)

    # ------------------------------------------------------------------ the workload
    def schedule_writes(self) -> None:
        """Each partition's first write, at a random time in the write window."""
        lo, hi = self.write_window
        for p in sorted(self.pending):
            self.tl.push(randint(self.rng, lo, hi), WRITE, p)

    def heal(self) -> None:
        """Faults stopped: every pending write is tried again at once."""
        for p in sorted(self.pending):
            self.tl.push(self.tl.now + 1, WRITE, p)

    def write(self, p: int) -> None:
        """A client writes partition ``p``'s keys not acknowledged yet, to the owner in a
        random member's table (the client's cached one); acknowledged once the owner and
        every backup in the owner's table applied it (§7.11), else retried later."""
        batch = self.pending.get(p)                   # all the partition's keys not acked yet
        if not batch:
            return
        net, tl = self.net, self.tl
        self.write_batches += 1
        tries = self.write_tries.get(p, 0) + 1
        self.write_tries[p] = tries
        retry = tl.now + min(10 * tries, 200) + (randbits(net.getrandbits, 0, 20)
                                                 if net.faulty else 0)
        if self._put(p, batch, True):
            self.acked[p] = self.acked.get(p, 0) | batch
            del self.pending[p]
        else:
            tl.push(retry, WRITE, p)

    def merge(self, p: int) -> None:
        """Removed members' copies of partition ``p`` (the merge buffer) are written into
        the cluster as a client writes (put-if-absent: with key-only data, a union); the
        buffer empties once the owner and its backups took them, else it is tried again."""
        batch = self.merging.get(p)
        if not batch:
            return
        if self._put(p, batch, False):
            del self.merging[p]
        else:
            tl = self.tl
            tl.push(tl.now + 10 + (randbits(self.net.getrandbits, 0, 20)
                                   if self.net.faulty else 0), MERGE, p)

    def _put(self, p: int, batch: int, attempt: bool) -> bool:
        """Write the entries of ``batch`` (a mask of partition ``p``'s keys) through the
        owner in a random member's table: True once the owner and every backup in the
        owner's table took them. ``attempt``: count them as attempted by a client."""
        net, nodes = self.net, self.nodes
        live = [m for m in self.view if nodes[m].initialized]
        if not live:
            return False
        view = nodes[live[randbits(net.getrandbits, 0, len(live) - 1)]]  # the client's table
        owner = view.replicas.item(p, 0)
        if attempt:
            self.attempted[p] = self.attempted.get(p, 0) | batch
        if owner < 0 or owner not in nodes or net.lost():
            return False
        node = nodes[owner]
        serves = self.serves
        if not node.accepts_write(p) or (serves is not None and not serves(owner, p, owner)):
            return False
        st = self.store[owner]
        st[p] = st.get(p, 0) | batch
        ok = True
        for j in range(1, self.bc + 1):           # node.backups(p), slot by slot
            b = node.replicas.item(p, j)
            if b < 0 or b not in nodes:
                ok = False
                continue
            if net.lost():
                ok = False
                continue
            if not nodes[b].accepts_backup(p, owner) or (serves is not None
                                                         and not serves(b, p, owner)):
                ok = False
                continue
            st = self.store[b]
            st[p] = st.get(p, 0) | batch
        return ok

    # ------------------------------------------------------------------ effects
    def effect(self, mid: int, e: Effect) -> None:
        """Member ``mid`` performs ``e`` on its data; its outcome comes back as a DONE
        event (for a transfer: when the data arrived, or not)."""
        tl = self.tl
        kind, p, x = e.kind, e.partition, e.migration
        st = self.store[mid]
        if kind == COPY or kind == SYNC:
            snap = st.get(p, 0)                  # (an int: a snapshot as it is)
            to = e.to
            d = self.net.delay()
            if self.net.lost() or (self.net.cut and (mid, to) in self.net.cut):
                tl.inject("transfer_dropped")
                tl.push(tl.now + d, DONE, (mid, e.id, False))
                return
            if kind == SYNC and x is None:       # replica sync: one at a time per owner
                start = max(tl.now, self.sync_free.get(mid, 0))
                self.sync_free[mid] = start + self.sync_ticks
                tl.push(start, SYNC_START, (mid, to, p, e.id, start + self.sync_ticks - start))
                return
            tl.push(tl.now + d, ARRIVE, (mid, to, kind, p, x, snap, e.id))
            return
        if kind == INSTALL:
            assert x is not None
            data = self.staged[mid].pop(x.id, None)
            if e.keep:
                if data is not None:
                    st[p] = st.get(p, 0) | data
            elif p in st:
                self.clear(mid, p)
        elif kind == DISCARD:
            assert x is not None
            self.staged[mid].pop(x.id, None)
        elif kind == CLEAR:
            self.clear(mid, p)
        tl.push(tl.now + 1, DONE, (mid, e.id, True))

    def arrive(self, src: int, to: int, kind: str, p: int, x: msg.MigrationInfo | None,
               snap: int, eid: int) -> None:
        """A transfer of ``snap`` (partition ``p``'s data on ``src``) reaches ``to``: a
        migration's copy is staged until it commits, a sync's is merged at once."""
        ok = to in self.nodes and src in self.nodes     # a crash cuts transfers in flight
        if ok:
            if kind == COPY:
                assert x is not None
                self.staged[to][x.id] = snap
            else:
                st = self.store[to]
                st[p] = st.get(p, 0) | snap
        self.tl.push(self.tl.now + 1, DONE, (src, eid, ok))

    def sync_start(self, src: int, to: int, p: int, eid: int, d: int) -> None:
        """A throttled replica sync starts: ``src``'s data as it is now arrives in ``d``."""
        if src in self.nodes:
            snap = self.store[src].get(p, 0)
            self.tl.push(self.tl.now + d, ARRIVE, (src, to, SYNC, p, None, snap, eid))

    # ------------------------------------------------------------------ the ghost model
    def committed_row(self, p: int) -> NDArray[np.int32] | None:
        """Partition ``p``'s row at the highest version any live member holds: the latest
        commit the cluster knows of. The master's own row can be older: a new master
        that is still fetching tables has not yet learned what its predecessor committed
        (docs/design.md §12.3)."""
        best: NDArray[np.int32] | None = None
        top = -1
        for node in self.nodes.values():
            if node.initialized:
                v = node.versions.item(p)
                if v > top:
                    top, best = v, node.replicas[p]
        return best

    def stable(self, p: int, held: int, row: NDArray[np.int32] | None) -> int:
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
        """Before member m's data vanish: count a holder crash for every entry it held
        (an entry every committed data slot held counts this as its first), and record
        the entries whose last copy it was, by whether enough holders crashed."""
        full = self.bc + 1
        for p, data in self.store[m].items():
            acked = self.acked.get(p)
            if not data or not acked:
                continue
            held = data & acked
            levels = self._crash_levels(p)
            count_crash(levels, held, self.stable(p, held, self.committed_row(p)))
            gone = held & ~self._others(m, p)
            if gone:
                enough = gone & levels[full - 1]
                self._vanished(p, enough, gone & ~enough, 0)

    def clear(self, m: int, p: int) -> None:
        """Member ``m`` drops its copy of partition ``p``."""
        data = self.store[m].get(p)
        if not data:
            self.store[m].pop(p, None)
            return
        acked = self.acked.get(p)
        if acked:
            held = data & acked
            row = self.committed_row(p)
            stable = self.stable(p, held, row)
            levels = self._crash_levels(p)
            if stable:                           # safe again: their counts start over
                forget(levels, stable)
            gone = held & ~self._others(m, p)    # a clear dropped the last copy
            if gone:
                # excused only where it was a surplus copy (``m`` is at no data slot of
                # the latest commit) of entries whose committed holders all crashed: at
                # least backup_count + 1 of them
                surplus = row is None or m not in row[:self.bc + 1].tolist()
                excused = gone & levels[self.bc] if surplus else 0
                self._vanished(p, excused, 0, gone & ~excused)
        del self.store[m][p]

    def _others(self, m: int, p: int) -> int:
        """The entries of partition ``p`` some live member other than ``m`` holds."""
        store = self.store
        out = self.merging.get(p, 0) if self.merging else 0
        for o in self.nodes:
            if o != m:
                out |= store[o].get(p, 0)
        return out

    def _vanished(self, p: int, crashes: int, few: int, clear: int, split: int = 0) -> None:
        """Entries of partition ``p`` lost their last copy: to a crash after at least
        ``backup_count + 1`` holder crashes (``crashes``), to one after fewer (``few``),
        to a clear (``clear``), with a member out of the cluster that dropped its data
        (``split``). Each mask is disjoint from the others."""
        gone = crashes | few | clear | split
        for masks, new in ((self.lost_to_crashes, crashes), (self.lost_to_few_crashes, few),
                           (self.lost_to_clear, clear), (self.lost_to_split_brain, split)):
            old = masks.get(p, 0)
            if old or new:
                masks[p] = (old & ~gone) | new


def count_crash(levels: list[int], held: int, first: int) -> None:
    """One more holder crash for the entries of ``held`` in thermometer-coded counts
    (``levels[j]``: the entries counted at least ``j + 1`` times; counts stop at
    ``len(levels)``): the entries of ``first`` (within ``held``) count 1, the others of
    ``held`` one more than before."""
    more = held & ~first
    for j in range(len(levels) - 1, 0, -1):        # from the counts before, top down
        levels[j] = (levels[j] | levels[j - 1] & more) & ~first
    levels[0] |= held


def forget(levels: list[int], mask: int) -> None:
    """The entries of ``mask`` count 0 again (thermometer-coded counts)."""
    keep = ~mask
    for j in range(len(levels)):
        levels[j] &= keep


def bits(mask: int) -> list[int]:
    """The positions of the set bits of ``mask`` (>= 0), lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out
