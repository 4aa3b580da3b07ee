"""hzfast.cli.table: generate, stamp and locate, checked against the library."""
import numpy as np
import pytest

import hzfast
from hzfast.cli import main


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


def test_locate_ignite(run_json):
    loc = run_json("locate", "-p", "1024", "-m", "4", "--system", "ignite", "key", "--json")
    assert loc["keys"][0]["partition"] == hzfast.ignite.partition_ids(["key"], 1024).tolist()[0]


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
    assert list(st) == ["partitions", "stamp", "stamp_hex_u64"]
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


def test_locate_non_integer_key_exits_with_message():
    with pytest.raises(SystemExit) as e:
        main(["locate", "-p", "271", "--key-type", "int", "x"])
    # a message, not a status: the interpreter prints it and exits with status 1
    assert e.value.code == "hzfast locate: --key-type int needs integer keys"
