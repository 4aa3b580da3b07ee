"""Parallel execution schedule of a migration plan (docs/design.md §6, Hazelcast 4.1+).

Migrations of one partition run strictly one at a time, in queue order. Whenever
migrations complete, the master absorbs every completion due and examines the queue
heads in priority order (Hazelcast: partition order), starting each whose destination and
*source endpoint* have fewer than ``max_parallel_migrations`` migrations in flight; the
source endpoint is the source when ``source_current_index == 0``, otherwise the
partition's owner at that moment (backups copy from the owner). Instant decisions
(REMOVE, lost-owner assignment) are applied at once: they start and finish at 0.

With unit durations every completion of a round arrives at once and the schedule is
Hazelcast's rounds (``start_round``, ``rounds``). With real durations (``durations`` per
plan row, or ``sizes`` per partition and a ``bandwidth``) it is an event-driven simulation
of the same loop, reporting the ``makespan`` against a proven ``lower_bound``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast import _check
from hzfast._typing import TableLike
from hzfast.migration import _schedule
from hzfast.migration.plan import MigrationPlan

__all__ = ["SCHEDULE_POLICIES", "Schedule", "schedule"]

_PAIR_TABLE_MEMBERS = 1024   # up to this many members, pairs are numbered through a table

#: ``"hazelcast"``: queue heads are examined in partition order, exactly as Hazelcast's
#: migration manager does. ``"critical-path"``: heads whose remaining queue (this
#: migration and those after it in its partition) takes longest go first; of the schedule
#: this gives and Hazelcast's, the one with the shorter makespan is returned, so it is
#: never worse than ``"hazelcast"`` on the same input.
SCHEDULE_POLICIES = ("hazelcast", "critical-path")


class Schedule(NamedTuple):
    """Result of :func:`schedule`."""

    start_round: NDArray[np.int32] | None  #: (N,): start round, -1 instant (unit durations; else None)
    rounds: int | None              #: rounds until every queue is empty (unit durations; else None)
    max_parallel_migrations: int    #: the per-member limit used
    start: NDArray[np.float64]      #: (N,): start time per plan row (instant: 0)
    finish: NDArray[np.float64]     #: (N,): finish time per plan row (instant: 0)
    makespan: float                 #: finish time of the last migration (0 for none)
    peak_concurrency: NDArray[np.int32]  #: (M,): most migrations in flight per member
    lower_bound: float              #: no schedule under the limit can be shorter (see schedule)
    policy: str                     #: the policy whose schedule this is

    def in_round(self, r: int) -> NDArray[np.intp]:
        """Plan positions (ndarray[intp]) of the migrations started in round ``r``."""
        return np.flatnonzero(self._rounds_only() == r)

    def per_round(self) -> NDArray[np.int64]:
        """ndarray[int64] (rounds,): migrations started per round."""
        s = self._rounds_only()
        assert self.rounds is not None   # unit durations: start_round and rounds
        return np.bincount(s[s >= 0], minlength=self.rounds).astype(np.int64)

    def _rounds_only(self) -> NDArray[np.int32]:
        if self.start_round is None:
            raise ValueError("rounds exist for unit durations only; use start and finish")
        return self.start_round


def _durations(plan: MigrationPlan, durations: ArrayLike | None, sizes: ArrayLike | None,
               bandwidth: float | None, P: int) -> NDArray[np.float64] | None:
    """Per plan row durations (float64), or None for unit durations."""
    if durations is not None and (sizes is not None or bandwidth is not None):
        raise ValueError("give durations, or sizes and bandwidth, not both")
    if durations is not None:
        dur = _check.as_float_column(durations, "durations", len(plan), "plan row")
    elif sizes is not None or bandwidth is not None:
        if sizes is None or bandwidth is None:
            raise ValueError("sizes and bandwidth go together")
        size = _check.as_float_column(sizes, "sizes", P, "partition")
        if not np.all(np.isfinite(size)) or (size < 0).any():
            raise ValueError("sizes must be finite and >= 0")
        if isinstance(bandwidth, (bool, np.bool_, np.complexfloating)) \
                or not isinstance(bandwidth, (int, float, np.number)) \
                or not np.isfinite(bandwidth) or bandwidth <= 0:
            raise ValueError(f"bandwidth must be a positive number (bytes/s), got {bandwidth!r}")
        if len(plan) and int(plan.partition_id[-1]) >= P:      # ids ascend
            raise ValueError(f"plan does not fit the table: partition id "
                             f"{int(plan.partition_id[-1])} >= {P}")
        dur = size[plan.partition_id] / float(bandwidth)
    else:
        return None
    if not np.all(np.isfinite(dur)) or (dur < 0).any():
        raise ValueError("durations must be finite and >= 0")
    dur[plan.instant] = 0.0
    return dur


def _remaining_work(work: NDArray[np.float64], qstart: NDArray[np.intp]) -> NDArray[np.float64]:
    """Per queued row (in queue order): its work plus the work after it in its queue."""
    suffix = np.append(np.cumsum(work[::-1])[::-1], 0.0)      # suffix sums, then 0
    queue_end = np.repeat(qstart[1:], np.diff(qstart))
    remaining: NDArray[np.float64] = suffix[:-1] - suffix[queue_end]
    return remaining


def schedule(plan: MigrationPlan, current: TableLike | None = None, *,
             max_parallel_migrations: int = 10, durations: ArrayLike | None = None,
             sizes: ArrayLike | None = None, bandwidth: float | None = None,
             policy: str = "hazelcast") -> Schedule:
    """When Hazelcast's migration manager would run a plan's migrations.

    Parameters
    ----------
    plan : MigrationPlan
        Per partition in queue order (e.g. from ``plan_migrations(..., prioritize=True)``);
        runs of equal ``partition_id`` are the queues.
    current : ndarray[int32] of shape (P, R) or PartitionTable, optional
        The table the plan starts from (needed to know partition owners). Default: the
        plan's ``target`` with the plan undone.
    max_parallel_migrations : int, default 10
        Per-member limit of migrations in flight (as destination or source endpoint).
    durations : array-like of float, shape (N,), optional
        Time each plan row takes (instant rows take 0). Default: one unit each.
    sizes : array-like of float, shape (P,), optional
        Bytes per partition; with ``bandwidth`` (bytes/s per migration) every queued
        migration of partition p takes ``sizes[p] / bandwidth``.
    bandwidth : float, optional
        See ``sizes``.
    policy : {"hazelcast", "critical-path"}, default "hazelcast"
        The order in which queue heads are examined (:data:`SCHEDULE_POLICIES`).

    Returns
    -------
    Schedule
        ``start``/``finish`` ndarray[float64] (N,), ``makespan``, ``peak_concurrency``
        ndarray[int32] (M,), ``lower_bound``; with unit durations also ``start_round``
        ndarray[int32] (N,) (-1 for instant decisions) and ``rounds``.

    Notes
    -----
    ``lower_bound`` is the larger of (a) the longest queue, sum of its durations: one
    partition's migrations run one after another; and (b) for every member, the summed
    durations of the migrations it takes part in (as destination or source endpoint)
    divided by ``max_parallel_migrations``: it never runs more than that many at once, so
    their work cannot be done faster. Both hold for any order, so no schedule is shorter.

    Raises
    ------
    TypeError
        ``plan`` is not a MigrationPlan, or a wrong dtype.
    ValueError
        ``max_parallel_migrations < 1``, an unknown policy, durations/sizes of the wrong
        shape or negative, no ``current`` and no ``plan.target``, or a plan that does not
        fit the table.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1], [0, 1]], dtype=np.int32)
    >>> plan = hzfast.plan_migrations(cur, np.array([[2, 1], [3, 1]], dtype=np.int32))
    >>> s = hzfast.schedule(plan, max_parallel_migrations=1)
    >>> s.start_round.tolist(), s.rounds      # both copy from member 0: one at a time
    ([0, 1], 2)
    >>> s = hzfast.schedule(plan, max_parallel_migrations=1, durations=[3.0, 0.5])
    >>> s.start.tolist(), s.makespan, s.lower_bound
    ([0.0, 3.0], 3.5, 3.5)
    """
    if not isinstance(plan, MigrationPlan):
        raise TypeError(f"plan must be a MigrationPlan, got {type(plan).__name__}")
    limit = _check.check_int(max_parallel_migrations, "max_parallel_migrations",
                             minimum=1, maximum=2**31 - 1)
    if len(plan) >= 2**31:
        raise ValueError(f"plan has {len(plan)} decisions; schedule takes fewer than 2**31")
    if not isinstance(policy, str) or policy not in SCHEDULE_POLICIES:
        raise ValueError(f"policy must be one of {SCHEDULE_POLICIES}, got {policy!r}")
    if current is not None:
        # a private, writable snapshot, validated after it was taken: prepare() replays
        # the plan on it, and every size below comes from it, never from the caller's array
        rows, _ = _check.check_table(current, "current", writable=True)
        from_final = False
        if plan.target is not None and plan.target.shape != rows.shape:
            raise ValueError(f"plan is for a table of shape {plan.target.shape}, "
                             f"current has shape {rows.shape}")
    elif plan.target is not None:
        rows = np.array(plan.target, dtype=np.int32, copy=True, order="C")
        from_final = True
    else:
        raise ValueError("schedule needs current= when the plan has no target")
    given = _durations(plan, durations, sizes, bandwidth, rows.shape[0])
    unit = given is None
    dur = np.where(plan.instant, 0.0, 1.0) if given is None else given
    # every member is < MAX_MEMBER_COUNT (validated table, MigrationPlan): arrays sized
    # by top stay small
    top = max(plan.max_member(), int(rows.max()) if rows.size else -1)
    ok, endpoint, qidx, qstart = _schedule.prepare(
        rows, plan._columns, plan.instant.view(np.uint8), top + 1, from_final)
    if not ok:
        raise ValueError("plan does not fit the table (partition, index or member out of "
                         "range)")
    assert endpoint is not None and qidx is not None and qstart is not None   # ok: arrays
    # queued rows with the same destination and endpoint form a pair (equally eligible)
    if top < _PAIR_TABLE_MEMBERS:
        pair, pairs = _schedule.pair_ids(plan._columns, endpoint, qidx, top + 1)
    else:
        pair = np.zeros(len(plan), dtype=np.intp)
        codes = plan.destination[qidx].astype(np.int64) * (top + 2) + (endpoint[qidx] + 1)
        uniq, pair[qidx] = np.unique(codes, return_inverse=True)
        pairs = len(uniq)
    involved = np.zeros(top + 2, dtype=bool)        # members of queued migrations (+ -1)
    involved[plan.destination[qidx]] = True
    involved[endpoint[qidx]] = True
    active = int(np.count_nonzero(involved[:top + 1]))
    equal = unit or bool(len(qidx) == 0 or (dur[qidx] == dur[qidx[0]]).all())

    def simulate(rank: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                   NDArray[np.int32], NDArray[np.float64], float]:
        return _schedule.simulate(plan._columns, endpoint, qidx, qstart, pair, pairs, active,
                                  dur, equal, rank, limit, top + 1)

    # a head's rank (smaller is examined first); none: its queue's position (Hazelcast)
    start, finish, peak, work, chain = simulate(np.empty(0, dtype=np.int64))
    used = "hazelcast"
    if policy == "critical-path":
        # the longest remaining queue first, ties in Hazelcast's order
        order = np.lexsort((np.repeat(np.arange(len(qstart) - 1), np.diff(qstart)),
                            -_remaining_work(dur[qidx], qstart)))
        rank = np.zeros(len(plan), dtype=np.int64)
        rank[qidx[order]] = np.arange(len(order))
        alt = simulate(rank)
        if alt[1].max(initial=0.0) < finish.max(initial=0.0):
            start, finish, peak = alt[:3]
            used = "critical-path"
    makespan = float(finish.max(initial=0.0))
    bound = max(chain, float(work.max(initial=0.0)) / limit)   # see Notes
    start_round = rounds = None
    if unit:
        start_round = np.where(plan.instant, -1, start).astype(np.int32)
        rounds = round(makespan)
    return Schedule(start_round, rounds, limit, start, finish, makespan, peak[:top + 1],
                    bound, used)
