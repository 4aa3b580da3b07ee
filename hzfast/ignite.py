"""Apache Ignite compatibility: Java ``hashCode``, key -> partition, rendezvous affinity.

Bit-exact with Ignite 2.x ``RendezvousAffinityFunction`` (no backup filters) and the JDK's
``String``/``Integer``/``Long``/``UUID.hashCode``; checked against the vectors in
``tests/data/vectors/ignite.json``. Kernels live in :mod:`hzfast._ignite`; this module
validates every argument first.

Key types
---------
* ``str`` / Arrow ``string``/``large_string`` / numpy unicode: ``java.lang.String``
  (hashed over UTF-16 code units, decoded from UTF-8 inside the kernel: characters outside
  the BMP count as two surrogate units, exactly like Java).
* Python ``int`` that fits int32, numpy/Arrow ``int32``: ``java.lang.Integer``.
* numpy/Arrow ``int64`` (or ``key_type="long"``): ``java.lang.Long``.
* :class:`uuid.UUID` (or ``key_type="uuid"``): ``java.util.UUID`` (Python-speed path).

Also here: :class:`UpdateCounter` / :class:`VolatileUpdateCounter`, models of Ignite's
partition update counters (LWM, HWM, out-of-order gap items, finalisation), checked against
every ``PartitionUpdateCounterTest`` scenario in the vectors.
"""
from __future__ import annotations

import bisect
import struct
import uuid as _uuid
from collections.abc import Sequence

import numpy as np

from hzfast import _ignite
from hzfast._check import check_int
from hzfast._keys import check_key_type, is_scalar_key, normalize_keys

__all__ = [
    "DEFAULT_PARTITIONS", "MAX_PARTITIONS", "REPLICATED",
    "java_hash_code", "partition_id", "partition_ids", "node_weight", "assign",
    "default_node_ids", "consistent_id_hash",
    "UpdateCounter", "VolatileUpdateCounter", "UpdateCounterError",
]

#: Ignite's default partition count (RendezvousAffinityFunction.DFLT_PARTITION_COUNT).
DEFAULT_PARTITIONS = 1024
#: Ignite's maximum partition count (CacheConfiguration.MAX_PARTITIONS_COUNT).
MAX_PARTITIONS = 65000
#: ``backups`` value of a REPLICATED cache (Integer.MAX_VALUE): every node holds every
#: partition; primary first, then all other nodes in topology order.
REPLICATED = 2**31 - 1

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_KEY_TYPES = ("string", "int", "long", "uuid")
_MASK64 = (1 << 64) - 1


# --------------------------------------------------------------------------- helpers
def _check_key_type(key_type):
    return check_key_type(key_type, "key_type", _KEY_TYPES)


def _check_partitions(partitions, name: str = "partitions") -> int:
    return check_int(partitions, name, minimum=1, maximum=MAX_PARTITIONS)


def _to_int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= (1 << 31) else v


def _uuid_hash(u: _uuid.UUID) -> int:
    hilo = (u.int >> 64) ^ (u.int & _MASK64)
    return _to_int32((hilo >> 32) ^ hilo)


def _as_uuid(value, name: str) -> _uuid.UUID:
    if isinstance(value, _uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return _uuid.UUID(value)
        except ValueError:
            raise ValueError(f"{name} = {value!r} is not a valid UUID") from None
    if value is None:
        raise ValueError(f"{name} is None")
    raise TypeError(f"{name} must be a uuid.UUID or a UUID string, got {type(value).__name__}")


def _string_hash(s: str) -> int:
    data = np.frombuffer(s.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    out, _bad = _ignite.utf8_hashes(np.array([0, data.shape[0]], dtype=np.int64), data, 1, False)
    return int(out[0])


def _scalar_hash(key, key_type, name: str) -> int:
    """Java hashCode of one key (validated)."""
    if key is None:
        raise ValueError(f"{name} is None: null keys cannot be hashed")
    if isinstance(key, (bool, np.bool_)):
        raise TypeError(f"{name} is a bool: bools are not integer keys")
    if key_type == "uuid" or (key_type is None and isinstance(key, _uuid.UUID)):
        return _uuid_hash(_as_uuid(key, name))
    if isinstance(key, str):
        if key_type not in (None, "string"):
            raise TypeError(f"{name}: key_type={key_type!r} does not match a str key")
        return _string_hash(key)
    if isinstance(key, (int, np.integer)):
        if key_type == "string":
            raise TypeError(f"{name}: key_type='string' does not match an int key")
        v = int(key)
        kind = key_type
        if kind is None:
            kind = "long" if isinstance(key, np.int64) else "int"
        if kind == "int":
            if not _INT32_MIN <= v <= _INT32_MAX:
                raise ValueError(f"{name} = {v} does not fit a Java Integer (int32); "
                                 f"pass key_type='long' to hash it as a Long")
            return v
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise ValueError(f"{name} = {v} does not fit a Java Long (int64)")
        u = v & _MASK64
        return _to_int32(u ^ (u >> 32))
    raise TypeError(f"{name} must be a str, int or uuid.UUID, got {type(key).__name__}")


def _is_scalar(key) -> bool:
    return key is None or isinstance(key, _uuid.UUID) or is_scalar_key(key)


def _uuid_batch_hashes(keys, name: str) -> np.ndarray:
    if isinstance(keys, np.ndarray):
        keys = keys.tolist()
    elif hasattr(keys, "to_pylist"):  # pyarrow
        keys = keys.to_pylist()
    if not isinstance(keys, (list, tuple)):
        raise TypeError(f"{name} must be a list, tuple or array of UUIDs, "
                        f"got {type(keys).__name__}")
    out = np.empty(len(keys), dtype=np.int32)
    for i, k in enumerate(keys):
        out[i] = _uuid_hash(_as_uuid(k, f"{name}[{i}]"))
    return out


def _bulk(keys, key_type, partitions: int, reduce: bool, name: str = "keys") -> np.ndarray:
    """Hash (reduce=False) or map to partitions (reduce=True) a batch of keys."""
    if keys is None:
        raise ValueError(f"{name} is None")
    looks_uuid = (isinstance(keys, (list, tuple)) or (isinstance(keys, np.ndarray)
                                                       and keys.dtype == object and keys.ndim == 1))
    if key_type == "uuid" or (key_type is None and looks_uuid and len(keys)
                              and isinstance(keys[0], _uuid.UUID)):
        h = _uuid_batch_hashes(keys, name)
        return _ignite.reduce_hashes(h, partitions) if reduce else h
    batch = normalize_keys(keys, key_type, name)
    if batch.kind == "data":
        raise ValueError(f"{name}: serialized bytes/binary keys have no Ignite partition "
                         f"(Ignite hashes the key object); pass str, int or UUID keys")
    if batch.kind == "string":
        out, bad = _ignite.utf8_hashes(batch.offsets, batch.data, partitions, reduce)
        if bad >= 0:
            raise ValueError(f"{name}[{bad}] is not valid UTF-8")
        return out
    return _ignite.int_hashes(batch.values, batch.kind == "long", partitions, reduce)


# --------------------------------------------------------------------------- keys
def java_hash_code(keys, key_type=None):
    """Java ``hashCode()`` of one key or of a batch of keys.

    Parameters
    ----------
    keys : str, int, uuid.UUID, or a batch
        A scalar key, or a batch: list/tuple of str or int (one type per batch), numpy
        ``int32`` / ``int64`` / unicode / object array, pyarrow ``string`` /
        ``large_string`` / ``int32`` / ``int64`` Array or ChunkedArray; a list of
        :class:`uuid.UUID` (or anything with ``key_type="uuid"``).
    key_type : {None, "string", "int", "long", "uuid"}
        ``None`` infers: str -> String, int32 / Python int -> Integer, int64 -> Long,
        UUID -> UUID. ``"long"`` hashes integers as ``java.lang.Long``.

    Returns
    -------
    int or ndarray[int32] of shape (n,)
        ``String.hashCode`` (over UTF-16 code units, int32 wrap), ``Integer.hashCode``
        (the value), ``Long.hashCode`` (``(int)(v ^ (v >>> 32))``) or ``UUID.hashCode``.

    Raises
    ------
    ValueError
        None/null keys (the position is named), Python ints outside int32 without
        ``key_type="long"``, invalid UTF-8 / UUIDs, serialized (bytes) keys.
    TypeError
        Unsupported key or container type, mixed types, bools, unknown ``key_type`` type.

    Examples
    --------
    >>> java_hash_code("key")
    106079
    >>> java_hash_code(-1, key_type="long")
    0
    >>> java_hash_code(["Aa", "BB"]).tolist()
    [2112, 2112]
    """
    key_type = _check_key_type(key_type)
    if _is_scalar(keys):
        return _scalar_hash(keys, key_type, "keys")
    return _bulk(keys, key_type, 1, False)


def partition_id(key, partitions=DEFAULT_PARTITIONS, key_type=None) -> int:
    """Ignite partition of one key (``RendezvousAffinityFunction.partition``).

    Parameters
    ----------
    key : str, int or uuid.UUID
    partitions : int, default 1024
        1..65000. Powers of two use ``(h ^ (h >>> 16)) & (P - 1)``; other counts
        ``abs(h % P)`` with Java's truncating remainder.
    key_type : {None, "string", "int", "long", "uuid"}

    Returns
    -------
    int in [0, partitions)

    Raises
    ------
    ValueError
        ``partitions`` outside 1..65000, None key, int out of range for its type.
    TypeError
        Non-int ``partitions``, unsupported key type.

    Examples
    --------
    >>> partition_id("key"), partition_id("key", 1000)
    (606, 79)
    """
    partitions = _check_partitions(partitions)
    key_type = _check_key_type(key_type)
    if not _is_scalar(key):
        raise TypeError(f"key must be a single str, int or uuid.UUID, got "
                        f"{type(key).__name__} (use partition_ids for batches)")
    h = _scalar_hash(key, key_type, "key")
    return int(_ignite.reduce_hashes(np.array([h], dtype=np.int32), partitions)[0])


def partition_ids(keys, partitions=DEFAULT_PARTITIONS, key_type=None) -> np.ndarray:
    """Ignite partition of every key in a batch.

    Parameters
    ----------
    keys : batch
        Same forms as :func:`java_hash_code` (list/tuple, numpy, pyarrow Array or
        ChunkedArray). Arrow strings are hashed straight from their UTF-8 buffers.
    partitions : int, default 1024
        1..65000.
    key_type : {None, "string", "int", "long", "uuid"}

    Returns
    -------
    ndarray[int32] of shape (n,)

    Raises
    ------
    ValueError, TypeError
        As :func:`java_hash_code`; ``partitions`` outside 1..65000 or not an int.

    Examples
    --------
    >>> partition_ids(["key", "Hello"], 1024).tolist()
    [606, 148]
    >>> import numpy as np
    >>> partition_ids(np.array([-1, 1024], dtype=np.int64), 1024).tolist()
    [0, 0]
    """
    partitions = _check_partitions(partitions)
    key_type = _check_key_type(key_type)
    if _is_scalar(keys):
        if keys is None:
            raise ValueError("keys is None")
        raise TypeError(f"keys must be a batch (list, tuple, numpy or pyarrow array), got a "
                        f"single {type(keys).__name__} (use partition_id)")
    return _bulk(keys, key_type, partitions, True)


# --------------------------------------------------------------------------- rendezvous
def node_weight(cid_hash, partition):
    """Rendezvous weight of a node for a partition (``RendezvousAffinityFunction.hash``).

    Wang/Jenkins 64-bit mix of ``(cid_hash & 0xFFFFFFFF) | (partition << 32)``, as a
    signed long. Smaller weight = earlier in the partition's node order.

    Parameters
    ----------
    cid_hash : int or array_like of int
        ``consistentId.hashCode()`` (int32 range).
    partition : int or array_like of int
        Partition id (int32 range). Arrays broadcast against ``cid_hash``.

    Returns
    -------
    int, or ndarray[int64] of the broadcast shape

    Raises
    ------
    ValueError
        Values outside int32.
    TypeError
        Non-integer input.

    Examples
    --------
    >>> node_weight(0, 0)
    8633297058295171728
    """
    if np.isscalar(cid_hash) and np.isscalar(partition):
        h = check_int(cid_hash, "cid_hash", minimum=_INT32_MIN, maximum=_INT32_MAX)
        p = check_int(partition, "partition", minimum=_INT32_MIN, maximum=_INT32_MAX)
        return int(_ignite.node_weights(np.array([h], np.int32), np.array([p], np.int32))[0])
    h = _int32_array(cid_hash, "cid_hash")
    p = _int32_array(partition, "partition")
    h, p = np.broadcast_arrays(h, p)
    shape = h.shape
    out = _ignite.node_weights(np.ascontiguousarray(h.ravel()), np.ascontiguousarray(p.ravel()))
    return out.reshape(shape)


def _int32_array(value, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got {arr.dtype}")
    if arr.size and (arr.min() < _INT32_MIN or arr.max() > _INT32_MAX):
        raise ValueError(f"{name} holds values outside int32")
    return arr.astype(np.int32, copy=False)


def consistent_id_hash(consistent_id) -> int:
    """``consistentId.hashCode()`` as :func:`assign` computes it.

    str -> String; :class:`uuid.UUID` -> UUID; ``np.int64`` -> Long; ``np.int32`` and
    Python int within int32 -> Integer; larger Python ints -> Long.
    """
    if isinstance(consistent_id, int) and not isinstance(consistent_id, bool) \
            and not _INT32_MIN <= consistent_id <= _INT32_MAX:
        return _scalar_hash(consistent_id, "long", "consistent_id")
    return _scalar_hash(consistent_id, None, "consistent_id")


def _cid_identity(cid):
    """(Java class, value): two consistent ids are duplicates when both are equal."""
    if isinstance(cid, str):
        return ("String", cid)
    if isinstance(cid, _uuid.UUID):
        return ("UUID", cid.int)
    if isinstance(cid, np.int64) or (isinstance(cid, int)
                                      and not _INT32_MIN <= cid <= _INT32_MAX):
        return ("Long", int(cid))
    return ("Integer", int(cid))


def default_node_ids(n: int) -> list:
    """The node ids :func:`assign` uses when none are given: member ``i`` gets
    ``UUID(int=i + 1)`` (``00000000-0000-0000-0000-00000000000{i+1}``), so weight ties are
    broken by member position (the convention of the Ignite vectors)."""
    n = check_int(n, "n", minimum=0)
    return [_uuid.UUID(int=i + 1) for i in range(n)]


def _as_sequence(value, name: str) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        if value is None:
            raise ValueError(f"{name} is None")
        raise TypeError(f"{name} must be a sequence (list, tuple or array), "
                        f"got {type(value).__name__}")
    return value.tolist() if isinstance(value, np.ndarray) else list(value)


def assign(consistent_ids, node_ids=None, *, partitions=DEFAULT_PARTITIONS, backups=0,
           neighbors=None) -> np.ndarray:
    """Ignite's rendezvous affinity: the node order of every partition, bit-exact.

    Mirrors ``RendezvousAffinityFunction.assignPartition`` (no backup filters): each node's
    weight for partition p is :func:`node_weight` (``consistentId.hashCode()``, p); nodes are
    ordered by signed weight, ties by node id (``UUID.compareTo``: signed most significant
    bits, then signed least significant bits). The first is the primary, the next ``backups``
    are the backups. With ``neighbors``, a node sharing a label with an already chosen node
    is skipped for backups (Ignite's ``excludeNeighbors``, labels = the MACS attribute); when
    that leaves fewer than ``min(backups + 1, n)`` nodes, Ignite walks the order again and
    appends the skipped nodes (in weight order), so the row is always full.
    ``backups == REPLICATED`` (Integer.MAX_VALUE): the primary, then every other node in
    topology (input) order; ``neighbors`` is ignored then, as in Ignite.

    Parameters
    ----------
    consistent_ids : sequence of str, int or uuid.UUID, length n >= 1
        The nodes' consistent ids in topology order. Hashed with Java ``hashCode``: str ->
        String, UUID -> UUID, ``np.int64`` -> Long, ints within int32 -> Integer, larger
        ints -> Long. Must be distinct.
    node_ids : sequence of str or uuid.UUID, length n, optional
        Node ids (tie-breaks between equal weights; e.g. consistent ids "Aa" and "BB" share
        a hashCode). Default :func:`default_node_ids`: ``UUID(int=i + 1)``. Must be distinct.
    partitions : int, default 1024
        1..65000.
    backups : int, default 0
        0..2**31-1; ``REPLICATED`` (2**31-1) means a replicated cache.
    neighbors : sequence of hashable, length n, optional
        Neighbour label per node (e.g. MACS string or host); enables exclude-neighbours.

    Returns
    -------
    ndarray[int32] of shape (partitions, min(backups + 1, n))
        Member indexes (into ``consistent_ids``); column 0 is the primary.

    Raises
    ------
    ValueError
        Empty or duplicate ``consistent_ids``; ``node_ids`` of the wrong length, invalid or
        duplicate; ``neighbors`` of the wrong length or holding None; ``partitions`` outside
        1..65000; ``backups`` < 0 or > 2**31-1.
    TypeError
        Non-sequence arguments, non-int ``partitions`` / ``backups``, unsupported consistent
        id types.

    Examples
    --------
    >>> assign(["node-0", "node-1", "node-2"], backups=1)[:3].tolist()
    [[1, 0], [0, 1], [0, 1]]
    """
    cids = _as_sequence(consistent_ids, "consistent_ids")
    n = len(cids)
    if n == 0:
        raise ValueError("consistent_ids must hold at least one node")
    partitions = _check_partitions(partitions)
    backups = check_int(backups, "backups", minimum=0, maximum=REPLICATED)

    hashes = np.empty(n, dtype=np.int32)
    seen = {}
    for i, cid in enumerate(cids):
        if cid is None:
            raise ValueError(f"consistent_ids[{i}] is None")
        if isinstance(cid, (bool, np.bool_)) or not isinstance(
                cid, (str, int, np.integer, _uuid.UUID)):
            raise TypeError(f"consistent_ids[{i}] must be a str, int or uuid.UUID, "
                            f"got {type(cid).__name__}")
        ident = _cid_identity(cid)
        if ident in seen:
            raise ValueError(f"consistent_ids[{i}] = {cid!r} duplicates "
                             f"consistent_ids[{seen[ident]}]")
        seen[ident] = i
        try:
            hashes[i] = consistent_id_hash(cid)
        except ValueError as exc:
            raise ValueError(f"consistent_ids[{i}]: {exc}") from None

    if node_ids is None:
        uuids = default_node_ids(n)
    else:
        ids = _as_sequence(node_ids, "node_ids")
        if len(ids) != n:
            raise ValueError(f"node_ids must have one id per consistent id ({n}), "
                             f"got {len(ids)}")
        uuids = [_as_uuid(u, f"node_ids[{i}]") for i, u in enumerate(ids)]
        first = {}
        for i, u in enumerate(uuids):
            if u.int in first:
                raise ValueError(f"node_ids[{i}] = {u} duplicates node_ids[{first[u.int]}]")
            first[u.int] = i
    # UUID.compareTo: signed msb, then signed lsb == unsigned order with the top bit of each
    # half flipped.
    flip = (1 << 63)
    order = sorted(range(n), key=lambda i: (((uuids[i].int >> 64) ^ flip),
                                            ((uuids[i].int & _MASK64) ^ flip)))
    rank = np.empty(n, dtype=np.int32)
    rank[order] = np.arange(n, dtype=np.int32)

    if neighbors is None:
        group = np.zeros(n, dtype=np.int32)
        group_count = 1
        exclude = False
    else:
        labels = _as_sequence(neighbors, "neighbors")
        if len(labels) != n:
            raise ValueError(f"neighbors must have one label per consistent id ({n}), "
                             f"got {len(labels)}")
        ids_of = {}
        group = np.empty(n, dtype=np.int32)
        for i, lab in enumerate(labels):
            if lab is None:
                raise ValueError(f"neighbors[{i}] is None: every node needs a label")
            try:
                group[i] = ids_of.setdefault(lab, len(ids_of))
            except TypeError:
                raise TypeError(f"neighbors[{i}] must be hashable, "
                                f"got {type(lab).__name__}") from None
        group_count = len(ids_of)
        exclude = True

    replicated = backups == REPLICATED
    width = n if replicated else min(backups + 1, n)
    return _ignite.assign(hashes, rank, group, group_count, partitions, width,
                          replicated, exclude)


# --------------------------------------------------------------------------- update counters
class UpdateCounterError(RuntimeError):
    """Ignite's ``IgniteCheckedException`` / ``IgniteException`` from an update counter:
    an absolute update below the highest applied counter, or too many gaps."""


def _check_long(value, name: str) -> int:
    return check_int(value, name, minimum=_INT64_MIN, maximum=_INT64_MAX)


class UpdateCounter:
    """Ignite's ``PartitionUpdateCounterTrackingImpl`` (persistent, transactional groups).

    LWM (:attr:`lwm`, ``get()``): every update up to it is applied. HWM (:attr:`hwm`,
    ``reserved()``): counters reserved by prepared transactions. Updates applied out of order
    are kept as gap items ``(start, delta)`` covering counters ``start+1 .. start+delta``,
    merged with adjacent items, folded into the LWM when the hole below them closes.
    Single-threaded model of the Java class (its ``synchronized`` sections are atomic here).

    Parameters
    ----------
    initial : int, default 0
        ``init(initUpdCntr, ...)``: LWM = HWM = initial.
    gaps : bytes, optional
        ``init(..., cntrUpdData)``: gap items as produced by :meth:`to_bytes`.

    Examples
    --------
    >>> c = UpdateCounter()
    >>> c.update(2, 1), c.lwm, c.gaps
    (True, 0, [(2, 1)])
    >>> c.update(0, 2), c.lwm, c.sequential
    (True, 3, True)
    """

    #: Too many out-of-order items trigger Ignite's failure handler.
    MAX_MISSED_UPDATES = 10_000
    _VERSION = 1

    def __init__(self, initial: int = 0, gaps: bytes | None = None):
        initial = _check_long(initial, "initial")
        self._lwm = initial
        self._hwm = initial
        self._initial = initial
        self._first = True
        self._items: dict[int, list] = {}  # start -> [start, delta]
        self._keys: list[int] = []         # sorted starts
        for start, delta in self._parse(gaps):
            self._put(start, delta)

    # ---- sorted map helpers (TreeMap<Long, Item>)
    def _put(self, start: int, delta: int) -> None:
        bisect.insort(self._keys, start)
        self._items[start] = [start, delta]

    def _remove(self, start: int):
        item = self._items.pop(start, None)
        if item is not None:
                del self._keys[bisect.bisect_left(self._keys, start)]
        return item

    def _lower(self, start: int):
        i = bisect.bisect_left(self._keys, start)
        return self._items[self._keys[i - 1]] if i else None

    # ---- state
    @property
    def lwm(self) -> int:
        """Low watermark (``get()``)."""
        return self._lwm

    def get(self) -> int:
        return self._lwm

    @property
    def hwm(self) -> int:
        """High watermark (``reserved()``)."""
        return self._hwm

    def reserved(self) -> int:
        return self._hwm

    def initial(self) -> int:
        return self._initial

    @property
    def gaps(self) -> list:
        """Out-of-order items ``[(start, delta), ...]`` in start order (``iterator()``)."""
        return [(s, self._items[s][1]) for s in self._keys]

    @property
    def sequential(self) -> bool:
        """No out-of-order items (``sequential()``)."""
        return not self._keys

    def highest_applied(self) -> int:
        """``highestAppliedCounter()``: end of the last item, else the LWM."""
        if not self._keys:
            return self._lwm
        start, delta = self._items[self._keys[-1]]
        return start + delta

    def empty(self) -> bool:
        return self._lwm == 0 and self.sequential

    # ---- operations
    def next(self, delta: int | None = None) -> int:
        """``next()``: LWM += 1, HWM = LWM, return it; ``next(delta)``: return the old LWM,
        LWM += delta (HWM untouched)."""
        if delta is None:
            self._lwm += 1
            self._hwm = self._lwm
            return self._lwm
        delta = _check_long(delta, "delta")
        old = self._lwm
        self._lwm += delta
        return old

    def reserve(self, delta: int) -> int:
        """Reserve ``delta`` counters: return the old HWM, HWM += delta."""
        delta = _check_long(delta, "delta")
        old = self._hwm
        self._hwm += delta
        return old

    def update(self, start: int, delta: int) -> bool:
        """Apply counters ``start+1 .. start+delta``; False if already applied (stale)."""
        start = _check_long(start, "start")
        delta = _check_long(delta, "delta")
        cur = self._lwm
        if cur > start:
            return False
        if cur < start:
            nxt = start + delta
            nxt_item = self._remove(nxt)
            if nxt_item is not None:
                delta += nxt_item[1]
            prev = self._lower(start)
            if prev is not None:
                if prev[0] + prev[1] == start:
                    prev[1] += delta
                    return True
                if (nxt - 1) - prev[0] < prev[1]:  # prev.within(next - 1)
                    return False
            if len(self._keys) >= self.MAX_MISSED_UPDATES:
                raise UpdateCounterError(f"Too many gaps [lwm={self._lwm}, "
                                         f"items={len(self._keys)}]")
            if start in self._items:
                return False
            self._put(start, delta)
            return True
        nxt = start + delta
        nxt_item = self._remove(nxt)
        if nxt_item is not None:
            nxt += nxt_item[1]
        self._lwm = nxt
        return True

    def update_abs(self, val: int) -> None:
        """``update(long val)``: absolute counter from a supplier / the exchange.

        HWM = max(HWM, val, LWM); ``val < LWM`` is ignored; ``val`` below the highest
        applied counter raises :class:`UpdateCounterError`; else LWM = val and, on the first
        call only, every gap item is dropped.
        """
        val = _check_long(val, "val")
        cur = self._lwm
        mx = max(val, cur)
        if self._hwm < mx:
            self._hwm = mx
        if val < cur:
            return
        if val < self.highest_applied():
            raise UpdateCounterError(f"Failed to update the counter [newVal={val}, "
                                     f"lwm={self._lwm}, maxApplied={self.highest_applied()}]")
        self._lwm = val
        if self._first:
            self._items.clear()
            self._keys.clear()
            self._first = False

    def update_initial(self, start: int, delta: int) -> None:
        """``updateInitial``: :meth:`update`, then initial = LWM and HWM >= it."""
        self.update(start, delta)
        self._initial = self._lwm
        if self._hwm < self._initial:
            self._hwm = self._initial

    def finalize(self) -> list:
        """``finalizeUpdateCounters()``: close every gap (on node left). Returns the missed
        ranges as a flat list ``[from1, to1, from2, to2, ...]`` (LWM+1 .. item start per item;
        Java returns null when there are none: here ``[]``); LWM jumps past each item and
        HWM = LWM."""
        gaps = []
        while self._keys:
            start = self._keys[0]
            item = self._remove(start)
            gaps.extend((self._lwm + 1, item[0]))
            self._lwm = item[0] + item[1]
        self._hwm = self._lwm
        return gaps

    def reset(self) -> None:
        """``reset()``: LWM = HWM = initial = 0, gaps cleared (the first-update flag stays)."""
        self._initial = 0
        self._lwm = 0
        self._hwm = 0
        self._items.clear()
        self._keys.clear()

    def to_bytes(self) -> bytes | None:
        """``getBytes()``: version byte 1, int count, count x (long start, long delta),
        big-endian; None when there are no gaps."""
        if not self._keys:
            return None
        out = [struct.pack(">bi", self._VERSION, len(self._keys))]
        out += [struct.pack(">qq", *self._items[s]) for s in self._keys]
        return b"".join(out)

    @staticmethod
    def _parse(raw) -> list:
        if raw is None:
            return []
        raw = bytes(raw)
        if len(raw) < 5:
            raise ValueError("gaps must hold a version byte and a count")
        (count,) = struct.unpack_from(">i", raw, 1)
        if count < 0 or len(raw) != 5 + 16 * count:
            raise ValueError(f"gaps: expected {count} items of 16 bytes after the header, "
                             f"got {len(raw) - 5} bytes")
        return [struct.unpack_from(">qq", raw, 5 + 16 * i) for i in range(count)]

    def __repr__(self) -> str:
        return (f"UpdateCounter(lwm={self._lwm}, hwm={self._hwm}, gaps={self.gaps}, "
                f"highest_applied={self.highest_applied()})")


class VolatileUpdateCounter:
    """Ignite's ``PartitionUpdateCounterVolatileImpl`` (in-memory groups, or persistent groups
    with ATOMIC caches): LWM == HWM, no gap tracking.

    Examples
    --------
    >>> c = VolatileUpdateCounter()
    >>> c.reserve(3), c.update(10, 2), c.lwm
    (0, False, 12)
    """

    def __init__(self, initial: int = 0):
        initial = _check_long(initial, "initial")
        self._lwm = initial
        self._initial = initial

    @property
    def lwm(self) -> int:
        return self._lwm

    hwm = lwm

    def get(self) -> int:
        return self._lwm

    def reserved(self) -> int:
        return self._lwm

    def initial(self) -> int:
        return self._initial

    gaps = property(lambda self: [], doc="Always empty (no gap tracking).")
    sequential = property(lambda self: True, doc="Always True.")

    def empty(self) -> bool:
        return self._lwm == 0

    def next(self, delta: int | None = None) -> int:
        """``next()``: ++LWM; ``next(delta)``: return the old LWM, LWM += delta."""
        if delta is None:
            self._lwm += 1
            return self._lwm
        delta = _check_long(delta, "delta")
        old = self._lwm
        self._lwm += delta
        return old

    def reserve(self, delta: int) -> int:
        """Same as ``next(delta)``."""
        return self.next(delta)

    def update_abs(self, val: int) -> None:
        """LWM = max(LWM, val)."""
        val = _check_long(val, "val")
        if val > self._lwm:
            self._lwm = val

    def update(self, start: int, delta: int) -> bool:
        """``update(start + delta)``; always returns False (as Ignite does)."""
        start = _check_long(start, "start")
        delta = _check_long(delta, "delta")
        self.update_abs(start + delta)
        return False

    def update_initial(self, start: int, delta: int) -> None:
        self.update(start, delta)
        self._initial = self._lwm

    def finalize(self) -> list:
        return []

    def reset(self) -> None:
        self._initial = 0
        self._lwm = 0

    def to_bytes(self):
        return None

    def __repr__(self) -> str:
        return f"VolatileUpdateCounter(lwm={self._lwm})"
