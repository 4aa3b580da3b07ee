"""Digests of the simulator's full traces: proof that a refactoring changed no behaviour.

Runs fixed sets of simulations with ``trace=True`` and hashes, per run, every trace line
(each event a member handled and each output it returned, in order) and the run's result
(entries, losses, faults, marks, violations, events, time). A set's digest is the hash of
its runs' digests in seed order, so two builds agree on a set exactly when every run in it
went event for event the same way.

The sets: ``default`` (seeds 0-1,999 of :func:`hzfast.sim.run`'s default shape), ``small``
(2,000 seeds of a 3-member, 16-partition shape), ``legacy`` (200 seeds of the default shape
in the legacy design), ``5444`` (both designs of :func:`hzfast.sim.scenario_5444`) and
``scenarios`` (every case of every scenario file in tests/sim/scenarios: its transcript and
its run's counters).

Usage::

    python tools/trace_digest.py --write tests/data/trace_digests.json   # before a change
    python tools/trace_digest.py --check tests/data/trace_digests.json   # after it
    python tools/trace_digest.py --check ... --sets small,5444 --jobs 2

``--check`` exits 1 naming each set (and the first block of 100 seeds) that differs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BLOCK = 100                       # seeds per block digest (to find where two builds part)

SMALL_SHAPE: dict[str, Any] = dict(members=3, partitions=16, backup_count=1, entries=300)
SETS: dict[str, tuple[str, int]] = {   # name -> (kind, runs)
    "default": ("seeds", 2_000),
    "small": ("seeds", 2_000),
    "legacy": ("seeds", 200),
    "5444": ("5444", 2),
    "scenarios": ("scenarios", 0),
}


def _result_text(r: Any) -> str:
    fields = ("seed", "design", "members", "partitions", "backup_count", "entries",
              "entries_attempted", "entries_acknowledged", "entries_lost",
              "entries_lost_expected", "entries_unexpected", "converged", "events", "time",
              "migrations_committed", "migrations_failed")
    parts = [f"{f}={getattr(r, f)!r}" for f in fields]
    parts.append("faults=" + repr(sorted(r.faults_injected.items())))
    parts.append("marks=" + repr(sorted((str(k), v) for k, v in r.marks.items())))
    parts.append("violations=" + repr([str(v) for v in r.violations]))
    return "\n".join(parts)


def _digest_run(r: Any) -> str:
    h = hashlib.sha256()
    for line in r.trace:
        h.update(str(line).encode())
        h.update(b"\n")
    h.update(b"\0")
    h.update(_result_text(r).encode())
    return h.hexdigest()


def _seed_run(args: tuple[str, int]) -> str:
    from hzfast import sim
    name, seed = args
    shape: dict[str, Any] = {}
    if name == "small":
        shape = dict(SMALL_SHAPE)
    elif name == "legacy":
        shape = dict(design="legacy")
    return _digest_run(sim.run(seed, trace=True, **shape))


def _5444_run(design: str) -> str:
    from hzfast import sim
    return _digest_run(sim.scenario_5444(design=design, trace=True))


def _scenario_digests() -> list[str]:
    from hzfast.sim import scenario
    out = []
    for path in sorted((ROOT / "tests" / "sim" / "scenarios").glob("*.txt")):
        for case in scenario.load(path):
            o = scenario.run_case(case)
            h = hashlib.sha256()
            h.update(f"{path.name}:{case.name}\n".encode())
            h.update("\n".join(o.actual).encode())
            h.update(b"\0")
            h.update(_result_text(o.result).encode())
            out.append(h.hexdigest())
    return out


def _combine(digests: Iterable[str]) -> str:
    h = hashlib.sha256()
    for d in digests:
        h.update(d.encode())
    return h.hexdigest()


def compute(name: str, jobs: int, progress: Callable[[str], None] = lambda s: None
            ) -> dict[str, Any]:
    """The digest of one set: ``{"runs", "digest", "blocks"}``."""
    kind, n = SETS[name]
    if kind == "seeds":
        with ProcessPoolExecutor(jobs) as pool:
            runs = list(pool.map(_seed_run, [(name, s) for s in range(n)], chunksize=10))
    elif kind == "5444":
        runs = [_5444_run("safe"), _5444_run("legacy")]
    else:
        runs = _scenario_digests()
    blocks = [_combine(runs[i:i + BLOCK]) for i in range(0, len(runs), BLOCK)]
    progress(f"{name}: {len(runs)} runs")
    return {"runs": len(runs), "digest": _combine(runs), "blocks": blocks}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="FILE", help="store the digests in FILE")
    g.add_argument("--check", metavar="FILE", help="compare with the digests in FILE")
    ap.add_argument("--sets", default=",".join(SETS),
                    help="comma-separated sets (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default: 2)")
    a = ap.parse_args(argv)
    names = [s.strip() for s in a.sets.split(",") if s.strip()]
    for s in names:
        if s not in SETS:
            ap.error(f"--sets: unknown set {s!r} (known: {', '.join(SETS)})")
    got = {s: compute(s, a.jobs, lambda t: print(t, file=sys.stderr)) for s in names}
    if a.write:
        Path(a.write).write_text(json.dumps(got, indent=1) + "\n")
        return 0
    want = json.loads(Path(a.check).read_text())
    bad = 0
    for s, d in got.items():
        w = want.get(s)
        if w is None:
            print(f"{s}: not in {a.check}")
            bad += 1
        elif w["digest"] != d["digest"]:
            first = next((i for i, (x, y) in enumerate(zip(w["blocks"], d["blocks"]))
                          if x != y), None)
            where = (f"first differing block: runs {first * BLOCK}..{first * BLOCK + BLOCK - 1}"
                     if first is not None else f"{w['runs']} runs stored, {d['runs']} now")
            print(f"{s}: DIFFERS ({where})")
            bad += 1
        else:
            print(f"{s}: identical ({d['runs']} runs)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
