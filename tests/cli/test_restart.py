"""hzfast restart-decision and restore over persisted tables, checked against the library."""
import json

import numpy as np

import hzfast
from hzfast import persistence
from hzfast.cli._inputs import balanced_table


def test_restart_decision_both_policies(tmp_path, run_json, run_text):
    a = balanced_table(500, 4, 3)
    b = a.replace(versions=a.versions + 2)                    # newer, on one member
    files = []
    for i, (t, fmt) in enumerate([(a, "hz41"), (a, "hz41"), (b, "hz41"), (a, "npz")]):
        path = tmp_path / f"member-{i}.bin"
        persistence.write_table(path, t, fmt)
        files.append(str(path))
    d = run_json("restart-decision", "--policy", "most-recent", *files, "--json")
    lib = persistence.restart_decision([a, a, b, a], "most-recent")
    assert d["policy"] == "most-recent"
    assert d["restart"] == [files[i] for i in lib.restart] == [files[2]]
    assert d["excluded"] == [files[0], files[1], files[3]]
    assert [g["version_sum"] for g in d["groups"]] == [0, 1000]
    assert [g["stamp"] for g in d["groups"]] == [a.stamp, b.stamp]
    d = run_json("restart-decision", "--policy", "most-complete", *files, "--json")
    assert d["restart"] == [files[0], files[1], files[3]] and d["excluded"] == [files[2]]
    out = run_text("restart-decision", *files)
    assert "restart: " + files[2] in out and "excluded" in out


def test_restart_decision_reads_legacy_tables(tmp_path, run_json):
    a = balanced_table(300, 3, 2)
    old, new = tmp_path / "old.bin", tmp_path / "new.bin"
    old.write_bytes(persistence.to_bytes(a, "hzlegacy", table_version=5))
    new.write_bytes(persistence.to_bytes(a, "hzlegacy", table_version=9))
    d = run_json("restart-decision", old, new, "--json")
    assert d["restart"] == [str(new)] and d["groups"][1]["version_sum"] == 9 * 300


def test_restore_bumps_only_the_partitions_of_moved_members(tmp_path, run_json):
    t = balanced_table(400, 4, 2)
    path = tmp_path / "t.bin"
    persistence.write_table(path, t, "hz41")
    members = tmp_path / "now.json"
    now = [{"uuid": u, "address": a} for u, a in zip(t.members.uuids, t.members.addresses)]
    now[1]["address"] = "10.0.0.42:5701"
    members.write_text(json.dumps(now))
    out = tmp_path / "restored.bin"
    r = run_json("restore", "--table", path, "--members-file", members, "-o", out, "--json")
    back, fmt = persistence.read_table(out)
    held = (t.replicas == 1).sum(axis=1)
    assert fmt == "hz41" and np.array_equal(back.versions, t.versions + held)
    assert r["members_moved"] == 1 and r["partitions_bumped"] == int((held > 0).sum())
    assert r["slots_rewritten"] == int(held.sum()) and r["stamp_after"] == back.stamp
    assert back.members.addresses[1] == "10.0.0.42:5701"
    legacy = tmp_path / "legacy.npz"
    run_json("restore", "--table", path, "--members-file", members, "--legacy", "-o", legacy,
             "--json")
    assert (hzfast.PartitionTable.load(legacy).versions == held.sum()).all()
