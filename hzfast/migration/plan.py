"""The migration plan: decisions as columns, their kinds, and the one rule that derives a
decision's kind and whether it is instant (docs/design.md section 5)."""
from __future__ import annotations

import enum
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, NoReturn, Protocol, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast import _check
from hzfast.migration import _planner

__all__ = ["Migration", "MigrationKind", "MigrationPlan"]

FIELDS = ("source", "source_current_index", "source_new_index",
          "destination", "destination_current_index", "destination_new_index")
COLUMNS = ("partition_id",) + FIELDS
FORMAT = "hzfast.MigrationPlan/1"
_DOC_KEYS = {"format", "prioritized", "columns", "target", "replica_count"}


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


def _owned(arr: NDArray[Any]) -> NDArray[Any]:
    """``arr`` if nobody can write it (a kernel's bytes-backed output, a view of a plan's
    arrays), else an immutable copy: a plan's arrays never change (no caller or thread
    can write them), so kernels read them without copying."""
    return arr if _check.is_immutable(arr) else _check.frozen(arr)


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

    All arrays are read-only and owned by the plan: the constructor copies its
    arguments into arrays nobody can make writeable again, so later changes to the
    caller's arrays never reach the plan. ``len(plan)`` is N; iterating yields
    :class:`Migration` records; ``plan[i]`` is one record, ``plan[mask_or_slice]`` a
    sub-plan.

    Raises
    ------
    TypeError
        A column that does not hold integers (floats, bools, strings, objects), an
        ``instant`` that does not hold bools, a ``prioritized`` that is not a bool, a
        ``target`` that is not an int32 table.
    ValueError
        Columns of different lengths or not 1-D, a value outside int32 or outside its
        range (partition ids in ``[0, P)`` with ``P`` the target's partition count,
        replica indices in ``[-1, R)``, members in ``[-1, MAX_MEMBER_COUNT)``), partition
        ids not ascending, a new index without a member (or a member without one), a
        ``kind`` or ``instant`` that contradicts the decision's fields, an invalid target.
    """

    __slots__ = ("_columns", "instant", "kind", "prioritized", "target")
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
        prio = _check.check_bool(prioritized, "prioritized")
        fixed = None
        P, R = _check.MAX_PARTITION_COUNT, _check.MAX_REPLICA_COUNT
        if target is not None:
            fixed = _check.as_replicas(target, "target", freeze=True)
            P, R = fixed.shape
        member = _check.MAX_MEMBER_COUNT - 1
        bounds = {"partition_id": (0, P - 1), "source": (-1, member),
                  "destination": (-1, member)}
        values = (partition_id, source, source_current_index, source_new_index,
                  destination, destination_current_index, destination_new_index)
        arrays: list[NDArray[np.int32]] = []
        for name, value in zip(COLUMNS, values):
            lo, hi = bounds.get(name, (-1, R - 1))
            arr = _check.as_int_column(value, name, minimum=lo, maximum=hi)
            if arrays and arr.shape[0] != arrays[0].shape[0]:
                raise ValueError(f"{name} has length {arr.shape[0]}, "
                                 f"expected {arrays[0].shape[0]}")
            arrays.append(arr)
        block = np.stack(arrays) if arrays[0].size else np.zeros((len(COLUMNS), 0), np.int32)
        pid, src, sni, dst, dni = block[0], block[1], block[3], block[4], block[6]
        if pid.size > 1 and (pid[1:] < pid[:-1]).any():
            k = int(np.flatnonzero(pid[1:] < pid[:-1])[0]) + 1
            raise ValueError(f"partition_id must be ascending (a plan lists its partitions "
                             f"in order), but decision {k} has {pid[k]} after {pid[k - 1]}")
        broken = ((dni >= 0) != (dst >= 0)) | ((sni >= 0) & (src < 0))
        if broken.any():
            k = int(np.flatnonzero(broken)[0])
            raise ValueError(f"decision {k} is inconsistent: a new index needs a member "
                             f"(destination_new_index with destination, source_new_index "
                             f"with source), got {tuple(int(x) for x in block[1:, k])}")
        derived_kind, derived_instant = _planner.classify(block)
        if kind is not None:
            given = _check.as_int_column(kind, "kind", minimum=0, maximum=len(KINDS) - 1)
            if given.shape[0] != block.shape[1]:
                raise ValueError(f"kind has length {given.shape[0]}, expected "
                                 f"{block.shape[1]}")
            _agree(given, derived_kind, "kind", lambda v: KINDS[v].name)
        if instant is not None:
            flags = _check.as_bool_column(instant, "instant", block.shape[1])
            _agree(flags, derived_instant, "instant", bool)
        self._init(_check.frozen(block), derived_kind, derived_instant, fixed, prio)

    def _init(self, block: NDArray[np.int32], kind: NDArray[np.int8],
              instant: NDArray[np.bool_], target: NDArray[np.int32] | None,
              prioritized: bool) -> None:
        """Take ``block`` (7, N) int32 with contiguous rows, ``kind`` int8 and ``instant``
        bool of length N, ``target`` or None (checked by the caller); each becomes
        immutable (copied unless it already is)."""
        object.__setattr__(self, "_columns", _owned(block))
        object.__setattr__(self, "kind", _owned(kind))
        object.__setattr__(self, "instant", _owned(instant))
        object.__setattr__(self, "target", None if target is None else _owned(target))
        object.__setattr__(self, "prioritized", bool(prioritized))

    @classmethod
    def _from_kernel(cls, block: NDArray[np.int32], kind: NDArray[np.int8],
                     instant: NDArray[np.bool_], target: NDArray[np.int32] | None,
                     prioritized: bool) -> MigrationPlan:
        """Wrap the planner kernel's fresh output without re-checking it."""
        self = object.__new__(cls)
        self._init(block, kind, instant, target, prioritized)
        return self

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("MigrationPlan is immutable")

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # pickled as its JSON document, validated again when unpickled
        return (_plan_from_json, (self.to_json(),))

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
                    | Sequence[int]) -> MigrationPlan: ...

    def __getitem__(self, item: int | np.integer[Any] | slice | NDArray[np.bool_]
                    | NDArray[np.integer[Any]] | Sequence[int]) -> Migration | MigrationPlan:
        if isinstance(item, (bool, np.bool_)):
            raise TypeError("a plan is indexed by a position, a slice, a mask array or "
                            "positions, not a bool")
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
              prioritized: bool | None = None) -> MigrationPlan:
        """The sub-plan of the decisions ``index`` selects (a slice, a mask or positions)."""
        block: NDArray[np.int32] = self._columns[:, index]
        kind, instant = self.kind[index], self.instant[index]
        if not isinstance(index, slice):     # positions or a mask: order must hold
            pid = block[0]
            if pid.size > 1 and (pid[1:] < pid[:-1]).any():
                raise ValueError("a sub-plan must keep the plan's partition order "
                                 "(partition ids ascending)")
        if block.shape[1] > 1 and block.strides[1] != block.itemsize:
            # a stepped slice: rows contiguous again (the kernels read them as such)
            block = np.ascontiguousarray(block)
            kind, instant = np.ascontiguousarray(kind), np.ascontiguousarray(instant)
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
    def queued(self) -> MigrationPlan:
        """The decisions the migration manager queues (``~instant``), order kept."""
        return self._take(~self.instant)

    def for_partition(self, partition_id: int) -> MigrationPlan:
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
    def from_json(cls, text: str | bytes | bytearray, *,
                  source: str | None = None) -> MigrationPlan:
        """Inverse of :meth:`to_json`.

        Parameters
        ----------
        text : str, bytes or bytearray
            The JSON document (bytes: UTF-8).
        source : str, optional
            Where the text came from (a file name), for the error message.

        Raises
        ------
        ValueError
            For every malformed document: not JSON, too deeply nested, not a plan
            document (format), a missing or unexpected field, a value of the wrong type
            (``"false"`` for a bool, ``3.9`` or ``2**32`` for an int), a target whose rows
            do not have ``replica_count`` slots, an invalid plan (see the class). One
            message naming the document (``source``) and the problem.
        """
        label = "MigrationPlan JSON" if source is None else f"MigrationPlan JSON {source}"
        try:
            if isinstance(text, (bytes, bytearray)):
                text = bytes(text).decode("utf-8")
            if not isinstance(text, str):
                raise TypeError(f"text must be str or bytes, got {type(text).__name__}")
            doc = json.loads(text)
        except (ValueError, TypeError, RecursionError) as exc:
            raise ValueError(f"{label} is not a JSON document: {exc}") from None
        try:
            return _plan_of_document(doc)
        except (ValueError, TypeError, RecursionError) as exc:
            raise ValueError(f"{label} is not a valid plan document: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to the file ``path`` (UTF-8)."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MigrationPlan:
        """Read a plan written by :meth:`save` (or any :meth:`to_json` text).

        Raises
        ------
        OSError
            ``path`` cannot be opened.
        ValueError
            Anything wrong with the content (see :meth:`from_json`); the message names
            the file.
        """
        with open(path, "rb") as fh:
            data = fh.read()
        return cls.from_json(data, source=_check.file_name(path))

    def to_pandas(self) -> Any:   # pandas.DataFrame (pandas has no type information here)
        """A pandas DataFrame (one row per decision; ``kind`` categorical by name)."""
        import pandas as pd  # optional dependency

        data = dict(zip(COLUMNS, self._columns))
        data["kind"] = pd.Categorical.from_codes(self.kind.astype(np.int64),
                                                 categories=[k.name for k in KINDS])
        data["instant"] = self.instant
        return pd.DataFrame(data)


def _agree(given: NDArray[Any], derived: NDArray[Any], name: str, show: Any) -> None:
    """A given ``kind``/``instant`` column must say what the decision fields say."""
    wrong = np.flatnonzero(given != derived)
    if wrong.size:
        k = int(wrong[0])
        raise ValueError(f"{name}[{k}] = {show(int(given[k]))} contradicts the decision's "
                         f"fields, which make it {show(int(derived[k]))}")


def _plan_of_document(doc: object) -> MigrationPlan:
    """A plan from a parsed :meth:`MigrationPlan.to_json` document, every field checked
    (TypeError/ValueError naming it)."""
    if not isinstance(doc, dict):
        raise TypeError(f"the document must be a JSON object, got {type(doc).__name__}")
    if doc.get("format") != FORMAT:
        raise ValueError(f"format must be {FORMAT!r}, got {doc.get('format')!r}")
    unknown = sorted(set(doc) - _DOC_KEYS)
    if unknown:
        raise ValueError(f"unexpected fields {unknown}")
    cols = doc.get("columns")
    if not isinstance(cols, dict):
        raise TypeError(f"columns must be an object, got {type(cols).__name__}")
    if set(cols) != set(COLUMNS):
        raise ValueError(f"columns must be exactly {list(COLUMNS)}, got {sorted(cols)}")
    for name in COLUMNS:
        if not isinstance(cols[name], list):
            raise TypeError(f"columns.{name} must be a list, got {type(cols[name]).__name__}")
    target = doc.get("target")
    count = doc.get("replica_count")
    table = None
    if target is None:
        if count is not None:
            raise ValueError("replica_count is given but target is not")
    else:
        R = _check.check_int(count, "replica_count", minimum=1,
                             maximum=_check.MAX_REPLICA_COUNT)
        if not isinstance(target, list) or not all(isinstance(r, list) for r in target):
            raise TypeError("target must be a list of rows (lists)")
        lengths = {len(r) for r in target}
        if lengths - {R}:
            raise ValueError(f"target rows must have replica_count={R} slots, "
                             f"got rows of {sorted(lengths - {R})}")
        table = (np.zeros((0, R), dtype=np.int32) if not target
                 else _check.as_int32_array(target, "target", 2))
    prioritized = _check.check_bool(doc.get("prioritized", True), "prioritized")
    p, s, sci, sni, d, dci, dni = (cols[c] for c in COLUMNS)
    return MigrationPlan(p, s, sci, sni, d, dci, dni, target=table, prioritized=prioritized)


def _plan_from_json(text: str) -> MigrationPlan:
    """Unpickling (see ``MigrationPlan.__reduce__``)."""
    return MigrationPlan.from_json(text)
