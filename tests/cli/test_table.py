"""hzfast.cli.table: generate, stamp, locate and export, checked against the library."""
import numpy as np
import pytest

import hzfast
from hzfast import persistence


def test_generate_then_stamp_and_locate(tmp_path, run_json):
    path = str(tmp_path / "t.npz")
    gen = run_json("generate", "-p", "271", "-m", "5", "-r", "3", "-o", path, "--json")
    table = hzfast.PartitionTable.load(path)
    assert (gen["partitions"], gen["replicas"], gen["members"]) == (271, 3, 5)
    assert gen["stamp"] == table.stamp == hzfast.stamp(table.versions)
    st = run_json("stamp", "--table", path, "--json")
    assert st["stamp"] == table.stamp
    loc = run_json("locate", "--table", path, "alpha", "beta", "", "--json")
    pids = hzfast.partition_ids(["alpha", "beta", ""], 271)
    assert [k["partition"] for k in loc["keys"]] == pids.tolist()
    assert [k["owner"] for k in loc["keys"]] == table.replicas[pids, 0].tolist()
    loc = run_json("locate", "--table", path, "--key-type", "long", "7", "-9", "--json")
    assert [k["partition"] for k in loc["keys"]] == \
        hzfast.partition_ids(np.array([7, -9], dtype=np.int64), 271).tolist()


def test_locate_ignite_uses_an_ignite_assignment(run_json):
    loc = run_json("locate", "-p", "1024", "-m", "4", "-r", "2", "--system", "ignite", "key",
                   "alice", "--json")
    members = hzfast.Members.from_count(4)
    nodes = hzfast.ignite.assign(list(members.uuids), partitions=1024, backups=1)
    for row, key in zip(loc["keys"], ("key", "alice")):
        p = hzfast.ignite.partition_ids([key], 1024).tolist()[0]
        assert row["partition"] == p
        assert [row["owner"], *row["backups"]] == nodes[p].tolist()
        assert row["owner_address"] == members.addresses[nodes[p, 0]]


def test_generate_json_structure(tmp_path, run_json):
    path = str(tmp_path / "g.npz")
    gen = run_json("generate", "-p", "1000", "-m", "9", "-o", path, "--json")
    assert list(gen) == ["output", "partitions", "replicas", "members", "stamp", "arrange_ms"]
    assert gen["output"] == path and gen["replicas"] == 7  # default min(members, 7)
    assert all(type(gen[k]) is int for k in ("partitions", "replicas", "members", "stamp"))
    assert isinstance(gen["arrange_ms"], float) and gen["arrange_ms"] >= 0
    table = hzfast.PartitionTable.load(path)
    empty = hzfast.PartitionTable.empty(1000, 7, 9)
    assert np.array_equal(table.replicas, hzfast.arrange(empty, 9))
    assert gen["stamp"] == hzfast.stamp(table.versions)


def test_stamp_json_structure(run_json):
    st = run_json("stamp", "-p", "1000", "-m", "4", "--json")
    assert list(st) == ["partitions", "stamp", "stamp_hex_u64", "version_sum"]
    assert st["version_sum"] == 0
    table = hzfast.PartitionTable(
        hzfast.arrange(hzfast.PartitionTable.empty(1000, 4, 4), 4), members=4)
    assert st["partitions"] == 1000 and st["stamp"] == table.stamp == hzfast.stamp(table.versions)
    assert -2**63 <= st["stamp"] < 2**63
    hex_ = st["stamp_hex_u64"]
    assert len(hex_) == 16 and int(hex_, 16) == st["stamp"] % 2**64


def test_locate_json_structure(tmp_path, run_json):
    path = str(tmp_path / "t.npz")
    run_json("generate", "-p", "271", "-m", "5", "-r", "3", "-o", path, "--json")
    table = hzfast.PartitionTable.load(path)
    loc = run_json("locate", "--table", path, "--key-type", "int", "1", "2147483647", "--json")
    assert list(loc) == ["system", "partitions", "keys"]
    assert loc["system"] == "hazelcast" and loc["partitions"] == 271
    pids = hzfast.partition_ids(np.array([1, 2147483647], dtype=np.int32), 271)
    for row, key, p in zip(loc["keys"], (1, 2147483647), pids.tolist()):
        assert list(row) == ["key", "partition", "owner", "owner_address", "backups"]
        assert row["key"] == key and row["partition"] == p  # int keys come back as ints
        assert row["owner"] == table.replicas[p, 0]
        assert row["owner_address"] == table.members[row["owner"]].address
        assert row["backups"] == table.replicas[p, 1:].tolist()


def test_text_output(tmp_path, run_text):
    path = str(tmp_path / "t.npz")
    out = run_text("generate", "-p", "20000", "-m", "3", "-o", path)
    table = hzfast.PartitionTable.load(path)
    assert "generated table" in out and "20,000" in out
    assert f" {table.stamp} " in out  # the stamp is printed plainly, without separators
    out = run_text("stamp", "--table", path)
    assert "partition-table stamp" in out and f" {table.stamp} " in out
    assert f"{table.stamp % 2**64:016x}" in out
    out = run_text("locate", "--table", path, "alice")
    p = hzfast.partition_id("alice", 20000)
    assert "hazelcast placement over 20,000 partitions" in out
    assert f" {p} " in out and table.members[int(table.replicas[p, 0])].address in out


def test_locate_non_integer_key_is_a_user_error(run_error):
    err = run_error("locate", "-p", "271", "--key-type", "int", "x")
    assert err == "hzfast locate: error: --key-type int: key 'x' is not an integer\n"


@pytest.mark.parametrize("fmt", persistence.FORMATS)
def test_export_every_format_reads_back(fmt, tmp_path, run_json):
    src = tmp_path / "t.npz"
    run_json("generate", "-p", "500", "-m", "6", "-r", "4", "-o", src, "--json")
    out = tmp_path / f"t.{fmt}"
    e = run_json("export", "--table", src, "--format", fmt, "-o", out, "--json")
    table = hzfast.PartitionTable.load(src)
    back, found = persistence.read_table(out)
    assert found == fmt and e["bytes"] == out.stat().st_size and e["stamp"] == table.stamp
    assert back == table            # versions all 0: the legacy layout loses nothing here
    # any command reads it back, whatever its name says
    assert run_json("stamp", "--table", out, "--json")["stamp"] == table.stamp


def test_generate_with_a_members_file(tmp_path, run_json):
    members = tmp_path / "m.json"
    members.write_text('[{"address": "10.0.0.1:5701", "zone": "a"}, '
                       '{"address": "10.0.0.2:5701", "zone": "b"}, '
                       '{"address": "10.0.0.3:5701", "zone": "a", "lite": true}]')
    out = tmp_path / "t.json"
    g = run_json("generate", "-p", "100", "--members-file", members, "-o", out, "--json")
    table, fmt = persistence.read_table(out)
    assert fmt == "json" and g["members"] == 3 and table.members.zones == ("a", "b", "a")
    assert not (table.replicas == 2).any()          # the lite member holds nothing
    assert table.replica_count == 3 and (table.replicas[:, 2] == -1).all()
