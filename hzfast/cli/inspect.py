"""Commands that compare and measure tables: ``diff``, ``report`` and ``arrange``.

Two tables compared by ``diff`` may come from different registries (members joined, or a
member restarted): members are matched by uuid, so an index means the same member on both
sides.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

import hzfast
from hzfast import persistence
from hzfast.cli._errors import UserError, check_output_path, flag
from hzfast.cli._inputs import add_table_args, load_or_generate, load_table
from hzfast.cli._output import add_json_flag, busy, emit, kv_table, ratio
from hzfast.cli.plan import GROUPINGS, write_table
from hzfast.members import Members
from hzfast.table import PartitionTable

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_arrange", "cmd_diff", "cmd_report", "register", "union_members"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``diff``, ``report`` and ``arrange`` to the ``hzfast`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = add_json_flag(subparsers.add_parser(
        "diff", help="what changes between two tables, per member and replica index"))
    p.add_argument("a", metavar="A", help="the first table file (any format)")
    p.add_argument("b", metavar="B", help="the second table file (any format)")
    p.set_defaults(func=cmd_diff)

    p = add_json_flag(subparsers.add_parser(
        "report", help="balance per member, group and replica index; changes vs lower bound"))
    add_table_args(p)
    p.add_argument("--target", metavar="FILE", default=None,
                   help="a table to measure against --table: slot changes against the proven "
                        "lower bound (default: --table's own balance)")
    p.add_argument("--grouping", choices=GROUPINGS, default="per_member",
                   help="what a member group is")
    p.set_defaults(func=cmd_report)

    p = add_json_flag(subparsers.add_parser(
        "arrange", help="the balanced, minimal-move target of a table, with its report"))
    add_table_args(p)
    p.add_argument("--grouping", choices=GROUPINGS, default="per_member",
                   help="what a member group is")
    p.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="write the target (.json: JSON, .bin: hz41, otherwise .npz), its "
                        "versions raised as the plan to reach it would (default: not written)")
    p.set_defaults(func=cmd_arrange)


def union_members(a: Members, b: Members) -> tuple[Members, NDArray[np.int32]]:
    """``a``'s members then ``b``'s that ``a`` lacks (by uuid), and where each of ``b``'s
    indices lands.

    Examples
    --------
    >>> both, where = union_members(Members.from_count(2), Members.from_count(3))
    >>> len(both), where.tolist()
    (3, [0, 1, 2])
    """
    index = {u: i for i, u in enumerate(a.uuids)}
    extra = [j for j, u in enumerate(b.uuids) if u not in index]
    where = np.array([index.get(u, -1) for u in b.uuids], dtype=np.int32)
    where[extra] = len(a) + np.arange(len(extra), dtype=np.int32)
    members = Members(list(a.addresses) + [b.addresses[j] for j in extra],
                      uuids=list(a.uuids) + [b.uuids[j] for j in extra],
                      hosts=list(a.hosts) + [b.hosts[j] for j in extra],
                      zones=list(a.zones) + [b.zones[j] for j in extra],
                      lite=list(a.lite) + [b.lite[j] for j in extra],
                      groups=list(a.groups) + [b.groups[j] for j in extra])
    return members, where


def _pad(reps: NDArray[np.int32], width: int) -> NDArray[np.int32]:
    out = np.full((reps.shape[0], width), -1, dtype=np.int32)
    out[:, :reps.shape[1]] = reps
    return out


def cmd_diff(args: argparse.Namespace) -> int:
    """``hzfast diff A B``: slot-by-slot comparison of two tables.

    Returns
    -------
    int
        0. Prints ``changed_slots``, ``changed_partitions`` (counts), ``changed_partition_ids``
        (JSON only), ``stamp_a``, ``stamp_b``, ``version_sum_a``/``_b``, ``replicas``
        (columns compared) and ``per_member``: ``member``, ``uuid``, ``address``, ``gained``
        and ``lost`` (slots per replica index).
    """
    ta, tb = load_table(args.a, "A"), load_table(args.b, "B")
    if ta.partition_count != tb.partition_count:
        raise UserError(f"B: {args.b}: {tb.partition_count:,} partitions, A has "
                        f"{ta.partition_count:,}: only tables of one partition count compare")
    with flag("B", args.b):
        members, where = union_members(ta.members, tb.members)
    R = max(ta.replica_count, tb.replica_count)
    a = _pad(ta.replicas, R)
    b = _pad(np.where(tb.replicas >= 0, where[np.maximum(tb.replicas, 0)], -1)
             .astype(np.int32), R)
    with busy("comparing"):
        d = hzfast.diff(a, b, member_count=len(members))
    per_member = [{"member": m, "uuid": members.uuids[m], "address": members.addresses[m],
                   "gained": d.gains[m].tolist(), "lost": d.losses[m].tolist()}
                  for m in range(len(members))]
    payload: dict[str, Any] = {
        "changed_slots": int(d.slot_moves), "changed_partitions": int(d.changed_partitions.size),
        "stamp_a": ta.stamp, "stamp_b": tb.stamp,
        "version_sum_a": persistence.table_sum(ta), "version_sum_b": persistence.table_sum(tb),
        "partitions": ta.partition_count, "replicas": R, "per_member": per_member}

    def render(c: Console, p: dict[str, Any]) -> None:
        from rich.table import Table
        c.print(kv_table(f"{args.a} -> {args.b}",
                         [(k, v) for k, v in p.items() if not isinstance(v, list)]))
        t = Table(title="slots gained / lost per replica index (0 = owner)")
        t.add_column("member")
        t.add_column("address")
        for r in range(R):
            t.add_column(f"#{r} +/-", justify="right")
        for row in p["per_member"]:
            if any(row["gained"]) or any(row["lost"]):
                t.add_row(str(row["member"]), row["address"],
                          *(f"+{g:,} / -{lo:,}" for g, lo in zip(row["gained"], row["lost"])))
        c.print(t)

    if args.json:
        payload["changed_partition_ids"] = d.changed_partitions.tolist()
    emit(args, payload, render)
    return 0


def _report_payload(current: PartitionTable, target: NDArray[np.int32], members: Members,
                    grouping: str) -> dict[str, Any]:
    """The report of ``target`` against ``current`` at the target's replica count."""
    with flag("--grouping"):
        rep = hzfast.arrangement_report(current.replicas, target, members, grouping=grouping,
                                        replica_count=int(target.shape[1]))
    d = rep.to_dict()
    d["excess_ratio"] = ratio(rep.excess_ratio)
    d["max_deviation"] = ratio(rep.max_deviation)
    d["member_max_deviation"] = ratio(rep.member_max_deviation)
    return d


def _render_report(c: Console, p: dict[str, Any], members: Members, title: str) -> None:
    from rich.table import Table
    c.print(kv_table(title, [(k, v) for k, v in p.items() if not isinstance(v, (list, dict))]))
    counts = p["member_counts"]
    if counts:
        t = Table(title="partitions per member and replica index (0 = owner)")
        t.add_column("member")
        t.add_column("address")
        for r in range(len(counts[0])):
            t.add_column(f"#{r}", justify="right")
        for m, row in enumerate(counts):
            t.add_row(str(m), members.addresses[m], *(f"{v:,}" for v in row))
        c.print(t)


def cmd_report(args: argparse.Namespace) -> int:
    """``hzfast report``: balance and slot changes (``hzfast.arrangement_report``).

    Returns
    -------
    int
        0. Prints the report's ``to_dict()`` (``slot_changes``, ``lower_bound``,
        ``excess_ratio`` rounded, ``member_counts``, ``group_counts``, ``balanced``,
        ``valid``, ...).
    """
    table = load_or_generate(args)
    target = table if args.target is None else load_table(args.target, "--target")
    if target.partition_count != table.partition_count:
        raise UserError(f"--target: {args.target}: {target.partition_count:,} partitions, "
                        f"--table has {table.partition_count:,}")
    members, where = union_members(table.members, target.members)
    if args.target is not None:
        # the target is judged by its own member list: a member it marks lite (one that
        # left) or lacks holds nothing there
        lite = [True] * len(members)
        for j, i in enumerate(where.tolist()):
            lite[i] = bool(target.members.lite[j])
        members = members.with_lite(lite)
    treps = np.where(target.replicas >= 0, where[np.maximum(target.replicas, 0)], -1)
    with busy("measuring"):
        payload = _report_payload(table, treps.astype(np.int32), members, args.grouping)
    emit(args, payload, lambda c, p: _render_report(c, p, members, "arrangement report"))
    return 0


def cmd_arrange(args: argparse.Namespace) -> int:
    """``hzfast arrange``: the target ``hzfast.arrange`` chooses for a table's members.

    Returns
    -------
    int
        0. Prints the report of the target against the table, plus ``migrations`` and
        ``target_stamp`` (the stamp once the plan to it is applied).
    """
    if args.output:
        check_output_path(args.output, "-o/--output")
    table = load_or_generate(args)
    with busy(f"arranging {table.partition_count:,} partitions"):
        with flag("--grouping"):
            target = hzfast.arrange(table, table.members, grouping=args.grouping,
                                    replica_count=table.replica_count)
        plan = hzfast.plan_migrations(table, target)
        reps, vers = hzfast.apply_migrations(table, None, plan)
        result = PartitionTable(reps, vers, table.members)
        payload = _report_payload(table, target, table.members, args.grouping)
    payload["migrations"] = len(plan)
    payload["target_stamp"] = result.stamp
    if args.output:
        write_table(args.output, result, "-o/--output")
    emit(args, payload, lambda c, p: _render_report(c, p, table.members, "arranged target"))
    return 0
