"""Fuzz target: ``repair``, ``arrange`` and ``arrangement_report`` (docs/design.md §8).

Tables in every dressing (valid or not), ``alive`` as a mask or as indices (huge ones
too), ``members`` as a count or a registry with hosts, zones, lite members and custom
groups, every ``grouping`` (also as an array) and ``replica_count``. ``repair`` and
``arrange`` must equal ``hzfast.reference.arrangement``; the report must agree with the
tables it describes (slot changes counted directly, ``lower_bound <= slot_changes``);
invalid input raises ValueError/TypeError; impossible sizes are refused before
allocating (a member index near 2**31, 30,000 members).
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
from hzfast.reference import arrangement as ref


def members_arg(fdp: Any, M: int) -> Any:
    mode = fdp.ConsumeIntInRange(0, 3)
    if mode == 0:
        return M
    hosts = [f"h{fdp.ConsumeIntInRange(0, 3)}" for _ in range(M)]
    zones = [f"z{fdp.ConsumeIntInRange(0, 2)}" for _ in range(M)]
    lite = [fdp.ConsumeIntInRange(0, 5) == 0 for _ in range(M)]
    groups = [fdp.ConsumeIntInRange(0, 3) for _ in range(M)]
    return hzfast.Members([f"{h}:{5701 + i}" for i, h in enumerate(hosts)], hosts=hosts,
                          zones=zones, lite=lite if mode >= 2 else None,
                          groups=groups if mode == 3 else None)


def fuzz_repair(fdp: Any) -> None:
    P, R_, M = fdp.ConsumeIntInRange(0, 8), fdp.ConsumeIntInRange(1, 7), \
        fdp.ConsumeIntInRange(1, 8)
    rows = table_values(fdp, P, R_, M, fdp.ConsumeIntInRange(0, 5) == 0)
    obj, logical, how = dress_ints(fdp, [v for r in rows for v in r], (P, R_))
    cur = None if logical is None else [logical[i * R_:(i + 1) * R_] for i in range(P)]
    if fdp.ConsumeBool():
        alive: Any = [fdp.ConsumeBool() for _ in range(M + fdp.ConsumeIntInRange(-1, 1))]
        mask = alive if fdp.ConsumeBool() else np.array(alive, dtype=bool)
        alive_list = list(alive)
        is_mask = True
    else:
        is_mask = False
        idx = sorted({fdp.ConsumeIntInRange(0, M - 1) for _ in range(fdp.ConsumeIntInRange(0, M))})
        if fdp.ConsumeIntInRange(0, 4) == 0:
            idx.append(int(fdp.PickValueInList([M, -1, 2**31, 2**40, -(2**40)])))
        mask = set(idx) if fdp.ConsumeBool() else idx
        # an index past every member used only names a member the table does not hold;
        # a negative one names nobody
        alive_list = None if any(i < 0 for i in idx) else [i in idx for i in range(M)]
    versions = [fdp.ConsumeIntInRange(0, 50) for _ in range(P)]
    got = checked(hzfast.repair, obj, mask, np.array(versions, np.int32))
    what = f"repair({how} {rows}, {mask!r:.80})"
    if cur is None or not valid_table(cur, None):
        expect_rejected(got, what)
        return
    used = max([m for r in cur for m in r] + [-1])
    if used >= hzfast.MAX_MEMBER_COUNT:          # docs/hardening.md: the member limit
        expect_rejected(got, f"{what}: member index {used} past the member limit")
        return
    if not is_mask and alive_list is not None:
        # an index list names members by index, also those the table holds at >= M
        alive_list = [i in idx for i in range(max(M, used + 1))]
    if alive_list is None:
        expect_rejected(got, f"{what}: a negative alive index")
        return
    if any(i > 65_535 for i in (mask if not is_mask else [])) and rejected(got):
        return   # an index past any possible member may be refused
    if is_mask and len(alive_list) <= used and not (isinstance(mask, list) and not mask):
        # (an empty list may mean "no member alive" as well as an empty mask)
        expect_rejected(got, f"{what}: a mask shorter than the members used")
        return
    alive_list = alive_list + [False] * (used + 1 - len(alive_list))
    if rejected(got):
        if how in PLAIN_DRESSINGS and P:
            raise Finding(f"{what}: rejected a valid repair: {got!r}")
        return
    want = ref.repair(cur, alive_list, versions)
    expect_equal(got[0], want[0], f"{what} replicas")
    expect_equal(got[1], want[1], f"{what} versions")


def fuzz_arrange(fdp: Any) -> None:
    P, R_, M = fdp.ConsumeIntInRange(0, 8), fdp.ConsumeIntInRange(1, 7), \
        fdp.ConsumeIntInRange(1, 8)
    hostile = fdp.ConsumeIntInRange(0, 5) == 0
    rows = table_values(fdp, P, R_, M, hostile)
    obj, logical, how = dress_ints(fdp, [v for r in rows for v in r], (P, R_))
    cur = None if logical is None else [logical[i * R_:(i + 1) * R_] for i in range(P)]
    members = members_arg(fdp, M)
    grouping: Any = fdp.PickValueInList(["per_member", "host", "zone", "custom", "array",
                                         "bogus"])
    if grouping == "custom" and isinstance(members, int):
        grouping = "per_member"
    if grouping == "array":
        grouping = np.array([fdp.ConsumeIntInRange(-1, 3) for _ in range(
            M + (fdp.ConsumeIntInRange(-1, 1) if fdp.ConsumeIntInRange(0, 5) == 0 else 0))],
            dtype=fdp.PickValueInList([np.int32, np.int64, np.float64]))
    replica_count = None if fdp.ConsumeBool() else fdp.PickValueInList([0, 1, 2, 3, 7, 8, True])
    got = checked(hzfast.arrange, obj, members, grouping=grouping, replica_count=replica_count)
    what = f"arrange({how} {rows}, {members!r:.60}, {grouping!r:.60}, {replica_count})"
    try:
        want = ref.arrange(cur if cur is not None else obj, members,
                           grouping=grouping, replica_count=replica_count)
    except (ValueError, TypeError, KeyError, IndexError):
        want = None
    if cur is None or not valid_table(cur, M):
        expect_rejected(got, what)
        return
    if want is None:
        expect_rejected(got, f"{what} (the reference refuses it)")
        return
    if rejected(got):
        if how in PLAIN_DRESSINGS and P:
            raise Finding(f"{what}: rejected an arrangement the reference makes: {got!r}")
        return
    expect_equal(got, want, what)
    rep = checked(hzfast.arrangement_report, obj, got, members, grouping=grouping,
                  replica_count=replica_count)
    if rejected(rep):
        raise Finding(f"arrangement_report rejected arrange's own target: {what}: {rep!r}")
    W = got.shape[1]
    padded = [r + [-1] * (W - len(r)) for r in cur]
    changes = sum(a != b for ra, rb in zip(padded, got.tolist()) for a, b in zip(ra, rb))
    # (lower_bound bounds the moves to a *balanced* target; arrange may stop short of
    # balance rather than form a cycle with the current table, docs/design.md §8)
    if rep.slot_changes != changes or not rep.valid:
        raise Finding(f"arrangement_report({what}): slot_changes {rep.slot_changes} (counted "
                      f"{changes}), lower_bound {rep.lower_bound}, valid {rep.valid}")
    # a report against a hostile target: clean error or a report
    bad = got.copy()
    if bad.size:
        bad.flat[fdp.ConsumeIntInRange(0, bad.size - 1)] = fdp.PickValueInList(
            [M, 2**31 - 1, -2, 30_000])
        rep2 = checked(hzfast.arrangement_report, obj, bad, members, grouping=grouping)
        expect_rejected(rep2, f"arrangement_report({what}) with a target holding a "
                              f"non-member")


def fuzz_huge(fdp: Any) -> None:
    """Sizes that must be refused before allocating (issue class 6): one call per input."""
    P = fdp.ConsumeIntInRange(1, 4)
    cur = np.full((P, 2), -1, np.int32)
    cur[0, 0] = fdp.PickValueInList([2**31 - 1, 2**30, 10**8, 40_000, 65_535])
    calls = ((hzfast.diff, (cur, cur)), (hzfast.repair, (cur, [2**40])),
             (hzfast.repair, (cur, np.ones(3, bool))),
             (hzfast.arrangement_report, (cur, cur, fdp.PickValueInList([30_000, 2**20]))),
             (hzfast.arrange, (cur, fdp.PickValueInList([2**31, 10**7, 70_000]))),
             (hzfast.PartitionTable, (cur,)))
    fn, args = calls[fdp.ConsumeIntInRange(0, len(calls) - 1)]
    got = checked(fn, *args)
    if not rejected(got) and fn is hzfast.repair and len(args[1]) == 3:
        raise Finding(f"repair accepted a 3-member mask for member {cur[0, 0]}")


PIECES = (fuzz_repair, fuzz_arrange, fuzz_repair, fuzz_arrange, fuzz_huge)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    PIECES[fdp.ConsumeIntInRange(0, len(PIECES) - 1)](fdp)
