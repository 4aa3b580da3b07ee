"""hzfast.migration.diff: slot-by-slot comparison against the reference."""

import numpy as np
import pytest

import hzfast
from hzfast.migration import TableDiff
from hzfast.reference import planning as ref


@pytest.mark.parametrize("seed", range(40))
def test_diff_matches_reference(random_tables, seed):
    R = 1 + seed % 7
    cur, tgt = random_tables(1 + 7 * seed, R, R + seed % 6, seed=seed)
    d = hzfast.diff(cur, tgt)
    M = int(max(cur.max(), tgt.max())) + 1
    mask, changed, gains, losses, moves = ref.diff(cur.tolist(), tgt.tolist(), M)
    assert isinstance(d, TableDiff)
    assert d.changed_slots.dtype == np.bool_
    assert d.changed_slots.tolist() == mask
    assert d.changed_partitions.tolist() == changed
    assert d.gains.shape == (M, cur.shape[1]) and d.gains.tolist() == gains
    assert d.losses.tolist() == losses
    assert d.slot_moves == moves
    d2 = hzfast.diff(cur, tgt, member_count=M + 3)
    assert d2.gains.shape == (M + 3, cur.shape[1])


def test_diff_of_empty_tables():
    empty = np.full((3, 2), -1, dtype=np.int32)
    d = hzfast.diff(empty, empty)
    assert d.slot_moves == 0 and d.gains.shape == (0, 2) and d.changed_partitions.size == 0


def test_diff_bad_member_count():
    GOOD = np.array([[0, 1, 2], [1, 2, 0]], dtype=np.int32)
    with pytest.raises(ValueError, match="member_count"):
        hzfast.diff(GOOD, GOOD, member_count=2)
    with pytest.raises(TypeError, match="member_count"):
        hzfast.diff(GOOD, GOOD, member_count="3")
