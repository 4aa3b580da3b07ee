"""hzfast.cli.demo: the main job, with numpy placement and (marked spark) on local Spark."""
import json
import subprocess
import sys

import numpy as np
import pytest

import hzfast
from hzfast.cli._inputs import balanced_table
from hzfast.cli.plan import plan_payload

SMALL = ("demo", "-p", "2000", "-m", "5", "-r", "2", "--to-members", "6")


def test_demo_without_spark(run_json):
    d = run_json(*SMALL, "-k", "50000", "--no-spark", "--json")
    assert sum(d["keys_per_owner"]) == 50000 and len(d["keys_per_owner"]) == 5
    assert d["plan"]["migrations"] > 0 and d["plan"]["from_members"] == 5


def test_demo_json_structure(run_json):
    d = run_json(*SMALL, "-k", "50000", "--no-spark", "--json")
    assert list(d) == ["partitions", "members", "replicas", "keys", "to_members", "stamp",
                       "plan", "placement_seconds", "keys_per_owner"]  # no movement: no Spark
    assert (d["partitions"], d["members"], d["replicas"], d["keys"], d["to_members"]) == \
        (2000, 5, 2, 50000, 6)
    table = balanced_table(2000, 5, 2)
    assert d["stamp"] == table.stamp == hzfast.stamp(table.versions)
    assert isinstance(d["placement_seconds"], float)
    owners = table.locate(np.arange(50000, dtype=np.int64))
    assert d["keys_per_owner"] == np.bincount(owners, minlength=5).tolist()
    expect, *_ = plan_payload(table, 6, 10)
    timings = ("arrange_ms", "plan_ms")
    assert {k: v for k, v in d["plan"].items() if k not in timings} == \
        {k: v for k, v in expect.items() if k not in timings + ("report",)}


def test_demo_text_output(run_text):
    out = run_text(*SMALL, "-k", "50000", "--no-spark")
    for title in ("hzfast demo", "plan", "keys per owner"):
        assert title in out
    assert "what-if movement" not in out  # only on Spark
    assert f" {balanced_table(2000, 5, 2).stamp} " in out and "50,000" in out


@pytest.mark.spark
def test_demo_on_local_spark(user_env):
    """The README's main job, small: a separate process (it stops its own session), in a
    user's environment."""
    out = subprocess.run([sys.executable, "-m", "hzfast", "demo", "-p", "2000", "-m", "5",
                          "-r", "2", "--to-members", "6", "-k", "20000", "--json"],
                         capture_output=True, text=True, timeout=600, env=user_env)
    assert out.returncode == 0, out.stderr[-3000:]
    d = json.loads(out.stdout)
    assert sum(d["keys_per_owner"]) == 20000
    table = hzfast.PartitionTable(hzfast.arrange(hzfast.PartitionTable.empty(2000, 2, 5), 5),
                                  members=5)
    expect = np.bincount(table.locate(np.arange(20000, dtype=np.int64)), minlength=5)
    assert d["keys_per_owner"] == expect.tolist()
    mv = d["movement"]
    assert mv["total_rows"] == 20000 and 0 < mv["transferred_rows"] < 20000
    assert mv["estimated_seconds"] > 0
    assert list(d)[-1] == "movement"
    assert len(mv["member_bytes_in"]) == len(mv["member_bytes_out"]) == 6
    assert sum(mv["member_bytes_in"]) == sum(mv["member_bytes_out"]) == mv["transferred_bytes"]
