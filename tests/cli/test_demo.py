"""hzfast demo: the main job with numpy placement and (marked spark) on local Spark."""
import json
import os

import numpy as np
import pytest

import hzfast
from hzfast.cli._inputs import balanced_table
from hzfast.cli._plots import senders
from hzfast.cli.plan import plan_payload, topology_change

SMALL = ("demo", "-p", "2000", "-m", "5", "-r", "2", "--to-members", "6")
KEYS = ("demo", "plan", "placement_seconds", "placed_by", "keys_per_owner", "movement",
        "schedule")


def _brute_movement(keys, value_bytes):
    """The what-if movement, one migration at a time (the definitions of movement())."""
    table = balanced_table(2000, 5, 2)
    c = topology_change(table, 6)
    plan = hzfast.plan_migrations(c.current, c.target)
    rows = np.bincount(hzfast.partition_ids(np.arange(keys, dtype=np.int64), 2000),
                       minlength=2000)
    send = senders(plan, c.current.replicas)
    b_in, b_out, moved = np.zeros(6, np.int64), np.zeros(6, np.int64), set()
    for i, m in enumerate(plan):
        if m.instant or m.destination < 0 or m.destination_current_index >= 0:
            continue
        b = int(rows[m.partition_id]) * value_bytes
        b_in[m.destination] += b
        b_out[send[i]] += b
        moved.add(m.partition_id)
    return table, c, plan, rows, b_in, b_out, moved


def test_demo_without_spark_json(run_json):
    d = run_json(*SMALL, "-k", "50000", "--no-spark", "--json")
    assert list(d) == ["partitions", "members", "replicas", "keys", "to_members", "stamp",
                       "plan", "placement_seconds", "placed_by", "keys_per_owner", "movement",
                       "schedule"]
    assert (d["partitions"], d["members"], d["replicas"], d["keys"], d["to_members"]) == \
        (2000, 5, 2, 50000, 6)
    table, c, plan, rows, b_in, b_out, moved = _brute_movement(50000, 1024)
    assert d["stamp"] == table.stamp and d["placed_by"] == "numpy"
    owners = table.locate(np.arange(50000, dtype=np.int64))
    assert d["keys_per_owner"] == np.bincount(owners, minlength=5).tolist()
    expect, *_ = plan_payload(table, c, 10)
    assert {k: v for k, v in d["plan"].items() if k != "plan_ms"} == \
        {k: v for k, v in expect.items() if k not in ("plan_ms", "report")}
    mv = d["movement"]
    assert mv["member_bytes_in"] == b_in.tolist() and mv["member_bytes_out"] == b_out.tolist()
    assert mv["transferred_bytes"] == b_in.sum() == b_out.sum()
    assert mv["total_bytes"] == 50000 * 1024 and mv["total_rows"] == 50000
    assert mv["data_moved_fraction"] == round(rows[sorted(moved)].sum() / 50000, 3)
    assert mv["busiest_member_bytes"] == max(b_in.max(), b_out.max())
    assert mv["estimated_seconds"] == round(mv["busiest_member_bytes"] / 100e6, 3)
    sched = hzfast.schedule(plan, c.current, sizes=rows * 1024.0, bandwidth=100e6 / 10)
    assert d["schedule"]["makespan_seconds"] == round(sched.makespan, 3)
    assert d["schedule"]["lower_bound_seconds"] <= d["schedule"]["makespan_seconds"]


def test_demo_text_output_is_humanized(run_text):
    out = run_text(*SMALL, "-k", "50000", "--no-spark")
    for title in ("hzfast demo", "plan", "keys per owner", "what-if movement (numpy)",
                  "migrations timed"):
        assert title in out
    assert f" {balanced_table(2000, 5, 2).stamp} " in out and "50,000" in out
    assert "51.2 MB" in out                   # total_bytes: 50,000 x 1,024 bytes, humanized
    assert "51200000" not in out and "51,200,000" not in out


def test_demo_plot_draws_both_charts(tmp_path, run_json):
    prefix = tmp_path / "demo"
    d = run_json(*SMALL, "-k", "20000", "--no-spark", "--plot", prefix, "--json")
    assert d["plots"] == {"moves": f"{prefix}-moves.png", "schedule": f"{prefix}-schedule.png"}
    for path in d["plots"].values():
        with open(path, "rb") as f:
            data = f.read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and 20_000 < len(data) < 2_000_000


@pytest.mark.spark
def test_demo_on_local_spark_keeps_its_logs_off_the_terminal(user_env, hz):
    """The README's main job, small, in a user's environment: valid JSON on stdout, no Spark
    log line on stderr, the same what-if movement as without Spark."""
    argv = (*SMALL, "-k", "20000", "--json")
    out = hz(*argv, env=user_env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr == ""                   # Spark's log went to its file
    d = json.loads(out.stdout)
    try:
        with open(d["spark_log"]) as f:
            assert f.read()                   # ... and there it is
    finally:
        os.unlink(d["spark_log"])             # (the demo leaves it for its user)
    assert sum(d["keys_per_owner"]) == 20000 and d["placed_by"] == "spark"
    table = balanced_table(2000, 5, 2)
    expect = np.bincount(table.locate(np.arange(20000, dtype=np.int64)), minlength=5)
    assert d["keys_per_owner"] == expect.tolist()
    mv = d["movement"]
    assert mv["total_rows"] == 20000 and 0 < mv["transferred_rows"] < 20000
    numpy_run = json.loads(hz(*argv, "--no-spark").stdout)["movement"]
    for k in ("transferred_bytes", "transferred_rows", "member_bytes_in", "total_bytes"):
        assert mv[k] == numpy_run[k], k
