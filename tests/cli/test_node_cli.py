"""``hzfast node``, ``hzfast cluster up|status|down`` and ``hzfast chaos`` as a user runs them.

Real processes on 127.0.0.1: every PID a test learns is killed in a finally block.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HZ = [sys.executable, "-m", "hzfast"]


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HZ, *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(ChildProcessError):
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    return False


def test_cluster_up_status_down(tmp_path: Path) -> None:
    state = tmp_path / "cluster.json"
    p = _run("cluster", "up", "-n", "3", "--base-port", "0", "-p", "31", "--detach",
             "--state-file", str(state), "--json")
    assert p.returncode == 0, p.stderr
    members = json.loads(p.stdout)["members"]
    pids = [m["pid"] for m in members]
    logs = Path(json.loads(state.read_text())["log_dir"])
    try:
        assert len(members) == 3 and len({m["port"] for m in members}) == 3
        assert sorted(f.name for f in logs.iterdir()) == [
            *(f"member-{i}.log" for i in (1, 2, 3)), "secret"]
        assert (logs / "secret").stat().st_mode & 0o777 == 0o600     # generated, private
        snap: dict = {}
        end = time.monotonic() + 60
        while time.monotonic() < end:                   # until the three settle
            s = _run("cluster", "status", "--state-file", str(state), "--json")
            assert s.returncode == 0, s.stderr
            snap = json.loads(s.stdout)
            if snap["settled"]:
                break
            time.sleep(0.2)
        assert snap["settled"] and snap["stamps_agree"] and snap["reachable"] == 3
        assert sorted(m["pid"] for m in snap["members"]) == sorted(pids)
        owned = [m["owned"] for m in snap["members"]]
        assert sum(owned) == 31 and min(owned) >= 10          # balanced owners
        once = _run("cluster", "status", "--state-file", str(state), "--once")
        assert once.returncode == 0 and "stamps agree" in once.stdout
        down = _run("cluster", "down", "--state-file", str(state))
        assert down.returncode == 0, down.stderr
        assert f"removed their logs ({logs})" in down.stdout
        end = time.monotonic() + 10
        while time.monotonic() < end and not all(_gone(pid) for pid in pids):
            time.sleep(0.05)
        assert all(_gone(pid) for pid in pids) and not state.exists() and not logs.exists()
    finally:
        _kill(pids)


def test_cluster_down_keeps_logs_when_asked_and_touches_nothing_else(tmp_path: Path) -> None:
    """``--keep-logs`` (on ``up`` or ``down``) keeps the members' log folder; without it
    ``down`` deletes only the ``member-<n>.log`` files of the folder its state file names,
    and the folder only when nothing else is left in it."""
    for up_flags, down_flags, kept in (((), ("--keep-logs",), True),
                                       (("--keep-logs",), (), True),
                                       ((), (), False)):
        state = tmp_path / "cluster.json"
        p = _run("cluster", "up", "-n", "1", "--base-port", "0", "-p", "7", "--detach",
                 "--state-file", str(state), "--json", *up_flags)
        assert p.returncode == 0, p.stderr
        pids = [m["pid"] for m in json.loads(p.stdout)["members"]]
        logs = Path(json.loads(state.read_text())["log_dir"])
        other = logs / "notes.txt"
        try:
            if not kept:
                other.write_text("mine")          # not the cluster's: must survive
            down = _run("cluster", "down", "--state-file", str(state), *down_flags)
            assert down.returncode == 0, down.stderr
            assert (logs / "member-1.log").exists() == kept
            assert not kept or f"their logs are in {logs}" in down.stdout
            if not kept:
                assert other.read_text() == "mine" and logs.is_dir()
        finally:
            _kill(pids)
            with contextlib.suppress(FileNotFoundError):
                other.unlink()
            for f in logs.glob("member-*.log"):
                f.unlink()
            with contextlib.suppress(FileNotFoundError):
                logs.rmdir()


def test_node_runs_until_sigterm_and_refuses_a_taken_port() -> None:
    proc = subprocess.Popen([*HZ, "node", "--port", "0", "-p", "17"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    other = None
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready" and ready["member"] == 1 and ready["pid"] == proc.pid
        other = _run("node", "--port", str(ready["port"]), timeout=60)
        assert other.returncode == 2 and "hzfast node: error:" in other.stderr
        assert "Traceback" not in other.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        _kill([proc.pid])
        proc.wait(timeout=10)


def test_bad_flags_are_one_line_errors(tmp_path: Path) -> None:
    for args, flag in ((("node", "--join", "nohost"), "--join"),
                       (("node", "--join", "h:99999"), "--join"),
                       (("chaos", "--members", "1"), "--members"),
                       (("cluster", "status", "--state-file", str(tmp_path / "x.json")),
                        "--state-file")):
        p = _run(*args, timeout=60)
        assert p.returncode == 2, (args, p.stderr)
        assert flag in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_chaos_json() -> None:
    p = _run("chaos", "--members", "3", "--entries", "1500", "--kills", "1", "--seed", "3",
             "-p", "61", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    for key in ("entries_acknowledged", "entries_lost", "kills", "joins",
                "migrations_committed", "migrations_failed", "final_stamp_agreed", "seconds"):
        assert key in d
    assert d["kills"] == 1 and d["joins"] == 1 and d["entries_lost"] == 0
    assert d["entries_acknowledged"] == 1500 and d["final_stamp_agreed"]


def test_help_lists_the_commands() -> None:
    p = _run("--help", timeout=60)
    assert all(c in p.stdout for c in ("node", "cluster", "chaos"))
    for sub in (("node",), ("cluster", "up"), ("cluster", "status"), ("chaos",)):
        h = _run(*sub, "--help", timeout=60)
        assert h.returncode == 0 and "usage: hzfast" in h.stdout


def test_cluster_up_in_the_foreground_removes_its_logs_unless_kept() -> None:
    # with --json the foreground `up` prints the members, waits for one status snapshot,
    # then stops them (as Ctrl-C does); its log folder goes with them unless --keep-logs
    for flags, kept in (((), False), (("--keep-logs",), True)):
        p = _run("cluster", "up", "-n", "1", "--base-port", "0", "-p", "7", "--json", *flags)
        assert p.returncode == 0, p.stderr
        first = json.loads(p.stdout)
        log = Path(first["members"][0]["log"])
        pids = [m["pid"] for m in first["members"]]
        try:
            assert all(_gone(pid) for pid in pids)
            assert log.exists() == kept and log.parent.exists() == kept
            assert (f"member logs kept in {log.parent}" in p.stderr) == kept
        finally:
            _kill(pids)
            if kept:
                log.unlink()
                log.parent.rmdir()
