"""Fuzz target: hand-built, possibly inconsistent plans handed to the kernels that read a
plan: ``schedule`` (with and without ``current=``, with ``durations``/``sizes``) and
``apply_migrations`` (docs/design.md §5.9, §6).

A real plan of a fuzzed table pair has one decision field changed (a member or index out
of range, a partition past the table, a step that does not match the row), rows dropped
or repeated, or is paired with a ``current`` table of another shape. The contract: either
ValueError/TypeError, or, for ``apply_migrations``, exactly what the reference replay
gives (``hzfast.reference.planning.apply_rows``); never an out-of-bounds read or write.
"""
from __future__ import annotations

import atheris
import numpy as np

import hzfast
from fuzz._common import Finding, checked, expect_equal, rejected, table_values
from hzfast.reference import planning as ref

COLUMNS = ("partition_id", "source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    P, R_, M = fdp.ConsumeIntInRange(1, 6), fdp.ConsumeIntInRange(1, 7), 8
    cur = table_values(fdp, P, R_, M, False)
    tgt = table_values(fdp, P, R_, M, False)
    cur_a = np.array(cur, np.int32).reshape(P, R_)
    plan = hzfast.plan_migrations(cur_a, np.array(tgt, np.int32).reshape(P, R_))
    cols = [getattr(plan, c).tolist() for c in COLUMNS]
    n = len(plan)
    changed = False
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        if not n:
            break
        c, k = fdp.ConsumeIntInRange(0, 6), fdp.ConsumeIntInRange(0, n - 1)
        new = int(fdp.PickValueInList([-1, -2, 0, 1, R_ - 1, R_, 7, 8, M - 1, M, P, P + 1,
                                       2**15, 2**31 - 1, -(2**31)]))
        changed |= cols[c][k] != new
        cols[c][k] = new
    if n and fdp.ConsumeIntInRange(0, 4) == 0:   # repeat or drop a row
        k = fdp.ConsumeIntInRange(0, n - 1)
        for col in cols:
            if fdp.ConsumeBool():
                col.insert(k, col[k])
            else:
                del col[k]
            changed = True
        if len({len(col) for col in cols}) != 1:
            return   # ragged columns: the constructor's business (target "plan")
    try:
        hand = hzfast.MigrationPlan(*[np.array(col, dtype=np.int64) for col in cols],
                                    target=plan.target, prioritized=plan.prioritized)
    except (ValueError, TypeError):
        return   # refused at construction: the plan never reaches a kernel
    versions = np.array([fdp.ConsumeIntInRange(0, 100) for _ in range(P)], np.int32)
    other = cur_a
    if fdp.ConsumeIntInRange(0, 5) == 0:   # a current table of another shape
        other = np.full((P + fdp.ConsumeIntInRange(-1, 1), max(R_ - 1, 1)), -1, np.int32)
    got = checked(hzfast.apply_migrations, other, versions, hand)
    rows = list(zip(*cols))
    if other is cur_a:
        try:
            want = ref.apply_rows(cur, versions.tolist(), rows)
            ok = all(0 <= r[0] < P for r in rows) and all(
                -1 <= v < R_ for r in rows for v in (r[2], r[3], r[5], r[6])) and all(
                -1 <= v for r in rows for v in (r[1], r[4]))   # the table bounds no member
        except (IndexError, ValueError, AssertionError):
            want, ok = None, False
        if not rejected(got):
            if not ok or want is None:
                raise Finding(f"apply_migrations accepted a plan the replay cannot apply: "
                              f"{rows}")
            expect_equal(got[0], want[0], f"apply_migrations(hand plan {rows}) replicas")
            expect_equal(got[1], want[1], f"apply_migrations(hand plan {rows}) versions")
    elif not rejected(got) and other.shape != cur_a.shape:
        raise Finding(f"apply_migrations accepted a table of shape {other.shape} for a plan "
                      f"over {cur_a.shape}")
    limit = fdp.ConsumeIntInRange(1, 3)
    s = checked(hzfast.schedule, hand, other, max_parallel_migrations=limit)
    s0 = checked(hzfast.schedule, hand, max_parallel_migrations=limit)
    if not changed and other is cur_a:
        start, _rounds = ref.schedule_rows(
            [(*r, 0, bool(i)) for r, i in zip(rows, plan.instant.tolist())], cur, limit)
        for label, res in (("schedule(current=)", s), ("schedule", s0)):
            if rejected(res):
                raise Finding(f"{label} rejected an unchanged plan: {res!r}")
            expect_equal(res.start_round, start, f"{label}(unchanged plan).start_round")
    if n and not rejected(s0):
        sizes = np.array([fdp.ConsumeIntInRange(0, 9) for _ in range(
            fdp.ConsumeIntInRange(0, P + 1))], dtype=np.float64)
        s1 = checked(hzfast.schedule, hand, max_parallel_migrations=limit, sizes=sizes,
                     bandwidth=fdp.PickValueInList([1.0, 0.0, -1.0, float("nan"), 1e-300]))
        if not rejected(s1) and len(sizes) != P:
            raise Finding(f"schedule accepted sizes of length {len(sizes)} for {P} partitions")
