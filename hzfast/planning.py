"""Migration planning over whole replica tables, exactly as Hazelcast decides it.

Given the current and the target replica tables of a cluster (``int32``, shape
``(P, R)``, ``R <= 7``, ``-1`` = empty slot), :func:`plan_migrations` decides for every
partition, in one Cython pass, the migrations Hazelcast's ``MigrationPlanner`` decides
(after reverting cycles, :func:`fix_cycles`), in the same order, and the order in which
Hazelcast's migration manager queues them (:func:`prioritize`). :func:`apply_migrations`
replays a plan, :func:`diff` compares two tables. See DESIGN §4-§6.

All functions validate their input (dtype int32, C-contiguous, ``1 <= R <= 7``, member
indices ``>= -1``, no member twice in a row) and never modify it.
"""
from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from hzfast import _check
from hzfast import _planner
from hzfast._check import MAX_REPLICA_COUNT

__all__ = [
    "Migration", "MigrationKind", "MigrationPlan", "Schedule", "TableDiff",
    "apply_migrations", "diff", "find_cycles", "fix_cycles", "plan_migrations",
    "prioritize", "schedule",
]

_FIELDS = ("source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")
_COLUMNS = ("partition_id",) + _FIELDS
_CAMEL = {"source": "source", "source_current_index": "sourceCurrentIndex",
          "source_new_index": "sourceNewIndex", "destination": "destination",
          "destination_current_index": "destinationCurrentIndex",
          "destination_new_index": "destinationNewIndex"}


class MigrationKind(enum.IntEnum):
    """Kind of a planner decision, derived from its six fields (DESIGN §5)."""

    REMOVE = 0                    #: no destination: the replica is dropped (instant)
    COPY = 1                      #: no source, new member copied into a backup slot
    ASSIGN_LOST_OWNER = 2         #: COPY into the owner slot (dni == 0): instant
    SHIFT_UP = 3                  #: no source, a present member moves to a hotter slot
    MOVE = 4                      #: source replaced, source dropped
    SHIFT_DOWN = 5                #: source replaced and moved to a colder slot
    SHIFT_UP_SOURCE_DROPPED = 6   #: shift up over a source that is dropped
    SHIFT_UP_SHIFT_DOWN = 7       #: shift up, the source moves to a colder slot


_KINDS = tuple(MigrationKind)


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
        return tuple(self[1:7])


# --------------------------------------------------------------------- input
def _table(value, name: str) -> np.ndarray:
    arr = _check.as_int32_array(value, name, 2)
    R = arr.shape[1]
    if R < 1 or R > MAX_REPLICA_COUNT:
        raise ValueError(f"{name} must have 1..{MAX_REPLICA_COUNT} replica columns, got {R}")
    return arr


def _raise_status(status, arr, name, row, col):
    if status == _planner.BELOW_MINUS_ONE:
        raise ValueError(f"{name}[{row}, {col}] = {arr[row, col]}: member indices must be >= -1")
    if status == _planner.DUPLICATE:
        raise ValueError(f"{name}: partition {row} holds member {arr[row, col]} twice")
    raise ValueError(f"{name}: invalid row {row}")  # pragma: no cover


def _one(value, name: str):
    """Validated table -> (array, max_member)."""
    a = _table(value, name)
    status, _, row, col, _, mx = _planner.check_pair(a)
    if status:
        _raise_status(status, a, name, row, col)
    return a, mx


def _pair(current, target, name_a: str = "current", name_b: str = "target"):
    """Validated pair -> (a, b, mismatching slots, max_member)."""
    a = _table(current, name_a)
    b = _table(target, name_b)
    _check.same_shape(a, b, name_a, name_b)
    status, which, row, col, mismatches, mx = _planner.check_pair(a, b)
    if status:
        _raise_status(status, (a, b)[which], (name_a, name_b)[which], row, col)
    return a, b, mismatches, mx


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


# ------------------------------------------------------------------- cycles
def find_cycles(current, target) -> np.ndarray:
    """Which partitions' target holds a migration cycle (Hazelcast ``isCyclic``).

    Index ``i`` maps to the position of ``current[p, i]`` in ``target[p]``; a cycle is a
    closed chain of such moves (``[A, B] -> [B, A]``). Hazelcast never executes cycles.

    Parameters
    ----------
    current, target : ndarray[int32] of shape (P, R), or PartitionTable
        Replica tables (``-1`` = empty slot), ``1 <= R <= 7``.

    Returns
    -------
    ndarray[bool] of shape (P,)
        True where the partition's target contains a cycle.

    Raises
    ------
    TypeError
        Wrong dtype or type.
    ValueError
        Shapes differ, R outside 1..7, non-contiguous, index < -1 or a member twice in
        a row (the message names the argument and the partition).

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1, -1], [0, 1, 2]], dtype=np.int32)
    >>> tgt = np.array([[1, 0, -1], [1, 2, -1]], dtype=np.int32)
    >>> hzfast.find_cycles(cur, tgt).tolist()
    [True, False]
    """
    a, b, _, _ = _pair(current, target)
    return _planner.find_cycles(a, b)


def fix_cycles(current, target) -> np.ndarray:
    """Copy of ``target`` with every cycle reverted to the current layout.

    Hazelcast's ``fixCycle``: every index on a cycle gets its current member back
    (``target[p, k] = current[p, k]``), so the cycle is not migrated this round.

    Parameters
    ----------
    current, target : ndarray[int32] of shape (P, R), or PartitionTable
        Replica tables (``-1`` = empty slot), ``1 <= R <= 7``.

    Returns
    -------
    ndarray[int32] of shape (P, R)
        A new array; the inputs are not modified.

    Raises
    ------
    TypeError, ValueError
        As :func:`find_cycles`.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1, 2]], dtype=np.int32)
    >>> hzfast.fix_cycles(cur, np.array([[2, 0, 1]], dtype=np.int32)).tolist()
    [[0, 1, 2]]
    """
    a, b, _, _ = _pair(current, target)
    return _planner.fix_cycles(a, b)


# --------------------------------------------------------------------- plan
def _kinds_of(src, sni, dst, dci, dni) -> np.ndarray:
    kind = np.where(sni < 0, MigrationKind.SHIFT_UP_SOURCE_DROPPED,
                    MigrationKind.SHIFT_UP_SHIFT_DOWN)
    kind = np.where(dci < 0, np.where(sni < 0, MigrationKind.MOVE, MigrationKind.SHIFT_DOWN), kind)
    nosrc = np.where(dci < 0, np.where(dni == 0, MigrationKind.ASSIGN_LOST_OWNER,
                                       MigrationKind.COPY), MigrationKind.SHIFT_UP)
    kind = np.where(src < 0, nosrc, kind)
    kind = np.where(dst < 0, MigrationKind.REMOVE, kind)
    return kind.astype(np.int8)


def _instant_of(src, dst, dci, dni) -> np.ndarray:
    return (dst < 0) | ((src < 0) & (dci < 0) & (dni == 0))


class MigrationPlan:
    """Columnar migration plan (one entry per planner decision).

    Attributes
    ----------
    partition_id, source, source_current_index, source_new_index, destination, \
destination_current_index, destination_new_index : ndarray[int32] of shape (N,)
        The decision fields, ``-1`` = none. Partitions ascending.
    kind : ndarray[int8] of shape (N,)
        :class:`MigrationKind` values.
    instant : ndarray[bool] of shape (N,)
        REMOVE and lost-owner assignments: applied at once, never queued.
    target : ndarray[int32] of shape (P, R) or None
        The cycle-fixed target the plan leads to.
    prioritized : bool
        Order contract: False = every decision in emission order per partition; True =
        instant decisions first (emission order), then the queued ones prioritized.

    All arrays are read-only. ``len(plan)`` is N; iterating yields :class:`Migration`
    records; ``plan[i]`` is one record, ``plan[mask_or_slice]`` a sub-plan.
    """

    __slots__ = ("partition_id", "source", "source_current_index", "source_new_index",
                 "destination", "destination_current_index", "destination_new_index",
                 "kind", "instant", "target", "prioritized")

    def __init__(self, partition_id, source, source_current_index, source_new_index,
                 destination, destination_current_index, destination_new_index,
                 kind=None, instant=None, target=None, prioritized=True):
        cols = []
        n = None
        for name, value in zip(_COLUMNS, (partition_id, source, source_current_index,
                                          source_new_index, destination,
                                          destination_current_index, destination_new_index)):
            arr = np.ascontiguousarray(value, dtype=np.int32) if not (
                isinstance(value, np.ndarray) and value.dtype == np.int32
                and value.flags.c_contiguous) else value
            if arr.ndim != 1:
                raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValueError(f"{name} has length {arr.shape[0]}, expected {n}")
            cols.append(arr)
        for name, arr in zip(_COLUMNS, cols):
            object.__setattr__(self, name, _frozen(arr))
        src, dst, dci, dni, sni = (cols[1], cols[4], cols[5], cols[6], cols[3])
        if kind is None:
            kind = _kinds_of(src, sni, dst, dci, dni)
        if instant is None:
            instant = _instant_of(src, dst, dci, dni)
        object.__setattr__(self, "kind", _frozen(np.asarray(kind, dtype=np.int8)))
        object.__setattr__(self, "instant", _frozen(np.asarray(instant, dtype=bool)))
        if target is not None:
            target = _frozen(np.ascontiguousarray(target, dtype=np.int32))
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "prioritized", bool(prioritized))

    @classmethod
    def _from_kernel(cls, cols, target, prioritized) -> "MigrationPlan":
        """Wrap the planner kernel's fresh output (``cols`` = the seven int32 columns, kind
        int8, instant bool; all C-contiguous, equal length) without re-checking it."""
        self = object.__new__(cls)
        for name, arr in zip(_COLUMNS + ("kind", "instant"), cols):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        target.setflags(write=False)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "prioritized", bool(prioritized))
        return self

    def __setattr__(self, name, value):
        raise AttributeError("MigrationPlan is immutable")

    # -- container protocol
    def __len__(self) -> int:
        return self.partition_id.shape[0]

    def __iter__(self):
        kinds = _KINDS
        for row in zip(*(getattr(self, c).tolist() for c in _COLUMNS),
                       self.kind.tolist(), self.instant.tolist()):
            yield Migration(*row[:7], kinds[row[7]], row[8])

    def __getitem__(self, item):
        if isinstance(item, (int, np.integer)):
            i = int(item)
            n = len(self)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"migration index {item} out of range for {n} migrations")
            return Migration(*(int(getattr(self, c)[i]) for c in _COLUMNS),
                             _KINDS[self.kind[i]], bool(self.instant[i]))
        return self._take(item)

    def _take(self, index, prioritized=None) -> "MigrationPlan":
        return MigrationPlan(*(np.ascontiguousarray(getattr(self, c)[index]) for c in _COLUMNS),
                             kind=self.kind[index], instant=self.instant[index],
                             target=self.target,
                             prioritized=self.prioritized if prioritized is None else prioritized)

    def __eq__(self, other):
        if not isinstance(other, MigrationPlan):
            return NotImplemented
        same_target = ((self.target is None and other.target is None) or
                       (self.target is not None and other.target is not None
                        and np.array_equal(self.target, other.target)))
        return same_target and self.prioritized == other.prioritized and all(
            np.array_equal(getattr(self, c), getattr(other, c)) for c in _COLUMNS)

    __hash__ = None

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

    def decisions(self) -> np.ndarray:
        """ndarray[int32] of shape (N, 6): the six decision fields as rows."""
        return np.stack([getattr(self, c) for c in _FIELDS], axis=1) if len(self) else \
            np.empty((0, 6), dtype=np.int32)

    def counts(self) -> dict:
        """``{MigrationKind: count}`` for every kind (zeros included)."""
        c = np.bincount(self.kind, minlength=len(_KINDS)) if len(self) else \
            np.zeros(len(_KINDS), dtype=np.int64)
        return {k: int(c[k]) for k in _KINDS}

    def member_counts(self, member_count: int | None = None):
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
        top = -1
        for arr in (self.source, self.destination):
            if len(arr):
                top = max(top, int(arr.max()))
        if self.target is not None and self.target.size:
            top = max(top, int(self.target.max()))
        if member_count is None:
            member_count = top + 1
        else:
            member_count = _check.check_int(member_count, "member_count", minimum=0)
            if top >= member_count:
                raise ValueError(f"member_count={member_count} but the plan uses member {top}")
        dst = self.destination[self.destination >= 0]
        src = self.source[self.source >= 0]
        return (np.bincount(dst, minlength=member_count).astype(np.int64),
                np.bincount(src, minlength=member_count).astype(np.int64))

    # -- serialisation
    def to_json(self) -> str:
        """JSON text: the seven int columns, the target and the order flag."""
        doc = {"format": "hzfast.MigrationPlan/1", "prioritized": self.prioritized,
               "columns": {c: getattr(self, c).tolist() for c in _COLUMNS},
               "target": None if self.target is None else self.target.tolist(),
               "replica_count": None if self.target is None else int(self.target.shape[1])}
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text) -> "MigrationPlan":
        """Inverse of :meth:`to_json` (raises ValueError on a malformed document)."""
        try:
            doc = json.loads(text)
            cols = doc["columns"]
            target = doc.get("target")
            if target is not None:
                target = np.asarray(target, dtype=np.int32).reshape(-1, doc["replica_count"])
            return cls(*(np.asarray(cols[c], dtype=np.int32) for c in _COLUMNS),
                       target=target, prioritized=doc.get("prioritized", True))
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a MigrationPlan JSON document: {exc}") from None

    def to_pandas(self):
        """A pandas DataFrame (one row per decision; ``kind`` categorical by name)."""
        import pandas as pd  # optional dependency

        data = {c: getattr(self, c) for c in _COLUMNS}
        data["kind"] = pd.Categorical.from_codes(self.kind.astype(np.int64),
                                                 categories=[k.name for k in _KINDS])
        data["instant"] = self.instant
        return pd.DataFrame(data)


def plan_migrations(current, target, *, prioritize: bool = True) -> MigrationPlan:
    """Hazelcast's migration decisions for every partition, in one pass.

    Per partition: cycles of ``target`` are reverted (:func:`fix_cycles`), then
    Hazelcast's ``MigrationPlanner.planMigrations`` decides the migrations (DESIGN §5);
    with ``prioritize=True`` the queued part is reordered as the migration manager does
    (``prioritizeCopiesAndShiftUps``).

    Parameters
    ----------
    current, target : ndarray[int32] of shape (P, R), or PartitionTable
        The current and the target replica tables (``-1`` = empty slot), ``1 <= R <= 7``.
    prioritize : bool, default True
        False: every decision in the planner's emission order. True: per partition the
        instant decisions (REMOVE, lost-owner assignment) first in emission order, then
        the queued migrations in prioritized order.

    Returns
    -------
    MigrationPlan
        Partitions ascending; ``plan.target`` is the cycle-fixed target.

    Raises
    ------
    TypeError
        Wrong dtype or type.
    ValueError
        Shapes differ, R outside 1..7, non-contiguous, index < -1 or a member twice in
        a row of either table (the message names the argument and the partition).

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1, 2]], dtype=np.int32)
    >>> tgt = np.array([[3, 1, 4]], dtype=np.int32)
    >>> [(m.kind.name, m.source, m.destination) for m in hzfast.plan_migrations(cur, tgt)]
    [('MOVE', 0, 3), ('MOVE', 2, 4)]
    """
    a = _table(current, "current")
    b = _table(target, "target")
    _check.same_shape(a, b, "current", "target")
    # validation is fused into the planner's single pass
    status, which, row, col, fixed, cols = _planner.plan(a, b, bool(prioritize))
    if status == _planner.INTERNAL:  # pragma: no cover - impossible on validated input
        raise RuntimeError(f"migration planner invariant broken at partition {row}")
    if status:
        _raise_status(status, (a, b)[which], ("current", "target")[which], row, col)
    return MigrationPlan._from_kernel(cols, fixed, prioritize)


# --------------------------------------------------------------- prioritize
def _fields_of(d, i):
    if isinstance(d, Migration):
        return d[1:7]
    if isinstance(d, Mapping):
        try:
            if "source_current_index" in d:
                return tuple(d[f] for f in _FIELDS)
            return tuple(d[_CAMEL[f]] for f in _FIELDS)
        except KeyError as exc:
            raise ValueError(f"decisions[{i}] lacks the field {exc}") from None
    if isinstance(d, (tuple, list)) and len(d) == 6:
        return tuple(d)
    raise TypeError(f"decisions[{i}] must be a Migration, a dict with the six decision "
                    f"fields or a 6-tuple, got {type(d).__name__}")


def _none(v):
    return -1 if v is None else v


def prioritize(decisions):
    """Hazelcast's ``prioritizeCopiesAndShiftUps`` alone.

    Walking the queue left to right, each COPY or SHIFT UP (``sci == -1``) moves left
    past earlier entries, stopping just after the first entry that is itself
    ``sci == -1``, shares its destination as source or destination, or is a SHIFT DOWN
    to a hotter index than its target.

    Parameters
    ----------
    decisions : sequence or MigrationPlan
        One partition's queue: :class:`Migration` records, dicts with the six fields
        (snake_case or Hazelcast's camelCase names; members may be any comparable values,
        ``None`` = none) or 6-tuples. The whole sequence is prioritized as given.
        A :class:`MigrationPlan` (any number of partitions, each a run of equal
        ``partition_id``) is reordered to its ``prioritized=True`` contract: instant
        decisions first in their order, then the rest prioritized.

    Returns
    -------
    list, tuple or MigrationPlan
        The same elements reordered, as the input's type (other sequences give a list).

    Raises
    ------
    TypeError, ValueError
        An element that is not a decision.

    Examples
    --------
    >>> import hzfast
    >>> queue = [(0, 0, 2, 1, -1, 0), (-1, -1, -1, 2, -1, 1)]   # SHIFT DOWN, COPY
    >>> hzfast.prioritize(queue)
    [(-1, -1, -1, 2, -1, 1), (0, 0, 2, 1, -1, 0)]
    """
    if isinstance(decisions, MigrationPlan):
        order = _planner.prioritize_columns(
            decisions.partition_id, decisions.source, decisions.source_current_index,
            decisions.source_new_index, decisions.destination,
            decisions.destination_current_index, decisions.destination_new_index, True)
        return decisions._take(order, prioritized=True)
    if isinstance(decisions, (str, bytes)) or not hasattr(decisions, "__len__"):
        raise TypeError(f"decisions must be a sequence or a MigrationPlan, "
                        f"got {type(decisions).__name__}")
    from hzfast.reference.planning import prioritize_order

    items = list(decisions)
    fields = [_fields_of(d, i) for i, d in enumerate(items)]
    keyed = []
    for i, f in enumerate(fields):
        src, sci, sni, dst, dci, dni = f
        for name, v in (("source_current_index", sci), ("source_new_index", sni),
                        ("destination_new_index", dni)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"decisions[{i}].{name} must be an int, got {type(v).__name__}")
        keyed.append((_none(src), int(sci), int(sni), _none(dst), dci, int(dni)))
    out = [items[j] for j in prioritize_order(keyed)]
    return tuple(out) if isinstance(decisions, tuple) else out


# -------------------------------------------------------------------- apply
_APPLY_ERRORS = {
    _planner.BAD_PARTITION: "partition id out of range",
    _planner.BAD_INDEX: "replica index out of range or inconsistent with its member",
    _planner.BAD_MEMBER: "member index < -1",
    _planner.SOURCE_MISMATCH: "the source is not at source_current_index",
    _planner.DESTINATION_MISMATCH: "the destination is not at destination_current_index",
    _planner.DUPLICATE: "it would put a member twice in the partition's row",
    _planner.BELOW_MINUS_ONE: "member index < -1",
}


def apply_migrations(replicas, versions, plan: MigrationPlan):
    """Apply a plan's decisions in order; return new ``(replicas, versions)``.

    Each decision is applied as Hazelcast's ``applyMigration`` does: ``S[sci] = -1``,
    ``S[dci] = -1``, ``S[dni] = destination``, ``S[sni] = source`` (each when its index is
    not -1) and the partition version rises by ``1 + (sni > -1) + (dci > -1)``.

    Parameters
    ----------
    replicas : ndarray[int32] of shape (P, R), or PartitionTable
    versions : ndarray[int32] of shape (P,), or None
        None: the table's versions when ``replicas`` is a PartitionTable, else zeros.
    plan : MigrationPlan

    Returns
    -------
    (ndarray[int32] of shape (P, R), ndarray[int32] of shape (P,))
        New arrays; the inputs are never modified (not even partially on error).

    Raises
    ------
    TypeError
        Wrong dtype/type, or ``plan`` is not a MigrationPlan.
    ValueError
        Invalid table or versions, a plan for another shape, a decision that does not
        match the table (source/destination not where it says, index out of range) or
        that would put a member twice in a row; the message names the migration and
        the partition.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1, 2]], dtype=np.int32)
    >>> plan = hzfast.plan_migrations(cur, np.array([[3, 1, 4]], dtype=np.int32))
    >>> reps, vers = hzfast.apply_migrations(cur, np.zeros(1, np.int32), plan)
    >>> reps.tolist(), vers.tolist()
    ([[3, 1, 4]], [2])
    """
    if not isinstance(plan, MigrationPlan):
        raise TypeError(f"plan must be a MigrationPlan, got {type(plan).__name__}")
    table_versions = getattr(replicas, "versions", None) if not isinstance(
        replicas, np.ndarray) else None
    reps, _ = _one(replicas, "replicas")
    P = reps.shape[0]
    if versions is None:
        versions = table_versions if table_versions is not None else np.zeros(P, np.int32)
    vers = _check.as_versions(versions, P, "versions")
    if plan.target is not None and plan.target.shape != reps.shape:
        raise ValueError(f"plan is for a table of shape {plan.target.shape}, "
                         f"replicas has shape {reps.shape}")
    new_reps = reps.copy()
    new_vers = vers.copy()
    status, bad = _planner.apply(new_reps, new_vers, plan.partition_id, plan.source,
                                 plan.source_current_index, plan.source_new_index,
                                 plan.destination, plan.destination_current_index,
                                 plan.destination_new_index)
    if status:
        raise ValueError(f"migration {bad} of the plan (partition {plan.partition_id[bad]}, "
                         f"decision {tuple(int(x) for x in plan[bad].decision)}) cannot be "
                         f"applied: {_APPLY_ERRORS.get(status, 'invalid')}")
    return new_reps, new_vers


# --------------------------------------------------------------------- diff
class TableDiff(NamedTuple):
    """Result of :func:`diff`."""

    changed_slots: np.ndarray       #: ndarray[bool] (P, R): current != target
    changed_partitions: np.ndarray  #: ndarray[int64] (K,): partitions with a change
    gains: np.ndarray               #: ndarray[int64] (M, R): slots member m gains at index r
    losses: np.ndarray              #: ndarray[int64] (M, R): slots member m loses at index r
    slot_moves: int                 #: number of changed slots


def diff(current, target, *, member_count: int | None = None) -> TableDiff:
    """Compare two replica tables slot by slot.

    Parameters
    ----------
    current, target : ndarray[int32] of shape (P, R), or PartitionTable
    member_count : int, optional
        Rows of ``gains``/``losses``; default: largest member in either table + 1.

    Returns
    -------
    TableDiff
        ``changed_slots`` ndarray[bool] (P, R), ``changed_partitions`` ndarray[int64],
        ``gains``/``losses`` ndarray[int64] (M, R) (per member, per replica index: slots
        where it appears in target but not current / current but not target at that
        index), ``slot_moves`` int (changed slots in total).

    Raises
    ------
    TypeError, ValueError
        As :func:`find_cycles`; ValueError when a member is ``>= member_count``.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> d = hzfast.diff(np.array([[0, 1]], np.int32), np.array([[0, 2]], np.int32))
    >>> d.slot_moves, d.changed_partitions.tolist(), d.gains[2].tolist()
    (1, [0], [0, 1])
    """
    a, b, _, mx = _pair(current, target)
    if member_count is None:
        member_count = mx + 1
    else:
        member_count = _check.check_int(member_count, "member_count", minimum=0)
        if mx >= member_count:
            raise ValueError(f"member_count={member_count} but the tables hold member {mx}")
    mask, changed, gains, losses, moves = _planner.diff(a, b, member_count)
    return TableDiff(mask, changed, gains, losses, int(moves))


from hzfast.scheduling import Schedule, schedule  # noqa: E402  (re-exported: hzfast.schedule)
