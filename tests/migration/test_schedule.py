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


# ------------------------------------------------------- real durations, policies
def events_reference(plan, cur, limit, durations, ranks=None):
    return ref.schedule_events(rows_of(plan), cur.tolist(), limit, list(durations), ranks)


def critical_path_ranks(plan, durations):
    """Ranks of the critical-path policy, computed independently of the library: the
    longest remaining queue (this row and those after it in its run) first, ties in
    queue order."""
    rows = [k for k in range(len(plan)) if not plan.instant[k]]
    runs, run_of = [], {}
    for k in rows:
        if not runs or plan.partition_id[runs[-1][-1]] != plan.partition_id[k] or \
                any(plan.partition_id[j] != plan.partition_id[k] for j in range(runs[-1][-1], k)):
            runs.append([])
        runs[-1].append(k)
        run_of[k] = len(runs) - 1
    remaining = {}
    for run in runs:
        total = 0.0
        for k in reversed(run):
            total += durations[k]
            remaining[k] = total
    order = sorted(rows, key=lambda k: (-remaining[k], run_of[k]))
    ranks = [0] * len(plan)
    for r, k in enumerate(order):
        ranks[k] = r
    return ranks


@pytest.mark.parametrize("seed", range(6))
def test_durations_equal_reference(random_tables, seed):
    rng = np.random.default_rng(seed)
    cur, tgt = random_tables(400, 7, 12, seed=100 + seed)
    plan = hzfast.plan_migrations(cur, tgt)
    limit = int(rng.integers(1, 4))
    # integer durations make many completions coincide; floats make none coincide
    dur = rng.integers(1, 4, len(plan)).astype(float) if seed % 2 else rng.random(len(plan)) + 0.1
    dur[plan.instant] = 0.0
    hz = hzfast.schedule(plan, max_parallel_migrations=limit, durations=dur)
    start, finish = events_reference(plan, cur, limit, dur)
    assert hz.start.tolist() == start and hz.finish.tolist() == finish
    assert hz.policy == "hazelcast" and hz.start_round is None and hz.rounds is None
    # critical-path: its own schedule, or Hazelcast's when that is not longer
    cp = hzfast.schedule(plan, max_parallel_migrations=limit, durations=dur,
                         policy="critical-path")
    cp_start, cp_finish = events_reference(plan, cur, limit, dur, critical_path_ranks(plan, dur))
    if max(cp_finish) < max(finish):
        assert cp.policy == "critical-path"
        assert cp.start.tolist() == cp_start and cp.finish.tolist() == cp_finish
    else:
        assert cp.policy == "hazelcast" and cp.start.tolist() == start
    assert cp.makespan <= hz.makespan


def test_unit_durations_on_every_planner_vector(planner_random_vectors):
    cases = planner_random_vectors["cases"]
    cur = np.array([c["current"] for c in cases], dtype=np.int32)
    tgt = np.array([c["target"] for c in cases], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, tgt)
    for limit in (1, 3, 10):
        s = hzfast.schedule(plan, max_parallel_migrations=limit)
        assert (s.start_round.tolist(), s.rounds) == reference(plan, cur, limit)
        assert s.makespan == s.rounds and s.start.tolist() == np.maximum(s.start_round, 0).tolist()


def test_unit_durations_on_1000_random_plans():
    rng = np.random.default_rng(2024)
    for _ in range(1000):
        P, R = int(rng.integers(1, 12)), int(rng.integers(1, 8))
        M = R + int(rng.integers(0, 5))
        cur = np.array([rng.permutation(M)[:R] for _ in range(P)], dtype=np.int32)
        tgt = np.array([rng.permutation(M)[:R] for _ in range(P)], dtype=np.int32)
        cur[rng.random((P, R)) < 0.2] = -1
        tgt[rng.random((P, R)) < 0.2] = -1
        plan = hzfast.plan_migrations(cur, tgt, prioritize=bool(rng.integers(2)))
        limit = int(rng.integers(1, 4))
        s = hzfast.schedule(plan, max_parallel_migrations=limit)
        assert (s.start_round.tolist(), s.rounds) == reference(plan, cur, limit)


def check_schedule(plan, cur, s, dur, limit):
    """Per-partition order, per-member limits, and the lower bound, from the outside."""
    queued = np.flatnonzero(~plan.instant)
    assert (s.start[plan.instant] == 0).all() and (s.finish[plan.instant] == 0).all()
    np.testing.assert_allclose(s.finish[queued] - s.start[queued], dur[queued])
    for p in np.unique(plan.partition_id[queued]):
        k = queued[plan.partition_id[queued] == p]
        assert (s.start[k[1:]] >= s.finish[k[:-1]]).all()       # one at a time, in order
    # members loaded by each migration: its destination and its source endpoint
    endpoint = np.full(len(plan), -1)
    state = cur.copy()
    for k, m in enumerate(plan):
        row = state[m.partition_id]
        if not m.instant:
            endpoint[k] = m.source if m.source_current_index == 0 else row[0]
        for idx, val in ((m.source_current_index, -1), (m.destination_current_index, -1),
                         (m.destination_new_index, m.destination), (m.source_new_index, m.source)):
            if idx >= 0:
                row[idx] = val
    events = sorted({*s.start[queued], *s.finish[queued]})
    for t in events:            # members' load just after t (a finish at t frees at t)
        live = queued[(s.start[queued] <= t) & (s.finish[queued] > t)]
        load = np.zeros(s.peak_concurrency.shape[0] + 1, dtype=int)
        for k in live:
            for m in {int(plan.destination[k]), int(endpoint[k])} - {-1}:
                load[m] += 1
        assert load.max(initial=0) <= limit
    assert s.peak_concurrency.max(initial=0) <= limit
    assert s.lower_bound <= s.makespan + 1e-9
    # the bound's two parts, recomputed here
    chain = max((dur[plan.partition_id == p].sum() for p in np.unique(plan.partition_id[queued])),
                default=0.0)
    assert s.lower_bound >= chain - 1e-9


@pytest.mark.parametrize("policy", ["hazelcast", "critical-path"])
def test_schedule_invariants_with_sizes(random_tables, policy):
    cur, tgt = random_tables(300, 5, 9, seed=31)
    plan = hzfast.plan_migrations(cur, tgt)
    sizes = np.random.default_rng(1).zipf(1.6, 300).astype(float) * 1000
    s = hzfast.schedule(plan, max_parallel_migrations=2, sizes=sizes, bandwidth=500.0,
                        policy=policy)
    dur = np.where(plan.instant, 0.0, sizes[plan.partition_id] / 500.0)
    check_schedule(plan, cur, s, dur, 2)
    same = hzfast.schedule(plan, max_parallel_migrations=2, durations=dur, policy=policy)
    assert same.start.tolist() == s.start.tolist() and same.policy == s.policy


def test_critical_path_reaches_the_bound_where_hazelcast_does_not():
    # 20 -> 19 members, skewed (Zipf 1.6) partition sizes: Hazelcast's partition order
    # starts some of the largest partitions late
    P = 2000
    t = hzfast.arrange(hzfast.PartitionTable.empty(P, 3), 20)
    cur, _ = hzfast.repair(t, np.arange(20) < 19)
    plan = hzfast.plan_migrations(cur, hzfast.arrange(
        cur, hzfast.Members.from_count(20).with_lite([False] * 19 + [True])))
    sizes = np.minimum(np.random.default_rng(0).zipf(1.6, P), 1e3).astype(float)
    hz = hzfast.schedule(plan, sizes=sizes, bandwidth=1.0)
    cp = hzfast.schedule(plan, sizes=sizes, bandwidth=1.0, policy="critical-path")
    assert cp.makespan <= hz.makespan
    assert cp.makespan <= 1.1 * cp.lower_bound
    assert hz.lower_bound == cp.lower_bound


def test_unit_schedule_fields(random_tables):
    cur, tgt = random_tables(200, 4, 7, seed=3)
    plan = hzfast.plan_migrations(cur, tgt)
    s = hzfast.schedule(plan, max_parallel_migrations=2)
    assert s.start.dtype == np.float64 and s.finish.dtype == np.float64
    assert s.makespan == s.rounds and s.policy == "hazelcast"
    assert s.peak_concurrency.dtype == np.int32 and s.peak_concurrency.max() <= 2
    assert 0 < s.lower_bound <= s.makespan
    check_schedule(plan, cur, s, np.where(plan.instant, 0.0, 1.0), 2)
    d = hzfast.schedule(plan, durations=np.where(plan.instant, 0.0, 2.0))
    assert d.start_round is None and d.rounds is None
    with pytest.raises(ValueError, match="unit durations"):
        d.per_round()
    assert hzfast.SCHEDULE_POLICIES == ("hazelcast", "critical-path")


def test_duration_bad_input():
    cur = np.array([[0, 1], [1, 0]], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, np.array([[2, 1], [3, 0]], dtype=np.int32))
    cases = [
        ({"durations": [1.0]}, ValueError, "one value per plan row"),
        ({"durations": [1.0, -1.0]}, ValueError, ">= 0"),
        ({"durations": [1.0, np.nan]}, ValueError, "finite"),
        ({"durations": [1.0, 1.0], "sizes": [1, 1]}, ValueError, "not both"),
        ({"sizes": [1.0, 2.0]}, ValueError, "go together"),
        ({"bandwidth": 10.0}, ValueError, "go together"),
        ({"sizes": [1.0], "bandwidth": 1.0}, ValueError, "one value per partition"),
        ({"sizes": [1.0, -2.0], "bandwidth": 1.0}, ValueError, "sizes must be finite and >= 0"),
        ({"sizes": [1.0, 2.0], "bandwidth": 0}, ValueError, "bandwidth"),
        ({"sizes": [1.0, 2.0], "bandwidth": "fast"}, ValueError, "bandwidth"),
        ({"policy": "fastest"}, ValueError, "policy must be one of"),
    ]
    for kwargs, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            hzfast.schedule(plan, **kwargs)
    dur = np.array([1.0, 2.0])
    hzfast.schedule(plan, durations=dur)
    assert dur.tolist() == [1.0, 2.0]                        # the caller's array is untouched


def test_many_members_number_pairs_without_the_table():
    # more than 1,024 members: pairs are numbered with np.unique instead of a dense table
    rng = np.random.default_rng(8)
    P, R, M = 600, 3, 1500
    cur = np.array([rng.permutation(M)[:R] for _ in range(P)], dtype=np.int32)
    tgt = np.array([rng.permutation(M)[:R] for _ in range(P)], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, tgt)
    assert plan.max_member() >= 1024
    s = hzfast.schedule(plan, max_parallel_migrations=1)
    assert (s.start_round.tolist(), s.rounds) == reference(plan, cur, 1)
    dur = np.where(plan.instant, 0.0, rng.integers(1, 4, len(plan)).astype(float))
    d = hzfast.schedule(plan, max_parallel_migrations=2, durations=dur)
    start, finish = events_reference(plan, cur, 2, dur)
    assert d.start.tolist() == start and d.finish.tolist() == finish
