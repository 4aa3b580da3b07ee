"""The command line's rough edges a new user met in the first hour (issue 53), run as the
user ran them: ``python -m hzfast ...`` in a subprocess, checking the exit status and the
one-line message that names the flag or the file.

Tests that start member processes (127.0.0.1) stop every PID they learn in ``finally``;
every wait is bounded.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hzfast.cli import _leaves, _library_message, build_parser

HZ = [sys.executable, "-m", "hzfast"]


def _run(*args: object, timeout: float = 300, cwd: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HZ, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, check=False)


def _error(p: subprocess.CompletedProcess[str], command: str, *words: str) -> str:
    """``p`` is a user error of ``hzfast COMMAND``: status 2, one line naming ``words``."""
    assert p.returncode == 2, (p.returncode, p.stdout[-500:], p.stderr[-2000:])
    assert "Traceback" not in p.stderr and p.stdout == ""
    assert p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"hzfast {command}: error: "), p.stderr
    for w in words:
        assert w in p.stderr, (w, p.stderr)
    return p.stderr


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(ChildProcessError):
        return os.waitpid(pid, os.WNOHANG)[0] != pid
    try:                                  # not our child: a zombie counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- flags and files ---------------------------------------------------------------------

def test_an_unknown_flag_is_reported_by_its_command() -> None:
    _error(_run("stamp", "--tabel", "x"), "stamp", "unrecognized arguments: --tabel x")
    _error(_run("cluster", "down", "--address", "127.0.0.1:5701"), "cluster down",
           "--address")


def test_range_errors_name_the_flag() -> None:
    _error(_run("simulate", "-b", "9"), "simulate", "-b/--backup-count", "0..6")
    _error(_run("simulate", "--members", "65"), "simulate", "--members", "1..64")
    _error(_run("simulate", "--seeds", "0"), "simulate", "--seeds")
    _error(_run("node", "--port", "99999"), "node", "--port", "0..65,535")
    _error(_run("node", "--link-delay-ms", "20000"), "node", "--link-delay-ms")
    _error(_run("node", "--heartbeat-ms", "500", "--suspect-ms", "400"), "node",
           "--suspect-ms")


def test_base_port_is_checked_before_any_member_starts(tmp_path: Path) -> None:
    _error(_run("cluster", "up", "--base-port", "70000", cwd=tmp_path), "cluster up",
           "--base-port")
    t0 = time.monotonic()
    p = _run("cluster", "up", "-n", "3", "--base-port", "65534", "--detach", cwd=tmp_path)
    _error(p, "cluster up", "--base-port", "65535")
    assert time.monotonic() - t0 < 20              # refused at once, not after a start
    assert list(tmp_path.iterdir()) == []          # no state file, nothing started


def test_members_file_needs_host_and_port(tmp_path: Path) -> None:
    table = tmp_path / "t.npz"
    assert _run("generate", "-p", "271", "-m", "3", "-o", table).returncode == 0
    bad = tmp_path / "joining.csv"
    bad.write_text("address\n10.0.0.1\n")
    _error(_run("plan", "--table", table, "--join", bad), "plan", "--join", str(bad),
           "'10.0.0.1' is not host:port")
    bad.write_text("address\n10.0.0.1:0\n")
    _error(_run("plan", "--table", table, "--join", bad), "plan", "--join", "port 0")
    good = tmp_path / "ok.csv"
    good.write_text("address\n10.0.0.1:5701\n[::1]:5702\n")
    assert _run("plan", "--table", table, "--join", good, "--json").returncode == 0


def test_a_truncated_npz_names_the_file(tmp_path: Path) -> None:
    table = tmp_path / "table.npz"
    assert _run("generate", "-p", "271", "-m", "3", "-o", table).returncode == 0
    cut = tmp_path / "cut.npz"
    cut.write_bytes(table.read_bytes()[:600])
    err = _error(_run("stamp", "--table", cut), "stamp", f"--table: {cut}: ", "cut.npz",
                 "truncated")
    assert "<file object>" not in err


def test_report_judges_the_target_by_its_own_members(tmp_path: Path) -> None:
    table, plan, after = tmp_path / "table.npz", tmp_path / "plan.json", tmp_path / "after.npz"
    joining = tmp_path / "joining.csv"
    joining.write_text("address,zone\n10.0.1.1:5701,b\n10.0.1.2:5701,b\n")
    assert _run("generate", "-p", "2000", "-m", "10", "-o", table).returncode == 0
    p = _run("plan", "--table", table, "--leave", "127.0.0.1:5710", "--join", joining,
             "-o", plan, "--json")
    assert p.returncode == 0, p.stderr
    planned = json.loads(p.stdout)["report"]
    assert _run("apply", "--table", table, "--plan", plan, "-o", after).returncode == 0
    p = _run("report", "--table", table, "--target", after, "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert planned["balanced"] and report["balanced"]
    assert report["max_deviation"] == pytest.approx(planned["max_deviation"], abs=1e-3)
    assert report["slot_changes"] == planned["slot_changes"]
    # the member that left holds nothing in the target and is not counted as a data member
    assert report["member_counts"][9] == [0] * 7


def test_ignite_rebalance_input(tmp_path: Path) -> None:
    _error(_run("ignite", "rebalance"), "ignite rebalance", "--input")
    h = _run("ignite", "rebalance", "--help")
    assert h.returncode == 0 and "--input FILE" in h.stdout
    assert "[--input FILE]" not in h.stdout                    # shown as required
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    err = _error(_run("ignite", "rebalance", "--input", png), "ignite rebalance",
                 f"--input: {png}: not a .json or .npz file")
    assert "codec" not in err
    good = tmp_path / "in.json"
    good.write_text(json.dumps({"states": [["OWNING"], ["MOVING"]],
                                "counters": [[10], [0]]}))
    assert _run("ignite", "rebalance", "--input", good, "--json").returncode == 0


# -- simulate ------------------------------------------------------------------------------

def test_simulate_legacy_5444_summary_matches_its_json() -> None:
    args = ("simulate", "--scenario", "5444", "--design", "legacy", "--entries", "20000")
    j = _run(*args, "--json")
    text = _run(*args)
    assert j.returncode == 0 and text.returncode == 0, (j.stderr, text.stderr)
    d = json.loads(j.stdout)
    assert d["violations"] > 0 and d["entries_lost"] > 0
    assert d["failed"] == 1 and d["passed"] == 0 and len(d["failures"]) == 1
    flat = " ".join(text.stdout.split())
    assert f"passed / failed │ {d['passed']} / {d['failed']}" in flat
    assert re.search(rf"violations │ {d['violations']} │", flat), flat[:800]
    assert f"{d['entries_lost']:,} (0 of them expected" in flat
    assert "exit status 0" in flat


def test_simulate_safe_design_still_fails_on_a_violation_and_legacy_runs_every_seed() -> None:
    j = _run("simulate", "--design", "legacy", "--seeds", "6", "-p", "16", "--entries", "300",
             "--json")
    assert j.returncode == 0, j.stderr
    d = json.loads(j.stdout)
    assert d["seeds"] == 6 and d["passed"] + d["failed"] == 6          # no early stop
    assert len(d["failures"]) == d["failed"]


# -- help ----------------------------------------------------------------------------------

def test_every_default_is_in_help() -> None:
    missing = []
    for leaf in _leaves(build_parser()):
        text = leaf.format_help()
        for action in leaf._actions:
            if not action.option_strings or action.default in (None, argparse.SUPPRESS) \
                    or action.default is False or isinstance(action, argparse._HelpAction):
                continue
            formatter = leaf._get_formatter()
            shown = formatter._get_help_string(action)   # type: ignore[attr-defined]
            if "default" not in shown:
                missing.append(f"{leaf.prog} {action.option_strings[-1]}")
        assert "usage: " + leaf.prog in text
    assert missing == []
    for cmd, flag in ((("simulate",), "--seed-start"), (("simulate",), "--joins"),
                      (("chaos",), "--seed"), (("node",), "--link-delay-ms"),
                      (("cluster", "up"), "--link-delay-ms")):
        h = _run(*cmd, "--help")
        block = " ".join(h.stdout.split(f"  {flag} ", 1)[1].split("\n  -", 1)[0].split())
        assert "default: 0" in block, (cmd, flag, block)


def test_an_empty_library_message_says_what_it_was() -> None:
    assert _library_message(TimeoutError()) == "TimeoutError"
    assert _library_message(ValueError("x must be 1")) == "x must be 1"


# -- real member processes -----------------------------------------------------------------

def test_detach_twice_is_refused_and_down_twice_says_so(tmp_path: Path) -> None:
    state = tmp_path / "c.json"
    p = _run("cluster", "up", "-n", "2", "--base-port", "0", "-p", "17", "--detach",
             "--state-file", state, "--json")
    assert p.returncode == 0, p.stderr
    pids = [m["pid"] for m in json.loads(p.stdout)["members"]]
    log_dir = json.loads(state.read_text())["log_dir"]
    try:
        before = state.read_text()
        again = _run("cluster", "up", "-n", "1", "--base-port", "0", "-p", "17", "--detach",
                     "--state-file", state)
        _error(again, "cluster up", f"--state-file: {state}", "running",
               *map(str, pids), f"hzfast cluster down --state-file {state}")
        assert state.read_text() == before and all(_alive(pid) for pid in pids)
        down = _run("cluster", "down", "--state-file", state)
        assert down.returncode == 0 and "stopped 2 member processes" in down.stdout
        end = time.monotonic() + 15
        while time.monotonic() < end and any(_alive(pid) for pid in pids):
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids)
        err = _error(_run("cluster", "down", "--state-file", state), "cluster down",
                     f"--state-file: {state}: not found", "no detached cluster")
        assert "--address" not in err
        # a state file whose members are gone is stale: `up --detach` may replace it
        state.write_text(before)
        p = _run("cluster", "up", "-n", "1", "--base-port", "0", "-p", "17", "--detach",
                 "--state-file", state, "--json")
        assert p.returncode == 0, p.stderr
        pids += [m["pid"] for m in json.loads(p.stdout)["members"]]
        assert _run("cluster", "down", "--state-file", state).returncode == 0
    finally:
        _kill(pids)
        for f in Path(log_dir).glob("member-*.log"):
            f.unlink()
        with contextlib.suppress(OSError):
            Path(log_dir).rmdir()


def test_status_counts_a_member_that_joined_by_hand(tmp_path: Path) -> None:
    state = tmp_path / "c.json"
    p = _run("cluster", "up", "-n", "2", "--base-port", "0", "-p", "17", "--detach",
             "--state-file", state, "--json")
    assert p.returncode == 0, p.stderr
    up = json.loads(p.stdout)
    members = up["members"]
    pids = [m["pid"] for m in members]
    extra = subprocess.Popen([*HZ, "node", "--port", "0", "-p", "17", "--join",
                              f"{members[0]['host']}:{members[0]['port']}",
                              "--secret-file", up["secret_file"]],     # the cluster's secret
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    pids.append(extra.pid)
    try:
        assert extra.stdout is not None
        assert json.loads(extra.stdout.readline())["event"] == "ready"
        snap: dict = {}
        end = time.monotonic() + 60
        while time.monotonic() < end:
            s = _run("cluster", "status", "--state-file", state, "--json")
            snap = json.loads(s.stdout)
            if snap["settled"]:
                break
            time.sleep(0.2)
        assert snap["reachable"] == snap["asked"] == 3 and snap["settled"]
        assert extra.pid in {m["pid"] for m in snap["members"]}
        text = _run("cluster", "status", "--state-file", state, "--once")
        assert "3 of 3 members answer" in text.stdout
    finally:
        _run("cluster", "down", "--state-file", state)
        _kill(pids)
        extra.wait(timeout=10)


def test_status_with_nothing_answering() -> None:
    port = _free_port()
    p = _run("cluster", "status", "--address", f"127.0.0.1:{port}", "--once")
    assert p.returncode == 1
    assert "no member answers (1 asked)" in p.stdout and "stamps" not in p.stdout


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


# Ctrl-C while the second member starts (not yet in the cluster's list), and in the live view
@pytest.mark.parametrize("delay", [0.0, 1.0])
def test_foreground_cluster_up_exits_130_on_ctrl_c(delay: float) -> None:
    proc = subprocess.Popen([*HZ, "cluster", "up", "-n", "2", "--base-port", "0", "-p", "7"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    kids: list[int] = []
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and len(kids) < 2:       # both members started
            kids = _children(proc.pid)
            time.sleep(0.1)
        assert len(kids) == 2
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)                        # Ctrl-C
        assert proc.wait(timeout=30) == 130
        assert proc.stderr is not None and "interrupted" in proc.stderr.read()
        assert not any(_alive(k) for k in kids)
    finally:
        _kill([proc.pid, *kids])
        proc.wait(timeout=10)


def test_chaos_refuses_more_backups_than_members_can_hold() -> None:
    t0 = time.monotonic()
    _error(_run("chaos", "--members", "2", "--entries", "10", "--kills", "1", "-b", "5"),
           "chaos", "-b/--backups", "6 members")
    assert time.monotonic() - t0 < 20


def test_a_failed_chaos_run_names_the_logs_it_kept() -> None:
    from hzfast.node.chaos import run_chaos

    # a settle limit no cluster meets: the run fails at start, naming the kept folder
    with pytest.raises(RuntimeError) as info:
        asyncio.run(run_chaos(members=2, entries=10, kills=0, partitions=7,
                              settle_timeout=0.001))
    message = str(info.value)
    found = re.search(r"the members' logs are kept in (\S+)$", message)
    assert found and "did not settle" in message, message
    logs = Path(found[1])
    try:
        # (beside the logs, the cluster's secret: docs/node.md §8)
        assert sorted(f.name for f in logs.iterdir()) == ["member-1.log", "member-2.log",
                                                          "secret"]
    finally:
        for f in logs.iterdir():
            f.unlink()
        logs.rmdir()


@pytest.mark.slow          # about 110 s: the legacy design waits out every settle timeout
def test_legacy_chaos_finishes_with_its_unsettled_notes() -> None:
    # the README's legacy run, smaller: it ends with a report (exit 0), never an empty error
    p = _run("chaos", "--members", "3", "--entries", "2000", "--kills", "1", "--seed", "1",
             "-p", "61", "--design", "legacy", "--json", timeout=400)
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(p.stdout)
    assert d["design"] == "legacy" and d["kills"] == 1 and isinstance(d["unsettled"], list)
    assert d["entries_acknowledged"] + d["entries_not_acknowledged"] == 2000



def test_the_gantt_chart_draws_only_the_members_that_receive(tmp_path: Path) -> None:
    import matplotlib.image

    table, plan, sizes = tmp_path / "t.npz", tmp_path / "p.json", tmp_path / "s.json"
    joining = tmp_path / "j.csv"
    joining.write_text("address\n10.0.1.1:5701\n10.0.1.2:5701\n")
    assert _run("generate", "-p", "2000", "-m", "10", "-o", table).returncode == 0
    assert _run("plan", "--table", table, "--leave", "9", "--join", joining,
                "-o", plan).returncode == 0
    sizes.write_text(json.dumps([50e6] * 2000))
    png = tmp_path / "g.png"
    p = _run("schedule", "--table", table, "--plan", plan, "--sizes", sizes, "--bandwidth",
             "100", "--plot", png, "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)["plot"]
    assert d["rows"] == [10, 11]                        # the two newcomers receive it all
    assert [m for m, n in enumerate(d["lanes"]) if n] == d["rows"]
    assert max(d["lanes"]) == 10
    height, width = matplotlib.image.imread(png).shape[:2]
    # two rows of 10 lanes: 0.12 in per lane, plus margins, at 110 dpi (12 rows took 8.5 in)
    assert 3.0 * 110 <= height <= 4.6 * 110 and width == 1100
