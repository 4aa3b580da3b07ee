"""``hzfast demo``: the main job, small: a table, keys placed on local Spark, a what-if estimate.

rich's progress bar, pyspark and ``spark_integration`` are imported only when the demo runs;
``--no-spark`` places the keys with numpy and needs neither Spark nor Java.
"""
from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from hzfast.cli._inputs import balanced_table
from hzfast.cli._output import add_json_flag, emit, kv_table
from hzfast.cli.plan import plan_payload

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_demo", "register"]

_MAX_PARALLEL = 10  # the schedule's max_parallel_migrations, as `hzfast plan`'s default


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
    p.add_argument("-p", "--partitions", type=int, default=20_000)
    p.add_argument("-m", "--members", type=int, default=10)
    p.add_argument("-r", "--replicas", type=int, default=2)
    p.add_argument("--to-members", type=int, default=11, help="members after the change")
    p.add_argument("-k", "--keys", type=int, default=1_000_000, help="keys to place")
    p.add_argument("--value-bytes", type=int, default=1024, help="bytes per entry for the estimate")
    p.add_argument("--bandwidth-mb", type=float, default=100.0,
                   help="per-member link bandwidth in MB/s for the time estimate")
    p.add_argument("--no-spark", action="store_true", help="place keys with numpy, not Spark")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    """``hzfast demo``: a generated table, keys placed on local Spark, a what-if estimate.

    Parameters
    ----------
    args : argparse.Namespace
        ``partitions``, ``members``, ``replicas`` (the generated table), ``to_members``
        (the topology change), ``keys`` (keys ``0 .. keys - 1`` to place), ``value_bytes``
        and ``bandwidth_mb`` (the movement estimate), ``no_spark`` and ``json``.

    Returns
    -------
    int
        0. Prints the arguments, ``stamp``, ``plan`` (``hzfast plan``'s payload without its
        report), ``placement_seconds``, ``keys_per_owner`` and, on Spark, ``movement``
        (``spark_integration.estimate_movement(...).summary()`` with per-member bytes in
        and out).
    """
    from rich.progress import Progress

    payload: dict[str, Any] = {"partitions": args.partitions, "members": args.members,
                     "replicas": args.replicas, "keys": args.keys, "to_members": args.to_members}
    with Progress(transient=True, disable=args.json) as progress:
        task = progress.add_task("generating the table", total=4)
        table = balanced_table(args.partitions, args.members, args.replicas)
        payload["stamp"] = table.stamp
        progress.update(task, advance=1, description="planning the topology change")
        summary, current, target, _ = plan_payload(table, args.to_members, _MAX_PARALLEL)
        payload["plan"] = {k: v for k, v in summary.items() if k != "report"}
        progress.update(task, advance=1, description="starting local Spark")
        if args.no_spark:
            keys = np.arange(args.keys, dtype=np.int64)
            t0 = time.perf_counter()
            owners = table.locate(keys)
            payload["placement_seconds"] = round(time.perf_counter() - t0, 3)
            payload["keys_per_owner"] = np.bincount(owners, minlength=table.member_count).tolist()
            progress.update(task, advance=2)
        else:
            import spark_integration as si
            from pyspark.sql import functions as F
            spark = si.local_session()
            try:
                df = spark.range(args.keys).withColumnRenamed("id", "key")
                progress.update(task, advance=1, description=f"placing {args.keys:,} keys on Spark")
                t0 = time.perf_counter()
                placed = si.with_placement(df, "key", table)
                per_owner = {r["owner"]: r["count"] for r in
                             placed.groupBy("owner").count().collect()}
                payload["placement_seconds"] = round(time.perf_counter() - t0, 3)
                payload["keys_per_owner"] = [int(per_owner.get(m, 0))
                                             for m in range(table.member_count)]
                progress.update(task, advance=1, description="estimating data movement")
                sized = df.withColumn("bytes", F.lit(args.value_bytes))
                est = si.estimate_movement(sized, "key", current, target, size_col="bytes",
                                           bandwidth=args.bandwidth_mb * 1e6)
                payload["movement"] = est.summary()
                payload["movement"]["member_bytes_in"] = est.member_bytes_in.tolist()
                payload["movement"]["member_bytes_out"] = est.member_bytes_out.tolist()
            finally:
                spark.stop()

    def render(c: Console, p: dict[str, Any]) -> None:
        c.print(kv_table("hzfast demo", [(k, v) for k, v in p.items()
                                         if not isinstance(v, (dict, list))]))
        c.print(kv_table("plan", [(k, v) for k, v in p["plan"].items()
                                  if not isinstance(v, (dict, list))]))
        c.print(kv_table("keys per owner", enumerate(p["keys_per_owner"])))
        mv = p.get("movement")
        if isinstance(mv, dict):
            c.print(kv_table("what-if movement", [(k, v) for k, v in mv.items()
                                                  if not isinstance(v, (dict, list))]))

    emit(args, payload, render)
    return 0
