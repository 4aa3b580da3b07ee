"""The ``hzfast`` command line: the library's jobs from a shell.

Every sub-command prints a human-readable summary (rich tables) or, with
``--json``, one JSON document on stdout for machines.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import hzfast
from hzfast.members import Members
from hzfast.table import PartitionTable


# -- helpers --------------------------------------------------------------------

def _console():
    from rich.console import Console
    return Console(stderr=False)


def _emit(args, payload: dict, render) -> None:
    if args.json:
        json.dump(payload, sys.stdout, indent=2, default=_json_default)
        sys.stdout.write("\n")
    else:
        render(_console(), payload)


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _kv_table(title: str, rows):
    from rich.table import Table
    t = Table(title=title, show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value", justify="right")
    for k, v in rows:
        plain = "stamp" in str(k) or isinstance(v, bool)
        t.add_row(str(k), f"{v:,}" if isinstance(v, (int, np.integer)) and not plain else str(v))
    return t


def _balanced_table(partitions: int, members: int, replicas: int | None) -> PartitionTable:
    """A balanced table for ``members`` ordinary members, arranged from empty."""
    m = Members.from_count(members)
    R = min(members, hzfast.MAX_REPLICA_COUNT) if replicas is None else replicas
    target = hzfast.arrange(PartitionTable.empty(partitions, R, m), m, replica_count=R)
    return PartitionTable(target, None, m)


def _load_or_generate(args) -> PartitionTable:
    if getattr(args, "table", None):
        return PartitionTable.load(args.table)
    return _balanced_table(args.partitions, args.members, args.replicas)


def _topology_change(table: PartitionTable, to_members: int):
    """Current table after the change (repaired when members left) and the new target."""
    n = table.member_count
    if to_members < n:
        alive = np.arange(n) < to_members
        reps, vers = hzfast.repair(table.replicas, alive, table.versions)
        current = PartitionTable(reps, vers, table.members)
    else:
        current = table
    new_members = Members.from_count(max(to_members, n))
    if to_members < n:
        new_members = new_members.with_lite([i >= to_members for i in range(n)])
    current = current.replace(members=new_members)
    target = hzfast.arrange(current, new_members, replica_count=table.replica_count)
    return current, target


# -- sub-commands ---------------------------------------------------------------

def cmd_generate(args) -> int:
    t0 = time.perf_counter()
    table = _balanced_table(args.partitions, args.members, args.replicas)
    elapsed = time.perf_counter() - t0
    table.save(args.output)
    payload = {"output": args.output, "partitions": table.partition_count,
               "replicas": table.replica_count, "members": table.member_count,
               "stamp": table.stamp, "arrange_ms": round(elapsed * 1e3, 3)}
    _emit(args, payload, lambda c, p: c.print(_kv_table("generated table", p.items())))
    return 0


def cmd_stamp(args) -> int:
    table = _load_or_generate(args)
    payload = {"partitions": table.partition_count, "stamp": table.stamp,
               "stamp_hex_u64": f"{table.stamp & (2**64 - 1):016x}"}
    _emit(args, payload, lambda c, p: c.print(_kv_table("partition-table stamp", p.items())))
    return 0


def cmd_locate(args) -> int:
    table = _load_or_generate(args)
    keys: list = list(args.keys)
    if args.key_type in ("int", "long"):
        try:
            keys = [int(k) for k in keys]
        except ValueError:
            raise SystemExit(f"hzfast locate: --key-type {args.key_type} needs integer keys")
    if args.system == "ignite":
        pids = hzfast.ignite.partition_ids(keys, table.partition_count, args.key_type)
    else:
        pids = hzfast.partition_ids(keys, table.partition_count, args.key_type)
    rows = []
    for k, p in zip(keys, pids.tolist()):
        row = table.replicas[p]
        rows.append({"key": k, "partition": p, "owner": int(row[0]),
                     "owner_address": table.members[int(row[0])].address if row[0] >= 0 else None,
                     "backups": [int(x) for x in row[1:]]})

    def render(c, p):
        from rich.table import Table
        t = Table(title=f"{p['system']} placement over {p['partitions']:,} partitions")
        for col in ("key", "partition", "owner", "owner_address", "backups"):
            t.add_column(col)
        for r in p["keys"]:
            t.add_row(*(str(r[c]) for c in ("key", "partition", "owner", "owner_address", "backups")))
        c.print(t)

    _emit(args, {"system": args.system, "partitions": table.partition_count, "keys": rows}, render)
    return 0


def _plan_payload(args):
    table = _load_or_generate(args)
    t0 = time.perf_counter()
    current, target = _topology_change(table, args.to_members)
    t1 = time.perf_counter()
    plan = hzfast.plan_migrations(current, target)
    t2 = time.perf_counter()
    report = hzfast.arrangement_report(current.replicas, target, current.members)
    payload = {
        "partitions": table.partition_count, "replicas": table.replica_count,
        "from_members": table.member_count, "to_members": args.to_members,
        "arrange_ms": round((t1 - t0) * 1e3, 3), "plan_ms": round((t2 - t1) * 1e3, 3),
        "migrations": len(plan),
        "queued": int((~plan.instant).sum()), "instant": int(plan.instant.sum()),
        "by_kind": {k.name: int(v) for k, v in plan.counts().items()},
        "report": report.to_dict(),
    }
    schedule = getattr(hzfast, "schedule", None)
    if schedule is not None:
        sched = schedule(plan, max_parallel_migrations=args.max_parallel)
        payload["schedule_rounds"] = int(sched.rounds)
    return payload, current, target, plan


def cmd_plan(args) -> int:
    payload, current, target, plan = _plan_payload(args)

    def render(c, p):
        rows = [(k, v) for k, v in p.items() if k not in ("by_kind", "report")]
        c.print(_kv_table(f"{p['from_members']} -> {p['to_members']} members", rows))
        c.print(_kv_table("migrations by kind", p["by_kind"].items()))
        rep = {k: v for k, v in p["report"].items() if not isinstance(v, (list, dict))}
        c.print(_kv_table("arrangement", rep.items()))

    _emit(args, payload, render)
    if args.plot:
        _plot_plan(plan, current.member_count, args.plot)
    if args.output:
        with open(args.output, "w") as f:
            f.write(plan.to_json())
    return 0


def _plot_plan(plan, member_count: int, path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install 'hzfast[plot]'")
    incoming, outgoing = plan.member_counts(member_count)
    x = np.arange(member_count)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(x - 0.2, incoming, 0.4, label="in (destination)")
    ax.bar(x + 0.2, outgoing, 0.4, label="out (source)")
    ax.set_xlabel("member")
    ax.set_ylabel("migrations")
    ax.set_title(f"{len(plan):,} migrations per member")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def cmd_demo(args) -> int:
    """The main job: a generated table, keys placed on local Spark, a what-if estimate."""
    from rich.progress import Progress

    payload: dict = {"partitions": args.partitions, "members": args.members,
                     "replicas": args.replicas, "keys": args.keys, "to_members": args.to_members}
    with Progress(transient=True, disable=args.json) as progress:
        task = progress.add_task("generating the table", total=4)
        table = _balanced_table(args.partitions, args.members, args.replicas)
        payload["stamp"] = table.stamp
        progress.update(task, advance=1, description="planning the topology change")
        plan_payload, current, target, plan = _plan_payload(
            argparse.Namespace(table=None, partitions=args.partitions, members=args.members,
                               replicas=args.replicas, to_members=args.to_members,
                               max_parallel=10))
        payload["plan"] = {k: v for k, v in plan_payload.items() if k != "report"}
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

    def render(c, p):
        c.print(_kv_table("hzfast demo", [(k, v) for k, v in p.items()
                                          if not isinstance(v, (dict, list))]))
        c.print(_kv_table("plan", [(k, v) for k, v in p["plan"].items()
                                   if not isinstance(v, (dict, list))]))
        c.print(_kv_table("keys per owner", enumerate(p["keys_per_owner"])))
        mv = p.get("movement")
        if isinstance(mv, dict):
            c.print(_kv_table("what-if movement", [(k, v) for k, v in mv.items()
                                                   if not isinstance(v, (dict, list))]))

    _emit(args, payload, render)
    return 0


# -- parser ---------------------------------------------------------------------

def _add_table_args(p, *, members=10):
    p.add_argument("--table", help="a table saved by `hzfast generate` (.npz); "
                   "otherwise a balanced table is generated")
    p.add_argument("-p", "--partitions", type=int, default=20_000,
                   help="partitions of the generated table (default 20000)")
    p.add_argument("-m", "--members", type=int, default=members,
                   help=f"members of the generated table (default {members})")
    p.add_argument("-r", "--replicas", type=int, default=None,
                   help="replicas per partition (default min(members, 7))")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hzfast",
        description="Fast, bit-exact Hazelcast/Ignite partition tables: placement, stamps, "
                    "arrangement and migration plans.")
    parser.add_argument("--version", action="version", version=f"hzfast {hzfast.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p):
        p.add_argument("--json", action="store_true", help="print one JSON document")
        return p

    p = common(sub.add_parser("demo", help="the main job: generated table, keys placed on "
                              "local Spark, what-if movement for a topology change"))
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

    p = common(sub.add_parser("generate", help="write a balanced table to an .npz file"))
    p.add_argument("-p", "--partitions", type=int, default=20_000)
    p.add_argument("-m", "--members", type=int, default=10)
    p.add_argument("-r", "--replicas", type=int, default=None)
    p.add_argument("-o", "--output", required=True, help="output .npz path")
    p.set_defaults(func=cmd_generate)

    p = common(sub.add_parser("stamp", help="the Hazelcast stamp of a table's versions"))
    _add_table_args(p)
    p.set_defaults(func=cmd_stamp)

    p = common(sub.add_parser("locate", help="partition and owner of keys"))
    _add_table_args(p)
    p.add_argument("keys", nargs="+", help="keys (strings unless --key-type int/long)")
    p.add_argument("--key-type", choices=["string", "int", "long"], default="string")
    p.add_argument("--system", choices=["hazelcast", "ignite"], default="hazelcast")
    p.set_defaults(func=cmd_locate)

    p = common(sub.add_parser("plan", help="arrangement + migration plan for a topology change"))
    _add_table_args(p)
    p.add_argument("--to-members", type=int, required=True, help="members after the change")
    p.add_argument("--max-parallel", type=int, default=10,
                   help="max parallel migrations per member (schedule)")
    p.add_argument("--plot", help="write a per-member in/out bar chart (PNG)")
    p.add_argument("-o", "--output", help="write the plan as JSON to this file")
    p.set_defaults(func=cmd_plan)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError) as exc:
        parser.exit(2, f"hzfast {args.command}: error: {exc}\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
