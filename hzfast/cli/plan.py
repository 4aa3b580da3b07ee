"""The plan workflow: ``plan`` -> ``apply`` / ``verify`` -> ``schedule`` over JSON plan files.

- ``hzfast plan``: the members that change (``--leave``, ``--crash``, ``--join``, or
  ``--to-members``), the arranged target, Hazelcast's migration plan and its schedule;
  ``-o`` writes the plan file, ``--target`` the table it leads to, ``--plot`` a chart;
- ``hzfast apply``: replays a plan file on a table with every check, versions raised as
  Hazelcast raises them, and writes the result;
- ``hzfast verify``: whether a plan file still applies to a table (exit 0) or not (exit 1,
  the reason on one line), like Kafka's ``--verify``;
- ``hzfast schedule``: when each migration runs under Hazelcast 4.1's parallel-migration
  rules (rounds, or seconds with sizes and a bandwidth), with a Gantt chart.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

import hzfast
from hzfast import persistence
from hzfast.cli._errors import UserError, check_output_path, flag
from hzfast.cli._inputs import (
    PlanFile,
    add_table_args,
    load_members,
    load_or_generate,
    load_plan,
    load_sizes,
    load_table,
    member_ids,
)
from hzfast.cli._output import (
    add_json_flag,
    busy,
    emit,
    human_bytes,
    human_seconds,
    kv_table,
    ratio,
)
from hzfast.members import Members
from hzfast.migration.plan import MigrationPlan
from hzfast.table import PartitionTable

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Change", "Replay", "cmd_apply", "cmd_plan", "cmd_schedule", "cmd_verify",
           "output_format", "plan_payload", "register", "replay", "topology_change"]

GROUPINGS = ("per_member", "host", "zone", "custom")
DEFAULT_MAX_PARALLEL = 10   # Hazelcast's hazelcast.partition.max.parallel.migrations


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``plan``, ``apply``, ``verify`` and ``schedule`` to the ``hzfast`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = add_json_flag(subparsers.add_parser(
        "plan", help="arrangement + migration plan for a topology change"))
    add_table_args(p)
    change = p.add_argument_group("the change (--to-members, or any of --leave/--crash/--join)")
    change.add_argument("--leave", nargs="+", metavar="ID", default=None,
                        help="members that shut down gracefully (index, address or uuid): "
                             "their replicas migrate away first")
    change.add_argument("--crash", nargs="+", metavar="ID", default=None,
                        help="members that crash (index, address or uuid): their slots are "
                             "emptied and backups promoted before migrating")
    change.add_argument("--join", metavar="MEMBERS_FILE", default=None,
                        help="members that join, a members file (JSON or CSV)")
    change.add_argument("--to-members", type=int, default=None,
                        help="data members after the change: the highest-numbered crash, or "
                             "new plain members join")
    p.add_argument("--grouping", choices=GROUPINGS, default="per_member",
                   help="what a member group is: at most one replica per group")
    p.add_argument("--max-parallel", type=int, default=DEFAULT_MAX_PARALLEL,
                   help="max parallel migrations per member, for the schedule")
    p.add_argument("--plot", metavar="PNG", help="write a per-member in/out bar chart (PNG)")
    p.add_argument("-o", "--output", metavar="PLAN.json",
                   help="write the plan file (JSON: every migration, the target, the stamp "
                        "of the table it was made for)")
    p.add_argument("--target", metavar="FILE",
                   help="write the table the plan leads to (.json: JSON, .bin: hz41, "
                        "otherwise .npz)")
    p.set_defaults(func=cmd_plan)

    p = add_json_flag(subparsers.add_parser(
        "apply", help="replay a plan file on a table, every step checked, and write it"))
    p.add_argument("--table", metavar="FILE", required=True, help="the table the plan is for")
    p.add_argument("--plan", metavar="PLAN.json", required=True, help="a plan file")
    p.add_argument("-o", "--output", metavar="FILE", required=True,
                   help="the resulting table (.json: JSON, .bin: hz41, otherwise .npz)")
    p.set_defaults(func=cmd_apply)

    p = add_json_flag(subparsers.add_parser(
        "verify", help="does a plan file still apply to a table? (exit 0 yes, 1 no)"))
    p.add_argument("--table", metavar="FILE", required=True, help="the table to check")
    p.add_argument("--plan", metavar="PLAN.json", required=True, help="a plan file")
    p.set_defaults(func=cmd_verify)

    p = add_json_flag(subparsers.add_parser(
        "schedule", help="when each migration of a plan runs (rounds or seconds), Gantt chart"))
    p.add_argument("--table", metavar="FILE", required=True, help="the table the plan is for")
    p.add_argument("--plan", metavar="PLAN.json", required=True, help="a plan file")
    p.add_argument("--max-parallel", type=int, default=DEFAULT_MAX_PARALLEL,
                   help="max parallel migrations per member")
    p.add_argument("--sizes", metavar="SIZES.npy", default=None,
                   help="bytes per partition (.npy or a JSON list); with --bandwidth the "
                        "schedule is in seconds (default: unit durations, rounds)")
    p.add_argument("--bandwidth", metavar="MBPS", type=float, default=None,
                   help="MB/s (10^6 bytes) per migration, with --sizes (default: none)")
    p.add_argument("--policy", choices=hzfast.SCHEDULE_POLICIES, default="hazelcast",
                   help="the order queue heads are examined in")
    p.add_argument("--plot", metavar="PNG", help="write a Gantt chart (PNG)")
    p.set_defaults(func=cmd_schedule)


def output_format(path: str) -> str:
    """The table format to write ``path`` in: ``.json`` JSON, ``.bin`` hz41, else ``npz``.

    Examples
    --------
    >>> output_format("t.json"), output_format("T.BIN"), output_format("t.npz")
    ('json', 'hz41', 'npz')
    """
    low = path.lower()
    return "json" if low.endswith(".json") else "hz41" if low.endswith(".bin") else "npz"


def write_table(path: str, table: PartitionTable, name: str) -> None:
    """Write ``table`` to ``path`` (format from its suffix); errors name ``name``."""
    with flag(name, path):
        try:
            persistence.write_table(path, table, output_format(path))
        except OSError as exc:
            raise UserError(f"{name}: {path}: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------- plan
@dataclass(frozen=True)
class Change:
    """A topology change: the table as migrations start, and where they lead."""

    current: PartitionTable           #: after the repair of crashed members, new registry
    target: NDArray[np.int32]         #: the arranged target
    left: list[int]                   #: members that left gracefully
    crashed: list[int]                #: members removed by the repair
    joined: int                       #: members appended to the registry


def _joined(members: Members, new: Members, name: str = "--join") -> Members:
    uuids = set(members.uuids)
    addrs = set(members.addresses)
    for m in new:
        if m.uuid in uuids:
            raise UserError(f"{name}: member uuid {m.uuid} is already in the table")
        if m.address in addrs:
            raise UserError(f"{name}: address {m.address} is already in the table")
    return Members(list(members.addresses) + list(new.addresses),
                   uuids=list(members.uuids) + list(new.uuids),
                   hosts=list(members.hosts) + list(new.hosts),
                   zones=list(members.zones) + list(new.zones),
                   lite=list(members.lite) + list(new.lite),
                   groups=list(members.groups) + list(new.groups))


def topology_change(table: PartitionTable, to_members: int | None = None, *,
                    leave: list[int] | None = None, crash: list[int] | None = None,
                    join: Members | None = None, grouping: str = "per_member") -> Change:
    """Apply a change of members to ``table`` and arrange the target.

    Crashed members (and, with ``to_members`` below the member count, members
    ``to_members..``) have their slots emptied and backups promoted (``hzfast.repair``);
    members that leave gracefully keep their replicas until migrations move them away;
    joining members (or ``to_members`` above the count) are appended. Members that leave
    or crash stay in the registry as lite members, holding nothing in the target.

    Parameters
    ----------
    table : PartitionTable
        The table before the change.
    to_members : int, optional
        Data members after the change (not with the other arguments).
    leave, crash : list of int, optional
        Member indices.
    join : Members, optional
        Members that join.
    grouping : str, default "per_member"
        As for ``hzfast.arrange``.

    Returns
    -------
    Change

    Examples
    --------
    >>> from hzfast.cli._inputs import balanced_table
    >>> c = topology_change(balanced_table(271, 4, 2), 3)
    >>> c.current.member_count, [m.lite for m in c.current.members], int((c.target == 3).sum())
    (4, [False, False, False, True], 0)
    """
    n = table.member_count
    leave, crash = list(leave or []), list(crash or [])
    joined = 0
    members = table.members
    if to_members is not None:
        if to_members < 1:
            raise UserError(f"--to-members: must be >= 1, got {to_members}")
        if to_members < n:
            crash = list(range(to_members, n))
        elif to_members > n:
            join = Members.from_count(to_members)
            join = Members(join.addresses[n:], uuids=join.uuids[n:])
    both = sorted(set(leave) & set(crash))
    if both:
        raise UserError(f"--leave/--crash: member {both[0]} cannot both leave and crash")
    lite = members.lite.copy()
    lite[leave + crash] = True
    reps, vers = table.replicas, table.versions
    if crash:
        alive = np.ones(n, dtype=bool)
        alive[crash] = False
        reps, vers = hzfast.repair(reps, alive, vers)
    members = members.with_lite(lite.tolist())
    if join is not None:
        members = _joined(members, join, "--join" if to_members is None else "--to-members")
        joined = len(join)
    if not (~members.lite).any():
        raise UserError("--leave/--crash: no data member would be left to hold partitions")
    current = PartitionTable(reps, vers, members)
    with flag("--grouping"):
        target = hzfast.arrange(current, members, grouping=grouping,
                                replica_count=table.replica_count)
    return Change(current, target, sorted(leave), sorted(crash), joined)


def plan_payload(table: PartitionTable, change: Change, max_parallel: int,
                 grouping: str = "per_member"
                 ) -> tuple[dict[str, Any], MigrationPlan, PartitionTable]:
    """Plan and schedule a change.

    Returns
    -------
    payload : dict
        ``partitions``, ``replicas``, ``from_members``, ``to_members`` (data members after
        the change), ``left``, ``crashed``, ``joined``, ``plan_ms``, ``migrations``,
        ``queued``, ``instant``, ``by_kind``, ``report``
        (``hzfast.arrangement_report(...).to_dict()``), ``schedule_rounds``,
        ``base_stamp`` (the table given) and ``target_stamp`` (after the plan).
    plan : MigrationPlan
    result : PartitionTable
        The table once the plan is applied (the new registry).
    """
    if max_parallel < 1:
        raise UserError(f"--max-parallel: must be >= 1, got {max_parallel}")
    t0 = time.perf_counter()
    plan = hzfast.plan_migrations(change.current, change.target)
    t1 = time.perf_counter()
    reps, vers = hzfast.apply_migrations(change.current, None, plan)
    result = PartitionTable(reps, vers, change.current.members)
    report = hzfast.arrangement_report(change.current.replicas, change.target,
                                       change.current.members, grouping=grouping,
                                       replica_count=table.replica_count)
    with flag("--max-parallel"):
        sched = hzfast.schedule(plan, change.current, max_parallel_migrations=max_parallel)
    assert sched.rounds is not None   # unit durations: rounds
    members = change.current.members
    payload: dict[str, Any] = {
        "partitions": table.partition_count, "replicas": table.replica_count,
        "from_members": int((~table.members.lite).sum()),
        "to_members": int((~members.lite).sum()),
        "left": change.left, "crashed": change.crashed, "joined": change.joined,
        "plan_ms": round((t1 - t0) * 1e3, 3),
        "migrations": len(plan),
        "queued": int((~plan.instant).sum()), "instant": int(plan.instant.sum()),
        "by_kind": {k.name: int(v) for k, v in plan.counts().items()},
        "report": report.to_dict(),
        "schedule_rounds": int(sched.rounds),
        "base_stamp": table.stamp, "target_stamp": result.stamp,
    }
    return payload, plan, result


def cmd_plan(args: argparse.Namespace) -> int:
    """``hzfast plan``: the migrations a change of members needs.

    Parameters
    ----------
    args : argparse.Namespace
        The table flags, the change (``leave``, ``crash``, ``join``, ``to_members``),
        ``grouping``, ``max_parallel``, ``plot``, ``output``, ``target`` and ``json``.

    Returns
    -------
    int
        0. Prints :func:`plan_payload`'s payload (plus ``plot`` with ``--plot``), then
        writes the plan file (``-o``), the target table (``--target``) and the chart.

    Raises
    ------
    UserError
        No change or ``--to-members`` with another change, unknown members, unwritable
        outputs, a library rejection, naming the flag.
    """
    named = [f for f, v in (("--leave", args.leave), ("--crash", args.crash),
                            ("--join", args.join)) if v]
    if args.to_members is not None and named:
        raise UserError(f"--to-members: not with {named[0]} (name the members instead)")
    if args.to_members is None and not named:
        raise UserError("plan: give the change: --leave ID..., --crash ID..., --join FILE "
                        "or --to-members N")
    for path, name in ((args.output, "-o/--output"), (args.target, "--target"),
                       (args.plot, "--plot")):
        if path:
            check_output_path(path, name)
    with busy("reading the table"):
        table = load_or_generate(args)
    leave = member_ids(args.leave, table.members, "--leave") if args.leave else None
    crash = member_ids(args.crash, table.members, "--crash") if args.crash else None
    join = load_members(args.join, "--join", first_index=table.member_count) \
        if args.join else None
    with busy(f"arranging and planning {table.partition_count:,} partitions", total=2) as step:
        change = topology_change(table, args.to_members, leave=leave, crash=crash, join=join,
                                 grouping=args.grouping)
        step(description="planning the migrations")
        payload, plan, result = plan_payload(table, change, args.max_parallel, args.grouping)
        step()
    if args.plot:
        from hzfast.cli._plots import plot_plan
        head = f"{payload['from_members']} -> {payload['to_members']} data members"
        with busy("drawing"):
            payload["plot"] = plot_plan(plan, change.current.replicas,
                                        change.current.members, args.plot, title=head)
    if args.output:
        text = PlanFile.dumps(plan, table, change.crashed, change.current.members,
                              result.stamp)
        try:
            with open(args.output, "w") as f:
                f.write(text)
        except OSError as exc:
            raise UserError(f"-o/--output: {args.output}: {exc.strerror or exc}") from None
    if args.target:
        write_table(args.target, result, "--target")

    def render(c: Console, p: dict[str, Any]) -> None:
        rows = [(k, v) for k, v in p.items() if k not in ("by_kind", "report", "plot")
                and not isinstance(v, list)]
        rows += [(k, ", ".join(map(str, v)) or "-") for k, v in p.items()
                 if k in ("left", "crashed")]
        c.print(kv_table(f"{p['from_members']} -> {p['to_members']} members", rows))
        c.print(kv_table("migrations by kind", p["by_kind"].items()))
        rep = {k: (ratio(v) if isinstance(v, float) else v) for k, v in p["report"].items()
               if not isinstance(v, (list, dict))}
        c.print(kv_table("arrangement", rep.items()))
        for what, path in (("plan file", args.output), ("target table", args.target),
                           ("chart", args.plot)):
            if path:
                c.print(f"{what}: {path}")

    emit(args, payload, render)
    return 0


# ----------------------------------------------------------------------------- replay
@dataclass(frozen=True)
class Replay:
    """A plan file replayed on a table: where it starts, the result, or why not."""

    start: PartitionTable | None     #: the table as migrations start (crashed repaired)
    result: PartitionTable | None    #: the table after the plan
    reason: str | None               #: why the plan does not apply (None: it does)


def replay(table: PartitionTable, pf: PlanFile) -> Replay:
    """Replay a plan file on ``table`` with every check.

    Checks, in order: the table's shape and stamp against the plan's ``base`` (a stale plan;
    a table that already is the plan's result), the crashed members, every migration
    (``hzfast.apply_migrations``), and that the result is the plan's target.
    """
    P, R = table.replicas.shape
    plan = pf.plan
    if pf.base is not None:
        bp, br = pf.base["partitions"], pf.base["replicas"]
        if (bp, br) != (P, R):
            return Replay(None, None, f"the plan is for a {bp:,} x {br} table, the table is "
                                      f"{P:,} x {R}")
        if pf.base["stamp"] != table.stamp:
            if (pf.target_stamp == table.stamp and plan.target is not None
                    and np.array_equal(plan.target, table.replicas)):
                return Replay(None, table, f"already applied: the table is the plan's result "
                                           f"(stamp {table.stamp})")
            return Replay(None, None, f"stale plan: it was made for a table with stamp "
                                      f"{pf.base['stamp']}, this table's stamp is "
                                      f"{table.stamp}")
    elif plan.target is not None and plan.target.shape != (P, R):
        return Replay(None, None, f"the plan is for a {plan.target.shape[0]:,} x "
                                  f"{plan.target.shape[1]} table, the table is {P:,} x {R}")
    members = pf.members if pf.members is not None else table.members
    if len(members) < table.member_count:
        return Replay(None, None, f"the plan knows {len(members)} members, the table "
                                  f"{table.member_count}")
    bad = [c for c in pf.crashed if c >= table.member_count]
    if bad:
        return Replay(None, None, f"the plan removes member {bad[0]}, the table has "
                                  f"{table.member_count}")
    reps, vers = table.replicas, table.versions
    if pf.crashed:
        alive = np.ones(table.member_count, dtype=bool)
        alive[pf.crashed] = False
        reps, vers = hzfast.repair(reps, alive, vers)
    try:
        start = PartitionTable(reps, vers, members)
        new_reps, new_vers = hzfast.apply_migrations(start, None, plan)
    except (ValueError, TypeError) as exc:
        return Replay(None, None, " ".join(str(exc).split()))
    if plan.target is not None and not np.array_equal(new_reps, plan.target):
        bad_p = int(np.flatnonzero((new_reps != plan.target).any(axis=1))[0])
        return Replay(start, None, f"applying the plan does not reach its target "
                                   f"(partition {bad_p} differs)")
    result = PartitionTable(new_reps, new_vers, members)
    if pf.target_stamp is not None and result.stamp != pf.target_stamp:
        return Replay(start, None, f"the result's stamp {result.stamp} is not the plan's "
                                   f"{pf.target_stamp}")
    return Replay(start, result, None)


def cmd_apply(args: argparse.Namespace) -> int:
    """``hzfast apply``: replay a plan file on a table and write the result.

    Returns
    -------
    int
        0. Prints ``output``, ``migrations``, ``stamp_before``, ``stamp_after``,
        ``partitions_changed`` and ``version_sum_before``/``_after``.

    Raises
    ------
    UserError
        The plan does not apply (the reason, as ``hzfast verify`` gives it), or a file
        problem.
    """
    check_output_path(args.output, "-o/--output")
    table = load_table(args.table)
    pf = load_plan(args.plan)
    with busy(f"applying {len(pf.plan):,} migrations"):
        r = replay(table, pf)
    if r.reason is not None or r.result is None:
        raise UserError(f"--plan: {args.plan} does not apply to {args.table}: {r.reason}")
    write_table(args.output, r.result, "-o/--output")
    changed = int((r.result.replicas != table.replicas).any(axis=1).sum())
    payload = {"output": args.output, "migrations": len(pf.plan),
               "stamp_before": table.stamp, "stamp_after": r.result.stamp,
               "partitions_changed": changed,
               "version_sum_before": persistence.table_sum(table),
               "version_sum_after": persistence.table_sum(r.result)}
    emit(args, payload, lambda c, p: c.print(kv_table("plan applied", p.items())))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """``hzfast verify``: does a plan file still apply to a table?

    Returns
    -------
    int
        0 when it applies, 1 when it does not. Prints ``applies`` (bool), ``reason``
        (``None`` when it applies), ``table_stamp``, ``base_stamp`` and ``target_stamp``
        (``None`` for a bare MigrationPlan file) and ``migrations``. Without ``--json``
        a single line.
    """
    table = load_table(args.table)
    pf = load_plan(args.plan)
    with busy(f"checking {len(pf.plan):,} migrations"):
        r = replay(table, pf)
    payload = {"applies": r.reason is None, "reason": r.reason, "table_stamp": table.stamp,
               "base_stamp": None if pf.base is None else pf.base["stamp"],
               "target_stamp": pf.target_stamp, "migrations": len(pf.plan)}

    def render(c: Console, p: dict[str, Any]) -> None:
        if p["applies"]:
            c.print(f"{args.plan} applies to {args.table}: {p['migrations']:,} migrations",
                    highlight=False, soft_wrap=True)
        else:
            c.print(f"{args.plan} does not apply to {args.table}: {p['reason']}",
                    highlight=False, soft_wrap=True)

    emit(args, payload, render)
    return 0 if r.reason is None else 1


def cmd_schedule(args: argparse.Namespace) -> int:
    """``hzfast schedule``: when each migration of a plan file runs.

    Returns
    -------
    int
        0. Prints ``makespan`` (rounds, or seconds with sizes), ``rounds`` (unit durations;
        else ``None``), ``lower_bound``, ``unit``, ``max_parallel``, ``policy``,
        ``migrations``, ``queued``, ``bound_ratio`` (makespan / lower bound) and
        ``per_member`` (``member``, ``address``, ``peak_concurrency``, ``incoming``,
        ``outgoing``, counted by who sends the data).
    """
    if args.plot:
        check_output_path(args.plot, "--plot")
    if (args.sizes is None) != (args.bandwidth is None):
        raise UserError("--sizes: goes with --bandwidth (MB/s)" if args.bandwidth is None
                        else "--bandwidth: goes with --sizes (bytes per partition)")
    if args.bandwidth is not None and not args.bandwidth > 0:
        raise UserError(f"--bandwidth: must be > 0 MB/s, got {args.bandwidth}")
    if args.max_parallel < 1:
        raise UserError(f"--max-parallel: must be >= 1, got {args.max_parallel}")
    table = load_table(args.table)
    pf = load_plan(args.plan)
    sizes = None if args.sizes is None else load_sizes(args.sizes, table.partition_count)
    with busy(f"scheduling {len(pf.plan):,} migrations"):
        r = replay(table, pf)
        if r.start is None:
            raise UserError(f"--plan: {args.plan} does not apply to {args.table}: {r.reason}")
        with flag("--plan", args.plan):
            sched = hzfast.schedule(pf.plan, r.start, max_parallel_migrations=args.max_parallel,
                                    sizes=sizes, bandwidth=None if args.bandwidth is None
                                    else args.bandwidth * 1e6, policy=args.policy)
    from hzfast.cli._plots import member_flows
    members = r.start.members
    inc, out, _ = member_flows(pf.plan, r.start.replicas, len(members))
    unit = "rounds" if sched.rounds is not None else "seconds"
    payload: dict[str, Any] = {
        "makespan": float(sched.makespan) if unit == "seconds" else int(sched.makespan),
        "rounds": sched.rounds, "lower_bound": float(sched.lower_bound), "unit": unit,
        "max_parallel": args.max_parallel, "policy": sched.policy,
        "migrations": len(pf.plan), "queued": int((~pf.plan.instant).sum()),
        "bound_ratio": ratio(sched.makespan / sched.lower_bound) if sched.lower_bound else 1.0,
        "per_member": [{"member": m, "address": members.addresses[m],
                        "peak_concurrency": int(sched.peak_concurrency[m])
                        if m < sched.peak_concurrency.shape[0] else 0,
                        "incoming": int(inc[m]), "outgoing": int(out[m])}
                       for m in range(len(members))]}
    if sizes is not None:
        payload["bytes_moved"] = float(sizes[pf.plan.partition_id[~pf.plan.instant]].sum())
    if args.plot:
        from hzfast.cli._plots import plot_schedule
        with busy("drawing"):
            payload["plot"] = plot_schedule(pf.plan, sched, members, args.plot,
                                            unit="round" if unit == "rounds" else "s")

    def render(c: Console, p: dict[str, Any]) -> None:
        from rich.table import Table
        span = (f"{p['makespan']:,} rounds" if unit == "rounds"
                else human_seconds(p["makespan"]))
        bound = (f"{p['lower_bound']:,.0f} rounds" if unit == "rounds"
                 else human_seconds(p["lower_bound"]))
        rows: list[tuple[str, Any]] = [("migrations", p["migrations"]),
                                       ("queued", p["queued"]), ("makespan", span),
                                       ("lower bound", bound),
                                       ("makespan / lower bound", p["bound_ratio"]),
                                       ("max parallel per member", p["max_parallel"]),
                                       ("policy", p["policy"])]
        if "bytes_moved" in p:
            rows.append(("data moved", human_bytes(p["bytes_moved"])))
        c.print(kv_table("schedule", rows))
        t = Table(title="per member")
        for col in ("member", "address", "in", "out (sends)", "peak in flight"):
            t.add_column(col, justify="right" if col not in ("address",) else "left")
        for m in p["per_member"]:
            t.add_row(str(m["member"]), m["address"], f"{m['incoming']:,}",
                      f"{m['outgoing']:,}", str(m["peak_concurrency"]))
        c.print(t)
        if args.plot:
            c.print(f"chart: {args.plot}")

    emit(args, payload, render)
    return 0
