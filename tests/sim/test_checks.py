"""The simulator's checker has teeth (docs/design.md §12.4): every replica is checked and
never repaired, a clear of the last copy is never excused, an entry a live member still
holds is never an expected loss, and a clear for a migration no master committed is seen
whatever the migration's state."""
from __future__ import annotations

import pytest

import hzfast.sim.cluster as cluster
from hzfast import sim
from hzfast.protocol import MigrationStatus, Node
from hzfast.protocol import messages as msg
from hzfast.protocol.kinds import CLEAR
from hzfast.protocol.outputs import Effect
from hzfast.sim.timeline import EFFECT

SHAPE = dict(faults="none", joins=1, partitions=32, entries=600, backup_count=1)


def _clears_once(pick: str) -> type[Node]:
    """A member that, once, late in the writes, clears a partition it holds as ``pick``
    (``owner`` or ``backup``) without being asked: no crash takes those entries."""

    class Careless(Node):
        done = False

        def handle(self, event: object, now: int) -> list[object]:
            out = super().handle(event, now)
            if not Careless.done and now > 2_000 and self.initialized and not self.busy:
                col = 0 if pick == "owner" else 1
                held = [p for p in range(len(self.versions)) if self.replicas[p, col] == self.me]
                if held:
                    Careless.done = True
                    self._effect(CLEAR, held[0])
                    out = out + self._out
                    self._out = []
            return out

    return Careless


def test_honest_runs_pass_the_stronger_checks() -> None:
    for seed in range(3):
        r = sim.run(seed, **SHAPE)
        assert r.ok and r.entries_lost == 0, r.violations


def test_a_backup_that_silently_drops_its_copy_is_caught() -> None:
    # a backup's runtime loses its copy of one partition (an effect no node asked for),
    # after every write landed: the owner keeps every entry, so the set check (which
    # reads the owner) sees nothing; only a check of each replica does (the checker used
    # to copy the owner's data onto the backups before comparing)
    def run(clear: list[int]) -> tuple[cluster.Simulation, sim.SimulationResult]:
        s = cluster.Simulation(6, members=3, partitions=8, backup_count=1, entries=200,
                               faults="none", write_window=(1, 500))
        for i, p in enumerate(clear):
            s.tl.push(1_000 + i, EFFECT, (2, Effect(10**9 + i, CLEAR, p, None)))
        return s, s.run()

    clean, r = run([])                           # nothing moves: the table stays as made
    assert r.ok
    table = clean.nodes[clean.view[0]].replicas
    backed = [p for p in range(8) if table[p, 1] == 2]
    assert backed
    _, r = run(backed)
    assert r.converged and r.entries_lost == 0 and r.entries_acknowledged == 200
    assert any("partition" in v and ("data on" in v or "lacks" in v) for v in r.violations), \
        r.violations


def test_an_owner_that_drops_its_copy_is_caught_by_cause(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "Node", _clears_once("owner"))
    r = sim.run(6, **SHAPE)
    assert r.entries_lost > 0 and r.entries_lost_expected == 0
    assert set(r.lost_by) <= {"not_on_owner", "clear"} and r.lost_by, r.lost_by
    assert any("lost with fewer than" in v for v in r.violations), r.violations


def test_a_clear_for_an_active_migration_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # a source that clears as soon as the master asks it for the data: the migration is
    # still ACTIVE, so no master committed it (the check used to look at SUCCESS only)
    class Eager(Node):
        def handle(self, event: object, now: int) -> list[object]:
            out = super().handle(event, now)
            m = getattr(event, "message", None)
            if isinstance(m, msg.MigrationRequest) and m.migration.source == self.me:
                x = m.migration
                assert x.status == MigrationStatus.ACTIVE
                out = out + [Effect(10**9 + len(out), CLEAR, x.partition, x)]
            return out

    monkeypatch.setattr(cluster, "Node", Eager)
    r = sim.run(1, **SHAPE)
    assert any("before a master committed it" in v and "ACTIVE" in v for v in r.violations), \
        r.violations[:3]


def _settled(seed: int = 2) -> cluster.Simulation:
    s = cluster.Simulation(seed, members=3, partitions=1, backup_count=1, entries=40,
                           faults="none")
    r = s.run()
    assert r.ok and r.entries_acknowledged == 40
    return s


def test_an_entry_a_live_member_holds_is_never_an_expected_loss() -> None:
    # both committed holders crash in the ghost model's eyes (a count of 2 = backup_count
    # + 1), yet a third member still holds the entries: losing them from the owner is a
    # violation, not an expected loss
    s = _settled()
    d = s.data
    owner, backup = (int(v) for v in s.nodes[s.view[0]].replicas[0, :2])
    other = next(m for m in s.nodes if m not in (owner, backup))
    everything = d.acked[0]
    d.store[other][0] = everything                  # a surplus copy on a third member
    d.crash(backup)
    d.store[backup] = {}
    d.crash(owner)                                  # two holder crashes counted
    d.store[owner] = {0: 0}                         # the owner reads nothing
    s.tl.violations.clear()
    lost, expected, _, by = s.checks.at_end(False)
    assert lost == 40 and expected == 0 and by == {"not_on_owner": 40}
    assert s.tl.violations and "missing on the owner" in s.tl.violations[0]


@pytest.mark.parametrize("surplus", [True, False])
def test_a_clear_of_the_last_copy_is_excused_only_for_a_surplus_copy(surplus: bool) -> None:
    # the committed holders (owner and backup) crash; a copy the cleared member still had
    # goes last. Excused when that member is at no data slot of the latest commit (the
    # loss is the two crashes'), a violation when it is one of the partition's replicas.
    s = _settled()
    d = s.data
    owner, backup = (int(v) for v in s.nodes[s.view[0]].replicas[0, :2])
    other = next(m for m in s.nodes if m not in (owner, backup))
    keeper = other if surplus else backup
    everything = d.acked[0]
    d.store[other][0] = everything
    for m in (owner, backup):
        if m != keeper:
            d.crash(m)
            d.store[m] = {}
    if not surplus:                                 # one more holder crash: the other
        d.crash(other)
        d.store[other] = {}
    levels = d.crashes[0]
    assert levels[1] == everything                  # every entry counted twice
    d.clear(keeper, 0)
    assert not any(st.get(0) for st in d.store.values())
    want = d.lost_to_crashes if surplus else d.lost_to_clear
    assert want.get(0) == everything
    assert not (d.lost_to_clear if surplus else d.lost_to_crashes).get(0)
