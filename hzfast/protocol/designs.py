"""The two designs a node can be built with (``Config.design``).

A node asks its design at the few steps where the safe design (docs/design.md §7.1–§7.9,
Hazelcast 3.7 and later) and the legacy one (§7.10, before 3.7, which lost data in
Hazelcast's issue #5444) differ. :class:`SafeDesign` hands each step to the node's own
method for it; :class:`LegacyDesign` holds the legacy rules, so the node's modules have no
legacy branch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from hzfast.migration.executor import Executor
from hzfast.migration.plan import MigrationPlan
from hzfast.protocol import messages as msg
from hzfast.protocol.common import RESULT, TRANSFER, apply_fitting_row, apply_row, ids_of
from hzfast.protocol.kinds import (
    CLEAR,
    COPY,
    SYNC,
    MarkName,
    Stage,
)

if TYPE_CHECKING:
    from hzfast.protocol.messages import MigrationInfo

#: A :class:`hzfast.protocol.Node` (its parts pass themselves, so it is typed loosely here)
Node = Any

__all__ = ["DESIGNS", "LegacyDesign", "SafeDesign"]

DESIGNS = ("safe", "legacy")


class SafeDesign:
    """Hazelcast 3.7+: commit on the destination, then the master, then the source."""

    name = "safe"
    recovers = True                   #: a new master fetches every member's table (§7.8)
    keeps_last_copy = True            #: a source keeps a copy that may be the last (§7.3(i))
    copy_kind = COPY       #: the owner's data effect for a migration (§7.3(c))

    def start(self, node: Node) -> None:
        """A node is built."""

    def after_event(self, node: Node) -> None:
        """After each event the node handled."""

    def members_left(self, node: Node, gone: set[int]) -> None:
        """Members left the node's view (the master repairs, §7.7)."""

    @staticmethod
    def apply_entry(table: NDArray[np.int32], p: int, x: MigrationInfo) -> bool:
        """Apply a committed ``x`` to row ``p`` if it fits the row (§7.5)."""
        return apply_fitting_row(table, p, x)

    def owner_refusal(self, node: Node, m: msg.MigrationRequest, x: MigrationInfo) -> str:
        """§7.3(b): why the owner refuses the request ("" if it takes it)."""
        why: str = node._owner_refusal(m, x)
        return why

    def copied(self, node: Node, x: MigrationInfo, p: int) -> None:
        """§7.3(c): the owner's copy arrived: the transfer registers it on the destination."""
        node._send(x.destination, TRANSFER(node.me, x, node._carried.pop(p, ())))

    def table_moved(self, node: Node, old: NDArray[np.int32],
                    updated: NDArray[np.bool_]) -> None:
        """§7.4: rows a newer table changed; copies it no longer lists here go."""
        node._drop_stale(old, updated)

    def owner_agreed(self, node: Node, ent: tuple[int, MigrationInfo, Stage, int]) -> None:
        """§7.3(e): the owner copied the data: commit on the destination first."""
        node._commit_on_destination(ent)

    def moved_under(self, node: Node, x: MigrationInfo) -> None:
        """The master's version of ``x``'s partition moved while ``x`` ran: impossible here
        (the master starts one migration of a partition at a time and edits alone)."""
        raise AssertionError(f"partition {x.partition} moved under migration {x}")

    def master_committed(self, node: Node, x: MigrationInfo) -> None:
        """§7.3(g): after the master's commit: write hold, publication."""
        node._hold_and_publish(x)

    def repair(self, node: Node) -> tuple[bool, NDArray[np.int32] | None]:
        """§7.7: repair before planning."""
        done: tuple[bool, NDArray[np.int32] | None] = node._repair()
        return done

    def plan(self, node: Node, dense: NDArray[np.int32], target: NDArray[np.int32],
             ids: NDArray[np.int64]) -> None:
        """§5, §6: the planner's migrations to ``target``."""
        node._plan_migrations(dense, target, ids)


class LegacyDesign(SafeDesign):
    """Hazelcast before 3.7 (docs/design.md §7.10): owner moves alone transfer data, each
    member acts alone on the table it sees, no recovery, no destination commit."""

    name = "legacy"
    recovers = False
    keeps_last_copy = False
    copy_kind = SYNC

    def start(self, node: Node) -> None:
        self.seen = node.replicas.copy()   # the table the member last acted on

    def after_event(self, node: Node) -> None:
        """§7.10(a)–(b): each member acts alone on the table it now sees."""
        if not node.initialized:
            return
        seen = self.seen
        if not np.array_equal(seen, node.replicas):
            self.seen = node.replicas.copy()
            self._finalize(node, seen, node.replicas)

    def members_left(self, node: Node, gone: set[int]) -> None:
        """§7.10(b): every member drops leavers locally and shifts the rest of each row up."""
        reps = node.replicas
        hit = np.isin(reps, np.asarray(sorted(gone), dtype=np.int32)) & (reps >= 0)
        rows = np.flatnonzero(hit.any(axis=1))
        for p in rows.tolist():
            keep = [int(v) for v, h in zip(reps[p], hit[p]) if v >= 0 and not h]
            new = keep + [-1] * (reps.shape[1] - len(keep))
            node.versions[p] += int((np.asarray(new, dtype=np.int32) != reps[p]).sum())
            reps[p] = new

    @staticmethod
    def apply_entry(table: NDArray[np.int32], p: int, x: MigrationInfo) -> bool:
        """Members shift leavers out alone, so equal versions need not mean equal rows:
        no fit check (§7.5)."""
        apply_row(table, p, x)
        return True

    def owner_refusal(self, node: Node, m: msg.MigrationRequest, x: MigrationInfo) -> str:
        """The owner's checks without the completed list and the version (§7.10(a))."""
        p = x.partition
        if x.source_current_index == 0 and x.source != node.me:
            return "the source of an owner migration must be the owner"
        if not node.initialized or node.replicas.item(p, 0) != node.me:
            return "not the owner"
        if x.destination not in node.members:
            return "destination is not a member"
        if node.active.get(p) is not None:
            return "another migration is active"
        return ""

    def copied(self, node: Node, x: MigrationInfo, p: int) -> None:
        """No registration on the destination: the data was applied on arrival."""
        node._send(x.master, RESULT(node.me, x, True, ""))

    def table_moved(self, node: Node, old: NDArray[np.int32],
                    updated: NDArray[np.bool_]) -> None:
        """Copies go in :meth:`after_event`, from the table the member sees."""

    def owner_agreed(self, node: Node, ent: tuple[int, MigrationInfo, Stage, int]) -> None:
        """The master commits at once."""
        node._master_commit(ent[1])

    def moved_under(self, node: Node, x: MigrationInfo) -> None:
        """Leavers are shifted out locally, so the partition can move under a migration."""
        node._fail(x, (), "the partition moved under the migration")

    def master_committed(self, node: Node, x: MigrationInfo) -> None:
        """Every commit publishes the table."""
        node._publish_table()

    def repair(self, node: Node) -> tuple[bool, NDArray[np.int32] | None]:
        members = np.asarray(node.data_members, dtype=np.int32)
        bad = (node.replicas >= 0) & ~np.isin(node.replicas, members)
        if bad.any():
            self.members_left(node, {int(v) for v in node.replicas[bad].tolist()})
        return False, None

    def plan(self, node: Node, dense: NDArray[np.int32], target: NDArray[np.int32],
             ids: NDArray[np.int64]) -> None:
        """§7.10(a): backup slots take their target at once; owner changes migrate."""
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
        node.versions += n_changed
        node.replicas = ids_of(interim, ids)
        node._publish_table()
        if not len(rows):
            return
        n = len(rows)
        plan = MigrationPlan(rows, src, np.zeros(n, np.int32), sni, target[rows, 0],
                             np.full(n, -1, np.int32), np.zeros(n, np.int32))
        node._start_run(plan, Executor(plan, np.ascontiguousarray(interim, dtype=np.int32),
                                       node.config.max_parallel_migrations), ids)

    @staticmethod
    def _finalize(node: Node, old: NDArray[np.int32], new: NDArray[np.int32]) -> None:
        """§7.10(a)–(b): clear what the member no longer holds, ask for what it now holds."""
        bc = node._bc
        me = node.me
        was = (old[:, :bc + 1] == me).any(axis=1)
        now = (new[:, :bc + 1] == me).any(axis=1)
        lost_owner = (old[:, 0] == me) & (new[:, 0] != me)
        clear = was & (~now | lost_owner)
        for p in np.flatnonzero(clear).tolist():
            node._effect(CLEAR, p)
            node._mark(MarkName.SOURCE_FINALIZED, partition=p)
        fresh = now & (new[:, 0] != me) & (~was | lost_owner)
        for p in np.flatnonzero(fresh).tolist():
            owner = int(new[p, 0])
            if owner >= 0 and owner != me:
                node._send(owner, msg.ReplicaSyncRequest(node.me, p))
