"""hzfast.cli (the parser and ``main``): commands, flags, defaults, help, exit statuses."""
import argparse
import importlib.metadata
import subprocess
import sys

import pytest

import hzfast
from hzfast.cli import COMMAND_GROUPS, build_parser, main

COMMANDS = ("demo", "generate", "stamp", "locate", "export", "plan", "apply", "verify",
            "schedule", "diff", "report", "arrange", "restart-decision", "restore")
TABLE_OPTIONS = ["--table", "-p", "--partitions", "-m", "--members", "-r", "--replicas",
                 "--members-file"]
TABLE_DEFAULTS = {"table": None, "partitions": 20_000, "members": 10, "replicas": None,
                  "members_file": None}
# Per command: the minimal argv that parses, the options in --help order, every default.
CONTRACT = {
    "demo": ([], ["--json", "-p", "--partitions", "-m", "--members", "-r", "--replicas",
                  "--to-members", "-k", "--keys", "--value-bytes", "--bandwidth-mb",
                  "--max-parallel", "--no-spark", "--plot", "--debug"],
             {"json": False, "partitions": 20_000, "members": 10, "replicas": None,
              "to_members": 11, "keys": 1_000_000, "value_bytes": 1024, "bandwidth_mb": 100.0,
              "max_parallel": 10, "no_spark": False, "plot": None}),
    "generate": (["-o", "x.npz"], ["--json", "-p", "--partitions", "-m", "--members", "-r",
                                   "--replicas", "--members-file", "-o", "--output", "--debug"],
                 {"json": False, "partitions": 20_000, "members": 10, "replicas": None,
                  "members_file": None, "output": "x.npz"}),
    "stamp": ([], ["--json", *TABLE_OPTIONS, "--debug"], {"json": False, **TABLE_DEFAULTS}),
    "locate": (["k"], ["--json", *TABLE_OPTIONS, "--key-type", "--system", "--debug"],
               {"json": False, **TABLE_DEFAULTS, "keys": ["k"], "key_type": "string",
                "system": "hazelcast"}),
    "export": (["--format", "hz41", "-o", "f.bin"],
               ["--json", *TABLE_OPTIONS, "--format", "-o", "--output", "--debug"],
               {"json": False, **TABLE_DEFAULTS, "format": "hz41", "output": "f.bin"}),
    "plan": (["--to-members", "9"], ["--json", *TABLE_OPTIONS, "--grouping", "--max-parallel",
                                     "--plot", "-o", "--output", "--target", "--debug",
                                     "--leave", "--crash", "--join", "--to-members"],
             {"json": False, **TABLE_DEFAULTS, "to_members": 9, "leave": None, "crash": None,
              "join": None, "grouping": "per_member", "max_parallel": 10, "plot": None,
              "output": None, "target": None}),
    "apply": (["--table", "t", "--plan", "p", "-o", "o"],
              ["--json", "--table", "--plan", "-o", "--output", "--debug"],
              {"json": False, "table": "t", "plan": "p", "output": "o"}),
    "verify": (["--table", "t", "--plan", "p"], ["--json", "--table", "--plan", "--debug"],
               {"json": False, "table": "t", "plan": "p"}),
    "schedule": (["--table", "t", "--plan", "p"],
                 ["--json", "--table", "--plan", "--max-parallel", "--sizes", "--bandwidth",
                  "--policy", "--plot", "--debug"],
                 {"json": False, "table": "t", "plan": "p", "max_parallel": 10, "sizes": None,
                  "bandwidth": None, "policy": "hazelcast", "plot": None}),
    "diff": (["a", "b"], ["--json", "--debug"], {"json": False, "a": "a", "b": "b"}),
    "report": ([], ["--json", *TABLE_OPTIONS, "--target", "--grouping", "--debug"],
               {"json": False, **TABLE_DEFAULTS, "target": None, "grouping": "per_member"}),
    "arrange": ([], ["--json", *TABLE_OPTIONS, "--grouping", "-o", "--output", "--debug"],
                {"json": False, **TABLE_DEFAULTS, "grouping": "per_member", "output": None}),
    "restart-decision": (["f"], ["--json", "--policy", "--debug"],
                         {"json": False, "files": ["f"], "policy": "most-recent"}),
    "restore": (["--table", "t", "--members-file", "m", "-o", "o"],
                ["--json", "--table", "--members-file", "--legacy", "-o", "--output",
                 "--debug"],
                {"json": False, "table": "t", "members_file": "m", "legacy": False,
                 "output": "o"}),
}


@pytest.fixture
def help_of(capsys, monkeypatch):
    """``help_of(*argv)``: the text of ``hzfast *argv --help``, unwrapped (200 columns)."""
    monkeypatch.setenv("COLUMNS", "200")

    def run(*argv):
        with pytest.raises(SystemExit) as e:
            main([*argv, "--help"])
        assert e.value.code == 0
        return capsys.readouterr().out
    return run


def test_help_lists_commands_in_order_with_their_summary(help_of):
    out = help_of()
    assert out.startswith("usage: hzfast [-h] [--version] [--debug] COMMAND ...")
    assert "Fast, bit-exact Hazelcast/Ignite partition tables" in out
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    listed = [a.dest for a in sub._choices_actions]
    assert listed[:len(COMMANDS) + 1] == [*COMMANDS, "ignite"]
    flat = " ".join(out.split())
    for a in sub._choices_actions:
        assert f"{a.dest} {' '.join(a.help.split())}" in flat


@pytest.mark.parametrize("cmd", COMMANDS)
def test_command_flags_and_defaults(cmd, help_of):
    argv, options, defaults = CONTRACT[cmd]
    args = build_parser().parse_args([cmd, *argv])
    assert args.command == cmd and args.func.__name__ == f"cmd_{cmd.replace('-', '_')}"
    assert args.prog_name == f"hzfast {cmd}"
    got = {k: v for k, v in vars(args).items() if k not in ("command", "func", "prog_name",
                                                             "debug")}
    assert got == defaults
    out = help_of(cmd)
    assert out.startswith(f"usage: hzfast {cmd} [-h]")
    listed = []
    for line in out.splitlines():
        if line.startswith("  -"):
            listed += [o.split()[0] for o in line.strip().split("  ")[0].split(", ")]
    assert listed == ["-h", "--help", *options]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_option_with_a_default_shows_it(cmd):
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    p = sub.choices[cmd]
    text = " ".join(p.format_help().split())
    for action in p._actions:
        if action.option_strings and action.default not in (None, False, argparse.SUPPRESS) \
                and not isinstance(action, argparse._HelpAction):
            assert "default" in (action.help or "") or "(default: " in text, action.dest
    for action in p._actions:
        assert action.help, (cmd, action.dest)


def test_same_replica_default_everywhere(help_of):
    for cmd in ("demo", "generate", "stamp", "locate", "plan", "report", "arrange", "export"):
        assert "replicas per partition (default min(members, 7))" in " ".join(
            help_of(cmd).split()), cmd


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"hzfast {hzfast.__version__}\n"


def test_command_groups_register_in_order():
    # later groups (hzfast simulate, ...) register after these
    assert COMMAND_GROUPS[:6] == ("demo", "table", "plan", "inspect", "restart", "ignite")


def test_console_script_and_module_entry_points():
    (ep,) = [e for e in importlib.metadata.entry_points(group="console_scripts")
             if e.name == "hzfast"]
    assert ep.value == "hzfast.cli:main" and ep.load() is main
    for module in ("hzfast", "hzfast.cli"):
        out = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True,
                             text=True, check=True, timeout=120).stdout
        assert out == f"hzfast {hzfast.__version__}\n"


def test_imports_stay_light():
    """``import hzfast`` leaves the cli alone; the cli imports rich, matplotlib, Spark lazily."""
    code = ("import sys, hzfast\n"
            "assert 'hzfast.cli' not in sys.modules\n"
            "import hzfast.cli\n"
            "hzfast.cli.build_parser()\n"
            "heavy = ('rich', 'matplotlib', 'pyspark', 'spark_integration', 'hzfast.reference')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out == "[]\n"


def test_internal_errors_are_one_line_status_1(monkeypatch, capsys):
    from hzfast.cli import table

    def boom(args):
        raise RuntimeError("a bug\nover two lines")
    monkeypatch.setattr(table, "cmd_stamp", boom)
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["stamp"].set_defaults(func=boom)
    monkeypatch.setattr("hzfast.cli.build_parser", lambda: parser)
    with pytest.raises(SystemExit) as e:
        main(["stamp", "-p", "7"])
    assert e.value.code == 1
    assert capsys.readouterr().err == ("hzfast stamp: internal error: RuntimeError: a bug over "
                                       "two lines (run with --debug for the traceback)\n")
    with pytest.raises(RuntimeError):
        main(["stamp", "-p", "7", "--debug"])
