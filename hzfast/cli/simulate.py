"""``hzfast simulate``: run the fault-injecting protocol simulator over many seeds.

Each seed is one deterministic cluster run (:func:`hzfast.sim.run`); a failing seed is
printed with its configuration and the last events of its trace, and replays exactly with
``hzfast simulate --seed-start S --seeds 1 --trace``. ``--scenario 5444`` runs Hazelcast
issue #5444 (:func:`hzfast.sim.scenario_5444`) instead.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from hzfast.cli._errors import UserError
from hzfast.cli._output import add_json_flag, busy, emit, human_count, kv_table

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_simulate", "register"]


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} is negative")
    return v


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``simulate`` to the ``hzfast`` parser."""
    p = add_json_flag(subparsers.add_parser(
        "simulate", help="run the fault-injecting protocol simulator over many seeds"))
    p.add_argument("--seeds", type=_positive, default=100, help="how many seeds to run")
    p.add_argument("--seed-start", type=_positive, default=0, help="the first seed")
    p.add_argument("--members", type=_positive, default=4,
                   help="members at start (the swarm draws 2..members+2)")
    p.add_argument("-p", "--partitions", type=_positive, default=271, help="partitions")
    p.add_argument("-b", "--backup-count", type=_positive, default=1, help="synchronous backups")
    p.add_argument("--entries", type=_positive, default=None,
                   help="entries written per run (default 10,000; 100,000 for --scenario 5444)")
    p.add_argument("--faults", choices=("swarm", "none"), default="swarm",
                   help="swarm: fault rates drawn per seed; none: a clean run")
    p.add_argument("--design", choices=("safe", "legacy"), default="safe",
                   help="safe (Hazelcast 3.7+) or legacy (pre-3.7, loses data)")
    p.add_argument("--joins", type=_positive, default=0, help="members joining per run")
    p.add_argument("--scenario", choices=("5444",), default=None,
                   help="run Hazelcast issue #5444 instead of swarm seeds")
    p.add_argument("--trace", action="store_true",
                   help="print every event of a single run (use with --seeds 1)")
    p.add_argument("--keep-going", action="store_true",
                   help="run every seed even after a failure")
    p.set_defaults(func=cmd_simulate)


def cmd_simulate(args: argparse.Namespace) -> int:
    """``hzfast simulate``: swarm seeds (or a scenario) and what they found.

    Returns
    -------
    int
        0 when every run converged without a violation, 1 otherwise.
    """
    from hzfast import sim

    if args.trace and args.seeds != 1 and args.scenario is None:
        raise UserError("--trace: prints one run; use it with --seeds 1")
    if args.partitions < 1:
        raise UserError("--partitions: must be >= 1")
    if args.entries is None:
        args.entries = 100_000 if args.scenario else 10_000
    t0 = time.perf_counter()
    results: list[sim.SimulationResult] = []
    failures: list[dict[str, Any]] = []
    if args.scenario == "5444":
        results.append(sim.scenario_5444(args.seed_start, design=args.design,
                                         entries=args.entries, trace=args.trace))
    else:
        try:
            with busy(f"simulating {args.seeds} seeds", total=args.seeds) as advance:
                for seed in range(args.seed_start, args.seed_start + args.seeds):
                    r = sim.run(seed, members=args.members, partitions=args.partitions,
                                backup_count=args.backup_count, entries=args.entries,
                                faults=args.faults, design=args.design, joins=args.joins,
                                trace=args.trace)
                    results.append(r)
                    advance()
                    if not _passed(r, args.design):
                        failures.append(_failure(r))
                        if not args.keep_going:
                            break
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from exc
    if args.scenario:
        failures = [] if args.design == "legacy" else [
            _failure(r) for r in results if not _passed(r, args.design)]
    seconds = time.perf_counter() - t0
    faults: Counter[str] = Counter()
    marks: Counter[str] = Counter()
    for r in results:
        faults.update(r.faults_injected)
        marks.update(r.marks)
    payload = {
        "seeds": len(results),
        "seed_start": args.seed_start,
        "design": args.design,
        "scenario": args.scenario,
        "passed": len(results) - len(failures),
        "failed": len(failures),
        "entries_acknowledged": sum(r.entries_acknowledged for r in results),
        "entries_lost": sum(r.entries_lost for r in results),
        "entries_lost_expected": sum(r.entries_lost_expected for r in results),
        "violations": sum(len(r.violations) for r in results),
        "converged": sum(r.converged for r in results),
        "events": sum(r.events for r in results),
        "faults_injected": dict(sorted(faults.items())),
        "marks": dict(sorted(marks.items())),
        "seconds": round(seconds, 3),
        "runs_per_second": round(len(results) / seconds, 2) if seconds else None,
        "failures": failures,
    }
    if args.trace and results:
        print("\n".join(results[-1].trace))
    emit(args, payload, _render)
    return 1 if failures else 0


def _passed(r: Any, design: str) -> bool:
    if design == "legacy":
        return True       # the legacy design is expected to lose; it is run to show that
    return bool(r.converged and not r.violations and r.entries_lost == r.entries_lost_expected)


def _failure(r: Any) -> dict[str, Any]:
    return {"seed": r.seed, "summary": r.summary(), "violations": r.violations,
            "converged": r.converged, "last_events": r.last_events[-20:]}


def _render(con: Console, d: dict[str, Any]) -> None:
    title = (f"#5444 ({d['design']})" if d["scenario"] else
             f"{human_count(d['seeds'])} seeds from {d['seed_start']} ({d['design']})")
    con.print(kv_table(title, [
        ("passed / failed", f"{d['passed']} / {d['failed']}"),
        ("converged", f"{d['converged']} of {d['seeds']}"),
        ("entries acknowledged", human_count(d["entries_acknowledged"])),
        ("entries lost", (f"{human_count(d['entries_lost'])} "
                          f"({human_count(d['entries_lost_expected'])} expected: more holders "
                          f"crashed than backups)")),
        ("faults injected", ", ".join(f"{k} {v}" for k, v in d["faults_injected"].items())
         or "none"),
        ("events", human_count(d["events"])),
        ("time", f"{d['seconds']} s ({d['runs_per_second']} runs/s)"),
    ]))
    for f in d["failures"]:
        con.print(f"[bold red]FAILED[/] {f['summary']}")
        for v in f["violations"][:5]:
            con.print(f"  {v}")
        con.print("  last events:")
        for line in f["last_events"]:
            con.print(f"    {line}", markup=False)
        con.print(f"  replay: hzfast simulate --seed-start {f['seed']} --seeds 1 --trace")
