"""Fuzz target: planning on fuzzed table pairs (docs/design.md §4-§6).

``find_cycles``, ``fix_cycles``, ``plan_migrations`` (both orders), ``apply_migrations``,
``schedule`` (rounds, ``current=``, real durations, both policies' contract), ``diff``
(with and without ``member_count``) and ``Executor`` (unit rounds, rows it cannot take) on (current, target) pairs in every dressing,
valid or not. Valid pairs must give exactly what ``hzfast.reference.planning`` gives;
invalid ones (wrong shapes, dtypes, members out of range or twice in a row, lossy
conversions) must raise ValueError/TypeError; inputs never change.
"""
from __future__ import annotations

from typing import Any

import atheris
import numpy as np

import hzfast
from fuzz._common import (
    PLAIN_DRESSINGS,
    Finding,
    checked,
    dress_ints,
    expect_equal,
    expect_rejected,
    rejected,
    table_values,
    valid_table,
)
from hzfast.reference import planning as ref

COLUMNS = ("partition_id", "source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")


def plan_rows(plan: Any) -> list[tuple[Any, ...]]:
    cols = [getattr(plan, c).tolist() for c in COLUMNS]
    return [(*r, int(k), bool(i)) for r, k, i in zip(zip(*cols), plan.kind.tolist(),
                                                     plan.instant.tolist())]


def table_pair(fdp: Any) -> tuple[Any, ...]:
    P = fdp.ConsumeIntInRange(0, 10)
    R_ = fdp.ConsumeIntInRange(1, 7)
    M = fdp.ConsumeIntInRange(1, 10)
    hostile = fdp.ConsumeIntInRange(0, 4) == 0
    cur = table_values(fdp, P, R_, M, hostile and fdp.ConsumeBool())
    tgt = table_values(fdp, P, R_, M, hostile and fdp.ConsumeBool())
    if fdp.ConsumeIntInRange(0, 3) == 0:   # targets that reuse current members
        for p in range(P):
            row = [m for m in cur[p]]
            perm = sorted(range(R_), key=lambda _: fdp.ConsumeIntInRange(0, 9))
            tgt[p] = [row[i] for i in perm]
    shape_t = (P, R_)
    if fdp.ConsumeIntInRange(0, 9) == 0:   # a target of another shape
        extra = fdp.ConsumeIntInRange(1, 2)
        if fdp.ConsumeBool() and R_ + extra <= 8:
            tgt = [row + [-1] * extra for row in tgt]
            shape_t = (P, R_ + extra)
        else:
            tgt = tgt + [[-1] * R_ for _ in range(extra)]
            shape_t = (P + extra, R_)
    c_obj, c_log, c_how = dress_ints(fdp, [v for r in cur for v in r], (P, R_))
    t_obj, t_log, t_how = dress_ints(fdp, [v for r in tgt for v in r], shape_t)
    cur_l = None if c_log is None else [c_log[i * R_:(i + 1) * R_] for i in range(P)]
    w = shape_t[1]
    tgt_l = None if t_log is None else [t_log[i * w:(i + 1) * w] for i in range(shape_t[0])]
    valid = (cur_l is not None and tgt_l is not None and shape_t == (P, R_)
             and valid_table(cur_l, None) and valid_table(tgt_l, None))
    plain = c_how in PLAIN_DRESSINGS and t_how in PLAIN_DRESSINGS
    if P == 0 and {c_how, t_how} & {"list", "tuple"}:
        valid = None   # an empty list has no width: any (0, R), or refused
    return c_obj, t_obj, cur_l, tgt_l, valid, plain, f"{c_how} {cur} -> {t_how} {tgt}"


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    c_obj, t_obj, cur, tgt, valid, plain, what = table_pair(fdp)
    what = what[:600]
    prioritize = fdp.ConsumeBool()
    cyc = checked(hzfast.find_cycles, c_obj, t_obj)
    fixed = checked(hzfast.fix_cycles, c_obj, t_obj)
    plan = checked(hzfast.plan_migrations, c_obj, t_obj, prioritize=prioritize)
    M = 1 + max([m for row in (cur or []) + (tgt or []) for m in row] + [-1])
    d = checked(hzfast.diff, c_obj, t_obj)
    if valid is None:
        return
    if not valid:
        for name, got in (("find_cycles", cyc), ("fix_cycles", fixed),
                          ("plan_migrations", plan), ("diff", d)):
            expect_rejected(got, f"{name}({what})")
        return
    assert cur is not None and tgt is not None
    if any(rejected(x) for x in (cyc, fixed, plan, d)):
        if plain and M <= 10_000 and cur:
            bad = next(x for x in (cyc, fixed, plan, d) if rejected(x))
            raise Finding(f"rejected a valid pair {what}: {bad!r}")
        return
    expect_equal(cyc, [ref.is_cyclic(c, t) for c, t in zip(cur, tgt)], f"find_cycles({what})")
    expect_equal(fixed, [ref.fix_cycle(c, t)[1] for c, t in zip(cur, tgt)],
                 f"fix_cycles({what})")
    try:
        ref_fixed, rows = ref.plan_table(cur, tgt, prioritize)
    except AssertionError:
        raise Finding(f"plan_migrations accepted a pair the reference cannot plan: {what}")
    got_rows = plan_rows(plan)
    if got_rows != [tuple(r) for r in rows]:
        raise Finding(f"plan_migrations({what}, prioritize={prioritize}): "
                      f"{got_rows!r:.300} != reference {rows!r:.300}")
    expect_equal(plan.target, ref_fixed, f"plan_migrations({what}).target")
    # diff, against the reference and with an explicit member_count
    mask, changed, gains, losses, moves = ref.diff(cur, tgt, M)
    expect_equal(d.changed_slots, mask, f"diff({what}).changed_slots")
    expect_equal(d.changed_partitions, changed, f"diff({what}).changed_partitions")
    expect_equal(d.gains, gains, f"diff({what}).gains")
    expect_equal(d.losses, losses, f"diff({what}).losses")
    if d.slot_moves != moves:
        raise Finding(f"diff({what}).slot_moves {d.slot_moves} != {moves}")
    extra = fdp.ConsumeIntInRange(-2, 3)
    d2 = checked(hzfast.diff, c_obj, t_obj, member_count=M + extra)
    if extra < 0:
        if M + extra < M and not rejected(d2) and M > 0:
            raise Finding(f"diff({what}, member_count={M + extra}) accepted too few members")
    elif not rejected(d2) and cur:   # the reference reads R from row 0
        expect_equal(d2.gains, ref.diff(cur, tgt, M + extra)[2], f"diff(member_count={M + extra})")
    # apply the plan
    versions = [fdp.ConsumeIntInRange(0, 1000) for _ in cur]
    applied = checked(hzfast.apply_migrations, c_obj, np.array(versions, dtype=np.int32), plan)
    want_reps, want_vers = ref.apply_rows(cur, versions, [r[:7] for r in rows])
    if rejected(applied):
        raise Finding(f"apply_migrations rejected its own plan: {what}: {applied!r}")
    expect_equal(applied[0], want_reps, f"apply_migrations({what}) replicas")
    expect_equal(applied[1], want_vers, f"apply_migrations({what}) versions")
    # schedule: rounds, with current=, and with durations
    limit = fdp.ConsumeIntInRange(1, 4)
    start, rounds = ref.schedule_rows(rows, cur, limit)
    s = checked(hzfast.schedule, plan, max_parallel_migrations=limit)
    s2 = checked(hzfast.schedule, plan, c_obj, max_parallel_migrations=limit)
    for label, got in (("schedule", s), ("schedule(current=)", s2)):
        if rejected(got):
            raise Finding(f"{label} rejected a planner's plan: {what}: {got!r}")
        expect_equal(got.start_round, start, f"{label}({what}, {limit}).start_round")
        if got.rounds != rounds:
            raise Finding(f"{label}({what}).rounds {got.rounds} != {rounds}")
    durations = [float(fdp.ConsumeIntInRange(1, 5)) for _ in rows]
    s3 = checked(hzfast.schedule, plan, max_parallel_migrations=limit,
                 durations=np.array(durations))
    if rejected(s3):
        raise Finding(f"schedule(durations=) rejected: {what}: {s3!r}")
    st, fin = ref.schedule_events(rows, cur, limit, durations)
    expect_equal(s3.start, st, f"schedule({what}, durations={durations}).start")
    expect_equal(s3.finish, fin, f"schedule({what}, durations={durations}).finish")
    if s3.lower_bound > s3.makespan + 1e-9:
        raise Finding(f"schedule: lower_bound {s3.lower_bound} > makespan {s3.makespan}")
    s4 = checked(hzfast.schedule, plan, max_parallel_migrations=limit,
                 durations=np.array(durations), policy="critical-path")
    if rejected(s4) or s4.makespan > s3.makespan + 1e-9:
        raise Finding(f"schedule(critical-path) {s4!r:.200} slower than hazelcast {s3.makespan}")
    run_executor(fdp, plan, c_obj, rows, cur, limit, start, what)


def run_executor(fdp: Any, plan: Any, c_obj: Any, rows: list[Any], cur: list[list[int]],
                 limit: int, start: list[int], what: str) -> None:
    """``Executor`` driven in unit rounds reproduces the reference rounds; calls that do
    not fit its state (rows out of range, not eligible, not in flight) fail cleanly."""
    ex = checked(hzfast.Executor, plan, c_obj, max_parallel_migrations=limit)
    if rejected(ex):
        raise Finding(f"Executor rejected a planner's plan: {what}: {ex!r}")
    got = [-1] * len(rows)
    hostile = fdp.ConsumeIntInRange(0, 2) == 0
    for rnd in range(len(rows) + 1):   # every round starts at least one row
        ready = ex.ready().tolist()
        if not ready:
            break
        for i in ready:
            ex.started(i)
            got[i] = rnd
        if hostile:
            bad = int(fdp.PickValueInList([-1, len(rows), 2**31, ready[0], 2**63 - 1]))
            for call in (ex.started, ex.endpoint, ex.can_start):
                res = checked(call, bad)
                if not rejected(res) and not 0 <= bad < len(rows):
                    raise Finding(f"Executor.{call.__name__}({bad}) accepted a row outside "
                                  f"0..{len(rows) - 1}: {res!r}")
            res = checked(ex.finished, bad, "yes")
            if not rejected(res):
                raise Finding("Executor.finished(i, 'yes') accepted a non-bool outcome")
            hostile = False
        for i in ready:
            ex.finished(i, True)
    if got != start or not ex.done:
        raise Finding(f"Executor in unit rounds ({what}, {limit}): {got} != reference {start}"
                      f" (done={ex.done})")
