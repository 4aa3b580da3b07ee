"""What every member does (docs/design.md §7.3–§7.5, §7.7(c)): answer a migration request
as its owner, take a transfer and a commit as its destination, finalize as a participant,
take the master's tables, published lists and promotions, and answer fetches and checks.

:class:`MemberSide` is one part of :class:`hzfast.protocol.Node` (it reads and writes the
node's fields); the master's work is :mod:`hzfast.protocol.master`.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from hzfast.hashing import stamp as _stamp
from hzfast.protocol import _lists, _merge
from hzfast.protocol import messages as msg
from hzfast.protocol.common import (
    ACTIVE,
    COMMIT_RESPONSE,
    PUBLISH_ACK,
    RESULT,
    SUCCESS,
    TRANSFER_ACK,
    MigrationId,
    settled,
)
from hzfast.protocol.core import NodeCore
from hzfast.protocol.kinds import (
    CLEAR,
    DISCARD,
    INSTALL,
    PROMOTE,
    SYNC,
    MarkName,
)
from hzfast.protocol.messages import MigrationInfo
from hzfast.protocol.tables import DivergedTableError, merge_tables

__all__ = ["MemberSide"]

_attention, _keyed = _lists.attention, _lists.keyed
FAILED = msg.MigrationStatus.FAILED


class MemberSide(NodeCore):
    """The member's steps of a :class:`~hzfast.protocol.Node`."""

    # ------------------------------------------------------------------ completed lists

    def _apply_completed(self, lst: tuple[MigrationInfo, ...]) -> bool:
        """§7.5: a partial update. True iff no entry was rejected.

        Entries apply in order: a malformed or ACTIVE one rejects itself and the rest; one
        at or below the local version is kept (and finalized where this member took part);
        one that starts at the local version is applied; any other is rejected as a
        partial update that does not line up (the master then sends the full table).
        Entries that are only to be kept, and entries this member simply applies (it took
        no part in them), are handled by one kernel pass (docs/design.md §11.2); each
        entry it stops at takes the full rule below."""
        if self.is_master:
            return True            # the master's own table is the one the lists come from
        if not self.initialized:
            return False
        if type(lst) is not tuple:
            lst = tuple(lst)
        if not lst and self._list.unchanged(self.versions):
            return True            # nothing received and nothing to recheck: no change
        ok = True
        vers = self.versions
        unconfirmed = self._unconfirmed
        finalized = self._finalized
        table = self.replicas
        i = _attention(lst, 0, vers, MigrationInfo, self._R, finalized, self.active,
                       unconfirmed, self.me, table, SUCCESS, FAILED)
        n = len(lst)
        stop = n
        for _ in range(n + 1):
            if i >= n:
                break
            x = lst[i]                         # the full rule for this one entry
            if self._check_migration(x) or x.status == ACTIVE:
                ok = False                     # malformed: reject it and the rest (§7.5)
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
                    self._mark(MarkName.PARTIAL_UPDATE_REJECTED, x,
                               detail=f"local version {cur}, migration from {x.initial}")
                    break
                if x.status == SUCCESS and not self._design.apply_entry(self.replicas, p, x):
                    ok = False
                    stop = i
                    self._mark(MarkName.PARTIAL_UPDATE_REJECTED, x,
                               detail=f"does not fit the row at version {cur}")
                    break
                vers[p] = x.final
                self._finalize(x)
            elif x.id not in finalized:
                self._finalize(x)
            i = _attention(lst, i + 1, vers, MigrationInfo, self._R, finalized, self.active,
                           unconfirmed, self.me, table, SUCCESS, FAILED)
        self._list.keep_current(_keyed(lst, stop, self._list.head), self.versions)
        return ok

    # ------------------------------------------------------------------ finalization
    def _finalize(self, x: MigrationInfo) -> None:
        """§7.3(h)/(i): a participant finalizes ``x`` once."""
        if x.id in self._finalized:
            return
        p = x.partition
        act = self.active.get(p)
        bc = self._bc
        if act is not None and act.id == x.id:
            del self.active[p]
            self._finalized.add(x.id)
            if x.destination == self.me:
                if x.status == SUCCESS:
                    self._effect(INSTALL, p, x,
                                 keep=x.destination_new_index <= bc)
                    self._install_eid[x.id] = self._effect_seq
                else:
                    self._effect(DISCARD, p, x)
                self._mark(MarkName.DESTINATION_FINALIZED, x)
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
                self._mark(MarkName.SOURCE_FINALIZED, x)
            return
        if x.source == self.me and x.source_current_index > 0 and not x.promotion:
            self._finalized.add(x.id)              # a passive source: on arrival (§7.3(h))
            sni = x.source_new_index
            if x.status == SUCCESS and (sni == -1 or sni > bc) \
                    and self.me not in self.replicas[p, :bc + 1].tolist():
                self._clear_copy(p, x)
            self._mark(MarkName.SOURCE_FINALIZED, x)

    def _clear_copy(self, p: int, x: MigrationInfo | None) -> None:
        """A source's copy of ``p`` goes (``x``: the migration it goes with), unless the
        design keeps a copy that may be the last: every member the table lists at a data
        slot of ``p`` is gone, and the master's next step (a promotion) may list this
        member at a data slot again. It is kept until the row lists a live member there
        (§7.3(i))."""
        if self._design.keeps_last_copy and self._copy_may_be_last(p):
            self._kept[p] = x
        else:
            self._kept.pop(p, None)
            self._effect(CLEAR, p, x)

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
                self._effect(CLEAR, p, x)

    # ------------------------------------------------------------------ full table (§7.4)
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
                self._mark(MarkName.DIVERGED_REJECTED, partition=int(e.partitions[0]),
                           detail=f"{len(e.partitions)} partitions diverged")
                return False, tuple(int(p) for p in e.partitions)
            if self._bad_table(replicas, versions, updated, "a table"):
                return False, ()                   # (the rows it would take: valid ones)
            accepted = bool((versions >= self.versions).any())
            for p in [q for q in self._unconfirmed if versions[q] >= new_v[q]]:
                del self._unconfirmed[p]          # the master's table has caught up
            old = self.replicas
            self.replicas, self.versions = new_r, new_v
            if updated.any():
                self._design.table_moved(self, old, updated)
        keep: dict[MigrationId, MigrationInfo] = {}
        for x in completed:
            if not self._check_migration(x) and x.status != ACTIVE:
                keep[x.id] = x
                self._finalize(x)
        if not self.is_master:
            self._list.keep_current(keep, self.versions)
        return accepted, ()


    def _drop_stale(self, old: NDArray[np.int32], updated: NDArray[np.bool_]) -> None:
        """A newer table from the master no longer lists this member at a data index of a
        partition it held (a completed migration it never heard of moved it out): the
        master committed that, so its copy goes (no data stays on non-replicas, §7.4),
        unless it may be the last: no live member is at a data slot of the new row, and
        the master's next step (a promotion) may list this member there again (§7.3(i))."""
        # (merge_tables took ``old`` only as a C-contiguous int32 table, and made the new
        # table and ``updated`` itself: the kernel's inputs)
        gone = _merge.left(old, self.replicas, updated.view(np.uint8), self.me,
                           self._bc + 1)
        for p in gone:
            if p not in self.active:
                self._clear_copy(p, None)

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
            self._send(m.sender, PUBLISH_ACK(self.me, ids, False))
            return
        ok = self._apply_completed(m.completed)
        self._send(m.sender, PUBLISH_ACK(self.me, ids, ok))

    def _on_state_check(self, m: msg.PartitionStateCheck) -> None:
        if not self._from_master(m):
            return
        self._send(m.sender, msg.PartitionStateCheckReply(
            self.me, self.initialized and m.stamp == self.stamp))

    def _on_request(self, m: msg.MigrationRequest) -> None:
        """§7.3(b): the owner's checks, in the order docs/design.md lists them."""
        x = m.migration
        why = self._check_migration(x)
        if not why and (m.sender != self.master or x.master != m.sender):
            why = f"not from my master {self.master}"
        if why:
            self._reject(m.sender, m, why)
            if isinstance(x, MigrationInfo):
                self._send(m.sender, RESULT(self.me, x, False, why))
            return
        p = x.partition
        act = self.active.get(p)
        if (act is not None and act.id == x.id) or x.id in self._finalized:
            return                                   # a duplicate: the first one runs/ran
        why = self._design.owner_refusal(self, m, x)
        if why:
            self._send(m.sender, RESULT(self.me, x, False, why))
            return
        self.active[p] = x
        self._carried[p] = m.completed
        self._effect(self._design.copy_kind, p, x, to=x.destination)

    def _owner_refusal(self, m: msg.MigrationRequest, x: MigrationInfo) -> str:
        """Why the owner refuses a well-formed request from its master ("" if it takes
        it): §7.3(b) checks 2–7 in order (the completed list applies before the ownership
        check reads the table it may change)."""
        p = x.partition
        if x.source_current_index == 0 and x.source != self.me:
            return "the source of an owner migration must be the owner"
        if not self._apply_completed(m.completed):
            return "version mismatch (completed migrations do not apply)"
        if not self.initialized or self.replicas.item(p, 0) != self.me:
            return "not the owner"
        if x.destination not in self.members:
            return "destination is not a member"
        if self.versions.item(p) != x.initial:
            return f"version {int(self.versions[p])} != initial {x.initial}"
        if self.active.get(p) is not None:        # (the list may have finalized one)
            return "another migration is active"
        return ""

    def _on_transfer(self, m: msg.MigrationTransfer) -> None:
        x = m.migration
        why = self._check_migration(x)
        if not why and x.id in self._finalized:       # a duplicate of a finished one
            self._send(m.sender, TRANSFER_ACK(self.me, x, False))
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
                self._send(m.sender, TRANSFER_ACK(self.me, x, False))
            self._reject(m.sender, m, why)
            return
        self.active[x.partition] = x
        self._send(m.sender, TRANSFER_ACK(self.me, x, True))

    def _on_transfer_ack(self, m: msg.MigrationTransferAck) -> None:
        x = m.migration
        if not isinstance(x, MigrationInfo) or m.sender != x.destination:
            self._reject(m.sender, m, "not the destination")
            return
        act = self.active.get(x.partition)
        if act is None or act.id != x.id:
            return
        self._send(x.master, RESULT(self.me, x, bool(m.ok),
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
                self._send(m.sender, COMMIT_RESPONSE(self.me, x, False))
            return
        ok = self._destination_commit(x)
        reply = COMMIT_RESPONSE(self.me, x, ok)
        eid = self._install_eid.get(x.id)
        if ok and eid is not None:         # answer once the data is in place
            self._waiters.setdefault(eid, []).append((m.sender, reply))
        else:
            self._send(m.sender, reply)

    def _destination_commit(self, x: MigrationInfo) -> bool:
        """§7.3(f): the destination commits ``x``."""
        p = x.partition
        cur = self.versions.item(p)
        if x.final == cur:
            return True
        if x.final < cur or x.initial != cur:
            return False
        done = settled(x, SUCCESS)
        if not self._design.apply_entry(self.replicas, p, done):
            return False
        self.versions[p] = x.final
        self._list.add_committed(done)
        if x.destination_new_index == 0 and not self.is_master:
            self._unconfirmed[p] = x.id        # the master may still fail it: hold writes
        self._mark(MarkName.DESTINATION_COMMITTED, done)
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
            self._list.entries(), tuple(self.active[p] for p in sorted(self.active))))

    def _on_promotion(self, m: msg.PromotionCommit) -> None:
        """§7.7(c): the destination of a promotion batch."""
        if m.destination != self.me or m.sender != self.master:
            self._reject(m.sender, m, "promotion not for me or not from my master")
            self._send(m.sender, msg.PromotionCommitResponse(self.me, m.batch, False))
            return
        if m.sender == self.me:             # the master promotes itself: its table moves later
            for x in m.promotions:
                self._effect(PROMOTE, x.partition, x)
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
                self._effect(PROMOTE, x.partition, x)
        self._send(m.sender, msg.PromotionCommitResponse(self.me, m.batch, ok))

    def _on_sync(self, m: msg.ReplicaSyncRequest) -> None:
        p = m.partition
        if (isinstance(p, int) and 0 <= p < self._P and self.initialized
                and self.replicas[p, 0] == self.me):
            self._effect(SYNC, p, None, to=m.sender)
