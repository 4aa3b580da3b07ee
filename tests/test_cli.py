"""The hzfast command line, run in-process with --json and checked against the library."""
import json
import subprocess
import sys

import numpy as np
import pytest

import hzfast
from hzfast.cli import main


def run(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "hzfast", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for cmd in ("demo", "generate", "stamp", "locate", "plan"):
        assert cmd in out


def test_generate_then_stamp_and_locate(tmp_path, capsys):
    path = str(tmp_path / "t.npz")
    gen = run(capsys, "generate", "-p", "271", "-m", "5", "-r", "3", "-o", path, "--json")
    table = hzfast.PartitionTable.load(path)
    assert (gen["partitions"], gen["replicas"], gen["members"]) == (271, 3, 5)
    assert gen["stamp"] == table.stamp == hzfast.stamp(table.versions)
    st = run(capsys, "stamp", "--table", path, "--json")
    assert st["stamp"] == table.stamp
    loc = run(capsys, "locate", "--table", path, "alpha", "beta", "", "--json")
    pids = hzfast.partition_ids(["alpha", "beta", ""], 271)
    assert [k["partition"] for k in loc["keys"]] == pids.tolist()
    assert [k["owner"] for k in loc["keys"]] == table.replicas[pids, 0].tolist()
    loc = run(capsys, "locate", "--table", path, "--key-type", "long", "7", "-9", "--json")
    assert [k["partition"] for k in loc["keys"]] == \
        hzfast.partition_ids(np.array([7, -9], dtype=np.int64), 271).tolist()


def test_locate_ignite(capsys):
    loc = run(capsys, "locate", "-p", "1024", "-m", "4", "--system", "ignite", "key", "--json")
    assert loc["keys"][0]["partition"] == hzfast.ignite.partition_ids(["key"], 1024).tolist()[0]


def test_plan_json(capsys, tmp_path):
    out = tmp_path / "plan.json"
    p = run(capsys, "plan", "-p", "2000", "-m", "10", "-r", "3", "--to-members", "9",
            "-o", str(out), "--json")
    assert p["migrations"] == p["queued"] + p["instant"] > 0
    assert sum(p["by_kind"].values()) == p["migrations"]
    plan = hzfast.MigrationPlan.from_json(out.read_text())
    assert len(plan) == p["migrations"]


def test_bad_arguments_exit_cleanly(capsys):
    with pytest.raises(SystemExit) as e:
        main(["stamp", "-p", "0", "--json"])
    assert e.value.code == 2
    assert "partition" in capsys.readouterr().err


def test_demo_without_spark(capsys):
    d = run(capsys, "demo", "-p", "2000", "-m", "5", "-r", "2", "--to-members", "6",
            "-k", "50000", "--no-spark", "--json")
    assert sum(d["keys_per_owner"]) == 50000 and len(d["keys_per_owner"]) == 5
    assert d["plan"]["migrations"] > 0 and d["plan"]["from_members"] == 5


@pytest.mark.spark
def test_demo_on_local_spark():
    """The README's main job, small: a separate process (it stops its own session)."""
    out = subprocess.run([sys.executable, "-m", "hzfast", "demo", "-p", "2000", "-m", "5",
                          "-r", "2", "--to-members", "6", "-k", "20000", "--json"],
                         capture_output=True, text=True, timeout=600)
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
