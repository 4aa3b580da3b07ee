"""Members in the middle of a run receive hostile variants of the messages they are sent.

``test_garbage_messages_never_raise`` feeds made-up messages to fresh members. Here the
members are the simulator's, mid-run: migrations active, completed lists long, a master
recovering. Beside every real message, some messages also arrive in a hostile variant
(one field changed: an edge int, a version one off, a flipped flag, a list cut, grown,
reordered or reversed, a table cell changed; and sometimes from another member). Each
variant goes through the node runtime's wire first (``encode_message`` then
``decode_message``), so it is exactly something a faulty or lying peer can get to a
member; what the wire refuses never reaches ``handle``.

The claim is the issue's bad-input rule: no exception escapes ``handle`` (and no numpy
integer wraps), the member's table stays an int32 table of the cluster's shape, and its
outputs are outputs naming partitions that exist. Safety is not checked: a peer that lies
about data is outside the protocol's claim, so the simulator's own verdict on these runs
is not asserted. ``HZFAST_HOSTILE_SEEDS`` (default 12) seeds per shape.

The second half holds what these runs found (docs/design.md §12 "Hostile peers"): an
entry that does not fit its row, a table with invalid rows or versions past
``VERSION_LIMIT``, and a record whose ``str`` raised.
"""
from __future__ import annotations

import dataclasses
import os
import random
from typing import Any

import numpy as np
import pytest

import hzfast.sim.cluster as cluster
from hzfast import sim
from hzfast.node import wire
from hypothesis import given, settings
from hypothesis import strategies as st

from hzfast.protocol import (Config, Effect, EffectDone, Mark, MembershipChanged,
                             MessageReceived, MigrationInfo, MigrationStatus, Node, Send,
                             SetTimer, _lists)
from hzfast.protocol import _merge
from hzfast.protocol import messages as msg
from hzfast.protocol.node import VERSION_LIMIT, migration_fits_row

SEEDS = int(os.environ.get("HZFAST_HOSTILE_SEEDS", "12"))
RATE = 0.1                  # share of deliveries that also bring a hostile variant
EDGES = (-2**63, -2**31 - 1, -2**31, -2, -1, 0, 1, 2, 3, 6, 7, 8, 270, 271, 272,
         2**31 - 2, 2**31 - 1, 2**31, 2**63 - 1)
OUTPUTS = (Send, Mark, SetTimer, Effect)


def _value(v: Any, rng: random.Random) -> Any:
    """``v`` changed the way a lying peer could change it (same kind of value)."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return rng.choice(EDGES) if rng.random() < 0.6 else v + rng.choice((-2, -1, 1, 2))
    if isinstance(v, msg.MigrationInfo):
        return _variant(v, rng)
    if isinstance(v, tuple) and v:
        items = list(v)
        how = rng.randrange(5)
        if how == 0:
            del items[rng.randrange(len(items))]
        elif how == 1:
            items.insert(rng.randrange(len(items) + 1), rng.choice(items))
        elif how == 2:
            rng.shuffle(items)
        elif how == 3:
            i = rng.randrange(len(items))
            items[i] = _value(items[i], rng)
        else:
            items.reverse()
        return tuple(items)
    if isinstance(v, np.ndarray) and v.size:
        a = v.copy()
        for _ in range(rng.choice((1, 3))):
            i = rng.randrange(a.size)
            a.flat[i] = rng.choice((-2, -1, 0, 1, 2, 3, 2**31 - 1,
                                    min(int(a.flat[i]) + 1, 2**31 - 1)))
        return a
    return v


def _variant(m: Any, rng: random.Random) -> Any:
    """``m`` with one of its fields changed."""
    name = rng.choice([f.name for f in dataclasses.fields(m)])
    return dataclasses.replace(m, **{name: _value(getattr(m, name), rng)})


class HostileNetworkNode(Node):
    """A protocol node whose network also brings hostile variants of its messages."""

    def __init__(self, member: int, config: Any) -> None:
        super().__init__(member, config)
        self.rng = random.Random(member * 7919 + config.partition_count)
        self.delivered = 0
        self.refused_by_wire = 0
        self.escaped: list[str] = []

    def handle(self, event: Any, now: int) -> list[Any]:
        if type(event) is MessageReceived and self.rng.random() < RATE:
            self._hostile(event, now)
        return super().handle(event, now)

    def _hostile(self, event: MessageReceived, now: int) -> None:
        P, R = self.config.partition_count, self.replicas.shape[1]
        forged = _variant(event.message, self.rng)
        try:
            sent = wire.encode_message(forged)
        except Exception:       # (an id of the wrong length: no peer could send that)
            return
        try:
            forged = wire.decode_message(sent, P, R)
        except wire.WireError:
            self.refused_by_wire += 1              # the runtime closes that connection
            return
        sender = event.sender if self.rng.random() < 0.8 else self.rng.choice((0, 1, 2, 99))
        self.delivered += 1
        try:
            out = super().handle(MessageReceived(sender, forged), now)
        except Exception as e:                     # the claim under test
            self.escaped.append(f"{type(e).__name__}: {e} <- {forged!r}"[:2000])
            return
        assert self.replicas.dtype == np.int32 and self.replicas.shape == (P, R)
        assert self.versions.dtype == np.int32 and self.versions.shape == (P,)
        assert isinstance(out, list)
        for o in out:
            assert isinstance(o, OUTPUTS), o
            if type(o) is Effect:
                assert 0 <= o.partition < P, o


@pytest.mark.filterwarnings("error::RuntimeWarning")     # a numpy int32 wrapping, say
@pytest.mark.parametrize("shape", [dict(), dict(members=3, backup_count=2, joins=1),
                                   dict(design="legacy")],
                         ids=["default", "3 members, 2 backups, a join", "legacy"])
def test_hostile_variants_of_real_messages_never_escape_handle(
        monkeypatch: pytest.MonkeyPatch, shape: dict[str, Any]) -> None:
    made: list[HostileNetworkNode] = []

    def factory(member: int, config: Any) -> HostileNetworkNode:
        node = HostileNetworkNode(member, config)
        made.append(node)
        return node

    monkeypatch.setattr(cluster, "Node", factory)
    for seed in range(SEEDS):
        sim.run(seed, entries=2_000, **shape)
    escaped = [e for n in made for e in n.escaped]
    assert not escaped, f"{len(escaped)} escaped handle; first: {escaped[0]}"
    delivered = sum(n.delivered for n in made)
    refused = sum(n.refused_by_wire for n in made)
    assert delivered > 50 * SEEDS, (delivered, refused)     # the variants did arrive
    assert refused > 0                                       # and some were refused


def test_the_factory_is_what_the_simulator_builds_members_with(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the test above is only a test if the simulator takes its members from the module's
    # ``Node`` at run time (a compiled simulator binding the class early would not)
    built: list[int] = []

    def factory(member: int, config: Any) -> Node:
        built.append(member)
        return Node(member, config)

    monkeypatch.setattr(cluster, "Node", factory)
    r = sim.run(0, entries=500, faults="none", joins=1)
    assert r.converged and built and len(built) >= 5


# ---------------------------------------------------------------- what the runs found
SUCCESS, FAILED, ACTIVE = MigrationStatus.SUCCESS, MigrationStatus.FAILED, MigrationStatus.ACTIVE
P = 8


def _pair() -> tuple[Node, Node]:
    """A master (1) and a member (2) holding the master's first table (test_node.py has
    its own: test modules import one another under ``--import-mode=importlib`` only by
    path)."""
    cfg = Config(partition_count=P, backup_count=1)
    a, b = Node(1, cfg), Node(2, cfg)
    view = MembershipChanged((1, 2))
    out = a.handle(view, 0)
    b.handle(view, 0)
    table = next(o.message for o in out if isinstance(o, Send)
                 and isinstance(o.message, msg.PartitionTableUpdate))
    b.handle(MessageReceived(1, table), 1)
    return a, b


def _marks(out: list[Any]) -> list[tuple[str, str]]:
    return [(o.name, o.detail) for o in out if isinstance(o, Mark)]


def _row_move(b: Node, p: int, **change: Any) -> MigrationInfo:
    """A completed move of ``p``'s backup (member 1 at index 1) to member 3, made from
    ``b``'s row at its version, with ``change`` applied to the record."""
    row, v = b.replicas[p].tolist(), int(b.versions[p])
    sci = row.index(1)
    x = MigrationInfo((1, 50), p, 1, sci, -1, 3, -1, sci, 1, v, v + 1, SUCCESS)
    return dataclasses.replace(x, **change)


def test_an_entry_that_does_not_fit_the_row_is_rejected_not_applied() -> None:
    # swarm seed 227 of (members=3, backup_count=2, joins=1) with hostile variants: a
    # completed entry at the member's own version, its destination changed to a member
    # the row already held, was applied; the row held that member twice, the member
    # later became master and its planner raised ValueError out of handle
    _a, b = _pair()
    p = next(q for q in range(P) if b.replicas[q, 1] == 1)
    owner = int(b.replicas[p, 0])
    before = b.replicas.copy(), b.versions.copy()
    for change in (dict(destination=owner),                       # the owner, twice
                   dict(source=owner),                            # not at its index
                   dict(destination_current_index=0),             # 3 is not at index 0
                   dict(source_current_index=-1, source_new_index=2,
                        destination_new_index=3)):                # 1 twice
        x = _row_move(b, p, **change)
        out = b.handle(MessageReceived(1, msg.PublishCompletedMigrations(1, (x,))), 5)
        assert ("partial_update_rejected",
                f"does not fit the row at version {before[1][p]}") in _marks(out), change
        acks = [o.message for o in out if isinstance(o, Send)]
        assert [type(m) for m in acks] == [msg.PublishCompletedAck] and not acks[0].ok
        assert np.array_equal(b.replicas, before[0]) and np.array_equal(b.versions, before[1])
    x = _row_move(b, p)                                           # the honest one applies
    out = b.handle(MessageReceived(1, msg.PublishCompletedMigrations(1, (x,))), 6)
    assert b.replicas[p].tolist()[:2] == [owner, 3] and b.versions[p] == x.final, out


def test_a_commit_that_does_not_fit_the_destinations_row_is_refused() -> None:
    _a, b = _pair()
    p = next(q for q in range(P) if b.replicas[q, 1] == 2)
    row, v = b.replicas[p].tolist(), int(b.versions[p])
    owner = row[0]
    # the owner and b (at index 1) swap; the lying variant says b is at index 2
    honest = MigrationInfo((1, 60), p, owner, 0, 1, 2, 1, 0, 1, v, v + 3)
    for x in (dataclasses.replace(honest, destination_current_index=2),
              dataclasses.replace(honest, source_new_index=-1, source=2)):
        out = b.handle(MessageReceived(1, msg.MigrationCommit(1, x)), 5)
        replies = [o.message for o in out if isinstance(o, Send)]
        assert len(replies) == 1 and not replies[0].ok, x
        assert b.replicas[p].tolist() == row and b.versions[p] == v
    out = b.handle(MessageReceived(1, msg.MigrationCommit(1, honest)), 6)
    assert "destination_committed" in [n for n, _ in _marks(out)]
    assert b.replicas[p].tolist()[:2] == [2, owner] and b.versions[p] == v + 3
    install = next(o for o in out if isinstance(o, Effect) and o.kind == "install")
    out = b.handle(EffectDone(install.id, True), 7)       # the answer waits for the data
    replies = [o.message for o in out if isinstance(o, Send)]
    assert len(replies) == 1 and replies[0].ok


@pytest.mark.parametrize("how", ["member twice", "below -1", "version too high",
                                 "negative version"])
def test_a_table_no_honest_master_sends_is_rejected(how: str) -> None:
    a, b = _pair()
    reps, vers = a.replicas.copy(), a.versions.copy() + 1
    if how == "member twice":
        reps[3, 1] = reps[3, 0]
    elif how == "below -1":
        reps[3, 2] = -2
    elif how == "version too high":
        vers[3] = VERSION_LIMIT
    else:              # older than b's row 3: only a member with no table would take it
        vers[3] = -1
    before = b.replicas.copy(), b.versions.copy()
    q = next(q for q in range(P) if b.replicas[q, 1] == 2)     # b promoted to owner of q
    v = int(b.versions[q])
    promotion = MigrationInfo((1, 41), q, -1, -1, -1, 2, 1, 0, 1, v, v + 2, ACTIVE, True)
    for m in (msg.PartitionTableUpdate(1, reps, vers),
              msg.PromotionCommit(1, reps, vers, (promotion,), 2, 1)):
        if how == "negative version":
            break
        out = b.handle(MessageReceived(1, m), 5)
        assert ("message_rejected", 3) in [(o.name, o.partition) for o in out
                                            if isinstance(o, Mark)], out
        replies = [o.message for o in out if isinstance(o, Send)]
        assert len(replies) == 1 and not replies[0].ok
        assert not any(isinstance(o, Effect) for o in out)
        assert np.array_equal(b.replicas, before[0]) and np.array_equal(b.versions, before[1])
    fresh = Node(3, b.config)                           # one with no table yet, too
    fresh.handle(MembershipChanged((1, 2, 3)), 0)
    out = fresh.handle(MessageReceived(1, msg.PartitionTableUpdate(1, reps, vers)), 1)
    assert not fresh.initialized
    assert ("message_rejected", 3) in [(o.name, o.partition) for o in out
                                        if isinstance(o, Mark)]


def test_a_fortran_ordered_table_is_taken_like_any_other() -> None:
    # a caller's array in another layout (no peer can send one): read, never raised on
    a, b = _pair()
    reps, vers = a.replicas.copy(), a.versions.copy() + 1
    out = b.handle(MessageReceived(1, msg.PartitionTableUpdate(
        1, np.asfortranarray(reps), vers)), 5)
    assert np.array_equal(b.replicas, reps) and np.array_equal(b.versions, vers), out


def test_a_new_master_ignores_a_members_invalid_table() -> None:
    # recovery takes each partition's newest row from the members' answers: a row that
    # holds a member twice (or a version out of range) must not become the new table
    cfg = Config(partition_count=P, backup_count=1)
    a, b, c = _pair()[0], None, None
    b, c = Node(2, cfg), Node(3, cfg)
    view = MembershipChanged((1, 2, 3))
    out = a.handle(view, 0)
    for n in (b, c):
        n.handle(view, 0)
        for o in out:
            if isinstance(o, Send) and o.to == n.me and isinstance(
                    o.message, msg.PartitionTableUpdate):
                n.handle(MessageReceived(1, o.message), 1)
    assert b.initialized and c.initialized
    out = b.handle(MembershipChanged((2, 3)), 10)          # the master left: b recovers
    assert any(isinstance(o, Send) and isinstance(o.message, msg.FetchPartitionState)
               for o in out)
    reps, vers = c.replicas.copy(), c.versions.copy()
    reps[4, 1] = reps[4, 0]
    vers[4] += 5                                            # newer: it would win
    reply = msg.PartitionStateReply(3, True, reps, vers, (), ())
    out = b.handle(MessageReceived(3, reply), 11)
    assert "message_rejected" in [n for n, _ in _marks(out)]
    assert "recovery_published" in [n for n, _ in _marks(out)]
    row = b.replicas[4][b.replicas[4] >= 0].tolist()
    assert len(row) == len(set(row)) and b.versions[4] < vers[4]


@pytest.mark.parametrize("field,value", [("initial", VERSION_LIMIT),
                                         ("final", VERSION_LIMIT)])
def test_versions_a_master_could_not_bump_are_rejected(field: str, value: int) -> None:
    # swarm seeds of (members=6, backup_count=3) with hostile variants: a version near
    # 2**31 was taken, the master's bump on the next failure wrapped the int32
    _a, b = _pair()
    p = next(q for q in range(P) if b.replicas[q, 1] == 1)
    before = b.replicas.copy(), b.versions.copy()
    x = _row_move(b, p)
    x = dataclasses.replace(x, **{field: value, "final": max(value, x.final)})
    assert b._check_migration(x) == "version out of range"
    assert not _lists.well_formed(x, MigrationInfo, P, 7)
    out = b.handle(MessageReceived(1, msg.PublishCompletedMigrations(1, (x,))), 5)
    acks = [o.message for o in out if isinstance(o, Send)]
    assert acks and not acks[0].ok
    assert np.array_equal(b.replicas, before[0]) and np.array_equal(b.versions, before[1])


def _entries() -> st.SearchStrategy[MigrationInfo]:
    idx = st.integers(-1, 6)
    member = st.integers(-3, 9)
    return st.builds(MigrationInfo, st.just((1, 1)), st.just(0), member, idx, idx, member,
                     idx, st.integers(0, 6), st.just(1), st.just(0), st.just(1),
                     st.just(SUCCESS))


@settings(max_examples=400, deadline=None)
@given(row=st.lists(st.integers(-1, 9), min_size=7, max_size=7), x=_entries())
def test_apply_fitting_equals_the_python_rule(row: list[int], x: MigrationInfo) -> None:
    from hzfast.protocol.node import apply_to_row

    table = np.array([row, row], dtype=np.int32)
    want = migration_fits_row(table[1], x)
    after = table[1].copy()
    if want:
        apply_to_row(after, x)
    assert _lists.apply_fitting(table, 1, x, MigrationInfo) == int(want)
    assert table[1].tolist() == after.tolist() and table[0].tolist() == row
    held = [v for v in row if v >= 0]
    if want and len(held) == len(set(held)):    # what fits a valid row leaves one behind
        held = after[after >= 0].tolist()
        assert len(held) == len(set(held)) and after.min() >= -1
        if x.source_current_index >= 0:
            assert row[x.source_current_index] == x.source
        if x.destination_current_index >= 0:
            assert row[x.destination_current_index] == x.destination


def test_apply_fitting_says_when_it_cannot_read() -> None:
    table = np.full((2, 7), -1, dtype=np.int32)
    x = MigrationInfo((1, 1), 0, -1, -1, -1, 2, -1, 0, 1, 0, 1, SUCCESS)
    frozen = table.copy()
    frozen.setflags(write=False)
    for t, p in ((table.astype(np.int64), 0), (table, 2), (table, -1), (table[:, :3].T, 0),
                 (frozen, 0)):
        assert _lists.apply_fitting(t, p, x, MigrationInfo) == -1
        assert (t == -1).all()
    assert _lists.apply_fitting(table, 0, (1, 2), MigrationInfo) == -1
    far = dataclasses.replace(x, destination=2**31)        # beyond int32: the Python rule
    assert _lists.apply_fitting(table, 0, far, MigrationInfo) == -1 and (table == -1).all()
    assert _lists.apply_fitting(table, 0, x, MigrationInfo) == 1 and table[0, 0] == 2
    assert _lists.apply_fitting(table, 1, dataclasses.replace(x, destination=-2),
                                MigrationInfo) == 0 and (table[1] == -1).all()


def test_a_migration_prints_whatever_its_fields_hold() -> None:
    x = MigrationInfo((1, 2), 0, -1, -1, -1, 2, -1, 0, 1, 0, 1, SUCCESS)
    assert str(x).startswith("m1.2(p0") and str(x).endswith("SUCCESS)")
    odd = dataclasses.replace(x, id=(1,), status=1)          # type: ignore[arg-type]
    assert str(odd).startswith("m(1,)(p0") and str(odd).endswith(" 1)")


def test_first_invalid_finds_the_first_bad_row_among_those_asked() -> None:
    reps = np.array([[0, 1, -1], [2, 2, -1], [0, -2, 1], [3, 4, 5]], dtype=np.int32)
    vers = np.array([1, 1, 1, VERSION_LIMIT], dtype=np.int32)
    assert _merge.first_invalid(reps, vers, None, VERSION_LIMIT) == 1       # 2 twice
    rows = np.array([True, False, True, True])
    assert _merge.first_invalid(reps, vers, rows, VERSION_LIMIT) == 2       # -2
    rows[2] = False
    assert _merge.first_invalid(reps, vers, rows, VERSION_LIMIT) == 3       # the version
    assert _merge.first_invalid(reps, vers, rows, VERSION_LIMIT + 1) == -1
    assert _merge.first_invalid(reps[:1], vers[:1] * 0 - 1, None, 5) == 0   # below 0
    for bad in [(reps.astype(np.int64), vers, None), (reps, vers[:3], None),
                (reps, vers, rows[:3]), (reps, vers, rows.astype(np.uint8)),
                (np.asfortranarray(reps), vers, None)]:
        with pytest.raises(TypeError):
            _merge.first_invalid(*bad, VERSION_LIMIT)


@pytest.mark.parametrize("field", ["source_current_index", "source_new_index",
                                   "destination_current_index", "destination_new_index"])
@pytest.mark.parametrize("value", [-2, 7])
def test_a_replica_index_outside_the_row_is_named(field: str, value: int) -> None:
    # each index field, just below -1 and at the row's length: the reason names the index
    # (the kernel says "bad", the Python rule says why)
    _a, b = _pair()
    p = next(q for q in range(P) if b.replicas[q, 1] == 1)
    x = _row_move(b, p, **{field: value})
    assert not _lists.well_formed(x, MigrationInfo, P, 7)
    assert b._check_migration(x) == "replica index out of range"


def test_a_message_from_outside_the_member_list_is_rejected() -> None:
    # a member the list does not hold (a removed one, or a stranger) changes nothing and
    # is told nothing: not even its state request is answered
    _a, b = _pair()
    before = b.replicas.copy(), b.versions.copy()
    out = b.handle(MessageReceived(9, msg.FetchPartitionState(9)), 5)
    assert not [o for o in out if isinstance(o, Send)]
    assert ("message_rejected", "FetchPartitionState from 9: unknown member") in [
        (o.name, o.detail) for o in out if isinstance(o, Mark)]
    assert np.array_equal(b.replicas, before[0]) and np.array_equal(b.versions, before[1])
