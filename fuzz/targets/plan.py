"""Fuzz target: ``MigrationPlan(...)`` built by hand and ``MigrationPlan.from_json``
(docs/design.md §5.7).

Columns in every dressing (int64 values past int32, fractional floats, bools, big-endian,
strided), ``kind``/``instant`` of the wrong length or type, ``target`` of the wrong shape,
``prioritized`` as a non-bool; JSON documents of real plans with one field replaced
(``2**32``, ``3.9``, ``"false"``, a wrong ``replica_count``, nesting, truncation) and
fuzzed text. A plan is accepted only when every value is represented exactly; it owns
copies (the caller's arrays keep their contents and writeability, and changing them later
does not change the plan); anything else raises ValueError/TypeError.
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
    expect_rejected,
    rejected,
    table_values,
)
from hzfast.reference import planning as ref

COLUMNS = ("partition_id", "source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")


def real_plan(fdp: Any) -> tuple[Any, list[list[int]]]:
    P, R_, M = fdp.ConsumeIntInRange(1, 6), fdp.ConsumeIntInRange(1, 4), 6
    cur = table_values(fdp, P, R_, M, False)
    tgt = table_values(fdp, P, R_, M, False)
    plan = hzfast.plan_migrations(np.array(cur, np.int32).reshape(P, R_),
                                  np.array(tgt, np.int32).reshape(P, R_))
    return plan, cur


def fuzz_construct(fdp: Any) -> None:
    plan, _ = real_plan(fdp)
    n = len(plan)
    cols = [getattr(plan, c).tolist() for c in COLUMNS]
    mutated = False
    if n and fdp.ConsumeIntInRange(0, 2) == 0:   # one hostile value
        mutated = True
        c, k = fdp.ConsumeIntInRange(0, 6), fdp.ConsumeIntInRange(0, n - 1)
        cols[c][k] = int(fdp.PickValueInList([2**32, 2**31, -(2**31) - 1, 2**63 - 1, -2]))
    objs, exact, plain, lengths = [], True, True, []
    for c in range(7):
        length = len(cols[c])
        if fdp.ConsumeIntInRange(0, 15) == 15:   # (0 when the data runs out: no change)
            length = fdp.ConsumeIntInRange(0, n + 1)
        obj, logical, how = dress_ints(fdp, cols[c][:length] + [0] * (length - n), (length,))
        objs.append(obj)
        lengths.append(length)
        exact &= logical is not None and all(-(2**31) <= v < 2**31 for v in logical)
        if logical is not None:
            cols[c] = logical   # what the caller's object holds (a narrow dtype wraps)
        plain &= how in PLAIN_DRESSINGS
    if len(set(lengths)) != 1:
        exact = False   # columns of different lengths
    elif lengths[0] != n:
        n = lengths[0]   # every column cut to the same length: a consistent, shorter plan
        mutated = True   # (its rows may no longer make sense together)
    kw: dict[str, Any] = {}
    mode = fdp.ConsumeIntInRange(0, 5)
    if mode == 1:
        cut = fdp.ConsumeIntInRange(0, max(n - 1, 0))
        kw["kind"] = plan.kind.copy()[:cut] if n else np.zeros(1, np.int8)
        kw["instant"] = plan.instant.copy()
        exact = False
    elif mode == 2:
        kw["instant"] = plan.instant.copy()[:max(n - 1, 0)] if n else np.ones(2, bool)
        kw["kind"] = plan.kind.copy()
        exact = False
    elif mode == 3:
        kw["instant"] = [fdp.PickValueInList(["false", "true", 2, 0.5]) for _ in range(n)]
        kw["kind"] = plan.kind.copy()
        exact = exact and n == 0
    elif mode == 4 and plan.target is not None:
        t = plan.target.copy()
        kw["target"] = fdp.PickValueInList([t.ravel(), t.reshape(1, -1, 1),
                                            t.astype(np.float64) + 0.5,
                                            np.full((t.shape[0], 9), -1, np.int32)])
        exact = False
    elif mode == 5:
        kw["prioritized"] = fdp.PickValueInList(["false", 2, None, np.bool_(True)])
        exact = exact and isinstance(kw["prioritized"], np.bool_)
    got = checked(hzfast.MigrationPlan, *objs, **kw)
    what = f"MigrationPlan({[repr(o)[:80] for o in objs]}, {kw!r:.200})"
    if not exact:
        expect_rejected(got, what)
        return
    if rejected(got):
        if plain and not kw and not mutated:
            raise Finding(f"{what}: rejected a real plan's columns: {got!r}")
        return
    for c, name in enumerate(COLUMNS):
        if getattr(got, name).tolist() != cols[c]:
            raise Finding(f"{what}: column {name} {getattr(got, name).tolist()} != {cols[c]}")
    want_kinds = [ref.kind_of(tuple(r[1:])) for r in zip(*cols)]
    if "kind" not in kw and got.kind.tolist() != want_kinds:
        raise Finding(f"{what}: kind {got.kind.tolist()} != reference {want_kinds}")
    # the plan owns its data: changing the caller's arrays afterwards changes nothing
    for obj in objs:
        if isinstance(obj, np.ndarray) and obj.flags.writeable and obj.size:
            obj[...] = 0 if obj.dtype != object else obj
    for c, name in enumerate(COLUMNS):
        if getattr(got, name).tolist() != cols[c]:
            raise Finding(f"{what}: the plan follows later changes of the caller's arrays")


def fuzz_json(fdp: Any) -> None:
    plan, _ = real_plan(fdp)
    doc = json.loads(plan.to_json())
    back = checked(hzfast.MigrationPlan.from_json, plan.to_json())
    if rejected(back) or back != plan:
        raise Finding(f"from_json(to_json(plan)) != plan: {back!r}")
    mode = fdp.ConsumeIntInRange(0, 6)
    must_reject = True
    if mode == 0 and len(plan):   # a value with no exact int32 meaning
        col = fdp.PickValueInList(list(COLUMNS))
        k = fdp.ConsumeIntInRange(0, len(plan) - 1)
        doc["columns"][col][k] = fdp.PickValueInList([2**32, 3.9, -2**31 - 1, "1", True, None,
                                                      [1], 1e300])
    elif mode == 1:
        doc["prioritized"] = fdp.PickValueInList(["false", "true", 0, 1, None, [True]])
    elif mode == 2 and doc.get("target"):
        r = doc["replica_count"]
        doc["replica_count"] = fdp.PickValueInList([r + 1, max(r - 1, 0), 1, -1, 0, "2", 2.0,
                                                    None, 2**40])
        must_reject = doc["replica_count"] != r
    elif mode == 3:
        key = fdp.PickValueInList(["columns", "format", "target", "replica_count"])
        old = doc.get(key)
        doc[key] = fdp.PickValueInList([None, 1, "x", [], {}, [[1, 2], [3]], {"a": []}])
        # an unknown format tag may be read or refused; an unchanged value is no change
        must_reject = key != "format" and doc[key] != old and not (
            key == "target" and doc[key] == [] and not len(plan))   # (0, R): no decisions
    elif mode == 4:
        col = fdp.PickValueInList(list(COLUMNS))
        doc["columns"][col] = doc["columns"][col][:-1] + [0, 0]
    else:
        must_reject = False
    text = json.dumps(doc)
    if mode == 5:   # truncated or nested text
        if fdp.ConsumeBool():
            cut = fdp.ConsumeIntInRange(0, len(text))
            must_reject = cut < len(text)   # (cutting nothing leaves the document whole)
            text = text[:cut]
        else:
            text = "[" * fdp.ConsumeIntInRange(1, 5000) + "]" * fdp.ConsumeIntInRange(0, 5000)
            must_reject = True
    elif mode == 6:
        text = fdp.ConsumeUnicodeNoSurrogates(200)
        must_reject = False
    got = checked(hzfast.MigrationPlan.from_json, text)
    if must_reject and text != plan.to_json():
        expect_rejected(got, f"from_json(mode {mode}: ...{text[-200:]!r})")
    elif not rejected(got) and not isinstance(got, hzfast.MigrationPlan):
        raise Finding(f"from_json returned {type(got).__name__}")
    if fdp.ConsumeBool():   # bytes input, a byte order mark and bad UTF-8
        raw = text.encode() if fdp.ConsumeBool() else b"\xff\xfe" + fdp.ConsumeBytes(20)
        got_b = checked(hzfast.MigrationPlan.from_json, raw)
        if not rejected(got_b) and not isinstance(got_b, hzfast.MigrationPlan):
            raise Finding(f"from_json(bytes) returned {type(got_b).__name__}")
    _ = edgy_int


PIECES = (fuzz_construct, fuzz_json)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    PIECES[fdp.ConsumeIntInRange(0, len(PIECES) - 1)](fdp)
