"""PartitionTable and Members: construction, validation, immutability, equality."""
import hashlib
from pathlib import Path

import numpy as np
import pytest

import hzfast
from hzfast import Members, PartitionTable

SHARED = Path(__file__).resolve().parents[2] / "shared" / "vectors"


def test_vector_copies_are_verbatim():
    """tests/data/vectors are byte-for-byte copies of ../shared/vectors (when it is there)."""
    here = Path(__file__).parent / "data" / "vectors"
    names = sorted(p.name for p in here.iterdir())
    assert names == ["hazelcast.json", "ignite.json", "planner_random.json.gz"]
    if not SHARED.is_dir():
        pytest.skip("../shared/vectors is not next to this checkout")
    for name in names:
        assert hashlib.sha256((here / name).read_bytes()).digest() == \
            hashlib.sha256((SHARED / name).read_bytes()).digest(), name


def test_constants():
    assert hzfast.MAX_REPLICA_COUNT == 7
    assert hzfast.DEFAULT_PARTITION_COUNT == 271


def test_empty_table():
    t = PartitionTable.empty()
    assert t.partition_count == 271 and t.replica_count == 7
    assert (t.replicas == -1).all() and (t.versions == 0).all()
    assert t.member_count == 0
    assert t.owners().tolist() == [-1] * 271


def test_round_robin_is_balanced_and_valid():
    t = PartitionTable.round_robin(20_000, 10, 7)
    assert t.replicas.shape == (20_000, 7)
    for r in range(7):
        counts = np.bincount(t.replicas[:, r], minlength=10)
        assert counts.max() - counts.min() <= 1
    t.validate()


def test_table_copies_and_freezes_input():
    reps = np.array([[0, 1], [1, 2], [2, 0]], dtype=np.int32)
    vers = np.array([1, 2, 3], dtype=np.int32)
    t = PartitionTable(reps, vers, members=3)
    reps[0, 0] = 2
    vers[0] = 99
    assert t.replicas[0, 0] == 0 and t.versions[0] == 1
    with pytest.raises(ValueError):
        t.replicas[0, 0] = 1
    with pytest.raises(ValueError):
        t.versions[0] = 1


def test_stamp_cached_and_follows_versions():
    t = PartitionTable.round_robin(271, 3, 2)
    assert t.stamp == hzfast.stamp(np.zeros(271, dtype=np.int32))
    t2 = t.replace(versions=np.arange(271, dtype=np.int32))
    assert t2.stamp == hzfast.stamp(np.arange(271, dtype=np.int32))
    assert t2.stamp != t.stamp


def test_equality_and_copy():
    t = PartitionTable.round_robin(100, 4, 3)
    assert t == t.copy()
    assert t != t.replace(versions=np.ones(100, dtype=np.int32))
    other = t.replace(members=Members.from_count(5))
    assert t != other
    assert (t == 3) is False


def test_owners_and_locate_agree_with_partition_ids():
    t = PartitionTable.round_robin(271, 5, 3)
    keys = [f"key-{i}" for i in range(1000)]
    pids = hzfast.partition_ids(keys, 271)
    np.testing.assert_array_equal(t.locate(keys), t.replicas[pids, 0])
    assert t.locate("key-7") == t.replicas[hzfast.partition_id("key-7", 271), 0]
    ints = np.arange(1000, dtype=np.int64)
    np.testing.assert_array_equal(t.locate(ints), t.replicas[hzfast.partition_ids(ints, 271), 0])


def test_save_load_roundtrip(tmp_path):
    t = PartitionTable(np.array([[0, -1], [1, 0]], dtype=np.int32),
                       np.array([3, 4], dtype=np.int32),
                       Members(["a:1", "b:2"], zones=["z1", "z2"], lite=[False, False]))
    path = tmp_path / "t.npz"
    t.save(path)
    assert PartitionTable.load(path) == t


@pytest.mark.parametrize("replicas, exc, match", [
    (np.zeros((3, 2), dtype=np.int64), TypeError, "replicas must have dtype int32"),
    (np.zeros((3, 2), dtype=np.float32), TypeError, "dtype int32"),
    (np.zeros(3, dtype=np.int32), ValueError, "2-dimensional"),
    (np.zeros((3, 8), dtype=np.int32), ValueError, "1..7 replica columns"),
    (np.zeros((3, 0), dtype=np.int32), ValueError, "1..7 replica columns"),
    (np.zeros((4, 6), dtype=np.int32)[:, ::2], ValueError, "C-contiguous"),
    (np.array([[0, 0]], dtype=np.int32), ValueError, "partition 0 holds member 0 twice"),
    (np.array([[0, 1], [-2, 1]], dtype=np.int32), ValueError, r"replicas\[1, 0\] = -2"),
    ("abc", TypeError, "replicas must be a numpy int32 array"),
    ([[0.5, 1]], TypeError, "must hold integers"),
    ([[0, 1], [2]], ValueError, "ragged"),
])
def test_bad_replicas(replicas, exc, match):
    with pytest.raises(exc, match=match):
        PartitionTable(replicas)


def test_member_index_out_of_range():
    with pytest.raises(ValueError, match="out of range for 2 members"):
        PartitionTable(np.array([[0, 2]], dtype=np.int32), members=2)


@pytest.mark.parametrize("versions, exc, match", [
    (np.zeros(4, dtype=np.int32), ValueError, "versions must have length 3"),
    (np.zeros(3, dtype=np.int64), TypeError, "versions must have dtype int32"),
    (np.zeros((3, 1), dtype=np.int32), ValueError, "1-dimensional"),
])
def test_bad_versions(versions, exc, match):
    reps = np.array([[0], [1], [0]], dtype=np.int32)
    with pytest.raises(exc, match=match):
        PartitionTable(reps, versions)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"partition_count": 0}, ValueError, "partition_count must be >= 1"),
    ({"partition_count": 2.5}, TypeError, "partition_count must be an integer"),
    ({"replica_count": 8}, ValueError, "replica_count must be <= 7"),
    ({"members": "x"}, TypeError, "members must be a Members registry or an int"),
])
def test_bad_empty(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        PartitionTable.empty(**kwargs)


def test_list_input_is_accepted():
    t = PartitionTable([[0, 1], [1, 0]])
    assert t.replicas.dtype == np.int32 and t.member_count == 2


# -- Members -------------------------------------------------------------------

def test_members_from_count():
    m = Members.from_count(3)
    assert len(m) == 3 and m.count == 3
    assert m[0].address == "127.0.0.1:5701" and m[2].address == "127.0.0.1:5703"
    assert len(set(m.uuids)) == 3
    assert m.data_members().tolist() == [0, 1, 2]
    assert [x.index for x in m] == [0, 1, 2]
    assert m[-1].index == 2


def test_members_hosts_zones_groups():
    m = Members.from_count(6, members_per_host=2, zones=3)
    assert m.group_ids("host").tolist() == [0, 0, 1, 1, 2, 2]
    assert m.group_ids("zone").tolist() == [0, 1, 2, 0, 1, 2]
    assert m.group_ids("per_member").tolist() == list(range(6))
    g = m.with_groups(["x", "y", "x", "y", "z", "z"])
    assert g.group_ids("custom").tolist() == [0, 1, 0, 1, 2, 2]
    assert m.group_ids([5, 5, 7, 7, 9, 9]).tolist() == [0, 0, 1, 1, 2, 2]
    lite = m.with_lite([True, False, False, False, False, False])
    assert lite.data_members().tolist() == [1, 2, 3, 4, 5]
    assert lite[0].lite and not m[0].lite


def test_members_json_roundtrip_and_lookup():
    m = Members.from_count(4, zones=2).with_lite([False, True, False, False])
    assert Members.from_json(m.to_json()) == m
    assert m.index_of(m[2].uuid) == 2 and m.index_of(m[3].address) == 3
    with pytest.raises(KeyError):
        m.index_of("nope")


@pytest.mark.parametrize("call, exc, match", [
    (lambda: Members(["a:1", "a:1"]), ValueError, "addresses must be unique"),
    (lambda: Members(["a:1", "b:1"], uuids=["u", "u"]), ValueError, "uuids must be unique"),
    (lambda: Members(["a:1"], zones=["z", "y"]), ValueError, "zones must have one entry per member"),
    (lambda: Members("a:1"), TypeError, "addresses must be a sequence"),
    (lambda: Members.from_count(-1), ValueError, "n must be >= 0"),
    (lambda: Members.from_count(3).group_ids("rack"), ValueError, "grouping must be"),
    (lambda: Members.from_count(3).group_ids([1, 2]), ValueError, "one group id per member"),
    (lambda: Members.from_count(3)[3], ValueError, "index must be <= 2"),
])
def test_members_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
