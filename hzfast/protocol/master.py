"""The master's work (docs/design.md §7.0–§7.3, §7.6–§7.8): recovery after a master
change, repair and promotions, arranging and planning, running the plan under the
parallel limit, commits and failures, and publication.

:class:`MasterSide` is one part of :class:`hzfast.protocol.Node`. The master's phase
(:class:`~hzfast.protocol.kinds.Phase`, the node's ``phase`` field) says which of this work
is under way; the fields that hold each phase's work are set and dropped with it.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast._check import owned
from hzfast.arrangement import arrange
from hzfast.members import Members
from hzfast.migration._executor import ANSWER_ACCEPTED as _ACCEPTED
from hzfast.migration.apply import apply_migrations
from hzfast.migration.executor import Executor
from hzfast.migration.plan import MigrationPlan
from hzfast.protocol import _scan
from hzfast.protocol import messages as msg
from hzfast.protocol.common import (
    ACTIVE,
    COMMIT,
    FAILED,
    INFO,
    PUBLISH,
    REQUEST,
    SUCCESS,
    MigrationId,
    apply_row,
    apply_to_row,
    held_by,
    ids_of,
    is_table,
    settled,
)
from hzfast.protocol.core import NodeCore
from hzfast.protocol.kinds import (
    CHECK_TIMEOUT,
    FETCH_TIMEOUT,
    FOLLOWER,
    IDLE,
    MIGRATION_TIMEOUT,
    PROMOTING,
    PROMOTION_TIMEOUT,
    RECOVERING,
    RUNNING,
    STAGE_COMMIT,
    STAGE_INSTALLING,
    STAGE_REQUEST,
    MarkName,
    Stage,
    TimerKind,
)
from hzfast.protocol.messages import MigrationInfo
from hzfast.protocol.run import Run

__all__ = ["MasterSide"]

_CHECK = (CHECK_TIMEOUT,)
_PUBLISH_KEY = (TimerKind.PUBLISH,)
_RETRY = (TimerKind.RETRY,)


@functools.lru_cache(maxsize=64)
def _registry(n: int, lite: tuple[bool, ...]) -> Members:
    """The arranger's member registry for ``n`` view positions with these lite flags, kept
    (a registry is immutable, and what the arranger derives from it is cached on it)."""
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


class MasterSide(NodeCore):
    """The master's steps of a :class:`~hzfast.protocol.Node`."""

    # ------------------------------------------------------------------ the master's view
    def _master_view_changed(self, gone: set[int], old_master: int) -> None:
        """This node is the master of its new view (§7.1): start, or go on with what the
        departed members leave behind."""
        if not self._check_timer and self.config.state_check_interval:
            self._check_timer = True
            self._timer_set(_CHECK, self.config.state_check_interval)
        if self.phase is FOLLOWER:     # it becomes master
            self._unconfirmed.clear()        # a former member's holds: its own table rules
            if (old_master not in (-1, self.me) and old_master not in self.members
                    and self._design.recovers):
                self._start_recovery()
                return
            self._enter(IDLE)
        if self.phase is RECOVERING:
            assert self._fetching is not None
            for m in gone:
                if m in self._fetching:
                    del self._fetching[m]
                    self._timer_cancel((FETCH_TIMEOUT, m))
            self._maybe_finish_recovery()
            return
        run = self._run
        if run is not None:
            run.aborted = True
            for mid, (_i, x, stage, owner) in list(run.inflight.items()):
                parts = {owner, x.destination} | ({x.source} if x.source >= 0 else set())
                if stage is STAGE_COMMIT:
                    parts = {x.destination}
                elif stage is STAGE_INSTALLING:
                    parts = set()
                if parts & gone:
                    self._timer_cancel((MIGRATION_TIMEOUT, mid))
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
        self.phase = FOLLOWER

    # ------------------------------------------------------------------ timeouts
    def _on_check_timer(self, key: tuple[Any, ...]) -> None:
        """§7.6: the master's periodic stamp check (and a publication, if one is due)."""
        self._check_timer = False
        if not self.is_master or not self.config.state_check_interval:
            return
        self._check_timer = True
        self._timer_set(_CHECK, self.config.state_check_interval)
        if self.initialized and self.phase is not RECOVERING:
            st = self.stamp
            for m in self.members:
                if m != self.me:
                    self._send(m, msg.PartitionStateCheck(self.me, st))
            if self.completed and self._publish is None and self._run is None:
                self._publish_completed()

    def _on_migration_timeout(self, key: tuple[Any, ...]) -> None:
        """§7.3(d)/(e): a request unanswered fails; a commit is sent again while the
        destination is a member."""
        if self._run is None:
            return
        ent = self._run.inflight.get(key[1])
        if ent is None:
            return
        _, x, stage, owner = ent
        if stage is STAGE_REQUEST:
            self._fail(x, (owner, x.destination), "no answer from the owner")
        elif x.destination in self.members:          # commit: re-send while a member
            self._send(x.destination, COMMIT(self.me, x))
            self._timer_set((MIGRATION_TIMEOUT, x.id), self._timeout)
        else:
            self._fail(x, (), "destination left during commit")

    def _on_fetch_timeout(self, key: tuple[Any, ...]) -> None:
        """§7.8(b): a fetch is repeated until the member answers or leaves."""
        if self._fetching is None:
            return
        m = key[1]
        if m in self._fetching and self._fetching[m] is None and m in self.members:
            self._send(m, msg.FetchPartitionState(self.me))
            self._timer_set((FETCH_TIMEOUT, m), self._timeout)

    def _on_promotion_timeout(self, key: tuple[Any, ...]) -> None:
        """§7.7(b): a promotion batch is sent again while its destination is a member;
        once it left, its answer is false."""
        dest = key[1]
        ent = self._promotions.get(dest)
        if ent is not None and ent[2] is None:
            if dest in self.members:
                self._send_promotions(dest)
            else:
                self._promotions[dest] = (ent[0], ent[1], False)
                self._promotions_maybe_done()

    def _on_publish_timeout(self, key: tuple[Any, ...]) -> None:
        """§7.6: no answer is a failed answer: those members get the full table, nothing
        is evicted this round, and a later publication tries again."""
        pub = self._publish
        if pub is None:
            return
        for m, ans in pub[1].items():
            if ans is None and m in self.members:
                self._send(m, self._table_message())
        self._publish = None

    def _on_retry(self, key: tuple[Any, ...]) -> None:
        """The pause after a failed run is over: the master step picks the work up."""

    # ------------------------------------------------------------------ answers (§7.3)
    def _on_result(self, m: msg.MigrationResult) -> None:
        """§7.3(d)/(e): the owner's answer to a request."""
        x = m.migration
        ent = self._answered(x, STAGE_REQUEST)
        if ent is None or m.sender != ent[3]:
            return
        self._timer_cancel((MIGRATION_TIMEOUT, x.id))
        if not m.ok:
            self._fail(ent[1], (ent[3], x.destination), m.reason or "owner refused")
            return
        self._design.owner_agreed(self, ent)

    def _answered(self, x: object, stage: Stage
                  ) -> tuple[int, MigrationInfo, Stage, int] | None:
        """The run's in-flight entry of migration ``x`` when it waits at ``stage`` for the
        answer that names ``x``, else None (no run, a malformed or late answer)."""
        run = self._run
        if run is None or not isinstance(x, MigrationInfo):
            return None
        ent = run.inflight.get(x.id)
        return ent if ent is not None and ent[2] is stage else None

    def _commit_on_destination(self, ent: tuple[int, MigrationInfo, Stage, int]) -> None:
        """§7.3(e): the owner copied the data; the destination commits first."""
        run = self._run
        assert run is not None
        x = ent[1]
        if x.destination == self.me:        # the master's own commit is the destination's
            done = settled(x, SUCCESS)
            self._mark(MarkName.DESTINATION_COMMITTED, done)
            self._finalize(done)                 # install the data, then commit the table
            eid = self._install_eid.get(x.id)
            if eid is None:
                self._master_commit(x)
            else:
                run.inflight[x.id] = (ent[0], x, STAGE_INSTALLING, ent[3])
                self._waiters.setdefault(eid, []).append(x)
            return
        run.inflight[x.id] = (ent[0], x, STAGE_COMMIT, ent[3])
        self._send(x.destination, COMMIT(self.me, x))
        self._timer_set((MIGRATION_TIMEOUT, x.id), self._timeout)

    def _on_commit_response(self, m: msg.MigrationCommitResponse) -> None:
        """§7.3(g): the destination's answer to a commit."""
        ent = self._answered(m.migration, STAGE_COMMIT)
        if ent is None or m.sender != ent[1].destination:
            return
        x = ent[1]
        self._timer_cancel((MIGRATION_TIMEOUT, x.id))
        if m.ok:
            self._master_commit(x)
        else:
            self._fail(x, (x.destination,), "destination refused the commit")

    def _master_commit(self, x: MigrationInfo) -> None:
        """§7.3(g): the master commits ``x`` (its version of the partition is still
        ``x.initial``), finalizes where it took part, and publishes when the list is long."""
        run = self._run
        assert run is not None
        p = x.partition
        if self.versions.item(p) != x.initial:
            self._design.moved_under(self, x)
            return
        i = run.inflight.pop(x.id)[0]
        done = settled(x, SUCCESS)
        apply_row(self.replicas, p, done)
        self.versions[p] = x.final
        self.completed[done.id] = done
        self._mark(MarkName.MASTER_COMMITTED, done)
        self._finalize(done)
        run.finished(i, True)
        self._design.master_committed(self, done)

    def _hold_and_publish(self, x: MigrationInfo) -> None:
        """After a commit: a partition the master took through it takes no writes until
        every member knows (a new master that never heard of the commit would fail it
        and lose them); a list of ``publish_threshold`` entries is published (§7.6)."""
        if x.destination == self.me and x.destination_new_index == 0:
            self._unconfirmed[x.partition] = x.id
        if len(self.completed) >= self.config.publish_threshold and self._publish is None:
            self._publish_completed()

    def _fail(self, x: MigrationInfo, notify: tuple[int, ...], why: str) -> None:
        """§7.3(d), §7.2: ``x`` failed: its version bump, the list, the full table to
        ``notify``."""
        run = self._run
        assert run is not None
        ent = run.inflight.pop(x.id, None)
        p = x.partition
        self.versions[p] += x.increment + 1
        failed = settled(x, FAILED, final=self.versions.item(p))
        self.completed[failed.id] = failed
        self._mark(MarkName.MIGRATION_FAILED, failed, detail=why)
        act = self.active.get(p)
        if act is not None and act.id == x.id:
            self._finalize(failed)
        for m in sorted(set(notify)):
            if m != self.me and m in self.members:
                self._send(m, self._table_message())
        if ent is not None:
            run.finished(ent[0], False)

    # ------------------------------------------------------------------ publication (§7.6)
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
        self._timer_cancel(_PUBLISH_KEY)
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
        self._mark(MarkName.COMPLETED_EVICTED, detail=f"{len(ids)} migrations")

    def _on_table_ack(self, m: msg.PartitionTableAck) -> None:
        pass

    def _on_state_reply(self, m: msg.PartitionStateCheckReply) -> None:
        if not m.ok:
            self._send(m.sender, self._table_message())

    def _publish_table(self) -> None:
        self._told = set(self.members)
        self._mark(MarkName.TABLE_PUBLISHED)
        update = self._table_message()
        for m in self.members:
            if m != self.me:
                self._send(m, update)

    def _table_message(self) -> msg.PartitionTableUpdate:
        """The full table as one message (read-only copies, shared by every recipient)."""
        r, v = self.replicas.copy(), self.versions.copy()
        r.setflags(write=False)
        v.setflags(write=False)
        return msg.PartitionTableUpdate(self.me, r, v, self._list.entries())

    def _publish_completed(self) -> None:
        others = [m for m in self.members if m != self.me]
        ids = tuple(self.completed)
        if not ids:
            return
        if not others:                    # nobody else to tell: every member knows
            self._evict(ids)
            return
        self._publish = (ids, {m: None for m in others})
        self._timer_set(_PUBLISH_KEY, self._timeout)
        lst = self._list.entries()
        for m in others:
            self._send(m, PUBLISH(self.me, lst))

    # ------------------------------------------------------------------ the master loop
    def _master_step(self) -> None:
        """§7.1: the master loop, from its phase: drive the run, or (idle, a plan due,
        no pause) repair, then plan."""
        phase = self.phase
        if phase is RUNNING:
            self._drive()
            return
        if phase is not IDLE or not self._dirty or (
                self._paused_until is not None and self._now < self._paused_until):
            return
        if not self.initialized:
            if not self.data_members:
                return
            self._initialize()
        self._dirty = False
        waiting, repaired = self._design.repair(self)
        if waiting:
            return
        self._plan(repaired)

    def _initialize(self) -> None:
        P, R = self.replicas.shape
        ids = np.asarray(self.members, dtype=np.int64)
        lite = [m in self.lite for m in self.members]
        empty = np.full((P, R), -1, dtype=np.int32)
        dense = arrange(empty, _registry(len(ids), tuple(lite)), replica_count=R)
        self.replicas = ids_of(dense, ids)
        self.versions = (self.replicas >= 0).sum(axis=1).astype(np.int32)
        self.initialized = True
        self._publish_table()

    def view_table(self) -> tuple[NDArray[np.int32], NDArray[np.int64], Members]:
        """This node's table in view positions (member ``ids[i]`` is ``i``; -1 for a slot
        whose member is not in the view), the ids, and the view's member registry: what
        the master arranges and plans from."""
        return self._dense()

    def _dense(self, known: NDArray[np.int32] | None = None
               ) -> tuple[NDArray[np.int32], NDArray[np.int64], Members]:
        """The table in member-index form (view position), for the arranger and planner
        (``known``: that table, already made by :meth:`_repair` from the table as it is)."""
        ids = np.asarray(self.members, dtype=np.int64)
        registry = _registry(len(ids), tuple(m in self.lite for m in self.members))
        if known is not None:
            return known, ids, registry
        r = self.replicas
        top_id = int(ids.max(initial=-1))
        if top_id < 1 << 22 and is_table(r):   # one kernel pass through a lookup table
            at = np.full(top_id + 1, -1, dtype=np.int32)
            at[ids] = np.arange(len(ids), dtype=np.int32)
            return _scan.dense(r, at), ids, registry
        uniq, inv = np.unique(r, return_inverse=True)   # (ids too large for a lookup table)
        pos = {int(m): i for i, m in enumerate(self.members)}
        code = np.asarray([pos.get(int(u), -1) for u in uniq], dtype=np.int32)
        return np.ascontiguousarray(code[inv.reshape(r.shape)], dtype=np.int32), ids, registry

    def _repair(self) -> tuple[bool, NDArray[np.int32] | None]:
        """§7.7(a): empty departed/lite slots; start promotions. Returns (waiting for them,
        the repaired table in view positions when the one-pass kernel made it, else None)."""
        r, vs = self.replicas, self.versions
        top = max(self.members, default=-1)
        repaired: NDArray[np.int32] | None = None
        if top < 1 << 22 and is_table(r) and r.flags.writeable and vs.flags.writeable \
                and vs.dtype == np.int32 and vs.flags.c_contiguous and vs.shape == r.shape[:1]:
            # one kernel pass (§11): a data member's id reads its view position, any other
            # id -1; the pass clears those slots and writes the table in view positions
            cleared, need, repaired = _scan.repair_dense(r, vs,
                                                         _positions(self.members, self.lite))
        else:
            members = np.asarray(self.data_members, dtype=np.int32)
            bad = (r >= 0) & ~held_by(r, members)
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
            x = INFO((self.me, self._seq), p, -1, -1, -1, dest, idx, 0, self.me, v, v + 2,
                     ACTIVE, True)
            by_dest.setdefault(dest, []).append(x)
        self._enter(PROMOTING)
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
                                             self._list.entries()))
        self._timer_set((PROMOTION_TIMEOUT, dest), self._timeout)

    def _on_promotion_response(self, m: msg.PromotionCommitResponse) -> None:
        ent = self._promotions.get(m.sender)
        if ent is None or ent[0] != m.batch or ent[2] is not None:
            return
        self._timer_cancel((PROMOTION_TIMEOUT, m.sender))
        self._promotions[m.sender] = (ent[0], ent[1], bool(m.ok))
        self._promotions_maybe_done()

    def _promotions_maybe_done(self) -> None:
        """§7.7(d): every batch answered: apply or fail each promotion, publish."""
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
                    self._mark(MarkName.PROMOTION_COMMITTED, settled(x, SUCCESS))
                else:
                    self.versions[p] += 3
                    all_ok = False
                    self._mark(MarkName.MIGRATION_FAILED,
                               settled(x, FAILED, int(self.versions[p])), detail="promotion")
        self._promotions = {}
        self._enter(IDLE)
        self._publish_table()
        self._dirty = True
        if not all_ok:
            self._paused_until = self._now + self.config.retry_delay
            self._timer_set(_RETRY, self.config.retry_delay)

    def _plan(self, repaired: NDArray[np.int32] | None = None) -> None:
        """§7.1: arrange (§8), plan (§5), apply the instant decisions and run the rest."""
        if any(m not in self._told for m in self.members):   # joiners get the table first
            self._publish_table()
        dense, ids, members = self._dense(repaired)
        if not self.data_members:
            return
        with owned(dense):            # fresh arrays of this call: read without snapshots
            target = arrange(dense, members, replica_count=self.replicas.shape[1])
        self._design.plan(self, dense, target, ids)

    def _plan_migrations(self, dense: NDArray[np.int32], target: NDArray[np.int32],
                         ids: NDArray[np.int64]) -> None:
        """The planner's migrations from ``dense`` to ``target``: the instant ones at
        once, then publish, then the run (§6)."""
        with owned(dense, target):   # (the plan and its executor at once: docs/design.md §11)
            executor = Executor._planned(dense, target, self.config.max_parallel_migrations)
        plan = executor.plan
        if not len(plan):
            return
        instant = np.flatnonzero(plan.instant)
        if len(instant):
            after, self.versions = apply_migrations(dense, self.versions, plan[instant])
            self.replicas = ids_of(after, ids)
            self._publish_table()
        self._start_run(plan, executor, ids)

    def _start_run(self, plan: MigrationPlan, executor: Executor,
                   ids: NDArray[np.int64]) -> None:
        self._run = Run(plan, executor, ids)
        self._enter(RUNNING)
        self._drive()

    def _info(self, plan: MigrationPlan, i: int, ids: NDArray[np.int64]) -> MigrationInfo:
        """Plan row ``i`` as a migration of this master, from the partition's version now."""
        p, s, sci, sni, d, dci, dni = plan._columns[:, i].tolist()
        self._seq += 1
        v = self.versions.item(p)
        inc = 1 + (sni > -1) + (dci > -1)
        return INFO((self.me, self._seq), p, int(ids[s]) if s >= 0 else -1, sci, sni,
                    int(ids[d]), dci, dni, self.me, v, v + inc, ACTIVE, False)

    def _drive(self) -> None:
        """§6: start what the executor allows; end the run when nothing is left."""
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
            self._enter(IDLE)
            failed = bool(core.failed)
            if self._publish is None:
                self._publish_completed()
            self._dirty = True
            if failed:
                self._paused_until = self._now + self.config.retry_delay
                self._timer_set(_RETRY, self.config.retry_delay)

    def _start(self, i: int) -> None:
        """§7.3(a): the master starts plan row ``i`` (or drops it, §6.4)."""
        run = self._run
        assert run is not None
        x = self._info(run.plan, i, run.ids)
        p = x.partition
        owner = self.replicas.item(p, 0)
        members = self.members
        if not 0 <= i < run.core.n or run.core.start(i) != _ACCEPTED:
            run.executor.started(i)           # raises the refusal (or the bad row)
        run.changes += 1
        if (owner == -1 or owner not in members or x.destination not in members
                or (x.source >= 0 and x.source not in members)):
            run.finished(i, False)
            self._mark(MarkName.MIGRATION_FAILED, x,
                       detail="dropped at start: a participant is gone")
            return
        run.inflight[x.id] = (i, x, STAGE_REQUEST, owner)
        self._mark(MarkName.MIGRATION_STARTED, x)
        self._send(owner, REQUEST(self.me, x, self._list.of_partition(p)))
        self._timer_set((MIGRATION_TIMEOUT, x.id), self._timeout)

    # ------------------------------------------------------------------ recovery (§7.8)
    def _start_recovery(self) -> None:
        self._run = None
        self._promotions = {}
        self._publish = None
        self._enter(RECOVERING)
        others = [m for m in self.members if m != self.me]
        self._fetching = {m: None for m in others}
        for m in others:
            self._send(m, msg.FetchPartitionState(self.me))
            self._timer_set((FETCH_TIMEOUT, m), self._timeout)
        self._maybe_finish_recovery()

    def _on_state(self, m: msg.PartitionStateReply) -> None:
        if self._fetching is None or m.sender not in self._fetching:
            return
        if self._fetching[m.sender] is not None:
            return
        self._fetching[m.sender] = m
        self._timer_cancel((FETCH_TIMEOUT, m.sender))
        self._maybe_finish_recovery()

    def _maybe_finish_recovery(self) -> None:
        """§7.8(c)–(e): every member answered: merge, install, publish."""
        f = self._fetching
        if f is None or any(v is None for v in f.values()):
            return
        self._fetching = None
        self._enter(IDLE)
        P, R = self.replicas.shape
        have = self.initialized
        reps = self.replicas.copy()
        vers = self.versions.copy() if have else np.full(P, -1, dtype=np.int32)
        completed = dict(self.completed)
        active = {x.id: x for x in self.active.values()}
        for m in sorted(f):
            have = self._merge_state(f[m], m, reps, vers, completed, active) or have
        self._mark(MarkName.TABLES_FETCHED, detail=f"{len(f)} members")
        if not have:
            self._dirty = True
            return
        for x in sorted(active.values(), key=lambda y: y.id):
            if x.id not in completed:
                completed[x.id] = settled(x, FAILED, final=x.initial + x.increment + 1)
        for x in completed.values():
            if x.status == FAILED:
                vers[x.partition] = max(int(vers[x.partition]), x.final)
        self.initialized = True
        self.replicas, self.versions = reps, vers.astype(np.int32)
        self._list.replace(completed)
        for x in completed.values():
            self._finalize(x)
        self._mark(MarkName.RECOVERY_PUBLISHED)
        self._publish_table()
        self._dirty = True

    def _merge_state(self, st: msg.PartitionStateReply | None, m: int,
                     reps: NDArray[np.int32], vers: NDArray[np.int32],
                     completed: dict[MigrationId, MigrationInfo],
                     active: dict[MigrationId, MigrationInfo]) -> bool:
        """§7.8(c): merge member ``m``'s answer into the recovery's table, list and
        active migrations (in place); whether it brought a table."""
        P, R = reps.shape
        if st is None or not st.initialized or st.replicas is None or st.versions is None:
            return False
        if st.replicas.shape != (P, R) or st.versions.shape != (P,) \
                or st.replicas.dtype != np.int32 or st.versions.dtype != np.int32 \
                or self._bad_table(np.ascontiguousarray(st.replicas),
                                   np.ascontiguousarray(st.versions), None, f"m{m}'s table"):
            return False
        newer = st.versions > vers
        same = (st.versions == vers) & (st.replicas != reps).any(axis=1)
        self.diverged += int(same.sum())
        reps[newer] = st.replicas[newer]
        vers[newer] = st.versions[newer]
        for x in st.completed:
            if not self._check_migration(x) and x.status != ACTIVE:
                completed.setdefault(x.id, x)
        for x in st.active:
            if not self._check_migration(x):
                active.setdefault(x.id, x)
        return True
