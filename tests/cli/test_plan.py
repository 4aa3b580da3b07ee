"""hzfast.cli.plan: topology change, plan, schedule, chart, checked against the library."""
import sys

import numpy as np
import pytest

import hzfast
from hzfast.cli import main
from hzfast.cli._inputs import balanced_table
from hzfast.cli.plan import plan_payload, plot_plan, topology_change

PAYLOAD_KEYS = ["partitions", "replicas", "from_members", "to_members", "arrange_ms", "plan_ms",
                "migrations", "queued", "instant", "by_kind", "report", "schedule_rounds"]


def test_plan_json(run_json, tmp_path):
    out = tmp_path / "plan.json"
    p = run_json("plan", "-p", "2000", "-m", "10", "-r", "3", "--to-members", "9",
                 "-o", str(out), "--json")
    assert p["migrations"] == p["queued"] + p["instant"] > 0
    assert sum(p["by_kind"].values()) == p["migrations"]
    plan = hzfast.MigrationPlan.from_json(out.read_text())
    assert len(plan) == p["migrations"]


@pytest.mark.parametrize("to_members", [9, 12])
def test_plan_json_structure_matches_the_library(run_json, tmp_path, to_members):
    out = tmp_path / "plan.json"
    p = run_json("plan", "-p", "2000", "-m", "10", "-r", "3", "--to-members", str(to_members),
                 "--max-parallel", "3", "-o", str(out), "--json")
    assert list(p) == PAYLOAD_KEYS
    assert (p["partitions"], p["replicas"], p["from_members"], p["to_members"]) == \
        (2000, 3, 10, to_members)
    assert isinstance(p["arrange_ms"], float) and isinstance(p["plan_ms"], float)
    current, target = topology_change(balanced_table(2000, 10, 3), to_members)
    plan = hzfast.plan_migrations(current, target)
    assert hzfast.MigrationPlan.from_json(out.read_text()).to_json() == plan.to_json()
    assert p["migrations"] == len(plan) and p["instant"] == int(plan.instant.sum())
    assert list(p["by_kind"]) == [k.name for k in hzfast.MigrationKind]
    assert p["by_kind"] == {k.name: int(v) for k, v in plan.counts().items()}
    assert p["report"] == hzfast.arrangement_report(current.replicas, target,
                                                    current.members).to_dict()
    assert p["schedule_rounds"] == hzfast.schedule(plan, max_parallel_migrations=3).rounds


def test_plan_from_a_saved_table(run_json, tmp_path):
    path = str(tmp_path / "t.npz")
    run_json("generate", "-p", "271", "-m", "5", "-r", "3", "-o", path, "--json")
    p = run_json("plan", "--table", path, "--to-members", "4", "--json")
    assert (p["partitions"], p["replicas"], p["from_members"]) == (271, 3, 5)
    payload, *_ = plan_payload(hzfast.PartitionTable.load(path), 4, 10)
    drop = ("arrange_ms", "plan_ms")
    assert {k: v for k, v in p.items() if k not in drop} == \
        {k: v for k, v in payload.items() if k not in drop}


def test_topology_change_shrink_and_grow():
    table = balanced_table(1000, 5, 3)
    current, target = topology_change(table, 3)
    assert current.member_count == 5
    assert [m.lite for m in current.members] == [False] * 3 + [True] * 2
    assert not np.isin(current.replicas, [3, 4]).any()  # repaired: the leavers hold nothing
    assert not np.isin(target, [3, 4]).any() and target.shape == (1000, 3)
    reps, vers = hzfast.repair(table.replicas, np.arange(5) < 3, table.versions)
    assert np.array_equal(current.replicas, reps) and np.array_equal(current.versions, vers)

    current, target = topology_change(table, 7)
    assert current.member_count == 7 and not any(m.lite for m in current.members)
    assert np.array_equal(current.replicas, table.replicas)
    assert set(np.unique(target)) == set(range(7))
    assert np.array_equal(target, hzfast.arrange(current, current.members, replica_count=3))


def test_text_output(run_text):
    out = run_text("plan", "-p", "2000", "-m", "10", "-r", "3", "--to-members", "9")
    for title in ("10 -> 9 members", "migrations by kind", "arrangement"):
        assert title in out
    for name in ("schedule_rounds", "SHIFT_UP_SHIFT_DOWN", "excess_ratio", "2,000"):
        assert name in out
    assert "member_counts" not in out and "cyclic_partitions" not in out  # lists stay in JSON


def test_plot_writes_a_png(run_json, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "moves.png"
    p = run_json("plan", "-p", "2000", "-m", "10", "--to-members", "12", "--plot", str(png),
                 "--json")
    assert p["migrations"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    _, current, _, plan = plan_payload(balanced_table(271, 3, 2), 4, 10)
    with pytest.raises(SystemExit) as e:
        plot_plan(plan, current.member_count, "never.png")
    assert e.value.code == "--plot needs matplotlib: pip install 'hzfast[plot]'"


def test_bad_parallelism_is_a_library_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["plan", "-p", "100", "-m", "3", "--to-members", "2", "--max-parallel", "0"])
    assert e.value.code == 2
    assert capsys.readouterr().err.startswith("hzfast plan: error: ")
