"""Tests of hzfast.protocol.tables.merge_tables (docs/design.md §7.4) against the pure-Python
reference and its numpy form (hzfast.reference.protocol)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hzfast
from hzfast.protocol.tables import DivergedTableError, merge_tables
from hzfast.reference import protocol as ref

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def random_case(rng, P, R, newer=0.3, older=0.3, diverge=0.0):
    """Local and received tables: per partition older / equal / newer received versions;
    equal ones identical unless chosen to diverge."""
    lr = rng.integers(-1, 12, (P, R)).astype(np.int32)
    lv = rng.integers(0, 1_000, P).astype(np.int32)
    kind = rng.random(P)
    rv = lv.copy()
    rv[kind < newer] += rng.integers(1, 5, int((kind < newer).sum())).astype(np.int32)
    is_older = (kind >= newer) & (kind < newer + older)
    rv[is_older] -= rng.integers(1, 5, int(is_older.sum())).astype(np.int32)
    rr = lr.copy()
    changed = kind < newer + older
    rr[changed] = rng.integers(-1, 12, (int(changed.sum()), R))
    equal = ~changed
    bad = equal & (rng.random(P) < diverge)
    rr[bad, rng.integers(0, R, int(bad.sum()))] += 1
    return lr, lv, rr, rv


def check_against_reference(lr, lv, rr, rv):
    before = [a.copy() for a in (lr, lv, rr, rv)]
    exp_r, exp_v, exp_u, exp_d = ref.merge_table(lr.tolist(), lv.tolist(), rr.tolist(),
                                                 rv.tolist())
    np_r, np_v, np_u, np_d = ref.merge_table_numpy(lr, lv, rr, rv)
    assert (np_r.tolist(), np_v.tolist(), np_u.tolist(), np_d.tolist()) == \
        (exp_r, exp_v, exp_u, exp_d)
    if exp_d:
        with pytest.raises(DivergedTableError) as info:
            merge_tables(lr, lv, rr, rv)
        assert info.value.partitions.dtype == np.int32
        assert info.value.partitions.tolist() == exp_d
    else:
        replicas, versions, updated = merge_tables(lr, lv, rr, rv)
        assert replicas.dtype == np.int32 and versions.dtype == np.int32
        assert updated.dtype == np.bool_
        assert replicas.shape == lr.shape and versions.shape == updated.shape == lv.shape
        assert replicas.tolist() == exp_r
        assert versions.tolist() == exp_v
        assert updated.tolist() == exp_u
        for out in (replicas, versions, updated):
            assert out.flags.c_contiguous and out.flags.writeable
            for arr in (lr, lv, rr, rv):
                assert not np.shares_memory(out, arr)
    for arr, old in zip((lr, lv, rr, rv), before):
        assert np.array_equal(arr, old)                  # inputs never mutated


@pytest.mark.parametrize("R", range(1, 8))
@pytest.mark.parametrize("diverge", [0.0, 0.001, 0.5])
def test_random_tables_equal_reference(R, diverge):
    rng = np.random.default_rng(R * 10 + int(diverge * 1000))
    check_against_reference(*random_case(rng, 3_000, R, diverge=diverge))


@pytest.mark.parametrize("newer, older", [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (0.05, 0.05)])
def test_mixes_at_20000_by_7(newer, older):
    rng = np.random.default_rng(int(newer * 100 + older * 10))
    lr, lv, rr, rv = random_case(rng, 20_000, 7, newer=newer, older=older)
    check_against_reference(lr, lv, rr, rv)
    _replicas, versions, updated = merge_tables(lr, lv, rr, rv)
    assert updated.sum() == (rv > lv).sum()
    assert (versions == np.maximum(lv, rv)).all()


@st.composite
def cases(draw):
    P = draw(st.integers(0, 12))
    R = draw(st.integers(1, 7))
    small = st.integers(-1, 3)                       # few values: equal rows are common
    lr = np.array(draw(st.lists(st.lists(small, min_size=R, max_size=R), min_size=P,
                                max_size=P)), dtype=np.int32).reshape(P, R)
    rr = lr.copy()
    for p in range(P):
        if draw(st.booleans()):
            rr[p] = draw(st.lists(small, min_size=R, max_size=R))
    version = st.one_of(st.integers(0, 3), st.sampled_from([I32_MIN, I32_MAX]))
    lv = np.array(draw(st.lists(version, min_size=P, max_size=P)), dtype=np.int32)
    rv = np.array([v if draw(st.booleans()) else draw(version) for v in lv.tolist()],
                  dtype=np.int32)
    return lr, lv, rr, rv


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_merge_property(case):
    check_against_reference(*case)


def test_rule_by_hand():
    local = np.array([[0, 1], [1, 2], [2, 0], [3, 1]], dtype=np.int32)
    lv = np.array([5, 5, 5, 5], dtype=np.int32)
    received = np.array([[9, 9], [1, 2], [0, 2], [3, 1]], dtype=np.int32)
    rv = np.array([4, 5, 6, 7], dtype=np.int32)
    replicas, versions, updated = merge_tables(local, lv, received, rv)
    assert replicas.tolist() == [[0, 1], [1, 2], [0, 2], [3, 1]]   # older row 0 ignored
    assert versions.tolist() == [5, 5, 6, 7]
    assert updated.tolist() == [False, False, True, True]          # equal rows: not updated


def test_divergence_applies_nothing_and_names_the_partitions():
    P = 50
    local = np.tile(np.array([0, 1, 2], dtype=np.int32), (P, 1))
    received = local.copy()
    received[::2, 0] = 7                                  # 25 even partitions differ
    lv = np.full(P, 3, dtype=np.int32)
    rv = lv.copy()
    rv[1] = 9                                              # one newer partition too
    with pytest.raises(DivergedTableError) as info:
        merge_tables(local, lv, received, rv)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.partitions.tolist() == list(range(0, P, 2))
    assert not err.partitions.flags.writeable
    msg = str(err)
    assert "25 partitions" in msg and "nothing applied" in msg
    assert "0, 2, 4" in msg and "38" in msg and "40" not in msg   # the first 20 listed
    assert "... and 5 more" in msg
    assert (local[:, 0] == 0).all() and (lv == 3).all()   # nothing applied to the inputs
    again = pickle.loads(pickle.dumps(err))
    assert again.partitions.tolist() == err.partitions.tolist() and str(again) == msg
    one = DivergedTableError([4])
    assert "in 1 partition " in str(one) and "more" not in str(one)


def test_accepts_lists_and_partition_tables():
    local = hzfast.PartitionTable(np.array([[0, 1], [1, 0]], dtype=np.int32), members=2)
    replicas, versions, updated = merge_tables(local, [1, 1], [[1, 0], [1, 0]], [2, 1])
    assert replicas.tolist() == [[1, 0], [1, 0]] and versions.tolist() == [2, 1]
    assert updated.tolist() == [True, False]


def test_empty_table():
    empty = np.zeros((0, 3), dtype=np.int32)
    none = np.zeros(0, dtype=np.int32)
    replicas, versions, updated = merge_tables(empty, none, empty, none)
    assert replicas.shape == (0, 3) and versions.shape == (0,) and updated.shape == (0,)


def test_bad_input_is_named():
    t = np.zeros((4, 2), dtype=np.int32)
    v = np.zeros(4, dtype=np.int32)
    with pytest.raises(TypeError, match="local_replicas must have dtype int32"):
        merge_tables(t.astype(np.int64), v, t, v)
    with pytest.raises(TypeError, match="received_replicas"):
        merge_tables(t, v, "table", v)
    with pytest.raises(TypeError, match="received_versions must have dtype int32"):
        merge_tables(t, v, t, v.astype(np.int16))
    with pytest.raises(ValueError, match="local_replicas must be 2-dimensional"):
        merge_tables(v, v, t, v)
    with pytest.raises(ValueError, match="replica columns"):
        merge_tables(np.zeros((4, 8), np.int32), v, np.zeros((4, 8), np.int32), v)
    with pytest.raises(ValueError, match="same shape"):
        merge_tables(t, v, np.zeros((4, 3), np.int32), v)
    with pytest.raises(ValueError, match="same shape"):
        merge_tables(t, v, np.zeros((5, 2), np.int32), v)
    with pytest.raises(ValueError, match="local_versions must have length 4"):
        merge_tables(t, v[:3], t, v)
    with pytest.raises(ValueError, match="received_versions must have length 4"):
        merge_tables(t, v, t, np.zeros(5, np.int32))
    with pytest.raises(ValueError, match="C-contiguous"):
        merge_tables(np.zeros((4, 4), np.int32)[:, ::2], v, t, v)
    with pytest.raises(ValueError, match="local_versions must be 1-dimensional"):
        merge_tables(t, t, t, v)


def test_immutable_inputs_are_read_not_written():
    # the result is always fresh: an immutable local table (read-only over bytes, as a
    # PartitionTable's arrays are) is merged, not written into and not refused
    local = np.frombuffer(np.array([[1, 2], [2, 1], [1, 2]], np.int32).tobytes(),
                          np.int32).reshape(3, 2)
    local_v = np.frombuffer(np.array([3, 3, 3], np.int32).tobytes(), np.int32)
    received = np.array([[2, 1], [2, 1], [3, 1]], np.int32)
    received_v = np.array([4, 3, 2], np.int32)
    assert not local.flags.writeable and not local_v.flags.writeable
    reps, vers, updated = merge_tables(local, local_v, received, received_v)
    assert reps.tolist() == [[2, 1], [2, 1], [1, 2]] and vers.tolist() == [4, 3, 3]
    assert updated.tolist() == [True, False, False]
    assert reps.flags.writeable and vers.flags.writeable
    assert local.tolist() == [[1, 2], [2, 1], [1, 2]] and local_v.tolist() == [3, 3, 3]
