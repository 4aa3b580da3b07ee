"""The migration simulator with the members' own lists (docs/design.md §12.6): membership
decided by each member's heartbeats, pauses and partitions in the run's loop, and the data
check under split-brain protection.

``HZFAST_SIM_MEMBER_SEEDS`` (default 1,200) swarm seeds with pauses and partitions run in
CI under ``min_cluster_size="majority"``, in chunks that pytest-xdist spreads over the
cores; the first ``DEFAULT_CHUNKS`` chunks are in the default test run, the others are
marked ``slow``. The scripted cases are the real-process cases of docs/node.md, in ticks.
"""
from __future__ import annotations

import os
from collections import Counter

import pytest

from hzfast import sim
from hzfast.protocol.membership import Membership
from hzfast.sim.cluster import HEARTBEAT_TICKS, Action, Simulation, SimulationResult

SEEDS = int(os.environ.get("HZFAST_SIM_MEMBER_SEEDS", "1200"))
CHUNKS = 8
DEFAULT_CHUNKS = 2
T = 6 * HEARTBEAT_TICKS          # the members' heartbeat timeout, in ticks


def _explain(r: SimulationResult, **kw: object) -> str:
    args = "".join(f", {k}={v!r}" for k, v in kw.items())
    return (f"\nreplay: hzfast.sim.run({r.seed}{args})\n{r.summary()}\n"
            f"violations: {r.violations[:4]}\nlast events:\n  " + "\n  ".join(r.last_events))


@pytest.mark.parametrize("chunk", [c if c < DEFAULT_CHUNKS
                                   else pytest.param(c, marks=pytest.mark.slow)
                                   for c in range(CHUNKS)])
def test_swarm_with_pauses_and_partitions_loses_nothing(chunk: int) -> None:
    """Protected (the default): every seed passes, and only entries more holders than
    backups crashed under are lost; the pauses and partitions really happened and made
    members leave, and most runs end as one cluster (the rest lost their quorum to
    crashes, stuck by design)."""
    seeds = range(chunk, SEEDS, CHUNKS)
    seen: Counter[str] = Counter()
    converged = 0
    for seed in seeds:
        r = sim.run(seed)
        assert r.ok and r.entries_lost == r.entries_lost_expected, _explain(r)
        assert set(r.lost_by) <= {"crashes"}, _explain(r)
        seen.update(r.faults_injected)
        converged += r.converged
    assert seen["member_paused"] and seen["member_removed"]
    assert sum(n for k, n in seen.items() if k.startswith("partition_"))
    assert converged >= 0.7 * len(seeds)


def _scripted(actions: tuple[tuple[int, Action], ...], **kw: object) -> SimulationResult:
    s = Simulation(1, members=5, partitions=271, backup_count=1, entries=10_000,
                   faults="none", membership="nodes", actions=actions,
                   **kw)  # type: ignore[arg-type]
    return s.run()


@pytest.mark.parametrize("case, actions", [
    ("two of five paused", ((800, Action("pause", member=1, length=2 * T)),
                            (800, Action("pause", member=2, length=2 * T)))),
    ("the master paused", ((800, Action("pause", member=1, length=3 * T)),)),
    ("majority/minority partition", ((800, Action("partition", group=(1, 2),
                                                  length=3 * T)),)),
])
def test_the_real_process_cases_lose_nothing_and_heal(case: str, actions: object) -> None:
    """The SIGSTOP and iptables cases of the runtime (docs/node.md §5), in the simulator:
    the paused or cut-off members are removed, merge their data back and start again;
    one cluster of five after; every acknowledged entry kept."""
    r = _scripted(actions)  # type: ignore[arg-type]
    assert r.ok and r.converged, _explain(r)
    assert r.entries_acknowledged == 10_000 and r.entries_lost == 0
    removed = 1 if case == "the master paused" else 2
    assert r.faults_injected["member_removed"] == removed
    assert r.faults_injected["member_joined"] == removed       # back to five


def test_without_protection_a_merged_side_loses_only_by_its_policy() -> None:
    """Protection off (Hazelcast's default): both sides of a partition take writes; when
    it heals the smaller merges into the larger. Merging its data (put-if-absent) loses
    nothing; dropping it (discard) loses what only that side held, counted as
    ``split_brain`` and allowed; the same loss with protection on is a violation. (Keys
    are written once here, so the three merging policies add the same keys.)"""
    cut = ((800, Action("partition", group=(1, 2), length=3 * T)),)
    for policy in ("put_if_absent", "pass_through", "latest_update"):
        kept = _scripted(cut, min_cluster_size=None, merge_policy=policy)
        assert kept.ok and kept.entries_lost == 0, (policy, _explain(kept))
    dropped = _scripted(cut, min_cluster_size=None, merge_policy="discard")
    assert dropped.ok, _explain(dropped)
    assert dropped.lost_by.get("split_brain", 0) > 0
    assert dropped.entries_lost == dropped.entries_lost_expected == dropped.lost_by["split_brain"]


class _NoLease(Membership):
    """Serves on its list alone: Hazelcast's split-brain protection without leases."""

    def may_serve(self, now: int) -> bool:
        return self.list is not None and not self.removed


def test_the_checker_sees_a_side_that_serves_without_its_lease() -> None:
    cut = ((800, Action("partition", group=(1, 2), length=3 * T)),)
    r = _scripted(cut, membership_factory=_NoLease)
    assert any("leaves it out" in v for v in r.violations), r.violations[:4]
    assert any("both take writes" in v for v in r.violations), r.violations[:4]


def test_a_seed_replays_exactly() -> None:
    a, b = sim.run(12, trace=True), sim.run(12, trace=True)
    assert a.trace == b.trace and a.faults_injected == b.faults_injected
    assert any(k.startswith(("member_paused", "partition_")) for k in a.faults_injected)


def test_oracle_lists_stay_for_the_scripted_scenarios() -> None:
    """``membership="oracle"`` keeps the run publishing the list: no heartbeats, so no
    pause or partition can be scripted."""
    r = sim.run(3, membership="oracle")
    assert r.ok and r.membership == "oracle" and "member_paused" not in r.faults_injected
    with pytest.raises(ValueError, match="membership='nodes'"):
        Simulation(1, members=3, faults="none", membership="oracle",
                   actions=((10, Action("pause", member=1, length=5)),)).run()


def test_protection_drawn_per_seed() -> None:
    """``min_cluster_size="drawn"``: each seed draws protection on or off from a stream of
    its own, so the rest of the run is the one the drawn setting gives; both kinds pass."""
    drawn = {}
    for seed in range(30):
        r = sim.run(seed, min_cluster_size="drawn", entries=2_000)
        assert r.ok, _explain(r)
        drawn[seed] = r.min_cluster_size
        if seed < 6:                           # the same run as asking for it outright
            same = sim.run(seed, min_cluster_size=r.min_cluster_size, entries=2_000)
            assert (same.events, same.entries_lost, same.faults_injected) == \
                (r.events, r.entries_lost, r.faults_injected)
    assert set(drawn.values()) == {"majority", None}
    assert 8 <= sum(v is None for v in drawn.values()) <= 22


@pytest.mark.parametrize("kw, match", [
    ({"membership": "gossip"}, "membership must be one of"),
    ({"merge_policy": "latest"}, "merge_policy must be one of"),
    ({"nemesis": "pause,crash"}, "nemesis must name some of"),
    ({"min_cluster_size": 0}, "min_cluster_size"),
    ({"min_cluster_size": "most"}, "min_cluster_size"),
    ({"min_cluster_size": "drawn", "faults": "none"}, "'drawn' needs faults='swarm'"),
    ({"min_cluster_size": "drawn", "membership": "oracle"}, "'drawn' needs faults='swarm'"),
])
def test_bad_settings_name_the_argument(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sim.run(0, **kw)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=match):
        sim.check_settings(0, **kw)


def test_bad_actions_name_the_field() -> None:
    with pytest.raises(ValueError, match="Action.length"):
        Action("pause", member=1)
    with pytest.raises(ValueError, match="Action.kind"):
        Action("sigstop")


def test_long_run_seeds_a_member_nobody_told_heals() -> None:
    """Seeds of the first long run with the members' own lists (docs/long-runs.md). 10554:
    a stale join request re-admitted a removed member under its old id (an id is never
    admitted twice now). 35808: a joiner whose seeds had all gone kept asking them; 39597:
    a member removed behind a partition heard nobody of its list again (they crashed) and
    nobody told it. Members now learn of new members (discovery), and one that hears
    nobody of its list asks everyone it knows for theirs. 42694: the only member that knew
    a list committed crashed, and the others, holding it accepted, lack their older list's
    quorum to settle it: stuck by design, now counted so."""
    for seed in (10554, 32543, 35808, 39597, 42694, 67033, 75411):
        r = sim.run(seed)
        assert r.ok, _explain(r)                 # (10554 now loses its quorum to crashes)
        assert r.converged == (seed in (35808, 39597, 67033, 75411)), _explain(r)
        assert r.quorum_lost == (seed in (10554, 32543, 42694))
        assert r.entries_lost == r.entries_lost_expected


def test_seed_43665_a_committed_move_whose_master_and_destination_are_gone() -> None:
    """Found by the long run with the members' own lists (docs/long-runs.md): master m1
    committed an owner move of partition 16 (m4 -> m7); m7 took writes, backed up on m6;
    m1 was removed (a partition) before any other member learned of the commit, and m7
    crashed. The next master failed the move, m4 owned the partition again without those
    writes, and 36 acknowledged entries were on the backup only, though only one of their
    holders crashed. A backup now applies writes only from the owner its own table names
    (§7.11(b)), so a write is acknowledged only once its backups know of the move, and a
    next master that hears from any of them keeps it."""
    r = sim.run(43665)
    assert r.ok, _explain(r)
