"""Scenario files: scripted simulator runs checked against a canonical transcript.

A scenario file holds cases. Each case sets up a cluster (members, partitions, backups,
entries, design, an optional initial table), scripts what happens to it (joins, crashes
at a time or at a protocol mark, messages of one type dropped, delayed or rejected), runs
the simulator of :mod:`hzfast.sim.cluster` until the cluster settles, and prints a
deterministic digest of the run: the protocol marks in order (with partition, migration
and the emitting member's roles), what the script did, the final per-member versions and
replicas of the partitions involved, the data check and the violations. The digest is
compared with the transcript stored under the case's ``----`` line; ``--rewrite`` stores
the new digest instead (the shape of etcd-raft's datadriven tests). The format is
described in docs/scenarios.md; the protocol rules the cases check are those of
docs/design.md §7.

Run a file from the command line::

    python -m hzfast.sim.scenario tests/sim/scenarios/*.txt [--rewrite]
"""
from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hzfast.protocol import messages as msg
from hzfast.protocol.events import MessageReceived
from hzfast.protocol.kinds import MarkName
from hzfast.protocol.messages import MigrationInfo, MigrationStatus
from hzfast.protocol.node import Config
from hzfast.protocol.outputs import Mark
from hzfast.sim.cases import (
    FILTER_ACTIONS,
    MESSAGE_TYPES,
    SEPARATOR,
    Case,
    Filter,
    load,
    parse,
)
from hzfast.sim.cluster import Action, Hooks, Simulation, SimulationResult
from hzfast.sim.timeline import EventKind

__all__ = [
    "FILTER_ACTIONS",
    "MESSAGE_TYPES",
    "Case",
    "Filter",
    "ScenarioHooks",
    "load",
    "main",
    "parse",
    "run_case",
    "run_file",
    "scenario_simulation",
]

_INJECTED = {"drop": "filter_dropped", "delay": "filter_delayed", "reject": "filter_rejected"}


def migration_kind(x: MigrationInfo) -> str:
    """The kind of migration ``x`` (docs/design.md §5.7; ``PROMOTION`` for §7.7's)."""
    if x.promotion:
        return "PROMOTION"
    if x.source < 0:
        return "COPY" if x.destination_current_index < 0 else "SHIFT_UP"
    if x.destination_current_index < 0:
        return "MOVE" if x.source_new_index < 0 else "SHIFT_DOWN"
    return "SHIFT_UP_SOURCE_DROPPED" if x.source_new_index < 0 else "SHIFT_UP_SHIFT_DOWN"


def _member(v: int) -> str:
    return f"m{v}" if v >= 0 else "-"


def describe(x: MigrationInfo) -> str:
    """One migration in a transcript: id, partition, kind, slot moves, versions, status."""
    src = (f" {_member(x.source)}@{x.source_current_index}->{x.source_new_index}"
           if x.source >= 0 else "")
    return (f"x{x.id[0]}.{x.id[1]} p{x.partition} {migration_kind(x)}{src} "
            f"{_member(x.destination)}@{x.destination_current_index}->"
            f"{x.destination_new_index} v{x.initial}->{x.final} {x.status.name}")


# ---------------------------------------------------------------------- the simulation
class ScenarioHooks(Hooks):
    """What a case adds to a :class:`~hzfast.sim.cluster.Simulation`, through its hooks:
    message filters, member-state snapshots, and a log of everything in order (the
    transcript). The run itself takes the case's lite members, initial table, scripted
    joins and crashes (:class:`~hzfast.sim.cluster.Action`) and heal rule as settings.
    """

    def __init__(self, case: Case) -> None:
        self.case = case
        self.log: list[str] = []
        self.filters: list[Filter] = [Filter(**{k: v for k, v in f.__dict__.items()})
                                      for f in case.filters]
        self.snap_seen: dict[tuple[str, str, int], int] = {s: 0 for s in case.snapshots}
        self.mark_objs: list[Mark] = []
        self.touched: set[int] = set()
        self.owners: dict[tuple[int, int], int] = {}
        self.sim: Simulation | None = None

    def _say(self, text: str) -> None:
        self.log.append(text)

    def _run(self) -> Simulation:
        assert self.sim is not None, "ScenarioHooks: no simulation attached"
        return self.sim

    # -------------------------------------------------------------- what the run does
    def on_view(self, view: tuple[int, ...], lite: tuple[bool, ...]) -> None:
        shown = " ".join(f"m{m}" + ("(lite)" if f else "") for m, f in zip(view, lite))
        self._say(f"VIEW {shown}")

    def on_crash(self, m: int, why: str) -> None:
        self._say(f"CRASH m{m} ({why})")

    def on_join(self, m: int) -> None:
        self._say(f"JOIN m{m}")

    def on_action(self, a: Action) -> None:
        sim = self._run()
        if a.kind == "crash" and a.member not in sim.nodes:
            self._say(f"SCRIPT crash m{a.member}: not a live member")
        elif a.kind == "note":
            self._states(f"at t={sim.tl.now}")

    def on_mark(self, mid: int, mk: Mark, crashes: list[int]) -> None:
        sim = self._run()
        x = mk.migration
        self.mark_objs.append(mk)
        if mk.partition >= 0:
            self.touched.add(mk.partition)
        roles = []
        if x is not None:
            if mk.name == MarkName.MIGRATION_STARTED:
                row = sim.master_row(x.partition)
                self.owners[x.id] = int(row[0]) if row is not None else -1
            owner = self.owners.get(x.id, -1)
            roles = [r for r, who in (("master", x.master), ("owner", owner),
                                      ("source", x.source), ("destination", x.destination))
                     if who == mid and not (r == "owner" and x.source == mid)]
        who = f"m{mid}" + (f"[{','.join(roles)}]" if roles else "")
        text = f"{who} {mk.name}"
        if x is not None:
            text += f" {describe(x)}"
        elif mk.partition >= 0:
            text += f" p{mk.partition}"
        if mk.detail:
            text += f" ({mk.detail})"
        self._say(text)
        for c in crashes:
            self._say(f"SCRIPT crash m{c} at {mk.name}")
        for key in self.snap_seen:
            if key[0] == "mark" and key[1] == mk.name:
                self.snap_seen[key] += 1
                if self.snap_seen[key] == key[2]:
                    self._states(f"at {mk.name}#{key[2]}")

    def _states(self, why: str) -> None:
        sim = self._run()
        if not sim.view:
            return
        busy = sim.nodes[sim.view[0]].busy
        states = " ".join(f"m{m}={sim.nodes[m].state(busy)}" for m in sorted(sim.nodes))
        self._say(f"STATES {why}: {states}")

    def before_event(self, mid: int, ev: Any) -> None:
        if isinstance(ev, MessageReceived) and self.snap_seen:
            name = type(ev.message).__name__
            for key in self.snap_seen:
                if key[0] == "msg" and key[1] == name:
                    self.snap_seen[key] += 1
                    if self.snap_seen[key] == key[2]:
                        self._states(f"on {name}#{key[2]} to m{mid}")

    # -------------------------------------------------------------- message filters
    def _who(self, role: str, m: msg.Message) -> int:
        if role.startswith("m"):
            return int(role[1:])
        sim = self._run()
        x = getattr(m, "migration", None)
        if role == "master":
            return x.master if isinstance(x, MigrationInfo) else (sim.view[0] if sim.view
                                                                    else -1)
        if isinstance(m, msg.PromotionCommit) and role == "destination":
            return m.destination
        if not isinstance(x, MigrationInfo):
            return -2
        if role == "source":
            return x.source
        if role == "destination":
            return x.destination
        row = sim.master_row(x.partition)
        return int(row[0]) if row is not None else -2

    def _matches(self, f: Filter, src: int, dst: int, m: msg.Message) -> bool:
        if type(m).__name__ != f.type_name or not f.after <= self._run().tl.now < f.until:
            return False
        if f.src != "any" and self._who(f.src, m) != src:
            return False
        if f.dst != "any" and self._who(f.dst, m) != dst:
            return False
        if f.partition >= 0 or f.kind:
            x = getattr(m, "migration", None)
            if not isinstance(x, MigrationInfo):
                return False
            if f.partition >= 0 and x.partition != f.partition:
                return False
            if f.kind and migration_kind(x) != f.kind:
                return False
        return True

    def on_send(self, src: int, dst: int, m: msg.Message, term: int = 0) -> bool:
        act: Filter | None = None
        for f in self.filters:
            if self._matches(f, src, dst, m):
                f.seen += 1
                if act is None and f.nth <= f.seen < f.nth + f.times:
                    act = f
        if act is None:
            return False
        tl = self._run().tl
        x = getattr(m, "migration", None)
        about = f" {describe(x)}" if isinstance(x, MigrationInfo) else ""
        name = type(m).__name__
        tl.inject(_INJECTED[act.action])
        if act.action == "delay":
            self._say(f"DELAY {name} m{src}->m{dst}{about} by {act.by}")
            tl.push(tl.now + 1 + act.by, EventKind.MSG, (src, dst, m, term))
            return True
        reply = (msg.negative_reply(dst, m, "rejected by a filter")
                 if act.action == "reject" else None)
        self._say(f"{act.action.upper()} {name} m{src}->m{dst}{about}"
                  + (f" (answered {type(reply).__name__} ok=False)" if reply else ""))
        if reply is not None:
            node = self._run().nodes.get(dst)
            tl.push(tl.now + 1, EventKind.MSG,
                    (dst, src, reply, node.term if node is not None else term))
        return True


def _tables(case: Case) -> dict[int, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """Each initial member's starting table and versions, from the case's ``table`` and
    ``local`` rows (members are numbered 1 .. ``case.members``)."""
    P, R = case.partitions, Config(partition_count=case.partitions,
                                   backup_count=case.backups).replica_count
    ids = range(1, case.members + 1)
    reps = np.full((P, R), -1, dtype=np.int32)
    for p, row in case.table.items():
        if p >= P:
            raise ValueError(f"case {case.name}: table row p{p} but only {P} partitions")
        for v in row:
            if v >= 0 and (v not in ids or v in case.lite):
                raise ValueError(f"case {case.name}: table row p{p} names m{v}, not an "
                                 f"initial data member")
        reps[p, :len(row)] = row
    missing = sorted(set(range(P)) - set(case.table))
    if missing:
        raise ValueError(f"case {case.name}: table gives no row for partitions {missing}")
    vers = (reps >= 0).sum(axis=1).astype(np.int32)
    local = {m: reps.copy() for m in ids}
    for (m, p), row in sorted(case.local.items()):
        if m not in ids or p >= P:
            raise ValueError(f"case {case.name}: local row for m{m} p{p}: no such member "
                             f"or partition")
        local[m][p] = -1
        local[m][p, :len(row)] = row
    return {m: (local[m], vers.copy()) for m in ids}


def scenario_simulation(case: Case, hooks: ScenarioHooks | None = None
                        ) -> tuple[Simulation, ScenarioHooks]:
    """The simulation of ``case`` and the hooks that log it (``hooks``, made for
    ``case``, or new ones), not yet run."""
    if case.local and not case.table:
        raise ValueError(f"case {case.name}: local rows need a table")
    tables = _tables(case) if case.table else None
    hooks = ScenarioHooks(case) if hooks is None else hooks
    actions = tuple((t, Action({"states": "note"}.get(what, what), m, lite))
                    for t, what, m, lite in case.actions)
    sim = Simulation(case.seed, members=case.members, partitions=case.partitions,
                     backup_count=case.backups, entries=case.entries, faults="none",
                     script=tuple(case.script), design=case.design, trace=False,
                     max_parallel_migrations=case.max_parallel, write_window=case.writes,
                     lite=set(case.lite), tables=tables, rejoin=case.rejoin, hooks=hooks,
                     actions=actions)
    hooks.sim = sim
    return sim, hooks


# ---------------------------------------------------------------------- the transcript
def _arithmetic(marks: list[Mark]) -> list[str]:
    """Every version a mark reports obeys docs/design.md §7.2: commit = initial + inc,
    failure = initial + inc + 1."""
    bad: list[str] = []
    seen: set[tuple[tuple[int, int], MigrationStatus, int]] = set()
    for mk in marks:
        x = mk.migration
        if x is None or x.status == MigrationStatus.ACTIVE:
            continue
        key = (x.id, x.status, x.final)
        if key in seen:
            continue
        seen.add(key)
        want = x.initial + x.increment + (1 if x.status == MigrationStatus.FAILED else 0)
        if x.final != want:
            bad.append(f"{describe(x)}: final should be {want} (inc {x.increment})")
    return bad


def _row(r: np.ndarray[Any, Any]) -> str:
    vals = [int(v) for v in r.tolist()]
    while vals and vals[-1] < 0:
        vals.pop()
    return "[" + " ".join(_member(v) for v in vals) + "]"


def transcript(sim: Simulation, hooks: ScenarioHooks, r: SimulationResult) -> list[str]:
    """The canonical digest of one finished case run (see docs/scenarios.md)."""
    out = list(hooks.log)
    P = sim.config.partition_count
    shown = hooks.case.show or sorted(hooks.touched if P > 4 else set(range(P)))
    for m in sorted(sim.nodes):
        node = sim.nodes[m]
        if not node.initialized:
            out.append(f"FINAL m{m}: no table")
            continue
        parts = " ".join(f"p{p} v{int(node.versions[p])} {_row(node.replicas[p])}"
                         for p in shown if p < P)
        out.append(f"FINAL m{m}{'(lite)' if m in sim.lite else ''}: {parts}")
    states = " ".join(f"m{m}={sim.nodes[m].state(sim.nodes[sim.view[0]].busy)}"
                      for m in sorted(sim.nodes)) if sim.view else "no members"
    out.append(f"STATES final: {states}")
    out.append("COMPLETED " + " ".join(f"m{m}={len(sim.nodes[m].completed)}"
                                       for m in sorted(sim.nodes)))
    out.append(f"DATA acknowledged={r.entries_acknowledged}/{r.entries} lost={r.entries_lost} "
               f"expected={r.entries_lost_expected} unexpected={r.entries_unexpected} "
               f"converged={r.converged}")
    bad = _arithmetic(hooks.mark_objs)
    out.append("ARITHMETIC " + ("ok" if not bad else f"{len(bad)} wrong"))
    out.extend(f"  {b}" for b in bad)
    if r.violations:
        out.append(f"VIOLATIONS {len(r.violations)}")
        out.extend(f"  {v}" for v in r.violations)
    else:
        out.append("VIOLATIONS none")
    return out


@dataclass
class Outcome:
    """The result of running one case: its transcript and what it found."""

    case: Case
    actual: list[str]
    result: SimulationResult
    marks: dict[str, int]

    @property
    def ok(self) -> bool:
        """The transcript equals the stored one."""
        return self.actual == self.case.expected

    def diff(self) -> str:
        return "\n".join(difflib.unified_diff(self.case.expected, self.actual, "expected",
                                              "actual", lineterm=""))


def run_case(case: Case) -> Outcome:
    """Run one case and build its transcript."""
    sim, hooks = scenario_simulation(case)
    r = sim.run()
    return Outcome(case, transcript(sim, hooks, r), r, dict(r.marks))


def _render(text: str, outcomes: dict[str, Outcome]) -> str:
    """``text`` with every case's transcript replaced by its new one."""
    lines = text.splitlines()
    out: list[str] = []
    skipping = False
    current: str | None = None
    for line in lines:
        if line.startswith("case "):
            skipping = False
            current = line[5:].strip()
            if out and out[-1] != "":
                out.append("")
            out.append(line)
            continue
        if skipping:
            continue
        out.append(line)
        if current is not None and line.split("#", 1)[0].strip() == SEPARATOR \
                and not line.lstrip().startswith("#"):
            out.extend(outcomes[current].actual)
            out.append("")
            skipping = True
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def run_file(path: str | Path, rewrite: bool = False) -> list[Outcome]:
    """Run every case of a scenario file; with ``rewrite`` store the new transcripts.

    Returns
    -------
    list of Outcome
        One per case, in file order; ``ok`` tells whether the transcript matched the
        stored one (after a rewrite, the file holds the new ones).
    """
    p = Path(path)
    text = p.read_text()
    cases = parse(text, str(p))
    outcomes = [run_case(c) for c in cases]
    if rewrite:
        new = _render(text, {o.case.name: o for o in outcomes})
        if new != text:
            p.write_text(new)
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: run scenario files, print a diff per failing case."""
    ap = argparse.ArgumentParser(prog="python -m hzfast.sim.scenario",
                                 description="Run hzfast scenario files (docs/scenarios.md).")
    ap.add_argument("files", nargs="+", help="scenario files")
    ap.add_argument("--rewrite", action="store_true",
                    help="store each case's new transcript in its file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every transcript")
    args = ap.parse_args(argv)
    failed = 0
    total = 0
    for f in args.files:
        try:
            outcomes = run_file(f, rewrite=args.rewrite)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        for o in outcomes:
            total += 1
            status = "rewritten" if args.rewrite and not o.ok else ("ok" if o.ok else "FAIL")
            print(f"{f}::{o.case.name} {status}")
            if args.verbose:
                print("\n".join("    " + line for line in o.actual))
            if not o.ok and not args.rewrite:
                failed += 1
                print(o.diff())
    print(f"{total - failed}/{total} cases match")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
