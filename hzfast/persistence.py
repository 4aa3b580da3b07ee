"""Persisted partition tables: Hazelcast's hot-restart layouts, JSON and ``.npz`` files.

Hazelcast persists each member's partition table so that a restarting cluster can decide
who restarts with its data. Two layouts exist (docs/persistence.md gives every field's
width and byte order):

- ``"hzlegacy"`` (before 4.1): the table version, the partition count, the replica
  identities (address + UUID), then each partition's replica indexes;
- ``"hz41"`` (4.1 and later): the partition count, the replica identities, then per
  partition its version followed by its replica indexes.

This module reads and writes both, plus hzfast's own ``"npz"`` (:meth:`PartitionTable.save`)
and ``"json"`` files, detecting which one a file holds from its content (never its name).
It also implements the two restore-time rules of Hazelcast 4.1's per-partition versions:

- :func:`rebind_addresses`: a member restarts with a new address; its replicas are rewritten
  and only the partitions it holds get a higher version (the legacy layout raised its single
  table version by the number of rewritten slots);
- :func:`restart_decision`: the partial-restart rule: members whose tables are equal (equal
  stamps) form a group, groups are ordered by the sum of their per-partition versions (a
  stamp only tells equality, not order), and the policy picks the group that restarts.

Everything validates sizes against the bytes actually present before allocating, and a
malformed input raises one ``ValueError`` that says what is wrong and where.
"""
from __future__ import annotations

import io
import json
import os
import struct
import uuid as _uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from hzfast._check import MAX_REPLICA_COUNT, check_int
from hzfast.members import Members
from hzfast.table import PartitionTable

__all__ = ["BINARY_LAYOUTS", "FORMATS", "POLICIES", "RestartDecision", "detect_format",
           "from_bytes", "members_from_records", "read_table", "rebind_addresses",
           "restart_decision", "table_from_json", "table_from_npz", "table_sum", "table_to_json", "to_bytes",
           "write_table"]

#: The binary layouts of the seed document: Hazelcast 4.1's and the one before it.
BINARY_LAYOUTS = ("hz41", "hzlegacy")
#: Every file format :func:`read_table` recognises and :func:`write_table` writes.
FORMATS = ("npz", "json", "hz41", "hzlegacy")
#: Partial-restart policies (Hazelcast's PARTIAL_RECOVERY_MOST_RECENT / _MOST_COMPLETE).
POLICIES = ("most-recent", "most-complete")

Format = Literal["npz", "json", "hz41", "hzlegacy"]

_SLOTS = MAX_REPLICA_COUNT          # replica indexes written per partition (Hazelcast: 7)
_INT32_MAX = 2**31 - 1
_MEMBER_MIN_BYTES = 2 + 4 + 16      # empty host, port, UUID
_JSON_FORMAT = "hzfast.PartitionTable/1"
_ROW41 = np.dtype([("version", ">i4"), ("slots", ">i4", (_SLOTS,))])


# ----------------------------------------------------------------------------- binary
def _split_address(address: str, index: int) -> tuple[bytes, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"member {index}: address {address!r} is not 'host:port' with a "
                         f"port in 0..65535 (the persisted layouts store host and port)")
    raw = host.encode("utf-8")
    if len(raw) > 65535:
        raise ValueError(f"member {index}: host of {len(raw)} bytes (at most 65535)")
    return raw, int(port)


def _members_bytes(members: Members) -> bytes:
    out = [struct.pack(">i", len(members))]
    for i, (address, uid) in enumerate(zip(members.addresses, members.uuids)):
        host, port = _split_address(address, i)
        try:
            value = _uuid.UUID(uid).int
        except ValueError:
            raise ValueError(f"member {i}: uuid {uid!r} is not a UUID (the persisted layouts "
                             f"store it as two 64-bit halves)") from None
        out.append(struct.pack(">H", len(host)) + host
                   + struct.pack(">iQQ", port, value >> 64, value & (2**64 - 1)))
    return b"".join(out)


def _slots(table: PartitionTable) -> NDArray[np.int32]:
    out = np.full((table.partition_count, _SLOTS), -1, dtype=np.int32)
    out[:, :table.replica_count] = table.replicas
    return out


def to_bytes(table: PartitionTable, layout: str = "hz41", *,
             table_version: int | None = None) -> bytes:
    """A table in one of Hazelcast's persisted layouts (docs/persistence.md).

    Parameters
    ----------
    table : PartitionTable
        The table. Every member's address must be ``host:port`` and its uuid a UUID.
    layout : {"hz41", "hzlegacy"}, default "hz41"
        ``"hz41"`` writes each partition's version; ``"hzlegacy"`` writes one table version.
    table_version : int, optional
        The legacy layout's table version. Default: the largest partition version (so a
        table read from a legacy file, whose partitions all carry its version, is written
        back byte for byte). Not allowed with ``"hz41"``.

    Returns
    -------
    bytes
        Big-endian, exactly as :func:`from_bytes` reads it back. Seven replica indexes are
        written per partition (Hazelcast's ``MAX_REPLICA_COUNT``), ``-1`` for an empty slot.

    Raises
    ------
    TypeError
        ``table`` is not a PartitionTable.
    ValueError
        Unknown layout, an address without a port, a uuid that is not a UUID,
        ``table_version`` outside 0..2**31-1 or given with ``"hz41"``.

    Examples
    --------
    >>> t = PartitionTable.round_robin(3, 2)
    >>> len(to_bytes(t, "hz41")), len(to_bytes(t, "hzlegacy"))
    (166, 158)
    """
    if not isinstance(table, PartitionTable):
        raise TypeError(f"table must be a PartitionTable, got {type(table).__name__}")
    if layout not in BINARY_LAYOUTS:
        raise ValueError(f"layout must be one of {BINARY_LAYOUTS}, got {layout!r}")
    members = _members_bytes(table.members)
    slots = _slots(table)
    P = table.partition_count
    if layout == "hz41":
        if table_version is not None:
            raise ValueError("table_version applies to the 'hzlegacy' layout only")
        rows = np.empty(P, dtype=_ROW41)
        rows["version"] = table.versions
        rows["slots"] = slots
        return struct.pack(">i", P) + members + rows.tobytes()
    version = int(table.versions.max()) if table_version is None else check_int(
        table_version, "table_version", minimum=0, maximum=_INT32_MAX)
    if version < 0:
        raise ValueError(f"table_version must be >= 0, got {version} (the largest "
                         f"partition version)")
    return struct.pack(">ii", version, P) + members + slots.astype(">i4").tobytes()


class _Reader:
    """Reads big-endian fields from ``data``; every shortfall is a ValueError naming what
    was being read and at which offset."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int, what: str) -> bytes:
        if n > self.left():
            raise ValueError(f"truncated: {what} needs {n} bytes at offset {self.pos}, "
                             f"{self.left()} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int32(self, what: str) -> int:
        value: int = struct.unpack(">i", self.take(4, what))[0]
        return value


def _read_members(r: _Reader) -> Members:
    n = r.int32("the replica count")
    if n < 0:
        raise ValueError(f"replica count {n} is negative")
    if n * _MEMBER_MIN_BYTES > r.left():
        raise ValueError(f"truncated: {n:,} replicas need at least {n * _MEMBER_MIN_BYTES:,} "
                         f"bytes, {r.left():,} left")
    addresses, uuids = [], []
    for i in range(n):
        (length,) = struct.unpack(">H", r.take(2, f"replica {i}'s host length"))
        raw = r.take(length, f"replica {i}'s host")
        try:
            host = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"replica {i}'s host is not UTF-8") from None
        port, hi, lo = struct.unpack(">iQQ", r.take(20, f"replica {i}'s port and uuid"))
        if not 0 <= port <= 65535:
            raise ValueError(f"replica {i}'s port {port} is outside 0..65535")
        addresses.append(f"{host}:{port}")
        uuids.append(str(_uuid.UUID(int=(hi << 64) | lo)))
    try:
        return Members(addresses, uuids=uuids)
    except ValueError as exc:
        raise ValueError(f"replicas: {exc}") from None


def _rows(r: _Reader, P: int, row_bytes: int, layout: str) -> bytes:
    need = P * row_bytes
    if need > r.left():
        raise ValueError(f"truncated: {P:,} partitions need {need:,} bytes of rows, "
                         f"{r.left():,} left")
    if need < r.left():
        raise ValueError(f"{r.left() - need:,} trailing bytes after the {layout} rows of "
                         f"{P:,} partitions")
    return r.take(need, "the partition rows")


def _trim(slots: NDArray[np.int32], replica_count: int | None) -> NDArray[np.int32]:
    if replica_count is None:
        used = np.flatnonzero((slots >= 0).any(axis=0))
        width = int(used[-1]) + 1 if used.size else 1
    else:
        width = check_int(replica_count, "replica_count", minimum=1, maximum=_SLOTS)
        if (slots[:, width:] >= 0).any():
            raise ValueError(f"replica_count={width} but replica index "
                             f"{int(np.flatnonzero((slots >= 0).any(axis=0))[-1])} is used")
    return np.ascontiguousarray(slots[:, :width])


def _parse(data: bytes, layout: str, replica_count: int | None) -> PartitionTable:
    r = _Reader(data)
    legacy_version = r.int32("the table version") if layout == "hzlegacy" else None
    if legacy_version is not None and legacy_version < 0:
        raise ValueError(f"table version {legacy_version} is negative")
    P = r.int32("the partition count")
    if P < 1:
        raise ValueError(f"partition count {P} (must be >= 1)")
    row_bytes = 4 * _SLOTS + (4 if layout == "hz41" else 0)
    if P * row_bytes > r.left():   # before allocating anything of size P
        raise ValueError(f"truncated: {P:,} partitions need at least {P * row_bytes:,} "
                         f"bytes, {r.left():,} left")
    members = _read_members(r)
    raw = _rows(r, P, row_bytes, layout)
    if layout == "hz41":
        rows = np.frombuffer(raw, dtype=_ROW41)
        versions = rows["version"].astype(np.int32)
        slots = rows["slots"].astype(np.int32)
    else:
        assert legacy_version is not None
        versions = np.full(P, legacy_version, dtype=np.int32)
        slots = np.frombuffer(raw, dtype=">i4").reshape(P, _SLOTS).astype(np.int32)
    bad = (slots < -1) | (slots >= len(members))
    if bad.any():
        p, i = (int(x[0]) for x in np.nonzero(bad))
        raise ValueError(f"partition {p}, replica {i}: index {int(slots[p, i])} is not one "
                         f"of the {len(members)} replicas listed")
    return PartitionTable(_trim(slots, replica_count), versions, members)


def from_bytes(data: bytes, layout: str | None = None, *,
               replica_count: int | None = None) -> PartitionTable:
    """Read a table written in one of the persisted layouts.

    Parameters
    ----------
    data : bytes
        The file's content.
    layout : {"hz41", "hzlegacy"}, optional
        Default: detected, the one layout under which ``data`` parses exactly (every byte
        accounted for).
    replica_count : int, optional
        Columns of the result (1..7). Default: up to the last replica index any partition
        uses (at least 1), so a ``(P, R)`` table comes back as ``(P, R)`` whenever its last
        column holds a member.

    Returns
    -------
    PartitionTable
        The legacy layout's table version becomes every partition's version (what Hazelcast
        does when a cluster is upgraded to 4.1). Members get the persisted address and uuid;
        zones, lite flags and groups are not persisted (defaults).

    Raises
    ------
    ValueError
        Truncated or trailing bytes, a negative count, a replica index outside the listed
        replicas, a member twice in a row, duplicate addresses or uuids, a layout that does
        not fit (or fits both ways), an unknown layout name.

    Examples
    --------
    >>> t = PartitionTable.round_robin(5, 3).replace(versions=[1, 2, 3, 4, 5])
    >>> from_bytes(to_bytes(t, "hz41")) == t
    True
    >>> from_bytes(to_bytes(t, "hzlegacy")).versions.tolist()
    [5, 5, 5, 5, 5]
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    data = bytes(data)
    if layout is not None:
        if layout not in BINARY_LAYOUTS:
            raise ValueError(f"layout must be one of {BINARY_LAYOUTS}, got {layout!r}")
        return _parse(data, layout, replica_count)
    found: dict[str, PartitionTable] = {}
    problems: dict[str, str] = {}
    for name in BINARY_LAYOUTS:
        try:
            found[name] = _parse(data, name, replica_count)
        except ValueError as exc:
            problems[name] = str(exc)
    if len(found) == 1:
        return next(iter(found.values()))
    if found:
        raise ValueError("the bytes parse both as 'hz41' and as 'hzlegacy'; give the layout")
    return _raise_unreadable(problems)


def _raise_unreadable(problems: Mapping[str, str]) -> PartitionTable:
    detail = "; ".join(f"as {k}: {v}" for k, v in problems.items())
    raise ValueError(f"not a persisted partition table ({detail})")


# ----------------------------------------------------------------------------- files
def detect_format(data: bytes) -> Format:
    """Which of :data:`FORMATS` ``data`` holds, from its content.

    A zip archive (``PK\\x03\\x04``) is ``"npz"``; text starting with ``{`` is ``"json"``;
    anything else is tried as the two binary layouts (see :func:`from_bytes`).

    Raises
    ------
    ValueError
        Empty data, or bytes that are none of the formats (the message says why for each).

    Examples
    --------
    >>> detect_format(to_bytes(PartitionTable.round_robin(4, 2), "hzlegacy"))
    'hzlegacy'
    >>> detect_format(b'  {"replicas": [[0]]}')
    'json'
    """
    if not data:
        raise ValueError("empty file")
    if data[:4] == b"PK\x03\x04":
        return "npz"
    if data.lstrip()[:1] == b"{":
        return "json"
    ok: list[Format] = []
    problems = {}
    for name in ("hz41", "hzlegacy"):
        try:
            _parse(bytes(data), name, None)
            ok.append("hz41" if name == "hz41" else "hzlegacy")
        except ValueError as exc:
            problems[name] = str(exc)
    if len(ok) == 1:
        return ok[0]
    if ok:
        raise ValueError("the bytes parse both as 'hz41' and as 'hzlegacy'")
    _raise_unreadable({"npz": "no zip header", "json": "does not start with '{'", **problems})
    raise AssertionError("unreachable")   # pragma: no cover


def table_to_json(table: PartitionTable) -> str:
    """hzfast's JSON form of a table: ``format``, ``replicas``, ``versions``, ``members``."""
    return json.dumps({"format": _JSON_FORMAT, "replicas": table.replicas.tolist(),
                       "versions": table.versions.tolist(),
                       "members": table.members.to_dict()}, separators=(",", ":"))


def _members_from(doc: object, count: int) -> Members:
    if doc is None:
        return Members.from_count(count)
    if isinstance(doc, dict):
        return Members.from_dict(doc)
    if isinstance(doc, list):
        return members_from_records(doc)
    raise ValueError(f"'members' must be an object or a list of members, got "
                     f"{type(doc).__name__}")


def members_from_records(records: Sequence[Any], first_index: int = 0) -> Members:
    """A registry from a list of member records (dicts with ``address`` and optionally
    ``uuid``, ``host``, ``zone``, ``lite``, ``group``), as in a members file.

    Missing fields take :class:`Members`' defaults for member ``first_index + i`` (uuid
    ``UUID(int=first_index + i + 1)``, group ``member-{first_index + i}``), so members that
    join an existing registry get identities of their own.

    Raises
    ------
    TypeError
        A record that is not a dict, a lite flag that is not a boolean.
    ValueError
        An unknown or missing field, a uuid that is not a UUID, duplicate addresses or
        uuids.
    """
    fields = ("uuid", "address", "host", "zone", "lite", "group")
    cols: dict[str, list[Any]] = {f: [] for f in fields}
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise TypeError(f"member {i} is not an object, got {type(rec).__name__}")
        unknown = sorted(set(rec) - set(fields))
        if unknown:
            raise ValueError(f"member {i}: unknown field(s) {unknown} (fields: "
                             f"{', '.join(fields)})")
        if not rec.get("address"):
            raise ValueError(f"member {i}: no address")
        lite = rec.get("lite", False)
        if isinstance(lite, str):
            if lite.strip().lower() not in ("", "true", "false", "0", "1", "yes", "no"):
                raise ValueError(f"member {i}: lite must be true or false, got {lite!r}")
            lite = lite.strip().lower() in ("true", "1", "yes")
        if not isinstance(lite, bool):
            raise TypeError(f"member {i}: lite must be true or false, got {lite!r}")
        cols["lite"].append(lite)
        for f in ("uuid", "address", "host", "zone", "group"):
            cols[f].append(rec.get(f))
    n = len(cols["address"])
    addresses = [str(a) for a in cols["address"]]

    def col(name: str, default: Any) -> list[Any]:
        return [default(i) if v in (None, "") else str(v) for i, v in enumerate(cols[name])]

    uuids = col("uuid", lambda i: str(_uuid.UUID(int=first_index + i + 1)))
    for i, u in enumerate(uuids):
        try:
            _uuid.UUID(u)
        except ValueError:
            raise ValueError(f"member {i}: uuid {u!r} is not a UUID") from None
    return Members(addresses, uuids=uuids,
                   hosts=col("host", lambda i: addresses[i].rsplit(":", 1)[0]),
                   zones=col("zone", lambda i: ""), lite=cols["lite"][:n],
                   groups=col("group", lambda i: f"member-{first_index + i}"))


def table_from_json(text: str | bytes) -> PartitionTable:
    """Inverse of :func:`table_to_json` (``versions`` and ``members`` optional).

    Raises
    ------
    ValueError
        Not JSON, not an object, no ``replicas``, or a table the library rejects.
    """
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or "replicas" not in doc:
        raise ValueError("a JSON table is an object with 'replicas' (and optionally "
                         "'versions', 'members')")
    reps = doc["replicas"]
    if not isinstance(reps, list) or not reps or not all(
            isinstance(r, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                        for x in r) for r in reps):
        raise ValueError("'replicas' must be a non-empty list of rows of integers")
    widths = {len(r) for r in reps}
    if len(widths) != 1:
        raise ValueError(f"'replicas' rows have different lengths {sorted(widths)}")
    arr = np.array(reps, dtype=np.int64)
    if arr.min() < -1 or arr.max() > _INT32_MAX:
        raise ValueError("'replicas' holds a member index outside -1..2**31-1")
    versions = doc.get("versions")
    if versions is not None:
        if not isinstance(versions, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) and -2**31 <= v <= _INT32_MAX
                for v in versions):
            raise ValueError("'versions' must be a list of int32 values")
        versions = np.array(versions, dtype=np.int32)
    count = int(arr.max()) + 1 if arr.size else 0
    try:
        members = _members_from(doc.get("members"), count)
        return PartitionTable(np.ascontiguousarray(arr.astype(np.int32)), versions, members)
    except (TypeError, KeyError) as exc:
        raise ValueError(f"bad table: {exc}") from None


def table_from_npz(data: bytes) -> PartitionTable:
    """A table from the bytes of an ``.npz`` file written by :meth:`PartitionTable.save`
    (read by :meth:`PartitionTable.load`, which checks the archive).

    Raises
    ------
    ValueError
        A corrupt archive, missing or extra entries, wrong dtypes, an invalid table.
    """
    return PartitionTable.load(io.BytesIO(data))


def read_table(path: str | os.PathLike[str], *, max_bytes: int | None = None
               ) -> tuple[PartitionTable, Format]:
    """Read a table file of any of :data:`FORMATS`, detected from its content.

    Parameters
    ----------
    path : str or PathLike
        The file.
    max_bytes : int, optional
        Refuse files larger than this (checked before reading).

    Returns
    -------
    (PartitionTable, str)
        The table and the format it was read from.

    Raises
    ------
    OSError
        The file cannot be opened (missing, a directory, no permission).
    ValueError
        Too large, empty, corrupt or truncated, or a table the library rejects; the
        message names the file and says what is wrong.
    """
    size = os.stat(path).st_size
    where = os.fspath(path)
    if max_bytes is not None and size > max_bytes:
        raise ValueError(f"{where}: {size:,} bytes, larger than the {max_bytes:,} allowed")
    with open(path, "rb") as f:
        data = f.read()
    try:
        fmt = detect_format(data)
        if fmt == "npz":
            return table_from_npz(data), fmt
        if fmt == "json":
            return table_from_json(data), fmt
        return from_bytes(data, fmt), fmt
    except ValueError as exc:            # one error naming the file and what is wrong
        raise ValueError(f"{where}: {exc}") from exc


def write_table(path: str | os.PathLike[str], table: PartitionTable, fmt: str = "npz") -> None:
    """Write ``table`` to ``path`` in one of :data:`FORMATS` (the exact name, no suffix added).

    The file is written whole or not at all: the bytes are prepared first, then written to
    ``path``.

    Raises
    ------
    ValueError
        Unknown format, or a table the format cannot hold (see :func:`to_bytes`).
    OSError
        The file cannot be written.
    """
    if fmt == "npz":
        buf = io.BytesIO()
        table.save(buf)
        data = buf.getvalue()
    elif fmt == "json":
        data = table_to_json(table).encode()
    elif fmt in BINARY_LAYOUTS:
        data = to_bytes(table, fmt)
    else:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    with open(path, "wb") as f:
        f.write(data)


# ----------------------------------------------------------------------------- restore rules
def rebind_addresses(table: PartitionTable, addresses: Mapping[str, str] | Members, *,
                     legacy: bool = False) -> tuple[PartitionTable, NDArray[np.int64]]:
    """Restore a persisted table whose members restarted at other addresses.

    Each replica is identified by its uuid; a member whose address changed has it replaced
    in the registry, and every slot it holds counts as one replica update (Hazelcast replaces
    the replica as if the table were updated at runtime, +1 per slot). With per-partition
    versions (4.1) only the partitions holding a changed member get a higher version, by
    the number of their slots that changed; with the legacy single version (``legacy=True``)
    every partition's version rises by the total number of changed slots.

    Parameters
    ----------
    table : PartitionTable
        The persisted table.
    addresses : mapping of uuid -> new address, or Members
        The members' current addresses (a Members registry maps its uuids to its
        addresses). Uuids the table does not know are ignored.
    legacy : bool, default False
        Apply the legacy rule (one table version).

    Returns
    -------
    (PartitionTable, ndarray[int64] of shape (P,))
        The restored table and the per-partition count of rewritten slots.

    Raises
    ------
    ValueError
        Two members ending with one address, or a version past 2**31-1.

    Examples
    --------
    >>> t = PartitionTable.round_robin(4, 3, replica_count=1)       # owners 0, 1, 2, 0
    >>> new, changed = rebind_addresses(t, {t.members.uuids[1]: "10.0.0.9:5701"})
    >>> new.versions.tolist(), new.members.addresses[1]
    ([0, 1, 0, 0], '10.0.0.9:5701')
    """
    if not isinstance(table, PartitionTable):
        raise TypeError(f"table must be a PartitionTable, got {type(table).__name__}")
    new = dict(zip(addresses.uuids, addresses.addresses)) if isinstance(addresses, Members) \
        else dict(addresses)
    old = table.members
    changed = np.array([u in new and new[u] != a for u, a in zip(old.uuids, old.addresses)],
                       dtype=bool)
    addrs = [new[u] if c else a for u, a, c in zip(old.uuids, old.addresses, changed)]
    hosts = [a.rsplit(":", 1)[0] if c else h for a, h, c in zip(addrs, old.hosts, changed)]
    try:
        members = Members(addrs, uuids=old.uuids, hosts=hosts, zones=old.zones,
                          lite=list(old.lite), groups=old.groups)
    except ValueError as exc:
        raise ValueError(f"addresses: {exc}") from None
    reps = table.replicas
    hit = np.zeros(reps.shape, dtype=bool)
    if changed.any():
        hit = (reps >= 0) & changed[np.maximum(reps, 0)]
    per_partition = hit.sum(axis=1).astype(np.int64)
    bump = np.full(reps.shape[0], per_partition.sum()) if legacy else per_partition
    versions = table.versions.astype(np.int64) + bump
    if versions.size and versions.max() > _INT32_MAX:
        raise ValueError("a partition version would pass 2**31-1")
    return PartitionTable(reps, versions.astype(np.int32), members), per_partition


def table_sum(table: PartitionTable) -> int:
    """The sum of a table's per-partition versions: how partial restart orders tables."""
    return int(table.versions.astype(np.int64).sum())


@dataclass(frozen=True)
class RestartDecision:
    """Result of :func:`restart_decision` (positions refer to the tables given)."""

    policy: str
    groups: list[list[int]]   #: tables with equal stamps, in order of first appearance
    stamps: list[int]         #: the stamp of each group
    sums: list[int]           #: the per-partition version sum of each group
    chosen: int               #: the group that restarts
    restart: list[int]        #: the members (tables) that restart with their data
    excluded: list[int]       #: the members excluded (their data is deleted)


def restart_decision(tables: Sequence[PartitionTable], policy: str = "most-recent"
                     ) -> RestartDecision:
    """Hazelcast's partial-restart decision over the members' persisted tables.

    Tables with equal stamps form a group (a stamp tells equality only). ``"most-recent"``
    picks the group with the greatest sum of per-partition versions; ``"most-complete"``
    the largest group. Ties: most-recent prefers the larger group, most-complete the
    greater sum; then the group seen first.

    Parameters
    ----------
    tables : sequence of PartitionTable
        One persisted table per member, at least one.
    policy : {"most-recent", "most-complete"}, default "most-recent"

    Returns
    -------
    RestartDecision

    Raises
    ------
    ValueError
        No tables, or an unknown policy.

    Examples
    --------
    >>> a = PartitionTable.round_robin(4, 2)
    >>> b = a.replace(versions=[1, 1, 1, 1])
    >>> d = restart_decision([a, a, b], "most-recent")
    >>> d.restart, d.excluded, d.sums
    ([2], [0, 1], [0, 4])
    >>> restart_decision([a, a, b], "most-complete").restart
    [0, 1]
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if not tables:
        raise ValueError("restart_decision needs at least one table")
    by_stamp: dict[int, int] = {}
    groups: list[list[int]] = []
    sums: list[int] = []
    stamps: list[int] = []
    for i, t in enumerate(tables):
        if not isinstance(t, PartitionTable):
            raise TypeError(f"tables[{i}] must be a PartitionTable, got {type(t).__name__}")
        g = by_stamp.setdefault(t.stamp, len(groups))
        if g == len(groups):
            groups.append([])
            sums.append(table_sum(t))
            stamps.append(t.stamp)
        groups[g].append(i)

    def key(g: int) -> tuple[int, int, int]:
        size, total = len(groups[g]), sums[g]
        primary = (total, size) if policy == "most-recent" else (size, total)
        return (*primary, -g)

    chosen = max(range(len(groups)), key=key)
    restart = groups[chosen]
    excluded = [i for i in range(len(tables)) if i not in set(restart)]
    return RestartDecision(policy, groups, stamps, sums, chosen, list(restart), excluded)
