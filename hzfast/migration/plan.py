"""The migration plan: decisions as columns, their kinds, and the one rule that derives a
decision's kind and whether it is instant (docs/design.md section 5)."""
from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, NoReturn, Protocol, TypeVar, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast import _check
from hzfast.migration import _planner

__all__ = ["Migration", "MigrationKind", "MigrationPlan"]

FIELDS = ("source", "source_current_index", "source_new_index",
          "destination", "destination_current_index", "destination_new_index")
COLUMNS = ("partition_id",) + FIELDS


class MigrationKind(enum.IntEnum):
    """Kind of a planner decision, derived from its six fields (docs/design.md §5)."""

    REMOVE = 0                    #: no destination: the replica is dropped (instant)
    COPY = 1                      #: no source, new member copied into a backup slot
    ASSIGN_LOST_OWNER = 2         #: COPY into the owner slot (dni == 0): instant
    SHIFT_UP = 3                  #: no source, a present member moves to a hotter slot
    MOVE = 4                      #: source replaced, source dropped
    SHIFT_DOWN = 5                #: source replaced and moved to a colder slot
    SHIFT_UP_SOURCE_DROPPED = 6   #: shift up over a source that is dropped
    SHIFT_UP_SHIFT_DOWN = 7       #: shift up, the source moves to a colder slot


KINDS = tuple(MigrationKind)


class Migration(NamedTuple):
    """One decision of a :class:`MigrationPlan` (``-1`` = no member / no index)."""

    partition_id: int
    source: int
    source_current_index: int
    source_new_index: int
    destination: int
    destination_current_index: int
    destination_new_index: int
    kind: MigrationKind
    instant: bool

    @property
    def decision(self) -> tuple[int, int, int, int, int, int]:
        """The six planner fields ``(source, sci, sni, destination, dci, dni)``."""
        return self[1:7]


_A = TypeVar("_A", bound=np.ndarray[Any, Any])


def _frozen(arr: _A) -> _A:
    arr.setflags(write=False)
    return arr


class _ColumnProperty(Protocol):
    """What :func:`_column_property` makes, for type checkers: a read-only property."""

    @overload
    def __get__(self, instance: None, owner: type, /) -> _ColumnProperty: ...
    @overload
    def __get__(self, instance: MigrationPlan, owner: type | None = None, /) -> NDArray[np.int32]: ...


def _column_property(row: int, name: str) -> _ColumnProperty:
    def get(self: MigrationPlan) -> NDArray[np.int32]:
        column: NDArray[np.int32] = self._columns[row]
        return column
    get.__name__ = name
    get.__doc__ = f"ndarray[int32] of shape (N,): the decisions' ``{name}`` (read-only)."
    return property(get)


class MigrationPlan:
    """Columnar migration plan (one entry per planner decision).

    Attributes
    ----------
    partition_id, source, source_current_index, source_new_index, destination, \
destination_current_index, destination_new_index : ndarray[int32] of shape (N,)
        The decision fields, ``-1`` = none. Partitions ascending. (Rows of one (7, N)
        block: a plan's decisions reach the kernels as that one array.)
    kind : ndarray[int8] of shape (N,)
        :class:`MigrationKind` values.
    instant : ndarray[bool] of shape (N,)
        REMOVE and lost-owner assignments: applied at once, never queued.
    target : ndarray[int32] of shape (P, R) or None
        The cycle-fixed target the plan leads to.
    prioritized : bool
        Order contract: False = every decision in emission order per partition; True =
        instant decisions first (emission order), then the queued ones prioritized.

    All arrays are read-only and owned by the plan (the constructor copies its
    arguments). ``len(plan)`` is N; iterating yields :class:`Migration` records;
    ``plan[i]`` is one record, ``plan[mask_or_slice]`` a sub-plan.
    """

    __slots__ = ("_columns", "kind", "instant", "target", "prioritized")
    _columns: NDArray[np.int32]       # (7, N): the COLUMNS as rows, each contiguous
    kind: NDArray[np.int8]
    instant: NDArray[np.bool_]
    target: NDArray[np.int32] | None
    prioritized: bool

    partition_id = _column_property(0, "partition_id")
    source = _column_property(1, "source")
    source_current_index = _column_property(2, "source_current_index")
    source_new_index = _column_property(3, "source_new_index")
    destination = _column_property(4, "destination")
    destination_current_index = _column_property(5, "destination_current_index")
    destination_new_index = _column_property(6, "destination_new_index")

    def __init__(self, partition_id: ArrayLike, source: ArrayLike,
                 source_current_index: ArrayLike, source_new_index: ArrayLike,
                 destination: ArrayLike, destination_current_index: ArrayLike,
                 destination_new_index: ArrayLike, kind: ArrayLike | None = None,
                 instant: ArrayLike | None = None, target: ArrayLike | None = None,
                 prioritized: bool = True) -> None:
        values = (partition_id, source, source_current_index, source_new_index,
                  destination, destination_current_index, destination_new_index)
        arrays: list[NDArray[np.int32]] = []
        for name, value in zip(COLUMNS, values):
            arr = np.asarray(value, dtype=np.int32)
            if arr.ndim != 1:
                raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
            if arrays and arr.shape[0] != arrays[0].shape[0]:
                raise ValueError(f"{name} has length {arr.shape[0]}, "
                                 f"expected {arrays[0].shape[0]}")
            arrays.append(arr)
        block = np.empty((len(COLUMNS), arrays[0].shape[0]), dtype=np.int32)
        for row, arr in zip(block, arrays):
            row[:] = arr
        if kind is None or instant is None:
            derived_kind, derived_instant = _planner.classify(block)
            kind = derived_kind if kind is None else kind
            instant = derived_instant if instant is None else instant
        self._init(block, np.array(kind, dtype=np.int8), np.array(instant, dtype=bool),
                   None if target is None else np.array(target, dtype=np.int32, order="C"),
                   prioritized)

    def _init(self, block: NDArray[np.int32], kind: NDArray[np.int8],
              instant: NDArray[np.bool_], target: NDArray[np.int32] | None,
              prioritized: bool) -> None:
        """Take ownership of fresh arrays: ``block`` (7, N) int32 with contiguous rows,
        ``kind`` int8 and ``instant`` bool of length N, ``target`` or None."""
        object.__setattr__(self, "_columns", _frozen(block))
        object.__setattr__(self, "kind", _frozen(kind))
        object.__setattr__(self, "instant", _frozen(instant))
        object.__setattr__(self, "target", None if target is None else _frozen(target))
        object.__setattr__(self, "prioritized", bool(prioritized))

    @classmethod
    def _from_kernel(cls, block: NDArray[np.int32], kind: NDArray[np.int8],
                     instant: NDArray[np.bool_], target: NDArray[np.int32] | None,
                     prioritized: bool) -> "MigrationPlan":
        """Wrap the planner kernel's fresh output without re-checking it."""
        self = object.__new__(cls)
        self._init(block, kind, instant, target, prioritized)
        return self

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("MigrationPlan is immutable")

    # -- container protocol
    def __len__(self) -> int:
        return int(self._columns.shape[1])

    def __iter__(self) -> Iterator[Migration]:
        for row in zip(*self._columns.tolist(), self.kind.tolist(), self.instant.tolist()):
            yield Migration._make((*row[:7], KINDS[row[7]], row[8]))

    @overload
    def __getitem__(self, item: int | np.integer[Any]) -> Migration: ...
    @overload
    def __getitem__(self, item: slice | NDArray[np.bool_] | NDArray[np.integer[Any]]
                    | Sequence[int]) -> "MigrationPlan": ...

    def __getitem__(self, item: int | np.integer[Any] | slice | NDArray[np.bool_]
                    | NDArray[np.integer[Any]] | Sequence[int]) -> "Migration | MigrationPlan":
        if isinstance(item, (int, np.integer)):
            i = int(item)
            n = len(self)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"migration index {item} out of range for {n} migrations")
            return Migration._make((*(int(v) for v in self._columns[:, i]),
                                    KINDS[self.kind[i]], bool(self.instant[i])))
        return self._take(item)

    def _take(self, index: slice | NDArray[np.bool_] | NDArray[np.integer[Any]] | Sequence[int],
              prioritized: bool | None = None) -> "MigrationPlan":
        """The sub-plan of the decisions ``index`` selects (a slice, a mask or positions)."""
        block: NDArray[np.int32] = self._columns[:, index]
        if not block.flags.writeable:   # a view of this plan's block: share it
            kind, instant = self.kind[index], self.instant[index]
        else:                           # fancy indexing made fresh arrays
            kind, instant = self.kind[index].copy(), self.instant[index].copy()
        sub = object.__new__(MigrationPlan)
        sub._init(block, kind, instant, self.target,
                  self.prioritized if prioritized is None else prioritized)
        return sub

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MigrationPlan):
            return NotImplemented
        same_target = ((self.target is None and other.target is None) or
                       (self.target is not None and other.target is not None
                        and np.array_equal(self.target, other.target)))
        return (same_target and self.prioritized == other.prioritized
                and np.array_equal(self._columns, other._columns))

    __hash__ = None  # type: ignore[assignment]  # equality by value, mutable-looking arrays

    def __repr__(self) -> str:
        counts = ", ".join(f"{k.name}={v}" for k, v in self.counts().items() if v)
        return f"MigrationPlan({len(self)} decisions: {counts or 'none'})"

    # -- views
    def queued(self) -> "MigrationPlan":
        """The decisions the migration manager queues (``~instant``), order kept."""
        return self._take(~self.instant)

    def for_partition(self, partition_id: int) -> "MigrationPlan":
        """The decisions of one partition (plans are sorted by partition)."""
        p = _check.check_int(partition_id, "partition_id", minimum=0)
        lo, hi = np.searchsorted(self.partition_id, [p, p + 1])
        return self._take(slice(int(lo), int(hi)))

    def decisions(self) -> NDArray[np.int32]:
        """ndarray[int32] of shape (N, 6): the six decision fields as rows."""
        return np.ascontiguousarray(self._columns[1:].T)

    def counts(self) -> dict[MigrationKind, int]:
        """``{MigrationKind: count}`` for every kind (zeros included)."""
        c = np.bincount(self.kind, minlength=len(KINDS)) if len(self) else \
            np.zeros(len(KINDS), dtype=np.int64)
        return {k: int(c[k]) for k in KINDS}

    def max_member(self) -> int:
        """The largest member index in the plan's sources, destinations and target
        (-1 if none)."""
        top = int(self._columns[[1, 4]].max()) if len(self) else -1
        if self.target is not None and self.target.size:
            top = max(top, int(self.target.max()))
        return top

    def member_counts(self, member_count: int | None = None
                      ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Per-member ``(incoming, outgoing)`` decision counts.

        ``incoming[m]`` counts decisions whose destination is ``m``, ``outgoing[m]``
        those whose source is ``m`` (COPY/SHIFT UP have no source: Hazelcast copies
        those from the partition owner).

        Parameters
        ----------
        member_count : int, optional
            Length of the result; default: largest member in the plan or target + 1.

        Returns
        -------
        (ndarray[int64] of shape (M,), ndarray[int64] of shape (M,))
        """
        count = _check.check_member_count(member_count, self.max_member(),
                                          "the plan uses member")
        dst = self.destination[self.destination >= 0]
        src = self.source[self.source >= 0]
        return (np.bincount(dst, minlength=count).astype(np.int64),
                np.bincount(src, minlength=count).astype(np.int64))

    # -- serialisation
    def to_json(self) -> str:
        """JSON text: the seven int columns, the target and the order flag."""
        doc = {"format": "hzfast.MigrationPlan/1", "prioritized": self.prioritized,
               "columns": dict(zip(COLUMNS, self._columns.tolist())),
               "target": None if self.target is None else self.target.tolist(),
               "replica_count": None if self.target is None else int(self.target.shape[1])}
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes | bytearray) -> "MigrationPlan":
        """Inverse of :meth:`to_json` (raises ValueError on a malformed document)."""
        try:
            doc = json.loads(text)
            cols = doc["columns"]
            target = doc.get("target")
            if target is not None:
                target = np.asarray(target, dtype=np.int32).reshape(-1, doc["replica_count"])
            p, s, sci, sni, d, dci, dni = (np.asarray(cols[c], dtype=np.int32) for c in COLUMNS)
            return cls(p, s, sci, sni, d, dci, dni, target=target,
                       prioritized=doc.get("prioritized", True))
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a MigrationPlan JSON document: {exc}") from None

    def to_pandas(self) -> Any:   # pandas.DataFrame (pandas has no type information here)
        """A pandas DataFrame (one row per decision; ``kind`` categorical by name)."""
        import pandas as pd  # optional dependency

        data = dict(zip(COLUMNS, self._columns))
        data["kind"] = pd.Categorical.from_codes(self.kind.astype(np.int64),
                                                 categories=[k.name for k in KINDS])
        data["instant"] = self.instant
        return pd.DataFrame(data)
