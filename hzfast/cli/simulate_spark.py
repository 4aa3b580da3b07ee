"""``hzfast simulate --spark``: the same sweep, with Spark as the engine.

A command group of its own (:data:`hzfast.cli.COMMAND_GROUPS`, after ``simulate``) that adds
its flags to ``hzfast simulate``'s parser and takes over the command when ``--spark`` is
given (``simulate`` itself knows nothing of Spark).

The sweep is cut into units of ``--seeds-per-task`` consecutive seeds of one shape
(``spark_integration.seed_units``), one Spark task each, and the units into batches: one
Spark job per batch (``spark_integration.unit_frame``), its rows fetched as Arrow and
written by this process to ``--output`` as ``part-A-B.parquet`` (units ``A..B-1``),
written whole under a temporary name and renamed, so a file is there only when its batch
is. Two batches are in flight at once: the next job's tasks queue behind the current one's
and take the cores its last tasks leave idle, so the cores stay busy from one job to the
next (and while this process writes and tallies a batch). ``_sweep.json`` there (a name Spark's reader skips) records the sweep's settings; run the same command again and
the batches whose file exists are read back instead of run (a different sweep into the
same directory is refused). The summary is tallied with ``hzfast simulate``'s own code,
in shape and seed order, from the rows of every batch, so it is the ``--jobs`` summary of
the same seeds; without ``--keep-going`` the tally stops at a failing seed as ``--jobs``
does, and the batch already started after it is cancelled and not written.

``pyspark`` and ``spark_integration`` are imported only here, when ``--spark`` is given.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hzfast.cli._errors import UserError
from hzfast.cli._output import busy, emit
from hzfast.cli.simulate import (
    _DEFAULT,
    _passed,
    _positive,
    _render,
    _replay_flags,
    _Tally,
    cmd_simulate,
)

__all__ = ["register", "run_spark"]

_MANIFEST = "_sweep.json"   # "_": Spark's Parquet reader skips it
_FORMAT = 2                # (2: the membership settings and results)
_PART = re.compile(r"^part-(\d{8})-(\d{8})\.parquet$")
_EXAMPLES = 5              # rows not ok (a legacy run's losses too) shown with their replay
_MIN_BATCH_UNITS = 64       # units per batch (Spark job) at least: a part file each
_IN_FLIGHT = 2              # batches submitted at once (the next one fills the cores the
                            # current one's last tasks leave idle)
_TALLIED = ("seed", "shape", "design", "members_at_start", "entries_acknowledged",
            "entries_lost", "entries_lost_expected", "converged", "events", "violations",
            "faults_injected", "marks", "summary", "last_events", "replay", "ok",
            "quorum_lost", "lost_by")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the Spark flags to ``hzfast simulate`` (registered before) and dispatch on
    ``--spark``."""
    p = subparsers.choices["simulate"]
    g = p.add_argument_group("Spark (hzfast simulate --spark; pip install 'hzfast[spark]')")
    g.add_argument("--spark", action="store_true",
                   help="run the seeds as Spark tasks; per-seed rows go to --output as "
                        "Parquet; the same command again resumes the sweep")
    g.add_argument("--master", default="local[*]",
                   help="Spark master URL (local[N], spark://..., yarn, ...; sc://HOST:PORT "
                        "for Spark Connect)")
    g.add_argument("--output", metavar="DIR", default=None,
                   help="directory of the sweep's Parquet rows (required with --spark)")
    g.add_argument("--shapes", metavar="FILE", default=None,
                   help="JSON list of shapes (objects of hzfast.sim.run settings over the "
                        "flags): every seed runs with each (default: the flags' one shape)")
    g.add_argument("--seeds-per-task", type=_positive, default=25,
                   help="consecutive seeds one Spark task runs")
    p.set_defaults(func=cmd_simulate_any)


def cmd_simulate_any(args: argparse.Namespace) -> int:
    """``hzfast simulate``: on Spark with ``--spark`` (:func:`run_spark`), else locally."""
    if args.spark:
        return run_spark(args)
    for name in ("output", "shapes"):
        if getattr(args, name) is not None:
            raise UserError(f"--{name}: goes with --spark")
    return cmd_simulate(args)


class _Row:
    """A Parquet row seen as the :class:`hzfast.sim.SimulationResult` ``_Tally`` reads."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.seed = d["seed"]
        self.entries_acknowledged = d["entries_acknowledged"]
        self.entries_lost = d["entries_lost"]
        self.entries_lost_expected = d["entries_lost_expected"]
        self.converged = d["converged"]
        self.quorum_lost = d["quorum_lost"]
        self.lost_by = dict(d["lost_by"] or ())
        self.ok = bool((self.converged or self.quorum_lost) and not d["violations"])
        self.events = d["events"]
        self.violations = list(d["violations"] or ())
        self.faults_injected = dict(d["faults_injected"] or ())
        self.marks = dict(d["marks"] or ())
        self.last_events = list(d["last_events"] or ())
        self.replay = d["replay"]
        self._summary = d["summary"] or ""

    def summary(self) -> str:
        return self._summary


def _shapes(args: argparse.Namespace, si: Any) -> list[dict[str, Any]]:
    """The sweep's shapes, checked: the command line's settings, or each of ``--shapes``
    over them."""
    if args.entries is None:
        args.entries = _DEFAULT["entries"]
    base = {"members": args.members, "partitions": args.partitions,
            "backup_count": args.backup_count, "entries": args.entries,
            "faults": args.faults, "design": args.design, "joins": args.joins,
            "max_parallel_migrations": args.max_parallel_migrations,
            "strict": bool(args.strict), "membership": args.member_lists,
            "min_cluster_size": args.min_cluster_size, "merge_policy": args.merge_policy,
            "nemesis": args.nemesis}
    if args.shapes is None:
        try:
            return [si.shape_settings(base, where="simulate")]
        except (TypeError, ValueError) as exc:
            raise UserError(str(exc).removeprefix("simulate: ")) from None
    path = args.shapes
    try:
        listed = json.loads(Path(path).read_text())
    except OSError as exc:
        raise UserError(f"--shapes: {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"--shapes: {path}: not JSON ({exc})") from None
    if not isinstance(listed, list) or not listed:
        raise UserError(f"--shapes: {path}: must hold a non-empty JSON list of objects "
                        "(shape settings)")
    out = []
    for i, shape in enumerate(listed):
        if not isinstance(shape, dict):
            raise UserError(f"--shapes: {path}: item {i} is not an object")
        try:
            out.append(si.shape_settings({**base, **shape}, where=f"item {i}"))
        except (TypeError, ValueError) as exc:
            raise UserError(f"--shapes: {path}: {exc}") from None
    return out


def _parallelism(spark: Any, master: str) -> int:
    """The cores a job can use, as far as the configuration tells (for the batch size)."""
    try:
        configured = spark.conf.get("spark.default.parallelism", None)
        if configured:
            return max(1, int(configured))
    except Exception:   # noqa: BLE001 - not set, or not readable over Connect
        pass
    m = re.fullmatch(r"local\[(\d+|\*)(?:,\d+)?\]", master)
    if m:
        return os.cpu_count() or 1 if m.group(1) == "*" else int(m.group(1))
    return 8


def _batch_units(spark: Any, master: str) -> int:
    """Units per batch (per Spark job, per part file) of a new sweep: at least 4 per core,
    so that a job's fixed costs are shared by many tasks."""
    return max(_MIN_BATCH_UNITS, 4 * _parallelism(spark, master))


def _session(master: str) -> tuple[Any, bool]:
    """A session for ``--master``, and whether this command started it (and stops it)."""
    try:
        import spark_integration as si
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise UserError(f"--spark: needs pyspark: pip install 'hzfast[spark]' ({exc})") from None
    if master.startswith("sc://"):
        return SparkSession.builder.remote(master).getOrCreate(), True
    conf = {"spark.app.name": "hzfast-simulate", "spark.log.level": "ERROR"}
    if master.startswith("local"):
        return si.local_session(master=master, **conf, **si.SWEEP_CONF), True
    builder = SparkSession.builder.master(master)
    for k, v in conf.items():
        builder = builder.config(k, v)
    return builder.getOrCreate(), True


def _manifest(out: Path, wanted: dict[str, Any]) -> dict[str, Any] | None:
    """The sweep already in ``out`` (None: a new directory); refuses another sweep's."""
    path = out / _MANIFEST
    if out.exists() and not out.is_dir():
        raise UserError(f"--output: {out}: exists and is not a directory")
    if not path.exists():
        if out.exists() and any(_PART.match(p.name) for p in out.iterdir()):
            raise UserError(f"--output: {out}: holds results but no {_MANIFEST}")
        return None
    try:
        have = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"--output: {path}: unreadable ({exc})") from None
    if not isinstance(have, dict) or have.get("format") != _FORMAT:
        raise UserError(f"--output: {path}: not a sweep written by this version")
    differ = [k for k in wanted if have.get(k) != wanted[k]]
    if differ:
        raise UserError(f"--output: {out}: holds another sweep ({', '.join(differ)} "
                        f"differ); resume it with the same settings or use a new directory")
    return have


def _batches(units: int, size: int) -> list[tuple[int, int]]:
    return [(a, min(a + size, units)) for a in range(0, units, size)]


def _part(out: Path, a: int, b: int) -> Path:
    return out / f"part-{a:08d}-{b:08d}.parquet"


def _is_connect(spark: Any) -> bool:
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:
        return False
    return isinstance(spark, ConnectSession)


class _Progress:
    """The progress bar of a sweep: the seeds of the batches tallied, plus, for the batches
    in flight, the seeds of the tasks Spark reports completed - classic: polled from the
    status tracker by job group; Spark Connect: its progress handler, which runs in the
    thread that started the batch. A figure that cannot be read leaves the bar to jump per
    batch."""

    def __init__(self, spark: Any, advance: Callable[[float], None], seeds_per_task: int,
                 connect: bool) -> None:
        self._spark, self._advance, self._per_task = spark, advance, seeds_per_task
        self._connect = connect
        self._lock = threading.Lock()
        self._tallied = 0
        self._flying: dict[str, list[int]] = {}      # tag -> [seeds, tasks completed]
        self._shown = 0.0
        self._here = threading.local()               # the batch this thread runs (Connect)
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None

    def __enter__(self) -> _Progress:
        try:
            if self._connect:
                self._spark.registerProgressHandler(self._handler)
            else:
                self._tracker = self._spark.sparkContext.statusTracker()
                self._poller = threading.Thread(target=self._poll, daemon=True)
                self._poller.start()
        except Exception:   # noqa: BLE001 - no progress within a batch then
            pass
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(2)
        if self._connect:
            try:
                self._spark.removeProgressHandler(self._handler)
            except Exception:  # noqa: BLE001
                pass

    def start(self, tag: str, seeds: int) -> None:
        """In the thread that runs batch ``tag`` of ``seeds`` seeds, before its job."""
        self._here.tag = tag
        with self._lock:
            self._flying[tag] = [seeds, 0]

    def tallied(self, tag: str | None, seeds: int) -> None:
        """Batch ``tag`` (None: read back, never run) has been tallied."""
        with self._lock:
            if tag is not None:
                self._flying.pop(tag, None)
            self._tallied += seeds
        self._show()

    def _completed(self, tag: str, tasks: int) -> None:
        with self._lock:
            if tag in self._flying:
                self._flying[tag][1] = max(self._flying[tag][1], tasks)
        self._show()

    def _show(self) -> None:
        with self._lock:
            target = self._tallied + sum(min(seeds, done * self._per_task)
                                         for seeds, done in self._flying.values())
            step = target - self._shown
            if step <= 0:
                return
            self._shown = target
        self._advance(step)

    def _handler(self, stages: Any = None, inflight_tasks: Any = 0,
                 operation_id: Any = None, done: Any = False) -> None:
        tag = getattr(self._here, "tag", None)
        if tag is not None:
            self._completed(tag, sum(getattr(s, "num_completed_tasks", 0)
                                     for s in stages or ()))

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                tags = list(self._flying)
            for tag in tags:
                n = 0
                for job in self._tracker.getJobIdsForGroup(tag):
                    info = self._tracker.getJobInfo(job)
                    for sid in info.stageIds if info else ():
                        stage = self._tracker.getStageInfo(sid)
                        n += stage.numCompletedTasks if stage else 0
                self._completed(tag, n)


def _run_batch(spark: Any, si: Any, progress: _Progress, tag: str, seeds: range,
               shapes: list[dict[str, Any]], seeds_per_task: int, a: int, b: int,
               count: int) -> Any:
    """Units ``a..b-1`` as one Spark job, in a thread of the sweep's pool; its rows as an
    Arrow table. The job carries ``tag`` (classic: as its job group) so that
    :func:`_cancel` can stop it and the progress bar can follow it."""
    connect = _is_connect(spark)
    if connect:
        spark.addTag(tag)
    else:
        spark.sparkContext.setJobGroup(tag, f"hzfast simulate: units {a}..{b - 1}")
    progress.start(tag, count)
    try:
        return si.unit_frame(spark, seeds, shapes, seeds_per_task, range(a, b)).toArrow()
    finally:
        if connect:
            spark.removeTag(tag)
        else:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


def _cancel(spark: Any, tag: str) -> None:
    """Stop the job of batch ``tag`` (not wanted any more)."""
    try:
        if _is_connect(spark):
            spark.interruptTag(tag)
        else:
            spark.sparkContext.cancelJobGroup(tag)
    except Exception:   # noqa: BLE001 - it ended meanwhile
        pass


def run_spark(args: argparse.Namespace, spark: Any = None) -> int:
    """``hzfast simulate --spark``: run (or resume) the sweep on Spark, print its summary.

    Parameters
    ----------
    args : argparse.Namespace
        ``hzfast simulate``'s parsed command line, with ``--spark``.
    spark : pyspark.sql.SparkSession, optional
        Run on this session (left running) instead of one made for ``--master``.

    Returns
    -------
    int
        0 when every run converged without a violation, 1 otherwise.
    """
    if args.scenario is not None:
        raise UserError("--spark: runs swarm seeds; leave out --scenario")
    if args.trace:
        raise UserError("--trace: replays one seed locally; leave out --spark")
    if args.jobs != 1:
        raise UserError("--jobs: local worker processes; with --spark, Spark's executors "
                        "run the seeds (leave out --jobs)")
    if args.output is None:
        raise UserError("--output: required with --spark (the directory of per-seed rows)")
    if args.seeds_per_task < 1:
        raise UserError("--seeds-per-task: must be >= 1")
    try:
        import spark_integration as si
    except ImportError as exc:
        raise UserError(f"--spark: needs pyspark: pip install 'hzfast[spark]' ({exc})") from None
    t0 = time.perf_counter()
    shapes = _shapes(args, si)
    seeds = range(args.seed_start, args.seed_start + args.seeds)
    units = si.seed_units(seeds, len(shapes), args.seeds_per_task)
    out = Path(args.output)
    wanted = {"format": _FORMAT, "seed_start": args.seed_start, "seeds": args.seeds,
              "seeds_per_task": args.seeds_per_task, "shapes": shapes}
    have = _manifest(out, wanted)
    try:                                        # an unusable directory fails before Spark starts
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--output: {out}: {exc.strerror or exc}") from None
    master = args.master
    own = False
    if spark is None:
        spark, own = _session(master)
    try:
        if have is None:
            size = _batch_units(spark, master)
            try:
                tmp = out / f".{_MANIFEST}.tmp"
                tmp.write_text(json.dumps({**wanted, "batch_units": size}, indent=1))
                os.replace(tmp, out / _MANIFEST)
            except OSError as exc:
                raise UserError(f"--output: {out}: {exc.strerror or exc}") from None
        else:
            size = int(have["batch_units"])
        return _sweep(args, si, spark, shapes, seeds, units, out, size, t0)
    finally:
        if own:
            spark.stop()


def _sweep(args: argparse.Namespace, si: Any, spark: Any, shapes: list[dict[str, Any]],
           seeds: range, units: list[tuple[int, int, int]], out: Path, size: int, t0: float) -> int:
    import pyarrow.parquet as pq

    flags = [_replay_flags(argparse.Namespace(scenario=None, **s)) for s in shapes]
    overall = _Tally()
    per_shape = [_Tally(f) for f in flags]
    batches = _batches(len(units), size)
    done = {(a, b) for a, b in batches if _part(out, a, b).exists()}
    to_run = sum(hi - lo for a, b in batches if (a, b) not in done for _, lo, hi in units[a:b])
    resumed = ran = not_ok = 0
    examples: list[dict[str, Any]] = []
    stopped = False
    run_id = f"hzfast-simulate-{os.getpid()}-{time.monotonic_ns()}"
    seeds_of = [sum(hi - lo for _, lo, hi in units[a:b]) for a, b in batches]
    to_start = iter([i for i, ab in enumerate(batches) if ab not in done])
    flying: deque[tuple[int, str, Future[Any]]] = deque()
    with busy(f"simulating {to_run:,} seeds on Spark", total=to_run) as advance, \
            _Progress(spark, advance, args.seeds_per_task, _is_connect(spark)) as progress, \
            ThreadPoolExecutor(_IN_FLIGHT, thread_name_prefix="hzfast-batch") as pool:

        def start_more() -> None:
            # keep _IN_FLIGHT batches submitted: the next job's tasks queue behind the
            # current one's (FIFO) and take the cores its last tasks leave idle
            while len(flying) < _IN_FLIGHT:
                i = next(to_start, None)
                if i is None:
                    return
                a, b = batches[i]
                tag = f"{run_id}-{a}"
                flying.append((i, tag, pool.submit(
                    _run_batch, spark, si, progress, tag, seeds, shapes,
                    args.seeds_per_task, a, b, seeds_of[i])))
        try:
            for i, (a, b) in enumerate(batches):
                path = _part(out, a, b)
                if (a, b) in done:
                    table = pq.read_table(path, columns=list(_TALLIED))
                    resumed += table.num_rows
                    tag = None
                else:
                    start_more()
                    j, tag, future = flying.popleft()
                    assert j == i
                    table = future.result()
                    start_more()
                    tmp = out / f".{path.name}.tmp"
                    pq.write_table(table, tmp)
                    os.replace(tmp, path)
                    ran += table.num_rows
                    table = table.select(list(_TALLIED))
                for d in table.to_pylist():
                    r = _Row(d)
                    shape = per_shape[d["shape"]]
                    good = _passed(r)
                    if not d["ok"]:
                        not_ok += 1
                        if len(examples) < _EXAMPLES:
                            examples.append({"seed": r.seed, "shape": d["shape"],
                                             "summary": d["summary"],
                                             "violations": len(r.violations),
                                             "replay": d["replay"]})
                    overall.replay = flags[d["shape"]]
                    shape.add(r, d["design"], failing=not good)
                    overall.add(r, d["design"], failing=not good)
                    if not good and not args.keep_going:
                        stopped = True
                        break
                progress.tallied(tag, seeds_of[i])
                if stopped:
                    break
        finally:
            # the batches started ahead and not wanted (a failure, an error, Ctrl-C): their
            # jobs are stopped and their rows dropped (not written)
            for _, tag, future in flying:
                if not future.cancel():
                    _cancel(spark, tag)
            for _, _, future in flying:
                try:
                    future.result()
                except BaseException:   # noqa: BLE001 - cancelled, as asked
                    pass
    seconds = time.perf_counter() - t0
    designs = {s["design"] for s in shapes}
    view = argparse.Namespace(**{**vars(args), "design": designs.pop() if len(designs) == 1
                                 else "mixed"})
    payload = overall.payload(view, seconds)
    payload["runs_per_second"] = round(ran / seconds, 2) if seconds else None
    payload.update(engine="spark", output=str(out), seeds_resumed=resumed, seeds_run=ran,
                   stopped_at_failure=stopped, seeds_not_ok=not_ok, not_ok_first=examples)
    if args.shapes is not None:
        payload["shapes"] = [{"settings": s, **{k: v for k, v in t.payload(
            argparse.Namespace(**{**vars(args), "design": s["design"]}), seconds).items()
            if k not in ("seconds", "runs_per_second", "failures", "scenario",
                         "seed_start", "design")}}
            for s, t in zip(shapes, per_shape)]
    emit(args, payload, _render_spark)
    return 1 if overall.failures else 0


def _render_spark(con: Any, d: dict[str, Any]) -> None:
    _render(con, d)
    con.print(f"rows: {d['output']} ({d['seeds_run']:,} seeds run now, "
              f"{d['seeds_resumed']:,} read back from an earlier run)"
              + (" - stopped at the first failing seed (--keep-going runs on)"
                 if d["stopped_at_failure"] else ""))
    if d["seeds_not_ok"] and not d["failures"]:
        con.print(f"{d['seeds_not_ok']:,} runs not ok (lost more than expected, a violation "
                  "or not converged; the legacy design is expected to), the first:")
        for e in d["not_ok_first"]:
            con.print(f"  {e['summary']}", markup=False)
            con.print(f"    replay: {e['replay']}", markup=False)
    for s in d.get("shapes", ()):
        settings = ", ".join(f"{k}={v}" for k, v in s["settings"].items())
        con.print(f"shape {settings}: {s['passed']:,} passed, {s['failed']:,} failed, "
                  f"{s['entries_lost']:,} lost ({s['entries_lost_expected']:,} expected), "
                  f"{s['violations']:,} violations")
