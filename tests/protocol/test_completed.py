"""The completed-migration list (hzfast.protocol.completed, docs/design.md §11.2): its parts
read as one list, and ``keep_current``'s per-partition index gives its defining rule after
every call of whole simulated runs.
"""
from __future__ import annotations

import numpy as np
import pytest

from hzfast import sim
from hzfast.protocol import Config, MembershipChanged, MigrationInfo, MigrationStatus, Node, _lists
from hzfast.protocol import completed as completed_module
from hzfast.protocol.completed import CompletedList

SUCCESS = MigrationStatus.SUCCESS
Entries = dict[tuple[int, int], MigrationInfo]


def _info(seq: int, p: int, final: int = 2) -> MigrationInfo:
    return MigrationInfo((1, seq), p, 1, 0, -1, 3, -1, 0, 1, final - 1, final, SUCCESS)


def _whole(head: Entries, front: Entries, back: Entries
           ) -> list[tuple[tuple[int, int], MigrationInfo]]:
    return [*head.items(), *((m, front[m]) for m in reversed(front)), *back.items()]


def _member() -> Node:
    """Member 2 of a 3-member view (not the master), with a table at versions 3..8."""
    reps = np.full((6, 7), -1, dtype=np.int32)
    reps[:, :2] = [[1, 2], [2, 3], [3, 1], [1, 3], [2, 1], [3, 2]]
    n = Node(2, Config(partition_count=6, backup_count=1), replicas=reps,
             versions=np.arange(3, 9, dtype=np.int32))
    n.handle(MembershipChanged((1, 2, 3)), 0)
    return n


def test_parts_read_as_one_list() -> None:
    # as_dict joins the parts (head, then front reversed, then back) into one dict in that
    # order and keeps the index current; add_committed appends a new id at the end and
    # replaces a known one where it is; replace starts a single part
    cl = CompletedList(np.zeros(6, np.int32))
    a, b, c, d, e = (_info(i, i) for i in range(1, 6))
    cl._head, cl._front, cl._back = {a.id: a}, {c.id: c, b.id: b}, {d.id: d}
    cl.add_committed(e)                          # new: behind everything
    b2 = _info(2, 1)
    cl.add_committed(b2)                         # known (in front): replaced in place
    cl._index_of, cl._index_len = cl._head, 1
    joined = cl.as_dict()
    assert list(joined.items()) == [(a.id, a), (b.id, b2), (c.id, c), (d.id, d), (e.id, e)]
    assert cl.parts()[1:] == ({}, {}) and cl.as_dict() is joined
    assert cl.index_state()["current"] and cl.index_state()["length"] == 5
    cl.add_committed(_info(6, 0))                # one part: straight into it
    assert list(cl.head)[-1] == (1, 6) and cl.parts()[2] == {}
    assert cl.index_state()["length"] == 6 and (1, 6) in cl.index_state()["recheck"]
    cl._front = {a.id: a}
    cl.replace({b.id: b})
    assert list(cl.as_dict().items()) == [(b.id, b)] and cl.parts()[1] == {}
    assert cl.entries() == (b,) and cl.of_partition(2) == (b,) and cl.of_partition(1) == ()


def test_keep_current_reads_any_int_vector() -> None:
    # versions of another dtype are read through a converted copy, with the same result
    cl = CompletedList(np.zeros(6, np.int32))
    vers = np.zeros(6, np.int64)
    x = _info(1, 0, final=3)
    vers[0] = 3
    cl.keep_current({x.id: x}, vers)
    assert list(cl.as_dict()) == [x.id]
    vers[0] = 4
    cl.keep_current({}, vers)
    assert list(cl.as_dict()) == []


def test_an_empty_list_after_a_version_change_still_drops_what_is_past() -> None:
    # the skip needs the versions keep_current saw last: once a partition moved on, an
    # empty list still drops that partition's entry that is no longer current
    n = _member()
    x = MigrationInfo((1, 1), 0, 1, 0, 1, 2, 1, 0, 1, 2, 3, SUCCESS)   # p0 ends at v3
    n._list.keep_current({x.id: x}, n.versions)
    assert list(n.completed) == [x.id] and not n._list.index_state()["recheck"]
    assert n._apply_completed(()) and list(n.completed) == [x.id]      # nothing changed
    n.versions[0] += 1                                                 # p0 moved on
    assert n._apply_completed(()) and list(n.completed) == []


def test_keep_current_index_follows_whole_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # the kernel CompletedList.keep_current calls (the completed module's binding of it)
    # is wrapped, and every call's result held to the rule over the member's previous
    # list ``old`` (its parts: head, then front reversed, then back)
    calls = moved = chained = extending = 0
    fast = _lists.keep_current
    # a call's result, by its head (held, so no other dict takes its id): the next call
    # on that member must start from it, with destination commits (add_committed) only
    # ever appended behind it
    after: dict[int, tuple[Entries, list[tuple[int, int]]]] = {}

    def checked(keep: Entries, head: Entries, front: Entries, back: Entries,
                *rest: object) -> object:
        nonlocal calls, moved, chained, extending
        old = _whole(head, front, back)
        pairs = list(zip(head.items(), keep.items()))
        if keep is not head and len(pairs) == len(head) \
                and all(a is c and b is d for (a, b), (c, d) in pairs):
            extending += 1                       # the kernel's shortcut: head starts keep
        if id(head) in after:
            ids = after.pop(id(head))[1]
            assert [m for m, _ in old[:len(ids)]] == ids
            chained += 1
        want = dict(keep)
        vl = rest[2].tolist()                    # type: ignore[attr-defined]
        for mid, x in old:
            if mid not in want and vl[x.partition] == x.final:
                want[mid] = x
        before = len(front) + len(back)
        out = fast(keep, head, front, back, *rest)   # type: ignore[arg-type]
        assert _whole(keep, front, back) == list(want.items())
        assert not (keep.keys() & (front.keys() | back.keys()))
        after[id(keep)] = (keep, list(want))
        moved += len(front) + len(back) > before
        calls += 1
        return out

    monkeypatch.setattr(completed_module, "_keep_kernel", checked)
    for seed in range(6):
        r = sim.run(seed, partitions=32, entries=300, backup_count=seed % 3)
        assert r.ok, r.summary()
    assert calls > 100 and moved > 10 and chained > calls // 2
    assert calls // 4 < extending < calls        # both of the kernel's ways, often


def test_an_empty_list_skips_keep_current_only_when_it_changes_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # every empty carried list leaves a member's list as the kernel, run on copies of the
    # list's state, would make it; often without the call (the list's head unchanged)
    from hzfast.sim import cluster
    calls = skipped = 0

    class Checked(Node):
        def _apply_completed(self, lst: tuple[MigrationInfo, ...]) -> bool:
            nonlocal calls, skipped
            st = self._list.index_state()
            check = (not lst and not self.is_master and self.initialized and st["current"]
                     and len(self._list.head) == st["length"])
            if check:
                head, front, back = (dict(d) for d in self._list.parts())
                index = {q: set(ids) for q, ids in st["index"].items()}
                recheck = _lists.keep_current({}, head, front, back, set(st["recheck"]),
                                              index, self.versions.copy(), st["seen"].copy())
                want = _whole({}, front, back)
                was = self._list.head
            ok: bool = super()._apply_completed(lst)
            if check:
                assert ok and _whole(*self._list.parts()) == want
                calls += 1
                if self._list.head is was:              # the call was skipped
                    assert not recheck and not self._list.index_state()["recheck"]
                    skipped += 1
            return ok

    monkeypatch.setattr(cluster, "Node", Checked)
    for seed in range(6):                          # (the default shape)
        r = sim.run(seed)
        assert r.ok, r.summary()
    assert calls > skipped > 1_000
