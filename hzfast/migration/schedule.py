"""Parallel execution schedule of a migration plan (docs/design.md §6, Hazelcast 4.1+).

Migrations of one partition run strictly one at a time, in queue order. Each round
(every migration takes one time unit) scans the non-empty queues in partition order and
starts the head of a queue when its destination and its *source endpoint* each have
fewer than ``max_parallel_migrations`` migrations in flight in that round; the source
endpoint is the source when ``source_current_index == 0``, otherwise the partition's
owner at that moment (backups copy from the owner). Instant decisions (REMOVE,
lost-owner assignment) are applied at once and not scheduled.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hzfast import _check
from hzfast.migration import _schedule
from hzfast.migration.plan import MigrationPlan

__all__ = ["Schedule", "schedule"]


class Schedule(NamedTuple):
    """Result of :func:`schedule`."""

    start_round: np.ndarray        #: ndarray[int32] (N,): round each decision starts; -1 instant
    rounds: int                    #: number of rounds until every queue is empty
    max_parallel_migrations: int   #: the per-member limit used

    def in_round(self, r: int) -> np.ndarray:
        """Plan positions (ndarray[intp]) of the migrations started in round ``r``."""
        return np.flatnonzero(self.start_round == r)

    def per_round(self) -> np.ndarray:
        """ndarray[int64] (rounds,): migrations started per round."""
        s = self.start_round[self.start_round >= 0]
        return np.bincount(s, minlength=self.rounds).astype(np.int64)


def schedule(plan, *, max_parallel_migrations: int = 10, current=None) -> Schedule:
    """Rounds in which Hazelcast's migration manager would run a plan's migrations.

    Parameters
    ----------
    plan : MigrationPlan
        Per partition in queue order (e.g. from ``plan_migrations(..., prioritize=True)``);
        runs of equal ``partition_id`` are the queues, scanned in plan order.
    max_parallel_migrations : int, default 10
        Per-member limit of migrations in flight (as destination or source endpoint).
    current : ndarray[int32] of shape (P, R) or PartitionTable, optional
        The table the plan starts from (needed to know partition owners). Default: the
        plan's ``target`` with the plan undone.

    Returns
    -------
    Schedule
        ``start_round`` ndarray[int32] (N,) (-1 for instant decisions) and ``rounds``.

    Raises
    ------
    TypeError
        ``plan`` is not a MigrationPlan, or a wrong dtype.
    ValueError
        ``max_parallel_migrations < 1``, no ``current`` and no ``plan.target``, or a plan
        that does not fit the table.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1], [0, 1]], dtype=np.int32)
    >>> plan = hzfast.plan_migrations(cur, np.array([[2, 1], [3, 1]], dtype=np.int32))
    >>> s = hzfast.schedule(plan, max_parallel_migrations=1)
    >>> s.start_round.tolist(), s.rounds      # both copy from member 0: one at a time
    ([0, 1], 2)
    """
    if not isinstance(plan, MigrationPlan):
        raise TypeError(f"plan must be a MigrationPlan, got {type(plan).__name__}")
    limit = _check.check_int(max_parallel_migrations, "max_parallel_migrations",
                             minimum=1, maximum=2**31 - 1)
    if current is not None:
        rows, _ = _check.check_table(current, "current")
        from_final = False
        if plan.target is not None and plan.target.shape != rows.shape:
            raise ValueError(f"plan is for a table of shape {plan.target.shape}, "
                             f"current has shape {rows.shape}")
    elif plan.target is not None:
        rows = plan.target
        from_final = True
    else:
        raise ValueError("schedule needs current= when the plan has no target")
    top = max(plan.max_member(), int(rows.max()) if rows.size else -1)
    work = np.array(rows, dtype=np.int32, copy=True, order="C")
    rounds, start = _schedule.schedule(work, plan._columns, plan.instant.view(np.uint8),
                                       limit, top + 1, from_final)
    if rounds < 0:
        raise ValueError("plan does not fit the table (partition, index or member out of "
                         "range)")
    return Schedule(start, int(rounds), limit)
