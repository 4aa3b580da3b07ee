"""``hzfast chaos --nemesis pause|partition`` on real member processes (issue 50).

The three cases of issue 50 run once each (a module-scoped fixture): SIGSTOP two of five
members for 5 s, the master alone for 8 s, and a majority/minority partition of five for
8 s, with a client writing all the time, under the default split-brain protection
("majority"). Asserted: the clean-up (every member process stopped by PID, every iptables
rule gone), no acknowledged entry lost, and one cluster of five after healing (the members
the cluster removed merged their data back, left, and were started again under new ids).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hzfast.node.chaos import run_chaos

ROOT = Path(__file__).resolve().parents[2]
CASES = {
    "pause_two_of_five_5s": {"nemesis": ("pause",), "pause_members": 2,
                             "pause_seconds": 5.0},
    "pause_master_8s": {"nemesis": ("pause",), "target": "master", "pause_members": 1,
                        "pause_seconds": 8.0},
    "partition_majority_of_five_8s": {"nemesis": ("partition",),
                                      "partition_shape": "majority",
                                      "partition_seconds": 8.0},
}


def _own_chains() -> list[str]:
    out = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(rf"^-N (HZFAST-{os.getpid()}-[0-9]+)$", out, re.MULTILINE)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    name: str = request.param
    r = asyncio.run(run_chaos(members=5, entries=20_000, backups=1, seed=50, faults=1,
                              heal_timeout=30.0, **CASES[name]))  # type: ignore[arg-type]
    print(name, json.dumps({k: v for k, v in r.items() if k != "lost_sample"}))
    return name, r


@pytest.mark.slow
def test_the_case_ran_and_cleaned_up(case: tuple[str, dict[str, Any]]) -> None:
    name, r = case
    log = r["faults_log"]
    assert len(log) == 1 and r["faults"] == 1 and r["kills"] == 0
    if name.startswith("pause"):
        assert r["pauses"] == 1 and r["network_partitions"] == 0
        assert len(log[0]["members"]) == CASES[name]["pause_members"]
        assert log[0]["master_paused"] == (CASES[name].get("target") == "master")
    else:
        assert r["network_partitions"] == 1 and r["pauses"] == 0
        cut = {tuple(p) for p in log[0]["cut"]}
        assert len(cut) == 12                 # 2 x 3 members, both directions
        assert all((b, a) in cut for a, b in cut)
    assert r["entries_acknowledged"] > 0
    assert log[0]["split_seen"] and r["splits_seen"] == 1   # silent > suspect_ms: removed
    assert len(r["pids"]) == 5 + r["rejoined"] and all(_gone(pid) for pid in r["pids"])
    assert _own_chains() == []


@pytest.mark.slow
def test_the_case_loses_nothing_and_heals(case: tuple[str, dict[str, Any]]) -> None:
    _, r = case
    assert r["entries_lost"] == 0, (r["lost_by_kind"], r["lost_by_phase"], r["lost_by_list"])
    assert r["heal_seconds"][0] is not None
    # one list of five: the members the cluster removed rejoined under new ids
    assert len(r["final_lists"]) == 1 and len(r["final_lists"][0]) == 5, r["final_lists"]
    assert r["final_stamp_agreed"]


def _chaos_doc() -> str:
    text = (ROOT / "docs" / "cli.md").read_text()
    return text.split("### `chaos`", 1)[1].split("\n## ", 1)[0]


def test_cli_partition_run_reports_and_documents_every_key() -> None:
    """A short partition run through the CLI: the JSON has the fault's counts and record,
    every key is in docs/cli.md's `chaos` section, no member process or rule is left."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "hzfast", "chaos", "--nemesis", "partition",
                        "--partition-shape", "halves", "--members", "3", "--faults", "1",
                        "--partition-seconds", "4", "--heal-timeout", "4", "--entries",
                        "1000", "-p", "31", "--json"],
                       capture_output=True, text=True, env=env, timeout=240, check=False)
    assert p.returncode in (0, 1), p.stderr
    r = json.loads(p.stdout)
    assert p.returncode == (1 if r["entries_lost"] or not r["final_stamp_agreed"] else 0)
    assert r["nemesis"] == ["partition"] and r["network_partitions"] == 1
    rec = r["faults_log"][0]
    assert rec["kind"] == "partition" and rec["shape"] == "halves"
    assert len(rec["cut"]) == 4 and rec["split_seen"]     # 1 | 2 members, both directions
    assert 0 < r["entries_acknowledged"] <= r["entries_written"] <= 1000
    doc = _chaos_doc()
    missing = [k for k in (*r, *rec, *r["lost_by_kind"], *r["acknowledged_by_phase"])
               if f"`{k}`" not in doc]
    assert missing == []
    assert all(_gone(pid) for pid in r["pids"]) and _own_chains() == []


def test_cli_refuses_bad_nemesis_flags() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for flags, name in ((("--nemesis", "kill,flood"), "--nemesis"),
                        (("--nemesis", "pause,pause"), "--nemesis"),
                        (("--pause-seconds", "0"), "--pause-seconds"),
                        (("--partition-shape", "star"), "--partition-shape"),
                        (("--nemesis", "partition", "--partition-shape", "ring",
                          "--members", "3"), "--partition-shape"),
                        (("--pause-members", "9", "--members", "3"), "--pause-members")):
        p = subprocess.run([sys.executable, "-m", "hzfast", "chaos", *flags],
                           capture_output=True, text=True, env=env, timeout=60, check=False)
        assert p.returncode == 2 and name in p.stderr and len(p.stderr.splitlines()) == 1, (
            flags, p.stderr)


def test_run_chaos_refuses_bad_nemesis_arguments() -> None:
    for kw, what in (({"nemesis": ("kill", "flood")}, "nemesis"), ({"nemesis": ()}, "nemesis"),
                     ({"pause_members": 0}, "pause_members"),
                     ({"pause_seconds": 0.0}, "pause_seconds"),
                     ({"nemesis": ("partition",), "partition_shape": "ring", "members": 3},
                      "ring"),
                     ({"faults": -1}, "faults")):
        with pytest.raises(ValueError, match=what):
            asyncio.run(run_chaos(**kw))  # type: ignore[arg-type]
