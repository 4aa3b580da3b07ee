"""Tests for hzfast.arrangement: repair, arrange, arrangement_report (issue 4)."""
import json

import numpy as np
import pytest

from hzfast import Members, PartitionTable, _arrange
from hzfast import arrangement as A
from hzfast.arrangement import arrange, arrangement_report, repair
from hzfast.migration import find_cycles, fix_cycles
from hzfast.reference import arrangement as ref


def empty(P, R=7):
    return np.full((P, R), -1, dtype=np.int32)


def check_target(cur, tgt, members, grouping="per_member", replica_count=None):
    """Every invariant a target must satisfy; returns the report."""
    rep = arrangement_report(cur, tgt, members, grouping=grouping, replica_count=replica_count)
    assert rep.valid
    assert tgt[:, rep.filled_replica_count:].max(initial=-1) == -1
    assert rep.cycle_count == 0
    assert not find_cycles(A._pad(np.asarray(cur), tgt.shape[1]), tgt).any()
    return rep


# ----------------------------------------------------------------------------- repair
def test_repair_example_and_versions():
    reps = np.array([[2, 0, 1], [0, 2, 1], [2, -1, -1], [1, 0, 2]], dtype=np.int32)
    before = reps.copy()
    new, vers = repair(reps, [0, 1])
    assert new.tolist() == [[0, -1, 1], [0, -1, 1], [-1, -1, -1], [1, 0, -1]]
    # +1 per emptied slot, +2 per promotion (index 0 filled, index i emptied)
    assert vers.tolist() == [3, 1, 1, 1]
    assert (reps == before).all()


def test_repair_mask_indices_and_set_agree():
    rng = np.random.default_rng(7)
    reps = np.array([rng.permutation(8)[:5] for _ in range(50)], dtype=np.int32)
    mask = np.ones(8, dtype=bool)
    mask[[1, 4]] = False
    a = repair(reps, mask)
    b = repair(reps, [0, 2, 3, 5, 6, 7])
    c = repair(reps, {0, 2, 3, 5, 6, 7})
    for x in (b, c):
        assert (a[0] == x[0]).all() and (a[1] == x[1]).all()
    assert not np.isin(a[0], [1, 4]).any()


def test_repair_matches_reference_random():
    rng = np.random.default_rng(11)
    for _ in range(40):
        M, P, R = int(rng.integers(1, 10)), int(rng.integers(1, 40)), int(rng.integers(1, 8))
        reps = np.full((P, R), -1, dtype=np.int32)
        for p in range(P):
            k = int(rng.integers(0, min(R, M) + 1))
            reps[p, :k] = rng.permutation(M)[:k]
            rng.shuffle(reps[p])
        alive = rng.random(M) < 0.6
        vers = rng.integers(0, 100, P).astype(np.int32)
        got = repair(reps, alive, vers)
        want = ref.repair(reps.tolist(), alive.tolist(), vers.tolist())
        assert got[0].tolist() == want[0] and got[1].tolist() == want[1]


def test_repair_table_lite_members_are_not_alive():
    members = Members.from_count(3, lite=[False, True, False])
    table = PartitionTable(np.array([[1, 0, 2], [0, 1, 2]], dtype=np.int32),
                           np.array([5, 5], dtype=np.int32), members)
    new, vers = repair(table, np.ones(3, dtype=bool))
    assert new.tolist() == [[0, -1, 2], [0, -1, 2]]
    assert vers.tolist() == [8, 6]
    assert table.replicas.tolist() == [[1, 0, 2], [0, 1, 2]]


def test_repair_bad_input():
    reps = np.array([[0, 1]], dtype=np.int32)
    with pytest.raises(ValueError, match="alive"):
        repair(reps, np.ones(1, dtype=bool))            # mask too short for member 1
    with pytest.raises(ValueError, match="alive"):
        repair(reps, [-1])
    with pytest.raises(TypeError, match="alive"):
        repair(reps, "01")
    with pytest.raises(TypeError, match="alive"):
        repair(reps, [0.5])
    with pytest.raises(TypeError, match="table_or_replicas"):
        repair(reps.astype(np.int64), [0])
    with pytest.raises(ValueError, match="versions"):
        repair(reps, [0], np.zeros(3, dtype=np.int32))
    table = PartitionTable(reps, members=3)
    with pytest.raises(ValueError, match="alive"):
        repair(table, np.ones(2, dtype=bool))
    with pytest.raises(ValueError, match="alive"):
        repair(table, [5])
    assert reps.tolist() == [[0, 1]]


# ----------------------------------------------------------------------------- kernel vs reference
def _random_case(rng, it):
    M = int(rng.integers(1, 12))
    P = int(rng.integers(1, 50))
    R = int(rng.integers(1, 8))
    cur = np.full((P, R), -1, dtype=np.int32)
    for p in range(P):
        k = int(rng.integers(0, min(R, M + 3) + 1))
        cur[p, :k] = rng.permutation(M + 3)[:k]
        rng.shuffle(cur[p])
    cur[cur >= M] = -1
    lite = (rng.random(M) < 0.2).tolist()
    members = Members.from_count(M, lite=lite, members_per_host=int(rng.integers(1, 4)),
                                 zones=int(rng.integers(0, 4)))
    grouping = ["per_member", "host", "zone", "custom", rng.integers(0, 3, M)][it % 5]
    if isinstance(grouping, str) and grouping == "custom":
        members = members.with_groups([f"g{i % 3}" for i in range(M)])
    return cur, members, grouping


def test_kernel_equals_reference_random():
    rng = np.random.default_rng(2024)
    checked = 0
    for it in range(250):
        cur, members, grouping = _random_case(rng, it)
        try:
            prep = A._prepare(cur, members, grouping, None)
        except ValueError:
            continue                                    # no data members
        arranger = _arrange.Arranger(prep.cur, prep.gid, prep.G, prep.R_fill, prep.gstart,
                                     prep.gmem, 1)
        assert arranger.counts.tolist() == ref.keepable_counts(prep.cur.tolist(),
                                                               prep.gid.tolist(), prep.R_fill)
        mq = A._quotas(arranger.counts, prep)
        got, maybe_cycles = arranger.finish(mq)
        assert maybe_cycles or not find_cycles(prep.cur, got).any()
        groups = [prep.gmem[prep.gstart[g]:prep.gstart[g + 1]].tolist() for g in range(prep.G)]
        want = ref.arrange_core(prep.cur.tolist(), prep.gid.tolist(), prep.G, prep.R_fill,
                                mq.tolist(), groups)
        assert got.tolist() == want
        assert find_cycles(prep.cur, got).tolist() == ref.cycle_rows(prep.cur.tolist(), want)
        tgt = arrange(cur, members, grouping=grouping)
        rep = check_target(cur, tgt, members, grouping)
        if rep.balanced:
            assert rep.lower_bound <= rep.slot_changes
        checked += 1
    assert checked > 150


def test_report_cycles_match_planner_find_cycles():
    # the report's single-pass scan and the planner share one cycle routine
    rng = np.random.default_rng(5)
    cur = np.array([rng.permutation(6)[:4] for _ in range(300)], dtype=np.int32)
    tgt = np.array([rng.permutation(6)[:4] for _ in range(300)], dtype=np.int32)
    cyclic = arrangement_report(cur, tgt, 6).cyclic_partitions
    assert cyclic.tolist() == np.flatnonzero(find_cycles(cur, tgt)).tolist()
    assert len(cyclic) > 0


# ----------------------------------------------------------------------------- arrange
@pytest.mark.parametrize("M", [1, 2, 3, 5, 9, 10, 17])
def test_initial_balanced_and_stable(M):
    P = 271
    t = arrange(empty(P), M)
    R = min(M, 7) if M > 1 else 1
    assert t.shape == (P, 7)
    rep = check_target(empty(P), t, M)
    assert rep.balanced and rep.replica_count == R
    counts = rep.member_counts[:, :R]
    assert counts.max() - counts.min() <= 1
    assert (arrange(empty(P), M) == t).all()             # deterministic
    again = arrange(t, M)
    assert (again == t).all()                            # balanced valid table: no change


def test_rearranging_balanced_tables_changes_nothing():
    for members, grouping in [(Members.from_count(12, members_per_host=3), "host"),
                              (Members.from_count(9, zones=3), "zone"),
                              (Members.from_count(8).with_groups([f"g{i % 4}" for i in range(8)]),
                               "custom"),
                              (Members.from_count(6), np.array([0, 0, 1, 1, 2, 2]))]:
        t = arrange(empty(787), members, grouping=grouping)
        assert arrangement_report(empty(787), t, members, grouping=grouping).balanced
        assert (arrange(t, members, grouping=grouping) == t).all()


def test_round_robin_balanced_table_changes_nothing():
    t = PartitionTable.round_robin(20_000, 10, 7).replicas
    assert (arrange(t, 10) == t).all()


def test_join_changes_exactly_the_minimum():
    P = 20_000
    t9 = arrange(empty(P), 9)
    t10 = arrange(t9, 10)
    rep = check_target(t9, t10, 10)
    assert rep.balanced
    assert rep.slot_changes == 14_000 == rep.lower_bound      # 7 * P / 10
    assert set(np.unique(t10[t10 != t9]).tolist()) == {9}     # only the newcomer gains


def test_leave_close_to_lower_bound():
    P = 20_000
    t10 = arrange(empty(P), 10)
    for gone in (9, 0, 4):
        alive = np.ones(10, dtype=bool)
        alive[gone] = False
        repaired, _ = repair(t10, alive)
        members = Members.from_count(10, lite=(~alive).tolist())
        t9 = arrange(repaired, members)
        rep = check_target(repaired, t9, members)
        assert rep.balanced
        assert rep.slot_changes <= 1.1 * rep.lower_bound
        assert rep.slot_changes < 26_300 * 0.6
        assert not (t9 == gone).any()


def test_lite_members_hold_nothing():
    members = Members.from_count(6, lite=[False, True, False, False, True, False])
    cur = PartitionTable.round_robin(100, 6, 4).replicas
    t = arrange(cur, members)
    assert not np.isin(t, [1, 4]).any()
    rep = check_target(cur, t, members)
    assert rep.balanced and rep.group_count == 4 and rep.replica_count == 4


def test_single_group_is_split_in_two():
    members = Members(["10.0.0.1:5701", "10.0.0.1:5702", "10.0.0.1:5703"])
    t = arrange(empty(100, 3), members, grouping="host")
    assert t.shape == (100, 3)
    assert (t[:, :2] >= 0).all() and (t[:, 2] == -1).all()
    # member 0 forms the second group; members 1, 2 share a group: never in one row
    assert not ((t[:, :2] == 1).any(axis=1) & (t[:, :2] == 2).any(axis=1)).any()
    rep = check_target(empty(100, 3), t, members, "host")
    assert rep.balanced and rep.group_count == 2
    one = arrange(empty(10, 2), 1)
    assert (one[:, 0] == 0).all() and (one[:, 1] == -1).all()


def test_replica_count_and_width():
    t = arrange(empty(50, 2), 10)
    assert t.shape == (50, 7)
    t3 = arrange(empty(50, 2), 10, replica_count=3)
    assert t3.shape == (50, 3)
    t5 = arrange(empty(50, 7), 3, replica_count=5)        # only 3 groups: 3 filled
    assert t5.shape == (50, 7) and (t5[:, 3:] == -1).all() and (t5[:, :3] >= 0).all()
    narrow = arrange(t, 10, replica_count=2)              # extra columns emptied
    assert narrow.shape == (50, 7) and (narrow[:, 2:] == -1).all()
    assert ((narrow[:, :2] == t[:, :2]).mean()) > 0.5


def test_host_zone_custom_groups_never_twice_in_a_row():
    members = Members.from_count(12, members_per_host=2, zones=3)
    for grouping in ("host", "zone"):
        t = arrange(empty(500), members, grouping=grouping)
        gid = members.group_ids(grouping)
        g = gid[t[:, :min(len(set(gid)), 7)]]
        assert all(len(set(row)) == len(row) for row in g.tolist())
        assert check_target(empty(500), t, members, grouping).balanced


def test_cycles_are_never_created():
    # every row [0, 1]: balance would need [1, 0] rows, which are cycles -> kept as is
    cur = np.array([[0, 1]] * 4, dtype=np.int32)
    t = arrange(cur, 2)
    assert (t == cur).all()
    assert not find_cycles(cur, t).any()
    assert not arrangement_report(cur, t, 2).balanced
    # members that change index do so only along chains ending at an empty slot
    cur = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]] * 25, dtype=np.int32)
    for M in (3, 4, 5):
        t = arrange(cur, M)
        assert not find_cycles(A._pad(cur, t.shape[1]), t).any()


def test_cycle_safety_net_reverts_whole_cycles():
    # arrange's fallback (a row completed only by a cycle-closing move) uses fix_cycles
    cur = np.array([[0, 1, 2], [0, 1, -1]], dtype=np.int32)
    tgt = np.array([[1, 2, 0], [1, 0, -1]], dtype=np.int32)
    assert fix_cycles(cur, tgt).tolist() == cur.tolist()


def test_inputs_not_mutated_and_table_accepted():
    table = PartitionTable.round_robin(271, 5, 5)
    before = table.replicas.copy()
    t = arrange(table, 6)
    assert (table.replicas == before).all()
    assert (arrange(table.replicas, 6) == t).all()


def test_arrange_bad_input():
    cur = empty(10)
    snapshot = cur.copy()
    with pytest.raises(ValueError, match="grouping"):
        arrange(cur, 3, grouping="rack")
    with pytest.raises(ValueError, match="grouping"):
        arrange(cur, 3, grouping=np.array([0, 1]))
    with pytest.raises(TypeError, match="grouping"):
        arrange(cur, 3, grouping=3.5)
    with pytest.raises(ValueError, match="replica_count"):
        arrange(cur, 9, replica_count=8)
    with pytest.raises(ValueError, match="replica_count"):
        arrange(cur, 9, replica_count=0)
    with pytest.raises(ValueError, match="data"):
        arrange(cur, Members.from_count(2, lite=[True, True]))
    with pytest.raises(ValueError, match="data"):
        arrange(cur, 0)
    with pytest.raises(TypeError, match="current"):
        arrange(cur.astype(np.int64), 3)
    with pytest.raises(ValueError, match="current"):
        arrange(np.full((10, 8), -1, dtype=np.int32), 3)
    with pytest.raises(ValueError, match="current"):
        arrange(np.array([[0, 5]], dtype=np.int32), 3)       # member 5 of 3
    with pytest.raises(ValueError, match="current"):
        arrange(np.array([[1, 1]], dtype=np.int32), 3)
    with pytest.raises(TypeError, match="members"):
        arrange(cur, "three")
    assert (cur == snapshot).all()


# ----------------------------------------------------------------------------- report
def test_report_fields_and_json():
    P = 1000
    t10 = arrange(empty(P), 10)
    repaired, _ = repair(t10, np.arange(9))
    t9 = arrange(repaired, 9)
    rep = arrangement_report(repaired, t9, 9)
    assert rep.member_counts.shape == (9, 7) and rep.group_counts.shape == (9, 7)
    assert (rep.member_counts.sum(axis=0) == P).all()
    assert rep.slot_changes == int((repaired != t9).sum())
    assert rep.lower_bound <= rep.slot_changes
    assert rep.max_deviation < 1 and rep.balanced and rep.valid
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["slot_changes"] == rep.slot_changes and d["cycle_count"] == 0
    # a valid but unbalanced target is reported as such
    same_rows = np.tile(np.arange(7, dtype=np.int32), (P, 1))
    r2 = arrangement_report(repaired, same_rows, 9)
    assert r2.valid and not r2.balanced
    assert r2.max_deviation == pytest.approx(P - P / 9)


def test_report_detects_cycles_and_invalid_rows():
    cur = np.array([[0, 1], [1, 0]], dtype=np.int32)
    tgt = np.array([[1, 0], [1, 0]], dtype=np.int32)
    rep = arrangement_report(cur, tgt, 2)
    assert rep.cyclic_partitions.tolist() == [0]
    assert rep.slot_changes == 2 and rep.lower_bound == 0
    rep2 = arrangement_report(cur, np.array([[0, -1], [1, 0]], dtype=np.int32), 2)
    assert not rep2.valid


def test_lower_bound_is_a_lower_bound_on_random_balanced_targets():
    # brute-force check on tiny tables: no balanced valid target beats the bound
    rng = np.random.default_rng(3)
    from itertools import permutations, product
    for _ in range(20):
        M, P, R = int(rng.integers(2, 4)), int(rng.integers(1, 4)), 2
        cur = np.array([list(rng.permutation(M + 1)[:R]) for _ in range(P)], dtype=np.int32)
        cur[cur >= M] = -1
        rows = [list(x) for x in permutations(range(M), min(R, M))]
        best = None
        for choice in product(range(len(rows)), repeat=P):
            tgt = np.array([rows[c] for c in choice], dtype=np.int32)
            rep = arrangement_report(cur, tgt, M, replica_count=R)
            if rep.balanced and rep.valid:
                best = rep.slot_changes if best is None else min(best, rep.slot_changes)
                lb = rep.lower_bound
        assert best is not None and lb <= best


def test_report_bad_input():
    cur = empty(10)
    with pytest.raises(ValueError, match="partition count"):
        arrangement_report(cur, empty(11), 3)
    with pytest.raises(ValueError, match="target"):
        arrangement_report(cur, np.full((10, 2), 7, dtype=np.int32), 3)
    with pytest.raises(ValueError, match="grouping"):
        arrangement_report(cur, cur, 3, grouping="rack")


# ----------------------------------------------------------------------------- generator
MEMBER_SEQUENCE = [3, 6, 9, 10, 11, 17, 57, 100, 130, 77, 179, 93, 37, 26, 15, 5]
_HOST_OF = []
for _h, _size in enumerate([1, 2, 3, 2, 1, 3, 3, 1, 2] * 40):
    _HOST_OF.extend([_h] * _size)


def _members(n, kind):
    if kind == "host":
        addrs = [f"10.0.{_HOST_OF[i] // 256}.{_HOST_OF[i] % 256}:{5701 + i}" for i in range(n)]
        return Members(addrs), "host"
    if kind == "zone":
        return Members.from_count(n, zones=3), "zone"
    if kind == "custom":
        return Members.from_count(n).with_groups([f"rack-{i % 4}" for i in range(n)]), "custom"
    return Members.from_count(n), "per_member"


@pytest.mark.parametrize("kind", ["per_member", "host", "zone", "custom"])
@pytest.mark.parametrize("P", [271, 787, 1549, 3217])
def test_generator_stricter(P, kind):
    """Hazelcast's PartitionStateGeneratorTest, stricter: ±1 balance, cycle-free, plannable."""
    from hzfast.migration import apply_migrations, plan_migrations
    cur = empty(P)
    versions = np.zeros(P, dtype=np.int32)
    prev = None
    for n in MEMBER_SEQUENCE:
        if P / n < 10:
            break
        if prev is not None and n < prev:                  # the tail members leave
            cur, versions = repair(cur, np.arange(n))
        members, grouping = _members(n, kind)
        tgt = arrange(cur, members, grouping=grouping)
        rep = check_target(cur, tgt, members, grouping)
        assert rep.balanced, (n, rep.max_deviation, rep.member_max_deviation)
        gid = members.group_ids(grouping)
        R = rep.filled_replica_count
        assert all(len(set(row)) == R for row in gid[tgt[:, :R]].tolist())
        plan = plan_migrations(cur, tgt)
        assert (np.asarray(plan.target) == tgt).all()
        cur, versions = apply_migrations(cur, versions, plan)
        assert (cur == tgt).all()
        prev = n


def test_reference_arrange_equals_hzfast():
    t = arrange(empty(300), 10)
    assert (ref.arrange(empty(300), 10) == t).all()
    repaired, _ = repair(t, np.arange(9))
    assert (ref.arrange(repaired, 9) == arrange(repaired, 9)).all()
    members = Members.from_count(11, members_per_host=2)
    assert (ref.arrange(t, members, grouping="host") == arrange(t, members, grouping="host")).all()
    cur = np.array([[0, 1]] * 4, dtype=np.int32)
    assert (ref.arrange(cur, 2) == cur).all()


@pytest.mark.parametrize("P", [6, 14, 21, 28, 39])
def test_small_tables_balanced_initial_and_join(P):
    # includes P/G < R (few partitions per group): extras are spread so rows stay fillable
    for M in range(1, 14):
        t = arrange(empty(P), M)
        assert check_target(empty(P), t, M).balanced, M
        t2 = arrange(t, M + 1)
        assert check_target(t, t2, M + 1).balanced, M


def test_edge_cases_empty_and_single_partition():
    e = np.zeros((0, 3), dtype=np.int32)
    assert arrange(e, 3).shape == (0, 3)
    assert arrangement_report(e, arrange(e, 3), 3).slot_changes == 0
    assert repair(e, [0])[0].shape == (0, 3)
    one = arrange(empty(1), 10)
    assert one.tolist() == [[0, 1, 2, 3, 4, 5, 6]] or check_target(empty(1), one, 10).valid
    assert check_target(empty(1), one, 10).balanced


def test_validation_fast_path_finds_the_first_problem():
    # _validate checks rows branch-free and re-scans suspicious rows: same first problem
    from hzfast._check import as_replicas
    for M in (10, 64, 100, None):
        reps = np.array([[0, 1, 2], [3, 70 % (M or 71), 3], [5, -2, 5]], dtype=np.int32)
        with pytest.raises(ValueError, match=r"partition 1 holds member 3 twice"):
            as_replicas(reps, "t", member_count=M)
        reps[1, 2] = 4
        with pytest.raises(ValueError, match=r"t\[2, 1\] = -2"):
            as_replicas(reps, "t", member_count=M)
    big = np.array([[65, 66, 65]], dtype=np.int32)
    with pytest.raises(ValueError, match="holds member 65 twice"):
        as_replicas(big, "t", member_count=100)
    with pytest.raises(ValueError, match=r"t\[0, 0\] = 65: member index out of range"):
        as_replicas(big, "t", member_count=64)
    # no member count: the bound is hzfast's member limit (docs/hardening.md)
    assert as_replicas(np.array([[65_535, -1]], dtype=np.int32), "t") is not None
    with pytest.raises(ValueError, match=r"t\[0, 0\] = 2147483647: member indices must be < 65536"):
        as_replicas(np.array([[2**31 - 1, -1]], dtype=np.int32), "t")


def test_group_layout_cache_does_not_leak():
    members = Members.from_count(6, members_per_host=2)
    t = arrange(empty(60), members, grouping="host")
    rep = arrangement_report(empty(60), t, members, grouping="host")
    rep.group_ids[:] = 0                      # the report's copy is the caller's to change
    assert (arrange(empty(60), members, grouping="host") == t).all()
    assert arrangement_report(empty(60), t, members, grouping="host").group_ids.tolist() == \
        [0, 0, 1, 1, 2, 2]


# (601 partitions: a long sweep, opt-in with -m slow; 97 and 300 run in the test command)
@pytest.mark.parametrize("P", [97, 300, pytest.param(601, marks=pytest.mark.slow)])
@pytest.mark.parametrize("grouping", ["per_member", "host"])
def test_stuck_heavy_changes_equal_the_reference(P, grouping):
    # up to 7 groups every group is in every row, so a join or a leave leaves many slots
    # stuck; the kernel runs their augmenting searches on its index (docs/design.md §8.5
    # "Stuck, fast"), which must find the same paths as the reference's plain search,
    # including through rows whose members were shuffled (cycle-closing moves refused)
    rng = np.random.default_rng(P)

    def members(k):
        return Members.from_count(k, members_per_host=2)

    for n in range(2, 9):
        try:
            t = arrange(empty(P), members(n), grouping=grouping)
        except ValueError:
            continue                                  # (host grouping: one host)
        shuffled = t.copy()
        for p in rng.choice(P, P // 3, replace=False):
            k = int((shuffled[p] >= 0).sum())
            shuffled[p, :k] = rng.permutation(shuffled[p, :k])
        for cur, k in ((t, n + 1), (t, n + 2), (t, n - 1), (shuffled, n), (shuffled, n + 1)):
            if k < 1:
                continue
            try:
                got = arrange(cur, members(k), grouping=grouping)
            except ValueError:
                continue
            want = ref.arrange(cur, members(k), grouping=grouping)
            assert (got == np.asarray(want)).all(), (P, n, k, grouping)


def test_small_group_extras_equal_the_numpy_sorts(monkeypatch):
    # the extras of a few groups are handed out with sorted() on Python lists; the same
    # picks as the numpy lexsorts, on every branch (R_fill == G, capped, the general one)
    rng = np.random.default_rng(77)
    branches = set()
    small = []                     # few partitions over many groups: the capped branch
    for P, M, R in [(5, 4, 3), (3, 7, 2), (9, 11, 4), (2, 6, 1), (13, 9, 5)]:
        cur = np.where(rng.random((P, R)) < 0.5, -1, rng.integers(0, M, (P, R)))
        cur = np.array([list(dict.fromkeys(r)) + [-1] * (R - len(set(r))) for r in cur])
        small.append((cur.astype(np.int32), Members.from_count(M), "per_member", R))
    cases = [(*_random_case(rng, it), [None, 1, 2, 3, 7][it % 5]) for it in range(400)]
    for it, (cur, members, grouping, R) in enumerate(small + cases):
        try:
            prep = A._prepare(cur, members, grouping, R)
        except ValueError:
            continue
        P, G, R_fill = prep.cur.shape[0], prep.G, prep.R_fill
        f, e = divmod(P, G)
        if not e or G > A._SMALL_G:
            continue
        branches.add("exact" if R_fill == G else "capped" if P - R_fill * f < R_fill
                     else "general")
        counts = _arrange.Arranger(prep.cur, prep.gid, G, R_fill, prep.gstart, prep.gmem,
                                   1).counts
        small = A._quotas(counts, prep)
        with monkeypatch.context() as m:
            m.setattr(A, "_SMALL_G", 0)
            assert A._quotas(counts, prep).tolist() == small.tolist(), (it, G, R_fill, P)
    assert branches == {"exact", "capped", "general"}
