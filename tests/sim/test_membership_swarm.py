"""Membership under pauses, partitions, crashes and joins, on thousands of seeds
(hzfast.sim.membership), and the proof that the checker sees split brain.

``HZFAST_MEMBERSHIP_SEEDS`` (default 2,000) protected seeds and a quarter as many without
protection run in CI, split into chunks that pytest-xdist spreads over the cores. The first
``DEFAULT_CHUNKS`` chunks (500 protected seeds, 125 without) are in the default test run;
the others are marked ``slow`` (CI's second stage runs them).
"""
from __future__ import annotations

import os

import pytest

from hzfast.protocol.membership import Membership
from hzfast.sim.membership import MembershipFaults, MembershipResult, run_membership

SEEDS = int(os.environ.get("HZFAST_MEMBERSHIP_SEEDS", "2000"))
CHUNKS = 16
DEFAULT_CHUNKS = 4


def _explain(r: MembershipResult, mcs: object) -> str:
    return (f"replay: hzfast.sim.membership.run_membership({r.seed}, "
            f"min_cluster_size={mcs!r})\n  members={r.members} faults={r.faults}\n"
            f"  injected={r.injected}\n  violations={r.violations[:4]}")


@pytest.mark.parametrize("chunk", [c if c < DEFAULT_CHUNKS
                                   else pytest.param(c, marks=pytest.mark.slow)
                                   for c in range(CHUNKS)])
@pytest.mark.parametrize("mcs", ["majority", None])
def test_membership_swarm(chunk: int, mcs: str | None) -> None:
    seeds = range(chunk, SEEDS if mcs else SEEDS // 4, CHUNKS)
    stats = {"pauses": 0, "partitions": 0, "healed": 0}
    for seed in seeds:
        r = run_membership(seed, min_cluster_size=mcs)
        assert r.ok, _explain(r, mcs)
        stats["pauses"] += r.injected.get("member_paused", 0)
        stats["partitions"] += sum(n for k, n in r.injected.items()
                                   if k.startswith("partition_"))
        stats["healed"] += r.heal_time >= 0
    assert stats["pauses"] and stats["partitions"]      # the faults were really drawn
    assert stats["healed"] >= 0.9 * len(seeds)


def test_a_run_replays_exactly() -> None:
    a, b = run_membership(11, trace=True), run_membership(11, trace=True)
    assert a.trace == b.trace and a.injected == b.injected and a.heal_time == b.heal_time
    assert a.trace                                       # (it recorded something)


def test_no_faults_one_cluster_at_once() -> None:
    r = run_membership(3, faults="none")
    assert r.ok and r.heal_time <= 100 and r.lists_committed == 0


def test_long_pauses_of_two_of_five_lose_them_and_they_come_back() -> None:
    r = run_membership(5, members=5, faults=MembershipFaults(pauses=3))
    assert r.ok, r.violations
    assert r.injected["member_paused"] == 3


class _NoLease(Membership):
    """Hazelcast's split-brain protection: a side serves while its list is long enough,
    whatever it last heard (no lease on fresh echoes)."""

    def may_serve(self, now: int) -> bool:
        lst = self.list
        return (lst is not None and not self.removed
                and len(lst.members) >= self.config.quorum(len(lst.members)))


class _NoSuspicionCheck(Membership):
    """An acceptor that accepts any removal its master proposes, and answers at once."""

    def _acceptable(self, sender: int, base: tuple[int, int], lst: object,
                    recovered: bool) -> str:
        return super()._acceptable(sender, base, lst, True)  # type: ignore[arg-type]

    def _release(self) -> None:
        self._deferred = [(min(r, self._now), p, k) for r, p, k in self._deferred]
        super()._release()


@pytest.mark.parametrize("broken,within", [(_NoLease, 20), (_NoSuspicionCheck, 400)])
def test_the_checker_sees_split_brain(broken: type[Membership], within: int) -> None:
    # a broken rule must show as a member serving outside the newest committed list
    for seed in range(within):
        r = run_membership(seed, factory=broken)
        if any("serves under" in v for v in r.violations):
            return
    pytest.fail(f"{broken.__name__}: no split brain seen in {within} seeds")
