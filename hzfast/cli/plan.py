"""``hzfast plan``: arrangement, migration plan and schedule for a change of member count.

With ``--plot`` it also draws the per-member in/out chart (matplotlib, imported only then).
"""
from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

import hzfast
from hzfast.cli._inputs import add_table_args, load_or_generate
from hzfast.cli._output import add_json_flag, emit, kv_table
from hzfast.members import Members
from hzfast.migration.plan import MigrationPlan
from hzfast.table import PartitionTable

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_plan", "plan_payload", "plot_plan", "register", "topology_change"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``plan`` to the ``hzfast`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = add_json_flag(subparsers.add_parser(
        "plan", help="arrangement + migration plan for a topology change"))
    add_table_args(p)
    p.add_argument("--to-members", type=int, required=True, help="members after the change")
    p.add_argument("--max-parallel", type=int, default=10,
                   help="max parallel migrations per member (schedule)")
    p.add_argument("--plot", help="write a per-member in/out bar chart (PNG)")
    p.add_argument("-o", "--output", help="write the plan as JSON to this file")
    p.set_defaults(func=cmd_plan)


def topology_change(table: PartitionTable, to_members: int
                    ) -> tuple[PartitionTable, NDArray[np.int32]]:
    """The table as it stands after the member count changes, and the target to migrate to.

    Members ``0 .. to_members - 1`` stay. When members leave, their slots are emptied and
    backups promoted (``hzfast.repair``), and they stay in the registry as lite members
    (holding nothing); when members join, they are appended.

    Parameters
    ----------
    table : PartitionTable
        The table before the change.
    to_members : int
        Members after the change.

    Returns
    -------
    current : PartitionTable
        The table after the change (repaired when members left), with the new registry.
    target : ndarray[int32] of shape (P, R)
        ``hzfast.arrange(current, ...)`` at the table's replica count.

    Raises
    ------
    ValueError
        From the library, e.g. when no member is left to hold partitions.

    Examples
    --------
    >>> from hzfast.cli._inputs import balanced_table
    >>> current, target = topology_change(balanced_table(271, 4, 2), 3)
    >>> current.member_count, [m.lite for m in current.members], int((target == 3).sum())
    (4, [False, False, False, True], 0)
    """
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


def plan_payload(table: PartitionTable, to_members: int, max_parallel: int
                 ) -> tuple[dict[str, Any], PartitionTable, NDArray[np.int32], MigrationPlan]:
    """Change ``table``'s member count, plan the migrations and schedule them.

    Parameters
    ----------
    table : PartitionTable
        The table before the change.
    to_members : int
        Members after the change (see :func:`topology_change`).
    max_parallel : int
        ``max_parallel_migrations`` of ``hzfast.schedule``.

    Returns
    -------
    payload : dict
        ``partitions``, ``replicas``, ``from_members``, ``to_members``, ``arrange_ms``,
        ``plan_ms``, ``migrations``, ``queued``, ``instant``, ``by_kind`` (count per
        ``MigrationKind`` name), ``report`` (``hzfast.arrangement_report(...).to_dict()``)
        and ``schedule_rounds``.
    current : PartitionTable
        The table after the change, before migrating.
    target : ndarray[int32] of shape (P, R)
        The arranged target.
    plan : MigrationPlan
        ``hzfast.plan_migrations(current, target)``.

    Examples
    --------
    >>> from hzfast.cli._inputs import balanced_table
    >>> payload, current, target, plan = plan_payload(balanced_table(271, 3, 2), 4, 10)
    >>> payload["migrations"] == len(plan) == sum(payload["by_kind"].values())
    True
    """
    t0 = time.perf_counter()
    current, target = topology_change(table, to_members)
    t1 = time.perf_counter()
    plan = hzfast.plan_migrations(current, target)
    t2 = time.perf_counter()
    report = hzfast.arrangement_report(current.replicas, target, current.members)
    payload = {
        "partitions": table.partition_count, "replicas": table.replica_count,
        "from_members": table.member_count, "to_members": to_members,
        "arrange_ms": round((t1 - t0) * 1e3, 3), "plan_ms": round((t2 - t1) * 1e3, 3),
        "migrations": len(plan),
        "queued": int((~plan.instant).sum()), "instant": int(plan.instant.sum()),
        "by_kind": {k.name: int(v) for k, v in plan.counts().items()},
        "report": report.to_dict(),
    }
    sched = hzfast.schedule(plan, max_parallel_migrations=max_parallel)
    assert sched.rounds is not None   # unit durations: rounds
    payload["schedule_rounds"] = int(sched.rounds)
    return payload, current, target, plan


def cmd_plan(args: argparse.Namespace) -> int:
    """``hzfast plan``: the migrations a change of member count needs.

    Parameters
    ----------
    args : argparse.Namespace
        The table flags (:func:`hzfast.cli._inputs.add_table_args`), ``to_members``,
        ``max_parallel``, ``plot`` (PNG path or ``None``), ``output`` (JSON path or
        ``None``) and ``json``.

    Returns
    -------
    int
        0. Prints :func:`plan_payload`'s payload, then writes the chart (``--plot``) and
        ``MigrationPlan.to_json()`` (``-o``).
    """
    payload, current, target, plan = plan_payload(load_or_generate(args), args.to_members,
                                                  args.max_parallel)

    def render(c: Console, p: dict[str, Any]) -> None:
        rows = [(k, v) for k, v in p.items() if k not in ("by_kind", "report")]
        c.print(kv_table(f"{p['from_members']} -> {p['to_members']} members", rows))
        c.print(kv_table("migrations by kind", p["by_kind"].items()))
        rep = {k: v for k, v in p["report"].items() if not isinstance(v, (list, dict))}
        c.print(kv_table("arrangement", rep.items()))

    emit(args, payload, render)
    if args.plot:
        plot_plan(plan, current.member_count, args.plot)
    if args.output:
        with open(args.output, "w") as f:
            f.write(plan.to_json())
    return 0


def plot_plan(plan: MigrationPlan, member_count: int, path: str) -> None:
    """Write a bar chart of each member's incoming and outgoing migrations (PNG).

    Parameters
    ----------
    plan : MigrationPlan
        The plan to draw.
    member_count : int
        Members on the x axis (``plan.member_counts(member_count)``).
    path : str
        Where to save the PNG.

    Raises
    ------
    SystemExit
        With an install hint if matplotlib is missing.
    """
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
