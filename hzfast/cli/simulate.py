"""``hzfast simulate``: run the fault-injecting protocol simulator over many seeds.

Each seed is one deterministic cluster run (:func:`hzfast.sim.run`); a failing seed is
printed with its configuration, the last events of its trace and the command that replays
it exactly: ``hzfast simulate --seed-start S --seeds 1`` with the settings that differ from
the defaults, and ``--trace``. ``--scenario 5444`` runs Hazelcast issue #5444
(:func:`hzfast.sim.scenario_5444`) instead.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from hzfast.cli._errors import UserError, int_within
from hzfast.cli._output import add_json_flag, busy, emit, human_count, kv_table
from hzfast.cli.simulate_membership import min_cluster_size, run_membership_sweep

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_simulate", "register", "replay_command"]


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} is negative")
    return v


_LIMIT = 10   # max_parallel_migrations: Hazelcast's default, the one #5444 runs
# the swarm settings that shape a run, with their flags and defaults: the parser's
# defaults and a failing seed's replay line (which names only what differs) read them here
_SWARM = (("--members", "members", 4), ("-p", "partitions", 271), ("-b", "backup_count", 1),
          ("--entries", "entries", 10_000), ("--faults", "faults", "swarm"),
          ("--design", "design", "safe"), ("--joins", "joins", 0),
          ("--max-parallel-migrations", "max_parallel_migrations", _LIMIT),
          ("--strict", "strict", False), ("--member-lists", "member_lists", "nodes"),
          ("--min-cluster-size", "min_cluster_size", "majority"),
          ("--merge-policy", "merge_policy", "put_if_absent"),
          ("--nemesis", "nemesis", "pause,partition"))
_DEFAULT = {name: default for _, name, default in _SWARM}
#: the settings whose ``args`` name is not :func:`hzfast.sim.run`'s keyword (``--membership``
#: is taken: it runs the membership simulation alone)
RUN_KEYWORD = {"member_lists": "membership"}
# the same for --scenario 5444 (hzfast.sim.scenario_5444's settings)
_SCENARIO = (("--entries", "entries", 100_000), ("--design", "design", "safe"))
_SCENARIO_DEFAULT = {name: default for _, name, default in _SCENARIO}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``simulate`` to the ``hzfast`` parser."""
    p = add_json_flag(subparsers.add_parser(
        "simulate", help="run the fault-injecting protocol simulator over many seeds"))
    p.add_argument("--seeds", type=int_within(1, 10**9), default=100, help="how many seeds to run")
    p.add_argument("--seed-start", type=int_within(0, 2**62), default=0, help="the first seed")
    p.add_argument("--members", type=int_within(1, 64), default=_DEFAULT["members"],
                   help="members at start (the swarm draws 2..members+2)")
    p.add_argument("-p", "--partitions", type=int_within(1, 100_000),
                   default=_DEFAULT["partitions"], help="partitions")
    p.add_argument("-b", "--backup-count", type=int_within(0, 6),
                   default=_DEFAULT["backup_count"], help="synchronous backups")
    p.add_argument("--entries", type=int_within(0, 10_000_000), default=None,
                   help=f"entries written per run (default {_DEFAULT['entries']:,}; "
                        f"{_SCENARIO_DEFAULT['entries']:,} for --scenario 5444)")
    p.add_argument("--faults", choices=("swarm", "none"), default=_DEFAULT["faults"],
                   help="swarm: fault rates drawn per seed; none: a clean run")
    p.add_argument("--design", choices=("safe", "legacy"), default=_DEFAULT["design"],
                   help="safe (Hazelcast 3.7+) or legacy (pre-3.7, loses data)")
    p.add_argument("--joins", type=int_within(0, 64), default=_DEFAULT["joins"],
                   help="members joining per run")
    p.add_argument("--max-parallel-migrations", type=int_within(1, 10_000),
                   default=_DEFAULT["max_parallel_migrations"],
                   help="migrations a member takes part in at once, as source or "
                        "destination (Hazelcast's limit)")
    p.add_argument("--strict", action="store_true",
                   help="check the members' agreement after every event, not every 100 "
                        "ticks (slower)")
    p.add_argument("--scenario", choices=("5444",), default=None,
                   help="run Hazelcast issue #5444 instead of swarm seeds")
    p.add_argument("--trace", action="store_true",
                   help="print every event of a single run (use with --seeds 1)")
    p.add_argument("--keep-going", action="store_true",
                   help="run every seed even after a failure")
    p.add_argument("-j", "--jobs", type=_positive, default=1,
                   help="worker processes (seeds run in chunks; same results for any count; "
                        "one process where fork is not available)")
    p.add_argument("--membership", action="store_true",
                   help="simulate membership alone under pauses, partitions, crashes and "
                        "joins (docs/design.md §13.4)")
    p.add_argument("--min-cluster-size", type=_sim_min_cluster_size, default="majority",
                   help="split-brain protection, 'majority' (default), 'none', a member "
                        "count, or 'drawn' (each seed draws 'majority' or 'none')")
    p.add_argument("--member-lists", choices=("nodes", "oracle"),
                   default="nodes",
                   help="nodes: each member runs its own membership (heartbeats, pauses and "
                        "partitions detected); oracle: the run publishes the member list")
    p.add_argument("--merge-policy",
                   choices=("put_if_absent", "pass_through", "latest_update", "discard"),
                   default="put_if_absent",
                   help="what a member out of the cluster does with its data before it stops")
    p.add_argument("--nemesis", default="pause,partition",
                   help="faults the swarm adds with --member-lists nodes: 'pause', "
                        "'partition', both (default, comma-separated) or ''")
    p.set_defaults(func=cmd_simulate)


def cmd_simulate(args: argparse.Namespace) -> int:
    """``hzfast simulate``: swarm seeds (or a scenario) and what they found.

    With ``--jobs N`` the seeds run in ``N`` worker processes, in chunks of consecutive
    seeds; every seed is still one deterministic run, and the chunks are tallied in seed
    order, so the output (and where a run without ``--keep-going`` stops) is the same for
    any ``N``.

    Returns
    -------
    int
        0 when every run converged without a violation, 1 otherwise.
    """
    from hzfast import sim

    if getattr(args, "membership", False):
        return run_membership_sweep(args)
    if args.trace and args.seeds != 1 and args.scenario is None:
        raise UserError("--trace: prints one run; use it with --seeds 1")
    if args.partitions < 1:
        raise UserError("--partitions: must be >= 1")
    jobs = getattr(args, "jobs", 1)
    if jobs < 1:
        raise UserError("--jobs: must be >= 1")
    mpm: int = getattr(args, "max_parallel_migrations", _LIMIT)
    if mpm < 1:
        raise UserError("--max-parallel-migrations: must be >= 1")
    if args.scenario is not None and mpm != _LIMIT:
        raise UserError("--max-parallel-migrations: the #5444 scenario runs Hazelcast's "
                        f"default of {_LIMIT}; leave it out with --scenario")
    if args.scenario is not None and getattr(args, "strict", False):
        raise UserError("--strict: for swarm seeds; leave it out with --scenario")
    if args.entries is None:
        args.entries = _SCENARIO_DEFAULT["entries"] if args.scenario else _DEFAULT["entries"]
    t0 = time.perf_counter()
    tally = _Tally(_replay_flags(args))
    trace: list[str] = []
    if args.scenario == "5444":
        r = sim.scenario_5444(args.seed_start, design=args.design, entries=args.entries,
                              trace=args.trace)
        tally.add(r, args.design)
        trace = r.trace
    else:
        params = {"members": args.members, "partitions": args.partitions,
                  "backup_count": args.backup_count, "entries": args.entries,
                  "faults": args.faults, "design": args.design, "joins": args.joins,
                  "trace": args.trace, "max_parallel_migrations": mpm,
                  "strict": bool(getattr(args, "strict", False)),
                  "membership": getattr(args, "member_lists", "nodes"),
                  "min_cluster_size": getattr(args, "min_cluster_size", "majority"),
                  "merge_policy": getattr(args, "merge_policy", "put_if_absent"),
                  "nemesis": getattr(args, "nemesis", "pause,partition")}
        lo, hi = args.seed_start, args.seed_start + args.seeds
        try:
            with busy(f"simulating {args.seeds} seeds", total=args.seeds) as advance:
                if jobs == 1 or args.seeds <= _CHUNK or not _can_fork():
                    for seed in range(lo, hi):
                        r = sim.run(seed, **params)
                        trace = r.trace
                        advance()
                        if not tally.add(r, args.design) and not args.keep_going:
                            break
                else:
                    _parallel(tally, params, lo, hi, jobs, args.keep_going, advance)
        except (ValueError, TypeError) as exc:      # bad settings (from a worker too)
            raise UserError(str(exc)) from exc
    seconds = time.perf_counter() - t0
    payload = tally.payload(args, seconds)
    if args.trace and trace:
        print("\n".join(trace))
    emit(args, payload, _render)
    # the legacy design is run to show its losses: they are counted, not an error
    return 1 if tally.failures and args.design == "safe" else 0


_CHUNK = 25      # seeds per task of --jobs: small enough for a live progress bar


class _Tally:
    """What the runs found, summed as they finish (no run is kept but the failing ones)."""

    def __init__(self, replay: str = "") -> None:
        self.replay = replay        # the command's settings: a failing seed's replay line
        self.seeds = 0
        self.sums: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.marks: Counter[str] = Counter()
        self.lost_by: Counter[str] = Counter()
        self.failures: list[dict[str, Any]] = []

    def add(self, r: Any, design: str, failing: bool | None = None) -> bool:
        """Count run ``r``; returns whether it passed (``failing`` overrides the check)."""
        self.seeds += 1
        for k in ("entries_acknowledged", "entries_lost", "entries_lost_expected",
                  "converged", "quorum_lost", "events"):
            self.sums[k] += int(getattr(r, k))
        self.lost_by.update(r.lost_by)
        self.sums["violations"] += len(r.violations)
        self.faults.update(r.faults_injected)
        self.marks.update(r.marks)
        bad = (not _passed(r)) if failing is None else failing
        if bad:
            self.failures.append(_failure(r, self.replay))
        return not bad or design == "legacy"      # (legacy: every seed runs)

    def merge(self, other: _Tally) -> None:
        self.seeds += other.seeds
        self.sums.update(other.sums)
        self.faults.update(other.faults)
        self.marks.update(other.marks)
        self.lost_by.update(other.lost_by)
        self.failures.extend(other.failures)

    def payload(self, args: argparse.Namespace, seconds: float) -> dict[str, Any]:
        n = self.seeds
        return {
            "seeds": n,
            "seed_start": args.seed_start,
            "design": args.design,
            "scenario": args.scenario,
            "passed": n - len(self.failures),
            "failed": len(self.failures),
            "entries_acknowledged": self.sums["entries_acknowledged"],
            "entries_lost": self.sums["entries_lost"],
            "entries_lost_expected": self.sums["entries_lost_expected"],
            "violations": self.sums["violations"],
            "converged": self.sums["converged"],
            "quorum_lost": self.sums["quorum_lost"],
            "lost_by": dict(sorted(self.lost_by.items())),
            "events": self.sums["events"],
            "faults_injected": dict(sorted(self.faults.items())),
            "marks": dict(sorted(self.marks.items())),
            "seconds": round(seconds, 3),
            "runs_per_second": round(n / seconds, 2) if seconds else None,
            "failures": self.failures,
        }


def _chunk(task: tuple[dict[str, Any], int, int, bool, str]) -> _Tally:
    """A worker's share: seeds ``lo..hi-1`` (stopping after a failure unless keep_going)."""
    from hzfast import sim

    params, lo, hi, keep_going, replay = task
    tally = _Tally(replay)
    for seed in range(lo, hi):
        if not tally.add(sim.run(seed, **params), params["design"]) and not keep_going:
            break
    return tally


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _parallel(tally: _Tally, params: dict[str, Any], lo: int, hi: int, jobs: int,
              keep_going: bool, advance: Any) -> None:
    """Run seeds ``lo..hi-1`` in ``jobs`` forked workers; tally the chunks in seed order."""
    from hzfast import sim
    from hzfast.cli._workers import ordered_map

    # bad settings fail here, before any worker starts (every worker would refuse them)
    sim.check_settings(hi - 1, **params)
    tasks = [(params, a, min(a + _CHUNK, hi), keep_going, tally.replay)
             for a in range(lo, hi, _CHUNK)]
    parts = ordered_map(_chunk, tasks, jobs)   # own workers: no Pool.terminate (_workers)
    try:
        for part in parts:
            tally.merge(part)
            advance(part.seeds)
            if part.failures and not keep_going and params["design"] == "safe":
                break
    finally:
        parts.close()                          # stops the workers still busy


def _passed(r: Any) -> bool:
    """The run converged with no violation and lost only what more crashes than backups
    lose (the same check for both designs: the legacy one is expected to fail it)."""
    return bool(r.ok and r.entries_lost == r.entries_lost_expected)


def _sim_min_cluster_size(text: str) -> int | str | None:
    """``--min-cluster-size`` of the simulator: the runtime's values, or ``drawn``."""
    return "drawn" if text == "drawn" else min_cluster_size(text)


def _replay_flags(args: argparse.Namespace) -> str:
    """The flags of ``args`` that differ from ``hzfast simulate``'s defaults, as a command
    line: with ``--seed-start S --seeds 1`` they replay seed ``S`` exactly."""
    scenario = getattr(args, "scenario", None)
    flags = [f"--scenario {scenario}"] if scenario else []
    settings = _SCENARIO if scenario else _SWARM
    for flag, name, default in settings:
        value = getattr(args, name, default)
        if value is True:
            flags.append(flag)                          # (a switch)
        elif name == "min_cluster_size" and value is None:
            flags.append(f"{flag} none")                 # (protection off)
        elif name == "nemesis" and value != default:
            flags.append(f"{flag} '{value}'")
        elif value is not None and value != default:    # (None: the default entries)
            flags.append(f"{flag} {value}")
    return " ".join(flags)


def replay_command(seed: int, settings: Any) -> str:
    """The command that replays swarm seed ``seed`` run with ``settings`` (a mapping of
    :func:`hzfast.sim.run`'s keywords, e.g. a row's shape), with ``--trace``; flags at their
    defaults are left out. ``spark_integration.simulate`` fills its rows' ``replay`` with it.

    Examples
    --------
    >>> replay_command(7, {"partitions": 32, "design": "legacy", "strict": True})
    'hzfast simulate --seed-start 7 --seeds 1 -p 32 --design legacy --strict --trace'
    """
    named = dict(settings)
    for flag, keyword in RUN_KEYWORD.items():   # (run's keyword -> the flag's own name)
        if keyword in named:
            named[flag] = named.pop(keyword)
    flags = _replay_flags(argparse.Namespace(scenario=None, **named))
    return " ".join(f"hzfast simulate --seed-start {seed} --seeds 1 {flags} --trace".split())


def _failure(r: Any, replay: str = "") -> dict[str, Any]:
    command = f"hzfast simulate --seed-start {r.seed} --seeds 1 {replay} --trace"
    return {"seed": r.seed, "summary": r.summary(), "violations": r.violations,
            "converged": r.converged, "last_events": r.last_events[-20:],
            "replay": " ".join(command.split())}


def _render(con: Console, d: dict[str, Any]) -> None:
    title = (f"#5444 ({d['design']})" if d["scenario"] else
             f"{human_count(d['seeds'])} seeds from {d['seed_start']} ({d['design']})")
    legacy = d["design"] == "legacy"
    con.print(kv_table(title, [
        ("passed / failed", f"{d['passed']} / {d['failed']}"),
        ("converged", f"{d['converged']} of {d['seeds']}"
                      + (f" ({d['quorum_lost']} more stuck by design: their quorum crashed)"
                         if d["quorum_lost"] else "")),
        ("violations", human_count(d["violations"])),
        ("entries acknowledged", human_count(d["entries_acknowledged"])),
        ("entries lost", (f"{human_count(d['entries_lost'])} "
                          f"({human_count(d['entries_lost_expected'])} of them expected: more "
                          f"holders crashed than backups)")),
        ("faults injected", ", ".join(f"{k} {v}" for k, v in d["faults_injected"].items())
         or "none"),
        ("events", human_count(d["events"])),
        ("time", f"{d['seconds']} s ({d['runs_per_second']} runs/s)"),
    ]))
    if legacy and d["failed"]:
        con.print("the legacy design is run to show its losses: its failed runs are "
                  "expected (exit status 0)")
    shown = d["failures"][:_SHOWN]
    for f in shown:
        con.print(f"[bold red]FAILED[/] {f['summary']}")
        for v in f["violations"][:5]:
            con.print(f"  {v}")
        con.print("  last events:")
        for line in f["last_events"]:
            con.print(f"    {line}", markup=False)
        con.print(f"  replay: {f['replay']}", markup=False)
    if len(d["failures"]) > len(shown):
        con.print(f"... and {len(d['failures']) - len(shown):,} more failing seeds "
                  f"(--json lists every one)")


_SHOWN = 5   # failing seeds the summary details (--json lists all)
