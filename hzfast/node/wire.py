"""The node runtime's wire format: length-prefixed msgpack frames (docs/node.md §2).

A frame is a 4-byte big-endian length, then that many bytes of msgpack: an array whose
first element is a tag (a short string) and whose other elements are the tag's fields
(:data:`FRAMES`). Protocol messages travel inside ``msg`` frames, encoded field by field
(:data:`SCHEMA`); partition tables as raw little-endian ``int32`` buffers. Everything a
peer or a client sends is checked before it is used: a frame that is not what its tag
says raises :class:`WireError` (a ``ValueError``), and the runtime closes that
connection. Nothing here does I/O except :func:`read_frame`, which reads one frame from
an :class:`asyncio.StreamReader`.
"""
from __future__ import annotations

import asyncio
import gc
import struct
import time
from collections.abc import Callable
from typing import Any, cast

import msgpack
import numpy as np
from numpy.typing import NDArray

from hzfast.protocol import membership as mb
from hzfast.protocol import messages as msg
from hzfast.protocol.messages import MigrationInfo, MigrationStatus

__all__ = ["AUTH_FRAME", "AUTH_TAGS", "CLIENT_TAGS", "CONTROL_FRAME", "DATA_TAGS", "FRAMES",
           "MAX_FRAME", "MAX_ITEMS", "MEMBERS_FRAME", "PEER_TAGS", "SCHEMA", "SHAPES", "Caps",
           "WireError", "caps", "decode_message", "encode_message", "frame", "parse",
           "read_frame", "unpack"]

#: The default largest frame a client accepts (bytes after the length prefix); a member
#: reads with the caps of :func:`caps` (``Settings.max_frame`` for data frames).
MAX_FRAME = 64 << 20
#: The largest handshake frame (the only frames read before a connection authenticates).
AUTH_FRAME = 1024
#: The largest control frame (heartbeats, acks, requests without data, errors).
CONTROL_FRAME = 8 << 10
#: The largest member list (about 8,000 members).
MEMBERS_FRAME = 256 << 10
#: The handshake's tags, in order: client hello, server challenge, client proof.
AUTH_TAGS = ("auth", "challenge", "proof")
#: Tags that carry replica data or tables: capped by the data frame size.
DATA_TAGS = frozenset({"msg", "chunk", "backup", "put", "merge", "merge_latest", "get", "ok"})
#: What a member accepts on a peer connection, and on a client connection.
PEER_TAGS = ("msg", "hb", "members", "chunk", "chunk_ack", "backup", "backup_ack")
CLIENT_TAGS = ("join", "put", "merge", "merge_latest", "get", "locate", "status")
#: The most entries (``put``, ``backup``, ``chunk``) or keys (``get``) one frame carries, and
#: the most arrays and maps a member decodes in one frame besides the frame's own few
#: (:func:`caps`): what bounds the time one frame takes to decode (docs/node.md §8).
MAX_ITEMS = 8192
_LEN = struct.Struct(">I")
_I64 = (-(2**63), 2**63 - 1)
_MAX_TEXT = 4096            # reasons, host names, error messages
_MAX_KEY = 64 << 10
_TIME_END = 1 << 62         # an entry's update time (ms since the epoch) is below this


class WireError(ValueError):
    """A frame that is not what the wire format says (garbage, truncated, oversized,
    a field of the wrong type or out of range)."""


# ---------------------------------------------------------------------------- frames
def frame(*fields: Any) -> bytes:
    """One frame: ``fields`` (the tag first) packed with msgpack, length-prefixed.

    Examples
    --------
    >>> frame("hb", 3, 7)[:4]
    b'\\x00\\x00\\x00\\x06'
    """
    body: bytes = msgpack.packb(list(fields), use_bin_type=True)
    return _LEN.pack(len(body)) + body


class _TooMany(ValueError):
    pass


class _OffShape(ValueError):
    pass


#: The data frames' element arrays, by tag: their lengths (a ``[key, value]`` or
#: ``[key, value, update time]`` entry, a
#: migration's 14 fields or an id pair, a ``[member id, host, port]``). Besides them a
#: frame holds at most ``_LONG`` arrays (itself, its lists, a message), and no map.
SHAPES: dict[str, frozenset[int]] = {
    "put": frozenset({2, 3}), "merge": frozenset({2, 3}), "merge_latest": frozenset({2, 3}),
    "backup": frozenset({2, 3}), "chunk": frozenset({2, 3}),
    "get": frozenset(), "msg": frozenset({2, 14}), "members": frozenset({3})}
_LONG = 8


_SMALL = 4096            # bodies up to this size decode without the container budget


def unpack(body: bytes, containers: int = 0, tag: str = "") -> list[Any]:
    """The msgpack array of one frame body.

    Decoding cannot amplify memory much: every string, binary, array and map is at most
    the body's length, and the body holds at most one array or map per 4 of its bytes
    (the smallest legitimate container, a ``[key, value]`` entry, takes 4), so what
    decoding builds is within about 25 times the body's size. ``containers`` (when not
    0) lowers that to at most so many arrays and maps, and as many elements in any one
    of them (a member reads with :attr:`Caps.containers`): decoding stops there, which
    bounds its time too. With ``tag`` (one of :data:`SHAPES`), the arrays beyond the
    frame's few long ones must have that tag's lengths, and decoding stops at the first
    few that do not: a frame cannot hold a million one-byte elements in arrays of
    another shape.

    Raises
    ------
    WireError
        The bytes are not one complete msgpack array led by a string tag, or hold more
        containers than that.
    """
    n = len(body)
    if n <= _SMALL:                      # at most a few hundred KiB built: no budget needed
        try:
            obj = msgpack.unpackb(body, raw=False, strict_map_key=True, use_list=True)
        except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as exc:
            raise WireError(f"frame: not msgpack ({type(exc).__name__})") from None
        if not isinstance(obj, list) or not obj or not isinstance(obj[0], str):
            raise WireError("frame: not an array led by a tag")
        return obj
    most = min(n // 4 + 2, containers or n)
    longest = min(n, containers or n)
    budget = [most, _LONG]
    shape = SHAPES.get(tag)
    shaped: frozenset[int] = shape or frozenset()

    def count(x: Any) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooMany
        return x

    def count_shaped(x: Any) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooMany
        if type(x) is not list or len(x) not in shaped:
            budget[1] -= 1
            if budget[1] < 0:
                raise _OffShape
        return x

    collecting = gc.isenabled()
    if collecting:      # the collector would walk the new lists again and again: no cycles here
        gc.disable()
    try:
        obj = msgpack.unpackb(body, raw=False, strict_map_key=True, use_list=True,
                              max_bin_len=n, max_str_len=n, max_array_len=longest,
                              max_map_len=longest, max_ext_len=0,
                              list_hook=count if shape is None else count_shaped,
                              object_hook=count if shape is None else count_shaped)
    except _TooMany:
        raise WireError(f"frame: more than {most} arrays and maps in {n} bytes") from None
    except _OffShape:
        raise WireError(f"{tag}: more than {_LONG} arrays or maps of other than "
                        f"{sorted(shape or ())} elements") from None
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as exc:
        over = "exceeds max" in str(exc)        # msgpack's message for a length over its limit
        raise WireError(f"frame: not msgpack ({type(exc).__name__}"
                        f"{': ' + str(exc)[:80] if over else ''})") from None
    finally:
        if collecting:
            gc.enable()
    if not isinstance(obj, list) or not obj or not isinstance(obj[0], str):
        raise WireError("frame: not an array led by a tag")
    return obj


class Caps(dict[str, int]):
    """Tag -> largest body (a dict); ``floor`` is the smallest of them, ``containers``
    the most arrays and maps one frame may hold (0: only the bound of :func:`unpack`)."""

    floor = 0
    containers = 0


def caps(data: int, tags: tuple[str, ...] | frozenset[str] | None = None,
         items: int = MAX_ITEMS) -> Caps:
    """The largest frame of each tag (of ``tags``; default every tag): ``data`` bytes for
    the tags of :data:`DATA_TAGS`, :data:`MEMBERS_FRAME` for ``members``,
    :data:`AUTH_FRAME` for the handshake, :data:`CONTROL_FRAME` for the others; and at
    most ``items`` (at least :data:`MAX_ITEMS`) arrays and maps per frame, plus 64 for a
    frame's own structure (a member passes what its partition tables need: a list of
    migrations has one array per migration)."""
    out = Caps()
    for t in (FRAMES if tags is None else tags):
        out[t] = (data if t in DATA_TAGS else MEMBERS_FRAME if t == "members"
                  else AUTH_FRAME if t in AUTH_TAGS else CONTROL_FRAME)
    out.floor = min(out.values(), default=0)
    out.containers = max(items, MAX_ITEMS) + 64
    return out


def _peek_tag(body: bytes) -> str | None:
    """The tag a frame body starts with, read from its first bytes without decoding it
    (an array header, then a short string); None when it does not start so."""
    b = body[0]
    i = 1 if 0x91 <= b <= 0x9f else 3 if b == 0xdc else 5 if b == 0xdd else 0
    if not i or len(body) <= i or not 0xa0 <= body[i] <= 0xbf:
        return None
    end = i + 1 + body[i] - 0xa0
    if end > len(body):
        return None
    try:
        return body[i + 1:end].decode()
    except UnicodeDecodeError:
        return None


async def read_frame(reader: asyncio.StreamReader, max_frame: int = MAX_FRAME,
                     limits: dict[str, int] | None = None, cpu: list[float] | None = None
                     ) -> list[Any] | None:
    """Read one frame; ``None`` at a clean end of stream (between frames).

    With ``limits`` (tag: largest body, see :func:`caps`), the tag is read from the
    body's first bytes, and a tag not in ``limits`` or a body over its tag's limit is
    refused before anything is decoded (``max_frame``, the largest of the limits,
    bounds what is buffered). With ``cpu``, ``cpu[0]`` becomes the CPU seconds the
    body's decoding took (refused or not).

    Raises
    ------
    WireError
        The stream ended inside a frame (truncated), the length is 0 or above
        ``max_frame`` or its tag's limit (oversized), a tag not allowed here, or the
        body is not a tagged msgpack array.
    """
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise WireError("frame: truncated length prefix") from None
    (n,) = _LEN.unpack(head)
    if n == 0 or n > max_frame:
        raise WireError(f"frame: length {n} outside 1..{max_frame}")
    try:
        body = await reader.readexactly(n)
    except asyncio.IncompleteReadError as exc:
        raise WireError(f"frame: truncated ({len(exc.partial)} of {n} bytes)") from None
    if cpu is None:
        return _decode(body, n, limits)
    t = time.thread_time()
    try:
        return _decode(body, n, limits)
    finally:
        cpu[0] = time.thread_time() - t


def _decode(body: bytes, n: int, limits: dict[str, int] | None) -> list[Any]:
    if limits is None:
        return unpack(body)
    containers = limits.containers if type(limits) is Caps else 0
    if n <= (limits.floor if type(limits) is Caps else min(limits.values(), default=0)):
        obj = unpack(body, containers)      # within every tag's limit
        tag = obj[0]
    else:
        tag = _peek_tag(body)
        if tag is None:
            raise WireError("frame: not an array led by a short tag")
        obj = None
    if tag not in limits:
        raise WireError(f"frame: tag {tag[:40]!r} is not accepted here")
    if n > limits[tag]:
        raise WireError(f"{tag[:40]}: length {n} outside 1..{limits[tag]}")
    return obj if obj is not None else unpack(body, containers, tag)


# ---------------------------------------------------------------------------- fields
def _int(v: Any, what: str, lo: int = _I64[0], hi: int = _I64[1]) -> int:
    if type(v) is not int:
        raise WireError(f"{what}: expected an int, got {type(v).__name__}")
    if not lo <= v <= hi:
        raise WireError(f"{what}: {v} outside {lo}..{hi}")
    return v


def _bool(v: Any, what: str) -> bool:
    if type(v) is not bool:
        raise WireError(f"{what}: expected a bool, got {type(v).__name__}")
    return v


def _str(v: Any, what: str, limit: int = _MAX_TEXT) -> str:
    if type(v) is not str:
        raise WireError(f"{what}: expected a string, got {type(v).__name__}")
    if len(v) > limit:
        raise WireError(f"{what}: longer than {limit} characters")
    return v


def _list(v: Any, what: str) -> list[Any]:
    if type(v) is not list:
        raise WireError(f"{what}: expected an array, got {type(v).__name__}")
    return v


def _key(v: Any, what: str) -> str:
    if type(v) is not str:
        raise WireError(f"{what}: a key must be a string, got {type(v).__name__}")
    if len(v) > _MAX_KEY:
        raise WireError(f"{what}: key longer than {_MAX_KEY} characters")
    return v


def _count(v: list[Any], what: str, kind: str) -> None:
    if len(v) > MAX_ITEMS:
        raise WireError(f"{what}: {len(v)} {kind}, at most {MAX_ITEMS} in one frame")


def _entries(v: Any, what: str) -> list[tuple[str, bytes, int]]:
    """``[key, value]`` or ``[key, value, update time]`` entries, as (key, value, time)
    triples (time 0 where none was sent)."""
    _count(_list(v, what), what, "entries")
    # checked a whole list at a time (the per-entry loop below only names a failure)
    lens = set(map(len, v)) if set(map(type, v)) <= {list} else {0}
    if lens <= {2, 3}:
        keys, vals = [e[0] for e in v], [e[1] for e in v]
        if (set(map(type, keys)) <= {str} and set(map(type, vals)) <= {bytes}
                and max(map(len, keys), default=0) <= _MAX_KEY):
            if lens <= {2}:
                return [(k, b, 0) for k, b in zip(keys, vals)]
            times = [e[2] if len(e) == 3 else 0 for e in v]
            if set(map(type, times)) <= {int} and all(0 <= t < _TIME_END for t in times):
                return list(zip(keys, vals, times))
    for i, e in enumerate(v):
        if type(e) is not list or len(e) not in (2, 3):
            raise WireError(f"{what}[{i}]: expected [key, value] or [key, value, time]")
        if type(e[1]) is not bytes:
            raise WireError(f"{what}[{i}]: a value must be bytes, got {type(e[1]).__name__}")
        _key(e[0], f"{what}[{i}]")
        if len(e) == 3:
            _int(e[2], f"{what}[{i}] time", 0, _TIME_END - 1)
    raise AssertionError("unreachable: a list that failed its check passed every entry's")


def _keys(v: Any, what: str) -> list[str]:
    _count(_list(v, what), what, "keys")
    if set(map(type, v)) <= {str} and max(map(len, v), default=0) <= _MAX_KEY:
        return cast("list[str]", v)
    for i, k in enumerate(v):
        _key(k, f"{what}[{i}]")
    raise AssertionError("unreachable: a list that failed its check passed every key's")


def _members(v: Any, what: str) -> list[tuple[int, str, int]]:
    _count(_list(v, what), what, "members")
    if v and set(map(type, v)) == {list} and set(map(len, v)) == {3}:
        ids, hosts, ports = [e[0] for e in v], [e[1] for e in v], [e[2] for e in v]
        if (set(map(type, ids)) == {int} and set(map(type, hosts)) == {str}
                and set(map(type, ports)) == {int} and 0 <= min(ids) and max(ids) <= 2**31 - 2
                and 0 <= min(ports) and max(ports) <= 65535 and max(map(len, hosts)) <= 255):
            if len(set(ids)) != len(ids):
                raise WireError(f"{what}: a member id repeats")
            return list(zip(ids, hosts, ports))
    out = []
    for i, e in enumerate(v):
        if type(e) is not list or len(e) != 3:
            raise WireError(f"{what}[{i}]: expected [member id, host, port]")
        out.append((_int(e[0], f"{what}[{i}] id", 0, 2**31 - 2),
                    _str(e[1], f"{what}[{i}] host", 255),
                    _int(e[2], f"{what}[{i}] port", 0, 65535)))
    if len({m for m, _, _ in out}) != len(out):
        raise WireError(f"{what}: a member id repeats")
    return out


def _any(v: Any, what: str) -> Any:
    return v


def _b32(v: Any, what: str) -> bytes:
    if type(v) is not bytes or len(v) != 32:
        raise WireError(f"{what}: expected 32 bytes, got "
                        f"{len(v) if type(v) is bytes else type(v).__name__}")
    return v


_FIELD: dict[str, Callable[[Any, str], Any]] = {
    "int": _int, "bool": _bool, "str": _str, "entries": _entries, "keys": _keys,
    "members": _members, "any": _any, "b32": _b32,
    "name": lambda v, w: _str(v, w, 255),
    "id": lambda v, w: _int(v, w, 0, 2**31 - 2),
    "id?": lambda v, w: _int(v, w, -1, 2**31 - 2),
    "partition": lambda v, w: _int(v, w, 0, 10_000_000),
    "term": lambda v, w: _int(v, w, 0, _I64[1]),
}

#: Every frame tag and its fields (after the tag). The handshake (every connection, first,
#: :mod:`hzfast.node.auth`): ``auth`` (cluster name, role "peer"/"client", member id or
#: -1, nonce), ``challenge`` (nonce, proof), ``proof`` (proof). Peers:
#: ``msg`` (a protocol message, :func:`encode_message`, and the sender's term), ``hb``
#: (member id, member-list version), ``members`` (version, next id, [[id, host, port], ...], oldest first),
#: ``chunk`` (effect id, mode "stage"/"merge", migration id, partition, entries, seq, last),
#: ``chunk_ack`` (effect id, ok), ``backup`` (request id, partition, the owner's partition
#: version, entries), ``backup_ack`` (request id, ok). Clients: ``join`` (request id, host,
#: port, config), ``put``
#: (request id, partition, entries), ``merge`` (the same, written only where the owner lacks
#: the key: a removed member's data, docs/node.md §1), ``merge_latest`` (the same, written
#: also where the owner's entry has an older update time), ``get`` (request id, partition,
#: keys), ``locate`` and
#: ``status`` (request id). Answers: ``ok`` (request id, payload) and ``error``
#: (request id, code, message, detail).
FRAMES: dict[str, tuple[str, ...]] = {
    "auth": ("name", "str", "id?", "b32"),
    "challenge": ("b32", "b32"),
    "proof": ("b32",),
    "msg": ("any", "term"),
    "hb": ("id", "int"),
    "members": ("int", "int", "members"),
    "chunk": ("int", "str", "int", "int", "partition", "entries", "int", "bool"),
    "chunk_ack": ("int", "bool"),
    "backup": ("int", "partition", "int", "entries"),
    "backup_ack": ("int", "bool"),
    "join": ("int", "str", "int", "any"),
    "put": ("int", "partition", "entries"),
    "merge": ("int", "partition", "entries"),
    "merge_latest": ("int", "partition", "entries"),
    "get": ("int", "partition", "keys"),
    "locate": ("int",),
    "status": ("int",),
    "ok": ("int", "any"),
    "error": ("int", "str", "str", "any"),
}


def parse(obj: list[Any]) -> tuple[Any, ...]:
    """Check one unpacked frame against :data:`FRAMES`; return ``(tag, *fields)``.

    Raises
    ------
    WireError
        An unknown tag, a wrong field count, or a field of the wrong type or range.
    """
    tag = obj[0]
    kinds = FRAMES.get(tag)
    if kinds is None:
        raise WireError(f"frame: unknown tag {tag[:40]!r}")
    if len(obj) != len(kinds) + 1:
        raise WireError(f"{tag}: expected {len(kinds)} fields, got {len(obj) - 1}")
    return (tag, *(_FIELD[k](v, f"{tag}.{i}") for i, (k, v) in enumerate(zip(kinds, obj[1:]))))


# ---------------------------------------------------------------------------- messages
#: Each protocol message's fields, in dataclass order after ``sender``, and their kinds.
SCHEMA: dict[type[msg.Message], tuple[tuple[str, str], ...]] = {
    msg.MigrationRequest: (("migration", "mig"), ("completed", "migs")),
    msg.MigrationTransfer: (("migration", "mig"), ("completed", "migs")),
    msg.MigrationTransferAck: (("migration", "mig"), ("ok", "bool")),
    msg.MigrationResult: (("migration", "mig"), ("ok", "bool"), ("reason", "str")),
    msg.MigrationCommit: (("migration", "mig"),),
    msg.MigrationCommitResponse: (("migration", "mig"), ("ok", "bool")),
    msg.PublishCompletedMigrations: (("completed", "migs"),),
    msg.PublishCompletedAck: (("ids", "ids"), ("ok", "bool")),
    msg.PartitionTableUpdate: (("replicas", "table"), ("versions", "versions"),
                               ("completed", "migs")),
    msg.PartitionTableAck: (("ok", "bool"), ("diverged", "ints")),
    msg.PartitionStateCheck: (("stamp", "int"),),
    msg.PartitionStateCheckReply: (("ok", "bool"),),
    msg.FetchPartitionState: (),
    msg.PartitionStateReply: (("initialized", "bool"), ("replicas", "table?"),
                              ("versions", "versions?"), ("completed", "migs"),
                              ("active", "migs")),
    msg.PromotionCommit: (("replicas", "table"), ("versions", "versions"),
                          ("promotions", "migs"), ("destination", "int"), ("batch", "int"),
                          ("completed", "migs")),
    msg.PromotionCommitResponse: (("batch", "int"), ("ok", "bool")),
    msg.ReplicaSyncRequest: (("partition", "int"),),
    # membership (docs/design.md §13): list keys, member lists, member ids
    mb.Heartbeat: (("key", "key"), ("promised", "key"), ("sent_at", "int"), ("echo", "int")),
    mb.Claim: (("base", "key"), ("term", "int"), ("members", "mids")),
    mb.ClaimReply: (("term", "int"), ("ok", "bool"), ("accepted", "mlist?")),
    mb.ListProposal: (("base", "key"), ("lst", "mlist"), ("recovered", "bool")),
    mb.ListAccept: (("key", "key"), ("ok", "bool")),
    mb.ListCommit: (("lst", "mlist"),),
    mb.ListRequest: (),
    mb.JoinRequest: (("joiner", "mid"),),
    mb.MergeProbe: (("lst", "mlist"),),
}
_BY_NAME = {t.__name__: t for t in SCHEMA}
#: the most members a membership message lists (a ``members`` frame's bound)
_MAX_MEMBERS = 8192
_MIG_INTS = 12                     # id (2), partition, 6 decision fields, master, initial, final


def _enc_mig(x: MigrationInfo) -> list[Any]:
    return [x.id[0], x.id[1], x.partition, x.source, x.source_current_index,
            x.source_new_index, x.destination, x.destination_current_index,
            x.destination_new_index, x.master, x.initial, x.final, int(x.status), x.promotion]


_STATUS = tuple(MigrationStatus(i) for i in range(3))


def _dec_mig(v: Any, what: str) -> MigrationInfo:
    if type(v) is not list or len(v) != _MIG_INTS + 2:
        raise WireError(f"{what}: expected a migration of {_MIG_INTS + 2} fields")
    n = v[:_MIG_INTS]
    s, promotion = v[_MIG_INTS], v[_MIG_INTS + 1]
    # the usual case checked in one go; a failure is then named field by field
    if not (set(map(type, n)) == {int} and -(2**31) <= min(n) and max(n) <= 2**31 - 1
            and type(s) is int and 0 <= s <= 2 and type(promotion) is bool):
        for i in range(_MIG_INTS):
            _int(v[i], f"{what}[{i}]", -(2**31), 2**31 - 1)
        _int(s, f"{what}.status", 0, 2)
        _bool(promotion, f"{what}.promotion")
    return MigrationInfo((n[0], n[1]), n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9], n[10],
                         n[11], status=_STATUS[s], promotion=promotion)


def _enc(kind: str, v: Any) -> Any:
    if kind == "mig":
        return _enc_mig(v)
    if kind == "migs":
        return [_enc_mig(x) for x in v]
    if kind == "ids":
        return [list(i) for i in v]
    if kind == "ints":
        return list(v)
    if kind.startswith(("table", "versions")):
        if v is None:
            return None
        return np.ascontiguousarray(v, dtype="<i4").tobytes()
    if kind in ("key", "mids"):
        return list(v)
    if kind.startswith("mlist"):
        return None if v is None else [v.term, v.version, list(v.members)]
    return v


def _dec_mids(v: Any, what: str) -> tuple[int, ...]:
    ids = _list(v, what)
    if not 0 < len(ids) <= _MAX_MEMBERS:
        raise WireError(f"{what}: {len(ids)} members, expected 1..{_MAX_MEMBERS}")
    if not (set(map(type, ids)) == {int} and min(ids) >= 0 and max(ids) <= 2**31 - 2):
        for i, m in enumerate(ids):
            _int(m, f"{what}[{i}]", 0, 2**31 - 2)
    if len(set(ids)) != len(ids):
        raise WireError(f"{what}: a member id repeats")
    return tuple(ids)


def _dec_key(v: Any, what: str) -> tuple[int, int]:
    if type(v) is not list or len(v) != 2:
        raise WireError(f"{what}: expected a [term, version] pair")
    return (_int(v[0], what, 0, 2**62), _int(v[1], what, 0, 2**62))


def _dec_mlist(v: Any, what: str) -> mb.MemberList:
    if type(v) is not list or len(v) != 3:
        raise WireError(f"{what}: expected [term, version, [member ids]]")
    return mb.MemberList(_int(v[0], f"{what}.term", 0, 2**62),
                         _int(v[1], f"{what}.version", 0, 2**62), _dec_mids(v[2], what))


def _array(v: Any, what: str, shape: tuple[int, ...]) -> NDArray[np.int32]:
    if type(v) is not bytes:
        raise WireError(f"{what}: expected bytes, got {type(v).__name__}")
    if len(v) != 4 * int(np.prod(shape)):
        raise WireError(f"{what}: {len(v)} bytes, expected {4 * int(np.prod(shape))} "
                        f"for shape {shape}")
    return np.frombuffer(v, dtype="<i4").astype(np.int32).reshape(shape)


def encode_message(m: msg.Message) -> list[Any]:
    """A protocol message as a msgpack-ready array: ``[type name, sender, *fields]``."""
    fields = SCHEMA.get(type(m))
    if fields is None:
        raise TypeError(f"not a hzfast.protocol message: {type(m).__name__}")
    return [type(m).__name__, m.sender, *(_enc(k, getattr(m, f)) for f, k in fields)]


def decode_message(v: Any, partition_count: int, replica_count: int) -> msg.Message:
    """The protocol message an ``msg`` frame carries, checked for the cluster's shape.

    Parameters
    ----------
    v : object
        The frame's field as unpacked.
    partition_count, replica_count : int
        The table shape arrays must have.

    Raises
    ------
    WireError
        Not a known message, a wrong field count, type or range, or an array of the wrong
        size.
    """
    if type(v) is not list or len(v) < 2 or type(v[0]) is not str:
        raise WireError("msg: expected [message type, sender, fields...]")
    t = _BY_NAME.get(v[0])
    if t is None:
        raise WireError(f"msg: unknown message type {v[0][:40]!r}")
    fields = SCHEMA[t]
    if len(v) != len(fields) + 2:
        raise WireError(f"msg {t.__name__}: expected {len(fields)} fields, got {len(v) - 2}")
    sender = _int(v[1], f"{t.__name__}.sender", 0, 2**31 - 2)
    migs_left = 4 * partition_count * replica_count + 256   # (a frame's size allows as many)
    out: list[Any] = []
    for (f, k), x in zip(fields, v[2:]):
        what = f"{t.__name__}.{f}"
        if k.endswith("?") and x is None:
            out.append(None)
            continue
        k = k.rstrip("?")
        if k == "mig":
            out.append(_dec_mig(x, what))
        elif k == "migs":
            migs_left -= len(_list(x, what))
            if migs_left < 0:
                raise WireError(f"{what}: more than {4 * partition_count * replica_count + 256} "
                                f"migrations in one message")
            out.append(tuple(_dec_mig(y, f"{what}[{i}]") for i, y in enumerate(x)))
        elif k == "ids":
            ids = []
            for i, y in enumerate(_list(x, what)):
                if type(y) is not list or len(y) != 2:
                    raise WireError(f"{what}[{i}]: expected a migration id pair")
                ids.append((_int(y[0], what, -(2**31), 2**31 - 1),
                            _int(y[1], what, -(2**31), 2**31 - 1)))
            out.append(tuple(ids))
        elif k == "ints":             # partition ids
            x = _list(x, what)
            if len(x) > partition_count:
                raise WireError(f"{what}: {len(x)} partitions, at most {partition_count}")
            if not (set(map(type, x)) <= {int} and min(x, default=0) >= _I64[0]
                    and max(x, default=0) <= _I64[1]):
                for i, y in enumerate(x):
                    _int(y, f"{what}[{i}]")
            out.append(tuple(x))
        elif k == "table":
            out.append(_array(x, what, (partition_count, replica_count)))
        elif k == "versions":
            out.append(_array(x, what, (partition_count,)))
        elif k == "bool":
            out.append(_bool(x, what))
        elif k == "str":
            out.append(_str(x, what))
        elif k == "key":
            out.append(_dec_key(x, what))
        elif k == "mids":
            out.append(_dec_mids(x, what))
        elif k == "mlist":
            out.append(_dec_mlist(x, what))
        elif k == "mid":
            out.append(_int(x, what, 0, 2**31 - 2))
        else:
            out.append(_int(x, what))
    if t is msg.PartitionStateReply and out[0] and (out[1] is None or out[2] is None):
        raise WireError("msg PartitionStateReply: an initialized state needs its table")
    m: msg.Message = t(sender, *out)
    return m
