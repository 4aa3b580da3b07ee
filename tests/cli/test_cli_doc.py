"""docs/cli.md against the command line itself: every command has a section, the section
names every flag of the command's parser and every default it shows, every top-level JSON
key the command prints (run for real), and every exit status the command can return."""
from __future__ import annotations

import argparse
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hzfast.cli import _leaves, build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
HZ = [sys.executable, "-m", "hzfast"]
_GLOBAL = {"-h", "--help", "--debug", "--json"}   # documented once, for every command


def _sections() -> dict[str, str]:
    """``{"cluster up": section text, ...}``: each ``### `command ...``` section of the
    document, keyed by the command words of its heading."""
    out: dict[str, str] = {}
    for part in re.split(r"^### ", DOC.read_text(), flags=re.MULTILINE)[1:]:
        heading = part.split("\n", 1)[0]
        code = re.match(r"`([^`]+)`", heading)
        assert code, heading
        words = []
        for w in code[1].split():
            if not re.fullmatch(r"[a-z][a-z-]*", w):
                break
            words.append(w)
        out[" ".join(words)] = part.split("\n## ", 1)[0]
    return out


def _commands() -> dict[str, argparse.ArgumentParser]:
    return {leaf.prog.removeprefix("hzfast "): leaf for leaf in _leaves(build_parser())}


def _names(text: str) -> set[str]:
    """Every backticked word of ``text`` (a flag, a JSON key, a value)."""
    return {w for code in re.findall(r"`([^`]+)`", text) for w in re.split(r"[\s/,()|=]+", code)}


def test_every_command_has_a_section_and_nothing_else_does() -> None:
    assert sorted(_sections()) == sorted(_commands())


def test_every_flag_and_default_is_in_its_section() -> None:
    sections, missing = _sections(), []
    for name, parser in _commands().items():
        text = " ".join(sections[name].split())
        documented = _names(text)
        for action in parser._actions:
            flags = [f for f in action.option_strings if f not in _GLOBAL]
            for flag in flags:
                if flag not in documented:
                    missing.append(f"{name}: {flag}")
            default = action.default
            if not flags or default is None or default is False \
                    or default is argparse.SUPPRESS:
                continue
            # "`--flag` (default" or "`-x/--flag` (default", the default as --help shows it
            shown = re.escape(str(default))
            if not re.search(rf"{re.escape(flags[-1])}[^`]*` \({shown}[);:]", text):
                missing.append(f"{name}: {flags[-1]} ({default})")
    assert missing == []


def test_every_exit_status_is_documented() -> None:
    table = DOC.read_text().split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    statuses = {int(s) for s in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    assert statuses == {0, 1, 2, 3, 130}
    sections = _sections()
    for name, parser in _commands().items():
        func = parser.get_default("func")
        source = inspect.getsource(func)
        if re.search(r"return 1\b(?!\.)|\b1 if\b|else 1\b(?!\.)|status=1\b", source):
            assert re.search(r"[Ee]xit 1\b|exit 0 when .* 1 when", " ".join(
                sections[name].split())), name
        if "130" in source:
            assert "130" in sections[name], name
    assert "3 when the cluster" in " ".join(sections["node"].split())


def _run(*args: object) -> dict:
    p = subprocess.run([*HZ, *map(str, args)], capture_output=True, text=True, timeout=600,
                       check=False)
    assert p.returncode in (0, 1), (args, p.stderr[-2000:])
    out: dict = json.loads(p.stdout)
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The JSON of every command that does not start member processes, on small inputs."""
    d = tmp_path_factory.mktemp("cli-doc")
    t, plan, after = d / "t.npz", d / "p.json", d / "a.npz"
    (d / "j.csv").write_text("address\n10.0.0.9:5701\n")
    np.save(d / "s.npy", np.full(271, 1e6))
    out = {"generate": _run("generate", "-p", "271", "-m", "4", "-o", t, "--json")}
    out["stamp"] = _run("stamp", "--table", t, "--json")
    out["locate"] = _run("locate", "--table", t, "a", "--json")
    out["export"] = _run("export", "--table", t, "--format", "hz41", "-o", d / "t.bin",
                         "--json")
    (d / "u.bin").write_bytes((d / "t.bin").read_bytes())
    out["plan"] = _run("plan", "--table", t, "--join", d / "j.csv", "-o", plan, "--plot",
                       d / "m.png", "--json")
    out["verify"] = _run("verify", "--table", t, "--plan", plan, "--json")
    out["schedule"] = _run("schedule", "--table", t, "--plan", plan, "--sizes", d / "s.npy",
                           "--bandwidth", "10", "--plot", d / "g.png", "--json")
    out["apply"] = _run("apply", "--table", t, "--plan", plan, "-o", after, "--json")
    out["diff"] = _run("diff", t, after, "--json")
    out["report"] = _run("report", "--table", t, "--target", after, "--json")
    out["arrange"] = _run("arrange", "--table", t, "--json")
    out["restart-decision"] = _run("restart-decision", d / "t.bin", d / "u.bin", "--json")
    from hzfast import persistence
    table, _ = persistence.read_table(d / "t.bin")
    (d / "now.json").write_text(json.dumps(
        [{"uuid": u, "address": a} for u, a in zip(table.members.uuids,
                                                   table.members.addresses)]))
    out["restore"] = _run("restore", "--table", d / "t.bin", "--members-file", d / "now.json",
                          "-o", d / "r.bin", "--json")
    out["ignite assign"] = _run("ignite", "assign", "-n", "3", "-p", "16", "--json")
    (d / "in.json").write_text(json.dumps({"states": [["OWNING"], ["MOVING"]],
                                           "counters": [[10], [0]]}))
    out["ignite rebalance"] = _run("ignite", "rebalance", "--input", d / "in.json", "--json")
    out["simulate"] = _run("simulate", "--seeds", "2", "-p", "16", "--entries", "100", "--json")
    out["demo"] = _run("demo", "--no-spark", "-p", "271", "-k", "2000", "--json")
    return out


#: keys whose sub-keys are data, not a fixed set (fault and mark names, a member's counters)
_DATA = {"faults_injected", "marks", "stats", "settings"}


def _undocumented(doc: str, value: object, where: str = "") -> list[str]:
    """The keys of ``value`` (and of the records and sub-objects under it, one level down)
    that ``doc`` does not mention; a section that says "the keys of `report`" documents
    the keys of the ``report`` section too."""
    text = " ".join(doc.split())
    names = _names(text)
    sections = _sections()
    for other in re.findall(r"the keys of `([a-z -]+)`", text):
        names |= _names(" ".join(sections[other].split()))
    missing = []
    if isinstance(value, list) and value and isinstance(value[0], dict):
        value = value[0]
    if isinstance(value, dict):
        for key, sub in value.items():
            if not re.fullmatch(r"[a-z][a-z_0-9]*", key):
                continue                          # data keys (a kind's name, a fault)
            if key not in names:
                missing.append(f"{where}{key}")
            if where.count(".") < 1 and key not in _DATA:
                missing += _undocumented(doc, sub, f"{where}{key}.")
    return missing


def test_every_json_key_is_in_its_section(outputs: dict[str, dict]) -> None:
    sections = _sections()
    missing = []
    for name, payload in outputs.items():
        missing += [f"{name}: {k}" for k in _undocumented(sections[name], payload)]
    assert missing == []


def test_member_commands_json_keys_are_in_their_sections(tmp_path: Path) -> None:
    import os
    import signal

    sections = _sections()
    state = tmp_path / "c.json"
    up = _run("cluster", "up", "-n", "2", "--base-port", "0", "-p", "7", "--detach",
              "--state-file", state, "--json")
    pids = [m["pid"] for m in up["members"]]
    try:
        status = _run("cluster", "status", "--state-file", state, "--json")
    finally:
        subprocess.run([*HZ, "cluster", "down", "--state-file", str(state)],
                       capture_output=True, timeout=60, check=False)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    chaos = _run("chaos", "--members", "2", "--kills", "0", "--entries", "100", "-p", "7",
                 "--json")
    missing = [f"cluster up: {k}" for k in _undocumented(sections["cluster up"], up)]
    missing += [f"cluster status: {k}" for k in _undocumented(sections["cluster status"],
                                                              status)]
    missing += [f"chaos: {k}" for k in _undocumented(sections["chaos"], chaos)]
    assert missing == []
    assert status["reachable"] == 2 and chaos["entries_acknowledged"] == 100
