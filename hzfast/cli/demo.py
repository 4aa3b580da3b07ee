"""``hzfast demo``: the main job, small: a table, keys placed (on local Spark), a what-if
estimate of the data a topology change moves and how long its migrations take.

rich's progress bar, pyspark and ``spark_integration`` are imported only when the demo runs;
``--no-spark`` places the keys with numpy and needs neither Spark nor Java, and computes the
same what-if movement. On Spark, the JVM's and Spark's log lines go to a log file (named in
the output), never to the terminal; the progress bar stays on the terminal.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
from numpy.typing import NDArray

import hzfast
from hzfast.cli._errors import UserError, check_output_path
from hzfast.cli._inputs import available_memory, balanced_table, check_table_size
from hzfast.cli._output import (
    add_json_flag,
    emit,
    human_bytes,
    human_seconds,
    kv_table,
    ratio,
)
from hzfast.cli.plan import DEFAULT_MAX_PARALLEL, plan_payload, topology_change

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from hzfast.migration.plan import MigrationPlan

__all__ = ["cmd_demo", "movement", "register"]

_STEPS = 6


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo`` to the ``hzfast`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = add_json_flag(subparsers.add_parser(
        "demo", help="the main job: generated table, keys placed on local Spark, what-if "
                     "movement for a topology change"))
    p.add_argument("-p", "--partitions", type=int, default=20_000,
                   help="partitions (default 20000)")
    p.add_argument("-m", "--members", type=int, default=10, help="members (default 10)")
    p.add_argument("-r", "--replicas", type=int, default=None,
                   help="replicas per partition (default min(members, 7))")
    p.add_argument("--to-members", type=int, default=11,
                   help="members after the change (default 11)")
    p.add_argument("-k", "--keys", type=int, default=1_000_000,
                   help="keys to place (default 1000000)")
    p.add_argument("--value-bytes", type=int, default=1024,
                   help="bytes per entry for the estimate (default 1024)")
    p.add_argument("--bandwidth-mb", type=float, default=100.0,
                   help="per-member link bandwidth in MB/s for the time estimate (default 100)")
    p.add_argument("--max-parallel", type=int, default=DEFAULT_MAX_PARALLEL,
                   help="max parallel migrations per member (default 10)")
    p.add_argument("--no-spark", action="store_true", help="place keys with numpy, not Spark")
    p.add_argument("--plot", metavar="PREFIX", default=None,
                   help="write PREFIX-moves.png (per-member in/out) and PREFIX-schedule.png "
                        "(Gantt chart) (default: no charts)")
    p.set_defaults(func=cmd_demo)


def movement(plan: MigrationPlan, current: NDArray[np.int32], target: NDArray[np.int32],
             rows: NDArray[np.int64], value_bytes: int, bandwidth: float,
             member_count: int) -> dict[str, Any]:
    """The data a plan moves, from rows per partition (the figures of
    ``spark_integration.estimate_movement(...).summary()``, computed with numpy).

    A queued migration copies data when its destination held no replica of the partition;
    its sender is the member that actually sends it (:func:`hzfast.cli._plots.senders`).

    Returns
    -------
    dict
        ``system``, ``total_rows``, ``total_bytes``, ``transferred_rows``,
        ``transferred_bytes``, ``copies_per_byte``, ``data_moved_fraction``,
        ``owner_moved_fraction``, ``migrations``, ``transfers``, ``unplaced_rows``,
        ``unplaced_bytes``, ``busiest_member_bytes``, ``estimated_seconds``,
        ``member_bytes_in``, ``member_bytes_out``.
    """
    from hzfast.cli._plots import senders
    pbytes = rows * value_bytes
    mask = (plan.destination >= 0) & (plan.destination_current_index < 0) & ~plan.instant
    send = senders(plan, current)[mask]
    p_t, d_t = plan.partition_id[mask], plan.destination[mask]
    b_t, r_t = pbytes[p_t], rows[p_t]
    bytes_in = np.bincount(d_t, weights=b_t, minlength=member_count).astype(np.int64)
    ok = send >= 0
    bytes_out = np.bincount(send[ok], weights=b_t[ok], minlength=member_count).astype(np.int64)
    total = int(pbytes.sum())
    moved = np.zeros(rows.shape[0], dtype=bool)
    moved[p_t] = True
    owner_moved = current[:, 0] != target[:, 0]
    busiest = int(max(bytes_in.max(initial=0), bytes_out.max(initial=0)))
    return {
        "system": "hazelcast", "total_rows": int(rows.sum()), "total_bytes": total,
        "transferred_rows": int(r_t.sum()), "transferred_bytes": int(b_t.sum()),
        "copies_per_byte": ratio(b_t.sum() / total) if total else 0.0,
        "data_moved_fraction": ratio(pbytes[moved].sum() / total) if total else 0.0,
        "owner_moved_fraction": ratio(pbytes[owner_moved].sum() / total) if total else 0.0,
        "migrations": int((~plan.instant).sum()), "transfers": int(mask.sum()),
        "unplaced_rows": 0, "unplaced_bytes": 0, "busiest_member_bytes": busiest,
        "estimated_seconds": ratio(busiest / bandwidth),
        "member_bytes_in": bytes_in.tolist(), "member_bytes_out": bytes_out.tolist()}


@contextlib.contextmanager
def _terminal_progress(enabled: bool) -> Iterator[tuple[Progress, TextIO | None]]:
    """A progress bar drawn on a private copy of the terminal's stderr, so that it stays
    visible while file descriptors 1 and 2 are redirected to Spark's log."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    with contextlib.ExitStack() as stack:
        stream: TextIO | None = None
        if enabled and sys.stderr.isatty():
            stream = stack.enter_context(os.fdopen(os.dup(sys.stderr.fileno()), "w"))
        console = Console(file=stream if stream is not None
                          else stack.enter_context(open(os.devnull, "w")))
        with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                      console=console, transient=True, disable=stream is None) as progress:
            yield progress, stream


@contextlib.contextmanager
def _spark_log(path: str) -> Iterator[None]:
    """Send everything written to file descriptors 1 and 2 (the JVM inherits them) to
    ``path`` while the block runs."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


def cmd_demo(args: argparse.Namespace) -> int:
    """``hzfast demo``: a generated table, keys placed, a what-if movement estimate.

    Parameters
    ----------
    args : argparse.Namespace
        ``partitions``, ``members``, ``replicas`` (the generated table), ``to_members``
        (the topology change), ``keys`` (keys ``0 .. keys - 1`` to place), ``value_bytes``
        and ``bandwidth_mb`` (the movement estimate), ``max_parallel``, ``no_spark``,
        ``plot`` and ``json``.

    Returns
    -------
    int
        0. Prints the arguments, ``stamp``, ``plan`` (``hzfast plan``'s payload without its
        report), ``placement_seconds``, ``placed_by`` (``spark`` or ``numpy``),
        ``keys_per_owner``, ``movement`` (:func:`movement`'s figures, or on Spark
        ``spark_integration.estimate_movement(...).summary()`` with per-member bytes in and
        out), ``schedule`` (the migrations timed with each partition's bytes over the
        bandwidth, a member's link shared by its ``max_parallel`` migrations in flight:
        ``makespan_seconds``, ``lower_bound_seconds``, ``bandwidth_per_migration``,
        ``max_parallel``, ``peak_concurrency``), ``plots`` and, on Spark,
        ``spark_log``.
    """
    R = check_table_size(args.partitions, args.replicas, args.members)
    if args.to_members < 1:
        raise UserError(f"--to-members: must be >= 1, got {args.to_members}")
    check_table_size(args.partitions, R, args.to_members, members_flag="--to-members")
    if args.keys < 0:
        raise UserError(f"-k/--keys: must be >= 0, got {args.keys}")
    if args.keys * 24 > available_memory():
        raise UserError(f"-k/--keys: {args.keys:,} keys need about "
                        f"{human_bytes(args.keys * 24)} of memory")
    if args.value_bytes < 0:
        raise UserError(f"--value-bytes: must be >= 0, got {args.value_bytes}")
    if not args.bandwidth_mb > 0:
        raise UserError(f"--bandwidth-mb: must be > 0, got {args.bandwidth_mb}")
    if args.max_parallel < 1:
        raise UserError(f"--max-parallel: must be >= 1, got {args.max_parallel}")
    plots = None
    if args.plot:
        plots = {"moves": f"{args.plot}-moves.png", "schedule": f"{args.plot}-schedule.png"}
        for path in plots.values():
            check_output_path(path, "--plot")
    if not args.no_spark:
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise UserError("demo: Spark is not installed (pip install -e '.[spark]'), or "
                            "run hzfast demo --no-spark") from None

    payload: dict[str, Any] = {"partitions": args.partitions, "members": args.members,
                               "replicas": R, "keys": args.keys, "to_members": args.to_members}
    bandwidth = args.bandwidth_mb * 1e6
    with _terminal_progress(True) as (progress, _):
        task = progress.add_task("generating the table", total=_STEPS)
        table = balanced_table(args.partitions, args.members, R)
        payload["stamp"] = table.stamp
        progress.update(task, advance=1, description="planning the topology change")
        change = topology_change(table, args.to_members)
        summary, plan, _result = plan_payload(table, change, args.max_parallel)
        payload["plan"] = {k: v for k, v in summary.items() if k != "report"}
        current, target = change.current.replicas, change.target
        M = change.current.member_count
        progress.update(task, advance=1, description=f"placing {args.keys:,} keys")
        keys = np.arange(args.keys, dtype=np.int64)
        if args.no_spark:
            t0 = time.perf_counter()
            pids = hzfast.partition_ids(keys, table.partition_count)
            owners = table.replicas[pids, 0]
            payload["placement_seconds"] = round(time.perf_counter() - t0, 3)
            payload["placed_by"] = "numpy"
            payload["keys_per_owner"] = np.bincount(owners, minlength=table.member_count
                                                    ).tolist()
            progress.update(task, advance=1, description="estimating data movement")
            rows = np.bincount(pids, minlength=table.partition_count).astype(np.int64)
            payload["movement"] = movement(plan, current, target, rows, args.value_bytes,
                                           bandwidth, M)
            progress.update(task, advance=1)
        else:
            fd, log = tempfile.mkstemp(prefix="hzfast-demo-spark-", suffix=".log")
            os.close(fd)
            payload["spark_log"] = log
            rows = _on_spark(args, table, current, target, bandwidth, payload, progress, task,
                             log)
        progress.update(task, advance=1, description="scheduling the migrations")
        # a member's link is shared by the migrations it has in flight
        per_migration = bandwidth / args.max_parallel
        sched = hzfast.schedule(plan, change.current, max_parallel_migrations=args.max_parallel,
                                sizes=(rows * args.value_bytes).astype(np.float64),
                                bandwidth=per_migration)
        payload["schedule"] = {"makespan_seconds": ratio(sched.makespan),
                               "lower_bound_seconds": ratio(sched.lower_bound),
                               "bandwidth_per_migration": per_migration,
                               "max_parallel": args.max_parallel,
                               "peak_concurrency": sched.peak_concurrency.tolist()}
        progress.update(task, advance=1, description="drawing")
        if plots is not None:
            from hzfast.cli._plots import plot_plan, plot_schedule
            head = f"{args.members} -> {args.to_members} members"
            plot_plan(plan, current, change.current.members, plots["moves"], title=head)
            plot_schedule(plan, sched, change.current.members, plots["schedule"], unit="s")
            payload["plots"] = plots

    def render(c: Console, p: dict[str, Any]) -> None:
        c.print(kv_table("hzfast demo", [(k, v) for k, v in p.items()
                                         if not isinstance(v, (dict, list))]))
        plan_rows = [(k, v) for k, v in p["plan"].items() if not isinstance(v, (dict, list))]
        c.print(kv_table("plan", plan_rows))
        c.print(kv_table("keys per owner", enumerate(p["keys_per_owner"])))
        mv = p["movement"]
        shown = []
        for k, v in mv.items():
            if isinstance(v, list):
                continue
            if k.endswith("_bytes") and isinstance(v, int):
                v = human_bytes(v)
            elif k == "estimated_seconds" and v is not None:
                v = human_seconds(v)
            elif isinstance(v, float):
                v = ratio(v)
            shown.append((k, v))
        c.print(kv_table(f"what-if movement ({p['placed_by']})", shown))
        s = p["schedule"]
        c.print(kv_table("migrations timed (shared links)",
                         [("makespan", human_seconds(s["makespan_seconds"])),
                          ("lower bound", human_seconds(s["lower_bound_seconds"])),
                          ("bandwidth per migration",
                           f"{human_bytes(s['bandwidth_per_migration'])}/s"),
                          ("max parallel per member", s["max_parallel"])]))
        for name, path in (p.get("plots") or {}).items():
            c.print(f"chart ({name}): {path}")

    emit(args, payload, render)
    return 0


def _on_spark(args: argparse.Namespace, table: hzfast.PartitionTable,
              current: NDArray[np.int32], target: NDArray[np.int32], bandwidth: float,
              payload: dict[str, Any], progress: Progress, task: Any, log: str
              ) -> NDArray[np.int64]:
    """Place the keys and estimate the movement on a local Spark session whose output goes
    to ``log``; return the rows per partition."""
    try:
        with _spark_log(log):
            from pyspark.sql import functions as F

            import spark_integration as si
            progress.update(task, description="starting local Spark")
            spark = si.local_session()
            try:
                df = spark.range(args.keys).withColumnRenamed("id", "key")
                progress.update(task, description=f"placing {args.keys:,} keys on Spark")
                t0 = time.perf_counter()
                placed = si.with_placement(df, "key", table)
                per_owner = {r["owner"]: r["count"] for r in
                             placed.groupBy("owner").count().collect()}
                payload["placement_seconds"] = round(time.perf_counter() - t0, 3)
                payload["placed_by"] = "spark"
                payload["keys_per_owner"] = [int(per_owner.get(m, 0))
                                             for m in range(table.member_count)]
                progress.update(task, advance=1, description="estimating data movement")
                sized = df.withColumn("bytes", F.lit(args.value_bytes))
                est = si.estimate_movement(sized, "key", current, target, size_col="bytes",
                                           bandwidth=bandwidth,
                                           max_parallel_migrations=args.max_parallel)
                mv = est.summary()
                mv["member_bytes_in"] = est.member_bytes_in.tolist()
                mv["member_bytes_out"] = est.member_bytes_out.tolist()
                payload["movement"] = mv
                rows: NDArray[np.int64] = np.asarray(est.partition_rows, dtype=np.int64)
                progress.update(task, advance=1)
            finally:
                spark.stop()
    except UserError:
        raise
    except Exception as exc:
        raise UserError(f"demo: Spark failed ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:300]}); its log: {log}") from exc
    return rows
