"""Ignite rendezvous affinity: node weights and the node order of every partition.

Bit-exact with Ignite 2.x ``RendezvousAffinityFunction`` (no backup filters), including
exclude-neighbours and REPLICATED caches; checked against the assignment scenarios of
``tests/data/vectors/ignite.json``. Kernels live in :mod:`hzfast.ignite._affinity`; this
module validates every argument first.
"""
from __future__ import annotations

import uuid as _uuid
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast._check import check_int
from hzfast._keys import INT32_MAX, INT32_MIN
from hzfast.ignite import _affinity
from hzfast.ignite.hashing import (
    DEFAULT_PARTITIONS,
    as_uuid,
    check_partitions,
    scalar_hash,
)

__all__ = ["REPLICATED", "assign", "consistent_id_hash", "default_node_ids", "node_weight"]

#: ``backups`` value of a REPLICATED cache (Integer.MAX_VALUE): every node holds every
#: partition; primary first, then all other nodes in topology order.
REPLICATED = 2**31 - 1

_MASK64 = (1 << 64) - 1

#: The largest result :func:`assign` and :func:`node_weight` build, in cells (1 GiB of int32
#: assignments). ``partitions x min(backups + 1, n)`` (``partitions x n`` for a replicated
#: cache) above it is refused before anything is allocated: 65,000 partitions of a
#: replicated cache on 100,000 nodes would need 26 GB.
MAX_CELLS = 1 << 28


def _check_cells(cells: int, what: str) -> None:
    if cells > MAX_CELLS:
        raise ValueError(f"{what} would have {cells} cells, more than MAX_CELLS = {MAX_CELLS}")


# --------------------------------------------------------------------------- helpers
def _int32_array(value: ArrayLike, name: str) -> NDArray[np.int32]:
    """Any integer array_like (any shape) within int32, as int32."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got {arr.dtype}")
    if arr.size and (arr.min() < INT32_MIN or arr.max() > INT32_MAX):
        raise ValueError(f"{name} holds values outside int32")
    return arr.astype(np.int32, copy=False)


def _fits_int32(value: int) -> bool:
    return INT32_MIN <= value <= INT32_MAX


def _cid_identity(cid: str | int | np.integer[Any] | _uuid.UUID) -> tuple[str, str | int]:
    """(Java class, value): two consistent ids are duplicates when both are equal."""
    if isinstance(cid, str):
        return ("String", cid)
    if isinstance(cid, _uuid.UUID):
        return ("UUID", cid.int)
    if isinstance(cid, np.int64) or (isinstance(cid, int) and not _fits_int32(cid)):
        return ("Long", int(cid))
    return ("Integer", int(cid))


def _as_sequence(value: object, name: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        if value is None:
            raise ValueError(f"{name} is None")
        raise TypeError(f"{name} must be a sequence (list, tuple or array), "
                        f"got {type(value).__name__}")
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{name} must be 1-dimensional, got shape {value.shape}")
        # list(), not tolist(): the items stay numpy scalars, so an int64 array's ids are
        # Longs as np.int64 ids are (tolist() made them Python ints, hashed as Integers)
        return list(value)
    return list(value)


def _node_hashes(cids: list[Any]) -> NDArray[np.int32]:
    """``consistentId.hashCode()`` of every node; None, bad types and duplicates raise."""
    hashes = np.empty(len(cids), dtype=np.int32)
    seen: dict[tuple[str, str | int], int] = {}
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
    return hashes


def _node_id_ranks(node_ids: object, n: int) -> NDArray[np.int32]:
    """Position of every node's id in ``UUID.compareTo`` order (a permutation of 0..n-1)."""
    if node_ids is None:
        uuids = default_node_ids(n)
    else:
        ids = _as_sequence(node_ids, "node_ids")
        if len(ids) != n:
            raise ValueError(f"node_ids must have one id per consistent id ({n}), "
                             f"got {len(ids)}")
        uuids = [as_uuid(u, f"node_ids[{i}]") for i, u in enumerate(ids)]
        first: dict[int, int] = {}
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
    return rank


def _neighbor_groups(neighbors: object, n: int) -> tuple[NDArray[np.int32], int]:
    """Group id per node (equal labels, equal ids, in first-seen order) and the group count."""
    labels = _as_sequence(neighbors, "neighbors")
    if len(labels) != n:
        raise ValueError(f"neighbors must have one label per consistent id ({n}), "
                         f"got {len(labels)}")
    ids_of: dict[Hashable, int] = {}
    group = np.empty(n, dtype=np.int32)
    for i, lab in enumerate(labels):
        if lab is None:
            raise ValueError(f"neighbors[{i}] is None: every node needs a label")
        try:
            group[i] = ids_of.setdefault(lab, len(ids_of))
        except TypeError:
            raise TypeError(f"neighbors[{i}] must be hashable, "
                            f"got {type(lab).__name__}") from None
    return group, len(ids_of)


# --------------------------------------------------------------------------- public API
def node_weight(cid_hash: ArrayLike, partition: ArrayLike) -> int | NDArray[np.int64]:
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
        Values outside int32; shapes that do not broadcast, or a broadcast result of more
        than :data:`MAX_CELLS` cells.
    TypeError
        Non-integer input.

    Examples
    --------
    >>> node_weight(0, 0)
    8633297058295171728
    >>> node_weight([0, 1], 0).tolist()
    [8633297058295171728, 6614235796240398542]
    """
    if np.isscalar(cid_hash) and np.isscalar(partition):
        h = check_int(cid_hash, "cid_hash", minimum=INT32_MIN, maximum=INT32_MAX)
        p = check_int(partition, "partition", minimum=INT32_MIN, maximum=INT32_MAX)
        return int(_affinity.node_weights(np.array([h], np.int32),
                                          np.array([p], np.int32))[0])
    a, b = _int32_array(cid_hash, "cid_hash"), _int32_array(partition, "partition")
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"cid_hash of shape {a.shape} and partition of shape {b.shape} do "
                         f"not broadcast together") from None
    _check_cells(int(np.prod(shape, dtype=object)), f"node_weight of shape {shape}")
    hs, ps = np.broadcast_arrays(a, b)
    out = _affinity.node_weights(np.ascontiguousarray(hs.ravel()),
                                 np.ascontiguousarray(ps.ravel()))
    return out.reshape(shape)


def consistent_id_hash(consistent_id: str | int | np.integer[Any] | _uuid.UUID) -> int:
    """``consistentId.hashCode()`` as :func:`assign` computes it.

    Parameters
    ----------
    consistent_id : str, int or uuid.UUID
        str -> ``String``; :class:`uuid.UUID` -> ``UUID``; ``np.int64`` -> ``Long``;
        ``np.int32`` and Python ints within int32 -> ``Integer``; larger Python ints ->
        ``Long``.

    Returns
    -------
    int
        The Java ``hashCode`` (int32 range).

    Raises
    ------
    ValueError
        None, or an int outside int64.
    TypeError
        Any other type (bools included).

    Examples
    --------
    >>> consistent_id_hash("node-0"), consistent_id_hash(7), consistent_id_hash(2**32)
    (-1040172251, 7, 1)
    """
    if isinstance(consistent_id, int) and not isinstance(consistent_id, bool) \
            and not _fits_int32(consistent_id):
        return scalar_hash(consistent_id, "long", "consistent_id")
    return scalar_hash(consistent_id, None, "consistent_id")


def default_node_ids(n: int) -> list[_uuid.UUID]:
    """The node ids :func:`assign` uses when none are given.

    Member ``i`` gets ``UUID(int=i + 1)`` (``00000000-0000-0000-0000-00000000000{i+1}``),
    so weight ties are broken by member position (the convention of the Ignite vectors).

    Parameters
    ----------
    n : int
        Number of nodes, >= 0.

    Returns
    -------
    list of uuid.UUID, length n

    Raises
    ------
    ValueError
        ``n`` < 0.
    TypeError
        ``n`` not an int.

    Examples
    --------
    >>> [str(u) for u in default_node_ids(2)]
    ['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002']
    """
    n = check_int(n, "n", minimum=0)
    return [_uuid.UUID(int=i + 1) for i in range(n)]


def assign(consistent_ids: Sequence[str | int | np.integer[Any] | _uuid.UUID] | NDArray[Any],
           node_ids: Sequence[str | _uuid.UUID] | NDArray[Any] | None = None, *,
           partitions: int = DEFAULT_PARTITIONS, backups: int = 0,
           neighbors: Sequence[Hashable] | NDArray[Any] | None = None) -> NDArray[np.int32]:
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
        1..65000; ``backups`` < 0 or > 2**31-1; a result of more than :data:`MAX_CELLS`
        cells.
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
    partitions = check_partitions(partitions)
    backups = check_int(backups, "backups", minimum=0, maximum=REPLICATED)
    hashes = _node_hashes(cids)
    rank = _node_id_ranks(node_ids, n)
    if neighbors is None:
        group, group_count, exclude = np.zeros(n, dtype=np.int32), 1, False
    else:
        (group, group_count), exclude = _neighbor_groups(neighbors, n), True
    replicated = backups == REPLICATED
    width = n if replicated else min(backups + 1, n)
    _check_cells(partitions * width, f"assign's result ({partitions} partitions x {width} "
                                     f"nodes)")
    return _affinity.assign(hashes, rank, group, group_count, partitions, width,
                            replicated, exclude)
