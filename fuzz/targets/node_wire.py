"""Fuzz target: the node runtime's receiving path, ``hzfast.node.wire``.

What a member does with the bytes a peer or a client sends: ``read_frame`` (length
prefix, body), ``unpack`` (msgpack), ``parse`` (the tag's fields, :data:`wire.FRAMES`)
and, for ``msg`` frames, ``decode_message`` (:data:`wire.SCHEMA`, tables checked against
the cluster's shape). Inputs are raw bytes; valid messages and frames built from the
input (every message type and every field kind in ``SCHEMA``, every tag in ``FRAMES``),
then one value replaced by a hostile one (edge ints, wrong types, arrays of the wrong
size, lists cut short or grown), or their packed bytes flipped, cut or extended;
streams of frames with lying length prefixes read under a small ``max_frame``, also with
the per-tag limits a member reads with; and the handshake (``hzfast.node.auth``): a
genuine one between an opener and a listener in memory, with secrets, names, roles and
ids from the input, then an opener that changes one frame or sends input bytes.

The contract: the only exception is ``WireError`` (a ``ValueError``: the runtime catches
that one and closes the connection, anything else would escape its connection handler),
and, in the handshake, ``AuthError``. A listener accepts only an opener that proves the
same secret for the same transcript; a genuine pair always agrees on role and member id.
A valid message decodes to itself. Whatever is accepted says exactly what the frame
said: the decoded message re-encodes (``encode_message``) to the same msgpack structure,
a parsed frame's fields pack to the same structure, tables come back as int32 arrays of
the cluster's shape.
"""
from __future__ import annotations

import asyncio
import struct
from typing import Any

import atheris
import msgpack
import numpy as np

from fuzz._common import INT_EDGES, Finding
from hzfast.node import auth, wire
from hzfast.node.auth import AuthError
from hzfast.node.wire import WireError
from hzfast.protocol import messages as msg
from hzfast.protocol.membership import MemberList
from hzfast.protocol.messages import MigrationInfo, MigrationStatus

_TYPES = sorted(wire.SCHEMA, key=lambda t: t.__name__)
_TAGS = sorted(wire.FRAMES)
_LOOP = asyncio.new_event_loop()
_I32 = (-(2**31), 2**31 - 1)
#: the edge ints msgpack can carry (int64 and uint64): what a peer can send at all
_PACKABLE_EDGES = [i for i in INT_EDGES if -(2**63) <= i < 2**64]


def _packed(x: Any) -> bytes:
    return bytes(msgpack.packb(x, use_bin_type=True))


# ---------------------------------------------------------------------------- builders
def _i32(fdp: Any) -> int:
    if fdp.ConsumeBool():
        return int(fdp.PickValueInList([-1, 0, 1, 2, _I32[0], _I32[1]]))
    return int(fdp.ConsumeIntInRange(*_I32))


def _i64(fdp: Any) -> int:
    if fdp.ConsumeBool():
        return int(fdp.PickValueInList([0, 1, -1, 2**31, -(2**63), 2**63 - 1]))
    return int(fdp.ConsumeIntInRange(-(2**63), 2**63 - 1))


def _mig(fdp: Any) -> MigrationInfo:
    n = [_i32(fdp) for _ in range(12)]
    return MigrationInfo((n[0], n[1]), *n[2:], status=MigrationStatus(fdp.ConsumeIntInRange(0, 2)),
                         promotion=fdp.ConsumeBool())


def _value(fdp: Any, kind: str, P: int, R: int) -> Any:
    if kind.endswith("?"):
        if fdp.ConsumeIntInRange(0, 3) == 0:
            return None
        kind = kind[:-1]
    if kind == "mig":
        return _mig(fdp)
    if kind == "migs":
        return tuple(_mig(fdp) for _ in range(fdp.ConsumeIntInRange(0, 3)))
    if kind == "ids":
        return tuple((_i32(fdp), _i32(fdp)) for _ in range(fdp.ConsumeIntInRange(0, 3)))
    if kind == "ints":                 # partition ids: at most one per partition
        return tuple(_i64(fdp) for _ in range(fdp.ConsumeIntInRange(0, min(4, P))))
    if kind == "table":
        return np.array([_i32(fdp) for _ in range(P * R)], dtype=np.int32).reshape(P, R)
    if kind == "versions":
        return np.array([_i32(fdp) for _ in range(P)], dtype=np.int32)
    if kind == "bool":
        return fdp.ConsumeBool()
    if kind == "str":
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 40))
    if kind == "int":
        return _i64(fdp)
    if kind == "key":                  # a member list's (term, version)
        return (fdp.ConsumeIntInRange(0, 2**62), fdp.ConsumeIntInRange(0, 2**62))
    if kind == "mid":
        return fdp.ConsumeIntInRange(0, 2**31 - 2)
    if kind == "mids":
        return _mids(fdp)
    if kind == "mlist":
        return MemberList(fdp.ConsumeIntInRange(0, 2**62), fdp.ConsumeIntInRange(0, 2**62),
                          _mids(fdp))
    raise AssertionError(f"the harness does not know field kind {kind!r}")  # a new kind


def _mids(fdp: Any) -> tuple[int, ...]:
    """1..4 distinct member ids."""
    ids: list[int] = []
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        m = fdp.ConsumeIntInRange(0, 2**31 - 2)
        if m not in ids:
            ids.append(m)
    return tuple(ids)


def build_message(fdp: Any, P: int, R: int) -> msg.Message:
    """A valid message of a type the input picks, its fields from the input."""
    t = fdp.PickValueInList(_TYPES)
    fields = [_value(fdp, k, P, R) for _, k in wire.SCHEMA[t]]
    if t is msg.PartitionStateReply and fields[0]:
        # an initialized state carries its table (the decoder insists)
        if fields[1] is None:
            fields[1] = _value(fdp, "table", P, R)
        if fields[2] is None:
            fields[2] = _value(fdp, "versions", P, R)
    m: msg.Message = t(fdp.ConsumeIntInRange(0, 2**31 - 2), *fields)
    return m


def _entries(fdp: Any) -> list[list[Any]]:
    """[key, value] entries, some with an update time."""
    return [[fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 12)),
             fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 12)),
             *([fdp.ConsumeIntInRange(0, 2**62 - 1)] if fdp.ConsumeBool() else [])]
            for _ in range(fdp.ConsumeIntInRange(0, 3))]


def build_frame(fdp: Any, P: int, R: int) -> list[Any]:
    """A valid frame (as its msgpack array) of a tag the input picks."""
    tag = fdp.PickValueInList(_TAGS)
    out: list[Any] = [tag]
    for kind in wire.FRAMES[tag]:
        if kind == "id":
            out.append(fdp.ConsumeIntInRange(0, 2**31 - 2))
        elif kind == "id?":
            out.append(fdp.ConsumeIntInRange(-1, 2**31 - 2))
        elif kind == "b32":
            out.append(fdp.ConsumeBytes(32).ljust(32, b"\0"))
        elif kind == "name":
            out.append(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 20)))
        elif kind == "partition":
            out.append(fdp.ConsumeIntInRange(0, 10_000_000))
        elif kind == "term":
            out.append(fdp.ConsumeIntInRange(0, 2**63 - 1))
        elif kind == "int":
            out.append(_i64(fdp))
        elif kind == "bool":
            out.append(fdp.ConsumeBool())
        elif kind == "str":
            out.append(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 20)))
        elif kind == "entries":
            out.append(_entries(fdp))
        elif kind == "keys":
            out.append([e[0] for e in _entries(fdp)])
        elif kind == "members":
            ids = sorted({fdp.ConsumeIntInRange(0, 50) for _ in range(fdp.ConsumeIntInRange(0, 4))})
            out.append([[i, fdp.ConsumeUnicodeNoSurrogates(10), fdp.ConsumeIntInRange(0, 65535)]
                        for i in ids])
        elif tag == "msg":
            out.append(wire.encode_message(build_message(fdp, P, R)))
        else:                                        # "any": some msgpack value
            out.append(fdp.PickValueInList([None, 1, "x", b"\0", [1, "a"], {"k": [b"v"]}]))
    return out


def hostile(fdp: Any, P: int, R: int) -> Any:
    """A value a field should not hold (or, now and then, one it may)."""
    return fdp.PickValueInList([
        *_PACKABLE_EDGES, 2**64 - 1, True, False, None, 0.0, 1.5, "", "x",
        "x" * 5000, b"", b"\0" * 4 * P, b"\0" * 4 * P * R, b"\0" * (4 * P * R + 1),
        [], [0, 1], [[1, 2]], [["k", b"v"]], [[1, "h", 1], [1, "h", 2]], {"a": 1}, {},
        ["MigrationCommit", 1], list(range(14)), [0] * 12 + [3, False],
    ])


def _paths(x: Any, path: tuple[int, ...], out: list[tuple[int, ...]], depth: int = 0) -> None:
    out.append(path)
    if isinstance(x, list) and depth < 6:
        for i, y in enumerate(x):
            _paths(y, (*path, i), out, depth + 1)


def mutate(fdp: Any, obj: list[Any], P: int, R: int) -> list[Any]:
    """``obj`` (a fresh copy) with one value replaced, or one list cut or grown."""
    obj = msgpack.unpackb(_packed(obj), raw=False)
    paths: list[tuple[int, ...]] = []
    _paths(obj, (), paths)
    path = paths[fdp.ConsumeIntInRange(1, len(paths) - 1)] if len(paths) > 1 else ()
    if not path:
        return obj
    box = obj
    for i in path[:-1]:
        box = box[i]
    how = fdp.ConsumeIntInRange(0, 3)
    if how == 0 and isinstance(box[path[-1]], list):
        del box[path[-1]][fdp.ConsumeIntInRange(0, len(box[path[-1]])):]
    elif how == 1 and isinstance(box[path[-1]], list):
        box[path[-1]].append(hostile(fdp, P, R))
    else:
        box[path[-1]] = hostile(fdp, P, R)
    return obj


def damage(fdp: Any, body: bytes) -> bytes:
    raw = bytearray(body)
    for _ in range(fdp.ConsumeIntInRange(1, 3)):
        how = fdp.ConsumeIntInRange(0, 2)
        if how == 0 and raw:
            raw[fdp.ConsumeIntInRange(0, len(raw) - 1)] = fdp.ConsumeIntInRange(0, 255)
        elif how == 1:
            del raw[fdp.ConsumeIntInRange(0, len(raw)):]
        else:
            raw += fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 8))
    return bytes(raw)


# ---------------------------------------------------------------------------- the contract
def _is_int(x: Any, lo: int, hi: int) -> bool:
    return type(x) is int and lo <= x <= hi


def _is_mig(x: Any) -> bool:
    if type(x) is not MigrationInfo or type(x.id) is not tuple or len(x.id) != 2:
        return False
    ints = [*x.id, *(getattr(x, f) for f in _MIG_INTS)]
    return (all(_is_int(i, *_I32) for i in ints) and type(x.status) is MigrationStatus
            and type(x.promotion) is bool)


_MIG_INTS = ("partition", "source", "source_current_index", "source_new_index", "destination",
             "destination_current_index", "destination_new_index", "master", "initial", "final")


def _typed(a: Any, kind: str, P: int, R: int) -> bool:
    """``a`` is what a field of ``kind`` holds in a message built by the protocol."""
    if kind.endswith("?"):
        if a is None:
            return True
        kind = kind[:-1]
    if kind in ("table", "versions"):
        shape = (P, R) if kind == "table" else (P,)
        return type(a) is np.ndarray and a.dtype == np.int32 and a.shape == shape
    if kind == "mig":
        return _is_mig(a)
    if kind == "migs":
        return type(a) is tuple and all(_is_mig(x) for x in a)
    if kind == "ids":
        return type(a) is tuple and all(type(x) is tuple and len(x) == 2
                                        and all(_is_int(i, *_I32) for i in x) for x in a)
    if kind == "ints":
        return (type(a) is tuple and len(a) <= P
                and all(_is_int(i, -(2**63), 2**63 - 1) for i in a))
    if kind == "bool":
        return type(a) is bool
    if kind == "str":
        return type(a) is str and len(a) <= 4096
    if kind == "int":
        return _is_int(a, -(2**63), 2**63 - 1)
    if kind == "key":
        return type(a) is tuple and len(a) == 2 and all(_is_int(i, 0, 2**62) for i in a)
    if kind == "mid":
        return _is_int(a, 0, 2**31 - 2)
    if kind == "mids":
        return _is_mids(a)
    if kind == "mlist":
        return (type(a) is MemberList and _is_int(a.term, 0, 2**62)
                and _is_int(a.version, 0, 2**62) and _is_mids(a.members))
    raise AssertionError(f"the harness does not know field kind {kind!r}")  # a new kind


def _is_mids(a: Any) -> bool:
    return (type(a) is tuple and 0 < len(a) <= 8192 and len(set(a)) == len(a)
            and all(_is_int(i, 0, 2**31 - 2) for i in a))


def _check_message(m: msg.Message, v: Any, P: int, R: int) -> None:
    """An accepted ``msg`` field: the message says what ``v`` said, in the types and
    ranges the protocol's dataclasses declare."""
    t = type(m)
    if t not in wire.SCHEMA:
        raise Finding(f"decode_message returned {t.__name__}")
    if _packed(wire.encode_message(m)) != _packed(v):
        raise Finding(f"{t.__name__} re-encodes to another structure: "
                      f"{wire.encode_message(m)!r:.300} from {v!r:.300}")
    if not _is_int(m.sender, 0, 2**31 - 2):
        raise Finding(f"{t.__name__}.sender accepted as {m.sender!r}")
    for f, kind in wire.SCHEMA[t]:
        if not _typed(getattr(m, f), kind, P, R):
            raise Finding(f"{t.__name__}.{f} ({kind}) accepted as {getattr(m, f)!r:.200}")


def _with_times(obj: list[Any]) -> list[Any]:
    """``obj`` as parsing should give it: an entry sent as ``[key, value]`` has update
    time 0."""
    kinds = wire.FRAMES.get(obj[0], ())
    return [obj[0], *([[*e, 0][:3] for e in v] if k == "entries" else v
                      for k, v in zip(kinds, obj[1:]))]


def receive(body: bytes, P: int, R: int) -> tuple[Any, ...] | None:
    """The receiving path for one frame body under the contract; the parsed frame, the
    ``msg`` field replaced by its message, or None when refused."""
    try:
        obj = wire.unpack(body)
        f = wire.parse(obj)
    except WireError:
        return None
    if _packed(list(f)) != _packed(_with_times(obj)):
        raise Finding(f"parse changed the frame: {obj!r:.300} -> {f!r:.300}")
    if f[0] != "msg":
        return f
    try:
        m = wire.decode_message(f[1], P, R)
    except WireError:
        return None
    _check_message(m, f[1], P, R)
    return (f[0], m)


def _shape(fdp: Any) -> tuple[int, int]:
    return fdp.ConsumeIntInRange(1, 6), fdp.ConsumeIntInRange(1, 4)


# ---------------------------------------------------------------------------- pieces
def fuzz_bytes(data: bytes) -> None:
    """Raw bytes (after two shape bytes): as one frame body, and as a stream of frames."""
    P, R = (1 + data[0] % 6, 1 + data[1] % 4) if len(data) >= 2 else (1, 1)
    body = data[2:]
    receive(body, P, R)
    read_stream(body, 4096, P, R)


def fuzz_message(data: bytes) -> None:
    """A valid message decodes to itself; then one value replaced, or its bytes damaged."""
    fdp = atheris.FuzzedDataProvider(data)
    P, R = _shape(fdp)
    m = build_message(fdp, P, R)
    enc = wire.encode_message(m)
    term = fdp.ConsumeIntInRange(0, 2**63 - 1)
    body = wire.frame("msg", enc, term)[4:]
    got = receive(body, P, R)
    if got is None or got[1] != m:
        raise Finding(f"a valid {type(m).__name__} did not come back: {got!r:.300}")
    for _ in range(fdp.ConsumeIntInRange(0, 2)):
        enc = mutate(fdp, enc, P, R)
    if fdp.ConsumeBool():
        try:
            wire.decode_message(enc, P, R)
        except WireError:
            return
        receive(_packed(["msg", enc, term]), P, R)
    else:
        receive(damage(fdp, _packed(["msg", enc, term])), P, R)


def fuzz_frame(data: bytes) -> None:
    """A valid frame of any tag parses; then one value replaced, or its bytes damaged."""
    fdp = atheris.FuzzedDataProvider(data)
    P, R = _shape(fdp)
    obj = build_frame(fdp, P, R)
    if receive(_packed(obj), P, R) is None:
        raise Finding(f"a valid {obj[0]} frame was refused: {obj!r:.300}")
    if fdp.ConsumeBool():
        receive(_packed(mutate(fdp, obj, P, R)), P, R)
    else:
        receive(damage(fdp, _packed(obj)), P, R)


async def _read(data: bytes, max_frame: int, limits: dict[str, int] | None = None
                ) -> list[list[Any]]:
    reader = asyncio.StreamReader(limit=1 << 16)
    reader.feed_data(data)
    reader.feed_eof()
    out = []
    for _ in range(len(data) + 1):                 # a frame takes at least 5 bytes
        f = await wire.read_frame(reader, max_frame, limits)
        if f is None:
            return out
        out.append(f)
    raise Finding("read_frame did not reach the end of a finite stream")


def read_stream(data: bytes, max_frame: int, P: int, R: int,
                limits: dict[str, int] | None = None) -> None:
    """``read_frame`` over ``data`` until its end, under the contract: only WireError,
    and every frame read is the next one the stream holds, within its tag's limit (each
    also goes through :func:`receive`)."""
    try:
        frames = _LOOP.run_until_complete(_read(data, max_frame, limits))
    except WireError:
        return
    used = 0
    for f in frames:
        if not isinstance(f, list) or not f or not isinstance(f[0], str):
            raise Finding(f"read_frame returned {f!r:.200}")
        (n,) = struct.unpack(">I", data[used:used + 4])
        used += 4
        if not 1 <= n <= max_frame:
            raise Finding(f"read_frame accepted a frame of {n} bytes (max {max_frame})")
        if limits is not None and not n <= limits.get(f[0], -1):
            raise Finding(f"read_frame accepted a {f[0]!r:.40} frame of {n} bytes "
                          f"(limits {limits})")
        held = msgpack.unpackb(data[used:used + n], raw=False, strict_map_key=False)
        if _packed(held) != _packed(f):
            raise Finding("read_frame returned another frame than the stream held")
        receive(data[used:used + n], P, R)
        used += n
    if used != len(data):
        raise Finding(f"read_frame ended cleanly with {len(data) - used} bytes unread")


def fuzz_stream(data: bytes) -> None:
    """Valid frames, lying length prefixes and junk, read under a small max_frame."""
    fdp = atheris.FuzzedDataProvider(data)
    P, R = _shape(fdp)
    max_frame = fdp.ConsumeIntInRange(1, 300)
    parts = []
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        how = fdp.ConsumeIntInRange(0, 3)
        if how == 0:
            parts.append(wire.frame(*build_frame(fdp, P, R)))
        elif how == 1:   # a lying length prefix
            n = fdp.PickValueInList([0, 1, max_frame, max_frame + 1, 2**32 - 1,
                                     fdp.ConsumeIntInRange(0, 400)])
            parts.append(struct.pack(">I", n) + fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40)))
        else:
            parts.append(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40)))
    limits = None
    if fdp.ConsumeBool():                          # as a member reads a peer or a client
        limits = wire.caps(max_frame, fdp.PickValueInList(
            [wire.PEER_TAGS, wire.CLIENT_TAGS, wire.AUTH_TAGS]))
        limits = {t: min(c, fdp.ConsumeIntInRange(1, 300)) for t, c in limits.items()}
    read_stream(b"".join(parts), max_frame, P, R, limits)


# ---------------------------------------------------------------------------- handshake
class _Pipe:
    """A writer that feeds what is written to the other side's reader."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def write(self, data: bytes) -> None:
        self.reader.feed_data(data)


async def _pair(opener: Any, secret_l: bytes, name_l: str) -> tuple[Any, Any]:
    """Run ``opener(reader, writer)`` against a listener in memory; each side's result
    (its return value or the exception it raised)."""
    to_listener, to_opener = asyncio.StreamReader(), asyncio.StreamReader()

    async def side(coro: Any, done: asyncio.StreamReader) -> Any:
        try:
            return await coro
        except (AuthError, WireError) as exc:
            return exc
        finally:
            done.feed_eof()                     # the side closes its connection

    got = await asyncio.wait_for(asyncio.gather(
        side(opener(to_opener, _Pipe(to_listener)), to_listener),
        side(auth.accept(to_listener, _Pipe(to_opener), secret=secret_l,  # type: ignore[arg-type]
                         cluster_name=name_l), to_opener)), 5.0)
    return got[0], got[1]


def fuzz_handshake(data: bytes) -> None:
    """A genuine handshake completes; another secret, another name, a changed frame or
    arbitrary bytes from the opener never authenticate."""
    fdp = atheris.FuzzedDataProvider(data)
    secret = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40))
    name = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(1, 12)) or "c"
    role = fdp.PickValueInList(list(auth.ROLES))
    member = fdp.ConsumeIntInRange(0, 2**31 - 2) if role == "peer" else -1
    how = fdp.ConsumeIntInRange(0, 3)
    if how == 0:                                # genuine, or another secret / name
        other_secret = secret if fdp.ConsumeBool() else fdp.ConsumeBytes(8) + b"x"
        other_name = name if fdp.ConsumeBool() else name + "2"
        o, listener = _LOOP.run_until_complete(_pair(
            lambda r, w: auth.offer(r, w, secret=other_secret, cluster_name=other_name,
                                    role=role, member=member), secret, name))
        same = other_secret == secret and other_name == name
        if same and (o is not None or listener != (role, member)):
            raise Finding(f"a genuine handshake failed: {o!r}, {listener!r}")
        if not same and not isinstance(listener, AuthError):
            raise Finding(f"the listener accepted another secret or name: {listener!r}")
        return
    n_open = fdp.ConsumeBytes(32).ljust(32, b"\0")
    first = wire.frame("auth", name, role, member, n_open)
    guess = fdp.ConsumeBytes(32).ljust(32, b"\0")
    tail = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))

    async def hostile(reader: asyncio.StreamReader, writer: _Pipe) -> None:
        if how == 1:                            # the hello changed, then a guessed proof
            writer.write(wire.frame(*mutate(fdp, msgpack.unpackb(first[4:], raw=False),
                                            1, 1)))
            writer.write(wire.frame("proof", guess))
        elif how == 2:                          # a genuine hello, damaged proof bytes
            writer.write(first)
            await asyncio.wait_for(wire.read_frame(reader, wire.AUTH_FRAME), 1.0)
            writer.write(damage(fdp, wire.frame("proof", guess)))
        else:                                   # bytes from the input
            writer.write(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 200)))
        writer.write(tail)

    _, listener = _LOOP.run_until_complete(_pair(hostile, secret, name))
    if not isinstance(listener, (AuthError, WireError)):
        raise Finding(f"the listener accepted an opener without the proof: {listener!r}")


#: The first input byte picks the piece; the raw-bytes piece is first so that a seed can
#: be a real frame: ``b"\x00" + two shape bytes + frame``.
PIECES = (fuzz_bytes, fuzz_message, fuzz_message, fuzz_frame, fuzz_stream, fuzz_handshake)


def test_one_input(data: bytes) -> None:
    if data:
        PIECES[data[0] % len(PIECES)](data[1:])
