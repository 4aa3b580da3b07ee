"""``hzfast simulate --membership``: membership alone under pauses, partitions, crashes and
joins (:func:`hzfast.sim.membership.run_membership`, docs/design.md §13.4), over many seeds.

A failing seed is printed with its violations and the command that replays it:
``hzfast simulate --membership --seed-start S --seeds 1 [--min-cluster-size X] --trace``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from hzfast.cli._errors import UserError
from hzfast.cli._output import busy, emit, human_count, kv_table

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["min_cluster_size", "run_membership_sweep"]

_CHUNK = 50


def min_cluster_size(text: str) -> int | str | None:
    """``--min-cluster-size``: ``majority``, ``none`` or an int >= 1."""
    if text in ("majority", "none"):
        return None if text == "none" else text
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected 'majority', 'none' or an integer >= 1") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v}: must be >= 1")
    return v


class _Tally:
    def __init__(self, flags: str) -> None:
        self.flags = flags
        self.seeds = 0
        self.faults: Counter[str] = Counter()
        self.lists = 0
        self.quorum_lost = 0
        self.heal: list[int] = []
        self.failures: list[dict[str, Any]] = []

    def add(self, r: Any) -> bool:
        self.seeds += 1
        self.faults.update(r.injected)
        self.lists += r.lists_committed
        self.quorum_lost += r.quorum_lost
        if r.heal_time >= 0:
            self.heal.append(r.heal_time)
        if not r.ok:
            self.failures.append({
                "seed": r.seed, "members": r.members, "faults": str(r.faults),
                "violations": r.violations[:10],
                "replay": " ".join(f"hzfast simulate --membership --seed-start {r.seed} "
                                   f"--seeds 1 {self.flags} --trace".split())})
        return bool(r.ok)

    def merge(self, o: _Tally) -> None:
        self.seeds += o.seeds
        self.faults.update(o.faults)
        self.lists += o.lists
        self.quorum_lost += o.quorum_lost
        self.heal.extend(o.heal)
        self.failures.extend(o.failures)


def _chunk(task: tuple[int, int, int, Any, bool, str]) -> _Tally:
    from hzfast.sim.membership import run_membership

    lo, hi, members, mcs, keep_going, flags = task
    t = _Tally(flags)
    for seed in range(lo, hi):
        if not t.add(run_membership(seed, members=members, min_cluster_size=mcs)) \
                and not keep_going:
            break
    return t


def run_membership_sweep(args: argparse.Namespace) -> int:
    """Run ``args.seeds`` membership seeds; 0 when all passed, 1 otherwise."""
    from hzfast.cli._workers import ordered_map
    from hzfast.sim.membership import run_membership

    if args.scenario is not None:
        raise UserError("--membership: runs membership seeds; leave out --scenario")
    mcs = args.min_cluster_size
    if mcs == "drawn":
        raise UserError("--membership: --min-cluster-size drawn is for the migration "
                        "simulator; give majority, none or a count")
    flags = "" if mcs == "majority" else f"--min-cluster-size {mcs or 'none'}"
    if args.members != 4:
        flags += f" --members {args.members}"
    tally = _Tally(flags)
    t0 = time.perf_counter()
    lo, hi = args.seed_start, args.seed_start + args.seeds
    trace: list[str] = []
    with busy(f"simulating membership on {args.seeds} seeds", total=args.seeds) as advance:
        if args.trace or args.jobs <= 1 or args.seeds <= _CHUNK:
            for seed in range(lo, hi):
                r = run_membership(seed, members=args.members, min_cluster_size=mcs,
                                   trace=args.trace)
                trace = r.trace
                advance()
                if not tally.add(r) and not args.keep_going:
                    break
        else:
            tasks = [(a, min(a + _CHUNK, hi), args.members, mcs, args.keep_going, flags)
                     for a in range(lo, hi, _CHUNK)]
            parts = ordered_map(_chunk, tasks, args.jobs)
            try:
                for part in parts:
                    tally.merge(part)
                    advance(part.seeds)
                    if part.failures and not args.keep_going:
                        break
            finally:
                parts.close()
    seconds = time.perf_counter() - t0
    heal = sorted(tally.heal)
    payload = {
        "seeds": tally.seeds, "seed_start": args.seed_start,
        "min_cluster_size": mcs, "passed": tally.seeds - len(tally.failures),
        "failed": len(tally.failures), "lists_committed": tally.lists,
        "quorum_lost": tally.quorum_lost,
        "pauses": tally.faults.get("member_paused", 0),
        "partitions": sum(v for k, v in tally.faults.items() if k.startswith("partition_")),
        "faults_injected": dict(sorted(tally.faults.items())),
        "heal_ticks_median": statistics.median(heal) if heal else None,
        "heal_ticks_max": heal[-1] if heal else None,
        "seconds": round(seconds, 3), "failures": tally.failures,
    }
    if args.trace and trace:
        print("\n".join(trace))
    emit(args, payload, _render)
    return 1 if tally.failures else 0


def _render(con: Console, d: dict[str, Any]) -> None:
    con.print(kv_table(f"membership: {human_count(d['seeds'])} seeds from {d['seed_start']} "
                       f"(min cluster size {d['min_cluster_size']})", [
        ("passed / failed", f"{d['passed']} / {d['failed']}"),
        ("pauses / partitions", f"{human_count(d['pauses'])} / {human_count(d['partitions'])}"),
        ("lists committed", human_count(d["lists_committed"])),
        ("one cluster after the faults",
         f"median {d['heal_ticks_median']} ticks, at most {d['heal_ticks_max']}"),
        ("quorum lost to crashes", str(d["quorum_lost"])),
        ("time", f"{d['seconds']} s"),
    ]))
    for f in d["failures"][:5]:
        con.print(f"[bold red]FAILED[/] seed {f['seed']} ({f['members']} members)")
        for v in f["violations"][:5]:
            con.print(f"  {v}", markup=False)
        con.print(f"  replay: {f['replay']}", markup=False)
