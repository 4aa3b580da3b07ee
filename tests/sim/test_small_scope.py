"""Exhaustive small scope (docs/design.md §7): 3 members × 2 partitions × 1 backup.

Two members start, a third joins at t=100 so that migrations run (design "safe"). Every
run must end converged, with no violation and no loss beyond the expected one.

- ``test_mark_role_drop``: for every protocol mark × every role of hzfast.sim.CrashAt ×
  its 1st or 2nd occurrence × (no message dropped | the first, or the first two, messages
  of one commit-phase type dropped): 15 × 4 × 2 × 19 = 2,280 runs, one test per mark.
- ``test_drop_subsets``: every subset of the nine commit-phase message types, each type in
  the subset losing its first message (2**9 = 512 subsets), with no crash, with the master
  crashing at the first migration_started, and with the destination crashing at the first
  replica_copied: 1,536 runs in 8 chunks.

About 40 s on one core here; each test is independent (pytest-xdist can spread them).
"""
from __future__ import annotations

import itertools

import pytest

from hzfast.protocol import MARKS
from hzfast.sim.cluster import ROLES, CrashAt
from hzfast.sim.scenario import Case, Filter, run_case

COMMIT_PHASE = ("MigrationRequest", "MigrationTransfer", "MigrationTransferAck",
                "MigrationResult", "MigrationCommit", "MigrationCommitResponse",
                "PublishCompletedMigrations", "PublishCompletedAck", "PartitionTableUpdate")
DROPS: tuple[tuple[str, int] | None, ...] = (None,) + tuple(
    (t, n) for t in COMMIT_PHASE for n in (1, 2))
CHUNKS = 8


def _case(crash: CrashAt | None, drops: list[tuple[str, int]]) -> Case:
    c = Case("small-scope", 0, members=2, partitions=2, backups=1, entries=20)
    c.actions.append((100, "join", -1, False))
    if crash is not None:
        c.script.append(crash)
    for t, times in drops:
        c.filters.append(Filter("drop", t, nth=1, times=times))
    c.ran = True
    return c


def _check(c: Case, label: str) -> list[str]:
    r = run_case(c).result
    bad = []
    if r.violations:
        bad.append(f"{label}: {r.violations[0]}")
    if not r.converged:
        bad.append(f"{label}: did not converge")
    if r.entries_lost != r.entries_lost_expected:
        bad.append(f"{label}: lost {r.entries_lost}, expected {r.entries_lost_expected}")
    if r.entries_unexpected:
        bad.append(f"{label}: {r.entries_unexpected} entries read that were never written")
    return bad


@pytest.mark.parametrize("mark", MARKS)
def test_mark_role_drop(mark: str) -> None:
    bad: list[str] = []
    runs = 0
    for role, nth, drop in itertools.product(ROLES, (1, 2), DROPS):
        c = _case(CrashAt(role, mark, nth), [drop] if drop else [])
        bad += _check(c, f"crash {role} at {mark}#{nth}, drop {drop}")
        runs += 1
    assert runs == len(ROLES) * 2 * len(DROPS)
    assert bad == []


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_drop_subsets(chunk: int) -> None:
    crashes = (None, CrashAt("master", "migration_started"),
               CrashAt("destination", "replica_copied"))
    subsets = [s for s in range(2 ** len(COMMIT_PHASE)) if s % CHUNKS == chunk]
    bad: list[str] = []
    for s, crash in itertools.product(subsets, crashes):
        drops = [(t, 1) for i, t in enumerate(COMMIT_PHASE) if s >> i & 1]
        bad += _check(_case(crash, drops), f"drop first of {[t for t, _ in drops]}, {crash}")
    assert bad == []


def test_the_harness_sees_a_fault() -> None:
    # the scope is not vacuous: a scripted crash and a dropped message really happen
    c = _case(CrashAt("destination", "replica_copied"), [("MigrationCommit", 1)])
    o = run_case(c)
    assert o.result.faults_injected.get("scripted_crash") == 1
    assert o.marks.get("migration_failed", 0) >= 1
    c = _case(None, [("MigrationCommit", 1)])
    o = run_case(c)
    assert o.result.faults_injected.get("filter_dropped") == 1
    assert any(line.startswith("DROP MigrationCommit") for line in o.actual)
