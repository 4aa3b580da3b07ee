"""Fuzz target: ``PartitionTable`` and ``Members`` (docs/design.md §1).

Tables from replicas and versions in every dressing (dtypes, byte order, strides, lists,
out-of-range and repeated members, member indices near 2**31), with ``members`` as None,
a count or a registry; ``replace``, ``owners``, ``locate``, ``stamp``. ``Members`` from
fuzzed columns (wrong lengths, repeated uuids, non-bool lite flags) and ``from_json`` of
fuzzed text. Valid input must be accepted and read back exactly (stamp against
``hzfast.reference.hashing.stamp``); anything else must raise ValueError/TypeError.
"""
from __future__ import annotations

import json
from typing import Any

import atheris
import numpy as np

import hzfast
from fuzz._common import (
    PLAIN_DRESSINGS,
    Finding,
    checked,
    dress_ints,
    edgy_int,
    expect_equal,
    expect_rejected,
    fuzzed_str,
    rejected,
    table_values,
    valid_table,
)
from hzfast.reference import hashing as R


def fuzz_table(fdp: Any) -> None:
    P = fdp.ConsumeIntInRange(0, 12)
    R_ = fdp.ConsumeIntInRange(0, 8) if fdp.ConsumeIntInRange(0, 9) == 0 else \
        fdp.ConsumeIntInRange(1, 7)
    M = fdp.ConsumeIntInRange(1, 9)
    hostile = fdp.ConsumeIntInRange(0, 3) == 0
    rows = table_values(fdp, P, R_, M, hostile)
    flat = [v for row in rows for v in row]
    rep, rep_log, rep_how = dress_ints(fdp, flat, (P, R_))
    members_mode = fdp.ConsumeIntInRange(0, 3)
    members: Any = None
    M_given: int | None = None
    if members_mode == 1:
        members = edgy_int(fdp, M, M + 2)
        M_given = members
    elif members_mode == 2:
        M_given = fdp.ConsumeIntInRange(0, M + 1)
        members = hzfast.Members.from_count(M_given)
    vers: Any = None
    ver_log: list[int] | None = [0] * P
    ver_how = "none"
    if fdp.ConsumeBool():
        nv = P if fdp.ConsumeIntInRange(0, 7) else fdp.ConsumeIntInRange(0, P + 1)
        ver_vals = [edgy_int(fdp, 0, 100) for _ in range(nv)]
        vers, ver_log, ver_how = dress_ints(fdp, ver_vals, (nv,))
    got = checked(hzfast.PartitionTable, rep, vers, members)
    what = f"PartitionTable({rep_how} {rows!r:.200}, {ver_how} {ver_log}, members={members!r:.40})"
    logical_rows = None if rep_log is None else \
        [rep_log[i * R_:(i + 1) * R_] for i in range(P)]
    if isinstance(M_given, int) and (isinstance(members, bool) or M_given > 2**31 - 1
                                     or M_given < 0):
        expect_rejected(got, what)
        return
    valid = (logical_rows is not None and 1 <= R_ <= 7 and ver_log is not None
             and len(ver_log) == P and valid_table(logical_rows, M_given)
             and all(-(2**31) <= v < 2**31 for v in ver_log))
    if P == 0 and rep_how in ("list", "tuple"):
        return   # an empty list has no width: (0, R) for any R, or refused
    if not valid:
        expect_rejected(got, what)
        return
    if rejected(got):
        plain = rep_how in PLAIN_DRESSINGS and ver_how in (*PLAIN_DRESSINGS, "none")
        huge = any(m > 10_000 for row in logical_rows for m in row) or (M_given or 0) > 10_000
        if plain and P > 0 and not huge and all(v >= 0 for v in ver_log):
            raise Finding(f"{what}: rejected a valid table: {got!r}")
        return
    expect_equal(got.replicas, logical_rows, f"{what}.replicas")
    expect_equal(got.versions, ver_log, f"{what}.versions")
    expect_equal(got.stamp, R.stamp(ver_log), f"{what}.stamp")
    expect_equal(got.owners(), [row[0] for row in logical_rows], f"{what}.owners()")
    if got.replicas.flags.writeable or got.versions.flags.writeable:
        raise Finding(f"{what}: the table's arrays are writeable")
    if got.replicas.base is not None and isinstance(rep, np.ndarray) and \
            np.shares_memory(got.replicas, rep):
        raise Finding(f"{what}: the table shares memory with the caller's array")
    if isinstance(M_given, int) and got.member_count != M_given:
        raise Finding(f"{what}: member_count {got.member_count} != {M_given}")
    keys = [fuzzed_str(fdp, 5, ascii_only=True) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    if P:
        loc = checked(got.locate, keys)
        if rejected(loc) and keys:
            raise Finding(f"{what}.locate({keys}) rejected: {loc!r}")
        if keys and not rejected(loc):
            want = [logical_rows[R.partition_id(k, P)][0] for k in keys]
            expect_equal(loc, want, f"{what}.locate({keys})")
    new_vers = [edgy_int(fdp, 0, 50) for _ in range(P)]
    rep2 = checked(got.replace, versions=new_vers)
    if all(-(2**31) <= v < 2**31 for v in new_vers):
        expect_equal(rep2.stamp if not rejected(rep2) else rep2, R.stamp(new_vers),
                     f"{what}.replace(versions={new_vers}).stamp")
    else:
        expect_rejected(rep2, f"{what}.replace(versions={new_vers})")


def fuzz_members(fdp: Any) -> None:
    n = fdp.ConsumeIntInRange(0, 5)
    addresses = [f"10.0.0.{fdp.ConsumeIntInRange(0, 3)}:{5701 + i}" for i in range(n)]
    kw: dict[str, Any] = {}
    problems = []
    for col in ("uuids", "hosts", "zones", "lite", "groups"):
        if not fdp.ConsumeBool():
            continue
        length = n if fdp.ConsumeIntInRange(0, 5) else fdp.ConsumeIntInRange(0, n + 1)
        if length != n:
            problems.append(f"{col} has {length} items")
        if col == "lite":
            mode = fdp.ConsumeIntInRange(0, 4)
            vals: list[Any] = [fdp.ConsumeBool() for _ in range(length)]
            if mode == 1:
                vals = [np.bool_(v) for v in vals]
            elif mode >= 2 and length:
                bad = fdp.PickValueInList(["false", "true", 0, 1, 2, None, 0.5])
                vals[fdp.ConsumeIntInRange(0, length - 1)] = bad
                if bad not in (0, 1) or isinstance(bad, float):   # 0 and 1 say it plainly
                    problems.append(f"lite holds {bad!r}")
        elif col == "uuids":
            vals = [f"00000000-0000-0000-0000-{fdp.ConsumeIntInRange(0, 3):012d}"
                    for _ in range(length)]
            if len(set(vals)) != len(vals):
                problems.append("repeated uuid")
        elif col == "groups":
            vals = [fdp.PickValueInList(["a", "b", 1, 2]) for _ in range(length)]
        else:
            vals = [fuzzed_str(fdp, 4) for _ in range(length)]
        kw[col] = vals
    got = checked(hzfast.Members, addresses, **kw)
    what = f"Members({addresses}, {kw!r:.300})"
    if problems:
        if not rejected(got) and any(p.startswith("lite holds") for p in problems):
            lite_vals = [bool(x) for x in got.lite.tolist()]
            raise Finding(f"{what}: accepted ({'; '.join(problems)}): lite = {lite_vals}")
        if not rejected(got) and any("items" in p for p in problems):
            raise Finding(f"{what}: accepted ({'; '.join(problems)})")
        return
    if rejected(got):
        return   # strings that are no valid host/zone may be refused
    if got.count != n:
        raise Finding(f"{what}: count {got.count}")
    back = checked(hzfast.Members.from_json, got.to_json())
    if rejected(back) or back != got:
        raise Finding(f"{what}: to_json/from_json does not round-trip: {back!r}")
    if "lite" in kw:
        expect_equal(got.lite, [bool(x) for x in kw["lite"]], f"{what}.lite")
    # hostile JSON documents: a Members or ValueError, nothing else
    doc = json.loads(got.to_json())
    key = fdp.PickValueInList(list(doc) + ["extra"])
    doc[key] = fdp.PickValueInList([None, 1, "x", [], [None], {"a": 1}, [True] * (n + 1)])
    text = json.dumps(doc)
    if fdp.ConsumeBool():
        text = text[:fdp.ConsumeIntInRange(0, len(text))]
    back2 = checked(hzfast.Members.from_json, text)
    if not rejected(back2) and not isinstance(back2, hzfast.Members):
        raise Finding(f"Members.from_json({text!r:.200}) returned {back2!r}")


PIECES = (fuzz_table, fuzz_members)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    PIECES[fdp.ConsumeIntInRange(0, len(PIECES) - 1)](fdp)
