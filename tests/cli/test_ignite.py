"""hzfast.cli.ignite: ``hzfast ignite assign`` / ``hzfast ignite rebalance``, run as the real
command line (a subprocess) and checked against the library."""
import json
import subprocess
import sys

import numpy as np
import pytest

import hzfast
from hzfast.ignite import FULL, HISTORICAL, NONE, PartitionState


def hz(*argv):
    """Run ``hzfast *argv`` in a new interpreter: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "hzfast.cli", *argv], capture_output=True,
                          text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def hz_json(*argv):
    code, out, err = hz(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_assign_json_is_the_library_assignment():
    got = hz_json("ignite", "assign", "-n", "5", "-p", "1000", "-b", "2")
    ids = [f"node-{i}" for i in range(5)]
    table = hzfast.ignite.assign(ids, partitions=1000, backups=2)
    assert got["nodes"] == ids and got["partitions"] == 1000 and got["backups"] == 2
    assert got["assignment"] == table.tolist()
    assert got["primaries"] == np.bincount(table[:, 0], minlength=5).tolist()
    assert got["copies"] == np.bincount(table.reshape(-1), minlength=5).tolist()
    assert sum(got["primaries"]) == 1000 and sum(got["copies"]) == 3000


def test_assign_consistent_ids_and_replicated(run_json):
    got = run_json("ignite", "assign", "--consistent-ids", "a", "b", "c", "-p", "16",
                   "--replicated", "--json")
    table = hzfast.ignite.assign(["a", "b", "c"], partitions=16,
                                 backups=hzfast.ignite.REPLICATED)
    assert got["backups"] == "REPLICATED" and got["assignment"] == table.tolist()
    assert got["copies"] == [16, 16, 16]


def test_assign_text(run_text):
    out = run_text("ignite", "assign", "-n", "3", "-p", "64", "--show", "7", "63")
    assert "Ignite rendezvous" in out and "node-2" in out
    row = hzfast.ignite.assign(["node-0", "node-1", "node-2"], partitions=64, backups=1)[63]
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines()
             if line.count("│") == 3]
    assert ["63", " ".join(map(str, row))] in cells and ["7", cells[-2][1]] == cells[-2]


def _vector_input(ignite_vectors, P=10):
    inp = ignite_vectors["rebalance_decision_example"]["input"]
    names = sorted(inp["nodes"])
    nodes = [inp["nodes"][n] for n in names]
    return names, {
        "states": [[n["state"]] * P for n in nodes],
        "counters": [[n.get("lwm", n.get("initial_cntr", 0))] * P for n in nodes],
        "history": [[n.get("wal_history_from_cntr", -1)] * P for n in nodes],
        "sizes": [[n.get("size", 0)] * P for n in nodes],
    }


def test_rebalance_json_reproduces_the_vector(tmp_path, ignite_vectors):
    names, data = _vector_input(ignite_vectors)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(data))
    got = hz_json("ignite", "rebalance", "--input", str(path))
    p = ignite_vectors["rebalance_decision_example"]["input"]["partition"]
    assert got["nodes"] == 4 and got["partitions"] == 10
    assert got["max_counter"] == [120] * 10
    moves = {(m["node"], m["partition"]): m for m in got["rebalance"]}
    c, d, a = names.index("C"), names.index("D"), names.index("A")
    assert moves[(c, p)] == {"node": c, "partition": p, "kind": "HISTORICAL", "supplier": a,
                             "from_counter": 100}
    assert moves[(d, p)]["kind"] == "FULL" and moves[(d, p)]["from_counter"] == -1
    assert got["counts"] == {"NONE": 20, "HISTORICAL": 10, "FULL": 10}
    states = np.array([[int(PartitionState[s]) for s in row] for row in data["states"]])
    plan = hzfast.ignite.rebalance_plan(states, data["counters"], history=data["history"],
                                        sizes=data["sizes"])
    flat = sorted((m["node"], m["partition"], m["kind"], m["supplier"], m["from_counter"])
                  for m in got["rebalance"])
    want = sorted((n, q, {HISTORICAL: "HISTORICAL", FULL: "FULL"}[plan.rebalance[n, q]],
                   int(plan.supplier[n, q]), int(plan.from_counter[n, q]))
                  for n, q in zip(*np.nonzero(plan.rebalance != NONE)))
    assert flat == want
    # a server leave: nothing reset, only D rebalances
    left = hz_json("ignite", "rebalance", "--input", str(path), "--no-reset")
    assert {m["node"] for m in left["rebalance"]} == {d}


def test_rebalance_npz_and_text(tmp_path, run_text, run_json):
    rng = np.random.default_rng(4)
    states = rng.choice(np.array([0, 1, 1, 1, 3], np.int8), (6, 300))
    counters = rng.integers(0, 50, (6, 300))
    history = np.where(rng.random((6, 300)) < 0.5, rng.integers(0, 50, (6, 300)), -1)
    path = tmp_path / "state.npz"
    np.savez(path, states=states, counters=counters, history=history)
    got = run_json("ignite", "rebalance", "--input", str(path), "--threshold", "0",
                   "--prefer-history", "--json")
    plan = hzfast.ignite.rebalance_plan(states, counters, history=history, threshold=0,
                                        prefer_history=True)
    assert got["counts"] == plan.counts() and got["max_counter"] == plan.max_counter.tolist()
    assert len(got["rebalance"]) == int((plan.rebalance != NONE).sum())
    out = run_text("ignite", "rebalance", "--input", str(path), "--limit", "3")
    assert "Ignite rebalance decision" in out and "rebalancing copies (first 3 of" in out


@pytest.mark.parametrize("argv, flag", [
    (["ignite", "assign", "-p", "0"], "--partitions"),
    (["ignite", "assign", "-p", "70000"], "--partitions"),
    (["ignite", "assign", "-p", "x"], "-p/--partitions"),
    (["ignite", "assign", "-n", "0"], "--nodes"),
    (["ignite", "assign", "-b", "-1"], "--backups"),
    (["ignite", "assign", "--consistent-ids", "a", "a"], "--consistent-ids"),
    (["ignite", "assign", "-n", "3", "--consistent-ids", "a", "b"], "--nodes"),
    (["ignite", "assign", "-p", "8", "--show", "8"], "--show"),
    (["ignite", "rebalance"], "--input"),
    (["ignite", "rebalance", "--input", "/nonexistent/x.json"], "--input"),
    (["ignite", "rebalance", "--input", "{bad_code}"], "--input: states[1, 0] = 9"),
    (["ignite", "rebalance", "--input", "{bad_name}"], "--input: unknown state name"),
    (["ignite", "rebalance", "--input", "{bad_shape}"], "--input: counters must have"),
    (["ignite", "rebalance", "--input", "{missing}"], "--input"),
    (["ignite", "rebalance", "--input", "{ok}", "--threshold", "1.5"], "--threshold"),
    (["ignite", "rebalance", "--input", "{ok}", "--limit", "-1"], "--limit"),
])
def test_errors_are_one_line_naming_the_flag(tmp_path, argv, flag):
    files = {
        "bad_code": {"states": [[1, 1], [9, 1]], "counters": [[1, 1], [1, 1]]},
        "bad_name": {"states": [["OWNING", "HAPPY"]], "counters": [[1, 1]]},
        "bad_shape": {"states": [[1, 1]], "counters": [[1, 1, 1]]},
        "missing": {"states": [[1]]},
        "ok": {"states": [[1]], "counters": [[1]]},
    }
    args = []
    for a in argv:
        if a.startswith("{"):
            path = tmp_path / f"{a[1:-1]}.json"
            path.write_text(json.dumps(files[a[1:-1]]))
            a = str(path)
        args.append(a)
    code, out, err = hz(*args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hzfast ignite") and flag in lines[0], lines[0]
