"""The node's kernels give what the plain rules give (docs/design.md §11.2, §11.4).

* ``Node._apply_completed`` (§7.5 with the kept-only entries skipped in C) against the
  entry-by-entry rule written here in plain Python, on the same node state, over random
  completed lists that mix applicable, stale, out-of-order, malformed and ACTIVE entries:
  same answer, table, completed dict (order included), outputs and bookkeeping.
* The ``_scan`` kernels of the master step against their numpy rules, the simulator's
  ``advance_versions`` against its rule.
"""
from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hzfast import sim
from hzfast.protocol import (
    Config,
    MembershipChanged,
    MigrationInfo,
    MigrationStatus,
    Node,
    _build,
    _lists,
    _scan,
)
from hzfast.protocol.kinds import MarkName
from hzfast.protocol.node import apply_to_row, migration_fits_row
from hzfast.sim._checks import advance_versions

P = 6
ACTIVE, SUCCESS, FAILED = MigrationStatus.ACTIVE, MigrationStatus.SUCCESS, MigrationStatus.FAILED


def _member() -> Node:
    """Member 2 of a 3-member view (not the master), with a table at versions 3..8."""
    n = Node(2, Config(partition_count=P, backup_count=1))
    n.handle(MembershipChanged((1, 2, 3)), 0)
    n.replicas[:, :2] = [[1, 2], [2, 3], [3, 1], [1, 3], [2, 1], [3, 2]]
    n.versions[:] = np.arange(3, 3 + P, dtype=np.int32)
    n.initialized = True
    return n


_ints = st.one_of(st.integers(-1, 7), st.sampled_from([2**70, -2**70, 10**9]))


@st.composite
def _entry(draw: st.DrawFn, seq: int) -> object:
    """A completed-list entry: usually well formed, sometimes not at all."""
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from([None, "x", 3, (1, 2)]))
    odd = draw(st.integers(0, 8)) == 0
    p = draw(_ints) if odd else draw(st.integers(0, P - 1))
    initial = draw(st.integers(1, 11))
    final = draw(st.sampled_from([initial + 1, initial + 2, initial + 3, 2**70])) if odd \
        else initial + draw(st.integers(1, 3))
    source = draw(st.sampled_from([-1, 1, 2, 3]))
    sci = draw(st.integers(-1, 2)) if source >= 0 else -1
    status = draw(st.sampled_from([SUCCESS, SUCCESS, FAILED, ACTIVE] if odd else [SUCCESS, FAILED]))
    return MigrationInfo((1, seq), p, source, sci, draw(st.integers(-1, 2)),
                         draw(st.sampled_from([1, 2, 3])), draw(st.integers(-1, 2)),
                         draw(_ints) if odd else draw(st.integers(0, 2)), 1, initial, final,
                         status)


@st.composite
def _lists_of_entries(draw: st.DrawFn) -> tuple[object, ...]:
    n = draw(st.integers(0, 12))
    ids = draw(st.lists(st.integers(1, 15), min_size=n, max_size=n))   # repeats: duplicates
    return tuple(draw(_entry(seq)) for seq in ids)


def _state(n: Node, out: Sequence[object]) -> tuple[object, ...]:
    return (n.replicas.tolist(), n.versions.tolist(), list(n.completed.items()),
            sorted(n.active.items()), sorted(n._finalized), sorted(n._unconfirmed.items()),
            sorted(n._finalizing.items()), repr(out))


def _rule(n: Node, lst: tuple[object, ...]) -> bool:
    """§7.5 entry by entry in plain Python: the rule ``Node._apply_completed`` runs with
    its kernel pass (docs/design.md §11.2)."""
    if n.is_master:
        return True
    if not n.initialized:
        return False
    ok = True
    keep: dict[tuple[int, int], MigrationInfo] = {}
    for x in lst:
        if n._check_migration(x) or x.status == ACTIVE:       # type: ignore[attr-defined]
            ok = False
            break
        assert isinstance(x, MigrationInfo)
        p = x.partition
        if n._unconfirmed.get(p) == x.id:
            del n._unconfirmed[p]
        cur = int(n.versions[p])
        if x.final <= cur:
            keep[x.id] = x
            if x.id not in n._finalized:
                n._finalize(x)
            continue
        if x.initial != cur:
            ok = False
            n._mark(MarkName.PARTIAL_UPDATE_REJECTED, x,
                    detail=f"local version {cur}, migration from {x.initial}")
            break
        if x.status == SUCCESS:
            if not migration_fits_row(n.replicas[p], x):
                ok = False
                n._mark(MarkName.PARTIAL_UPDATE_REJECTED, x,
                        detail=f"does not fit the row at version {cur}")
                break
            apply_to_row(n.replicas[p], x)
        n.versions[p] = x.final
        keep[x.id] = x
        n._finalize(x)
    n._list.keep_current(keep, n.versions)
    return ok


@settings(max_examples=300, deadline=None)
@given(first=_lists_of_entries(), second=_lists_of_entries(), active=st.integers(-1, P - 1),
       unconfirmed=st.integers(-1, P - 1))
def test_apply_completed_fast_equals_the_entry_by_entry_rule(
        first: tuple[object, ...], second: tuple[object, ...], active: int,
        unconfirmed: int) -> None:
    base = _member()
    if active >= 0:            # member 2 runs one migration (as source or destination)
        base.active[active] = MigrationInfo((1, 3), active, 2, 0, 1, 3, -1, 0, 1,
                                            int(base.versions[active]),
                                            int(base.versions[active]) + 2)
    if unconfirmed >= 0:
        base._unconfirmed[unconfirmed] = (1, 4)
    fast, slow = base, copy.deepcopy(base)
    for lst in (first, second, first):          # again: the index and the kept entries
        fast._out, slow._out = [], []
        a = _outcome(fast._apply_completed, lst)
        b = _outcome(lambda entries: _rule(slow, entries), lst)
        assert a == b           # the same answer, or the same exception (a final past int32)
        assert _state(fast, fast._out) == _state(slow, slow._out)
        if isinstance(a, type):
            break


def _outcome(apply: object, lst: tuple[object, ...]) -> object:
    try:
        return apply(lst)                        # type: ignore[operator]
    except OverflowError as e:
        return type(e)


def test_unchanged_compares_int32_vectors_only() -> None:
    a = np.arange(5, dtype=np.int32)
    b = a.copy()
    assert _lists.unchanged(a, b)
    b[4] += 1
    assert not _lists.unchanged(a, b)
    assert not _lists.unchanged(a, a[:4])                     # another length
    assert not _lists.unchanged(a, a.astype(np.int64))        # another dtype
    assert not _lists.unchanged(a, a.tolist())                # not an array
    assert not _lists.unchanged(np.arange(10, dtype=np.int32)[::2], a)   # not contiguous


def test_plain_vector_is_what_the_kernels_read_in_place() -> None:
    a = np.arange(5, dtype=np.int32)
    assert _lists.plain_vector(a)
    assert _lists.plain_vector(a[1:]) and not _lists.plain_vector(a[::2])  # strided
    assert not _lists.plain_vector(a.astype(np.int64))                   # another dtype
    assert not _lists.plain_vector(a.astype(">i4"))                      # byte-swapped
    assert not _lists.plain_vector(a.reshape(1, 5))                      # 2-D
    assert not _lists.plain_vector(a.tolist()) and not _lists.plain_vector(None)
    ro = a.copy()
    ro.setflags(write=False)
    assert _lists.plain_vector(ro)                                       # read only: read


def test_attention_never_raises_on_malformed_entries() -> None:
    v = np.arange(4, dtype=np.int32)
    odd = (None, 1.5, "x", MigrationInfo((1, 1), 2**80, 1, 0, -1, 2, -1, 0, 1, 1, 2, SUCCESS),
           MigrationInfo((1, 2), 1, 1, 0, -1, 2, -1, 0, 1, 1, 2**80, SUCCESS),
           MigrationInfo((1, 3), True, 1, 0, -1, 2, -1, 0, 1, 1, 2, SUCCESS))
    for i, x in enumerate(odd):
        assert _lists.attention((x,), 0, v, MigrationInfo, 7, set(), {}, {}, 2) == 0, i
    ok = MigrationInfo((1, 9), 3, 1, 0, -1, 2, -1, 0, 1, 1, 2, SUCCESS)
    assert _lists.attention((ok, ok), 0, v, MigrationInfo, 7, set(), {}, {}, 5) == 2


def test_attention_applies_plain_entries_in_place() -> None:
    # Given the member's table, an entry the full rule would simply apply (well formed,
    # starting at the member's version, SUCCESS or FAILED, nothing for this member to
    # finalize) is applied in C and passed over; the first other one stops the kernel
    # with nothing of it written. Without a writeable table of the right shape, or
    # without the statuses, it stops at the first entry above the version as before.
    def fresh() -> tuple[np.ndarray, np.ndarray]:
        t = np.full((4, 7), -1, dtype=np.int32)
        t[:, :2] = [[1, 2], [2, 3], [3, 1], [1, 3]]
        return t, np.array([3, 5, 2, 9], dtype=np.int32)

    move = MigrationInfo((1, 1), 0, 1, 0, 1, 3, -1, 0, 1, 3, 5, SUCCESS)   # p0: 3 -> 5
    failed = MigrationInfo((1, 2), 1, 2, 0, -1, 1, 1, 0, 1, 5, 9, FAILED)  # p1: 5 -> 9
    gap = MigrationInfo((1, 3), 2, 3, 0, -1, 2, 1, 0, 1, 4, 6, SUCCESS)    # p2 is at 2
    lst = (move, failed, gap)
    t, v = fresh()
    args = (lst, 0, v, MigrationInfo, 7, set(), {}, {}, 2)
    assert _lists.attention(*args, t, SUCCESS, FAILED) == 2
    want, want_v = fresh()
    apply_to_row(want[0], move)
    want_v[:2] = [5, 9]
    assert t.tolist() == want.tolist() and v.tolist() == want_v.tolist()
    # a participant's entry (member 3 is move's destination, with it active) is left to
    # the full rule, and so is a status that is not one of the two objects
    for me, active, status in ((3, {0: move}, SUCCESS), (2, {}, 1)):
        x = dataclasses.replace(move, status=status)
        t, v = fresh()
        assert _lists.attention((x,), 0, v, MigrationInfo, 7, set(), active, {}, me,
                                t, SUCCESS, FAILED) == 0
        assert t.tolist() == fresh()[0].tolist() and v.tolist() == fresh()[1].tolist()
    # arrays it cannot write: the plain answer, nothing written
    for table in (fresh()[0][:, :5], fresh()[0][:3], None):   # strided, too short, none
        t, v = fresh()
        assert _lists.attention(lst, 0, v, MigrationInfo, 7, set(), {}, {}, 2,
                                table, SUCCESS, FAILED) == 0
        assert v.tolist() == [3, 5, 2, 9]
    t, v = fresh()
    v.setflags(write=False)
    assert _lists.attention(lst, 0, v, MigrationInfo, 7, set(), {}, {}, 2,
                            t, SUCCESS, FAILED) == 0
    assert t.tolist() == fresh()[0].tolist()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 30), st.integers(1, 7), st.integers(0, 8), st.integers(0, 2**32 - 1))
def test_left_equals_its_numpy_rule(rows: int, width: int, k: int, seed: int) -> None:
    # _merge.left (the partitions a merge moved a member out of its first k slots of)
    # against the numpy rule Node._drop_stale used before it
    from hzfast.protocol import _merge

    rng = np.random.default_rng(seed)
    old = rng.integers(-1, 4, size=(rows, width)).astype(np.int32)
    new = rng.integers(-1, 4, size=(rows, width)).astype(np.int32)
    updated = rng.random(rows) < 0.6
    for me in (1, 2, 5):
        was = (old[:, :k] == me).any(axis=1)
        now = (new[:, :k] == me).any(axis=1)
        want = np.flatnonzero(updated & was & ~now).tolist()
        assert _merge.left(old, new, updated.view(np.uint8), me, k) == want
    with pytest.raises(ValueError, match="same partitions"):
        _merge.left(old, new[:0] if rows else new[:, :0], updated.view(np.uint8), 1, k)


def test_of_partition_equals_its_rule() -> None:
    # the completed migrations of one partition, in list order, for slot and attribute
    # readers alike (a class without slots) and odd partition values
    fields = [(f.name, f.type, f) for f in dataclasses.fields(MigrationInfo)]
    Plain = dataclasses.make_dataclass("Plain", fields, frozen=True)
    for cls in (MigrationInfo, Plain):
        entries = {(1, i): cls((1, i), p, 1, 0, -1, 2, -1, 0, 1, 2, 3, SUCCESS)
                   for i, p in enumerate([3, 1, 3, 0, 3, 2.0, True])}
        for p in (0, 1, 2, 3, 4, -1):
            want = tuple(x for x in entries.values() if x.partition == p)
            assert _lists.of_partition(entries, p) == want
            assert all(a is b for a, b in zip(_lists.of_partition(entries, p), want))
    assert _lists.of_partition({}, 0) == ()


def test_list_kernels_read_slots_and_attributes_alike() -> None:
    # MigrationInfo's fields are read from their slots; a class without slots through its
    # attributes: the same answers. An entry whose slots were never filled raises the
    # AttributeError attribute lookup raises (never a crash).

    fields = [(f.name, f.type, f) for f in dataclasses.fields(MigrationInfo)]
    Plain = dataclasses.make_dataclass("Plain", fields, frozen=True)   # no slots
    assert not hasattr(Plain, "__slots__")

    v = np.array([3, 5, 2, 9], dtype=np.int32)
    rows = [((1, 1), 0, 1, 0, -1, 2, -1, 0, 1, 2, 3, SUCCESS),
            ((1, 2), 1, 7, 1, -1, 2, -1, 1, 1, 4, 5, FAILED),
            ((1, 3), 2, 1, 0, -1, 2, -1, 0, 1, 2, 3, SUCCESS),     # final above: stop
            ((1, 4), 3, 7, 1, -1, 2, -1, 1, 1, 8, 9, SUCCESS)]
    for cls in (MigrationInfo, Plain):
        lst = tuple(cls(*r) for r in rows)
        assert _lists.attention(lst, 0, v, cls, 7, set(), {}, {}, 2) == 2
        assert _lists.attention(lst, 3, v, cls, 7, set(), {}, {}, 2) == 4
        assert _lists.attention(lst, 0, v, cls, 7, set(), {}, {}, 7) == 1  # 7: its source
        assert list(_lists.keyed(lst, 4)) == [(1, 1), (1, 2), (1, 3), (1, 4)]
        keep = _lists.keyed(lst, 4)
        index: dict[int, set[tuple[int, int]]] = {}
        seen = v.copy()
        assert _lists.keep_current(keep, {}, {}, {}, set(), index, v, seen) == {(1, 3)}
        assert index == {0: {(1, 1)}, 1: {(1, 2)}, 2: {(1, 3)}, 3: {(1, 4)}}
    class Shadowed(MigrationInfo):               # a slots class whose "final" is no slot
        __slots__ = ()
        final = property(lambda self: 3)

    with pytest.raises(TypeError, match="final is not a slot"):   # _build's check too
        _build.Builder(Shadowed)
    empty = object.__new__(MigrationInfo)
    with pytest.raises(AttributeError):
        _lists.attention((empty,), 0, v, MigrationInfo, 7, set(), {}, {}, 2)
    with pytest.raises(AttributeError):
        _lists.keyed((empty,), 1)
    with pytest.raises(TypeError, match="versions"):
        _lists.attention((), 0, v.astype(np.int64), MigrationInfo, 7, set(), {}, {}, 2)
    with pytest.raises(TypeError, match="versions"):
        _lists.keep_current({}, {}, {}, {}, set(), {}, v, v[::-1])
    with pytest.raises(ValueError, match="seen"):
        _lists.keep_current({}, {}, {}, {}, set(), {}, v, v[:2].copy())


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_scan_kernels_equal_their_numpy_rules(rows: int, width: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # ids below 14 take the 16-entry register lookup (on AVX2), larger ones the general one
    top = int(rng.choice([12, 14, 15, 40]))
    ids = rng.choice(np.arange(0, top), size=rng.integers(1, 8), replace=False)
    table = rng.choice(np.r_[-1, -1, np.arange(0, top + 2), 2**30],
                       size=(rows, width)).astype(np.int32)
    versions = rng.integers(0, 100, rows).astype(np.int32)
    # dense: ids -> positions, everything else -1
    at = np.full(int(ids.max()) + 1, -1, dtype=np.int32)
    at[ids] = np.arange(len(ids), dtype=np.int32)
    pos = {int(m): i for i, m in enumerate(ids)}
    want = np.vectorize(lambda v: pos.get(int(v), -1), otypes=[np.int32])(table)
    assert np.array_equal(_scan.dense(table, at), want)
    # repair_dense: clear the ids without a position (not in the view, or lite), bump
    # versions, list rows with an empty owner and a replica, and map what is left
    code = at.copy()
    code[rng.choice(ids, size=rng.integers(0, len(ids)), replace=False)] = -1   # lite ones
    keep = [int(m) for m in ids if code[m] >= 0]
    bad = (table >= 0) & ~np.isin(table, keep)
    want_t = np.where(bad, -1, table)
    want_v = versions + bad.sum(axis=1).astype(np.int32)
    want_need = np.flatnonzero((want_t[:, 0] == -1) & (want_t >= 0).any(axis=1))
    t, v = table.copy(), versions.copy()
    cleared, need, mapped = _scan.repair_dense(t, v, code)
    assert cleared == int(bad.sum())
    assert np.array_equal(t, want_t) and np.array_equal(v, want_v)
    assert np.array_equal(need, want_need)
    assert np.array_equal(mapped, _scan.dense(want_t, at))


@pytest.mark.parametrize("rows", [0, 1, 3, 5000])
def test_repair_dense_register_lookup_equals_the_general_one(rows: int) -> None:
    # the same lookup table, once short (16 entries or fewer: the register lookup where
    # the CPU has AVX2) and once padded with "not a member" entries (the general path)
    rng = np.random.default_rng(rows)
    code = np.array([-1, 0, 1, -1, 2, 3, 4, 5, -1, 6, 7, 8, 9], dtype=np.int32)   # 13 ids
    padded = np.r_[code, np.full(40, -1, dtype=np.int32)]
    values = np.r_[-1, -1, -1, np.arange(0, 20), 2**30, 2**31 - 1]
    table = rng.choice(values, size=(rows, 7)).astype(np.int32)
    versions = rng.integers(0, 100, rows).astype(np.int32)
    got, want = [], []
    for c, into in ((code, got), (padded, want)):
        t, v = table.copy(), versions.copy()
        cleared, need, mapped = _scan.repair_dense(t, v, c)
        into.extend([cleared, need, mapped, t, v])
    assert got[0] == want[0] and got[0] == int(((table >= 0) & (
        (table >= len(code)) | (code[np.clip(table, 0, len(code) - 1)] < 0))).sum())
    for a, b in zip(got[1:], want[1:]):
        assert np.array_equal(a, b)


def test_advance_versions_finds_the_first_decrease_and_remembers() -> None:
    last = np.array([3, 5, 7, 9], dtype=np.int32)
    assert advance_versions(np.array([3, 6, 7, 9], dtype=np.int32), last) == -1
    assert last.tolist() == [3, 6, 7, 9]
    assert advance_versions(np.array([4, 6, 2, 1], dtype=np.int32), last) == 2
    assert last.tolist() == [4, 6, 7, 1]          # the first decrease keeps its old value


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(0, 2**32 - 1))
def test_advance_versions_equals_its_rule(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    last = rng.integers(-5, 5, n).astype(np.int32)
    now = last + rng.choice([0, 0, 0, 1, 2] + ([-1] if rng.random() < 0.5 else []), n)
    now = now.astype(np.int32)
    down = np.flatnonzero(now < last)
    want_first = int(down[0]) if len(down) else -1
    want_last = now.copy()
    if want_first >= 0:
        want_last[want_first] = last[want_first]
    before = now.copy()
    assert advance_versions(now, last) == want_first
    assert np.array_equal(last, want_last) and np.array_equal(now, before)


def test_advance_versions_refuses_what_it_cannot_read() -> None:
    v = np.zeros(4, dtype=np.int32)
    frozen = np.zeros(4, dtype=np.int32)
    frozen.flags.writeable = False
    for a, b in [(v.astype(np.int64), v.copy()), (v, np.zeros(5, dtype=np.int32)),
                 (v, frozen), (np.zeros(8, dtype=np.int32)[::2], v.copy()),
                 (v.astype(">i4"), v.copy()), (list(v), v.copy()), (v, v.reshape(2, 2))]:
        with pytest.raises(TypeError, match="advance_versions"):
            advance_versions(a, b)                # type: ignore[arg-type]


def test_the_simulators_randint_takes_randints_draws() -> None:
    import random

    from hzfast.sim.timeline import randint as _randint

    a, b = random.Random(11), random.Random(11)
    for i in range(20_000):
        lo, hi = [(1, 2), (1, 5), (1, 15), (0, 20), (1, 3), (0, 1), (1, 150), (7, 7)][i % 8]
        assert _randint(b, lo, hi) == a.randint(lo, hi)
        assert b.random() == a.random()         # and leaves the stream where randint does


class _Lowering:
    """A member that, once, lowers its highest partition version after an event (what
    the safe design never does), and shows its versions as int32 or as int64 (the
    simulator's numpy fallback); everything else is the real node's."""

    def __init__(self, node: Node, dtype: type) -> None:
        self._node, self._dtype = node, dtype
        self.seen: tuple[int, int] | None = None        # a version the simulator saw
        self.lowered: tuple[int, int] | None = None     # ... and went below, once

    def handle(self, ev: object, now: int) -> list[object]:
        out: list[object] = self._node.handle(ev, now)
        v = self._node.versions
        if self.lowered is None and self.seen is not None:
            p, old = self.lowered = self.seen
            v[p] = old - 1
        elif self.seen is None and v.max(initial=0) > 2:
            p = int(np.argmax(v))
            self.seen = (p, int(v[p]))
        return out

    @property
    def versions(self) -> np.ndarray:
        return self._node.versions.astype(self._dtype)

    def __getattr__(self, name: str) -> object:
        return getattr(self._node, name)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_the_simulators_versions_check_sees_a_decrease(
        dtype: type, monkeypatch: pytest.MonkeyPatch) -> None:
    import hzfast.sim.cluster as cluster
    from hzfast.sim.cluster import Simulation

    def lowering(me: int, config: object) -> object:     # member 2 lowers a version once
        node = Node(me, config)                          # type: ignore[arg-type]
        return _Lowering(node, dtype) if me == 2 else node

    monkeypatch.setattr(cluster, "Node", lowering)
    s = Simulation(3, members=3, partitions=16, entries=100, faults="none")
    r = s.run()
    monkeypatch.undo()
    member = s.nodes[2]
    assert isinstance(member, _Lowering) and member.lowered is not None
    p, old = member.lowered
    want = f"versions decreased on m2: partition {p} {old} -> {old - 1}"
    assert sum(want in v for v in r.violations) == 1, r.violations
    clean = Simulation(3, members=3, partitions=16, entries=100, faults="none").run()
    assert not any("versions decreased" in v for v in clean.violations)


# ---------------------------------------------------------------- per-migration helpers in C
@settings(max_examples=300, deadline=None)
@given(lst=_lists_of_entries())
def test_well_formed_agrees_with_the_python_rule(lst: tuple[object, ...]) -> None:
    # True exactly for the entries _check_migration passes with exact-int fields; never
    # True for one it rejects (False hands the entry to the Python rule)
    n = _member()
    for x in lst:
        why = n._check_migration(x)
        fast = _lists.well_formed(x, MigrationInfo, P, 7)
        if fast:
            assert why == ""
        elif why == "" and type(x) is MigrationInfo:
            # a valid entry the kernel leaves to Python: some field is not an exact int
            assert any(type(getattr(x, f)) is not int for f in
                       ("partition", "source", "source_current_index", "source_new_index",
                        "destination", "destination_current_index", "destination_new_index",
                        "master", "initial", "final"))


def test_well_formed_leaves_odd_entries_to_the_python_rule() -> None:
    ok = MigrationInfo((1, 9), 3, 1, 0, -1, 2, -1, 0, 1, 1, 2, SUCCESS)
    assert _lists.well_formed(ok, MigrationInfo, P, 7)
    assert not _lists.well_formed(ok, MigrationInfo, 3, 7)          # partition 3 of 3

    class Sub(MigrationInfo):
        __slots__ = ()

    sub = Sub(*[getattr(ok, f) for f in MigrationInfo.__dataclass_fields__])
    assert not _lists.well_formed(sub, MigrationInfo, P, 7)          # subclasses: Python
    assert _member()._check_migration(sub) == ""
    for field, value in [("partition", True), ("final", 2**31), ("initial", 3),
                         ("source", 2**70), ("master", -1), ("destination_new_index", -1),
                         ("source_current_index", 7), ("destination", 1.0)]:
        odd = _build.Builder(MigrationInfo)(*[value if f == field else getattr(ok, f)
                                              for f in MigrationInfo.__dataclass_fields__])
        assert not _lists.well_formed(odd, MigrationInfo, P, 7), field
    with pytest.raises(AttributeError):        # empty slots: what attribute lookup raises
        _lists.well_formed(object.__new__(MigrationInfo), MigrationInfo, P, 7)


@settings(max_examples=300, deadline=None)
@given(lst=_lists_of_entries(), seed=st.integers(0, 2**32 - 1))
def test_apply_to_equals_apply_to_row(lst: tuple[object, ...], seed: int) -> None:
    from hzfast.protocol.node import apply_to_row

    rng = np.random.default_rng(seed)
    table = rng.integers(-1, 9, (P, 7)).astype(np.int32)
    for x in lst:
        if type(x) is not MigrationInfo:
            assert not _lists.apply_to(table, 0, x, MigrationInfo)
            continue
        p = int(rng.integers(-1, P + 1))
        want = table.copy()
        try:
            apply_to_row(want[p], x)
            want_error = None
        except (IndexError, OverflowError, TypeError, ValueError) as e:
            want, want_error = table.copy(), type(e)
        got = table.copy()
        if _lists.apply_to(got, p, x, MigrationInfo):
            assert want_error is None and 0 <= p < P
            assert np.array_equal(got, want)
        else:
            assert np.array_equal(got, table)       # nothing written: the Python rule runs
    frozen = table.copy()
    frozen.setflags(write=False)
    ok = MigrationInfo((1, 9), 3, 1, 0, -1, 2, -1, 1, 1, 1, 2, SUCCESS)
    for t in (frozen, table.astype(np.int64), np.asfortranarray(table), table[:, :3], table[0]):
        assert not _lists.apply_to(t, 3, ok, MigrationInfo)
    assert _lists.apply_to(table, 3, ok, MigrationInfo) and table[3, :2].tolist() == [-1, 2]


def test_settled_equals_the_constructor() -> None:

    x = MigrationInfo((1, 9), 3, 1, 0, -1, 2, -1, 0, 1, 1, 2, ACTIVE)
    for status, final in [(SUCCESS, None), (FAILED, 7), (FAILED, None)]:
        y = _lists.settled(x, status, final, MigrationInfo)
        want = dataclasses.replace(x, status=status, final=x.final if final is None else final)
        assert type(y) is MigrationInfo and y == want and hash(y) == hash(want)
        assert y.id is x.id and x.status is ACTIVE                       # x untouched
    class Sub(MigrationInfo):
        __slots__ = ()

    sub = Sub(*[getattr(x, f) for f in MigrationInfo.__dataclass_fields__])
    assert _lists.settled(sub, SUCCESS, None, MigrationInfo) is None     # built by Python
    assert _lists.settled(object.__new__(MigrationInfo), SUCCESS, None, MigrationInfo) is None
    assert _lists.settled("x", SUCCESS, None, MigrationInfo) is None


# ---------------------------------------------------------------- the simulator's C parts
@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**22), st.integers(0, 50), st.none()), max_size=200))
def test_event_queue_pops_in_heapq_order(ops: list[int | None]) -> None:
    # None pops; an int pushes an event at that time (with the next sequence number, as
    # the simulator does): the same times, kinds and payloads in heapq's order of
    # (time, sequence)
    import heapq

    from hzfast.sim._queue import EventQueue

    q, ref = EventQueue(), []
    for seq, op in enumerate(ops):
        if op is None:
            if not ref:
                with pytest.raises(IndexError):
                    q.pop()
                continue
            t, _, kind, payload = heapq.heappop(ref)
            assert q.pop() == t and q.kind == kind and q.payload is payload
        else:
            payload = object()
            heapq.heappush(ref, (op, seq, f"k{seq}", payload))
            q.push(op, seq, f"k{seq}", payload)
        assert len(q) == len(ref)
    while ref:
        t, _, kind, payload = heapq.heappop(ref)
        assert q.pop() == t and q.kind == kind and q.payload is payload


def test_event_queue_lets_go_and_refuses_bad_input() -> None:
    import weakref

    from hzfast.sim._queue import TIME_MAX, EventQueue

    class Payload:
        pass

    q, p = EventQueue(), Payload()
    ref = weakref.ref(p)
    q.push(5, 1, "msg", p)
    q.push(3, 2, "timer", None)
    del p
    assert q.pop() == 3 and q.pop() == 5 and ref() is q.payload
    q.push(1, 3, "x", None)
    q.pop()
    assert ref() is None                        # popped and replaced: nothing holds it
    q.push(10**30, 4, "far", None)              # past the range: queued at its end
    q.push(TIME_MAX, 5, "last", None)
    q.push(TIME_MAX - 1, 6, "before", None)
    assert [(q.pop(), q.kind) for _ in range(3)] == [
        (TIME_MAX - 1, "before"), (TIME_MAX, "far"), (TIME_MAX, "last")]
    for time, seq, error in [(-1, 0, ValueError), (-10**30, 0, ValueError),
                             (1, -1, ValueError), (1, 2**40, ValueError),
                             (1.5, 0, TypeError), ("1", 0, TypeError)]:
        with pytest.raises(error):
            q.push(time, seq, "x", None)        # type: ignore[arg-type]
    assert len(q) == 0
    q.push(2, 7, "x", Payload())
    q.clear()
    assert len(q) == 0
    with pytest.raises(IndexError):
        q.pop()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_first_disagreement_equals_its_numpy_rule(n: int, width: int, seed: int) -> None:
    from hzfast.sim._checks import first_disagreement

    rng = np.random.default_rng(seed)
    va = rng.integers(0, 3, n).astype(np.int32)
    vb = np.where(rng.random(n) < 0.7, va, va + 1).astype(np.int32)
    ra = rng.integers(-1, 4, (n, width)).astype(np.int32)
    rb = np.where(rng.random((n, width)) < 0.95, ra, ra + 1).astype(np.int32)
    bad = np.flatnonzero((va == vb) & (ra != rb).any(axis=1))
    assert first_disagreement(va, ra, vb, rb) == (int(bad[0]) if len(bad) else -1)
    assert first_disagreement(va, ra, va, ra) == -1


def test_first_disagreement_refuses_what_it_cannot_read() -> None:
    from hzfast.sim._checks import first_disagreement

    v, r = np.zeros(4, dtype=np.int32), np.zeros((4, 7), dtype=np.int32)
    for args in [(v.astype(np.int64), r, v, r), (v, r.astype(np.int64), v, r),
                 (v, np.asfortranarray(r), v, r), (v, r, v[:3], r), (v, r, v, r[:, :3]),
                 (v, r, v, r[:3]), (v, r.ravel(), v, r), (list(v), r, v, r)]:
        with pytest.raises(TypeError, match="first_disagreement"):
            first_disagreement(*args)           # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(lst=_lists_of_entries(), cut=st.integers(0, 12), stop=st.integers(0, 12),
       change=st.sampled_from(["none", "value", "key", "extra", "drop"]))
def test_keyed_from_a_head_equals_keyed(lst: tuple[object, ...], cut: int, stop: int,
                                        change: str) -> None:
    # a head made from lst's first entries (as keyed makes it), sometimes changed since:
    # the result is keyed's without a head, entry for entry and in order
    lst = tuple(x for x in lst if isinstance(x, MigrationInfo))
    stop = min(stop, len(lst))
    head = _lists.keyed(lst, min(cut, len(lst)))
    if head and change == "value":               # an equal entry, another object
        k = next(iter(head))
        head[k] = copy.copy(head[k])
    elif head and change == "key":               # an equal id, another object
        k, v = next(iter(head.items()))
        del head[k]
        head[tuple(list(k))] = v
    elif change == "extra":                      # an entry appended since (a commit here)
        head[(9, 9)] = MigrationInfo((9, 9), 0, 1, 0, -1, 2, -1, 1, 1, 1, 2, SUCCESS)
    elif head and change == "drop":
        del head[next(iter(head))]
    before = list(head.items())
    got = _lists.keyed(lst, stop, head)
    want = _lists.keyed(lst, stop)
    assert list(got.items()) == list(want.items())
    assert all(a is b for a, b in zip(got.values(), want.values()))
    assert list(head.items()) == before and got is not head
    whole = list(_lists.keyed(lst, len(lst)).items())
    assert list(_lists.keyed(lst, len(lst) + 5, head).items()) == whole   # stop past the end
    assert _lists.keyed(lst, -3, head) == {}


def test_the_master_drives_its_executor_kernel_only_with_rows_of_the_plan() -> None:
    # the node calls the executor's kernel directly (no checks there); a row outside the
    # plan goes to the wrapper, which refuses it with a ValueError (never a bad read)

    n = Node(1, Config(partition_count=16, backup_count=1, max_parallel_migrations=1))
    n.handle(MembershipChanged((1, 2)), 0)
    n.handle(MembershipChanged((1, 2, 3)), 1)
    run = n._run
    assert run is not None and run.inflight                  # a run, one row in flight
    size = len(run.executor)
    for bad in (-1, -size - 5, size, size + 100):
        with pytest.raises((ValueError, IndexError)):
            n._start(bad)
        with pytest.raises(ValueError, match="outside the plan"):
            run.finished(bad, True)
    (row, *_), = run.inflight.values()
    with pytest.raises(ValueError, match="cannot start"):   # in flight already: refused
        n._start(row)
    run.finished(row, True)
    with pytest.raises(ValueError, match="cannot finish"):  # finished already: refused
        run.finished(row, True)


def test_events_past_the_queues_time_range_never_run() -> None:
    # keys are int64: a time past the queue's range is queued at its end, after the run
    from hzfast.sim.cluster import Simulation

    plain = Simulation(4, members=3, partitions=16, entries=100, faults="none").run()
    late = Simulation(4, members=3, partitions=16, entries=100, faults="none",
                      actions=((10**30, sim.Action("join")),
                               (2**63, sim.Action("crash_nth", 0)))).run()
    assert late.ok and (late.events, late.entries_acknowledged, late.marks) == \
        (plain.events, plain.entries_acknowledged, plain.marks)
