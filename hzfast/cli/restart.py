"""Hot-restart what-ifs over persisted tables: ``restart-decision`` and ``restore``.

- ``hzfast restart-decision F...``: the partial-restart rule of Hazelcast 4.1 over several
  members' persisted tables (:func:`hzfast.persistence.restart_decision`): who restarts
  with its data and who is excluded;
- ``hzfast restore --table F --members-file M -o F2``: a persisted table restored by
  members that came back at other addresses (:func:`hzfast.persistence.rebind_addresses`):
  only the partitions they hold get a higher version.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from hzfast import persistence
from hzfast.cli._errors import UserError, check_output_path, flag
from hzfast.cli._inputs import load_members, load_table
from hzfast.cli._output import add_json_flag, emit, kv_table
from hzfast.cli.plan import write_table

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_restart_decision", "cmd_restore", "register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``restart-decision`` and ``restore`` to the ``hzfast`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = add_json_flag(subparsers.add_parser(
        "restart-decision",
        help="partial restart: which members restart with their persisted tables"))
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="each member's persisted table (hz41, hzlegacy, npz or JSON)")
    p.add_argument("--policy", choices=persistence.POLICIES, default="most-recent",
                   help="most-recent: the group with the greatest sum of partition versions; "
                        "most-complete: the largest group")
    p.set_defaults(func=cmd_restart_decision)

    p = add_json_flag(subparsers.add_parser(
        "restore", help="restore a persisted table for members now at other addresses"))
    p.add_argument("--table", metavar="FILE", required=True, help="the persisted table")
    p.add_argument("--members-file", metavar="FILE", required=True,
                   help="the members as they start now (uuid and address), JSON or CSV")
    p.add_argument("--legacy", action="store_true",
                   help="the legacy rule: one table version raised by every rewritten slot")
    p.add_argument("-o", "--output", metavar="FILE", required=True,
                   help="the restored table (.json: JSON, .bin: hz41, otherwise .npz)")
    p.set_defaults(func=cmd_restore)


def cmd_restart_decision(args: argparse.Namespace) -> int:
    """``hzfast restart-decision``: Hazelcast's partial-restart decision.

    Returns
    -------
    int
        0. Prints ``policy``, ``restart`` and ``excluded`` (the file names given) and
        ``groups``: per group of equal tables, ``files``, ``stamp`` and ``version_sum``.
    """
    if len(set(args.files)) != len(args.files):
        dup = next(f for f in args.files if args.files.count(f) > 1)
        raise UserError(f"FILE: {dup} is given twice")
    tables = [load_table(f, "FILE") for f in args.files]
    with flag("--policy"):
        d = persistence.restart_decision(tables, args.policy)
    names = list(args.files)
    payload: dict[str, Any] = {
        "policy": d.policy, "restart": [names[i] for i in d.restart],
        "excluded": [names[i] for i in d.excluded],
        "groups": [{"files": [names[i] for i in g], "stamp": s, "version_sum": v,
                    "chosen": k == d.chosen}
                   for k, (g, s, v) in enumerate(zip(d.groups, d.stamps, d.sums))]}

    def render(c: Console, p: dict[str, Any]) -> None:
        from rich.table import Table
        t = Table(title=f"partial restart, policy {p['policy']}")
        for col in ("group", "members (files)", "stamp", "version sum", "decision"):
            t.add_column(col, justify="right" if col in ("group", "version sum") else "left")
        for k, g in enumerate(p["groups"]):
            t.add_row(str(k), ", ".join(g["files"]), str(g["stamp"]), f"{g['version_sum']:,}",
                      "restart" if g["chosen"] else "excluded")
        c.print(t)
        c.print(f"restart: {', '.join(p['restart'])}", highlight=False, soft_wrap=True)
        c.print(f"excluded: {', '.join(p['excluded']) or '-'}", highlight=False, soft_wrap=True)

    emit(args, payload, render)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """``hzfast restore``: rebind a persisted table to the members' current addresses.

    Returns
    -------
    int
        0. Prints ``output``, ``members_moved`` (members whose address changed),
        ``partitions_bumped``, ``slots_rewritten``, ``stamp_before``, ``stamp_after``.
    """
    check_output_path(args.output, "-o/--output")
    table = load_table(args.table)
    members = load_members(args.members_file)
    with flag("--members-file", args.members_file):
        restored, per_partition = persistence.rebind_addresses(table, members,
                                                               legacy=args.legacy)
    write_table(args.output, restored, "-o/--output")
    moved = sum(a != b for a, b in zip(table.members.addresses, restored.members.addresses))
    payload = {"output": args.output, "members_moved": moved,
               "partitions_bumped": int((restored.versions != table.versions).sum()),
               "slots_rewritten": int(per_partition.sum()),
               "stamp_before": table.stamp, "stamp_after": restored.stamp}
    emit(args, payload, lambda c, p: c.print(kv_table("restored table", p.items())))
    return 0
