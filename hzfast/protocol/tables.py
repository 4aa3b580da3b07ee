"""Applying a received full partition table to the local one (docs/design.md §7.4).

A member that receives the master's full table applies it partition by partition: a
received version lower than the local one is ignored, an equal one must come with identical
replicas, a higher one replaces the local row and version. Where Hazelcast throws from the
middle of its per-partition loop (leaving the table half updated) when an equal version
comes with other replicas, hzfast applies nothing at all and names every diverged partition
(:class:`DivergedTableError`). The work is one pass of a Cython kernel over all partitions.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast import _check
from hzfast._typing import TableLike, VectorLike
from hzfast.protocol import _merge

__all__ = ["DivergedTableError", "merge_tables"]

_LISTED = 20     # diverged partition ids a message lists before "... and N more"


class DivergedTableError(ValueError):
    """A received table has the local version of some partitions with other replicas
    (docs/design.md §7.4); nothing was applied.

    Attributes
    ----------
    partitions : ndarray[int32]
        The diverged partition ids, ascending (a read-only array owned by the error).
    """

    partitions: NDArray[np.int32]

    def __init__(self, partitions: ArrayLike) -> None:
        ids = np.array(partitions, dtype=np.int32, copy=True).reshape(-1)
        ids.setflags(write=False)
        self.partitions = ids
        shown = ", ".join(str(p) for p in ids[:_LISTED].tolist())
        more = f", ... and {len(ids) - _LISTED} more" if len(ids) > _LISTED else ""
        noun = "partition" if len(ids) == 1 else "partitions"
        super().__init__(f"received table diverged from the local one in {len(ids)} {noun} "
                         f"(equal version, other replicas): {shown}{more}; nothing applied")

    def __reduce__(self) -> tuple[type[DivergedTableError], tuple[NDArray[np.int32]]]:
        return (type(self), (self.partitions,))


def merge_tables(local_replicas: TableLike, local_versions: VectorLike,
                 received_replicas: TableLike, received_versions: VectorLike
                 ) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.bool_]]:
    """Apply a received full table to the local one, partition by partition (§7.4).

    Parameters
    ----------
    local_replicas : ndarray[int32] of shape (P, R), or PartitionTable
        This node's table (``1 <= R <= 7``).
    local_versions : ndarray[int32] of shape (P,)
        Its per-partition versions.
    received_replicas : ndarray[int32] of shape (P, R), or PartitionTable
        The table received (same shape as ``local_replicas``).
    received_versions : ndarray[int32] of shape (P,)
        Its versions.

    Returns
    -------
    replicas : ndarray[int32] of shape (P, R)
        New array: per partition the received row where the received version is higher,
        the local row otherwise.
    versions : ndarray[int32] of shape (P,)
        New array: the higher of the two versions.
    updated : ndarray[bool] of shape (P,)
        True where the partition was taken from the received table.

    Raises
    ------
    DivergedTableError
        Some partition has equal versions and different replicas; its ``partitions``
        lists every such partition and nothing is applied (a ValueError).
    TypeError
        An argument that is not an int32 array (or a list of ints).
    ValueError
        Wrong dimensions, not C-contiguous, more than 7 replica columns, or shapes that do
        not match (the message names the argument).

    Notes
    -----
    The inputs are never modified. Replica values are compared and copied, never
    interpreted, so they are not range-checked here (any int32 is carried as it is).

    Examples
    --------
    >>> import numpy as np
    >>> from hzfast.protocol.tables import merge_tables
    >>> local = np.array([[0, 1], [1, 2], [2, 0]], dtype=np.int32)
    >>> received = np.array([[0, 1], [2, 1], [1, 0]], dtype=np.int32)
    >>> r, v, up = merge_tables(local, np.array([3, 4, 6], np.int32),
    ...                         received, np.array([3, 5, 5], np.int32))
    >>> r.tolist(), v.tolist(), up.tolist()
    ([[0, 1], [2, 1], [2, 0]], [3, 5, 6], [False, True, False])
    >>> merge_tables(local, np.array([3, 4, 6], np.int32), received,
    ...              np.array([3, 4, 5], np.int32))
    Traceback (most recent call last):
    ...
    hzfast.protocol.tables.DivergedTableError: received table diverged from the local one in 1 partition (equal version, other replicas): 1; nothing applied
    """
    # fresh private copies of the local table become the result (the kernel writes only
    # the rows it takes from the received table); the received one is a private snapshot
    replicas = _check.as_table(local_replicas, "local_replicas", writable=True)
    received = _check.as_table(received_replicas, "received_replicas")
    _check.same_shape(replicas, received, "local_replicas", "received_replicas")
    P = replicas.shape[0]
    versions = _check.as_versions(local_versions, P, "local_versions", writable=True)
    received_v = _check.as_versions(received_versions, P, "received_versions")
    updated = np.empty(P, dtype=np.bool_)
    diverged = np.empty(P, dtype=np.int32)
    count = _merge.merge(replicas, versions, received, received_v, updated.view(np.uint8),
                         diverged)
    if count:
        raise DivergedTableError(diverged[:count])
    return replicas, versions, updated
