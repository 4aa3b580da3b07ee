"""Hand-built plans and plan documents (docs/hardening.md, classes 2 and 5): every column
is checked at construction, nothing is converted silently, the plan owns immutable
copies, and a plan that reaches a kernel cannot make it read or write out of bounds."""
from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest

import hzfast
from hzfast import MigrationPlan
from hzfast._check import MAX_MEMBER_COUNT

COLUMNS = ("partition_id", "source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")


def _tables():
    cur = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]], dtype=np.int32)
    tgt = np.array([[3, 1, 2], [1, 3, 0], [2, 0, -1]], dtype=np.int32)
    return cur, tgt


def _columns(plan):
    return [np.array(getattr(plan, c)) for c in COLUMNS]


@pytest.fixture
def real():
    cur, tgt = _tables()
    return cur, hzfast.plan_migrations(cur, tgt)


# ---------------------------------------------------------------- silent conversions
@pytest.mark.parametrize("column", range(7))
@pytest.mark.parametrize("bad, exc, msg", [
    (2**32, ValueError, "outside"),                # int64 2**32 is not partition 0
    (-(2**31) - 1, ValueError, "outside"),
    (3.9, TypeError, "integers"),                  # 3.9 is not member 3
    (True, TypeError, "bool"),
    ("1", TypeError, "integers"),
    (None, TypeError, "integers"),
])
def test_columns_refuse_values_that_would_be_converted(real, column, bad, exc, msg):
    _, plan = real
    cols = [c.tolist() for c in _columns(plan)]
    cols[column][0] = bad
    with pytest.raises(exc, match=msg) as info:
        MigrationPlan(*cols, target=plan.target)
    assert COLUMNS[column] in str(info.value)


@pytest.mark.parametrize("dtype", [np.float64, np.bool_, object, "U3", np.complex64])
def test_columns_refuse_non_integer_arrays(real, dtype):
    _, plan = real
    cols = _columns(plan)
    cols[1] = cols[1].astype(dtype)
    with pytest.raises(TypeError, match="source"):
        MigrationPlan(*cols, target=plan.target)


def test_int64_and_unsigned_columns_are_taken_by_value(real):
    _, plan = real
    cols = [c.astype(np.int64) for c in _columns(plan)]
    cols[0] = cols[0].astype(np.uint16)
    assert MigrationPlan(*cols, target=plan.target) == plan
    cols[0][0] = 2**16 - 1                          # out of the table, not wrapped
    with pytest.raises(ValueError, match="partition_id holds 65535"):
        MigrationPlan(*cols, target=plan.target)


def test_int64_beyond_int32_is_refused_not_wrapped(real):
    _, plan = real
    cols = [c.astype(np.int64) for c in _columns(plan)]
    cols[0][:] = 2**32                              # would wrap to partition 0
    with pytest.raises(ValueError, match="partition_id holds 4294967296"):
        MigrationPlan(*cols)


@pytest.mark.parametrize("value", ["false", 0, 1, None, np.array([True])])
def test_prioritized_must_be_a_bool(real, value):
    _, plan = real
    with pytest.raises(TypeError, match="prioritized must be a bool"):
        MigrationPlan(*_columns(plan), target=plan.target, prioritized=value)
    assert MigrationPlan(*_columns(plan), target=plan.target,
                         prioritized=np.bool_(False)).prioritized is False


# ------------------------------------------------------------------ shapes, ranges
def test_columns_of_unequal_length(real):
    _, plan = real
    for k in range(1, 7):
        cols = _columns(plan)
        cols[k] = cols[k][:-1]
        with pytest.raises(ValueError, match=f"{COLUMNS[k]} has length"):
            MigrationPlan(*cols, target=plan.target)


@pytest.mark.parametrize("shape", [(), (1, 4)])
def test_columns_must_be_one_dimensional(real, shape):
    _, plan = real
    cols = _columns(plan)
    cols[2] = np.zeros(shape, np.int32)
    with pytest.raises(ValueError, match="source_current_index must be 1-dimensional"):
        MigrationPlan(*cols)


@pytest.mark.parametrize("kind, short", [("instant", [True]), ("kind", [0])])
def test_short_kind_or_instant_is_refused(real, kind, short):
    _, plan = real
    with pytest.raises(ValueError, match=kind):
        MigrationPlan(*_columns(plan), target=plan.target, **{kind: short})


def test_kind_and_instant_must_agree_with_the_fields(real):
    _, plan = real
    kinds = plan.kind.copy()
    kinds[0] = (kinds[0] + 1) % 8
    with pytest.raises(ValueError, match=r"kind\[0\] = .* contradicts"):
        MigrationPlan(*_columns(plan), kind=kinds)
    with pytest.raises(ValueError, match=r"instant\[0\] = .* contradicts"):
        MigrationPlan(*_columns(plan), instant=~plan.instant)
    with pytest.raises(TypeError, match="instant must hold bools"):
        MigrationPlan(*_columns(plan), instant=["false"] * len(plan))
    same = MigrationPlan(*_columns(plan), kind=plan.kind, instant=plan.instant,
                         target=plan.target)
    assert same == plan


@pytest.mark.parametrize("column, value, msg", [
    (0, 3, "partition_id holds 3"),                 # P = 3 (the target's)
    (0, -1, "partition_id holds -1"),
    (1, MAX_MEMBER_COUNT, "source holds 65536"),
    (4, 2**31 - 1, "destination holds 2147483647"),
    (1, -2, "source holds -2"),
    (2, 3, "source_current_index holds 3"),         # R = 3
    (6, -2, "destination_new_index holds -2"),
])
def test_values_out_of_range_name_the_column(real, column, value, msg):
    _, plan = real
    cols = _columns(plan)
    cols[column][0] = value
    with pytest.raises(ValueError, match=msg):
        MigrationPlan(*cols, target=plan.target)


def test_without_target_the_bounds_are_the_limits():
    ok = MigrationPlan([5], [0], [0], [-1], [2], [-1], [6])
    assert len(ok) == 1
    with pytest.raises(ValueError, match="destination_new_index holds 7"):
        MigrationPlan([5], [0], [0], [-1], [2], [-1], [7])


def test_partitions_must_ascend(real):
    _, plan = real
    cols = [c[::-1].copy() for c in _columns(plan)]
    with pytest.raises(ValueError, match="partition_id must be ascending"):
        MigrationPlan(*cols)
    with pytest.raises(ValueError, match="partition order"):
        plan[np.arange(len(plan))[::-1]]


def test_a_new_index_needs_a_member():
    with pytest.raises(ValueError, match="decision 0 is inconsistent"):
        MigrationPlan([0], [-1], [-1], [-1], [-1], [-1], [1])     # nobody to put at 1
    with pytest.raises(ValueError, match="decision 0 is inconsistent"):
        MigrationPlan([0], [-1], [-1], [2], [3], [-1], [0])       # no source to move


@pytest.mark.parametrize("target, exc, msg", [
    (np.zeros((3, 8), np.int32), ValueError, "replica columns"),
    (np.zeros((3,), np.int32), ValueError, "2-dimensional"),
    (np.zeros((3, 3), np.int64), TypeError, "int32"),
    (np.array([[0, 0, 1]] * 3, np.int32), ValueError, "twice"),
    (np.array([[2**31 - 1, -1, -1]] * 3, np.int32), ValueError, "member indices must be <"),
    ([[0.5, 1, 2]] * 3, TypeError, "integers"),
    ([[True, 1, 2]] * 3, TypeError, "bools"),
])
def test_target_is_validated_as_a_table(real, target, exc, msg):
    _, plan = real
    with pytest.raises(exc, match=msg):
        MigrationPlan(*_columns(plan), target=target)


def test_empty_plan_and_empty_lists():
    empty = MigrationPlan([], [], [], [], [], [], [])
    assert len(empty) == 0 and empty.counts()[hzfast.MigrationKind.MOVE] == 0
    reps, vers = hzfast.apply_migrations(np.zeros((2, 1), np.int32), None, empty)
    assert reps.tolist() == [[0], [0]] and vers.tolist() == [0, 0]


# ---------------------------------------------------------- ownership (class 5)
def test_plan_never_flips_or_keeps_caller_arrays(real):
    _, plan = real
    cols = _columns(plan)
    target = np.array(plan.target)
    built = MigrationPlan(*cols, target=target)
    assert all(c.flags.writeable for c in cols) and target.flags.writeable
    before = built.to_json()
    for c in cols:
        c[:] = 0                       # the caller reuses its arrays
    target[:] = -1
    assert built.to_json() == before
    for name in COLUMNS + ("kind", "instant", "target"):
        arr = getattr(built, name)
        assert not any(np.shares_memory(arr, c) for c in cols + [target])
        with pytest.raises(ValueError):
            arr.flags.writeable = True     # immutable for good, not merely read-only


def test_kernel_plans_and_sub_plans_are_immutable(real):
    _, plan = real
    for p in (plan, plan[1:], plan[::2], plan.queued(), hzfast.prioritize(plan),
              plan[plan.source >= 0]):
        for name in COLUMNS + ("kind", "instant"):
            arr = getattr(p, name)
            with pytest.raises(ValueError):
                arr.flags.writeable = True
            with pytest.raises(ValueError):
                arr.base.flags.writeable = True if isinstance(arr.base, np.ndarray) else \
                    _raise()
        # a stepped slice still reaches the kernels (rows contiguous again)
        hzfast.schedule(p) if p.target is not None else None


def _raise():
    raise ValueError


def test_pickle_and_copy_give_an_equal_validated_plan(real):
    _, plan = real
    back = pickle.loads(pickle.dumps(plan))
    assert back == plan and np.array_equal(back.kind, plan.kind)
    assert copy.deepcopy(plan) == plan


# ------------------------------------------------------------- plans at the kernels
def test_hand_built_plans_reach_kernels_only_when_they_fit(real):
    cur, plan = real
    cols = _columns(plan)
    far = MigrationPlan([2], [0], [0], [-1], [5], [-1], [0])
    small = np.zeros((2, 3), np.int32) - 1
    with pytest.raises(ValueError, match="partition id out of range"):
        hzfast.apply_migrations(small, None, far)
    with pytest.raises(ValueError, match="does not fit"):
        hzfast.schedule(far, small)
    with pytest.raises(ValueError, match="does not fit"):
        hzfast.schedule(far, small, sizes=[1.0, 1.0], bandwidth=1.0)
    wide = MigrationPlan(*cols, target=plan.target)
    with pytest.raises(ValueError, match="shape"):
        hzfast.apply_migrations(cur[:, :2].copy(), None, wide)
    with pytest.raises(ValueError, match="shape"):
        hzfast.schedule(wide, cur[:2].copy())


@pytest.mark.parametrize("durations, exc", [
    (["1", "2", "3", "4", "5"], TypeError),     # strings are not durations
    ([True] * 5, TypeError),
    (np.array([1 + 1j] * 5), TypeError),
    (np.full(5, np.nan), ValueError),
    (np.full(5, np.inf), ValueError),
    (np.ones((5, 1)), ValueError),
    (np.float64(1.0), TypeError),
])
def test_schedule_durations_are_numbers(real, durations, exc):
    _, plan = real
    durations = durations[:len(plan)] if isinstance(durations, list) else durations
    if isinstance(durations, np.ndarray) and durations.ndim == 1:
        durations = durations[:len(plan)]
    with pytest.raises(exc, match="durations"):
        hzfast.schedule(plan, durations=durations)


def test_schedule_policy_and_bandwidth_types(real):
    _, plan = real
    with pytest.raises(ValueError, match="policy"):
        hzfast.schedule(plan, policy=["hazelcast"])
    with pytest.raises(ValueError, match="bandwidth"):
        hzfast.schedule(plan, sizes=[1.0, 1.0, 1.0], bandwidth=np.complex128(1))


@pytest.mark.parametrize("field, value, exc", [
    (2, 3.9, TypeError), (4, 2**40, ValueError), (4, 7, ValueError), (5, True, TypeError),
    (2, "0", TypeError),
])
def test_prioritize_checks_every_index_field(field, value, exc):
    d = [0, 0, 2, 1, -1, 0]
    d[field] = value
    with pytest.raises(exc, match=r"decisions\[0\]"):
        hzfast.prioritize([tuple(d)])


# ---------------------------------------------------------------------- documents
def _doc(plan):
    return json.loads(plan.to_json())


def test_json_round_trip_and_load(real, tmp_path):
    _, plan = real
    assert MigrationPlan.from_json(plan.to_json()) == plan
    assert MigrationPlan.from_json(plan.to_json().encode()) == plan
    path = tmp_path / "plan.json"
    plan.save(path)
    assert MigrationPlan.load(path) == plan


@pytest.mark.parametrize("edit, msg", [
    (lambda d: d["columns"]["partition_id"].__setitem__(0, 2**32), "outside"),
    (lambda d: d["columns"]["source"].__setitem__(0, 3.9), "integers"),
    (lambda d: d["columns"]["source"].__setitem__(0, True), "bool"),
    (lambda d: d["columns"]["source"].__setitem__(0, 10**5000 // 10**4990), "outside"),
    (lambda d: d.__setitem__("prioritized", "false"), "prioritized must be a bool"),
    (lambda d: d.__setitem__("replica_count", 1), "replica_count=1"),
    (lambda d: d.__setitem__("replica_count", 3.0), "replica_count"),
    (lambda d: d.__setitem__("replica_count", None), "replica_count"),
    (lambda d: d.__setitem__("target", [[0, 1]]), "replica_count=3"),
    (lambda d: d.__setitem__("target", "x"), "target"),
    (lambda d: d.__setitem__("format", "hzfast.MigrationPlan/2"), "format"),
    (lambda d: d.pop("format"), "format"),
    (lambda d: d.__setitem__("extra", 1), "unexpected fields"),
    (lambda d: d["columns"].pop("source"), "columns must be exactly"),
    (lambda d: d["columns"].__setitem__("source", {"0": 1}), "columns.source must be a list"),
    (lambda d: d.__setitem__("columns", []), "columns must be an object"),
    (lambda d: d["columns"]["source"].pop(), "has length"),
])
def test_json_documents_are_checked_field_by_field(real, edit, msg):
    _, plan = real
    doc = _doc(plan)
    edit(doc)
    with pytest.raises(ValueError, match=msg) as info:
        MigrationPlan.from_json(json.dumps(doc))
    assert "MigrationPlan JSON" in str(info.value)


@pytest.mark.parametrize("text", [
    "", "not json", "[]", "null", "1", '"plan"', "[" * 100_000 + "]" * 100_000,
    '{"a":' * 50_000 + "1" + "}" * 50_000, b"\xff\xfe", "9" * 10_000, "{}",
    '{"format": "hzfast.MigrationPlan/1"}', "NaN",
    ('{"format": "hzfast.MigrationPlan/1", "columns": {"partition_id": [NaN]}}'),
])
def test_hostile_json_gives_one_value_error(text):
    with pytest.raises(ValueError, match="MigrationPlan JSON"):
        MigrationPlan.from_json(text)


def test_json_of_the_wrong_type():
    with pytest.raises(ValueError, match="MigrationPlan JSON"):
        MigrationPlan.from_json(12)      # type: ignore[arg-type]


def test_load_names_the_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_bytes(b'{"format": "hzfast.MigrationPlan/1", "columns": ')
    with pytest.raises(ValueError, match="broken.json"):
        MigrationPlan.load(bad)
    with pytest.raises(FileNotFoundError):
        MigrationPlan.load(tmp_path / "missing.json")


def test_a_bool_is_not_a_position(real):
    _, plan = real
    for item in (True, np.bool_(False)):
        with pytest.raises(TypeError, match="not a bool"):
            plan[item]
    assert plan[np.ones(len(plan), bool)] == plan       # a mask array still works


def test_prioritize_members_must_be_hashable():
    d = {"source": [1], "source_current_index": 0, "source_new_index": -1,
         "destination": 2, "destination_current_index": -1, "destination_new_index": 0}
    with pytest.raises(TypeError, match=r"decisions\[0\]: members must be hashable"):
        hzfast.prioritize([d])


def test_kind_and_instant_lengths_are_checked_even_for_empty_plans():
    # found by fuzzing (fuzz/targets/plan.py): a kind of length 1 broadcast against none
    empty = ([], [], [], [], [], [], [])
    with pytest.raises(ValueError, match="kind has length 1, expected 0"):
        MigrationPlan(*empty, kind=np.array([0], np.int8))
    with pytest.raises(ValueError, match="instant has length 1, expected 0"):
        MigrationPlan(*empty, instant=np.array([True]))
    cur, tgt = _tables()
    plan = hzfast.plan_migrations(cur, tgt)
    with pytest.raises(ValueError, match=f"kind has length {len(plan) + 1}"):
        MigrationPlan(*_columns(plan), kind=np.append(plan.kind, 0))
