"""Swarm seeds on cluster shapes the other swarm tests do not reach: more backups (3 and
6), the smallest and a larger cluster (2 and 8 members at start), members joining on
purpose (``joins``), no backups at all, 1,000 partitions, and the master's per-member limit
of parallel migrations at 1 (every member in one migration at a time) and at 1,000 (a limit
that never binds), where the swarm keeps Hazelcast's 10.

``HZFAST_SIM_SHAPE_SEEDS`` (default 100) seeds per shape in the safe design (the first 25
in the README's test command, the rest in CI's slow stage), each held to
the same claim as everywhere: it converges, breaks no invariant, and loses only entries
whose every holder crashed. The legacy design on the same shapes must show its loss, so
the checker is known to see loss there too. A failure names the seed and the shape;
``hzfast.sim.run(seed, **shape)`` replays it.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from hzfast import sim

SEEDS = int(os.environ.get("HZFAST_SIM_SHAPE_SEEDS", "100"))

SHAPES: dict[str, dict[str, Any]] = {
    "6 members, 3 backups": dict(members=6, backup_count=3, partitions=128, entries=2_000),
    "2 members": dict(members=2, backup_count=1, partitions=64, entries=2_000),
    "8 members, 6 backups": dict(members=8, backup_count=6, partitions=32, entries=1_000),
    "5 members, 2 backups, 2 joins": dict(members=5, backup_count=2, partitions=271,
                                          entries=3_000, joins=2),
    "no backups, 1 join": dict(members=3, backup_count=0, partitions=97, entries=2_000,
                               joins=1),
    "1,000 partitions": dict(members=4, backup_count=1, partitions=1_000, entries=5_000),
    "one migration a member at a time": dict(members=4, backup_count=1, partitions=128,
                                             entries=2_000, max_parallel_migrations=1),
    "a limit that never binds, 2 backups": dict(members=5, backup_count=2, partitions=271,
                                                entries=2_000, max_parallel_migrations=1_000),
}


QUICK = 25      # seeds per shape in the README's test command; CI runs the rest (slow)


@pytest.mark.parametrize("name,seeds", [
    p for n in SHAPES for p in (pytest.param(n, range(min(QUICK, SEEDS)), id=n),
                                pytest.param(n, range(QUICK, SEEDS), id=f"{n}, more seeds",
                                             marks=pytest.mark.slow))])
def test_safe_design_loses_only_what_crashes_took(name: str, seeds: range,
                                                  explain: Callable[..., str]) -> None:
    shape = SHAPES[name]
    crashed = joined = lost = 0
    for seed in seeds:
        r = sim.run(seed, **shape)
        assert r.ok, explain(r, **shape)
        assert r.entries_lost == r.entries_lost_expected, explain(r, **shape)
        assert r.entries_unexpected == 0, explain(r, **shape)
        crashed += r.faults_injected.get("member_crashed", 0)
        joined += r.faults_injected.get("member_joined", 0)
        lost += r.entries_lost
    if len(seeds) >= 20:                 # the seeds did reach the faults that matter here
        assert crashed > 0 and joined > 0
        if shape["backup_count"] == 0:
            assert lost > 0              # one crash of an owner loses its entries


@pytest.mark.parametrize("name", [n for n, s in SHAPES.items() if s["backup_count"] > 0
                                  and s["partitions"] <= 271])
def test_legacy_design_shows_loss_on_the_same_shapes(name: str) -> None:
    shape = SHAPES[name]
    for seed in range(30):                 # the first seed that shows it is enough
        if sim.run(seed, design="legacy", **shape).violations:
            break
    else:
        pytest.fail(f"the legacy design broke nothing in 30 seeds of {shape}")
