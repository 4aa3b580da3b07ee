"""Tests of hzfast.schedule against the pure-Python reference (docs/design.md §6)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hzfast
from hzfast import MigrationPlan
from hzfast.reference import planning as ref

COLUMNS = ("partition_id", "source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")


def rows_of(plan):
    return [(*r, int(k), bool(i)) for r, k, i in zip(
        zip(*(getattr(plan, c).tolist() for c in COLUMNS)), plan.kind, plan.instant)]


def reference(plan, cur, limit):
    return ref.schedule_rows(rows_of(plan), cur.tolist(), limit)


@pytest.mark.parametrize("limit", [1, 2, 10])
@pytest.mark.parametrize("prioritized", [True, False])
def test_schedule_equals_reference(random_tables, limit, prioritized):
    cur, tgt = random_tables(3_000, 7, 12, seed=limit)
    plan = hzfast.plan_migrations(cur, tgt, prioritize=prioritized)
    s = hzfast.schedule(plan, max_parallel_migrations=limit)
    start, rounds = reference(plan, cur, limit)
    assert s.rounds == rounds
    assert s.start_round.tolist() == start
    # with current= given explicitly: same answer
    s2 = hzfast.schedule(plan, max_parallel_migrations=limit, current=cur)
    assert s2.start_round.tolist() == start


def test_schedule_invariants(random_tables):
    cur, tgt = random_tables(2_000, 7, 12, seed=9)
    plan = hzfast.plan_migrations(cur, tgt)
    limit = 3
    s = hzfast.schedule(plan, max_parallel_migrations=limit)
    assert s.start_round.dtype == np.int32 and s.start_round.shape == (len(plan),)
    assert ((s.start_round == -1) == plan.instant).all()
    assert s.per_round().sum() == (~plan.instant).sum()
    assert s.per_round().min() >= 1
    # per partition: strictly one at a time, in queue order
    for p in np.unique(plan.partition_id)[:300]:
        idx = np.flatnonzero((plan.partition_id == p) & ~plan.instant)
        assert np.all(np.diff(s.start_round[idx]) >= 1)
    # per member and round: at most `limit` as destination
    for r in range(s.rounds):
        k = s.in_round(r)
        assert np.bincount(plan.destination[k]).max() <= limit


def test_schedule_reconstructs_current(random_tables):
    cur, tgt = random_tables(2_000, 7, 12, seed=4)
    plan = hzfast.plan_migrations(cur, tgt)
    for limit in (1, 10):
        a = hzfast.schedule(plan, max_parallel_migrations=limit)
        b = hzfast.schedule(plan, max_parallel_migrations=limit, current=cur)
        assert a.rounds == b.rounds
        assert a.start_round.tolist() == b.start_round.tolist()


@st.composite
def tables(draw):
    R = draw(st.integers(1, 7))
    M = draw(st.integers(R, R + 4))
    P = draw(st.integers(1, 6))

    def row():
        members = draw(st.permutations(range(M)))[:R]
        holes = draw(st.lists(st.booleans(), min_size=R, max_size=R))
        return [-1 if h else m for m, h in zip(members, holes)]

    return (np.array([row() for _ in range(P)], dtype=np.int32),
            np.array([row() for _ in range(P)], dtype=np.int32))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4))
def test_schedule_property(ct, limit):
    cur, tgt = ct
    plan = hzfast.plan_migrations(cur, tgt)
    s = hzfast.schedule(plan, max_parallel_migrations=limit)
    start, rounds = reference(plan, cur, limit)
    assert (s.start_round.tolist(), s.rounds) == (start, rounds)


def test_schedule_bad_input():
    cur = np.array([[0, 1]], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, np.array([[2, 1]], dtype=np.int32))
    with pytest.raises(TypeError, match="plan must be a MigrationPlan"):
        hzfast.schedule([1, 2])
    with pytest.raises(ValueError, match="max_parallel_migrations"):
        hzfast.schedule(plan, max_parallel_migrations=0)
    with pytest.raises(TypeError, match="max_parallel_migrations"):
        hzfast.schedule(plan, max_parallel_migrations=1.5)
    bare = MigrationPlan([0], [0], [0], [-1], [2], [-1], [0])
    with pytest.raises(ValueError, match="current="):
        hzfast.schedule(bare)
    assert hzfast.schedule(bare, current=cur).start_round.tolist() == [0]
    with pytest.raises(ValueError, match="shape"):
        hzfast.schedule(plan, current=np.full((2, 2), -1, np.int32))
    far = MigrationPlan([5], [0], [0], [-1], [2], [-1], [0])
    with pytest.raises(ValueError, match="does not fit"):
        hzfast.schedule(far, current=cur)
    empty = hzfast.plan_migrations(cur, cur)
    s = hzfast.schedule(empty)
    assert s.rounds == 0 and s.start_round.shape == (0,)
