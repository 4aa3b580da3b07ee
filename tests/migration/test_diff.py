"""hzfast.migration.diff: slot-by-slot comparison against the reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hzfast
from hzfast.migration import TableDiff
from hzfast.reference import planning as ref


@st.composite
def tables(draw, max_p=6):
    R = draw(st.integers(1, 7))
    M = draw(st.integers(R, R + 5))
    P = draw(st.integers(1, max_p))

    def row():
        members = draw(st.permutations(range(M)))[:R]
        holes = draw(st.lists(st.booleans(), min_size=R, max_size=R))
        return [-1 if h else m for m, h in zip(members, holes)]

    cur = np.array([row() for _ in range(P)], dtype=np.int32)
    tgt = np.array([row() for _ in range(P)], dtype=np.int32)
    return cur, tgt


@settings(max_examples=200, deadline=None)
@given(tables())
def test_diff_matches_reference(ct):
    cur, tgt = ct
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


def test_diff_bad_member_count():
    GOOD = np.array([[0, 1, 2], [1, 2, 0]], dtype=np.int32)
    with pytest.raises(ValueError, match="member_count"):
        hzfast.diff(GOOD, GOOD, member_count=2)
    with pytest.raises(TypeError, match="member_count"):
        hzfast.diff(GOOD, GOOD, member_count="3")
