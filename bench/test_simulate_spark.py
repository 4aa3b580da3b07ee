"""Seed sweeps: ``hzfast simulate --spark`` on local[2] against ``--jobs 2``, same seeds.

Both run in this process, the command line's own code (``cmd_simulate`` for ``--jobs 2``,
``run_spark`` for ``--spark``): the Spark one on a local[2] session started once, before
any timing (a cluster's session outlives many sweeps; starting one here takes 5-10 s, not
counted; it has the JVM options ``spark_integration.SWEEP_CONF`` the command's own local
sessions have). Every sweep runs seeds ``0 .. SEEDS-1`` of the default shape into a new
``--output`` directory (nothing resumed) and is checked: the two reports agree, to the
entry and the event, and every run passed.

* ``test_sweep[jobs]`` / ``test_sweep[spark]``: each engine alone (pytest-benchmark table).
* ``test_spark_against_jobs``: the issue's figure, seeds/s of ``--spark`` over seeds/s of
  ``--jobs 2``, timed in one run as A B B A (jobs, spark, spark, jobs) so that a drift of the
  shared machine's speed weighs on both; ``extra_info`` keeps every time and the ratio of
  the sums (aim: >= 0.85 at 2,000 seeds; ``HZFAST_BENCH_SIM_ROUNDS`` repeats A B B A); where a
  ``--spark`` sweep's time goes (the seconds its rows spent inside ``sim.run`` against the
  tree's CPU and the cores' wall time); and the CPU seconds of the whole process tree
  (this process, the ``--jobs`` workers, the Spark JVM and its Python workers) per sweep,
  with their ratio: on a shared machine the steadier figure.

Seeds: ``HZFAST_BENCH_SIM_SEEDS`` (default 2,000; 40 under ``--benchmark-disable``, as in CI).
Run: ``python -m pytest bench/test_simulate_spark.py -p no:xdist -k against -s``.
"""
from __future__ import annotations

import contextlib
import io
import json
import functools
import os
import sys
import time

import pytest
from _cpu import tree_cpu

from hzfast.cli import build_parser
from hzfast.cli.simulate import cmd_simulate
from hzfast.cli.simulate_spark import run_spark

#: A B B A repeated (``HZFAST_BENCH_SIM_ROUNDS``, default 1: each engine twice).
ROUNDS = int(os.environ.get("HZFAST_BENCH_SIM_ROUNDS", "1"))
IGNORED = ("engine", "output", "seeds_resumed", "seeds_run", "stopped_at_failure",
           "seeds_not_ok", "not_ok_first", "seconds", "runs_per_second")


@pytest.fixture(scope="module")
def seeds(request):
    env = os.environ.get("HZFAST_BENCH_SIM_SEEDS")
    if env:
        return int(env)
    return 40 if request.config.getoption("benchmark_disable") else 2000


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    import spark_integration as si
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # the session `hzfast simulate --spark --master 'local[2]'` starts (with the sweep's
    # JVM options)
    session = si.local_session(master="local[2]", **{
        "spark.driver.memory": "1g", "spark.app.name": "hzfast-bench-simulate",
        "spark.log.level": "ERROR", **si.SWEEP_CONF})
    yield session
    session.stop()


def _own_cpu() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _in_runs(out) -> tuple[float, float]:
    """The CPU and wall seconds a ``--spark`` sweep's rows say its seeds took inside
    ``hzfast.sim.run`` (summed over the seeds)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    t = pq.read_table(out, columns=["cpu_seconds", "wall_seconds"])
    return pc.sum(t.column("cpu_seconds")).as_py(), pc.sum(t.column("wall_seconds")).as_py()


def _sweep(engine: str, n: int, spark, out, cpu: list | None = None,
           runs: list | None = None) -> tuple[float, dict]:
    """One sweep of seeds 0..n-1: (wall seconds, the report without its timings); the CPU
    seconds of the process tree are appended to ``cpu``, and for ``--spark`` the CPU and
    wall seconds inside ``sim.run`` (:func:`_in_runs`) to ``runs``."""
    argv = ["simulate", "--seeds", str(n), "--keep-going", "--json"]
    if engine == "jobs":
        argv += ["--jobs", "2"]
    else:
        argv += ["--spark", "--output", str(out)]
    args = build_parser().parse_args(argv)
    buf = io.StringIO()
    # --jobs: this process and its workers, waited for when the sweep ends (os.times);
    # --spark: the living tree (the JVM and its Python workers, which outlive a sweep)
    clock = _own_cpu if engine == "jobs" else functools.partial(tree_cpu, waited=True)
    c = clock()
    t = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        status = run_spark(args, spark) if engine == "spark" else cmd_simulate(args)
    seconds = time.perf_counter() - t
    if cpu is not None:
        cpu.append(round(clock() - c, 2))
    report = json.loads(buf.getvalue())
    assert status == 0 and report["seeds"] == n and report["failed"] == 0, report
    if engine == "spark":
        assert report["seeds_run"] == n, "a sweep was resumed: the output was not new"
        if runs is not None:
            runs.append(tuple(round(x, 2) for x in _in_runs(out)))
    return seconds, {k: v for k, v in report.items() if k not in IGNORED}


@pytest.mark.parametrize("engine", ["jobs", "spark"])
def test_sweep(benchmark, spark, seeds, tmp_path, engine):
    benchmark.group = "simulate sweep, 2 cores"
    benchmark.extra_info["seeds"] = seeds
    rounds = iter(range(100))
    reports = []

    def once():
        reports.append(_sweep(engine, seeds, spark, tmp_path / f"out{next(rounds)}")[1])
    benchmark.pedantic(once, rounds=1, iterations=1)
    r = reports[0]           # (a run stuck by design, its quorum crashed, acknowledges less)
    assert r["events"] > 0 and r["converged"] + r["quorum_lost"] == seeds
    assert r["entries_acknowledged"] >= r["converged"] * 10_000


def test_spark_against_jobs(benchmark, spark, seeds, tmp_path):
    benchmark.group = "simulate sweep, 2 cores: spark / jobs"
    times: dict[str, list[float]] = {"jobs": [], "spark": []}
    cpu: dict[str, list[float]] = {"jobs": [], "spark": []}
    runs: list[tuple[float, float]] = []       # --spark: (CPU, wall) seconds in sim.run
    reports = []
    order = ("jobs", "spark", "spark", "jobs") * ROUNDS

    def abba():
        for i, engine in enumerate(order):
            seconds, report = _sweep(engine, seeds, spark, tmp_path / f"abba{i}", cpu[engine],
                                     runs)
            times[engine].append(round(seconds, 2))
            reports.append(report)
    benchmark.pedantic(abba, rounds=1, iterations=1)
    assert all(r == reports[0] for r in reports), "the engines disagree"
    ratio = sum(times["jobs"]) / sum(times["spark"])     # (seeds/s spark) / (seeds/s jobs)
    cpu_ratio = sum(cpu["jobs"]) / sum(cpu["spark"])     # the same per CPU second
    # where a --spark sweep's time goes: the share of the tree's CPU spent inside sim.run,
    # and of the 2 cores' wall time (2 x the sweep's) the seeds' runs covered
    in_cpu = [round(c / t, 3) for (c, _), t in zip(runs, cpu["spark"])]
    in_wall = [round(w / (2 * t), 3) for (_, w), t in zip(runs, times["spark"])]
    benchmark.extra_info.update(seeds=seeds, order=order, jobs_seconds=times["jobs"],
                                spark_seconds=times["spark"], ratio=round(ratio, 3),
                                jobs_cpu_seconds=cpu["jobs"], spark_cpu_seconds=cpu["spark"],
                                cpu_ratio=round(cpu_ratio, 3), spark_in_runs=runs,
                                spark_cpu_share_in_runs=in_cpu,
                                spark_wall_share_in_runs=in_wall)
    print(f"\n{seeds} seeds, {order}: --jobs 2 {times['jobs']} s, --spark local[2] "
          f"{times['spark']} s; spark seeds/s / jobs seeds/s = {ratio:.3f}; CPU s: jobs "
          f"{cpu['jobs']}, spark {cpu['spark']}, per CPU second {cpu_ratio:.3f}; --spark "
          f"in sim.run (CPU s, wall s) {runs}: share of the tree's CPU {in_cpu}, of 2 x wall "
          f"{in_wall}")
