"""Exhaustive small scopes (docs/design.md §7): every scripted crash and dropped
commit-phase message in five tiny clusters, design "safe", seed 0, 20 entries written
throughout. Every run must end converged, with no violation, no entry read that was never
written, no loss beyond the expected one, and every partition's owner taking writes.

==================  ===============================  ======================================
scope               cluster (1 backup)               migrations (kind@source slot old->new)
==================  ===============================  ======================================
``shift-down``      2 -> 3 members, 2 partitions     COPY, SHIFT_DOWN@1->2 (a backup leaves
                    (a join at t=100)                its data slot; no owner moves)
``owner-moves``     2 -> 3 members, 3 partitions     MOVE@0->-1 (an owner leaves), COPY,
                                                     SHIFT_DOWN@1->2 (x2)
``backup-moves``    3 -> 4 members, 3 partitions     MOVE@1->-1 (a backup leaves), COPY,
                                                     SHIFT_DOWN@2->3 (x2)
``member-leaves``   4 members, 3 partitions, m3      PROMOTION, SHIFT_UP,
                    crashes at t=100                 SHIFT_UP_SOURCE_DROPPED@0->-1 (an owner
                                                     leaves), SHIFT_DOWN@1->2
``owner-to-backup`` 4 members, 3 partitions, m1      PROMOTION, SHIFT_UP (x2),
                    (the master) crashes at t=100    SHIFT_UP_SHIFT_DOWN@0->1 (an owner
                                                     stays, at a backup slot)
==================  ===============================  ======================================

``test_sources_leave_data_slots`` asserts, from each scope's migrations, which of them
move an owner or a backup out of the data slots (index <= backups), so that no scope
silently degrades into one that never does. (A member leaving 4 members x 2 partitions x
2 backups, the shape first thought of, only shifts up and promotes; so does a leave with
2 backups here, and with 2 backups a second crash leaves fewer members than copies, where
writes are never acknowledged and the run cannot converge.)

- ``test_crash_every_mark``: per scope and drop choice (none, or the first message of one
  of the nine commit-phase types; ``shift-down`` also the first two), a run without a
  crash, then one run per (mark occurrence, crashed member): every occurrence of every
  protocol mark, every nth and not only the first two, × every role of
  :class:`hzfast.sim.CrashAt`. Pruned, never skipped: roles that name the same member at
  that occurrence crash the same member at the same step, so one run stands for them all
  (each run checks that its crash hit the member predicted); a crash at an occurrence
  that never comes, or at a role naming no member there, is the crash-free run.
- ``test_drop_subsets``: per scope and crash choice (none; the destination at the first
  ``replica_copied``; the master at the first ``migration_started``: all three for
  ``shift-down``, the first two for the scopes that join, none only for those with a
  member leaving), every subset of the nine commit-phase types, each type in the subset
  losing its first message (512 subsets). A subset S holding a type T that the run of
  S - {T} never sent over the network is that run (its filter never matches): not run
  again.

Runs executed, and the schedules (role × mark × nth, or drop subsets) they stand for
(``python tests/sim/test_small_scope.py`` prints them):

===================  ====================  ==================  ========  =============
scope                crash × mark × drop   drop subsets        runs      CPU here
===================  ====================  ==================  ========  =============
``shift-down``       849 of 1,307          680 of 1,536        1,529     12.6 s
``owner-moves``      660 of 1,126          544 of 1,024        1,204     9.6 s
``backup-moves``     839 of 1,126          544 of 1,024        1,383     12.5 s
``member-leaves``    496 of 934            512 of 512          1,008     9.3 s
``owner-to-backup``  474 of 1,086          512 of 512          986       9.6 s
===================  ====================  ==================  ========  =============

6,110 runs for 10,187 schedules, about 54 s of CPU (9 ms a run), in 137 independent
tests (``-n 2`` spreads them over both cores; the whole ``pytest -n 2`` of this file took
66 s of CPU here, the workers' start included).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from hzfast.protocol import MARKS
from hzfast.protocol.outputs import Mark
from hzfast.sim.cluster import ROLES, CrashAt
from hzfast.sim.scenario import (
    Case,
    Filter,
    ScenarioHooks,
    migration_kind,
    run_case,
    scenario_simulation,
)

COMMIT_PHASE = ("MigrationRequest", "MigrationTransfer", "MigrationTransferAck",
                "MigrationResult", "MigrationCommit", "MigrationCommitResponse",
                "PublishCompletedMigrations", "PublishCompletedAck", "PartitionTableUpdate")
DROPS: tuple[tuple[str, int] | None, ...] = (None,) + tuple(
    (t, n) for t in COMMIT_PHASE for n in (1, 2))
SUBSET_CRASHES: tuple[CrashAt | None, ...] = (
    None, CrashAt("destination", "replica_copied"), CrashAt("master", "migration_started"))
#: drop subsets are chunked by their three highest types; pruning looks at the six lowest
HIGH_BITS = 3
LOW_BITS = len(COMMIT_PHASE) - HIGH_BITS


@dataclass(frozen=True)
class Scope:
    name: str
    members: int
    partitions: int
    backups: int
    actions: tuple[tuple[int, str, int, bool], ...]
    moves_owner: bool       # some source leaves slot 0
    moves_backup: bool      # some source leaves a backup data slot
    subset_crashes: tuple[int, ...]    # which SUBSET_CRASHES go with the drop subsets
    drop_twice: bool        # crash_every_mark also drops the first two messages of a type


SCOPES = (
    Scope("shift-down", 2, 2, 1, ((100, "join", -1, False),), False, True, (0, 1, 2), True),
    Scope("owner-moves", 2, 3, 1, ((100, "join", -1, False),), True, True, (0, 1), False),
    Scope("backup-moves", 3, 3, 1, ((100, "join", -1, False),), False, True, (0, 1), False),
    Scope("member-leaves", 4, 3, 1, ((100, "crash", 3, False),), True, True, (0,), False),
    Scope("owner-to-backup", 4, 3, 1, ((100, "crash", 1, False),), False, False, (0,), False),
)
BY_NAME = {s.name: s for s in SCOPES}


class _Probe(ScenarioHooks):
    """A scenario's hooks that also record, at every mark, the member each role of
    :class:`CrashAt` names there (as the simulator resolves it), and the message types
    sent."""

    def __init__(self, case: Case) -> None:
        super().__init__(case)
        self.occurrences: list[tuple[str, int, dict[str, int]]] = []
        self.mark_counts: dict[str, int] = {}
        self.sent: set[str] = set()

    def on_mark(self, mid: int, mk: Mark, crashes: list[int]) -> None:
        sim = self._run()
        name = str(mk.name)
        n = self.mark_counts[name] = self.mark_counts.get(name, 0) + 1
        x = mk.migration
        who = {"master": sim.view[0] if sim.view else -1}
        if x is not None:
            node = sim.nodes.get(sim.view[0]) if sim.view else None
            who |= {"source": x.source, "destination": x.destination,
                    "owner": int(node.replicas[x.partition, 0]) if node is not None else -1}
        self.occurrences.append((name, n, who))
        super().on_mark(mid, mk, crashes)

    def on_send(self, src: int, dst: int, m: Any, term: int = 0) -> bool:
        self.sent.add(type(m).__name__)
        return super().on_send(src, dst, m, term)


def _case(scope: Scope, crash: CrashAt | None, drops: list[tuple[str, int]]) -> Case:
    c = Case(f"small-scope {scope.name}", 0, members=scope.members,
             partitions=scope.partitions, backups=scope.backups, entries=20)
    c.actions.extend(scope.actions)
    if crash is not None:
        c.script.append(crash)
    for t, times in drops:
        c.filters.append(Filter("drop", t, nth=1, times=times))
    c.ran = True
    return c


def _run(c: Case, label: str) -> tuple[_Probe, list[str]]:
    sim, probe = scenario_simulation(c, _Probe(c))
    r = sim.run()
    bad = []
    if r.violations:
        bad.append(f"{label}: {r.violations[0]}")
    if not r.converged:
        bad.append(f"{label}: did not converge")
    if r.entries_lost != r.entries_lost_expected:
        bad.append(f"{label}: lost {r.entries_lost}, expected {r.entries_lost_expected}")
    if r.entries_unexpected:
        bad.append(f"{label}: {r.entries_unexpected} entries read that were never written")
    return probe, bad


def crash_every_mark(scope: Scope, drop: tuple[str, int] | None) -> tuple[int, int, list[str]]:
    """Runs executed, schedules they stand for (roles × marks × every nth, plus the
    crash-free run), and what failed."""
    drops = [drop] if drop else []
    base, bad = _run(_case(scope, None, drops), f"{scope.name}: no crash, drop {drop}")
    runs, covered = 1, 1
    for name, n, who in base.occurrences:
        victims: dict[int, list[str]] = {}
        for role in ROLES:
            if who.get(role, -1) >= 0:
                victims.setdefault(who[role], []).append(role)
        for victim, roles in victims.items():
            label = f"{scope.name}: crash {'/'.join(roles)} m{victim} at {name}#{n}, drop {drop}"
            sim, b = _run(_case(scope, CrashAt(roles[0], name, n), drops), label)
            if f"SCRIPT crash m{victim} at {name}" not in sim.log:
                b.append(f"{label}: the crash did not hit m{victim} (pruning is unsound)")
            bad += b
            runs += 1
    # every (role, mark, nth) with nth up to the mark's count is one of the runs above;
    # the others (and the roles naming nobody) are the crash-free run
    covered = len(ROLES) * sum(base.mark_counts.values()) + 1
    return runs, covered, bad


def drop_subsets(scope: Scope, crash: CrashAt | None, high: int) -> tuple[int, int, list[str]]:
    """Every subset whose three highest types are ``high``: runs executed, subsets covered,
    what failed."""
    sent: dict[int, set[str]] = {}
    bad: list[str] = []
    runs = 0
    for low in range(2 ** LOW_BITS):
        s = low | high << LOW_BITS
        same = next((s & ~(1 << i) for i in range(LOW_BITS)
                     if s >> i & 1 and COMMIT_PHASE[i] not in sent[s & ~(1 << i)]), None)
        if same is not None:
            sent[s] = sent[same]
            continue
        drops = [(t, 1) for i, t in enumerate(COMMIT_PHASE) if s >> i & 1]
        sim, b = _run(_case(scope, crash, drops),
                      f"{scope.name}: drop first of {[t for t, _ in drops]}, {crash}")
        sent[s] = sim.sent
        bad += b
        runs += 1
    return runs, 2 ** LOW_BITS, bad


def _drops(scope: Scope) -> tuple[tuple[str, int] | None, ...]:
    return DROPS if scope.drop_twice else tuple(d for d in DROPS if d is None or d[1] == 1)


@pytest.mark.parametrize("scope,drop", [(s.name, d) for s in SCOPES for d in _drops(s)],
                         ids=[f"{s.name}-{d[0]}x{d[1]}" if d else f"{s.name}-none"
                              for s in SCOPES for d in _drops(s)])
def test_crash_every_mark(scope: str, drop: tuple[str, int] | None) -> None:
    runs, covered, bad = crash_every_mark(BY_NAME[scope], drop)
    assert runs > 10 and covered > runs
    assert bad == []


@pytest.mark.parametrize("high", range(2 ** HIGH_BITS))
@pytest.mark.parametrize("scope,crash", [(s.name, i) for s in SCOPES
                                         for i in s.subset_crashes])
def test_drop_subsets(scope: str, crash: int, high: int) -> None:
    runs, covered, bad = drop_subsets(BY_NAME[scope], SUBSET_CRASHES[crash], high)
    assert 0 < runs <= covered
    assert bad == []


@cache
def _moves(scope: Scope) -> list[tuple[str, int, int]]:
    sim, hooks = scenario_simulation(_case(scope, None, []))
    sim.run()
    seen = {mk.migration.id: mk.migration for mk in hooks.mark_objs if mk.migration is not None}
    return [(migration_kind(x), x.source_current_index, x.source_new_index)
            for x in seen.values() if x.source >= 0]


@pytest.mark.parametrize("scope", SCOPES, ids=[s.name for s in SCOPES])
def test_sources_leave_data_slots(scope: Scope) -> None:
    # a source leaves a data slot when it held slot <= backups and ends outside them
    leaves = [(k, old) for k, old, new in _moves(scope)
              if 0 <= old <= scope.backups and not 0 <= new <= scope.backups]
    assert any(old == 0 for _, old in leaves) == scope.moves_owner, _moves(scope)
    assert any(old > 0 for _, old in leaves) == scope.moves_backup, _moves(scope)
    if scope.moves_owner or scope.moves_backup:
        assert {k for k, _ in leaves} & {"MOVE", "SHIFT_UP_SOURCE_DROPPED", "SHIFT_DOWN"}
    if scope.name == "owner-to-backup":
        # the other side of the seeds' rule: a source that stays at a data slot keeps its
        # copy (an owner shifting to slot 1)
        assert ("SHIFT_UP_SHIFT_DOWN", 0, 1) in _moves(scope), _moves(scope)


def test_the_harness_sees_a_fault() -> None:
    # the scopes are not vacuous: a scripted crash and a dropped message really happen
    s = BY_NAME["owner-moves"]
    o = run_case(_case(s, CrashAt("destination", "replica_copied"), [("MigrationCommit", 1)]))
    assert o.result.faults_injected.get("scripted_crash") == 1
    assert o.marks.get("migration_failed", 0) >= 1
    o = run_case(_case(s, None, [("MigrationCommit", 1)]))
    assert o.result.faults_injected.get("filter_dropped") == 1
    assert any(line.startswith("DROP MigrationCommit") for line in o.actual)
    # every mark is reached by some scope, so "every mark" is not an empty loop
    reached: set[str] = set()
    for sc in SCOPES:
        sim, _ = _run(_case(sc, None, []), "")
        reached |= set(sim.mark_counts)
    assert len(reached) >= 8, sorted(reached)


def _figures() -> None:    # the module docstring's table
    total_runs = total_cov = 0
    for s in SCOPES:
        t0 = time.process_time()
        a = [crash_every_mark(s, d) for d in _drops(s)]
        t1 = time.process_time()
        b = [drop_subsets(s, SUBSET_CRASHES[c], h) for c in s.subset_crashes
             for h in range(2 ** HIGH_BITS)]
        t2 = time.process_time()
        ra, ca = sum(x[0] for x in a), sum(x[1] for x in a)
        rb, cb = sum(x[0] for x in b), sum(x[1] for x in b)
        assert all(not x[2] for x in a + b)
        print(f"{s.name}: crash x mark x drop {ra} (of {ca}); drop subsets {rb} (of {cb}); "
              f"executed {ra + rb}; CPU {t1 - t0:.1f} s + {t2 - t1:.1f} s")
        total_runs += ra + rb
        total_cov += ca + cb
    print(f"total executed {total_runs} for {total_cov} schedules; marks {len(MARKS)}")


if __name__ == "__main__":
    _figures()
