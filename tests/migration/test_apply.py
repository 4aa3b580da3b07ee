"""hzfast.migration.apply: replaying plans, versions, bad plans."""

import numpy as np
import pytest

import hzfast
from hzfast import MigrationPlan


def test_apply_versions_and_no_mutation(sample):
    cur, _tgt, plan = sample
    v = np.arange(len(cur), dtype=np.int32)
    cur0, v0 = cur.copy(), v.copy()
    reps, vers = hzfast.apply_migrations(cur, v, plan)
    np.testing.assert_array_equal(cur, cur0)
    np.testing.assert_array_equal(v, v0)
    inc = 1 + (plan.source_new_index > -1) + (plan.destination_current_index > -1)
    expect = v0 + np.bincount(plan.partition_id, weights=inc, minlength=len(cur)).astype(np.int32)
    np.testing.assert_array_equal(vers, expect)
    np.testing.assert_array_equal(reps, plan.target)


def test_apply_bad_input(sample):
    cur, _tgt, plan = sample
    v = np.zeros(len(cur), np.int32)
    with pytest.raises(TypeError, match="plan must be a MigrationPlan"):
        hzfast.apply_migrations(cur, v, [1, 2])
    with pytest.raises(ValueError, match="versions must have length"):
        hzfast.apply_migrations(cur, v[:-1], plan)
    with pytest.raises(TypeError, match="versions must have dtype int32"):
        hzfast.apply_migrations(cur, v.astype(np.int64), plan)
    with pytest.raises(ValueError, match="plan is for a table of shape"):
        hzfast.apply_migrations(cur[:, :3].copy(), v, plan)
    with pytest.raises(ValueError, match="replicas: partition 0 holds member"):
        bad = cur.copy()
        bad[0] = [1, 1, -1, -1, -1, -1, -1]
        hzfast.apply_migrations(bad, v, plan)
    # a migration that would put a member twice in a row: ValueError, nothing mutated
    reps = np.array([[0, 1, -1]], dtype=np.int32)
    vers = np.array([5], dtype=np.int32)
    dup = MigrationPlan([0], [-1], [-1], [-1], [1], [-1], [2])     # COPY member 1 to slot 2
    with pytest.raises(ValueError, match=r"migration 0 .*partition 0.*twice"):
        hzfast.apply_migrations(reps, vers, dup)
    assert reps.tolist() == [[0, 1, -1]] and vers.tolist() == [5]
    # second migration fails: still nothing mutated, no partial result
    two = MigrationPlan([0, 0], [-1, -1], [-1, -1], [-1, -1], [2, 0], [-1, -1], [2, 2])
    with pytest.raises(ValueError, match="migration 1"):
        hzfast.apply_migrations(reps, vers, two)
    assert reps.tolist() == [[0, 1, -1]] and vers.tolist() == [5]
    # source not where the plan says
    wrong = MigrationPlan([0], [3], [0], [-1], [4], [-1], [0])
    with pytest.raises(ValueError, match="source is not at source_current_index"):
        hzfast.apply_migrations(reps, vers, wrong)
    # partition out of range, index out of range
    with pytest.raises(ValueError, match="partition id out of range"):
        hzfast.apply_migrations(reps, vers, MigrationPlan([1], [0], [0], [-1], [4], [-1], [0]))
    with pytest.raises(ValueError, match="replica index out of range"):
        hzfast.apply_migrations(reps, vers, MigrationPlan([0], [0], [0], [-1], [4], [-1], [3]))
