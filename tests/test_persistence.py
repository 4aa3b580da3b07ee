"""hzfast.persistence: the hz41 and legacy layouts byte by byte, detection, round trips,
address rebinding and the partial-restart decision."""
import struct
import uuid

import numpy as np
import pytest

import hzfast
from hzfast import persistence
from hzfast.members import Members


def _table(P=50, M=5, R=3, seed=0):
    rng = np.random.default_rng(seed)
    t = hzfast.PartitionTable(hzfast.arrange(hzfast.PartitionTable.empty(P, R, M), M,
                                             replica_count=R), members=M)
    return t.replace(versions=rng.integers(0, 1000, P).astype(np.int32))


def _by_hand(table, layout, table_version=None):
    """The layout as docs/persistence.md describes it, written with struct only."""
    out = b"" if layout == "hz41" else struct.pack(">i", table_version)
    out += struct.pack(">i", table.partition_count)
    out += struct.pack(">i", table.member_count)
    for a, u in zip(table.members.addresses, table.members.uuids):
        host, port = a.rsplit(":", 1)
        v = uuid.UUID(u).int
        out += struct.pack(">H", len(host.encode())) + host.encode()
        out += struct.pack(">iqq", int(port), *struct.unpack(">qq", v.to_bytes(16, "big")))
    for p in range(table.partition_count):
        if layout == "hz41":
            out += struct.pack(">i", int(table.versions[p]))
        row = list(table.replicas[p]) + [-1] * (7 - table.replica_count)
        out += struct.pack(">7i", *row)
    return out


@pytest.mark.parametrize("layout", ["hz41", "hzlegacy"])
def test_bytes_are_the_documented_layout(layout):
    t = _table()
    version = int(t.versions.max())
    assert persistence.to_bytes(t, layout) == _by_hand(t, layout, version)


def test_hz41_round_trip_is_exact():
    t = _table(P=271, M=9, R=7)
    data = persistence.to_bytes(t, "hz41")
    back = persistence.from_bytes(data)
    assert back == t and back.stamp == t.stamp
    assert persistence.to_bytes(back, "hz41") == data


def test_legacy_round_trip_sets_every_version_to_the_table_version():
    t = _table()
    back = persistence.from_bytes(persistence.to_bytes(t, "hzlegacy"))
    assert np.array_equal(back.replicas, t.replicas) and back.members == t.members
    assert (back.versions == t.versions.max()).all()
    # a legacy table read back writes the same bytes
    data = persistence.to_bytes(t, "hzlegacy", table_version=77)
    again = persistence.from_bytes(data)
    assert (again.versions == 77).all()
    assert persistence.to_bytes(again, "hzlegacy") == data


def test_width_comes_back_up_to_the_last_used_column():
    t = _table(R=3)
    assert persistence.from_bytes(persistence.to_bytes(t)).replica_count == 3
    wide = persistence.from_bytes(persistence.to_bytes(t), replica_count=7)
    assert wide.replica_count == 7 and (wide.replicas[:, 3:] == -1).all()
    with pytest.raises(ValueError, match="replica_count=2 but replica index 2 is used"):
        persistence.from_bytes(persistence.to_bytes(t), replica_count=2)


@pytest.mark.parametrize("layout", ["hz41", "hzlegacy"])
def test_detection_by_content(layout, tmp_path):
    t = _table()
    path = tmp_path / "no-suffix"
    path.write_bytes(persistence.to_bytes(t, layout))
    assert persistence.detect_format(path.read_bytes()) == layout
    back, fmt = persistence.read_table(path)
    assert fmt == layout and np.array_equal(back.replicas, t.replicas)


@pytest.mark.parametrize("fmt", persistence.FORMATS)
def test_write_read_every_format(fmt, tmp_path):
    t = _table()
    path = tmp_path / "table.dat"           # the name says nothing
    persistence.write_table(path, t, fmt)
    back, found = persistence.read_table(path)
    assert found == fmt
    assert np.array_equal(back.replicas, t.replicas)
    if fmt != "hzlegacy":
        assert back == t


def test_truncated_and_trailing_bytes_are_rejected():
    data = persistence.to_bytes(_table(), "hz41")
    for cut in (0, 3, 8, 40, len(data) - 1):
        with pytest.raises(ValueError, match="truncated|not a persisted|partition count"):
            persistence.from_bytes(data[:cut], "hz41")
    with pytest.raises(ValueError, match="1 trailing bytes after the hz41 rows"):
        persistence.from_bytes(data + b"\0", "hz41")
    with pytest.raises(ValueError, match="not a persisted partition table"):
        persistence.from_bytes(data[:-3])


def test_huge_counts_are_refused_before_allocating():
    # 2**31-1 partitions announced in a 12-byte file
    with pytest.raises(ValueError, match="truncated: 2,147,483,647 partitions"):
        persistence.from_bytes(struct.pack(">iii", 2**31 - 1, 0, 0), "hz41")
    with pytest.raises(ValueError, match="truncated: 100,000,000 replicas"):
        persistence.from_bytes(struct.pack(">ii", 1, 100_000_000) + b"\0" * 40, "hz41")


def test_bad_indexes_and_duplicates():
    t = _table(P=4, M=3, R=2)
    data = bytearray(persistence.to_bytes(t, "hz41"))
    end = len(data)
    data[end - 28:end - 24] = struct.pack(">i", 3)   # last partition, slot 0: member 3 of 3
    with pytest.raises(ValueError, match="partition 3, replica 0: index 3 is not one of the 3"):
        persistence.from_bytes(bytes(data), "hz41")


def test_addresses_must_have_ports_and_uuids_must_be_uuids():
    t = hzfast.PartitionTable(np.zeros((2, 1), np.int32), members=Members(["nohost"]))
    with pytest.raises(ValueError, match="member 0: address 'nohost' is not 'host:port'"):
        persistence.to_bytes(t)
    t = hzfast.PartitionTable(np.zeros((2, 1), np.int32),
                              members=Members(["h:1"], uuids=["not-a-uuid"]))
    with pytest.raises(ValueError, match="uuid 'not-a-uuid' is not a UUID"):
        persistence.to_bytes(t)


def test_non_ascii_hosts_and_ipv6_round_trip():
    m = Members(["[::1]:5701", "hôte-ä:5702"])
    t = hzfast.PartitionTable(np.array([[0, 1], [1, 0]], np.int32), [3, 4], m)
    assert persistence.from_bytes(persistence.to_bytes(t)) == t


def test_detect_format_kinds():
    assert persistence.detect_format(b"PK\x03\x04rest") == "npz"
    assert persistence.detect_format(b"\n {") == "json"
    with pytest.raises(ValueError, match="empty file"):
        persistence.detect_format(b"")
    with pytest.raises(ValueError, match="not a persisted partition table"):
        persistence.detect_format(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)


def test_rebind_bumps_only_the_partitions_of_moved_members():
    t = _table(P=200, M=5, R=2)
    moved = {t.members.uuids[1]: "10.9.9.9:5701", t.members.uuids[3]: "10.9.9.8:5701",
             "00000000-0000-0000-0000-0000000000ff": "1.2.3.4:1"}   # unknown: ignored
    new, per = persistence.rebind_addresses(t, moved)
    held = np.isin(t.replicas, [1, 3]).sum(axis=1)
    assert np.array_equal(per, held)
    assert np.array_equal(new.versions, t.versions + held)
    assert (new.versions[held == 0] == t.versions[held == 0]).all()
    assert new.members.addresses[1] == "10.9.9.9:5701" and new.members.hosts[1] == "10.9.9.9"
    assert new.members.addresses[0] == t.members.addresses[0]
    assert np.array_equal(new.replicas, t.replicas) and t.versions.flags.writeable is False
    legacy, _ = persistence.rebind_addresses(t, moved, legacy=True)
    assert np.array_equal(legacy.versions, t.versions + held.sum())
    same, per = persistence.rebind_addresses(t, t.members)   # nobody moved
    assert same == t and not per.any()


def test_rebind_refuses_a_taken_address():
    t = _table(M=3)
    with pytest.raises(ValueError, match="addresses: addresses must be unique"):
        persistence.rebind_addresses(t, {t.members.uuids[0]: t.members.addresses[1]})


def test_restart_decision_policies():
    a = _table(seed=1)
    b = a.replace(versions=a.versions + 1)            # newer: greater sum
    c = a.replace(versions=a.versions[::-1].copy())   # other stamp, same sum as a
    tables = [a, b, a, c, a, b]
    d = persistence.restart_decision(tables, "most-recent")
    assert d.groups == [[0, 2, 4], [1, 5], [3]]
    assert d.sums == [persistence.table_sum(t) for t in (a, b, c)]
    assert d.stamps == [a.stamp, b.stamp, c.stamp]
    assert d.restart == [1, 5] and d.excluded == [0, 2, 3, 4]
    d = persistence.restart_decision(tables, "most-complete")
    assert d.restart == [0, 2, 4] and d.excluded == [1, 3, 5]
    # ties: most-recent prefers the larger group among equal sums, then the first seen
    d = persistence.restart_decision([c, a, a], "most-recent")
    assert d.restart == [1, 2]
    d = persistence.restart_decision([c, a], "most-complete")
    assert d.restart == [0]
    with pytest.raises(ValueError, match="policy must be one of"):
        persistence.restart_decision([a], "newest")
    with pytest.raises(ValueError, match="at least one table"):
        persistence.restart_decision([], "most-recent")


def test_members_from_records():
    m = persistence.members_from_records(
        [{"address": "10.0.0.1:5701", "zone": "a", "lite": "true"},
         {"address": "10.0.0.2:5701", "uuid": str(uuid.UUID(int=99)), "group": "g"}],
        first_index=10)
    assert m.uuids == (str(uuid.UUID(int=11)), str(uuid.UUID(int=99)))
    assert m.lite.tolist() == [True, False] and m.zones == ("a", "")
    assert m.groups == ("member-10", "g") and m.hosts == ("10.0.0.1", "10.0.0.2")
    with pytest.raises(ValueError, match="member 1: no address"):
        persistence.members_from_records([{"address": "a:1"}, {"zone": "z"}])
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['port'\]"):
        persistence.members_from_records([{"address": "a:1", "port": 1}])
