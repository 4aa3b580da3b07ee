"""The fast layer set a protocol mutant must not survive (tests/mutants, tools/mutation.py).

Run as a script in a subprocess whose ``PYTHONPATH`` points at a copy of the package with
the protocol modules in pure Python (their compiled ``.so`` removed, so that an edit of
their ``.py`` is what runs)::

    PYTHONPATH=/tmp/copy python tests/mutants/layers.py [--layers a,b] [--json]

Layers, in this order; the run stops at the first one that catches the mutant:

``scenarios``   every case of tests/sim/scenarios/ whose stored transcript is clean (no
                violation, no unexpected loss, converged, version arithmetic right) must
                stay clean; the cases that record the legacy design's losses must still
                lose (a transcript that merely changed is not a catch);
``small-scope`` tests/sim/test_small_scope.py's four scopes, a cut: every (mark
                occurrence, crashed member) with no message dropped, and every single
                commit-phase type losing its first message with no crash;
``swarm``       ``SWARM_SEEDS`` seeds of hzfast.sim.run, the small shapes in turn (and, as
                in the small scope, every partition's owner takes writes at the end);
``unit``        the protocol unit tests of ``UNIT_TESTS`` (pytest in a subprocess, their
                slow property tests left out).

"Caught" means a violation, an unexpected loss (``entries_lost !=
entries_lost_expected``), entries read that were never written, no convergence, a unit
test failing, a settled cluster with a partition whose owner takes no writes, or an
exception. Exit status 0 (with ``--fail-on-catch``: 1 when caught);
the last line of output is JSON: ``{"caught": LAYER or null, "detail": "...", "times":
{LAYER: seconds}}``.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
LAYERS = ("scenarios", "small-scope", "swarm", "unit")
#: unit tests that pin protocol rules the simulator may not reach quickly
UNIT_TESTS = ("tests/protocol/test_node.py", "tests/protocol/test_completed.py",
              # the source-keeps-its-last-copy rule's guards (§7.3(i)): replayed seeds
              "tests/protocol/test_simulator.py::"
              "test_a_source_promoted_back_to_a_data_index_keeps_its_copy",
              "tests/protocol/test_simulator.py::"
              "test_a_source_keeps_its_copy_while_no_live_member_holds_the_partition",
              # Hazelcast #5444 replayed: the safe design keeps everything, the legacy one
              # loses about half (the only layer that runs the legacy design)
              "tests/protocol/test_simulator.py::test_5444_safe_loses_nothing",
              # the long run's seed 59099: a stale copy that may be the last is kept
              "tests/protocol/test_simulator.py::test_seed_59099_loses_nothing_to_a_clear",
              # the long run's seed 43665: a backup takes writes only from its table's owner
              "tests/sim/test_sim_members.py::"
              "test_seed_43665_a_committed_move_whose_master_and_destination_are_gone",
              "tests/protocol/test_simulator.py::"
              "test_5444_legacy_loses_about_half_and_the_checker_says_so")
#: (their slow property tests left out: minutes in pure Python)
UNIT_SKIP = "not garbage_messages and not empty_list_skips"
SWARM_SEEDS = 200
SWARM_SHAPES = (dict(members=4, partitions=13, backup_count=1, entries=300),
                dict(members=4, partitions=7, backup_count=2, entries=200, joins=1),
                dict(members=3, partitions=13, backup_count=0, entries=300, joins=1))


def pure_copy(dest: Path, src: Path = TESTS.parent / "hzfast") -> Path:
    """Copy ``src`` (hzfast/) to ``dest``/hzfast without the compiled form of any module
    that has a ``.py`` (the protocol node's modules, the simulator), so that Python imports
    their source; the kernels (``.pyx``) stay compiled. Returns ``dest``."""
    if (dest / "hzfast").exists():
        shutil.rmtree(dest / "hzfast")
    shutil.copytree(src, dest / "hzfast", ignore=lambda d, fs: [
        f for f in fs if f == "__pycache__" or f.endswith((".c", ".html")) or (
            f.endswith(".so") and (Path(d) / (f.split(".")[0] + ".py")).exists())])
    left = sorted(p.name for p in (dest / "hzfast" / "protocol").glob("*.so"))
    assert all(n.startswith("_") for n in left), f"a compiled protocol module stayed: {left}"
    left = sorted(p.name for p in (dest / "hzfast" / "sim").glob("*.so"))
    assert all(n.startswith("_") for n in left), f"a compiled simulator module stayed: {left}"
    return dest


def _bad(r: Any) -> str:
    if r.violations:
        return str(r.violations[0])
    if r.entries_lost != r.entries_lost_expected:
        return f"lost {r.entries_lost}, expected {r.entries_lost_expected}"
    if r.entries_unexpected:
        return f"{r.entries_unexpected} entries read that were never written"
    if not r.converged:
        return "did not converge"
    return ""


def unit() -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header",
         "-o", "addopts=--import-mode=importlib", "-m", "not slow and not build", "-k", UNIT_SKIP,
         *(str(TESTS.parent / t) for t in UNIT_TESTS)],
        # (not the repository as the working directory: ``-m`` puts it first on sys.path,
        # and its hzfast, compiled, would shadow the copy on PYTHONPATH)
        cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        failed = [ln for ln in proc.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
        return failed[0] if failed else (proc.stdout + proc.stderr)[-300:]
    return ""


def _clean(lines: list[str]) -> bool:
    data = next((ln for ln in lines if ln.startswith("DATA ")), "")
    f = dict(w.split("=", 1) for w in data.split()[1:] if "=" in w)
    return ("VIOLATIONS none" in lines and "ARITHMETIC ok" in lines
            and f.get("lost") == f.get("expected") and f.get("unexpected") == "0"
            and f.get("converged") == "True")


def scenarios() -> str:
    from hzfast.sim.scenario import load, run_case
    for path in sorted((TESTS / "sim" / "scenarios").glob("*.txt")):
        for case in load(path):
            o = run_case(case)
            if _clean(case.expected) and not _clean(o.actual):
                bad = _bad(o.result) or "version arithmetic wrong"
                return f"{path.stem}::{case.name}: {bad}"
            if not _clean(case.expected) and _clean(o.actual):
                return f"{path.stem}::{case.name}: the recorded failure no longer happens"
    return ""


def small_scope() -> str:
    sys.path.insert(0, str(TESTS / "sim"))
    import test_small_scope as ss
    for scope in ss.SCOPES:
        _, _, bad = ss.crash_every_mark(scope, None)
        if bad:
            return bad[0]
    for scope in ss.SCOPES:
        for t in ss.COMMIT_PHASE:
            _, bad = ss._run(ss._case(scope, None, [(t, 1)]), f"{scope.name}: drop first {t}")
            if bad:
                return bad[0]
    return ""


def swarm() -> str:
    from hzfast.sim import Simulation
    sys.path.insert(0, str(TESTS / "sim"))
    for seed in range(SWARM_SEEDS):
        shape = SWARM_SHAPES[seed % len(SWARM_SHAPES)]
        sim = Simulation(seed, faults="swarm", **shape)    # (hzfast.sim.run's simulation)
        r = sim.run()
        bad = _bad(r)
        if bad:
            return f"hzfast.sim.run({seed}, **{shape}): {bad}"
    return ""


RUN = {"unit": unit, "scenarios": scenarios, "small-scope": small_scope, "swarm": swarm}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", default=",".join(LAYERS),
                    help=f"comma-separated, run in this order (default: {','.join(LAYERS)})")
    ap.add_argument("--times", action="store_true", help="print each layer's time")
    ap.add_argument("--fail-on-catch", action="store_true",
                    help="exit 1 when a layer catches the code (a mutation tool's test "
                         "command: a failing command kills the mutant)")
    a = ap.parse_args(argv)
    layers = a.layers.split(",")
    for name in layers:
        if name not in RUN:
            print(f"--layers: unknown layer {name!r} (one of {LAYERS})", file=sys.stderr)
            return 2
    out: dict[str, Any] = {"caught": None, "detail": "", "times": {}}
    for name in layers:
        t = time.perf_counter()
        try:
            detail = RUN[name]()
        except Exception as e:        # an exception is a catch (the mutant broke something)
            detail = f"exception {type(e).__name__}: {e}"
            traceback.print_exc()
        out["times"][name] = round(time.perf_counter() - t, 2)
        if a.times:
            print(f"{name}: {out['times'][name]} s", file=sys.stderr)
        if detail:
            out["caught"], out["detail"] = name, detail[:500]
            break
    print(json.dumps(out))
    return 1 if a.fail_on_catch and out["caught"] else 0


if __name__ == "__main__":
    sys.exit(main())
