"""hzfast.migration.plan: the MigrationPlan value, its views, JSON and pandas."""
import json

import numpy as np
import pytest

import hzfast
from hzfast import MigrationKind, MigrationPlan
from hzfast.migration import Migration

COLUMNS = ("partition_id", "source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")


def test_public_names():
    for name in ("find_cycles", "fix_cycles", "plan_migrations", "MigrationPlan", "MigrationKind",
                 "prioritize", "apply_migrations", "diff"):
        assert hasattr(hzfast, name), name
    assert set(hzfast.migration.__all__) <= set(dir(hzfast))
    assert [k.name for k in MigrationKind] == [
        "REMOVE", "COPY", "ASSIGN_LOST_OWNER", "SHIFT_UP", "MOVE", "SHIFT_DOWN",
        "SHIFT_UP_SOURCE_DROPPED", "SHIFT_UP_SHIFT_DOWN"]


def test_plan_object(sample):
    _cur, _tgt, plan = sample
    n = len(plan)
    assert n > 0
    for col in COLUMNS:
        arr = getattr(plan, col)
        assert arr.dtype == np.int32 and arr.shape == (n,) and not arr.flags.writeable
    assert plan.kind.dtype == np.int8 and plan.instant.dtype == np.bool_
    recs = list(plan)
    assert len(recs) == n and isinstance(recs[0], Migration)
    assert recs[0] == plan[0] and recs[-1] == plan[-1]
    assert isinstance(recs[0].kind, MigrationKind)
    with pytest.raises(IndexError):
        plan[n]
    sub = plan[plan.kind == MigrationKind.MOVE]
    assert isinstance(sub, MigrationPlan) and all(m.kind == MigrationKind.MOVE for m in sub)
    counts = plan.counts()
    assert set(counts) == set(MigrationKind) and sum(counts.values()) == n
    assert counts[MigrationKind.MOVE] == len(sub)
    inc, out = plan.member_counts()
    assert inc.sum() == (plan.destination >= 0).sum() and out.sum() == (plan.source >= 0).sum()
    inc20, _ = plan.member_counts(20)
    assert inc20.shape == (20,) and inc20[:len(inc)].tolist() == inc.tolist()
    with pytest.raises(ValueError, match="member_count"):
        plan.member_counts(3)
    assert len(plan.queued()) == n - plan.instant.sum()
    with pytest.raises(AttributeError):
        plan.source = None
    assert "MigrationPlan(" in repr(plan)
    p = int(plan.partition_id[0])
    assert all(m.partition_id == p for m in plan.for_partition(p))
    assert plan.decisions().shape == (n, 6)


def test_plan_json_roundtrip(sample):
    _, _, plan = sample
    text = plan.to_json()
    back = MigrationPlan.from_json(text)
    assert back == plan
    np.testing.assert_array_equal(back.kind, plan.kind)
    np.testing.assert_array_equal(back.instant, plan.instant)
    assert json.loads(text)["format"] == "hzfast.MigrationPlan/1"
    with pytest.raises(ValueError, match="MigrationPlan"):
        MigrationPlan.from_json("{}")
    with pytest.raises(ValueError, match="MigrationPlan"):
        MigrationPlan.from_json("not json")


def test_plan_pandas(sample):
    pd = pytest.importorskip("pandas")
    _, _, plan = sample
    df = plan.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == len(plan)
    assert list(df.columns) == [*COLUMNS, "kind", "instant"]
    assert (df["kind"].astype(str) == [MigrationKind(k).name for k in plan.kind]).all()


def test_plan_constructor_validation():
    with pytest.raises(ValueError, match="source has length"):
        MigrationPlan([0, 1], [0], [0], [0], [0], [0], [0])
    with pytest.raises(ValueError, match="partition_id must be 1-dimensional"):
        MigrationPlan([[0]], [0], [0], [0], [0], [0], [0])
