"""Benchmarks of the protocol's vectorized pieces (pytest-benchmark).

* ``merge_tables`` (docs/design.md §7.4) at 20,000 partitions x 7 replicas: the Cython kernel
  against the same rule in whole-array numpy and in pure Python
  (``hzfast.reference.protocol``). Two inputs: a master's table one migration round ahead
  (1 % of the partitions newer, the rest equal: the common case) and a shuffled mix (30 %
  newer, 30 % older, 40 % equal), which defeats branch prediction.
* The :class:`hzfast.migration.Executor` driven in unit rounds (start all of ``ready()``,
  finish them all) over the 10 -> 9 members plan at 20,000 x 7, against the offline
  ``schedule()`` of the same plan (which it reproduces exactly), at limits 10 and 1.

Every benchmark checks its result. Run:
``pytest bench/test_protocol.py -p no:xdist --benchmark-json=/tmp/protocol.json``.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import hzfast
from hzfast.migration import Executor
from hzfast.protocol.tables import merge_tables
from hzfast.reference import protocol as ref

P, R = 20_000, 7


@functools.cache
def tables(mix: str):
    """(local replicas, local versions, received replicas, received versions)."""
    rng = np.random.default_rng(5)
    lr = rng.integers(-1, 10, (P, R)).astype(np.int32)
    lv = rng.integers(10, 1_000, P).astype(np.int32)
    rr, rv = lr.copy(), lv.copy()
    if mix == "round":
        newer = rng.random(P) < 0.01
        older = np.zeros(P, dtype=bool)
    else:
        u = rng.random(P)
        newer, older = u < 0.3, (u >= 0.3) & (u < 0.6)
    rv[newer] += 1
    rv[older] -= 1
    changed = newer | older
    rr[changed] = rng.integers(-1, 10, (int(changed.sum()), R))
    for arr in (lr, lv, rr, rv):
        arr.setflags(write=False)
    return lr, lv, rr, rv


def expected(mix: str):
    lr, lv, rr, rv = tables(mix)
    return ref.merge_table_numpy(lr, lv, rr, rv)


MIXES = ["round", "shuffled"]


@pytest.mark.parametrize("mix", MIXES)
def test_merge_kernel(benchmark, mix):
    benchmark.group = f"merge_tables 20,000 x 7 ({mix})"
    replicas, versions, updated = benchmark(merge_tables, *tables(mix))
    exp = expected(mix)
    assert exp[3].size == 0
    assert np.array_equal(replicas, exp[0]) and np.array_equal(versions, exp[1])
    assert np.array_equal(updated, exp[2])


@pytest.mark.parametrize("mix", MIXES)
def test_merge_numpy(benchmark, mix):
    benchmark.group = f"merge_tables 20,000 x 7 ({mix})"
    replicas, versions, updated, diverged = benchmark(ref.merge_table_numpy, *tables(mix))
    mine = merge_tables(*tables(mix))
    assert diverged.size == 0
    assert all(np.array_equal(a, b) for a, b in zip((replicas, versions, updated), mine))


@pytest.mark.parametrize("mix", MIXES)
def test_merge_pure_python(benchmark, mix):
    benchmark.group = f"merge_tables 20,000 x 7 ({mix})"
    args = [a.tolist() for a in tables(mix)]
    replicas, versions, updated, diverged = benchmark.pedantic(ref.merge_table, args,
                                                               rounds=3)
    mine = merge_tables(*tables(mix))
    assert diverged == []
    assert (replicas, versions, updated) == tuple(a.tolist() for a in mine)


def test_merge_kernel_diverged(benchmark):
    # the rejection path: every 100th equal partition differs
    lr, lv, rr, rv = tables("round")
    rr = rr.copy()
    bad = np.flatnonzero(rv == lv)[::100]
    rr[bad, 0] += 1
    benchmark.group = "merge_tables 20,000 x 7 (diverged)"

    def run():
        try:
            merge_tables(lr, lv, rr, rv)
        except hzfast.protocol.DivergedTableError as exc:
            return exc.partitions
        raise AssertionError("divergence not detected")

    partitions = benchmark(run)
    assert partitions.tolist() == bad.tolist()


# ------------------------------------------------------------------ the executor
@functools.cache
def leave_plan():
    """(current, plan): member 9 of 10 leaves a balanced 20,000 x 7 table."""
    full = hzfast.arrange(hzfast.PartitionTable.empty(P, 7), 10)
    cur, _ = hzfast.repair(full, np.arange(10) < 9)
    members = hzfast.Members.from_count(10).with_lite([False] * 9 + [True])
    return cur, hzfast.plan_migrations(cur, hzfast.arrange(cur, members))


def drive(plan, cur, limit):
    """Unit rounds over a fresh Executor; start round per row (-1: instant)."""
    ex = Executor(plan, cur, limit)
    start = np.full(len(plan), -1, dtype=np.int32)
    rounds = 0
    while True:
        picked = ex.ready()
        if not len(picked):
            break
        rows = picked.tolist()
        for i in rows:
            ex.started(i)
        for i in rows:
            ex.finished(i, True)
        start[picked] = rounds
        rounds += 1
    assert ex.done and not ex.failed
    return start, rounds


@pytest.mark.parametrize("limit", [10, 1])
def test_executor_drive(benchmark, limit):
    cur, plan = leave_plan()
    benchmark.group = f"executor vs schedule 20,000 x 7, limit {limit}"
    start, rounds = benchmark.pedantic(drive, (plan, cur, limit), rounds=5)
    s = hzfast.schedule(plan, current=cur, max_parallel_migrations=limit)
    assert start.tolist() == s.start_round.tolist() and rounds == s.rounds
    benchmark.extra_info["rows"] = len(plan)
    benchmark.extra_info["rounds"] = rounds


@pytest.mark.parametrize("limit", [10, 1])
def test_schedule_same_plan(benchmark, limit):
    cur, plan = leave_plan()
    benchmark.group = f"executor vs schedule 20,000 x 7, limit {limit}"
    s = benchmark(hzfast.schedule, plan, cur, max_parallel_migrations=limit)
    assert s.rounds == drive(plan, cur, limit)[1]
