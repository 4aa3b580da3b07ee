"""Migration planning over whole replica tables, exactly as Hazelcast decides it.

Given the current and the target replica tables of a cluster (``int32``, shape
``(P, R)``, ``R <= 7``, ``-1`` = empty slot), :func:`plan_migrations` decides for every
partition, in one Cython pass, the migrations Hazelcast's ``MigrationPlanner`` decides
(after reverting cycles, :func:`fix_cycles`), in the same order, and the order in which
Hazelcast's migration manager queues them (:func:`prioritize`). See docs/design.md
sections 4 and 5.

All functions validate their input (dtype int32, C-contiguous, ``1 <= R <= 7``, member
indices ``>= -1``, no member twice in a row) and never modify it.
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from hzfast import _check
from hzfast._typing import TableLike
from hzfast.migration import _planner
from hzfast.migration.plan import COLUMNS, FIELDS, Migration, MigrationPlan

__all__ = ["find_cycles", "fix_cycles", "plan_migrations", "prioritize"]

_CAMEL = {"source": "source", "source_current_index": "sourceCurrentIndex",
          "source_new_index": "sourceNewIndex", "destination": "destination",
          "destination_current_index": "destinationCurrentIndex",
          "destination_new_index": "destinationNewIndex"}


# ------------------------------------------------------------------- cycles
def find_cycles(current: TableLike, target: TableLike) -> NDArray[np.bool_]:
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
    a, b, _, _ = _check.check_pair(current, target)
    return _planner.find_cycles(a, b)


def fix_cycles(current: TableLike, target: TableLike) -> NDArray[np.int32]:
    """Copy of ``target`` with every cycle reverted to the current layout.

    Hazelcast's ``fixCycle``: every index on a cycle gets its current member back
    (``target[p, k] = current[p, k]``), so the cycle is not migrated this round.

    Parameters
    ----------
    current, target
        As :func:`find_cycles`.

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
    >>> old = np.array([[0, 1, 2]], dtype=np.int32)
    >>> hzfast.fix_cycles(old, old[:, [2, 0, 1]]).tolist()    # a rotation is one cycle
    [[0, 1, 2]]
    """
    a, b, _, _ = _check.check_pair(current, target)
    return _planner.fix_cycles(a, b)


# --------------------------------------------------------------------- plan
def plan_migrations(current: TableLike, target: TableLike, *,
                    prioritize: bool = True) -> MigrationPlan:
    """Hazelcast's migration decisions for every partition, in one pass.

    Per partition: cycles of ``target`` are reverted (:func:`fix_cycles`), then
    Hazelcast's ``MigrationPlanner.planMigrations`` decides the migrations (docs/design.md §5);
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
    TypeError, ValueError
        As :func:`find_cycles`.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1, 2]], dtype=np.int32)
    >>> tgt = np.array([[3, 1, 4]], dtype=np.int32)
    >>> [(m.kind.name, m.source, m.destination) for m in hzfast.plan_migrations(cur, tgt)]
    [('MOVE', 0, 3), ('MOVE', 2, 4)]
    """
    return _plan(current, target, bool(prioritize), False)[0]


def _plan_with_endpoints(current: TableLike, target: TableLike, *, prioritize: bool = True,
                         keep_target: bool = True) -> tuple[MigrationPlan, NDArray[np.int32]]:
    """:func:`plan_migrations` and, made in the same pass, each decision's source endpoint
    for the executor (a fresh int32 array, -1 for instant decisions): what
    :class:`hzfast.migration.Executor` would derive from ``current``'s owner slots. For
    the master's planning step (``Executor._planned``), which reads only the decisions:
    without ``keep_target`` the plan has no ``target`` (the kernel writes no (P, R) copy)."""
    plan, endpoint = _plan(current, target, bool(prioritize), True, keep_target)
    assert endpoint is not None
    return plan, endpoint


def _plan(current: TableLike, target: TableLike, prioritize: bool, endpoints: bool,
          keep_target: bool = True) -> tuple[MigrationPlan, NDArray[np.int32] | None]:
    # private snapshots: the kernel validates and plans what no other thread can change
    a = _check.as_table(current, "current")
    b = _check.as_table(target, "target")
    _check.same_shape(a, b, "current", "target")
    # validation is fused into the planner's single pass
    status, which, row, col, fixed, block, kind, instant, endpoint = _planner.plan(
        a, b, prioritize, _check.MAX_MEMBER_COUNT, endpoints, keep_target)
    if status == _check.INTERNAL:  # pragma: no cover - impossible on validated input
        raise RuntimeError(f"migration planner invariant broken at partition {row}")
    _check.raise_for_status(status, ("current", "target")[which], (a, b)[which], row, col)
    assert block is not None and kind is not None and instant is not None   # status OK
    assert (fixed is not None) == keep_target
    return MigrationPlan._from_kernel(block, kind, instant, fixed, prioritize), endpoint


# --------------------------------------------------------------- prioritize
def _fields_of(d: object, i: int) -> tuple[Any, ...]:
    if isinstance(d, Migration):
        return d[1:7]
    if isinstance(d, Mapping):
        try:
            if "source_current_index" in d:
                return tuple(d[f] for f in FIELDS)
            return tuple(d[_CAMEL[f]] for f in FIELDS)
        except KeyError as exc:
            raise ValueError(f"decisions[{i}] lacks the field {exc}") from None
    if isinstance(d, (tuple, list)) and len(d) == 6:
        return tuple(d)
    raise TypeError(f"decisions[{i}] must be a Migration, a dict with the six decision "
                    f"fields or a 6-tuple, got {type(d).__name__}")


def _none(v: int | None) -> int:
    return -1 if v is None else v


def _code(codes: dict[Hashable, int], member: Hashable) -> int:
    """A member's number for the kernel (``None`` and -1 = no member)."""
    if member is None or (isinstance(member, (int, np.integer)) and member == -1):
        return -1
    return codes.setdefault(member, len(codes))


_D = TypeVar("_D")


@overload
def prioritize(decisions: MigrationPlan) -> MigrationPlan: ...
@overload
def prioritize(decisions: list[_D]) -> list[_D]: ...
@overload
def prioritize(decisions: tuple[_D, ...]) -> tuple[_D, ...]: ...
@overload
def prioritize(decisions: Sequence[_D]) -> Sequence[_D]: ...


def prioritize(decisions: MigrationPlan | Sequence[_D]) -> MigrationPlan | Sequence[_D]:
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
        order = _planner.prioritize_columns(decisions._columns, decisions.kind, True)
        return decisions._take(order, prioritized=True)
    if isinstance(decisions, (str, bytes)) or not hasattr(decisions, "__len__"):
        raise TypeError(f"decisions must be a sequence or a MigrationPlan, "
                        f"got {type(decisions).__name__}")
    items = list(decisions)
    block = np.zeros((len(COLUMNS), len(items)), dtype=np.int32)   # one run: partition 0
    codes: dict[Hashable, int] = {}   # members only meet in equality tests: number them, None -> -1
    for i, d in enumerate(items):
        src, sci, sni, dst, dci, dni = _fields_of(d, i)
        dci = _none(dci)
        for name, v in (("source_current_index", sci), ("source_new_index", sni),
                        ("destination_current_index", dci), ("destination_new_index", dni)):
            _check.check_int(v, f"decisions[{i}].{name}", minimum=-1,
                             maximum=_check.MAX_REPLICA_COUNT - 1)
        try:
            s_code, d_code = _code(codes, src), _code(codes, dst)
        except TypeError:
            raise TypeError(f"decisions[{i}]: members must be hashable values, got "
                            f"{type(src).__name__} and {type(dst).__name__}") from None
        block[1:, i] = (s_code, sci, sni, d_code, dci, dni)
    order = _planner.prioritize_columns(block, np.zeros(len(items), np.int8), False)
    out = [items[j] for j in order.tolist()]
    return tuple(out) if isinstance(decisions, tuple) else out
