"""Every user error is one line naming the flag or file, exit status 2, no traceback;
``--debug`` shows the traceback."""
import json

import numpy as np
import pytest

from hzfast import persistence
from hzfast.cli._inputs import balanced_table


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("files")
    t = balanced_table(200, 4, 2)
    t.save(d / "t.npz")
    persistence.write_table(d / "t.bin", t, "hz41")
    data = (d / "t.bin").read_bytes()
    (d / "short.bin").write_bytes(data[:-5])
    (d / "empty").write_bytes(b"")
    (d / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    (d / "broken.npz").write_bytes(b"PK\x03\x04" + bytes(50))
    (d / "notable.json").write_text('{"hello": 1}')
    (d / "badjson.json").write_text('{"replicas": [[0, 0]]}')
    (d / "members.csv").write_text("zone\nz1\n")
    (d / "dupes.csv").write_text("address\n10.0.0.1:5701\n10.0.0.1:5701\n")
    (d / "sizes.npy").write_bytes(b"")
    np.save(d / "short_sizes.npy", np.ones(10))
    plan = d / "plan.json"
    import hzfast
    from hzfast.cli.plan import topology_change
    c = topology_change(t, leave=[3])
    plan.write_text(hzfast.plan_migrations(c.current, c.target).to_json())
    (d / "dir").mkdir()
    return d


CASES = [
    # (argv, what the one line must contain)
    (["generate", "-p", "0", "-o", "{d}/x.npz"], "-p/--partitions: must be in 1..2147483647"),
    (["generate", "-p", "2000000000", "-m", "10", "-o", "{d}/x.npz"],
     "-p/--partitions: a 2,000,000,000 x 7 table needs about"),
    (["generate", "-m", "0", "-o", "{d}/x.npz"], "-m/--members: must be >= 1"),
    (["generate", "-m", "1000000", "-o", "{d}/x.npz"], "-m/--members: at most 65,536"),
    (["generate", "-r", "8", "-o", "{d}/x.npz"], "-r/--replicas: must be in 1..7"),
    (["generate", "-o", "{d}/nodir/x.npz"], "-o/--output: {d}/nodir/x.npz: directory"),
    (["generate", "-o", "{d}/dir"], "-o/--output: {d}/dir: is a directory"),
    (["stamp", "--table", "{d}/missing.npz"], "--table: {d}/missing.npz: no such file"),
    (["stamp", "--table", "{d}/dir"], "--table: {d}/dir: is a directory"),
    (["stamp", "--table", "{d}/empty"], "--table: {d}/empty: empty file"),
    (["stamp", "--table", "{d}/picture.png"], "--table: {d}/picture.png: not a persisted"),
    (["stamp", "--table", "{d}/short.bin"], "--table: {d}/short.bin: not a persisted"),
    (["stamp", "--table", "{d}/broken.npz"], "--table: {d}/broken.npz:"),
    (["stamp", "--table", "{d}/notable.json"], "--table: {d}/notable.json: a JSON table is"),
    (["stamp", "--table", "{d}/badjson.json"], "--table: {d}/badjson.json:"),
    (["stamp", "--table", "{d}/plan.json"], "--table: {d}/plan.json: a JSON table is"),
    (["stamp", "--table", "{d}/t.npz", "--members-file", "{d}/members.csv"],
     "--members-file: {d}/members.csv: not a members file"),
    (["stamp", "--members-file", "{d}/dupes.csv"], "--members-file: {d}/dupes.csv:"),
    (["locate", "--key-type", "int", "x"], "--key-type int: key 'x' is not an integer"),
    (["locate", "--key-type", "int", "4294967296"], "--key-type int: key 4294967296 is outside"),
    (["locate", "-p", "100000", "--system", "ignite", "k"], "-p/--partitions:"),
    (["plan", "--table", "{d}/t.npz"], "plan: give the change"),
    (["plan", "--table", "{d}/t.npz", "--to-members", "3", "--leave", "1"],
     "--to-members: not with --leave"),
    (["plan", "--table", "{d}/t.npz", "--leave", "9"], "--leave: member index 9 is outside 0..3"),
    (["plan", "--table", "{d}/t.npz", "--leave", "10.0.0.1:1"],
     "--leave: no member has address or uuid '10.0.0.1:1'"),
    (["plan", "--table", "{d}/t.npz", "--leave", "1", "--crash", "1"],
     "--leave/--crash: member 1 cannot both leave and crash"),
    (["plan", "--table", "{d}/t.npz", "--crash", "0", "1", "2", "3"],
     "--leave/--crash: no data member would be left"),
    (["plan", "--table", "{d}/t.npz", "--join", "{d}/t.npz"], "--join: {d}/t.npz:"),
    (["plan", "--table", "{d}/t.npz", "--leave", "1", "--max-parallel", "0"],
     "--max-parallel: must be >= 1"),
    (["plan", "--table", "{d}/t.npz", "--leave", "1", "-o", "{d}/dir"],
     "-o/--output: {d}/dir: is a directory"),
    (["apply", "--table", "{d}/t.npz", "--plan", "{d}/t.npz", "-o", "{d}/x.npz"],
     "--plan: {d}/t.npz: not a plan"),
    (["apply", "--table", "{d}/t.npz", "--plan", "{d}/notable.json", "-o", "{d}/x.npz"],
     "--plan: {d}/notable.json: not a plan"),
    (["verify", "--table", "{d}/t.npz", "--plan", "{d}/missing.json"],
     "--plan: {d}/missing.json: no such file"),
    (["schedule", "--table", "{d}/t.npz", "--plan", "{d}/plan.json", "--sizes",
      "{d}/short_sizes.npy", "--bandwidth", "10"],
     "--sizes: {d}/short_sizes.npy: needs one size per partition (200)"),
    (["schedule", "--table", "{d}/t.npz", "--plan", "{d}/plan.json", "--sizes",
      "{d}/sizes.npy", "--bandwidth", "10"], "--sizes: {d}/sizes.npy:"),
    (["schedule", "--table", "{d}/t.npz", "--plan", "{d}/plan.json", "--bandwidth", "10"],
     "--bandwidth: goes with --sizes"),
    (["schedule", "--table", "{d}/t.npz", "--plan", "{d}/plan.json", "--sizes",
      "{d}/short_sizes.npy", "--bandwidth", "0"], "--bandwidth: must be > 0"),
    (["diff", "{d}/t.npz", "{d}/missing.npz"], "B: {d}/missing.npz: no such file"),
    (["export", "--table", "{d}/t.npz", "--format", "hz41", "-o", "{d}/nodir/x.bin"],
     "-o/--output: {d}/nodir/x.bin: directory"),
    (["restart-decision", "{d}/t.bin", "{d}/t.bin"], "FILE: {d}/t.bin is given twice"),
    (["restart-decision", "{d}/t.bin", "{d}/picture.png"], "FILE: {d}/picture.png:"),
    (["demo", "--no-spark", "-k", "-1"], "-k/--keys: must be >= 0"),
    (["demo", "--no-spark", "--bandwidth-mb", "0"], "--bandwidth-mb: must be > 0"),
    # argparse's own complaints are one line too
    ([], "the following arguments are required: COMMAND"),
    (["nosuch"], "invalid choice: 'nosuch'"),
    (["generate"], "the following arguments are required: -o/--output"),
    (["stamp", "-p", "x"], "argument -p/--partitions: invalid int value: 'x'"),
    (["locate", "--system", "redis", "k"], "invalid choice: 'redis'"),
    (["export", "--format", "parquet", "-o", "x"], "invalid choice: 'parquet'"),
    (["restart-decision", "--policy", "newest", "f"], "invalid choice: 'newest'"),
]


@pytest.mark.parametrize("argv, expect", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_invocation_is_one_line_exit_2(argv, expect, files, run_error):
    d = str(files)
    err = run_error(*[a.format(d=d) for a in argv])
    assert expect.format(d=d) in err
    assert err.startswith("hzfast")
    assert not (files / "x.npz").exists() and not (files / "x.bin").exists()


def test_debug_shows_the_traceback(files, hz):
    out = hz("--debug", "stamp", "--table", files / "picture.png")
    assert out.returncode == 1 and "Traceback" in out.stderr
    out = hz("stamp", "--table", files / "missing.npz", "--debug")   # after the command too
    assert out.returncode == 1 and "Traceback" in out.stderr and "UserError" in out.stderr


def test_unwritable_output(files, run_error, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        import os
        if os.access(ro, os.W_OK):      # running as root: permissions are not enforced
            pytest.skip("permissions are not enforced for this user")
        err = run_error("export", "--table", files / "t.npz", "--format", "json", "-o",
                        ro / "t.json")
        assert f"-o/--output: {ro}/t.json: not writable" in err
    finally:
        ro.chmod(0o700)


def test_json_output_stays_clean_on_error(files, hz):
    out = hz("verify", "--table", files / "t.npz", "--plan", files / "t.npz", "--json")
    assert out.returncode == 2 and out.stdout == ""
    assert json.loads(hz("stamp", "--table", files / "t.bin", "--json").stdout)["partitions"] \
        == 200
