"""hzfast.cli._inputs: the table a command works on, saved or generated."""
import argparse

import numpy as np
import pytest

import hzfast
from hzfast.cli._errors import UserError
from hzfast.cli._inputs import (
    add_table_args,
    balanced_table,
    check_table_size,
    load_members,
    load_or_generate,
    load_plan,
    load_table,
    member_ids,
)


def test_add_table_args_defaults():
    p = argparse.ArgumentParser()
    add_table_args(p, members=4)
    assert vars(p.parse_args([])) == {"table": None, "partitions": 20_000, "members": 4,
                                      "replicas": None, "members_file": None}
    assert vars(p.parse_args(["--table", "t.npz", "-p", "7", "-m", "2", "-r", "1"])) == \
        {"table": "t.npz", "partitions": 7, "members": 2, "replicas": 1, "members_file": None}
    assert "(default 4)" in p.format_help()


@pytest.mark.parametrize("members, replicas, expect_r", [(5, None, 5), (9, None, 7), (5, 2, 2)])
def test_balanced_table(members, replicas, expect_r):
    t = balanced_table(1000, members, replicas)
    assert (t.partition_count, t.replica_count, t.member_count) == (1000, expect_r, members)
    assert not t.versions.any() and t.stamp == hzfast.stamp(t.versions)
    empty = hzfast.PartitionTable.empty(1000, expect_r, members)
    assert np.array_equal(t.replicas, hzfast.arrange(empty, members, replica_count=expect_r))
    report = hzfast.arrangement_report(empty.replicas, t.replicas, t.members,
                                       replica_count=expect_r)
    assert report.balanced and report.valid


def test_load_or_generate(tmp_path):
    path = tmp_path / "t.npz"
    saved = balanced_table(271, 3, 2)
    saved.save(str(path))
    ns = argparse.Namespace(table=str(path), partitions=99, members=9, replicas=None)
    assert load_or_generate(ns) == saved
    for table in (None, ""):
        ns = argparse.Namespace(table=table, partitions=271, members=3, replicas=2)
        assert load_or_generate(ns) == saved
    # a Namespace without `table` (like generate's) generates too
    assert load_or_generate(argparse.Namespace(partitions=271, members=3, replicas=2)) == saved


def test_bad_sizes_are_user_errors_before_allocating():
    with pytest.raises(UserError, match="-p/--partitions: must be in 1..2147483647, got 0"):
        balanced_table(0, 3, None)
    with pytest.raises(UserError, match=r"-p/--partitions: a 2,147,483,647 x 7 table needs"):
        check_table_size(2**31 - 1, None, 10)
    with pytest.raises(UserError, match="-r/--replicas: must be in 1..7, got 0"):
        check_table_size(10, 0, 10)
    assert check_table_size(10, None, 3) == 3


def test_members_files(tmp_path):
    csv = tmp_path / "m.csv"
    csv.write_text("uuid,address,zone,lite,group\n"
                   ",10.0.0.1:5701,a,false,g1\n"
                   "00000000-0000-0000-0000-0000000000aa,10.0.0.2:5701,b,true,g2\n")
    m = load_members(str(csv))
    assert m.addresses == ("10.0.0.1:5701", "10.0.0.2:5701") and m.zones == ("a", "b")
    assert m.lite.tolist() == [False, True] and m.groups == ("g1", "g2")
    assert m.uuids[1] == "00000000-0000-0000-0000-0000000000aa"
    js = tmp_path / "m.json"
    js.write_text('{"members": [{"address": "h:1"}, {"address": "h:2", "host": "rack-1"}]}')
    assert load_members(str(js)).hosts == ("h", "rack-1")
    js.write_text(hzfast.Members.from_count(3).to_json())
    assert load_members(str(js)) == hzfast.Members.from_count(3)
    for text, problem in (("", "empty file"), ("[1]", "member 0 is not an object"),
                          ("address\n", "no members"), ("{", "not valid JSON"),
                          ('[{"address": "h:1", "lite": "maybe"}]', "member 0: lite must be true")):
        js.write_text(text)
        with pytest.raises(UserError, match=f"--members-file: {js}: {problem}"):
            load_members(str(js))


def test_member_ids():
    m = hzfast.Members.from_count(4)
    assert member_ids(["3", m.uuids[0], "127.0.0.1:5702"], m, "--leave") == [3, 0, 1]
    with pytest.raises(UserError, match="--crash: member '1' is named twice"):
        member_ids(["1", "1"], m, "--crash")
    with pytest.raises(UserError, match="--leave: member index -1 is outside 0..3"):
        member_ids(["-1"], m, "--leave")


def test_load_table_and_plan_name_the_file(tmp_path):
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"\0\0\0\1")
    with pytest.raises(UserError, match=f"--table: {bad}: not a persisted partition table"):
        load_table(str(bad))
    with pytest.raises(UserError, match=f"--plan: {bad}: not a plan"):
        load_plan(str(bad))
