"""Race driver: a second thread changes a table/plan input while calls run on it.

Run as ``python race_kernels.py SCENARIO [--seconds S] [--iterations N]``. It prints one
JSON line ``{"scenario", "calls", "results", "errors", "mutations"}`` and exits 0 when
every call ended with a correct result or a clean ``ValueError``. A crash (segfault,
abort, heap corruption) kills the process: ``tests/hardening/test_races_kernels.py``
runs each scenario in a subprocess, so a crash fails that test and nothing else.

Every table/plan kernel that releases the GIL has a scenario (docs/hardening.md lists
them). The second thread rewrites only the rows ``p >= P // 2`` of the shared input,
with valid members, members far out of range (``2**31 - 1``), values below -1 and
duplicates; the rows ``p < P // 2`` never change. So whatever the interleaving, the part
of a result that depends only on those rows must equal what the same call gives on a
quiet copy, and every member a result holds must be in range. Loops are bounded by a
time budget and an iteration count.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable

import numpy as np

import hzfast

P, R, M = 2_000, 7, 10
HALF = P // 2
# the member limit (read where it lives, so the driver also runs against older builds)
LIMIT = getattr(hzfast._check, "MAX_MEMBER_COUNT", 2**31)
HOSTILE = np.array([2**31 - 1, 70_000, -7, -(2**31), 3, 0], dtype=np.int32)


def _tables() -> tuple[np.ndarray, np.ndarray]:
    empty = hzfast.PartitionTable.empty(P, R)
    cur = hzfast.arrange(empty, M)
    tgt = hzfast.arrange(hzfast.repair(cur, np.arange(M) < M - 1)[0], M - 1)
    return np.ascontiguousarray(cur), np.ascontiguousarray(tgt)


class Scenario:
    """``shared`` is the array the second thread changes (rows >= HALF only);
    ``call()`` makes one call on it and checks the result (AssertionError if wrong)."""

    shared: np.ndarray

    def __init__(self) -> None:
        self.cur, self.tgt = _tables()
        self.rng = np.random.default_rng(7)
        self.pristine: np.ndarray | None = None

    def mutate(self, i: int) -> None:
        """Rewrite a few slots of the changing half (hostile values half the time), or
        restore it."""
        a = self.shared
        if self.pristine is None:
            self.pristine = a.copy()
        if i % 4 == 3:
            a[HALF:] = self.pristine[HALF:]
            return
        flat = a.reshape(-1)
        lo = HALF * (a.size // a.shape[0]) if a.ndim == 2 else HALF
        pos = self.rng.integers(lo, flat.shape[0], size=16)
        flat[pos] = HOSTILE[self.rng.integers(0, HOSTILE.shape[0], size=16)]

    def call(self) -> None:
        raise NotImplementedError


def _same_half(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert np.array_equal(got[:HALF], want[:HALF]), f"{what}: the quiet half changed"


class Plan(Scenario):
    """plan_migrations: the planner counts, validates and plans in one call (nogil)."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = self.cur
        self.want = hzfast.plan_migrations(self.cur.copy(), self.tgt)
        self.want_quiet = self.want[self.want.partition_id < HALF]

    def call(self) -> None:
        plan = hzfast.plan_migrations(self.shared, self.tgt)
        quiet = plan[plan.partition_id < HALF]
        assert np.array_equal(quiet._columns, self.want_quiet._columns), "quiet decisions"
        assert np.array_equal(quiet.kind, self.want_quiet.kind), "quiet kinds"
        assert plan.max_member() < LIMIT
        assert plan.target is not None and plan.target.shape == (P, R)


class Cycles(Scenario):
    """find_cycles and fix_cycles over a changing target."""

    def __init__(self) -> None:
        super().__init__()
        self.tgt = np.ascontiguousarray(self.cur[:, ::-1])     # every row a cycle
        self.shared = self.tgt
        self.want_found = hzfast.find_cycles(self.cur, self.tgt.copy())
        self.want_fixed = hzfast.fix_cycles(self.cur, self.tgt.copy())

    def call(self) -> None:
        _same_half(hzfast.find_cycles(self.cur, self.shared), self.want_found, "find_cycles")
        _same_half(hzfast.fix_cycles(self.cur, self.shared), self.want_fixed, "fix_cycles")


class Apply(Scenario):
    """apply_migrations over a changing table."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = self.cur
        self.plan = hzfast.plan_migrations(self.cur, self.tgt)
        self.versions = np.zeros(P, np.int32)
        self.want = hzfast.apply_migrations(self.cur.copy(), self.versions, self.plan)

    def call(self) -> None:
        reps, vers = hzfast.apply_migrations(self.shared, self.versions, self.plan)
        _same_half(reps, self.want[0], "replicas")
        _same_half(vers, self.want[1], "versions")


class Diff(Scenario):
    """diff: gains/losses are sized from the largest member, then counted."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = self.tgt
        self.want = hzfast.diff(self.cur, self.tgt.copy())

    def call(self) -> None:
        d = hzfast.diff(self.cur, self.shared)
        _same_half(d.changed_slots, self.want.changed_slots, "changed_slots")
        assert d.gains.shape[0] <= LIMIT
        assert d.gains.sum() <= P * R and d.losses.sum() <= P * R


class Schedule(Scenario):
    """schedule(current=...): the plan is replayed on the table, then simulated."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = self.cur
        self.plan = hzfast.plan_migrations(self.cur, self.tgt)
        self.want = hzfast.schedule(self.plan, self.cur.copy(), max_parallel_migrations=2)

    def call(self) -> None:
        s = hzfast.schedule(self.plan, self.shared, max_parallel_migrations=2)
        assert s.start.shape == (len(self.plan),) and np.isfinite(s.start).all()
        assert s.peak_concurrency.max(initial=0) <= 2
        assert s.rounds is not None and s.rounds >= 1


class Arrange(Scenario):
    """arrange over a changing current table."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = self.cur

    def call(self) -> None:
        out = hzfast.arrange(self.shared, M)
        assert out.shape == (P, R) and out.min() >= -1 and out.max() < M


class Repair(Scenario):
    """repair over a changing table (the alive mask is indexed by member)."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = self.cur
        self.alive = np.arange(M) < M - 2
        self.want = hzfast.repair(self.cur.copy(), self.alive)

    def call(self) -> None:
        reps, vers = hzfast.repair(self.shared, self.alive)
        _same_half(reps, self.want[0], "replicas")
        _same_half(vers, self.want[1], "versions")


class Report(Scenario):
    """arrangement_report: counts per member, written at the member's index."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = self.tgt

    def call(self) -> None:
        rep = hzfast.arrangement_report(self.cur, self.shared, M)
        assert rep.member_counts.shape[0] == M
        assert 0 <= rep.slot_changes <= P * R


class Table(Scenario):
    """PartitionTable: the snapshot it keeps is the one it validated."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = self.cur
        self.quiet = self.cur.copy()

    def call(self) -> None:
        t = hzfast.PartitionTable(self.shared, members=M)
        t.validate()                                 # what it holds is what it checked
        _same_half(t.replicas, self.quiet, "replicas")


class PlanColumns(Scenario):
    """MigrationPlan built from caller arrays that keep changing, then scheduled."""

    def __init__(self) -> None:
        super().__init__()
        plan = hzfast.plan_migrations(self.cur, self.tgt)
        self.columns = [np.array(getattr(plan, c)) for c in
                        ("partition_id", "source", "source_current_index", "source_new_index",
                         "destination", "destination_current_index",
                         "destination_new_index")]
        self.target = plan.target
        self.shared = self.columns[4]            # destinations
        self.n = len(plan)

    def mutate(self, i: int) -> None:
        a = self.shared
        pos = self.rng.integers(0, a.shape[0], size=8)
        a[pos] = HOSTILE[self.rng.integers(0, HOSTILE.shape[0], size=8)]

    def call(self) -> None:
        plan = hzfast.MigrationPlan(*self.columns, target=self.target)
        assert len(plan) == self.n
        assert plan.max_member() < LIMIT
        hzfast.schedule(plan)


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "plan": Plan, "cycles": Cycles, "apply": Apply, "diff": Diff, "schedule": Schedule,
    "arrange": Arrange, "repair": Repair, "report": Report, "table": Table,
    "plan_columns": PlanColumns,
}


def run(name: str, seconds: float, iterations: int) -> dict[str, object]:
    scenario = SCENARIOS[name]()
    stop = threading.Event()
    mutations = 0

    def mutator() -> None:
        nonlocal mutations
        i = 0
        while not stop.is_set() and i < 50 * iterations:
            scenario.mutate(i)
            i += 1
        mutations = i

    sys.setswitchinterval(1e-5)    # interleave the two threads as finely as possible
    thread = threading.Thread(target=mutator, daemon=True)
    calls = results = errors = 0
    deadline = time.monotonic() + seconds
    thread.start()
    try:
        while calls < iterations and time.monotonic() < deadline:
            calls += 1
            try:
                scenario.call()
                results += 1
            except ValueError:
                errors += 1
    finally:
        stop.set()
        thread.join(timeout=10)
    return {"scenario": name, "calls": calls, "results": results, "errors": errors,
            "mutations": mutations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--iterations", type=int, default=3_000)
    args = parser.parse_args()
    print(json.dumps(run(args.scenario, args.seconds, args.iterations)))


if __name__ == "__main__":
    main()
