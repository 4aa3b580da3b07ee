"""hzfast.node.wire: the frame codec and the protocol-message codec.

Every protocol message round-trips through ``encode_message -> frame -> unpack -> parse ->
decode_message``; :data:`SCHEMA` lists every message type and every dataclass field in
order (so a field added to a message cannot be forgotten on the wire); every frame tag
parses a valid example and refuses wrong counts and types; whatever bytes arrive, the
decoding path raises :class:`WireError` and nothing else; ``read_frame`` refuses
truncated, empty and oversized frames.
"""
from __future__ import annotations

import asyncio
import dataclasses
import re
import struct
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hzfast.node import wire
from hzfast.node.wire import WireError
from hzfast.protocol import membership as mb
from hzfast.protocol import messages as msg
from hzfast.protocol.messages import MigrationInfo, MigrationStatus

P, R = 7, 3                       # the cluster shape of the examples


# ---------------------------------------------------------------------------- examples
def _mig(seq: int, partition: int = 3, *, status: MigrationStatus = MigrationStatus.ACTIVE,
         promotion: bool = False) -> MigrationInfo:
    return MigrationInfo((1, seq), partition, 2, 0, 1, 4, -1, 0, 1, 10 + seq, 13 + seq,
                         status=status, promotion=promotion)


MIGS = (_mig(1), _mig(2, 0, status=MigrationStatus.SUCCESS),
        _mig(3, 6, status=MigrationStatus.FAILED, promotion=True),
        MigrationInfo((2**31 - 1, -(2**31)), P - 1, -1, -1, -1, 2**31 - 1, -1, 0, 0,
                      -(2**31), 2**31 - 1))


def _table(seed: int = 0) -> np.ndarray:
    """A (P, R) replica table of members 0..5: each row 1..R distinct members, then -1."""
    rng = np.random.default_rng(seed)
    t = np.full((P, R), -1, dtype=np.int32)
    for p in range(P):
        k = int(rng.integers(1, R + 1))
        t[p, :k] = rng.permutation(6)[:k]
    return t


def _versions(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**31 - 1, P).astype(np.int32)


def examples() -> list[msg.Message]:
    """At least one realistic instance of every message type (several for some)."""
    t, v = _table(1), _versions(1)
    return [
        msg.MigrationRequest(1, MIGS[0]),
        msg.MigrationRequest(1, MIGS[0], MIGS[1:]),
        msg.MigrationTransfer(2, MIGS[0], (MIGS[1],)),
        msg.MigrationTransfer(2, MIGS[3]),
        msg.MigrationTransferAck(4, MIGS[0], True),
        msg.MigrationTransferAck(4, MIGS[0], False),
        msg.MigrationResult(2, MIGS[0], False, "destination 4 refused: not a member"),
        msg.MigrationResult(2, MIGS[2], True),
        msg.MigrationResult(2, MIGS[2], True, "\u00e9t\u00e9 \U0001f600"),
        msg.MigrationCommit(1, MIGS[1]),
        msg.MigrationCommitResponse(4, MIGS[1], True),
        msg.PublishCompletedMigrations(1, ()),
        msg.PublishCompletedMigrations(1, MIGS),
        msg.PublishCompletedAck(3, (), True),
        msg.PublishCompletedAck(3, ((1, 2), (2**31 - 1, -(2**31))), False),
        msg.PartitionTableUpdate(1, t, v),
        msg.PartitionTableUpdate(1, _table(2), _versions(2), MIGS[:2]),
        msg.PartitionTableAck(3, True),
        msg.PartitionTableAck(3, False, (0, 5, 6)),
        msg.PartitionStateCheck(1, -(2**63)),
        msg.PartitionStateCheck(1, 2**63 - 1),
        msg.PartitionStateCheckReply(3, True),
        msg.FetchPartitionState(5),
        msg.PartitionStateReply(3, False),
        msg.PartitionStateReply(3, False, None, None, (), ()),
        msg.PartitionStateReply(3, True, t, v),
        msg.PartitionStateReply(3, True, _table(3), _versions(3), MIGS[1:3], (MIGS[0],)),
        msg.PromotionCommit(1, t, v, (MIGS[2],)),
        msg.PromotionCommit(1, _table(4), _versions(4), MIGS, 4, 2**40),
        msg.PromotionCommitResponse(4, 17, True),
        msg.ReplicaSyncRequest(4, 6),
        msg.ReplicaSyncRequest(0, 0),
        # membership (docs/design.md §13)
        mb.Heartbeat(2, (3, 7), (4, 0), 10**12, -1),
        mb.Heartbeat(2, (1, 1), (1, 1), 0, 0),
        mb.Claim(3, (3, 7), 4, (3, 4, 5)),
        mb.ClaimReply(4, 4, True, mb.MemberList(3, 8, (1, 3, 4, 5))),
        mb.ClaimReply(4, 4, False),
        mb.ListProposal(3, (3, 7), mb.MemberList(4, 1, (3, 4, 5)), True),
        mb.ListAccept(5, (4, 1), True),
        mb.ListCommit(3, mb.MemberList(4, 1, (3, 4, 5, 2**31 - 2))),
        mb.ListRequest(5),
        mb.JoinRequest(9, 9),
        mb.MergeProbe(3, mb.MemberList(2**40, 2**40, (3,))),
    ]


def _message_types() -> set[type[msg.Message]]:
    found: set[type[msg.Message]] = set()
    todo = [msg.Message]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            # slots=True dataclasses leave their pre-slots class behind as a subclass too:
            # the message types are the ones the module names
            if getattr(msg, sub.__name__, None) is sub or getattr(mb, sub.__name__, None) is sub:
                found.add(sub)
    return found


def _through_the_wire(m: msg.Message, p: int = P, r: int = R) -> msg.Message:
    data = wire.frame("msg", wire.encode_message(m), 7)
    (n,) = struct.unpack(">I", data[:4])
    assert n == len(data) - 4
    f = wire.parse(wire.unpack(data[4:]))
    assert f[0] == "msg" and len(f) == 3 and f[2] == 7          # (the sender's term)
    return wire.decode_message(f[1], p, r)


def _decode_all(body: bytes, p: int = P, r: int = R) -> tuple[Any, ...]:
    """The whole receiving path for one frame body."""
    f = wire.parse(wire.unpack(body))
    if f[0] == "msg":
        return (f[0], wire.decode_message(f[1], p, r))
    return f


# ---------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("m", examples(), ids=lambda m: type(m).__name__)
def test_every_message_round_trips(m):
    back = _through_the_wire(m)
    assert type(back) is type(m)
    assert back == m
    for f in dataclasses.fields(m):
        a, b = getattr(m, f.name), getattr(back, f.name)
        if isinstance(a, np.ndarray):
            assert b.dtype == np.int32 and b.shape == a.shape and b.flags.c_contiguous
            assert np.array_equal(a, b)
        else:
            assert type(b) is type(a) and b == a, f.name
    # and the decoded message encodes to the very same structure
    assert wire.encode_message(back) == wire.encode_message(m)


def test_examples_cover_every_message_type():
    assert {type(m) for m in examples()} == _message_types()


def test_a_changed_field_changes_the_decoded_message():
    m = msg.PartitionTableUpdate(1, _table(1), _versions(1), MIGS[:1])
    enc = wire.encode_message(m)
    tbl = bytearray(enc[2])
    tbl[0] ^= 1                                   # the first replica slot changes
    enc[2] = bytes(tbl)
    back = wire.decode_message(enc, P, R)
    assert back != m
    assert back.replicas[0, 0] == m.replicas[0, 0] ^ 1


def test_decoded_arrays_are_writable_copies():
    m = msg.PartitionTableUpdate(1, _table(1), _versions(1))
    back = _through_the_wire(m)
    for a in (back.replicas, back.versions):
        assert a.flags.writeable and a.flags.owndata or a.base is not None and a.base.flags.owndata
    back.replicas[0, 0] = 99
    assert m.replicas[0, 0] == _table(1)[0, 0]


def test_tables_travel_little_endian():
    t = np.arange(P * R, dtype=np.int32).reshape(P, R)
    enc = wire.encode_message(msg.PartitionTableUpdate(1, t, np.arange(P, dtype=">i4")))
    assert enc[2] == t.astype("<i4").tobytes()
    assert enc[3] == np.arange(P, dtype="<i4").tobytes()


def test_encode_refuses_what_is_not_a_protocol_message():
    with pytest.raises(TypeError, match="not a hzfast.protocol message: Message"):
        wire.encode_message(msg.Message(1))
    with pytest.raises(TypeError, match="str"):
        wire.encode_message("MigrationCommit")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- schema
def test_schema_lists_every_message_type():
    assert set(wire.SCHEMA) == _message_types()
    assert msg.Message not in wire.SCHEMA


@pytest.mark.parametrize("t", sorted(_message_types(), key=lambda t: t.__name__),
                         ids=lambda t: t.__name__)
def test_schema_lists_every_field_in_order(t):
    names = [f.name for f in dataclasses.fields(t)]
    assert names[0] == "sender"
    assert [f for f, _ in wire.SCHEMA[t]] == names[1:]


def test_schema_kinds_are_known():
    kinds = {k.rstrip("?") for fields in wire.SCHEMA.values() for _, k in fields}
    assert kinds <= {"mig", "migs", "ids", "ints", "table", "versions", "bool", "str", "int",
                     "key", "mid", "mids", "mlist"}


# ---------------------------------------------------------------------------- frames
VALID_FRAMES: dict[str, list[Any]] = {
    "auth": ["hzfast", "peer", 3, b"n" * 32],
    "challenge": [b"n" * 32, b"m" * 32],
    "proof": [b"m" * 32],
    "msg": [wire.encode_message(msg.MigrationCommit(1, MIGS[0])), 3],
    "hb": [3, 12],
    "members": [4, 9, [[1, "127.0.0.1", 5701], [5, "host-b", 0], [8, "::1", 65535]]],
    "chunk": [7, "stage", 1, 4, 30, [["k1", b"v1"], ["", b""]], 0, True],
    "chunk_ack": [7, False],
    "backup": [11, 0, 4, [["key", b"\x00\xff"]]],
    "backup_ack": [11, True],
    "join": [1, "127.0.0.1", 5702, {"partitions": 31, "backups": 1}],
    "put": [2, 10_000_000, [["a", b"1"], ["b", b""]]],
    "merge": [3, 0, [["a", b"2"]]],
    "merge_latest": [3, 0, [["a", b"2", 1_700_000_000_000]]],
    "get": [3, 5, ["a", "b", ""]],
    "locate": [4],
    "status": [5],
    "ok": [5, {"member": 1, "replicas": b"\x01\x00\x00\x00"}],
    "error": [6, "not_owner", "member 2 does not own partition 5", 1],
}

# per field kind: a value of the wrong type (None where any value is fine)
_WRONG: dict[str, Any] = {"int": "3", "id": 3.0, "partition": True, "bool": 1, "str": b"s",
                          "entries": {"k": b"v"}, "keys": "k", "members": 5, "any": None,
                          "b32": b"n" * 31, "name": "x" * 256, "id?": -2, "term": -1}


def test_every_tag_has_a_valid_example():
    assert set(VALID_FRAMES) == set(wire.FRAMES)


@pytest.mark.parametrize("tag", sorted(wire.FRAMES))
def test_valid_frame_parses(tag):
    fields = VALID_FRAMES[tag]
    data = wire.frame(tag, *fields)
    f = wire.parse(wire.unpack(data[4:]))
    assert f[0] == tag
    assert len(f) == len(wire.FRAMES[tag]) + 1
    # tuples where the frame had arrays: compare through msgpack's own view; an entry
    # sent as [key, value] parses as (key, value, 0): no update time
    want = [[[*e, 0][:3] for e in v] if kind == "entries" else v
            for kind, v in zip(wire.FRAMES[tag], fields)]
    assert msgpack.unpackb(msgpack.packb(list(f[1:]))) == msgpack.unpackb(msgpack.packb(want))


@pytest.mark.parametrize("tag", sorted(wire.FRAMES))
def test_wrong_field_count_is_refused(tag):
    fields = VALID_FRAMES[tag]
    n = len(wire.FRAMES[tag])
    for bad in (fields[:-1], [*fields, 0]):
        with pytest.raises(WireError, match=rf"^{tag}: expected {n} fields, got {len(bad)}$"):
            wire.parse([tag, *bad])


@pytest.mark.parametrize("tag", sorted(wire.FRAMES))
def test_wrong_field_type_is_refused(tag):
    kinds = wire.FRAMES[tag]
    for i, kind in enumerate(kinds):
        wrong = _WRONG[kind]
        if wrong is None:
            continue
        fields = list(VALID_FRAMES[tag])
        fields[i] = wrong
        with pytest.raises(WireError, match=rf"^{tag}\.{i}"):
            wire.parse([tag, *fields])


def test_unknown_tag_is_refused():
    with pytest.raises(WireError, match="unknown tag 'nope'"):
        wire.parse(wire.unpack(wire.frame("nope", 1)[4:]))
    with pytest.raises(WireError, match="unknown tag") as e:
        wire.parse(["x" * 10_000])
    assert len(str(e.value)) < 100            # a huge tag is not echoed whole


@pytest.mark.parametrize("body", [
    b"", b"\xc1", b"\x91", b"\x92\xa3put", msgpack.packb([1, 2]), msgpack.packb([]),
    msgpack.packb({"put": 1}), msgpack.packb("put"), msgpack.packb([b"put", 1]),
    msgpack.packb(["put", 1]) + b"\x00", b"\x91\xa2\xff\xfe", b"\x91" * 5000 + b"\xc0",
    b"\x81\x01\x02",                       # a map with an int key
], ids=range(13))
def test_unpack_refuses_what_is_not_a_tagged_array(body):
    with pytest.raises(WireError, match="^frame: "):
        wire.unpack(body)


# ---------------------------------------------------------------------------- field checks
def _enc(m: msg.Message) -> list[Any]:
    return wire.encode_message(m)


@pytest.mark.parametrize(("build", "where"), [
    # arrays of the wrong size
    (lambda: [*_enc(msg.PartitionTableUpdate(1, _table(), _versions()))[:2], b"\0" * 4 * P * R
              + b"\0" * 4, *_enc(msg.PartitionTableUpdate(1, _table(), _versions()))[3:]],
     "PartitionTableUpdate.replicas"),
    (lambda: [*_enc(msg.PartitionTableUpdate(1, _table(), _versions()))[:3], b"\0" * 3,
              []], "PartitionTableUpdate.versions"),
    (lambda: ["PartitionStateReply", 3, True, b"", None, [], []], "PartitionStateReply.replicas"),
    (lambda: ["PromotionCommit", 1, "table", _versions().tobytes(), [], -1, 0, []],
     "PromotionCommit.replicas"),
    # negative and oversized ints
    (lambda: ["FetchPartitionState", -1], "FetchPartitionState.sender"),
    (lambda: ["FetchPartitionState", 2**31 - 1], "FetchPartitionState.sender"),
    (lambda: ["PartitionStateCheck", 1, 2**63], "PartitionStateCheck.stamp"),
    (lambda: ["PartitionStateCheck", 1, -(2**63) - 1], "PartitionStateCheck.stamp"),
    (lambda: ["ReplicaSyncRequest", 1, 2**64 - 1], "ReplicaSyncRequest.partition"),
    (lambda: ["PromotionCommitResponse", 1, 1.0, True], "PromotionCommitResponse.batch"),
    (lambda: ["MigrationCommit", 1, _enc_mig_with(2, 2**31)], r"MigrationCommit.migration\[2\]"),
    (lambda: ["MigrationCommit", 1, _enc_mig_with(11, -(2**31) - 1)],
     r"MigrationCommit.migration\[11\]"),
    (lambda: ["MigrationCommit", 1, _enc_mig_with(12, 3)], "MigrationCommit.migration.status"),
    (lambda: ["MigrationCommit", 1, _enc_mig_with(12, -1)], "MigrationCommit.migration.status"),
    (lambda: ["MigrationCommit", 1, _enc_mig_with(0, "1")], r"MigrationCommit.migration\[0\]"),
    (lambda: ["MigrationCommit", 1, _enc_mig_with(13, 0)], "MigrationCommit.migration.promotion"),
    (lambda: ["MigrationCommit", 1, _enc_mig_with(None, None)], "MigrationCommit.migration"),
    (lambda: ["PublishCompletedAck", 1, [[1, 2**31]], True], "PublishCompletedAck.ids"),
    (lambda: ["PublishCompletedAck", 1, [[1, 2, 3]], True], r"PublishCompletedAck.ids\[0\]"),
    (lambda: ["PartitionTableAck", 1, True, [1, 2**63]], r"PartitionTableAck.diverged\[1\]"),
    (lambda: ["PartitionTableAck", 1, True, (1,)], "PartitionTableAck.diverged"),
    # non-bool bools
    (lambda: ["MigrationTransferAck", 1, _enc_mig_with(None, 0), 1], "MigrationTransferAck.ok"),
    (lambda: ["PartitionStateCheckReply", 1, None], "PartitionStateCheckReply.ok"),
    (lambda: ["PartitionStateCheckReply", 1, "true"], "PartitionStateCheckReply.ok"),
    (lambda: ["PartitionStateReply", 3, 0, None, None, [], []], "PartitionStateReply.initialized"),
    # wrong types elsewhere
    (lambda: ["MigrationResult", 1, _enc_mig_with(None, 0), True, 5], "MigrationResult.reason"),
    (lambda: ["MigrationResult", 1, _enc_mig_with(None, 0), True, "x" * 5000],
     "MigrationResult.reason"),
    (lambda: ["PublishCompletedMigrations", 1, {"a": 1}], "PublishCompletedMigrations.completed"),
    (lambda: ["PublishCompletedMigrations", 1, [_enc_mig_with(None, 0), 7]],
     r"PublishCompletedMigrations.completed\[1\]"),
    (lambda: ["FetchPartitionState", True], "FetchPartitionState.sender"),
    # the message itself
    (lambda: ["NoSuchMessage", 1], "unknown message type 'NoSuchMessage'"),
    (lambda: ["Message", 1], "unknown message type 'Message'"),
    (lambda: ["FetchPartitionState", 1, 2], "FetchPartitionState: expected 0 fields, got 1"),
    (lambda: ["MigrationCommit", 1], "MigrationCommit: expected 1 fields, got 0"),
    (lambda: [5, 1], "expected \\[message type"),
    (lambda: "FetchPartitionState", "expected \\[message type"),
    (lambda: ["FetchPartitionState"], "expected \\[message type"),
    # an initialized state without its table
    (lambda: ["PartitionStateReply", 3, True, None, _versions().tobytes(), [], []],
     "initialized state needs its table"),
    (lambda: ["PartitionStateReply", 3, True, _table().tobytes(), None, [], []],
     "initialized state needs its table"),
], ids=range(39))
def test_bad_message_fields_are_refused_by_name(build, where):
    with pytest.raises(WireError, match=where):
        wire.decode_message(build(), P, R)


def _enc_mig_with(i: int | None, value: Any) -> list[Any]:
    """MIGS[0] encoded, field ``i`` replaced by ``value`` (``i`` None: ``value`` None
    means a short list, else unchanged)."""
    enc = wire.encode_message(msg.MigrationCommit(1, MIGS[0]))[2]
    if i is None:
        return enc[:-1] if value is None else enc
    enc[i] = value
    return enc


def test_table_of_another_cluster_shape_is_refused():
    enc = wire.encode_message(msg.PartitionTableUpdate(1, _table(), _versions()))
    assert wire.decode_message(enc, P, R) is not None
    with pytest.raises(WireError, match=r"PartitionTableUpdate.replicas: 84 bytes, expected 56"):
        wire.decode_message(enc, P, R - 1)
    with pytest.raises(WireError, match="PartitionTableUpdate.replicas"):
        wire.decode_message(enc, P + 1, R)


@pytest.mark.parametrize(("tag", "fields", "where"), [
    ("put", [1, 0, [[5, b"v"]]], r"put.2\[0\]: a key must be a string, got int"),
    ("put", [1, 0, [[b"k", b"v"]]], r"put.2\[0\]: a key must be a string, got bytes"),
    ("put", [1, 0, [["k", "v"]]], r"put.2\[0\]: a value must be bytes, got str"),
    ("put", [1, 0, [["k", b"v", 1, 2]]],
     r"put.2\[0\]: expected \[key, value\] or \[key, value, time\]"),
    ("put", [1, 0, [["k" * (64 << 10 + 1), b""]]], r"put.2\[0\]: key longer"),
    ("put", [1, -1, []], "put.1: -1 outside 0..10000000"),
    ("put", [1, 10_000_001, []], "put.1: 10000001 outside"),
    ("put", [2**63, 0, []], "put.0: 9223372036854775808 outside"),
    ("get", [1, 0, ["a", None]], r"get.2\[1\]: a key must be a string, got NoneType"),
    ("backup", [1, 0, 0, [["k", None]]], r"backup.3\[0\]: a value must be bytes"),
    ("chunk", [1, "stage", 1, 2, 3, [], 0, 1], "chunk.7: expected a bool, got int"),
    ("auth", ["c", "peer", -2, b"n" * 32], "auth.2: -2 outside"),
    ("auth", ["c", "peer", 2**31 - 1, b"n" * 32], "auth.2: 2147483647 outside"),
    ("auth", ["c", "peer", 1, b"n" * 33], "auth.3: expected 32 bytes, got 33"),
    ("challenge", [b"n" * 32, "m" * 32], "challenge.1: expected 32 bytes, got str"),
    ("hb", [1, "1"], "hb.1: expected an int, got str"),
    ("members", [1, 2, [[1, "a", 1], [1, "b", 2]]], "members.2: a member id repeats"),
    ("members", [1, 2, [[1, "a", 1], [2, "b", 2], [2, "c", 3]]], "members.2: a member id"),
    ("members", [1, 2, [[1, "a", 70000]]], r"members.2\[0\] port: 70000 outside"),
    ("members", [1, 2, [[-3, "a", 1]]], r"members.2\[0\] id: -3 outside"),
    ("members", [1, 2, [[1, 5, 1]]], r"members.2\[0\] host: expected a string"),
    ("members", [1, 2, [[1, "h" * 256, 1]]], r"members.2\[0\] host: longer than 255"),
    ("members", [1, 2, [[1, "a"]]], r"members.2\[0\]: expected \[member id, host, port\]"),
    ("error", [1, "x" * 4097, "", None], "error.1: longer than 4096"),
])
def test_bad_frame_fields_are_refused_by_name(tag, fields, where):
    body = wire.frame(tag, *fields)[4:]
    with pytest.raises(WireError, match=where):
        wire.parse(wire.unpack(body))


# ---------------------------------------------------------------------------- property tests
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_wire_error(body):
    try:
        _decode_all(body)
    except WireError:
        pass


# every int msgpack can carry (int64 and uint64)
_leaf = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
         | st.integers(-5, 40) | st.floats(allow_nan=False) | st.text(max_size=12)
         | st.binary(max_size=4 * P * R + 4) | st.sampled_from(["stage", "merge", "msg"]))
_tree = st.recursive(_leaf, lambda c: st.lists(c, max_size=6)
                     | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=30)


@pytest.mark.slow   # fuzzing: opt-in (-m slow), CI runs it; also .ci/fuzz's node_wire
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(wire.FRAMES)), st.lists(_tree, max_size=9))
def test_random_frames_raise_only_wire_error(tag, fields):
    body = msgpack.packb([tag, *fields], use_bin_type=True)
    try:
        _decode_all(body)
    except WireError:
        pass


@pytest.mark.slow   # fuzzing: opt-in (-m slow), CI runs it; also .ci/fuzz's node_wire
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(t.__name__ for t in wire.SCHEMA)),
       st.lists(_tree, min_size=1, max_size=8))
def test_random_messages_raise_only_wire_error(name, fields):
    v = [name, *fields]
    try:
        m = wire.decode_message(v, P, R)
    except WireError:
        return
    # accepted: it says exactly what the frame said
    assert msgpack.packb(wire.encode_message(m)) == msgpack.packb(v)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(examples()), st.data())
def test_one_changed_value_is_decoded_as_said_or_refused(m, data):
    enc = wire.encode_message(m)
    paths: list[tuple[int, ...]] = []

    def walk(x: Any, path: tuple[int, ...]) -> None:
        paths.append(path)
        if isinstance(x, list):
            for i, y in enumerate(x):
                walk(y, (*path, i))

    walk(enc, ())
    path = data.draw(st.sampled_from(paths[1:]))
    new = data.draw(_tree)
    changed = msgpack.unpackb(msgpack.packb(enc))
    box = changed
    for i in path[:-1]:
        box = box[i]
    box[path[-1]] = new
    try:
        back = wire.decode_message(changed, P, R)
    except WireError:
        return
    assert msgpack.packb(wire.encode_message(back)) == msgpack.packb(changed)


# ---------------------------------------------------------------------------- read_frame
def _read_all(data: bytes, max_frame: int = wire.MAX_FRAME,
              limits: dict[str, int] | None = None, eof: bool = True) -> list[Any]:
    async def go() -> list[Any]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        if eof:
            reader.feed_eof()
        out = []
        for _ in range(len(data) + 1):       # a frame takes at least 5 bytes
            f = await asyncio.wait_for(wire.read_frame(reader, max_frame, limits), 5.0)
            if f is None:
                return out
            out.append(f)
        raise AssertionError("read_frame never reached the end")
    return asyncio.run(go())


def test_read_frame_reads_frames_until_a_clean_end():
    data = wire.frame("hb", 1, 2) + wire.frame("status", 9) + wire.frame("put", 1, 0, [])
    assert _read_all(data) == [["hb", 1, 2], ["status", 9], ["put", 1, 0, []]]
    assert _read_all(b"") == []


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_read_frame_truncated_prefix(cut):
    data = wire.frame("hb", 1, 2)
    with pytest.raises(WireError, match="truncated length prefix"):
        _read_all(data[:cut])
    with pytest.raises(WireError, match="truncated length prefix"):
        _read_all(wire.frame("status", 1) + data[:cut])


def test_read_frame_truncated_body():
    data = wire.frame("put", 1, 0, [["key", b"x" * 100]])
    n = len(data) - 4
    for cut in (4, 5, len(data) // 2, len(data) - 1):
        with pytest.raises(WireError, match=rf"truncated \({cut - 4} of {n} bytes\)"):
            _read_all(data[:cut])


def test_read_frame_zero_length():
    with pytest.raises(WireError, match=r"length 0 outside 1\.\."):
        _read_all(b"\0\0\0\0" + wire.frame("status", 1))


def test_read_frame_oversized():
    body = msgpack.packb(["status", 1])
    ok = struct.pack(">I", len(body)) + body
    assert _read_all(ok, max_frame=len(body)) == [["status", 1]]
    with pytest.raises(WireError, match=rf"length {len(body)} outside 1\.\.{len(body) - 1}"):
        _read_all(ok, max_frame=len(body) - 1)
    # a huge length is refused from the prefix alone (nothing behind it is awaited)
    with pytest.raises(WireError, match=r"length 4294967295 outside 1\.\.67108864"):
        _read_all(b"\xff\xff\xff\xff")
    with pytest.raises(WireError, match=r"length 67108865 outside"):
        _read_all(struct.pack(">I", wire.MAX_FRAME + 1) + b"\0" * 10)


def test_read_frame_body_not_a_frame():
    with pytest.raises(WireError, match="frame: not msgpack"):
        _read_all(b"\0\0\0\2\xc1\xc1")
    with pytest.raises(WireError, match="frame: not an array led by a tag"):
        _read_all(struct.pack(">I", 4) + msgpack.packb({"a": 1}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([wire.frame("hb", 1, 2), wire.frame("status", 3),
                                 b"\0\0\0", b"\0\0\0\1", b"\xff", b"\x90", b"\x00"]),
                max_size=6), st.binary(max_size=40))
def test_read_frame_on_any_stream_raises_only_wire_error(pieces, tail):
    try:
        frames = _read_all(b"".join(pieces) + tail, max_frame=1024)
    except WireError:
        return
    for f in frames:
        assert isinstance(f, list) and isinstance(f[0], str)


# ---------------------------------------------------------------------------- limits by tag
PEER = wire.caps(1 << 20, wire.PEER_TAGS)
CLIENT = wire.caps(1 << 20, wire.CLIENT_TAGS)


def test_caps_by_kind():
    assert PEER == {"msg": 1 << 20, "chunk": 1 << 20, "backup": 1 << 20,
                    "hb": wire.CONTROL_FRAME, "chunk_ack": wire.CONTROL_FRAME,
                    "backup_ack": wire.CONTROL_FRAME, "members": wire.MEMBERS_FRAME}
    assert wire.caps(5, wire.AUTH_TAGS) == dict.fromkeys(wire.AUTH_TAGS, wire.AUTH_FRAME)
    assert set(wire.caps(5)) == set(wire.FRAMES)
    assert set(wire.PEER_TAGS) | set(wire.CLIENT_TAGS) | set(wire.AUTH_TAGS) \
        | {"ok", "error"} == set(wire.FRAMES)


def test_a_frame_over_its_tags_cap_is_refused_before_it_is_decoded():
    # a control frame of 100 KB (a valid frame, padded by an unused bin): refused by its
    # tag's limit, read from its first bytes; one over the largest limit is refused from
    # its length prefix, before anything else arrives
    hb = wire.frame("hb", 1, 2)
    body = msgpack.packb(["hb", 1, 2, b"p" * 99_980])
    with pytest.raises(WireError, match=rf"^hb: length {len(body)} outside 1\.\.{wire.CONTROL_FRAME}$"):
        _read_all(struct.pack(">I", len(body)) + body, 1 << 20, PEER)
    with pytest.raises(WireError, match=rf"length {(1 << 20) + 1} outside 1\.\.{1 << 20}$"):
        _read_all(struct.pack(">I", (1 << 20) + 1) + hb[4:], 1 << 20, PEER, eof=False)
    assert _read_all(hb + wire.frame("chunk_ack", 3, True), 1 << 20, PEER) == [
        ["hb", 1, 2], ["chunk_ack", 3, True]]
    big = wire.frame("backup", 1, 0, 0, [["k", b"x" * 200_000]])
    assert _read_all(big, 1 << 20, PEER)[0][0] == "backup"


@pytest.mark.parametrize(("data", "limits", "where"), [
    (wire.frame("put", 1, 0, []), PEER, "tag 'put' is not accepted here"),
    (wire.frame("hb", 1, 2), CLIENT, "tag 'hb' is not accepted here"),
    (wire.frame("hello", 1), CLIENT, "tag 'hello' is not accepted here"),
    (wire.frame("status", 1), wire.caps(9, wire.AUTH_TAGS), "tag 'status' is not accepted"),
    (struct.pack(">I", 2000) + b"\xc1" * 2000, PEER, "not msgpack"),
    (struct.pack(">I", 10_000) + b"\xc1" * 10_000, PEER, "not an array led by a short tag"),
    (struct.pack(">I", 2) + b"\x91\xc3", PEER, "not an array led by a tag"),
])
def test_a_tag_not_accepted_on_a_connection_is_refused(data, limits, where):
    with pytest.raises(WireError, match=where):
        _read_all(data, 1 << 20, limits, eof=False)


def test_a_tag_msgpack_encodes_otherwise_is_still_found():
    body = b"\x92\xd9\x06status\x07"            # the tag as a str 8, not a fixstr
    assert _read_all(struct.pack(">I", len(body)) + body, 1 << 20, CLIENT) == [["status", 7]]


def test_decoding_cannot_amplify_memory():
    """At most one array or map per 4 bytes of a body: a body of empty arrays (the
    issue's bomb) is refused; the densest real frame, [key, value] entries, passes."""
    n = 1 << 20
    bomb = msgpack.packb(["put", 1, 0, []])[:-1] + b"\xdd" + struct.pack(">I", n) + b"\x90" * n
    with pytest.raises(WireError, match=r"^frame: (more than \d+ arrays and maps in \d+ bytes|"
                                        r"not msgpack \(ValueError: \d+ exceeds max_array_len)"):
        wire.unpack(bomb)
    pairs = b"\x92\xa2hb\xdc" + struct.pack(">H", 3000) + b"\x91\x90" * 3000  # 6,001 in 6,006
    with pytest.raises(WireError, match="arrays and maps"):
        wire.unpack(pairs)
    dense = wire.frame("put", 1, 0, [["", b""]] * 50_000)[4:]
    assert len(wire.unpack(dense)[3]) == 50_000
    maps = msgpack.packb(["ok", 1, [{}] * 5000])
    with pytest.raises(WireError, match="arrays and maps"):
        wire.unpack(maps)
    small = msgpack.packb(["ok", 1, [[]] * 1000])    # up to 4 KiB: bounded by the size alone
    assert len(wire.unpack(small)[2]) == 1000


def test_a_member_decodes_at_most_its_containers():
    """A member's caps bound the arrays and maps of one frame (and the elements of any one
    of them) to ``Caps.containers``, well under one per 4 bytes."""
    limits = wire.caps(1 << 20, wire.CLIENT_TAGS)
    assert limits.containers == wire.MAX_ITEMS + 64
    assert wire.caps(1 << 20, wire.PEER_TAGS, 10 * wire.MAX_ITEMS).containers == \
        10 * wire.MAX_ITEMS + 64
    c = limits.containers
    pair = ["kkkk", b"vvvv"]                      # 12 bytes: the size does not bind first
    at = msgpack.packb(["put", 1, 0, [pair] * (c - 2)], use_bin_type=True)
    assert len(wire.unpack(at, c)[3]) == c - 2
    over = msgpack.packb(["put", 1, 0, [pair] * (c - 1)], use_bin_type=True)
    with pytest.raises(WireError, match=f"more than {c} arrays and maps"):
        wire.unpack(over, c)
    long = msgpack.packb(["get", 1, 0, [""] * (c + 1)])
    with pytest.raises(WireError, match=f"exceeds max_array_len\\({c}\\)"):
        wire.unpack(long, c)
    assert len(wire.unpack(long)[3]) == c + 1          # without a member's caps: the size


@pytest.mark.parametrize(("tag", "item"), [("put", ["k", b"v"]), ("get", "k"),
                                           ("backup", ["k", b"v"])])
def test_a_frame_holds_at_most_max_items(tag, item):
    head = {"put": [1, 0], "get": [1, 0], "backup": [1, 0, 5]}[tag]
    ok = wire.parse([tag, *head, [item] * wire.MAX_ITEMS])
    assert len(ok[-1]) == wire.MAX_ITEMS
    with pytest.raises(WireError, match=f"{wire.MAX_ITEMS + 1} (entries|keys), at most "
                                        f"{wire.MAX_ITEMS} in one frame"):
        wire.parse([tag, *head, [item] * (wire.MAX_ITEMS + 1)])


def test_a_failing_entry_is_still_named():
    """The whole-list checks only speed up the usual case: a bad entry is named."""
    entries = [["k", b"v"]] * 10
    for bad, where in [(["k", "v"], "put.2[7]: a value must be bytes"),
                       (["k"], "put.2[7]: expected [key, value] or [key, value, time]"),
                       ([1, b"v"], "put.2[7]: a key must be a string"),
                       (["k" * (64 << 10 | 1), b"v"], "put.2[7]: key longer than"),
                       (["k", b"v", "1"], "put.2[7] time: expected an int"),
                       (["k", b"v", -1], "put.2[7] time: -1 outside"),
                       (["k", b"v", 1 << 62], "put.2[7] time: 4611686018427387904 outside"),
                       (["k", b"v", 1, 2], "put.2[7]: expected [key, value] or")]:
        with pytest.raises(WireError, match=re.escape(where)):
            wire.parse(["put", 1, 0, entries[:7] + [bad] + entries[8:]])
    with pytest.raises(WireError, match=re.escape("get.2[2]: a key must be a string")):
        wire.parse(["get", 1, 0, ["a", "b", b"c"]])


def test_a_message_holds_at_most_its_shapes_migrations():
    """At most 4 x partitions x replicas + 256 migrations in one message; partition
    lists at most one id per partition; a bad migration field is still named."""
    most = 4 * P * R + 256
    ok = wire.encode_message(msg.PublishCompletedMigrations(1, (MIGS[0],) * most))
    assert len(wire.decode_message(ok, P, R).completed) == most
    over = wire.encode_message(msg.PublishCompletedMigrations(1, (MIGS[0],) * (most + 1)))
    with pytest.raises(WireError, match=f"more than {most} migrations in one message"):
        wire.decode_message(over, P, R)
    two = wire.encode_message(msg.PartitionStateReply(1, True, np.zeros((P, R), np.int32),
                                                      np.zeros(P, np.int32), (MIGS[0],) * most,
                                                      (MIGS[0],)))
    with pytest.raises(WireError, match="PartitionStateReply.active: more than"):
        wire.decode_message(two, P, R)
    ack = wire.encode_message(msg.PartitionTableAck(1, False, tuple(range(P + 1))))
    with pytest.raises(WireError, match=f"{P + 1} partitions, at most {P}"):
        wire.decode_message(ack, P, R)
    bad = wire.encode_message(msg.MigrationCommit(1, MIGS[0]))
    bad[2][5] = 2**31
    with pytest.raises(WireError, match=re.escape("MigrationCommit.migration[5]: 2147483648 outside")):
        wire.decode_message(bad, P, R)
