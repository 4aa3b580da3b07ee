"""PartitionTable: replicas + versions + members, as one immutable value."""
from __future__ import annotations

import os
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from hzfast._check import (
    DEFAULT_PARTITION_COUNT,
    MAX_REPLICA_COUNT,
    as_replicas,
    as_versions,
    check_int,
    check_member_total,
    check_members_arg,
    check_partition_count,
    check_table,
    file_name,
    frozen,
    read_npz,
)
from hzfast._typing import TableLike, VectorLike
from hzfast.members import Members, MembersLike

__all__ = ["PartitionTable"]


# what a table file holds (PartitionTable.save / load)
_FILE_ARRAYS = {"replicas": ("int32", 2), "versions": ("int32", 1), "members": ("unicode", 0)}


class PartitionTable:
    """A cluster's partition table: who holds each replica of each partition.

    The table is an immutable value: its arrays are private copies that nobody can
    make writeable again (they rest on ``bytes``), and every operation that changes it
    returns a new table. This keeps the cached :attr:`stamp` exact, makes tables safe to
    share between threads, and lets kernels read a table's arrays without copying them.

    Parameters
    ----------
    replicas : ndarray[int32] of shape (P, R)
        ``replicas[p, i]`` is the member index holding replica ``i`` of partition ``p``
        (column 0 = owner), ``-1`` for an empty slot. ``1 <= R <= 7``.
    versions : ndarray[int32] of shape (P,), optional
        Per-partition versions. Default: all zeros.
    members : Members or int, optional
        The member registry; an int n means ``Members.from_count(n)``. Default: just
        enough anonymous members for the largest index used.

    Raises
    ------
    TypeError
        Wrong dtype or type.
    ValueError
        Wrong shape, non-contiguous input, a member index outside ``[-1, M)`` (``M`` at
        most ``MAX_MEMBER_COUNT`` = 65,536), a member twice in one row, versions of the
        wrong length.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> t = hzfast.PartitionTable(np.array([[0, 1], [1, 0]], dtype=np.int32), members=2)
    >>> t.partition_count, t.replica_count, t.owners().tolist()
    (2, 2, [0, 1])
    """

    __slots__ = ("_members", "_replicas", "_stamp", "_versions")
    _replicas: NDArray[np.int32]
    _versions: NDArray[np.int32]
    _members: Members
    _stamp: int | None

    def __init__(self, replicas: TableLike, versions: VectorLike | None = None,
                 members: MembersLike | None = None) -> None:
        registry = None if members is None else Members.coerce(check_members_arg(members))
        if registry is not None:
            check_member_total(len(registry))
        # private, immutable snapshots, validated after they were taken
        reps, largest = check_table(replicas, "replicas", freeze=True,
                                    member_count=None if registry is None else len(registry))
        if registry is None:
            registry = Members.from_count(largest + 1)
        vers: NDArray[np.int32]
        if versions is None:
            vers = frozen(np.zeros(reps.shape[0], dtype=np.int32))
        else:
            vers = as_versions(versions, reps.shape[0], freeze=True)
        self._replicas = reps
        self._versions = vers
        self._members = registry
        self._stamp = None

    # -- constructors ------------------------------------------------------
    @classmethod
    def empty(cls, partition_count: int = DEFAULT_PARTITION_COUNT,
              replica_count: int = MAX_REPLICA_COUNT,
              members: MembersLike = 0) -> PartitionTable:
        """A table with every slot empty and every version 0.

        Parameters
        ----------
        partition_count : int, default 271
        replica_count : int, default 7
            Columns of the table, 1..7.
        members : Members or int, default 0

        Returns
        -------
        PartitionTable
        """
        P = check_partition_count(partition_count)
        R = check_int(replica_count, "replica_count", minimum=1, maximum=MAX_REPLICA_COUNT)
        return cls(np.full((P, R), -1, dtype=np.int32), None, members)

    @classmethod
    def round_robin(cls, partition_count: int = DEFAULT_PARTITION_COUNT,
                    members: MembersLike = 3,
                    replica_count: int | None = None) -> PartitionTable:
        """A balanced demo table: ``replicas[p, r] = (p + r) % M``.

        ``replica_count`` defaults to ``min(M, 7)`` and may not exceed M.
        """
        P = check_partition_count(partition_count)
        members = Members.coerce(check_members_arg(members))
        M = check_member_total(len(members))
        if M == 0:
            raise ValueError("members must not be empty")
        R = min(M, MAX_REPLICA_COUNT) if replica_count is None else check_int(
            replica_count, "replica_count", minimum=1, maximum=min(M, MAX_REPLICA_COUNT))
        reps = ((np.arange(P, dtype=np.int64)[:, None] + np.arange(R)[None, :]) % M).astype(np.int32)
        return cls(reps, None, members)

    # -- properties --------------------------------------------------------
    @property
    def replicas(self) -> NDArray[np.int32]:
        """ndarray[int32] of shape (P, R), read-only."""
        return self._replicas

    @property
    def versions(self) -> NDArray[np.int32]:
        """ndarray[int32] of shape (P,), read-only."""
        return self._versions

    @property
    def members(self) -> Members:
        return self._members

    @property
    def partition_count(self) -> int:
        return int(self._replicas.shape[0])

    @property
    def replica_count(self) -> int:
        return int(self._replicas.shape[1])

    @property
    def member_count(self) -> int:
        return len(self._members)

    @property
    def stamp(self) -> int:
        """Hazelcast's partition-table stamp of :attr:`versions` (signed int64), cached."""
        if self._stamp is None:
            from hzfast.hashing import stamp
            self._stamp = stamp(self._versions)
        return self._stamp

    # -- queries -----------------------------------------------------------
    def owners(self) -> NDArray[np.int32]:
        """ndarray[int32] of shape (P,): the owner (replica 0) of each partition."""
        owners: NDArray[np.int32] = self._replicas[:, 0].copy()
        return owners

    def locate(self, keys: object, key_type: str | None = None) -> NDArray[np.int32] | int:
        """Owner member index of each key (``-1`` where the partition has no owner).

        Parameters
        ----------
        keys : scalar key, sequence, ndarray or pyarrow array
            Anything :func:`hzfast.partition_ids` accepts.
        key_type : {None, "string", "int", "long", "data"}

        Returns
        -------
        int for a scalar key, else ndarray[int32] of shape (N,)
        """
        from hzfast.hashing import partition_id, partition_ids
        if isinstance(keys, (str, bytes, int, np.integer)):
            return int(self._replicas[partition_id(keys, self.partition_count, key_type), 0])
        owners: NDArray[np.int32] = self._replicas[partition_ids(keys, self.partition_count,
                                                                 key_type), 0]
        return owners

    def validate(self) -> PartitionTable:
        """Re-check every invariant; return self. Raises ValueError on a broken table."""
        as_replicas(self._replicas, "replicas", member_count=len(self._members))
        as_versions(self._versions, self.partition_count)
        return self

    # -- derivation --------------------------------------------------------
    def replace(self, *, replicas: TableLike | None = None, versions: VectorLike | None = None,
                members: MembersLike | None = None) -> PartitionTable:
        """A new table with some parts replaced (validated again)."""
        return PartitionTable(self._replicas if replicas is None else replicas,
                              self._versions if versions is None else versions,
                              self._members if members is None else members)

    def copy(self) -> PartitionTable:
        """An equal table (tables are immutable, so this is rarely needed)."""
        return self.replace()

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> PartitionTable:
        return self.copy()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionTable):
            return NotImplemented
        return (self._members == other._members
                and np.array_equal(self._versions, other._versions)
                and self._replicas.shape == other._replicas.shape
                and np.array_equal(self._replicas, other._replicas))

    __hash__ = None  # type: ignore[assignment]  # mutable-looking arrays: not hashable

    def __reduce__(self) -> tuple[type[PartitionTable], tuple[Any, ...]]:
        # pickled as its parts and validated again when unpickled
        return (PartitionTable, (np.array(self._replicas), np.array(self._versions),
                                 self._members))

    def __repr__(self) -> str:
        return (f"PartitionTable(partitions={self.partition_count}, replicas={self.replica_count}, "
                f"members={len(self._members)}, stamp={self.stamp})")

    # -- persistence -------------------------------------------------------
    def save(self, path: str | os.PathLike[str] | IO[bytes]) -> None:
        """Write the table to an ``.npz`` file (replicas, versions, members as JSON).

        The file is written at exactly ``path`` (numpy's habit of appending ``.npz`` is
        not followed), so ``load(path)`` reads what ``save(path)`` wrote. ``path`` may
        also be a binary file object.
        """
        members = np.array(self._members.to_json())
        if isinstance(path, (str, bytes, os.PathLike)):
            with open(path, "wb") as fh:
                np.savez_compressed(fh, replicas=self._replicas, versions=self._versions,
                                    members=members)
        else:
            np.savez_compressed(path, replicas=self._replicas, versions=self._versions,
                                members=members)

    @classmethod
    def load(cls, path: str | os.PathLike[str] | IO[bytes]) -> PartitionTable:
        """Read a table written by :meth:`save` (validated).

        Raises
        ------
        OSError
            ``path`` cannot be opened (missing, a directory, no permission).
        ValueError
            Anything wrong with the content - not an ``.npz`` archive, truncated,
            corrupt, a pickle, missing or extra arrays, wrong dtypes or shapes, sizes
            that do not match, an invalid table or member registry: one message naming
            the file and the problem.
        """
        arrays = read_npz(path, _FILE_ARRAYS, "table file")
        try:
            members = Members.from_json(str(arrays["members"][()]))
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                RecursionError, OverflowError) as exc:
            raise ValueError(f"table file {file_name(path)} holds an invalid member "
                             f"registry ({type(exc).__name__}: {exc})") from None
        try:
            return cls(arrays["replicas"], arrays["versions"], members)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"table file {file_name(path)} holds an invalid table: "
                             f"{exc}") from None
