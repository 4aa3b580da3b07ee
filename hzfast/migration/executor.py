"""The master's parallel-execution step function (docs/design.md §6, Hazelcast 4.1).

:func:`hzfast.schedule` simulates the master's migration loop offline; :class:`Executor` is
the same loop cut into the steps a running master takes: ask which migrations to start
(:meth:`Executor.ready`), report that they started (:meth:`Executor.started`) and, later,
how each ended (:meth:`Executor.finished`). Driven in unit rounds (start all of ``ready()``,
then finish them all, successfully) it reproduces ``schedule(plan, current=...,
max_parallel_migrations=k).start_round`` exactly.

Rules (§6): instant decisions (REMOVE, lost-owner assignment) never enter the queues; the
queued rows of one partition run one at a time in plan order; a member takes part in at
most ``max_parallel_migrations`` in-flight migrations as destination or source endpoint;
queue heads are examined in partition order (§6.1); a failed migration stops new starts,
while the ones in flight still finish (§6.5).

**Source endpoint.** The source when ``source_current_index == 0``, otherwise the owner of
the partition in the master's table when the row starts. That table is ``current`` with the
partition's earlier plan rows applied: a row starts only after every earlier queued row of
its partition finished successfully (after a failure nothing starts), and the instant rows
take effect in plan order among them, as ``schedule()`` replays them (§6.3). So the
endpoint is known from the replay, and :meth:`Executor.endpoint` reports it.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from hzfast import _check
from hzfast._typing import TableLike
from hzfast.migration import _apply, _executor
from hzfast.migration.plan import MigrationPlan
from hzfast.migration.planner import _plan_with_endpoints

__all__ = ["Executor"]

_NO_OWNER = np.empty(0, dtype=np.int32)     # the owner column when the planner gave endpoints

_REFUSALS = {
    _executor.ANSWER_IS_INSTANT: "it is an instant decision (never queued)",
    _executor.ANSWER_NOT_HEAD: "an earlier migration of its partition has not finished",
    _executor.ANSWER_STOPPED: "the run has stopped (a migration failed, or stop() was called)",
    _executor.ANSWER_DESTINATION_FULL: "its destination is at max_parallel_migrations",
    _executor.ANSWER_ENDPOINT_FULL: "its source endpoint is at max_parallel_migrations",
}


class Executor:
    """Run a migration plan the way Hazelcast's master does, one step at a time.

    Parameters
    ----------
    plan : MigrationPlan
        Decisions per partition in queue order (``plan_migrations(..., prioritize=True)``);
        runs of equal ``partition_id`` are the queues.
    current : ndarray[int32] of shape (P, R) or PartitionTable, optional
        The table the plan starts from (copied; never modified). Default: the plan's
        ``target`` with the plan undone.
    max_parallel_migrations : int, default 10
        Per-member limit of in-flight migrations (as destination or source endpoint).

    Attributes
    ----------
    plan : MigrationPlan
        The plan (immutable).
    max_parallel_migrations : int
        The limit.

    Raises
    ------
    TypeError
        ``plan`` is not a MigrationPlan; a table or limit of the wrong type.
    ValueError
        ``max_parallel_migrations < 1``; no ``current`` and no ``plan.target``; a table of
        another shape than ``plan.target``; partitions not in ascending order; a decision
        that does not fit the table as the plan's earlier decisions leave it.

    Notes
    -----
    Rows are plan positions (``0 <= i < len(plan)``). A row is *eligible* when it is queued
    (not instant), waiting, heads its partition's queue (every earlier queued row of the
    partition finished), nothing has failed, and its destination and source endpoint are
    both below the limit. :meth:`started` accepts exactly the eligible rows; any other call
    that does not fit the state (finishing a row that is not in flight, starting one that is
    not eligible, an index outside the plan) raises ValueError and changes nothing.

    Cost: :meth:`started` and :meth:`finished` are O(log N); :meth:`ready` examines only the
    best head of each (destination, endpoint) pair whose members are below the limit, so a
    whole run is O((N + parkings) log N), like :func:`hzfast.schedule` (docs/design.md §6.3).

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1], [0, 1]], dtype=np.int32)
    >>> plan = hzfast.plan_migrations(cur, np.array([[2, 1], [3, 1]], dtype=np.int32))
    >>> ex = hzfast.migration.Executor(plan, cur, max_parallel_migrations=1)
    >>> ex.ready().tolist()          # both copy from member 0: one at a time
    [0]
    >>> ex.started(0); ex.ready().tolist(), ex.in_flight.tolist()
    ([], [0])
    >>> ex.finished(0, True); ex.ready().tolist()
    [1]
    >>> ex.started(1); ex.finished(1, False); ex.done, ex.failed
    (True, True)
    """

    __slots__ = ("_core", "_endpoint", "_n", "max_parallel_migrations", "plan")

    def __init__(self, plan: MigrationPlan, current: TableLike | None = None,
                 max_parallel_migrations: int = 10) -> None:
        if not isinstance(plan, MigrationPlan):
            raise TypeError(f"plan must be a MigrationPlan, got {type(plan).__name__}")
        limit = _check.check_int(max_parallel_migrations, "max_parallel_migrations",
                                 minimum=1, maximum=2**31 - 1)
        n = len(plan)
        if n >= 2**31:
            raise ValueError(f"plan has {n} decisions; Executor takes fewer than 2**31")
        pid = plan.partition_id
        if n > 1:
            bad = _executor.first_descent(pid)
            if bad >= 0:
                raise ValueError(f"plan must list its partitions in ascending order (one "
                                 f"queue each); row {bad} has partition {int(pid[bad])} "
                                 f"after {int(pid[bad - 1])}")
        if current is not None:
            rows, _ = _check.check_table(current, "current")
            from_final = False
            if plan.target is not None and plan.target.shape != rows.shape:
                raise ValueError(f"plan is for a table of shape {plan.target.shape}, "
                                 f"current has shape {rows.shape}")
            # every decision must match the table as the earlier ones leave it
            status, bad = _apply.apply(rows.copy(), np.zeros(rows.shape[0], np.int32),
                                       plan._columns)
            if status:
                raise ValueError(
                    f"plan does not fit current: migration {bad} (partition "
                    f"{int(pid[bad])}, decision {plan[bad].decision}) cannot be applied: "
                    f"{_check.decision_problem(status)}")
        elif plan.target is not None:
            rows = plan.target          # immutable; the kernel follows its owner slots back
            from_final = True
        else:
            raise ValueError("Executor needs current= when the plan has no target")
        # the endpoints need only slot 0 of each partition (docs/design.md §11): the kernel
        # reads that column of the private snapshot, or of the plan's own (frozen) target.
        # A plan with a target was range-checked against the target's shape when it was
        # made (and ``current`` has that shape), so the kernel need not check it again.
        self._build(plan, limit, rows[:, 0], rows.shape[1], from_final,
                    checked=plan.target is not None)

    @classmethod
    def _planned(cls, current: TableLike, target: TableLike, max_parallel_migrations: int,
                 *, prioritize: bool = True) -> Executor:
        """Plan ``current`` -> ``target`` and build the executor of that plan, for the
        master's planning step (docs/design.md §11): the planner writes each decision's
        source endpoint beside it, so the executor reads no table, and as the plan is the
        one just made its decisions are not checked again. ``.plan`` has no ``target``
        (the step reads only the decisions; the kernel writes no (P, R) copy). Raises as
        :func:`hzfast.plan_migrations`, and for ``max_parallel_migrations`` as the
        constructor."""
        limit = _check.check_int(max_parallel_migrations, "max_parallel_migrations",
                                 minimum=1, maximum=2**31 - 1)
        plan, endpoint = _plan_with_endpoints(current, target, prioritize=prioritize,
                                              keep_target=False)
        self = object.__new__(cls)
        # replica_count is read only for unchecked decisions, and the endpoints are given
        self._build(plan, limit, _NO_OWNER, 1, False, checked=True, endpoints=endpoint)
        return self

    def _build(self, plan: MigrationPlan, limit: int, owner: NDArray[np.int32],
               replica_count: int, from_final: bool, checked: bool,
               endpoints: NDArray[np.int32] | None = None) -> None:
        ok, endpoint, queue, qidx, qstart, pair, pairs, members, active = _executor.prepare(
            plan._columns, plan.instant.view(np.uint8), owner, replica_count, from_final,
            checked, endpoints)
        if not ok:
            raise ValueError("plan does not fit the table (partition, index or member out of "
                             "range)")
        assert endpoint is not None and queue is not None and qidx is not None \
            and qstart is not None and pair is not None                # ok: arrays
        self.plan = plan
        self.max_parallel_migrations = limit
        self._n = len(plan)
        self._endpoint = endpoint
        self._endpoint.setflags(write=False)
        self._core = _executor.Core(np.ascontiguousarray(plan.destination), endpoint, queue,
                                    qidx, qstart, pair, pairs, members, active, limit)

    # -- steps
    def ready(self) -> NDArray[np.int64]:
        """The rows to start now: ndarray[int64], in Hazelcast's scan order (§6.1).

        Each queue head is examined in partition order and picked when its destination and
        source endpoint stay below the limit together with the rows picked before it, so
        starting all of them (in any order) is allowed. Empty once the run has stopped.
        Nothing changes until :meth:`started` is called.
        """
        picked: NDArray[np.int64] = self._core.ready()
        return picked

    def can_start(self, i: int) -> bool:
        """True when row ``i`` is eligible now (see Notes of :class:`Executor`)."""
        return bool(self._core.check_start(self._row(i)) == _executor.ANSWER_ACCEPTED)

    def started(self, i: int) -> None:
        """Row ``i`` started: its partition is migrating, its destination and endpoint each
        carry one more in-flight migration.

        Raises
        ------
        ValueError
            ``i`` outside the plan, or not eligible (instant, already started or finished,
            an earlier row of its partition unfinished, a member at the limit, the run
            stopped). Nothing changes.
        """
        k = self._row(i)
        answer = self._core.start(k)
        if answer != _executor.ANSWER_ACCEPTED:
            raise ValueError(f"row {k} (partition {int(self.plan.partition_id[k])}) cannot "
                             f"start: {self._refusal(answer, k)}")

    def finished(self, i: int, ok: bool) -> None:
        """Row ``i`` completed; ``ok`` False is a failure: from then on nothing new starts
        (the rows in flight still finish and are reported here).

        Raises
        ------
        TypeError
            ``ok`` is not a bool.
        ValueError
            ``i`` outside the plan or not in flight. Nothing changes.
        """
        k = self._row(i)
        if not isinstance(ok, (bool, np.bool_)):
            raise TypeError(f"ok must be a bool, got {type(ok).__name__}")
        answer = self._core.finish(k, bool(ok))
        if answer != _executor.ANSWER_ACCEPTED:
            raise ValueError(f"row {k} (partition {int(self.plan.partition_id[k])}) cannot "
                             f"finish: {self._refusal(answer, k)}")

    def stop(self) -> None:
        """Start nothing more (an abort, e.g. a membership change, §6.5); not a failure.
        The rows in flight still finish."""
        self._core.stop()

    def endpoint(self, i: int) -> int:
        """The source endpoint of queued row ``i``: its source when
        ``source_current_index == 0``, otherwise the partition's owner in the master's table
        when the row starts (see the module docstring); ``-1``: none. Fixed at start.

        Raises
        ------
        ValueError
            ``i`` outside the plan, or an instant decision (no transfer, no endpoint).
        """
        k = self._row(i)
        if self.plan.instant[k]:
            raise ValueError(f"row {k} is an instant decision: it has no source endpoint")
        return int(self._endpoint[k])

    def load(self, member: int) -> int:
        """In-flight migrations in which ``member`` is the destination or source endpoint."""
        m = _check.check_int(member, "member", minimum=0)
        return int(self._core.load_of(m))

    # -- state
    @property
    def in_flight(self) -> NDArray[np.int64]:
        """ndarray[int64]: the rows started and not yet finished (ascending)."""
        return self._rows_in(_executor.ROW_IN_FLIGHT)

    @property
    def succeeded(self) -> NDArray[np.int64]:
        """ndarray[int64]: the rows finished with ``ok=True`` (ascending)."""
        return self._rows_in(_executor.ROW_SUCCEEDED)

    @property
    def failures(self) -> NDArray[np.int64]:
        """ndarray[int64]: the rows finished with ``ok=False`` (ascending)."""
        return self._rows_in(_executor.ROW_FAILED)

    @property
    def waiting(self) -> NDArray[np.int64]:
        """ndarray[int64]: the queued rows not started (ascending)."""
        return self._rows_in(_executor.ROW_WAITING)

    @property
    def remaining(self) -> int:
        """How many queued rows have not started (``len(waiting)``)."""
        return int(self._core.waiting)

    @property
    def in_flight_count(self) -> int:
        """``len(in_flight)``, in O(1)."""
        return int(self._core.in_flight)

    @property
    def failed(self) -> bool:
        """True once some row finished with ``ok=False``."""
        return bool(self._core.failed)

    @property
    def stopped(self) -> bool:
        """True once nothing new can start: a failure, or :meth:`stop`."""
        return bool(self._core.stopped)

    @property
    def done(self) -> bool:
        """True when the run is over: nothing in flight and nothing left that may start
        (every queued row finished, or the run stopped). Check :attr:`failed` for how."""
        core = self._core
        return bool(core.in_flight == 0 and (core.waiting == 0 or core.stopped))

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return (f"Executor({self._n} rows, {self.remaining} waiting, {self.in_flight_count} "
                f"in flight, limit {self.max_parallel_migrations}"
                f"{', failed' if self.failed else ', stopped' if self.stopped else ''})")

    # -- helpers
    def _row(self, i: object) -> int:
        k = i if type(i) is int else _check.check_int(i, "i")
        if not 0 <= k < self._n:
            raise ValueError(f"row {k} is outside the plan (0 <= i < {self._n})")
        return k

    def _rows_in(self, state: int) -> NDArray[np.int64]:
        rows: NDArray[np.int64] = np.flatnonzero(self._core.states() == state).astype(np.int64)
        return rows

    def _refusal(self, answer: int, k: int) -> str:
        if answer == _executor.ANSWER_NOT_WAITING:
            return "it has already started" if self._core.states()[k] == \
                _executor.ROW_IN_FLIGHT else "it has already finished"
        if answer == _executor.ANSWER_NOT_IN_FLIGHT:
            return "it has not started" if self._core.states()[k] == \
                _executor.ROW_WAITING else "it has already finished"
        return _REFUSALS[answer]
