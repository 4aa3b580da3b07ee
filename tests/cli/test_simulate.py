"""``hzfast simulate`` through the real console script."""
from __future__ import annotations

import inspect
import json
import subprocess

from hzfast import sim
from hzfast.cli import simulate as cli


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["hzfast", "simulate", *args], capture_output=True, text=True,
                          timeout=600, check=False)


def test_swarm_seeds_json_matches_the_library() -> None:
    p = _run("--seeds", "6", "--seed-start", "40", "-p", "16", "--entries", "300", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    runs = [sim.run(s, partitions=16, entries=300) for s in range(40, 46)]
    assert d["seeds"] == 6 and d["failed"] == 0 and d["passed"] == 6
    assert d["entries_acknowledged"] == sum(r.entries_acknowledged for r in runs)
    assert d["events"] == sum(r.events for r in runs)
    assert d["faults_injected"].get("member_crashed", 0) == sum(
        r.faults_injected.get("member_crashed", 0) for r in runs)


def test_5444_legacy_reports_the_loss() -> None:
    p = _run("--scenario", "5444", "--design", "legacy", "--entries", "20000", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["entries_acknowledged"] == 20_000
    assert 0.35 < d["entries_lost"] / 20_000 < 0.55 and d["entries_lost_expected"] == 0


def test_trace_of_one_seed_and_bad_flags() -> None:
    p = _run("--seeds", "1", "-p", "8", "--entries", "50", "--joins", "1", "--trace")
    assert p.returncode == 0, p.stderr
    assert "MembershipChanged" not in p.stdout and "members [" in p.stdout
    bad = _run("--seeds", "2", "--trace")
    assert bad.returncode == 2 and "--trace" in bad.stderr and "Traceback" not in bad.stderr
    bad = _run("--seeds", "-3")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    bad = _run("--seeds", "1", "-b", "9")
    assert bad.returncode == 2 and "-b/--backup-count" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1


def test_jobs_give_the_same_report_as_one_process() -> None:
    args = ("--seeds", "60", "--seed-start", "7", "-p", "16", "--entries", "200", "--json")
    one = _run(*args)
    two = _run(*args, "--jobs", "2")
    assert one.returncode == two.returncode == 0, (one.stderr, two.stderr)
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    for d in (a, b):
        del d["seconds"], d["runs_per_second"]
    assert a == b and a["seeds"] == 60 and a["events"] > 0


def test_jobs_report_bad_settings_like_one_process() -> None:
    # every run refuses the setting: checked once before any worker starts, it is the
    # usual one-line error
    bad = _run("--seeds", "60", "-p", "16", "--entries", "20", "--members", "80", "--jobs", "2")
    assert bad.returncode == 2 and "members" in bad.stderr and "Traceback" not in bad.stderr


def test_max_parallel_migrations_matches_the_library() -> None:
    p = _run("--seeds", "4", "--seed-start", "90", "-p", "32", "--entries", "300",
             "--max-parallel-migrations", "1", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    runs = [sim.run(s, partitions=32, entries=300, max_parallel_migrations=1)
            for s in range(90, 94)]
    assert d["events"] == sum(r.events for r in runs)
    # the limit is used: the default limit gives other runs
    assert d["events"] != sum(sim.run(s, partitions=32, entries=300).events
                              for s in range(90, 94))
    bad = _run("--seeds", "1", "--max-parallel-migrations", "0")
    assert bad.returncode == 2 and "--max-parallel-migrations" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1
    bad = _run("--scenario", "5444", "--max-parallel-migrations", "3")
    assert bad.returncode == 2 and "--scenario" in bad.stderr
    bad = _run("--scenario", "5444", "--strict")
    assert bad.returncode == 2 and "--strict" in bad.stderr


def test_strict_runs_the_same_seeds_with_more_checks() -> None:
    args = ("--seeds", "3", "--seed-start", "20", "-p", "16", "--entries", "200", "--json")
    plain, strict = _run(*args), _run(*args, "--strict")
    assert plain.returncode == strict.returncode == 0, (plain.stderr, strict.stderr)
    a, b = json.loads(plain.stdout), json.loads(strict.stdout)
    assert a["events"] == b["events"] and a["passed"] == b["passed"] == 3


def test_a_failures_replay_line_carries_every_setting() -> None:
    from hzfast.cli import build_parser
    from hzfast.cli.simulate import _failure, _replay_flags

    parser = build_parser()
    args = parser.parse_args(["simulate", "--seeds", "30", "--members", "3", "-b", "2",
                              "--joins", "1", "-p", "16", "--entries", "300",
                              "--design", "legacy", "--max-parallel-migrations", "2",
                              "--strict"])
    r = sim.run(5, members=3, backup_count=2, joins=1, partitions=16, entries=300,
                design="legacy", max_parallel_migrations=2, strict=True)
    line = _failure(r, _replay_flags(args))["replay"]
    assert line.startswith("hzfast simulate --seed-start 5 --seeds 1 ")
    again = parser.parse_args(line.split()[1:])
    for name in ("members", "backup_count", "joins", "partitions", "entries", "design",
                 "faults", "max_parallel_migrations", "strict"):
        assert getattr(again, name) == getattr(args, name), name
    assert again.seed_start == 5 and again.seeds == 1 and again.trace
    # defaults stay out of the line; the scenario's own default entries too
    assert _replay_flags(parser.parse_args(["simulate"])) == ""
    five = parser.parse_args(["simulate", "--scenario", "5444", "--design", "legacy"])
    assert _replay_flags(five) == "--scenario 5444 --design legacy"


def test_the_flags_defaults_are_the_librarys() -> None:
    """The CLI's settings tables (its defaults, and what a replay line leaves out) hold the
    same defaults as ``hzfast.sim.run`` and ``hzfast.sim.scenario_5444``."""
    for fn, table in ((sim.run, cli._SWARM), (sim.scenario_5444, cli._SCENARIO)):
        params = inspect.signature(fn).parameters
        for _, name, default in table:
            keyword = cli.RUN_KEYWORD.get(name, name)
            assert params[keyword].default == default, (fn.__name__, name)


def test_membership_seeds_json_matches_the_library() -> None:
    from hzfast.sim.membership import run_membership

    p = _run("--membership", "--seeds", "8", "--seed-start", "30", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    runs = [run_membership(s) for s in range(30, 38)]
    assert d["seeds"] == 8 and d["passed"] == 8 and d["min_cluster_size"] == "majority"
    assert d["lists_committed"] == sum(r.lists_committed for r in runs)
    assert d["pauses"] == sum(r.injected.get("member_paused", 0) for r in runs)
    j = _run("--membership", "--seeds", "120", "--seed-start", "30", "-j", "2", "--json")
    s = _run("--membership", "--seeds", "120", "--seed-start", "30", "--json")
    dj, ds = json.loads(j.stdout), json.loads(s.stdout)
    assert {k: v for k, v in dj.items() if k != "seconds"} == \
        {k: v for k, v in ds.items() if k != "seconds"}
    bad = _run("--membership", "--min-cluster-size", "x")
    assert bad.returncode == 2 and "--min-cluster-size" in bad.stderr
