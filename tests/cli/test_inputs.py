"""hzfast.cli._inputs: the table a command works on, saved or generated."""
import argparse

import numpy as np
import pytest

import hzfast
from hzfast.cli._inputs import add_table_args, balanced_table, load_or_generate


def test_add_table_args_defaults():
    p = argparse.ArgumentParser()
    add_table_args(p, members=4)
    assert vars(p.parse_args([])) == {"table": None, "partitions": 20_000, "members": 4,
                                      "replicas": None}
    assert vars(p.parse_args(["--table", "t.npz", "-p", "7", "-m", "2", "-r", "1"])) == \
        {"table": "t.npz", "partitions": 7, "members": 2, "replicas": 1}
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


def test_bad_sizes_are_library_errors():
    with pytest.raises(ValueError, match="partition"):
        balanced_table(0, 3, None)
