"""Commands on one table: ``generate`` writes it, ``stamp`` fingerprints it, ``locate`` reads it."""
from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

import hzfast
from hzfast.cli._inputs import add_table_args, balanced_table, load_or_generate
from hzfast.cli._output import add_json_flag, emit, kv_table

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_generate", "cmd_locate", "cmd_stamp", "register"]

_LOCATE_COLUMNS = ("key", "partition", "owner", "owner_address", "backups")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``generate``, ``stamp`` and ``locate`` to the ``hzfast`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned; the commands are added in this order.
    """
    p = add_json_flag(subparsers.add_parser("generate",
                                            help="write a balanced table to an .npz file"))
    p.add_argument("-p", "--partitions", type=int, default=20_000)
    p.add_argument("-m", "--members", type=int, default=10)
    p.add_argument("-r", "--replicas", type=int, default=None)
    p.add_argument("-o", "--output", required=True, help="output .npz path")
    p.set_defaults(func=cmd_generate)

    p = add_json_flag(subparsers.add_parser("stamp",
                                            help="the Hazelcast stamp of a table's versions"))
    add_table_args(p)
    p.set_defaults(func=cmd_stamp)

    p = add_json_flag(subparsers.add_parser("locate", help="partition and owner of keys"))
    add_table_args(p)
    p.add_argument("keys", nargs="+", help="keys (strings unless --key-type int/long)")
    p.add_argument("--key-type", choices=["string", "int", "long"], default="string")
    p.add_argument("--system", choices=["hazelcast", "ignite"], default="hazelcast")
    p.set_defaults(func=cmd_locate)


def cmd_generate(args: argparse.Namespace) -> int:
    """``hzfast generate``: arrange a balanced table and save it as ``.npz``.

    Parameters
    ----------
    args : argparse.Namespace
        ``partitions``, ``members``, ``replicas`` (see
        :func:`hzfast.cli._inputs.balanced_table`), ``output`` (the path) and ``json``.

    Returns
    -------
    int
        0. Prints ``output``, ``partitions``, ``replicas``, ``members``, ``stamp`` and
        ``arrange_ms`` (the time to arrange, not to save).
    """
    t0 = time.perf_counter()
    table = balanced_table(args.partitions, args.members, args.replicas)
    elapsed = time.perf_counter() - t0
    table.save(args.output)
    payload = {"output": args.output, "partitions": table.partition_count,
               "replicas": table.replica_count, "members": table.member_count,
               "stamp": table.stamp, "arrange_ms": round(elapsed * 1e3, 3)}
    emit(args, payload, lambda c, p: c.print(kv_table("generated table", p.items())))
    return 0


def cmd_stamp(args: argparse.Namespace) -> int:
    """``hzfast stamp``: the Hazelcast stamp of a table's versions.

    Parameters
    ----------
    args : argparse.Namespace
        The table flags (:func:`hzfast.cli._inputs.add_table_args`) and ``json``.

    Returns
    -------
    int
        0. Prints ``partitions``, ``stamp`` (a signed 64-bit int, as ``hzfast.stamp``) and
        ``stamp_hex_u64`` (the same bits as 16 hex digits).
    """
    table = load_or_generate(args)
    payload = {"partitions": table.partition_count, "stamp": table.stamp,
               "stamp_hex_u64": f"{table.stamp & (2**64 - 1):016x}"}
    emit(args, payload, lambda c, p: c.print(kv_table("partition-table stamp", p.items())))
    return 0


def cmd_locate(args: argparse.Namespace) -> int:
    """``hzfast locate``: the partition, owner and backups of each key.

    Parameters
    ----------
    args : argparse.Namespace
        The table flags, ``keys`` (strings from the command line), ``key_type``
        (``string``, ``int`` or ``long``: how keys are hashed), ``system`` (``hazelcast``
        or ``ignite``: whose key-to-partition rule) and ``json``.

    Returns
    -------
    int
        0. Prints ``system``, ``partitions`` and ``keys``: per key, ``key``, ``partition``,
        ``owner`` (member index), ``owner_address`` (``None`` for an empty slot) and
        ``backups`` (member indices, ``-1`` for empty slots).

    Raises
    ------
    SystemExit
        With a message (exit status 1) if ``--key-type`` is ``int``/``long`` and a key is
        not an integer.
    """
    table = load_or_generate(args)
    keys: list[Any] = list(args.keys)
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
