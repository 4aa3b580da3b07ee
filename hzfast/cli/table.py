"""Commands on one table: ``generate`` writes it, ``stamp`` fingerprints it, ``locate`` reads
it, ``export`` converts it (npz, JSON, Hazelcast's persisted hz41 and hzlegacy layouts)."""
from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

import numpy as np

import hzfast
from hzfast import persistence
from hzfast.cli._errors import UserError, check_output_path, flag
from hzfast.cli._inputs import (
    add_table_args,
    balanced_table,
    load_members,
    load_or_generate,
)
from hzfast.cli._output import add_json_flag, busy, emit, kv_table

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_export", "cmd_generate", "cmd_locate", "cmd_stamp", "register"]

_LOCATE_COLUMNS = ("key", "partition", "owner", "owner_address", "backups")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``generate``, ``stamp``, ``locate`` and ``export`` to the ``hzfast`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned; the commands are added in this order.
    """
    p = add_json_flag(subparsers.add_parser("generate",
                                            help="write a balanced table to an .npz file"))
    p.add_argument("-p", "--partitions", type=int, default=20_000,
                   help="partitions (default 20000)")
    p.add_argument("-m", "--members", type=int, default=10, help="members (default 10)")
    p.add_argument("-r", "--replicas", type=int, default=None,
                   help="replicas per partition (default min(members, 7))")
    p.add_argument("--members-file", metavar="FILE", default=None,
                   help="the members, JSON or CSV (uuid, address, host, zone, lite, group); "
                        "-m is then their count (default: -m plain members)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="output path (.json: JSON, .bin: hz41, otherwise .npz)")
    p.set_defaults(func=cmd_generate)

    p = add_json_flag(subparsers.add_parser("stamp",
                                            help="the Hazelcast stamp of a table's versions"))
    add_table_args(p)
    p.set_defaults(func=cmd_stamp)

    p = add_json_flag(subparsers.add_parser("locate", help="partition and owner of keys"))
    add_table_args(p)
    p.add_argument("keys", nargs="+", help="keys (strings unless --key-type int/long)")
    p.add_argument("--key-type", choices=["string", "int", "long"], default="string",
                   help="how keys are hashed: Java String, Integer or Long")
    p.add_argument("--system", choices=["hazelcast", "ignite"], default="hazelcast",
                   help="hazelcast: the table's replicas; ignite: Ignite's key -> partition "
                        "rule and a rendezvous assignment (hzfast.ignite.assign) of the "
                        "table's data members (consistent ids: their uuids)")
    p.set_defaults(func=cmd_locate)

    p = add_json_flag(subparsers.add_parser(
        "export", help="write a table as npz, JSON or a persisted hz41/hzlegacy layout"))
    add_table_args(p)
    p.add_argument("--format", choices=persistence.FORMATS, required=True,
                   help="hz41: Hazelcast 4.1's layout (a version per partition); hzlegacy: "
                        "the layout before 4.1 (one table version); see docs/persistence.md")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output path")
    p.set_defaults(func=cmd_export)


def cmd_generate(args: argparse.Namespace) -> int:
    """``hzfast generate``: arrange a balanced table and save it.

    Returns
    -------
    int
        0. Prints ``output``, ``partitions``, ``replicas``, ``members``, ``stamp`` and
        ``arrange_ms`` (the time to arrange, not to save).
    """
    from hzfast.cli.plan import write_table
    check_output_path(args.output, "-o/--output")
    members: Any = args.members
    if args.members_file:
        members = load_members(args.members_file)
    t0 = time.perf_counter()
    with busy(f"arranging {args.partitions:,} partitions"):
        table = balanced_table(args.partitions, members, args.replicas)
    elapsed = time.perf_counter() - t0
    write_table(args.output, table, "-o/--output")
    payload = {"output": args.output, "partitions": table.partition_count,
               "replicas": table.replica_count, "members": table.member_count,
               "stamp": table.stamp, "arrange_ms": round(elapsed * 1e3, 3)}
    emit(args, payload, lambda c, p: c.print(kv_table("generated table", p.items())))
    return 0


def cmd_stamp(args: argparse.Namespace) -> int:
    """``hzfast stamp``: the Hazelcast stamp of a table's versions.

    Returns
    -------
    int
        0. Prints ``partitions``, ``stamp`` (a signed 64-bit int, as ``hzfast.stamp``),
        ``stamp_hex_u64`` (the same bits as 16 hex digits) and ``version_sum`` (what partial
        restart orders tables by).
    """
    table = load_or_generate(args)
    payload = {"partitions": table.partition_count, "stamp": table.stamp,
               "stamp_hex_u64": f"{table.stamp & (2**64 - 1):016x}",
               "version_sum": persistence.table_sum(table)}
    emit(args, payload, lambda c, p: c.print(kv_table("partition-table stamp", p.items())))
    return 0


def _keys(args: argparse.Namespace) -> list[Any]:
    keys: list[Any] = list(args.keys)
    if args.key_type in ("int", "long"):
        lo, hi = (-2**31, 2**31 - 1) if args.key_type == "int" else (-2**63, 2**63 - 1)
        out = []
        for k in keys:
            try:
                v = int(k)
            except ValueError:
                raise UserError(f"--key-type {args.key_type}: key {k!r} is not an integer") \
                    from None
            if not lo <= v <= hi:
                raise UserError(f"--key-type {args.key_type}: key {k} is outside the Java "
                                f"{'Integer' if args.key_type == 'int' else 'Long'} range")
            out.append(v)
        keys = out
    return keys


def cmd_locate(args: argparse.Namespace) -> int:
    """``hzfast locate``: the partition, owner and backups of each key.

    With ``--system ignite`` the partition is Ignite's (``hzfast.ignite.partition_ids``) and
    the owner and backups come from ``hzfast.ignite.assign`` over the table's data members
    (consistent ids: their uuids; backups: the table's replicas - 1), not from the table.

    Returns
    -------
    int
        0. Prints ``system``, ``partitions`` and ``keys``: per key, ``key``, ``partition``,
        ``owner`` (member index), ``owner_address`` (``None`` for an empty slot) and
        ``backups`` (member indices, ``-1`` for empty slots).

    Raises
    ------
    UserError
        A key that is not an integer (or out of range) with ``--key-type int``/``long``.
    """
    keys = _keys(args)
    table = load_or_generate(args)
    key_type = None if args.key_type == "string" else args.key_type
    if args.system == "ignite":
        data = table.members.data_members()
        if not data.size:
            raise UserError("--system ignite: the table has no data members to assign")
        with flag("-p/--partitions"):
            pids = hzfast.ignite.partition_ids(keys, table.partition_count, key_type)
            nodes = hzfast.ignite.assign([table.members.uuids[int(i)] for i in data],
                                         partitions=table.partition_count,
                                         backups=table.replica_count - 1)
        rows_of = data[nodes]
    else:
        with flag("keys"):
            pids = hzfast.partition_ids(keys, table.partition_count, key_type)
        rows_of = table.replicas
    width = table.replica_count
    rows = []
    for k, p in zip(keys, pids.tolist()):
        row = np.full(width, -1, dtype=np.int64)
        row[:rows_of.shape[1]] = rows_of[p]
        rows.append({"key": k, "partition": p, "owner": int(row[0]),
                     "owner_address": table.members[int(row[0])].address if row[0] >= 0 else None,
                     "backups": [int(x) for x in row[1:]]})

    def render(c: Console, p: dict[str, Any]) -> None:
        from rich.table import Table
        t = Table(title=f"{p['system']} placement over {p['partitions']:,} partitions")
        for col in _LOCATE_COLUMNS:
            t.add_column(col)
        for r in p["keys"]:
            t.add_row(*(str(r[col]) for col in _LOCATE_COLUMNS))
        c.print(t)

    emit(args, {"system": args.system, "partitions": table.partition_count, "keys": rows}, render)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``hzfast export``: write a table in another format.

    Returns
    -------
    int
        0. Prints ``output``, ``format``, ``bytes``, ``partitions``, ``stamp`` and
        ``version_sum``; for ``hzlegacy`` also ``table_version`` and, when the versions
        differ (the layout keeps only the largest), ``note``.
    """
    check_output_path(args.output, "-o/--output")
    table = load_or_generate(args)
    with flag("--format"):
        try:
            persistence.write_table(args.output, table, args.format)
        except OSError as exc:
            raise UserError(f"-o/--output: {args.output}: {exc.strerror or exc}") from None
    import os
    payload: dict[str, Any] = {
        "output": args.output, "format": args.format, "bytes": os.path.getsize(args.output),
        "partitions": table.partition_count, "stamp": table.stamp,
        "version_sum": persistence.table_sum(table)}
    if args.format == "hzlegacy":
        payload["table_version"] = int(table.versions.max())
        if (table.versions != table.versions[0]).any():
            payload["note"] = ("the partition versions differ; the legacy layout keeps one "
                               "table version, the largest")
    emit(args, payload, lambda c, p: c.print(kv_table("exported table", p.items())))
    return 0
