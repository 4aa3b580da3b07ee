"""Benchmarks of hzfast.schedule and of the leave pipeline at scale (pytest-benchmark).

Scenario: a balanced P x 7 table for 10 members (``hzfast.arrange``), member 9 leaves:
``repair`` -> ``arrange`` for the 9 left -> ``plan_migrations`` -> ``schedule``, at
P = 20,000, 100,000 and 1,000,000; ``arrange`` (alone and in the pipeline) on 1 and 2
threads (issue 14: the pipeline <= 300 ms and arrange <= 60 ms at 1,000,000; growth
1,000,000 / 100,000 <= 12 for every step). Competitor for the schedule: the straightforward
pure-Python round loop (``hzfast.reference.planning.schedule_rows``; 20,000 only).
Skewed sizes: Zipf (exponent 1.6) partition sizes, capped at 1,000 units, both policies,
makespan against the proven lower bound in ``extra_info``. Every benchmark checks its
result.

Run: ``pytest bench/test_schedule.py -p no:xdist --benchmark-json=/tmp/schedule.json``.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import hzfast
from hzfast.reference import planning as ref

SIZES = [20_000, 100_000, 1_000_000]


@functools.cache
def leave(P: int):
    """(full table, repaired current, members after, target, plan) for 10 -> 9 members."""
    full = hzfast.arrange(hzfast.PartitionTable.empty(P, 7), 10)
    cur, _ = hzfast.repair(full, np.arange(10) < 9)
    members = hzfast.Members.from_count(10).with_lite([False] * 9 + [True])
    target = hzfast.arrange(cur, members)
    return full, cur, members, target, hzfast.plan_migrations(cur, target)


def check_rounds(plan, s):
    assert ((s.start_round == -1) == plan.instant).all()
    assert s.per_round().max() <= 45          # 9 members x 10 slots, 2 members each
    assert s.rounds >= (len(plan) - plan.instant.sum()) / 45


@pytest.mark.parametrize("P", SIZES)
def test_schedule_hzfast(benchmark, P):
    plan = leave(P)[4]
    benchmark.group = "schedule 10->9"
    s = benchmark(hzfast.schedule, plan)
    check_rounds(plan, s)


def test_schedule_pure_python(benchmark):
    _, cur, _, _, plan = leave(20_000)
    benchmark.group = "schedule 10->9"
    rows = [(*r, int(k), bool(i)) for r, k, i in zip(plan._columns.T.tolist(), plan.kind,
                                                       plan.instant)]
    start, rounds = benchmark.pedantic(ref.schedule_rows, (rows, cur.tolist(), 10), rounds=1)
    s = hzfast.schedule(plan)
    assert s.start_round.tolist() == start and s.rounds == rounds


@pytest.mark.parametrize("policy", ["hazelcast", "critical-path"])
def test_schedule_zipf_sizes(benchmark, policy):
    plan = leave(20_000)[4]
    sizes = np.minimum(np.random.default_rng(0).zipf(1.6, 20_000), 1_000).astype(float)
    benchmark.group = "schedule 10->9, Zipf sizes"
    s = benchmark(hzfast.schedule, plan, sizes=sizes, bandwidth=1.0, policy=policy)
    hz = hzfast.schedule(plan, sizes=sizes, bandwidth=1.0)
    assert s.makespan <= hz.makespan and s.lower_bound <= s.makespan
    benchmark.extra_info.update(makespan=s.makespan, lower_bound=s.lower_bound,
                                over_bound=s.makespan / s.lower_bound,
                                vs_hazelcast=s.makespan / hz.makespan, chosen=s.policy)


STEPS = ["repair", "arrange-1-thread", "arrange-2-threads", "plan_migrations", "schedule"]


@pytest.mark.parametrize("P", SIZES[1:])
@pytest.mark.parametrize("step", STEPS)
def test_leave_step(benchmark, step, P):
    full, cur, members, target, plan = leave(P)
    benchmark.group = f"leave pipeline step: {step}"
    if step == "repair":
        out = benchmark(hzfast.repair, full, np.arange(10) < 9)
        assert (out[0] == cur).all()
    elif step.startswith("arrange"):
        out = benchmark(hzfast.arrange, cur, members, threads=1 if "-1-" in step else 2)
        assert (out == target).all()
    elif step == "plan_migrations":
        out = benchmark(hzfast.plan_migrations, cur, target)
        assert out == plan
    else:
        check_rounds(plan, benchmark(hzfast.schedule, plan))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("P", SIZES)
def test_leave_pipeline(benchmark, P, threads):
    full, _, members, _, plan = leave(P)
    benchmark.group = "leave pipeline: repair + arrange + plan + schedule"
    benchmark.extra_info.update(arrange_threads=threads)

    def pipeline():
        c, _ = hzfast.repair(full, np.arange(10) < 9)
        p = hzfast.plan_migrations(c, hzfast.arrange(c, members, threads=threads))
        return p, hzfast.schedule(p)

    p, s = benchmark(pipeline)
    assert p == plan
    check_rounds(plan, s)


def test_leave_pipeline_memory():
    """Peak memory of the 1,000,000-partition pipeline against its inputs and outputs."""
    import tracemalloc

    full, _, members, _, _ = leave(1_000_000)
    tracemalloc.start()
    try:
        cur, vers = hzfast.repair(full, np.arange(10) < 9)
        target = hzfast.arrange(cur, members)
        plan = hzfast.plan_migrations(cur, target)
        s = hzfast.schedule(plan)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    sized = (full, cur, vers, target, plan._columns, plan.kind, plan.instant,
             s.start, s.finish, s.start_round)
    io = sum(a.nbytes for a in sized)
    assert peak <= 3 * io, (peak, io)
