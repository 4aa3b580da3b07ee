"""hzfast plan -> apply / verify -> schedule: the console script, checked against the library."""
import json

import numpy as np
import pytest

import hzfast
from hzfast import persistence
from hzfast.cli._inputs import balanced_table
from hzfast.cli.plan import topology_change

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def table_file(tmp_path, run_json):
    path = tmp_path / "t.npz"
    run_json("generate", "-p", 1000, "-m", 5, "-r", 3, "-o", path, "--json")
    return path


def _expected(table, **change):
    c = topology_change(table, **change)
    plan = hzfast.plan_migrations(c.current, c.target)
    reps, vers = hzfast.apply_migrations(c.current, None, plan)
    return c, plan, hzfast.PartitionTable(reps, vers, c.current.members)


def test_plan_leave_writes_plan_and_target(tmp_path, table_file, run_json):
    plan_path, target = tmp_path / "plan.json", tmp_path / "t2.npz"
    p = run_json("plan", "--table", table_file, "--leave", "127.0.0.1:5705", "-o", plan_path,
                 "--target", target, "--json")
    table = hzfast.PartitionTable.load(table_file)
    c, plan, result = _expected(table, leave=[4])
    assert hzfast.MigrationPlan.from_json(
        json.dumps({k: v for k, v in json.loads(plan_path.read_text()).items()
                    if k not in ("base", "crashed", "members", "target_stamp")})) == plan
    assert p["migrations"] == len(plan) and p["left"] == [4] and p["crashed"] == []
    assert p["by_kind"] == {k.name: int(v) for k, v in plan.counts().items()}
    assert p["to_members"] == 4 and p["from_members"] == 5
    assert p["base_stamp"] == table.stamp and p["target_stamp"] == result.stamp
    assert hzfast.PartitionTable.load(target) == result
    # graceful: the leaver is the source of MOVEs, nothing is repaired first
    assert np.array_equal(c.current.replicas, table.replicas)
    assert (plan.source == 4).sum() == (table.replicas == 4).sum()
    assert p["report"] == hzfast.arrangement_report(c.current.replicas, c.target,
                                                    c.current.members,
                                                    replica_count=3).to_dict()
    assert p["report"]["balanced"] and p["report"]["valid"]


def test_plan_crash_and_join(tmp_path, table_file, run_json):
    members = tmp_path / "new.csv"
    members.write_text("address,zone\n10.1.0.1:5701,b\n10.1.0.2:5701,b\n")
    plan_path = tmp_path / "plan.json"
    p = run_json("plan", "--table", table_file, "--crash", "0", "--join", members,
                 "-o", plan_path, "--json")
    table = hzfast.PartitionTable.load(table_file)
    join = persistence.members_from_records(
        [{"address": "10.1.0.1:5701", "zone": "b"}, {"address": "10.1.0.2:5701", "zone": "b"}],
        first_index=5)
    c, plan, result = _expected(table, crash=[0], join=join)
    assert p["crashed"] == [0] and p["joined"] == 2 and p["to_members"] == 6
    assert p["migrations"] == len(plan) and p["target_stamp"] == result.stamp
    doc = json.loads(plan_path.read_text())
    assert doc["crashed"] == [0] and doc["members"]["addresses"][5:] == ["10.1.0.1:5701",
                                                                        "10.1.0.2:5701"]
    # the crash is a repair: the plan starts from the promoted table, not from the file
    reps, vers = hzfast.repair(table.replicas, np.arange(5) != 0, table.versions)
    assert np.array_equal(c.current.replicas, reps) and np.array_equal(c.current.versions, vers)


def test_round_trip_plan_apply_verify(tmp_path, table_file, run_json, hz):
    plan_path, out = tmp_path / "plan.json", tmp_path / "t2.json"
    run_json("plan", "--table", table_file, "--crash", "1", "--leave", "2", "-o", plan_path,
             "--json")
    v = run_json("verify", "--table", table_file, "--plan", plan_path, "--json")
    table = hzfast.PartitionTable.load(table_file)
    assert v["applies"] is True and v["reason"] is None and v["table_stamp"] == table.stamp
    a = run_json("apply", "--table", table_file, "--plan", plan_path, "-o", out, "--json")
    _, plan, result = _expected(table, crash=[1], leave=[2])
    back, fmt = persistence.read_table(out)
    assert fmt == "json" and back == result
    assert a["stamp_after"] == result.stamp and a["stamp_before"] == table.stamp
    assert a["version_sum_after"] == persistence.table_sum(result)
    # versions rose as Hazelcast raises them: repair, then 1 + (sni > -1) + (dci > -1) each
    rep_v = hzfast.repair(table.replicas, np.arange(5) != 1, table.versions)[1]
    rise = 1 + (plan.source_new_index > -1) + (plan.destination_current_index > -1)
    assert persistence.table_sum(result) == int(rep_v.sum()) + int(rise.sum())
    # the result is not where the plan starts: verify says so, exit status 1
    done = hz("verify", "--table", out, "--plan", plan_path)
    assert done.returncode == 1 and done.stdout.count("\n") == 1
    assert "does not apply" in done.stdout and "already applied" in done.stdout


def test_verify_detects_a_stale_plan(tmp_path, table_file, run_json, hz):
    plan_path = tmp_path / "plan.json"
    run_json("plan", "--table", table_file, "--leave", "4", "-o", plan_path, "--json")
    table = hzfast.PartitionTable.load(table_file)
    moved = table.replace(versions=table.versions + (np.arange(1000) == 7))   # one bump
    moved_path = tmp_path / "moved.npz"
    moved.save(moved_path)
    out = hz("verify", "--table", moved_path, "--plan", plan_path, "--json")
    assert out.returncode == 1
    v = json.loads(out.stdout)
    assert v["applies"] is False and v["reason"].startswith("stale plan")
    assert str(table.stamp) in v["reason"] and v["table_stamp"] == moved.stamp
    # apply refuses it: one line, exit 2
    bad = hz("apply", "--table", moved_path, "--plan", plan_path, "-o", tmp_path / "x.npz")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "stale plan" in bad.stderr
    assert not (tmp_path / "x.npz").exists()


def test_a_bare_library_plan_is_checked_migration_by_migration(tmp_path, run_json, hz):
    table = balanced_table(300, 4, 2)
    path = tmp_path / "t.bin"
    persistence.write_table(path, table, "hz41")
    _, plan, _ = _expected(table, leave=[0])
    bare = tmp_path / "bare.json"
    bare.write_text(plan.to_json())
    assert run_json("verify", "--table", path, "--plan", bare, "--json")["applies"]
    # on another table the first failing migration is named
    other = tmp_path / "other.npz"
    balanced_table(300, 4, 2).replace(replicas=np.roll(table.replicas, 1, axis=0)).save(other)
    out = hz("verify", "--table", other, "--plan", bare, "--json")
    v = json.loads(out.stdout)
    assert out.returncode == 1 and "migration 0 of the plan" in v["reason"]


def test_schedule_rounds_and_seconds(tmp_path, table_file, run_json):
    plan_path = tmp_path / "plan.json"
    run_json("plan", "--table", table_file, "--leave", "4", "-o", plan_path, "--json")
    table = hzfast.PartitionTable.load(table_file)
    c, plan, _ = _expected(table, leave=[4])
    s = run_json("schedule", "--table", table_file, "--plan", plan_path, "--max-parallel", 3,
                 "--json")
    lib = hzfast.schedule(plan, c.current, max_parallel_migrations=3)
    assert s["rounds"] == lib.rounds == s["makespan"] and s["unit"] == "rounds"
    assert s["lower_bound"] == lib.lower_bound and s["lower_bound"] <= s["makespan"]
    assert [m["peak_concurrency"] for m in s["per_member"]] == lib.peak_concurrency.tolist()
    assert all(m["peak_concurrency"] <= 3 for m in s["per_member"])
    assert sum(m["incoming"] for m in s["per_member"]) == int((~plan.instant).sum())
    sizes = tmp_path / "sizes.npy"
    np.save(sizes, np.arange(1000, dtype=np.float64) * 1e6)
    s = run_json("schedule", "--table", table_file, "--plan", plan_path, "--sizes", sizes,
                 "--bandwidth", 50, "--policy", "critical-path", "--json")
    lib = hzfast.schedule(plan, c.current, sizes=np.arange(1000) * 1e6, bandwidth=50e6,
                          policy="critical-path")
    assert s["rounds"] is None and s["unit"] == "seconds"
    assert s["makespan"] == pytest.approx(lib.makespan) and s["policy"] == "critical-path"
    assert s["lower_bound"] == pytest.approx(lib.lower_bound)


def test_charts_are_pngs(tmp_path, table_file, run_json):
    plan_path, moves, gantt = tmp_path / "plan.json", tmp_path / "m.png", tmp_path / "g.png"
    p = run_json("plan", "--table", table_file, "--leave", "4", "-o", plan_path, "--plot",
                 moves, "--json")
    s = run_json("schedule", "--table", table_file, "--plan", plan_path, "--plot", gantt,
                 "--json")
    for png in (moves, gantt):
        data = png.read_bytes()
        assert data[:8] == PNG and 20_000 < len(data) < 2_000_000
    # the chart counts by sender: the leaver sends its owned partitions, owners the rest
    assert sum(p["plot"]["incoming"]) == sum(p["plot"]["outgoing"]) == p["queued"]
    assert p["plot"]["outgoing"][4] == 200   # 1000 partitions / 5 members owned by 4
    assert p["plot"]["unsent"] == 0
    assert s["plot"]["bars"] == s["queued"] and max(s["plot"]["lanes"]) <= 10


def test_to_members_matches_the_crash_of_the_highest(run_json):
    p = run_json("plan", "-p", 2000, "-m", 10, "-r", 3, "--to-members", 9, "--json")
    c, plan, _ = _expected(balanced_table(2000, 10, 3), to_members=9)
    assert p["crashed"] == [9] and p["migrations"] == len(plan)
    assert p["schedule_rounds"] == hzfast.schedule(plan, c.current).rounds
    grow = run_json("plan", "-p", 2000, "-m", 10, "-r", 3, "--to-members", 12, "--json")
    assert grow["joined"] == 2 and grow["to_members"] == 12


def test_text_output(run_text):
    out = run_text("plan", "-p", 2000, "-m", 10, "-r", 3, "--to-members", 9)
    for title in ("10 -> 9 members", "migrations by kind", "arrangement"):
        assert title in out
    for name in ("schedule_rounds", "SHIFT_UP_SHIFT_DOWN", "excess_ratio", "2,000"):
        assert name in out
    assert "member_counts" not in out and "cyclic_partitions" not in out  # lists stay in JSON
