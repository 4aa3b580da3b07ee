"""hzfast.cli (the parser and ``main``): commands, flags, defaults, help, exit statuses."""
import importlib.metadata
import subprocess
import sys

import pytest

import hzfast
from hzfast.cli import build_parser, main

COMMANDS = ("demo", "generate", "stamp", "locate", "plan")
TABLE_DEFAULTS = {"table": None, "partitions": 20_000, "members": 10, "replicas": None}
# Per command: the minimal argv that parses, the options in --help order, every default.
CONTRACT = {
    "demo": ([], ["--json", "-p", "--partitions", "-m", "--members", "-r", "--replicas",
                  "--to-members", "-k", "--keys", "--value-bytes", "--bandwidth-mb", "--no-spark"],
             {"json": False, "partitions": 20_000, "members": 10, "replicas": 2,
              "to_members": 11, "keys": 1_000_000, "value_bytes": 1024, "bandwidth_mb": 100.0,
              "no_spark": False}),
    "generate": (["-o", "x.npz"], ["--json", "-p", "--partitions", "-m", "--members", "-r",
                                   "--replicas", "-o", "--output"],
                 {"json": False, "partitions": 20_000, "members": 10, "replicas": None,
                  "output": "x.npz"}),
    "stamp": ([], ["--json", "--table", "-p", "--partitions", "-m", "--members", "-r",
                   "--replicas"],
              {"json": False, **TABLE_DEFAULTS}),
    "locate": (["k"], ["--json", "--table", "-p", "--partitions", "-m", "--members", "-r",
                       "--replicas", "--key-type", "--system"],
               {"json": False, **TABLE_DEFAULTS, "keys": ["k"], "key_type": "string",
                "system": "hazelcast"}),
    "plan": (["--to-members", "9"], ["--json", "--table", "-p", "--partitions", "-m",
                                     "--members", "-r", "--replicas", "--to-members",
                                     "--max-parallel", "--plot", "-o", "--output"],
             {"json": False, **TABLE_DEFAULTS, "to_members": 9, "max_parallel": 10,
              "plot": None, "output": None}),
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


def test_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "hzfast", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for cmd in ("demo", "generate", "stamp", "locate", "plan"):
        assert cmd in out


def test_help_lists_commands_in_order_with_their_summary(help_of):
    out = help_of()
    assert out.startswith("usage: hzfast [-h] [--version] COMMAND ...")
    assert "Fast, bit-exact Hazelcast/Ignite partition tables" in out
    listed = [line.split(None, 1) for line in out.splitlines() if line.startswith("    ")]
    assert listed == [
        ["demo", "the main job: generated table, keys placed on local Spark, what-if movement "
                 "for a topology change"],
        ["generate", "write a balanced table to an .npz file"],
        ["stamp", "the Hazelcast stamp of a table's versions"],
        ["locate", "partition and owner of keys"],
        ["plan", "arrangement + migration plan for a topology change"],
        ["ignite", "Apache Ignite: rendezvous assignment and rebalance decisions"]]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_command_flags_and_defaults(cmd, help_of):
    argv, options, defaults = CONTRACT[cmd]
    args = build_parser().parse_args([cmd, *argv])
    assert args.command == cmd and args.func.__name__ == f"cmd_{cmd}"
    assert {k: v for k, v in vars(args).items() if k not in ("command", "func")} == defaults
    out = help_of(cmd)
    assert out.startswith(f"usage: hzfast {cmd} [-h]")
    listed = []
    for line in out[out.index("options:"):].splitlines()[1:]:
        if line.startswith("  -"):
            listed += [o.split()[0] for o in line.strip().split("  ")[0].split(", ")]
    assert listed == ["-h", "--help", *options]


def test_help_texts_name_defaults_and_choices(help_of):
    for cmd in ("stamp", "locate", "plan"):
        flat = " ".join(help_of(cmd).split())
        assert "partitions of the generated table (default 20000)" in flat
        assert "members of the generated table (default 10)" in flat
        assert "replicas per partition (default min(members, 7))" in flat
        assert "a table saved by `hzfast generate` (.npz); otherwise a balanced table is " \
               "generated" in flat
    locate = " ".join(help_of("locate").split())
    assert "--key-type {string,int,long}" in locate and "--system {hazelcast,ignite}" in locate
    plan = " ".join(help_of("plan").split())
    assert "--to-members TO_MEMBERS" in plan.split("options:")[0]  # required: not in [...]
    assert "write a per-member in/out bar chart (PNG)" in plan
    demo = " ".join(help_of("demo").split())
    assert "per-member link bandwidth in MB/s for the time estimate" in demo


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"hzfast {hzfast.__version__}\n"


def test_bad_arguments_exit_cleanly(capsys):
    with pytest.raises(SystemExit) as e:
        main(["stamp", "-p", "0", "--json"])
    assert e.value.code == 2
    assert "partition" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    ([], "the following arguments are required: COMMAND"),
    (["nosuch"], "invalid choice: 'nosuch'"),
    (["generate"], "the following arguments are required: -o/--output"),
    (["plan"], "the following arguments are required: --to-members"),
    (["locate"], "the following arguments are required: keys"),
    (["locate", "--system", "redis", "k"], "invalid choice: 'redis'"),
    (["stamp", "-p", "x"], "invalid int value: 'x'"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: hzfast") and message in err


@pytest.mark.parametrize("argv, message", [
    (["stamp", "-p", "0"], "hzfast stamp: error: "),
    (["locate", "-p", "0", "a"], "hzfast locate: error: "),
    (["generate", "-p", "10", "-m", "0", "-o", "never-written.npz"], "hzfast generate: error: "),
    (["plan", "-p", "100", "--to-members", "0"], "hzfast plan: error: members has no data"),
])
def test_library_errors_exit_2_naming_the_command(argv, message, capsys, tmp_path,
                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.endswith("\n") and "Traceback" not in err
    assert not (tmp_path / "never-written.npz").exists()


def test_console_script_and_module_entry_points():
    (ep,) = [e for e in importlib.metadata.entry_points(group="console_scripts")
             if e.name == "hzfast"]
    assert ep.value == "hzfast.cli:main" and ep.load() is main
    for module in ("hzfast", "hzfast.cli"):
        out = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True,
                             text=True, check=True).stdout
        assert out == f"hzfast {hzfast.__version__}\n"


def test_imports_stay_light():
    """``import hzfast`` leaves the cli alone; the cli imports rich, matplotlib, Spark lazily."""
    code = ("import sys, hzfast\n"
            "assert 'hzfast.cli' not in sys.modules\n"
            "import hzfast.cli\n"
            "heavy = ('rich', 'matplotlib', 'pyspark', 'spark_integration', 'hzfast.reference')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out == "[]\n"
