"""Ignite's partition map exchange, counter side: the coordinator's rebalance decision and the
counter exchange step, over node x partition arrays (docs/design.md §9.5, §9.6).

* :func:`rebalance_plan`: ``assignPartitionStates`` / ``assignHistoricalSuppliers`` /
  ``resetOwnersByCounter`` / ``generateAssignments`` for every partition in one kernel pass
  (:mod:`hzfast.ignite._rebalance`), giving a :class:`RebalancePlan`;
* :func:`exchange`: gaps closed on a server leave, then every OWNING or MOVING copy raised to
  the partition's maximum LWM, over a list of :class:`~hzfast.ignite.counters.UpdateCounters`.

Node index order stands in for the order in which Ignite meets the nodes (§9.5).
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast import _validate
from hzfast._check import check_int
from hzfast._keys import INT64_MAX, INT64_MIN
from hzfast.ignite import _rebalance
from hzfast.ignite.counters import (
    UpdateCounterError,
    UpdateCounters,
    _finalize_error,
    finalize_blocker,
)

__all__ = [
    "FULL",
    "HISTORICAL",
    "NONE",
    "ExchangeResult",
    "PartitionState",
    "RebalanceKind",
    "RebalancePlan",
    "exchange",
    "rebalance_plan",
]


class PartitionState(enum.IntEnum):
    """``GridDhtPartitionState``, with Ignite's ordinals as codes (int8 in arrays)."""

    MOVING = 0
    OWNING = 1
    RENTING = 2
    EVICTED = 3
    LOST = 4


class RebalanceKind(enum.IntEnum):
    """How a copy is rebalanced: not at all, from the suppliers' WAL history, or in full."""

    NONE = 0
    HISTORICAL = 1
    FULL = 2


NONE = RebalanceKind.NONE
HISTORICAL = RebalanceKind.HISTORICAL
FULL = RebalanceKind.FULL

_STATE_COUNT = len(PartitionState)

_Cell = TypeVar("_Cell", np.int8, np.int64)


@dataclass(frozen=True)
class RebalancePlan:
    """The coordinator's decision for N nodes x P partitions (read-only arrays).

    Attributes
    ----------
    max_counter : ndarray[int64] of shape (P,)
        The highest counter of an OWNING copy; -1 where no copy is OWNING.
    max_owner : ndarray[bool] of shape (N, P)
        The OWNING copies holding ``max_counter`` (the possible suppliers).
    rebalance : ndarray[int8] of shape (N, P)
        :data:`NONE`, :data:`HISTORICAL` or :data:`FULL` per copy.
    supplier : ndarray[int32] of shape (N, P)
        The node a rebalancing copy demands from, -1 for none.
    from_counter : ndarray[int64] of shape (N, P)
        For a historical rebalance, the counter history starts from (the copy's counter:
        updates ``from_counter + 1 .. max_counter`` are replayed); -1 otherwise.
    """

    max_counter: NDArray[np.int64]
    max_owner: NDArray[np.bool_]
    rebalance: NDArray[np.int8]
    supplier: NDArray[np.int32]
    from_counter: NDArray[np.int64]

    def counts(self) -> dict[str, int]:
        """Copies per rebalance kind: ``{"NONE": n0, "HISTORICAL": n1, "FULL": n2}``."""
        found = np.bincount(self.rebalance.reshape(-1).astype(np.intp), minlength=3)
        return {k.name: int(found[k]) for k in RebalanceKind}


@dataclass(frozen=True)
class ExchangeResult:
    """What :func:`exchange` did.

    Attributes
    ----------
    max_lwm : ndarray[int64] of shape (P,)
        The largest LWM reported per partition (after the gaps were closed); 0 where no
        copy reported.
    finalized : list of dict
        Per node, what :meth:`UpdateCounters.finalize` returned: the closed gaps
        ``{partition: [(from, to), ...]}``.
    """

    max_lwm: NDArray[np.int64]
    finalized: list[dict[int, list[tuple[int, int]]]]


# --------------------------------------------------------------------------- validation
def _matrix(value: object, name: str, dtype: type[_Cell], lo: int, hi: int,
            shape: tuple[int, ...] | None = None) -> NDArray[_Cell]:
    """A private C-contiguous 2-D copy as ``dtype`` with every value in ``[lo, hi]``."""
    arr = _as_matrix(value, name, dtype, shape, copy=True)
    if arr.size:
        bad = (arr < lo) | (arr > hi)
        if bad.any():
            n, p = np.unravel_index(int(np.argmax(bad)), arr.shape)
            raise ValueError(f"{name}[{n}, {p}] = {arr[n, p]} is outside [{lo}, {hi}]")
    return arr


def _as_matrix(value: object, name: str, dtype: type[_Cell], shape: tuple[int, ...] | None = None,
               *, allow_row: bool = False, copy: bool = False) -> NDArray[_Cell]:
    """A C-contiguous 2-D ``dtype`` array of ``shape`` (``(1, P)`` too if ``allow_row``,
    given as shape (P,)). An array of that dtype and layout is used as it is (the kernel
    copies each cell once into private memory and checks it there); anything else is
    converted into a new array, with every value checked to fit ``dtype``."""
    if value is None or isinstance(value, (str, bytes)) or np.isscalar(value):
        raise TypeError(f"{name} must be a 2-D integer array, got {type(value).__name__}")
    if isinstance(value, np.ndarray) and value.dtype == dtype and value.flags.c_contiguous \
            and not copy:
        arr = value
    else:
        try:
            arr = np.array(value, copy=True, order="C")
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name} is ragged or malformed: {exc}") from None
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if allow_row and arr.ndim == 1:
        arr = arr.reshape(1, -1)
        if shape is not None and arr.shape[1] != shape[1]:
            raise ValueError(f"{name} must have shape {shape} or ({shape[1]},), "
                             f"got ({arr.shape[1]},)")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (nodes, partitions), "
                         f"got shape {arr.shape}")
    if shape is not None and arr.shape != shape and not (allow_row and arr.shape[0] == 1
                                                         and arr.shape[1] == shape[1]):
        raise ValueError(f"{name} must have the shape of states {shape}, got {arr.shape}")
    if arr.dtype != dtype:
        info = np.iinfo(dtype)
        if arr.size:
            bad = (arr < info.min) | (arr > info.max)
            if bad.any():
                n, p = np.unravel_index(int(np.argmax(bad)), arr.shape)
                raise ValueError(f"{name}[{n}, {p}] = {arr[n, p]} is outside "
                                 f"{np.dtype(dtype)}")
        arr = arr.astype(dtype)
    return arr


# the first bad cell's argument (which) -> (name, its array, what is wrong)
_Pick = Callable[[NDArray[np.int8], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]],
                 NDArray[Any]]
_PROBLEMS: dict[int, tuple[str, _Pick, str]] = {
    0: ("states", lambda st, cn, hi, sz: st, "is not a PartitionState code (0..4)"),
    1: ("counters", lambda st, cn, hi, sz: cn, "is negative"),
    2: ("history", lambda st, cn, hi, sz: hi, "is below -1 (-1: no history)"),
    3: ("sizes", lambda st, cn, hi, sz: sz, "is negative"),
}


def _reset_mask(reset: object, nodes: int) -> NDArray[np.uint8]:
    if isinstance(reset, (bool, np.bool_)):
        return np.full(nodes, bool(reset), dtype=np.uint8)
    arr = np.array(reset, copy=True)
    if arr.dtype != bool or arr.shape != (nodes,):
        raise ValueError(f"reset must be a bool or a bool array of shape ({nodes},), "
                         f"got {arr.dtype} {arr.shape}")
    return arr.astype(np.uint8)


def _frozen(*arrays: NDArray[Any]) -> tuple[NDArray[Any], ...]:
    for a in arrays:
        a.flags.writeable = False
    return arrays


# --------------------------------------------------------------------------- rebalance
def rebalance_plan(states: ArrayLike, counters: ArrayLike, *, history: ArrayLike | None = None,
                   sizes: ArrayLike | None = None, threshold: int = 500,
                   prefer_history: bool = False, reset: bool | ArrayLike = True
                   ) -> RebalancePlan:
    """The coordinator's rebalance decision for every (node, partition) (§9.5).

    Per partition: the maximum OWNING counter and its owners (§9.5.1); each max owner whose
    copy reserved history (``history >= 0``, and more than ``threshold`` entries unless
    ``prefer_history``) supplies from the least counter ``c`` of another OWNING or MOVING
    copy with ``0 < c < max``, ``c >= history`` and ``max - c < size`` (§9.5.2); OWNING
    copies behind the maximum become MOVING where ``reset`` allows (§9.5.3); then every
    MOVING copy at counter ``c0`` is rebalanced historically from the suppliers serving from
    ``<= c0`` (``candidates[p % len]``, from ``c0``), otherwise in full from the remaining
    OWNING copies (``owners[p % len]``, node order), and left as it is (Ignite owns it) when
    no other copy is OWNING (§9.5.4). Counter 0 always means a full rebalance.

    Parameters
    ----------
    states : array_like of int, shape (N, P)
        :class:`PartitionState` codes per node (row) and partition (column).
    counters : array_like of int, shape (N, P)
        ``>= 0``: the LWM of an OWNING copy, the initial counter of a MOVING one (other
        states are ignored).
    history : array_like of int, shape (N, P), optional
        The counter from which each node's WAL can replay the partition, ``-1`` for none.
        None: no node has history (every rebalance is full).
    sizes : array_like of int, shape (N, P) or (P,), optional
        ``>= 0``: entries in each copy (one row for all nodes if 1-D). None: unknown, taken
        as larger than any threshold or counter difference.
    threshold : int, default 500
        ``walRebalanceThreshold``: copies of at most this many entries reserve no history.
    prefer_history : bool, default False
        ``preferWalRebalance``: history whenever it reaches, whatever the sizes.
    reset : bool or array_like of bool, shape (N,), default True
        Where ``resetOwnersByCounter`` applies: True on activation or a baseline change (all
        nodes), a node mask for a join (the joined nodes only), False on a server leave.

    Returns
    -------
    RebalancePlan

    Raises
    ------
    TypeError, ValueError
        Not integer arrays, wrong shapes, unknown state codes, negative counters or sizes,
        history below -1 (the message names the argument and the first bad cell).

    Examples
    --------
    The vector ``rebalance_decision_example``: A and B OWNING at 120 with history from 80
    and 110, C OWNING at 100, D MOVING at 0, partition 7:

    >>> O, M = PartitionState.OWNING, PartitionState.MOVING
    >>> col = lambda *v: np.array(v).reshape(-1, 1).repeat(8, axis=1)   # partitions 0..7
    >>> plan = rebalance_plan(col(O, O, O, M), col(120, 120, 100, 0),
    ...                       history=col(80, 110, -1, -1), sizes=col(10000, 10000, 9990, 0))
    >>> int(plan.max_counter[7]), plan.max_owner[:, 7].tolist()
    (120, [True, True, False, False])
    >>> [RebalanceKind(k).name for k in plan.rebalance[:, 7]]
    ['NONE', 'NONE', 'HISTORICAL', 'FULL']
    >>> plan.supplier[:, 7].tolist(), plan.from_counter[:, 7].tolist()
    ([-1, -1, 0, 1], [-1, -1, 100, -1])
    >>> plan.counts()                 # the same decision for partitions 0..7
    {'NONE': 16, 'HISTORICAL': 8, 'FULL': 8}
    """
    st = _as_matrix(states, "states", np.int8)
    shape = st.shape
    cn = _as_matrix(counters, "counters", np.int64, shape)
    has_history = history is not None
    hi = (_as_matrix(history, "history", np.int64, shape) if has_history
          else np.empty((1, 1), dtype=np.int64))
    has_sizes = sizes is not None
    if has_sizes:
        sz = _as_matrix(sizes, "sizes", np.int64, shape, allow_row=True)
    else:
        sz = np.empty((1, 1), dtype=np.int64)
    threshold = check_int(threshold, "threshold", minimum=INT64_MIN, maximum=INT64_MAX)
    if not isinstance(prefer_history, (bool, np.bool_)):
        raise TypeError(f"prefer_history must be a bool, got {type(prefer_history).__name__}")
    rs = _reset_mask(reset, shape[0])

    N, P = shape
    max_counter = np.empty(P, dtype=np.int64)
    max_owner = np.empty(shape, dtype=bool)
    kind = np.empty(shape, dtype=np.int8)
    supplier = np.empty(shape, dtype=np.int32)
    from_counter = np.empty(shape, dtype=np.int64)
    if N == 0:
        max_counter.fill(-1)
    else:   # the kernel checks every cell as it copies it, then writes every output cell
        status, n, p, which = _rebalance.rebalance(
            st, cn, hi, has_history, sz, has_sizes, rs, threshold, bool(prefer_history),
            max_counter, max_owner.view(np.uint8), kind, supplier, from_counter)
        if status != _validate.OK:
            name, arr, what = _PROBLEMS[which]
            value = arr(st, cn, hi, sz)[n if name != "sizes" or sz.shape[0] > 1 else 0, p]
            raise ValueError(f"{name}[{n}, {p}] = {value} {what}")
    return RebalancePlan(*_frozen(max_counter, max_owner, kind, supplier, from_counter))


# --------------------------------------------------------------------------- exchange
def exchange(counters_by_node: Sequence[UpdateCounters], *, states: ArrayLike | None = None,
             finalize: bool | ArrayLike | None = None) -> ExchangeResult:
    """The counter step of a partition map exchange (§9.6), as array operations.

    First, if ``finalize`` says so (a server left), every node closes the gaps of those
    partitions (:meth:`UpdateCounters.finalize`). Then the coordinator takes, per partition,
    the largest LWM of the OWNING and MOVING copies, and each of those copies applies
    :meth:`UpdateCounters.update_absolute` with it (unless both are 0): the new primary's
    HWM is then at least every applied counter.

    All or nothing: every argument, and whether any copy would fail (an LWM maximum below
    a copy's highest applied counter, possible only for partitions not finalized), is
    checked before any counter changes.

    Parameters
    ----------
    counters_by_node : sequence of UpdateCounters
        One per node (node index = position), all with the same partition count P;
        changed in place.
    states : array_like of int, shape (N, P), optional
        :class:`PartitionState` codes; None: every copy OWNING. RENTING, EVICTED and LOST
        copies neither report nor receive.
    finalize : bool or array_like, optional
        True: close the gaps of every partition; a bool mask of shape (P,) or partition
        ids: of those (the exchange-free switch: the partitions whose primary failed);
        None or False: none (a join).

    Returns
    -------
    ExchangeResult

    Raises
    ------
    TypeError, ValueError
        Bad arguments (the message names them).
    UpdateCounterError
        A copy's highest applied counter exceeds the partition's maximum LWM (naming the node
        and partition); nothing changed.

    Examples
    --------
    Node 1 applied 1..2 and 4..5 of partition 0 when the primary (node 0, at 3) left:

    >>> a, b = UpdateCounters(2), UpdateCounters(2)
    >>> _ = a.update_batch([0], [0], [3]); _ = b.update_batch([0, 0], [0, 3], [2, 2])
    >>> result = exchange([a, b], finalize=True)
    >>> result.max_lwm.tolist(), result.finalized
    ([5, 0], [{}, {0: [(3, 3)]}])
    >>> a.lwm.tolist(), a.hwm.tolist(), b.lwm.tolist()
    ([5, 0], [5, 0], [5, 0])
    """
    if isinstance(counters_by_node, UpdateCounters) or not isinstance(counters_by_node,
                                                                        Sequence):
        raise TypeError("counters_by_node must be a sequence of UpdateCounters, got "
                        f"{type(counters_by_node).__name__}")
    nodes = list(counters_by_node)
    seen: dict[int, int] = {}
    for i, c in enumerate(nodes):
        if not isinstance(c, UpdateCounters):
            raise TypeError(f"counters_by_node[{i}] must be UpdateCounters, "
                            f"got {type(c).__name__}")
        if id(c) in seen:
            raise ValueError(f"counters_by_node[{i}] is counters_by_node[{seen[id(c)]}]")
        seen[id(c)] = i
        if c.partition_count != nodes[0].partition_count:
            raise ValueError(f"counters_by_node[{i}] has {c.partition_count} partitions, "
                             f"counters_by_node[0] {nodes[0].partition_count}")
    N = len(nodes)
    P = nodes[0].partition_count if nodes else 0
    if states is None:
        live = np.ones((N, P), dtype=bool)
    else:
        st = _matrix(states, "states", np.int8, 0, _STATE_COUNT - 1)
        if st.shape != (N, P):
            raise ValueError(f"states must have shape ({N}, {P}) (nodes, partitions), "
                             f"got {st.shape}")
        live = (st == PartitionState.OWNING) | (st == PartitionState.MOVING)
    if finalize is None or finalize is False:
        fin = np.zeros(P, dtype=bool)
    elif finalize is True:
        fin = np.ones(P, dtype=bool)
    else:
        probe = UpdateCounters(P)
        fin = probe._mask(finalize, "finalize")

    lwm = np.array([c.lwm for c in nodes], dtype=np.int64).reshape(N, P)
    highest = np.array([c.highest_applied() for c in nodes], dtype=np.int64).reshape(N, P)
    after = np.where(fin, highest, lwm)                # the LWM once the gaps are closed
    after_highest = np.where(fin, after, highest)
    max_lwm = np.where(live, after, -1).max(axis=0, initial=-1) if N else np.zeros(P, np.int64)
    max_lwm = np.maximum(max_lwm, 0)
    apply = live & ~((max_lwm == 0) & (after == 0))
    failing = apply & (max_lwm >= after) & (max_lwm < after_highest)
    if failing.any():
        n, p = np.unravel_index(int(np.argmax(failing)), failing.shape)
        raise UpdateCounterError(
            f"Failed to update the counter: node {n}, partition {p}: the maximum LWM "
            f"{max_lwm[p]} is below its highest applied counter {after_highest[n, p]}; "
            f"nothing changed", index=int(n), partition=int(p))

    if fin.any():   # every node's finalize must be possible before any is done
        for i, c in enumerate(nodes):
            bad = finalize_blocker(c, fin)
            if bad != -1:
                raise _finalize_error(bad, f"counters_by_node[{i}], ")

    finalized: list[dict[int, list[tuple[int, int]]]] = []
    for i, c in enumerate(nodes):
        finalized.append(c.finalize(fin) if fin.any() else {})
        parts = np.flatnonzero(apply[i]).astype(np.int32)
        c.update_absolute_batch(parts, max_lwm[parts])
    max_lwm.flags.writeable = False
    return ExchangeResult(max_lwm, finalized)
