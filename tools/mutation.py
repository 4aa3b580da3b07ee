"""Mutation testing of hzfast/protocol/ with cosmic-ray, against the fast layer set.

On demand (not in CI; docs/mutation.md). Needs the ``mutation`` extra
(``pip install cosmic-ray`` or ``pip install .[mutation]``)::

    nice -n 5 python tools/mutation.py --modules member,master --sample 40 --jobs 2

Each shard copies hzfast/ into ``OUT``/work-K without the compiled protocol modules and
simulator (their ``.so`` would shadow the mutated ``.py``), makes a cosmic-ray session of
the chosen modules there, keeps a seeded random sample of its mutants (the rest are
marked skipped, as cosmic-ray's own filters do), and runs ``cosmic-ray exec`` with
tests/mutants/layers.py as the test command (a mutant is killed when a layer catches it;
a timeout kills it too and is counted apart). The summary goes to ``OUT``/summary.json,
the surviving mutants' diffs to ``OUT``/survivors.txt; ``cr-report OUT/work-K/session.sqlite``
shows a shard in full. ``OUT`` (default ``.mutation/``) is git-ignored.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ROOT / "tests" / "mutants" / "layers.py"
sys.path.insert(0, str(LAYERS.parent))
from layers import pure_copy  # noqa: E402  (the copy the layers run on)
#: the protocol modules that hold the protocol's logic (the rest are data types, enums and
#: the compiled kernels' stubs)
MODULES = ("node", "core", "member", "master", "completed", "designs", "common", "run",
           "tables")


def _config(path: Path, module: str, layers: str, timeout: float) -> None:
    cmd = f"{sys.executable} {LAYERS} --layers {layers} --fail-on-catch"
    path.write_text(
        "[cosmic-ray]\n"
        f'module-path = "hzfast/protocol/{module}.py"\n'
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{cmd}"\n\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n')


def _init(modules: list[str], layers: str, timeout: float, out: Path) -> list[Path]:
    """One cosmic-ray session per module, made once in ``out``/init (the shards copy it)."""
    init = out / "init"
    init.mkdir(parents=True, exist_ok=True)
    dbs = []
    for module in modules:
        cfg, db = init / f"{module}.toml", init / f"{module}.sqlite"
        _config(cfg, module, layers, timeout)
        db.unlink(missing_ok=True)
        subprocess.run(["cosmic-ray", "init", str(cfg), str(db)], cwd=ROOT, check=True,
                       capture_output=True)
        dbs.append(db)
    return dbs


def _shard(k: int, jobs: int, dbs: list[Path], chosen: set[tuple[str, str]],
           out: Path) -> subprocess.Popen[bytes]:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult
    work = out / f"work-{k}"
    pure_copy(work)
    env = dict(os.environ, PYTHONPATH=str(work))
    mine = {it for i, it in enumerate(sorted(chosen)) if i % jobs == k}
    script = []
    for src in dbs:
        cfg, db = work / f"{src.stem}.toml", work / src.name
        shutil.copy(src.with_suffix(".toml"), cfg)
        shutil.copy(src, db)
        with use_db(str(db), WorkDB.Mode.open) as wdb:
            skip = [w.job_id for w in wdb.pending_work_items if (src.stem, w.job_id) not in mine]
            wdb.set_multiple_results(skip, WorkResult(output="not in the sample",
                                                      worker_outcome=WorkerOutcome.SKIPPED))
        script.append(f"cosmic-ray exec {cfg} {db}")
    log = open(out / f"shard-{k}.log", "wb")
    return subprocess.Popen(["bash", "-c", " && ".join(script)], cwd=work, env=env,
                            stdout=log, stderr=subprocess.STDOUT)


def _sample(dbs: list[Path], sample: int, seed: int) -> set[tuple[str, str]]:
    """A seeded random sample of every module's mutants (all of them for 0)."""
    from cosmic_ray.work_db import WorkDB, use_db
    items = []
    for db in dbs:
        with use_db(str(db), WorkDB.Mode.open) as wdb:
            items += sorted((db.stem, w.job_id) for w in wdb.pending_work_items)
    rng = random.Random(seed)
    return set(rng.sample(items, min(sample, len(items))) if sample else items)


def _summary(out: Path, jobs: int, modules: list[str]) -> dict[str, object]:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome
    total = {"generated": 0, "sampled": 0, "killed": 0, "timeout": 0, "survived": 0,
             "incompetent": 0, "error": 0}
    per: dict[str, dict[str, int]] = {}
    survivors: list[str] = []
    for k in range(jobs):
        for module in modules:
            db = out / f"work-{k}" / f"{module}.sqlite"
            m = per.setdefault(module, dict.fromkeys(total, 0))
            with use_db(str(db), WorkDB.Mode.open) as wdb:
                results = dict(wdb.results)
                n = wdb.num_work_items
                if k == 0:            # (every shard holds every mutant, most skipped)
                    m["generated"] += n
                    total["generated"] += n
                for item in wdb.work_items:
                    r = results.get(item.job_id)
                    if r is None or r.worker_outcome == WorkerOutcome.SKIPPED:
                        continue
                    key = ("error" if r.worker_outcome != WorkerOutcome.NORMAL
                           else "timeout" if r.output == "timeout"
                           else "survived" if r.test_outcome == TestOutcome.SURVIVED
                           else "incompetent" if r.test_outcome == TestOutcome.INCOMPETENT
                           else "killed")
                    for d in (m, total):
                        d["sampled"] += 1
                        d[key] += 1
                    if key == "survived":
                        mu = item.mutations[0]
                        survivors.append(f"## {module} {mu.operator_name} line "
                                         f"{mu.start_pos[0]}\n{r.diff}")
    (out / "survivors.txt").write_text("\n".join(survivors))
    done = total["killed"] + total["timeout"]
    total["kill_rate"] = round(done / total["sampled"], 3) if total["sampled"] else 0.0
    return {"total": total, "modules": per}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Mutation testing of hzfast/protocol/ (cosmic-ray) against the fast "
                    "layer set of tests/mutants/layers.py.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--modules", default=",".join(MODULES),
                    help="comma-separated modules of hzfast/protocol/ to mutate")
    ap.add_argument("--sample", type=int, default=0,
                    help="mutants to run, a seeded random sample over the modules (0: all)")
    ap.add_argument("--seed", type=int, default=0, help="the sample's seed")
    ap.add_argument("--jobs", type=int, default=2, help="shards run in parallel")
    ap.add_argument("--layers", default="scenarios,small-scope,swarm",
                    help="layers.py's layers, the test command's")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds per mutant before it counts as killed by a timeout")
    ap.add_argument("--out", default=str(ROOT / ".mutation"), help="work and report folder")
    ap.add_argument("--report-only", action="store_true",
                    help="summarize the sessions already in --out")
    a = ap.parse_args(argv)
    modules = [m for m in a.modules.split(",") if m]
    for m in modules:
        if not (ROOT / "hzfast" / "protocol" / f"{m}.py").exists():
            ap.error(f"--modules: no hzfast/protocol/{m}.py")
    if a.jobs < 1 or a.sample < 0 or a.timeout <= 0:
        ap.error("--jobs must be >= 1, --sample >= 0, --timeout > 0")
    if shutil.which("cosmic-ray") is None:
        print("tools/mutation.py: cosmic-ray is not installed (pip install .[mutation])",
              file=sys.stderr)
        return 2
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    if not a.report_only:
        dbs = _init(modules, a.layers, a.timeout, out)
        chosen = _sample(dbs, a.sample, a.seed)
        procs = [_shard(k, a.jobs, dbs, chosen, out) for k in range(a.jobs)]
        for p in procs:
            p.wait()
    s = _summary(out, a.jobs, modules)
    s.update(modules_run=modules, sample=a.sample, seed=a.seed, layers=a.layers,
             seconds=round(time.perf_counter() - t, 1))
    (out / "summary.json").write_text(json.dumps(s, indent=2))
    print(json.dumps(s["total"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
