"""Resource limits and input forms (docs/hardening.md, classes 3, 5 and 6): member indices
are bounded (``MAX_MEMBER_COUNT``), impossible sizes are refused before anything of that
size exists, every input form is either used by value or refused, and no function keeps
or changes a caller's array."""
from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

import hzfast
from hzfast import PartitionTable
from hzfast._check import MAX_MEMBER_COUNT


def _small():
    cur = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]], dtype=np.int32)
    tgt = np.array([[3, 1, 2], [1, 3, 0], [2, 0, -1], [0, 2, 1]], dtype=np.int32)
    return cur, tgt


class _Budget:
    """Fails the test when the block takes longer than ``seconds`` or traces more than
    ``megabytes`` of new memory (numpy reports its buffers to tracemalloc)."""

    def __init__(self, seconds: float = 2.0, megabytes: float = 64.0) -> None:
        self.seconds, self.bytes = seconds, megabytes * 1e6

    def __enter__(self):
        tracemalloc.start()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        elapsed = time.perf_counter() - self.start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert elapsed < self.seconds, f"took {elapsed:.2f} s"
        assert peak < self.bytes, f"traced {peak / 1e6:.0f} MB"
        return False


# ------------------------------------------------------------------ member limit
@pytest.mark.parametrize("value", [2**31 - 1, MAX_MEMBER_COUNT, 10**6])
def test_a_table_of_a_huge_member_is_refused_at_once(value):
    reps = np.array([[value, -1]], dtype=np.int32)
    with _Budget(), pytest.raises(ValueError, match="member indices must be < 65536"):
        PartitionTable(reps)


def test_the_largest_allowed_member_works():
    reps = np.array([[MAX_MEMBER_COUNT - 1, 0]], dtype=np.int32)
    with _Budget(seconds=20, megabytes=200):
        t = PartitionTable(reps)
        assert t.member_count == MAX_MEMBER_COUNT
        d = hzfast.diff(reps, np.array([[0, -1]], np.int32))
        assert d.gains.shape == (MAX_MEMBER_COUNT, 2)


@pytest.mark.parametrize("members", [10**12, MAX_MEMBER_COUNT + 1, 2**31])
def test_member_counts_beyond_the_limit(members):
    with _Budget(), pytest.raises(ValueError, match="members must be <= 65536"):
        PartitionTable(np.zeros((1, 1), np.int32), members=members)
    with _Budget(), pytest.raises(ValueError, match="members must be <= 65536"):
        PartitionTable.empty(10, 3, members=members)
    with _Budget(), pytest.raises(ValueError, match="members must be <= 65536"):
        hzfast.arrange(np.full((4, 2), -1, np.int32), members)
    with _Budget(), pytest.raises(ValueError, match="members must be <= 65536"):
        PartitionTable.round_robin(10, members)
    with _Budget(), pytest.raises(ValueError, match="members must be <= 65536"):
        hzfast.arrangement_report(np.full((4, 2), -1, np.int32),
                                  np.full((4, 2), -1, np.int32), members)


@pytest.mark.parametrize("alive", [[2**40], np.array([2**40]), [MAX_MEMBER_COUNT],
                                   np.array([2**63 - 1], np.int64)])
def test_repair_with_a_huge_alive_index(alive):
    cur, _ = _small()
    with _Budget(), pytest.raises(ValueError, match="alive"):
        hzfast.repair(cur, alive)


def test_repair_alive_forms():
    cur, _ = _small()
    with pytest.raises(TypeError, match="alive"):
        hzfast.repair(cur, [True, 2])            # a bool among indices is not member 1
    with pytest.raises(TypeError, match="alive"):
        hzfast.repair(cur, [0.0, 1.0])
    with pytest.raises(TypeError, match="alive"):
        hzfast.repair(cur, np.array(["0", "1"]))
    with pytest.raises(ValueError, match="alive"):
        hzfast.repair(cur, np.ones(MAX_MEMBER_COUNT + 1, bool))
    with pytest.raises(ValueError, match="alive"):
        hzfast.repair(cur, [-1])
    with pytest.raises(TypeError, match="alive"):
        hzfast.repair(cur, {0: True, 1: True})       # a mapping is not a set of indices
    with pytest.raises(ValueError, match="alive must be 1-dimensional"):
        hzfast.repair(cur, [[0, 1]])
    by_set = hzfast.repair(cur, {0, 1})
    by_list = hzfast.repair(cur, [0, 1])
    by_mask = hzfast.repair(cur, [True, True, False])
    assert all(np.array_equal(a, b) for a, b in zip(by_set, by_list))
    assert all(np.array_equal(a, b) for a, b in zip(by_mask, by_list))


def test_diff_with_a_huge_member_or_count():
    cur, tgt = _small()
    big = tgt.copy()
    big[0, 0] = 2**31 - 1
    with _Budget(), pytest.raises(ValueError, match="member indices must be < 65536"):
        hzfast.diff(cur, big)
    with _Budget(), pytest.raises(ValueError, match="member_count must be <= 65536"):
        hzfast.diff(cur, tgt, member_count=2**31)
    with pytest.raises(TypeError, match="member_count"):
        hzfast.diff(cur, tgt, member_count=4.0)


def test_plan_member_counts_are_bounded():
    cur, tgt = _small()
    plan = hzfast.plan_migrations(cur, tgt)
    with _Budget(), pytest.raises(ValueError, match="member_count must be <= 65536"):
        plan.member_counts(10**12)
    with pytest.raises(ValueError, match="member indices must be < 65536"):
        hzfast.plan_migrations(cur, np.where(tgt == 3, 2**31 - 1, tgt).astype(np.int32))


def test_schedule_with_the_largest_member_stays_small():
    cur = np.array([[0, -1]], dtype=np.int32)
    tgt = np.array([[0, MAX_MEMBER_COUNT - 1]], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, tgt)
    with _Budget(seconds=5, megabytes=64):
        s = hzfast.schedule(plan)
    assert s.rounds == 1 and s.peak_concurrency.shape == (MAX_MEMBER_COUNT,)


def test_arrangement_report_with_30000_members_is_linear():
    # per_member grouping: 30,000 groups; a dense members x groups matrix would take 7 GB
    M = 30_000
    members = hzfast.Members.from_count(M)
    cur = np.full((500, 3), -1, np.int32)
    target = hzfast.arrange(cur, members)
    with _Budget(seconds=20, megabytes=150):
        rep = hzfast.arrangement_report(cur, target, members)
    assert rep.group_count == M and rep.member_counts.shape == (M, 7)
    assert rep.slot_changes == rep.lower_bound == 500 * 7 and rep.valid and rep.balanced


def test_arrangement_report_groups_of_two_match_the_reference_sums():
    members = hzfast.Members.from_count(40, members_per_host=2)
    cur = hzfast.arrange(np.full((97, 3), -1, np.int32), members, grouping="host")
    rep = hzfast.arrangement_report(cur, cur, members, grouping="host")
    gid = rep.group_ids
    want = np.zeros((rep.group_count, rep.member_counts.shape[1]), np.int64)
    for m in range(40):
        want[gid[m]] += rep.member_counts[m]
    assert np.array_equal(rep.group_counts, want)
    assert rep.slot_changes == 0 and rep.balanced


# ------------------------------------------------------------------ input forms
def _put(a, row):
    a[0] = row
    return a


TABLE_FORMS = [
    (lambda a: a.astype(np.int64), TypeError, "int32"),
    (lambda a: a.astype(">i4"), TypeError, "int32"),              # swapped bytes
    (lambda a: a.astype(np.float64), TypeError, "int32"),
    (lambda a: a.astype(bool), TypeError, "int32"),
    (lambda a: a.astype(object), TypeError, "int32"),
    (lambda a: np.asfortranarray(a), ValueError, "C-contiguous"),
    (lambda a: a[:, ::-1], ValueError, "C-contiguous"),
    (lambda a: a[0], ValueError, "2-dimensional"),
    (lambda a: np.int32(3), TypeError, "int32 array"),
    (lambda a: np.array(3, np.int32), ValueError, "2-dimensional"),
    (lambda a: a[:, :0], ValueError, "replica columns"),
    (lambda a: np.zeros((2, 8), np.int32), ValueError, "replica columns"),
    (lambda a: a.tolist() + [[1.5, 0, 0]], TypeError, "integers"),
    (lambda a: [[True, 1, 2]], TypeError, "bools"),
    (lambda a: [[2**40, 1, 2]], ValueError, "outside int32"),
    (lambda a: [[0, 1], [2]], ValueError, "ragged"),
    (lambda a: [["0", "1", "2"]], TypeError, "integers"),
    (lambda a: "0 1 2", TypeError, "int32 array"),
    (lambda a: _put(a, [0, 0, 1]), ValueError, "twice"),
    (lambda a: _put(a, [0, -2, 1]), ValueError, ">= -1"),
]


@pytest.mark.parametrize("make, exc, match", TABLE_FORMS)
def test_every_table_entry_point_refuses_bad_forms(make, exc, match):
    cur, tgt = _small()
    bad = make(cur.copy())
    calls = [
        lambda: PartitionTable(bad),
        lambda: hzfast.plan_migrations(bad, tgt),
        lambda: hzfast.find_cycles(bad, tgt),
        lambda: hzfast.fix_cycles(cur, bad),
        lambda: hzfast.diff(bad, tgt),
        lambda: hzfast.apply_migrations(bad, None, hzfast.MigrationPlan([], [], [], [], [],
                                                                          [], [])),
        lambda: hzfast.schedule(hzfast.plan_migrations(cur, tgt), bad),
        lambda: hzfast.repair(bad, [0, 1, 2]),
        lambda: hzfast.arrange(bad, 4),
        lambda: hzfast.arrangement_report(cur, bad, 4),
    ]
    for k, call in enumerate(calls):
        with pytest.raises(exc, match=match):
            call()


def test_read_only_and_memory_mapped_inputs_work(tmp_path):
    cur, tgt = _small()
    ro_cur, ro_tgt = cur.copy(), tgt.copy()
    ro_cur.flags.writeable = ro_tgt.flags.writeable = False
    want = hzfast.plan_migrations(cur, tgt)
    assert hzfast.plan_migrations(ro_cur, ro_tgt) == want
    np.save(tmp_path / "cur.npy", cur)
    mm = np.load(tmp_path / "cur.npy", mmap_mode="r")
    assert hzfast.plan_migrations(mm, tgt) == want
    reps, vers = hzfast.apply_migrations(ro_cur, np.zeros(4, np.int32), want)
    assert np.array_equal(reps, want.target) and reps.flags.writeable and vers.flags.writeable


def test_a_duck_typed_table_must_hold_a_real_array():
    class Fake:
        replicas = ((0, 1),)
    with pytest.raises(TypeError, match="replicas must be a numpy int32 array"):
        hzfast.diff(Fake(), Fake())

    class Wide:
        replicas = np.zeros((2, 2), np.int64)
    with pytest.raises(TypeError, match="int32"):
        hzfast.plan_migrations(Wide(), Wide())


def test_no_function_changes_or_keeps_the_callers_arrays():
    cur, tgt = _small()
    keep_cur, keep_tgt = cur.copy(), tgt.copy()
    versions = np.arange(4, dtype=np.int32)
    plan = hzfast.plan_migrations(cur, tgt)
    out = [plan.target, hzfast.fix_cycles(cur, tgt), hzfast.diff(cur, tgt).changed_slots,
           *hzfast.apply_migrations(cur, versions, plan), *hzfast.repair(cur, [0, 1], versions),
           hzfast.arrange(cur, 4), PartitionTable(cur, versions).replicas,
           PartitionTable(cur, versions).versions]
    assert np.array_equal(cur, keep_cur) and np.array_equal(tgt, keep_tgt)
    assert np.array_equal(versions, np.arange(4))
    for arr in out:
        assert not np.shares_memory(arr, cur) and not np.shares_memory(arr, tgt)
        assert not np.shares_memory(arr, versions)
    t = PartitionTable(cur, versions)
    cur[0, 0] = 3
    versions[0] = 99
    assert t.replicas[0, 0] == 0 and t.versions[0] == 0 and t.validate() is t


def test_versions_wrap_as_java_ints():
    cur, tgt = _small()
    plan = hzfast.plan_migrations(cur, tgt)
    top = np.full(4, 2**31 - 1, np.int32)
    _, vers = hzfast.apply_migrations(cur, top, plan)
    from hzfast.reference import planning as ref
    _, want = ref.apply_rows(cur.tolist(), top.tolist(),
                             [tuple(m)[:7] for m in plan])
    assert vers.tolist() == want and vers.min() < 0
    _, vers = hzfast.repair(cur, [0, 1], top)
    from hzfast.reference import arrangement as ref_arr
    _, want = ref_arr.repair(cur.tolist(), [True, True, False], top.tolist())
    assert vers.tolist() == want and vers.min() < 0


@pytest.mark.parametrize("versions, exc", [
    ([0.5] * 4, TypeError), ([True] * 4, TypeError), (np.zeros(4, np.int64), TypeError),
    (np.zeros(3, np.int32), ValueError), (np.zeros((4, 1), np.int32), ValueError),
    ([2**31] * 4, ValueError),
])
def test_versions_forms(versions, exc):
    cur, _ = _small()
    with pytest.raises(exc, match="versions"):
        PartitionTable(cur, versions)
    with pytest.raises(exc, match="versions"):
        hzfast.repair(cur, [0, 1, 2], versions)


@pytest.mark.parametrize("which, row, col, value", [
    ("current", 0, 0, MAX_MEMBER_COUNT), ("current", 3, 2, 2**31 - 1),
    ("target", 1, 1, MAX_MEMBER_COUNT), ("target", 3, 0, 10**9),     # a differing slot
])
def test_planner_names_the_member_beyond_the_limit(which, row, col, value):
    # the planner checks the limit inside its single pass, row by row
    cur, tgt = _small()
    bad = {"current": cur, "target": tgt}[which]
    bad[row, col] = value
    with pytest.raises(ValueError, match=rf"{which}\[{row}, {col}\] = {value}: member "
                                         rf"indices must be < 65536"):
        hzfast.plan_migrations(cur, tgt)
    both = cur.copy()
    both[row, col] = value       # the same member on both sides: an equal slot
    with pytest.raises(ValueError, match=rf"current\[{row}, {col}\] = {value}"):
        hzfast.plan_migrations(both, both)
    cur, tgt = _small()
    cur[0, 1] = tgt[0, 1] = MAX_MEMBER_COUNT - 1          # the largest member is fine
    assert hzfast.plan_migrations(cur, tgt).max_member() == MAX_MEMBER_COUNT - 1


def test_the_validation_kernel_guards_its_own_shapes():
    from hzfast import _validate
    a = np.zeros((3, 2), np.int32)
    with pytest.raises(ValueError, match="same shape"):
        _validate.check_tables(a, np.zeros((2, 2), np.int32))
    with pytest.raises(ValueError, match="at most 7"):
        _validate.check_tables(np.zeros((1, 9), np.int32))


def test_cached_group_layouts_are_immutable():
    # gid/gstart/gmem index the arranger's arrays: nobody may change the cached copies
    members = hzfast.Members.from_count(6, members_per_host=2)
    hzfast.arrange(np.full((12, 2), -1, np.int32), members, grouping="host")
    from hzfast.arrangement import _group_layout
    gid, _, gstart, gmem, _ = _group_layout(members, "host")
    for arr in (gid, gstart, gmem):
        with pytest.raises(ValueError):
            arr.flags.writeable = True
