"""hzfast.migration.planner: Hazelcast vectors, kernel == reference, properties, bad input."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hzfast
from hzfast import MigrationKind, MigrationPlan, PartitionTable
from hzfast.migration import Migration
from hzfast.reference import planning as ref

KIND_NAMES = {"SHIFT_UP+SHIFT_DOWN": "SHIFT_UP_SHIFT_DOWN", "COPY_LOST_OWNER": "ASSIGN_LOST_OWNER"}


COLUMNS = ("partition_id", "source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")


def letter(x):
    return -1 if x is None else ord(x) - ord("A")


def row_of(letters):
    return [letter(x) for x in letters]


def decision_of(e):
    return (letter(e["source"]), e["sourceCurrentIndex"], e["sourceNewIndex"],
            letter(e["destination"]), e["destinationCurrentIndex"], e["destinationNewIndex"])


def table(rows):
    return np.array(rows, dtype=np.int32).reshape(len(rows), -1)


def per_partition(plan):
    """{partition: [6-tuples]} in plan order."""
    out = {}
    for m in plan:
        out.setdefault(m.partition_id, []).append(m.decision)
    return out


def plan_rows(plan):
    return list(zip(*(getattr(plan, c).tolist() for c in COLUMNS)))


def test_cycle_vectors(hz_vectors):
    cases = hz_vectors["cycle_tests"]
    assert len(cases) == 10
    cur = table([row_of(c["current"]) for c in cases])
    tgt = table([row_of(c["target"]) for c in cases])
    cur0, tgt0 = cur.copy(), tgt.copy()
    cyclic = hzfast.find_cycles(cur, tgt)
    fixed = hzfast.fix_cycles(cur, tgt)
    assert cyclic.dtype == np.bool_ and cyclic.shape == (10,)
    assert fixed.dtype == np.int32 and fixed.shape == cur.shape
    for p, c in enumerate(cases):
        assert bool(cyclic[p]) is c["isCyclic"], c["name"]
        assert fixed[p].tolist() == row_of(c["target_after_fixCycle"]), c["name"]
        assert ref.is_cyclic(row_of(c["current"]), row_of(c["target"])) is c["isCyclic"]
        assert ref.fix_cycle(row_of(c["current"]), row_of(c["target"])) == (
            c["fixCycle_returns"], row_of(c["target_after_fixCycle"]))
    np.testing.assert_array_equal(cur, cur0)
    np.testing.assert_array_equal(tgt, tgt0)
    # the fixed target is cycle-free and fixing it again changes nothing
    assert not hzfast.find_cycles(cur, fixed).any()
    np.testing.assert_array_equal(hzfast.fix_cycles(cur, fixed), fixed)


def _check_planner_cases(cases):
    cur = table([row_of(c["current"]) for c in cases])
    tgt = table([row_of(c["target"]) for c in cases])
    raw = hzfast.plan_migrations(cur, tgt, prioritize=False)
    pri = hzfast.plan_migrations(cur, tgt)
    assert not raw.prioritized and pri.prioritized
    raw_by_p = per_partition(raw)
    queued_by_p = per_partition(pri.queued())
    for p, c in enumerate(cases):
        expected = [decision_of(e) for e in c["expected"]]
        assert raw_by_p.get(p, []) == expected, c["name"]
        assert queued_by_p.get(p, []) == [decision_of(e) for e in c["expected_after_prioritize"]], \
            c["name"]
        assert raw.target[p].tolist() == row_of(c["target_after_fixCycle"]), c["name"]
        kinds = [m.kind.name for m in raw.for_partition(p)]
        assert kinds == [KIND_NAMES.get(e["derived_type"], e["derived_type"])
                         for e in c["expected"]], c["name"]
        # the reference agrees too
        _fixed, decisions = ref.plan_partition(row_of(c["current"]), row_of(c["target"]))
        assert decisions == expected
    np.testing.assert_array_equal(raw.target, pri.target)
    return raw, pri


def test_migration_planner_vectors(hz_vectors):
    cases = hz_vectors["migration_planner_tests"]
    assert len(cases) == 16
    _check_planner_cases(cases)


def test_random_planner_vectors(hz_vectors):
    cases = hz_vectors["random_planner_vectors"]
    assert len(cases) == 400
    raw, pri = _check_planner_cases(cases)
    assert len(raw) == sum(len(c["expected"]) for c in cases)
    assert len(raw) == len(pri)


def test_planner_random_json(planner_random_vectors):
    cases = planner_random_vectors["cases"]
    assert len(cases) == 5000
    cur = table([c["current"] for c in cases])
    tgt = table([c["target"] for c in cases])
    cur0, tgt0 = cur.copy(), tgt.copy()
    raw = hzfast.plan_migrations(cur, tgt, prioritize=False)
    pri = hzfast.plan_migrations(cur, tgt)
    np.testing.assert_array_equal(raw.target, table([c["target_after_fix"] for c in cases]))
    np.testing.assert_array_equal(cur, cur0)
    np.testing.assert_array_equal(tgt, tgt0)
    # whole-table comparison, field by field, in order
    exp_raw = np.array([[p, *d] for p, c in enumerate(cases) for d in c["raw"]], dtype=np.int32)
    exp_queued = np.array([[p, *d] for p, c in enumerate(cases) for d in c["queued"]],
                          dtype=np.int32)
    q = pri.queued()
    for i, col in enumerate(COLUMNS):
        np.testing.assert_array_equal(getattr(raw, col), exp_raw[:, i], err_msg=col)
        np.testing.assert_array_equal(getattr(q, col), exp_queued[:, i], err_msg=col)
    # prioritize=True = instant decisions first, then the queued order
    inst = pri.instant
    first_queued = {}
    for i, (p, is_inst) in enumerate(zip(pri.partition_id.tolist(), inst.tolist())):
        if not is_inst:
            first_queued.setdefault(p, i)
        else:
            assert i < first_queued.get(p, 1 << 60)
    assert sorted(plan_rows(raw)) == sorted(plan_rows(pri))
    assert np.all(np.diff(pri.partition_id) >= 0)


def test_prioritize_vectors(hz_vectors):
    cases = hz_vectors["prioritize_tests"]
    assert len(cases) == 6
    for c in cases:
        # dicts with Hazelcast's field names and letters / None as members
        out = hzfast.prioritize(c["input"])
        assert [d["id"] for d in out] == c["expected_order"], c["name"]
        assert isinstance(out, list)
        # Migration records with member indices
        recs = [Migration(0, letter(d["source"]), d["sourceCurrentIndex"], d["sourceNewIndex"],
                          letter(d["destination"]), d["destinationCurrentIndex"],
                          d["destinationNewIndex"], MigrationKind.MOVE, False) for d in c["input"]]
        ids = {r: d["id"] for r, d in zip(recs, c["input"])}
        out = hzfast.prioritize(tuple(recs))
        assert isinstance(out, tuple)
        assert [ids[r] for r in out] == c["expected_order"], c["name"]
        # 6-tuples
        tuples = [r.decision for r in recs]
        assert [ids[recs[tuples.index(t)]] for t in hzfast.prioritize(tuples)] == \
            c["expected_order"]
        # reference
        keyed = [(*r.decision, d["id"]) for r, d in zip(recs, c["input"])]
        assert [k[6] for k in ref.prioritize(keyed)] == c["expected_order"]


def test_prioritize_plan_matches_plan_migrations(planner_random_vectors):
    cases = planner_random_vectors["cases"][:1000]
    cur = table([c["current"] for c in cases])
    tgt = table([c["target"] for c in cases])
    raw = hzfast.plan_migrations(cur, tgt, prioritize=False)
    pri = hzfast.prioritize(raw)
    assert isinstance(pri, MigrationPlan) and pri.prioritized
    assert pri == hzfast.plan_migrations(cur, tgt)
    # one partition's plan
    p = int(raw.partition_id[len(raw) // 2])
    assert hzfast.prioritize(raw.for_partition(p)) == hzfast.plan_migrations(
        cur, tgt).for_partition(p)


def test_prioritize_bad_input():
    with pytest.raises(TypeError, match="decisions"):
        hzfast.prioritize(42)
    with pytest.raises(TypeError, match=r"decisions\[1\]"):
        hzfast.prioritize([(1, 0, -1, 2, -1, 0), "x"])
    with pytest.raises(ValueError, match=r"decisions\[0\] lacks"):
        hzfast.prioritize([{"source": 1}])
    with pytest.raises(TypeError, match="source_current_index"):
        hzfast.prioritize([(1, 0.5, -1, 2, -1, 0)])
    assert hzfast.prioritize([]) == []


def reference_columns(cur, tgt, prioritized):
    fixed, rows = ref.plan_table(cur.tolist(), tgt.tolist(), prioritized)
    arr = np.array([r[:7] for r in rows], dtype=np.int32).reshape(-1, 7)
    kinds = np.array([r[7] for r in rows], dtype=np.int8)
    inst = np.array([r[8] for r in rows], dtype=bool)
    return np.array(fixed, dtype=np.int32).reshape(cur.shape), arr, kinds, inst


def assert_plan_equals_reference(plan, cur, tgt, prioritized):
    fixed, arr, kinds, inst = reference_columns(cur, tgt, prioritized)
    np.testing.assert_array_equal(plan.target, fixed)
    assert len(plan) == len(arr)
    for i, col in enumerate(COLUMNS):
        np.testing.assert_array_equal(getattr(plan, col), arr[:, i], err_msg=col)
    np.testing.assert_array_equal(plan.kind, kinds)
    np.testing.assert_array_equal(plan.instant, inst)


def test_kernel_equals_reference_100k(random_tables):
    cur, tgt = random_tables(100_000, 7, 12, seed=20240601)
    plan = hzfast.plan_migrations(cur, tgt)
    assert_plan_equals_reference(plan, cur, tgt, True)
    cyc = hzfast.find_cycles(cur, tgt)
    assert cyc.sum() > 1000          # the generator does produce cycles
    fixed = np.array([ref.fix_cycle(c, t)[1] for c, t in zip(cur.tolist(), tgt.tolist())],
                     dtype=np.int32)
    np.testing.assert_array_equal(hzfast.fix_cycles(cur, tgt), fixed)
    np.testing.assert_array_equal(cyc, (fixed != tgt).any(axis=1))
    # every kind occurs
    assert all(v > 0 for v in plan.counts().values())


@pytest.mark.parametrize("prioritized", [True, False])
def test_kernel_pattern_reuse_equals_reference(random_tables, prioritized):
    """The kernel plans each row pattern once per call and renames members for the
    repeats: repeats under random member renamings (cycles included) and far more
    distinct patterns than it remembers must both match the reference exactly."""
    rng = np.random.default_rng(7)
    base_cur, base_tgt = random_tables(300, 7, 12, seed=11)
    reps = 40
    # each base row repeated under a random injective renaming of its 12 members
    perms = np.stack([rng.permutation(1000)[:12] for _ in range(reps)]).astype(np.int32)
    idx = np.repeat(np.arange(reps), len(base_cur))[:, None]

    def rename(t):
        t = np.tile(t, (reps, 1))
        return np.ascontiguousarray(np.where(t < 0, -1, perms[idx, np.maximum(t, 0)]),
                                    dtype=np.int32)

    cur, tgt = rename(base_cur), rename(base_tgt)
    order = rng.permutation(len(cur))            # interleave the repeats
    cur, tgt = np.ascontiguousarray(cur[order]), np.ascontiguousarray(tgt[order])
    assert hzfast.find_cycles(cur, tgt).sum() > 100
    plan = hzfast.plan_migrations(cur, tgt, prioritize=prioritized)
    assert_plan_equals_reference(plan, cur, tgt, prioritized)
    # many distinct patterns (more than any per-call cache holds)
    cur2, tgt2 = random_tables(20_000, 7, 40, seed=3)
    plan2 = hzfast.plan_migrations(cur2, tgt2, prioritize=prioritized)
    assert_plan_equals_reference(plan2, cur2, tgt2, prioritized)


@pytest.mark.parametrize("R", [1, 2, 3, 4, 5, 6])
def test_kernel_equals_reference_small_r(random_tables, R):
    cur, tgt = random_tables(5_000, R, 3 + 2 * R, seed=R)
    for prioritized in (False, True):
        plan = hzfast.plan_migrations(cur, tgt, prioritize=prioritized)
        assert_plan_equals_reference(plan, cur, tgt, prioritized)


def test_large_member_indices(random_tables):
    # members above 64 exercise the validation filter's exact fallback
    cur, tgt = random_tables(3_000, 7, 200, seed=5)
    big = np.where(cur >= 0, cur * 64 + 1000, -1).astype(np.int32)
    bigt = np.where(tgt >= 0, tgt * 64 + 1000, -1).astype(np.int32)
    plan = hzfast.plan_migrations(big, bigt)
    assert_plan_equals_reference(plan, big, bigt, True)


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


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_plan_properties(ct):
    cur, tgt = ct
    cur0, tgt0 = cur.copy(), tgt.copy()
    raw = hzfast.plan_migrations(cur, tgt, prioritize=False)
    pri = hzfast.plan_migrations(cur, tgt)
    np.testing.assert_array_equal(cur, cur0)
    np.testing.assert_array_equal(tgt, tgt0)
    assert_plan_equals_reference(raw, cur, tgt, False)
    assert_plan_equals_reference(pri, cur, tgt, True)
    fixed = raw.target
    assert not hzfast.find_cycles(cur, fixed).any()
    # decisions per partition never exceed the differing slots (the kernel's bound)
    diff_slots = (cur != fixed).sum(axis=1)
    counts = np.bincount(raw.partition_id, minlength=len(cur))
    assert np.all(counts <= diff_slots)
    for plan in (raw, pri):
        # applying in order reaches the fixed target; apply_migrations checks duplicates
        reps, vers = hzfast.apply_migrations(cur, np.zeros(len(cur), np.int32), plan)
        np.testing.assert_array_equal(reps, fixed)
        # step by step: no duplicate, a filled owner slot stays filled (when T has an owner)
        rows = [list(r) for r in cur.tolist()]
        for m in plan:
            row = rows[m.partition_id]
            had_owner = row[0] != -1
            ref.apply_decision(row, m.decision)
            assert not ref.has_duplicate(row)
            if had_owner and fixed[m.partition_id, 0] != -1:
                assert row[0] != -1
        # kinds match their fields
        for m in plan:
            assert m.kind == ref.kind_of(m.decision)
            assert m.instant == ref.is_instant(m.decision)
            k = m.kind
            if k == MigrationKind.REMOVE:
                assert m.destination == -1 and m.source >= 0 and m.source_current_index >= 0
            elif k in (MigrationKind.COPY, MigrationKind.ASSIGN_LOST_OWNER):
                assert m.source == -1 and m.destination_current_index == -1
                assert (m.destination_new_index == 0) == (k == MigrationKind.ASSIGN_LOST_OWNER)
            elif k == MigrationKind.SHIFT_UP:
                assert m.source == -1 and m.destination_current_index > m.destination_new_index
            elif k == MigrationKind.MOVE:
                assert m.source >= 0 and m.destination_current_index == -1
                assert m.source_new_index == -1
            elif k == MigrationKind.SHIFT_DOWN:
                assert m.source_new_index > m.source_current_index
            else:
                # Hazelcast's chain may "shift up" from a hotter slot into a colder one
                assert m.source >= 0 and m.destination_current_index >= 0
                assert m.destination_current_index != m.destination_new_index >= 0
                assert m.source_current_index == m.destination_new_index
        # versions: 1 + (sni > -1) + (dci > -1) per decision
        _, vref = ref.apply_rows(cur.tolist(), [0] * len(cur), plan_rows(plan))
        assert vers.tolist() == vref
    # all queued migrations of a partition come after its instant ones
    for p in set(pri.partition_id.tolist()):
        inst = pri.for_partition(p).instant.tolist()
        assert inst == sorted(inst, reverse=True)


def test_partition_table_input(sample):
    cur, tgt, plan = sample
    members = hzfast.Members.from_count(12)
    a = PartitionTable(cur, members=members)
    b = PartitionTable(tgt, members=members)
    assert hzfast.plan_migrations(a, b) == plan
    np.testing.assert_array_equal(hzfast.find_cycles(a, b), hzfast.find_cycles(cur, tgt))
    reps, vers = hzfast.apply_migrations(a, None, plan)
    np.testing.assert_array_equal(reps, plan.target)
    np.testing.assert_array_equal(vers - a.versions,
                                  hzfast.apply_migrations(cur, None, plan)[1])
    assert hzfast.diff(a, b).slot_moves == int((cur != tgt).sum())


def test_lists_accepted():
    plan = hzfast.plan_migrations([[0, 1, 2]], [[3, 1, 4]])
    assert [(m.kind, m.source, m.destination) for m in plan] == [
        (MigrationKind.MOVE, 0, 3), (MigrationKind.MOVE, 2, 4)]


def test_empty_and_edge_tables():
    for P, R in ((0, 1), (0, 7), (1, 1), (3, 7)):
        z = np.full((P, R), -1, dtype=np.int32)
        plan = hzfast.plan_migrations(z, z)
        assert len(plan) == 0 and plan.target.shape == (P, R)
        assert hzfast.find_cycles(z, z).shape == (P,)
        assert hzfast.fix_cycles(z, z).shape == (P, R)
        assert hzfast.diff(z, z).slot_moves == 0
        reps, vers = hzfast.apply_migrations(z, np.zeros(P, np.int32), plan)
        assert reps.shape == (P, R) and vers.shape == (P,)
        assert plan.counts()[MigrationKind.MOVE] == 0
    # all slots moving, 7 replicas: an empty row filled -> lost owner + copies
    cur = np.full((1, 7), -1, dtype=np.int32)
    tgt = np.arange(7, dtype=np.int32).reshape(1, 7)
    plan = hzfast.plan_migrations(cur, tgt)
    assert [m.kind for m in plan] == [MigrationKind.ASSIGN_LOST_OWNER] + [MigrationKind.COPY] * 6
    assert plan.instant.tolist() == [True] + [False] * 6
    # a table drained completely: removals only, all instant
    plan = hzfast.plan_migrations(tgt, cur)
    assert all(m.kind == MigrationKind.REMOVE and m.instant for m in plan)
    # a 7-cycle is not migrated
    rot = np.roll(tgt, 1, axis=1)
    assert hzfast.find_cycles(tgt, rot).tolist() == [True]
    assert len(hzfast.plan_migrations(tgt, rot)) == 0


GOOD = np.array([[0, 1, 2], [1, 2, 0]], dtype=np.int32)


def _calls():
    def plan(a, b):
        return hzfast.plan_migrations(a, b)
    return [hzfast.find_cycles, hzfast.fix_cycles, plan, hzfast.diff]


@pytest.mark.parametrize("fn", _calls())
@pytest.mark.parametrize("which", [0, 1])
def test_bad_tables(fn, which):
    name = ("current", "target")[which]

    def call(bad):
        good = GOOD.copy()
        args = [good, bad] if which else [bad, good]
        snapshot = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            fn(*args)
        finally:
            for a, s in zip(args, snapshot):
                if isinstance(a, np.ndarray):
                    np.testing.assert_array_equal(a, s)   # never mutated

    with pytest.raises(ValueError, match=f"{name}.*same shape|same shape"):
        call(np.zeros((3, 3), dtype=np.int32))
    with pytest.raises(ValueError, match=name):
        call(np.zeros((2, 8), dtype=np.int32) - 1)
    with pytest.raises(ValueError, match=name):
        call(np.zeros((2, 0), dtype=np.int32))
    with pytest.raises(ValueError, match=rf"{name}: partition 1 holds member 2 twice"):
        call(np.array([[0, 1, 2], [2, -1, 2]], dtype=np.int32))
    with pytest.raises(ValueError, match=rf"{name}\[0, 1\] = -2"):
        call(np.array([[0, -2, 2], [1, 2, 0]], dtype=np.int32))
    with pytest.raises(TypeError, match=f"{name} must have dtype int32"):
        call(GOOD.astype(np.int64))
    with pytest.raises(ValueError, match=f"{name} must be C-contiguous"):
        call(np.asfortranarray(np.array([[0, 1, 2], [1, 2, 0]], dtype=np.int32)))
    with pytest.raises(TypeError, match=name):
        call("not a table")
    with pytest.raises(ValueError, match=name):
        call(np.zeros(3, dtype=np.int32))


def test_duplicate_detected_far_in_table(random_tables):
    cur, tgt = random_tables(50_000, 7, 12, seed=3)
    bad = tgt.copy()
    row = bad[49_999]
    m = int(np.max(row))
    bad[49_999] = [m, m, -1, -1, -1, -1, -1]
    with pytest.raises(ValueError, match="target: partition 49999 holds member"):
        hzfast.plan_migrations(cur, bad)
    bad = cur.copy()
    bad[12_345, 6] = bad[12_345, 0] if bad[12_345, 0] >= 0 else 5
    bad[12_345, 0] = bad[12_345, 6]
    with pytest.raises(ValueError, match="current: partition 12345 holds member"):
        hzfast.plan_migrations(bad, tgt)
    # unchanged rows are validated too
    same = cur.copy()
    same[7] = [1, 1, -1, -1, -1, -1, -1]
    with pytest.raises(ValueError, match="partition 7 holds member 1 twice"):
        hzfast.plan_migrations(same, same)
