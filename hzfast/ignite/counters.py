"""Ignite partition update counters: LWM, HWM, out-of-order gap items, finalisation.

* :class:`UpdateCounters`: the counters of every partition of a node as arrays, with
  batched ``update_batch``/``reserve_batch`` in the kernel :mod:`hzfast.ignite._counters`
  (docs/design.md §9.3, §9.4);
* :class:`UpdateCounter`, :class:`VolatileUpdateCounter`: single-threaded models of one
  partition's ``PartitionUpdateCounterTrackingImpl`` / ``PartitionUpdateCounterVolatileImpl``.

All are checked against every ``PartitionUpdateCounterTest`` scenario in
``tests/data/vectors/ignite.json``. Counter values are Java longs: every argument is checked
to fit int64.
"""
from __future__ import annotations

import bisect
import struct
from typing import Any, NoReturn, TypeVar, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast import _validate
from hzfast._check import check_int
from hzfast._keys import INT64_MAX, INT64_MIN
from hzfast.ignite import _counters
from hzfast.ignite.hashing import MAX_PARTITIONS

__all__ = ["UpdateCounter", "UpdateCounterError", "UpdateCounters", "VolatileUpdateCounter"]

_Int = TypeVar("_Int", np.int32, np.int64)


class UpdateCounterError(RuntimeError):
    """Ignite's ``IgniteCheckedException`` / ``IgniteException`` from an update counter:
    an absolute update below the highest applied counter, or too many gaps.

    Raised by a batch of :class:`UpdateCounters`, it says where the batch stopped:
    ``index`` (the operation that failed and had no effect; operations before it are
    applied, those after it are not), ``partition`` and ``results`` (the results of the
    applied operations). All three are None when raised by a single operation.
    """

    def __init__(self, message: str, *, index: int | None = None,
                 partition: int | None = None,
                 results: NDArray[np.bool_] | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.partition = partition
        self.results = results


def _check_long(value: object, name: str) -> int:
    return check_int(value, name, minimum=INT64_MIN, maximum=INT64_MAX)


def _long_sum(counter: object, what: str, a: int, b: int) -> int:
    """``a + b`` when it fits a Java long; else ValueError naming the counter and the
    operation (Java would wrap around to a negative counter; the counter is unchanged)."""
    total = a + b
    if not INT64_MIN <= total <= INT64_MAX:
        raise ValueError(f"{counter!r}: {what} = {a} + {b} leaves the Java long range "
                         f"(int64); the counter is unchanged")
    return total


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
        ``init(initUpdCntr, ...)``: LWM = HWM = initial (int64 range).
    gaps : bytes, optional
        ``init(..., cntrUpdData)``: gap items as produced by :meth:`to_bytes`.

    Raises
    ------
    TypeError, ValueError
        ``initial`` not an int or outside int64; ``gaps`` malformed (ValueError).

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

    def __init__(self, initial: int = 0, gaps: bytes | None = None) -> None:
        initial = _check_long(initial, "initial")
        self._lwm = initial
        self._hwm = initial
        self._initial = initial
        self._first = True
        self._items: dict[int, list[int]] = {}  # start -> [start, delta]
        self._keys: list[int] = []         # sorted starts
        for start, delta in self._parse(gaps):
            self._put(start, delta)

    # ---- sorted map helpers (TreeMap<Long, Item>)
    def _put(self, start: int, delta: int) -> None:
        bisect.insort(self._keys, start)
        self._items[start] = [start, delta]

    def _remove(self, start: int) -> list[int] | None:
        item = self._items.pop(start, None)
        if item is not None:
            del self._keys[bisect.bisect_left(self._keys, start)]
        return item

    def _lower(self, start: int) -> list[int] | None:
        i = bisect.bisect_left(self._keys, start)
        return self._items[self._keys[i - 1]] if i else None

    # ---- state
    @property
    def lwm(self) -> int:
        """Low watermark (``get()``)."""
        return self._lwm

    def get(self) -> int:
        """``get()``: the low watermark."""
        return self._lwm

    @property
    def hwm(self) -> int:
        """High watermark (``reserved()``)."""
        return self._hwm

    def reserved(self) -> int:
        """``reserved()``: the high watermark."""
        return self._hwm

    def initial(self) -> int:
        """``initial()``: the counter the partition started from."""
        return self._initial

    @property
    def gaps(self) -> list[tuple[int, int]]:
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
        """``empty()``: LWM 0 and no out-of-order items."""
        return self._lwm == 0 and self.sequential

    # ---- operations
    def next(self, delta: int | None = None) -> int:
        """``next()``: LWM += 1, HWM = LWM, return it; ``next(delta)``: return the old LWM,
        LWM += delta (HWM untouched)."""
        if delta is None:
            self._lwm = _long_sum(self, "next(): lwm + 1", self._lwm, 1)
            self._hwm = self._lwm
            return self._lwm
        delta = _check_long(delta, "delta")
        old = self._lwm
        self._lwm = _long_sum(self, "next(delta): lwm + delta", old, delta)
        return old

    def reserve(self, delta: int) -> int:
        """Reserve ``delta`` counters: return the old HWM, HWM += delta."""
        delta = _check_long(delta, "delta")
        old = self._hwm
        self._hwm = _long_sum(self, "reserve(delta): hwm + delta", old, delta)
        return old

    def update(self, start: int, delta: int) -> bool:
        """Apply counters ``start+1 .. start+delta``; False if already applied (stale).

        Raises :class:`UpdateCounterError` when :attr:`MAX_MISSED_UPDATES` items are pending.
        """
        start = _check_long(start, "start")
        delta = _check_long(delta, "delta")
        _long_sum(self, "update(start, delta): start + delta", start, delta)
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
        self._hwm = max(self._hwm, mx)
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
        self._hwm = max(self._hwm, self._initial)

    def finalize(self) -> list[int]:
        """``finalizeUpdateCounters()``: close every gap (on node left). Returns the missed
        ranges as a flat list ``[from1, to1, from2, to2, ...]`` (LWM+1 .. item start per item;
        Java returns null when there are none: here ``[]``); LWM jumps past each item and
        HWM = LWM."""
        cur = self._lwm
        for s in self._keys:   # every gap's lower bound must be a Java long: check first
            _long_sum(self, "finalize(): lwm + 1", cur, 1)
            cur = s + self._items[s][1]
        gaps: list[int] = []
        while self._keys:
            start = self._keys[0]
            item = self._remove(start)
            assert item is not None  # start is a key
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
    def _parse(raw: object) -> list[tuple[int, int]]:
        # the one reader of Ignite's gap bytes (version, length, negative, overflowing
        # or repeated items), shared with UpdateCounters
        return [(int(s), int(d)) for s, d in _parse_gaps(raw, "gaps").tolist()]

    def __repr__(self) -> str:
        return (f"UpdateCounter(lwm={self._lwm}, hwm={self._hwm}, gaps={self.gaps}, "
                f"highest_applied={self.highest_applied()})")


class VolatileUpdateCounter:
    """Ignite's ``PartitionUpdateCounterVolatileImpl`` (in-memory groups, or persistent groups
    with ATOMIC caches): LWM == HWM, no gap tracking.

    Parameters
    ----------
    initial : int, default 0
        LWM = initial (int64 range).

    Raises
    ------
    TypeError, ValueError
        ``initial`` not an int or outside int64.

    Examples
    --------
    >>> c = VolatileUpdateCounter()
    >>> c.reserve(3), c.update(10, 2), c.lwm
    (0, False, 12)
    """

    def __init__(self, initial: int = 0) -> None:
        initial = _check_long(initial, "initial")
        self._lwm = initial
        self._initial = initial

    @property
    def lwm(self) -> int:
        """Low watermark (``get()``); equal to the high watermark."""
        return self._lwm

    hwm = lwm

    def get(self) -> int:
        """``get()``: the low watermark."""
        return self._lwm

    def reserved(self) -> int:
        """``reserved()``: the low watermark (no separate reservations)."""
        return self._lwm

    def initial(self) -> int:
        """``initial()``: the counter the partition started from."""
        return self._initial

    @property
    def gaps(self) -> list[tuple[int, int]]:
        """Always empty (no gap tracking)."""
        return []

    @property
    def sequential(self) -> bool:
        """Always True."""
        return True

    def empty(self) -> bool:
        """``empty()``: LWM 0."""
        return self._lwm == 0

    def next(self, delta: int | None = None) -> int:
        """``next()``: ++LWM; ``next(delta)``: return the old LWM, LWM += delta."""
        if delta is None:
            self._lwm = _long_sum(self, "next(): lwm + 1", self._lwm, 1)
            return self._lwm
        delta = _check_long(delta, "delta")
        old = self._lwm
        self._lwm = _long_sum(self, "next(delta): lwm + delta", old, delta)
        return old

    def reserve(self, delta: int) -> int:
        """Same as ``next(delta)``."""
        return self.next(delta)

    def update_abs(self, val: int) -> None:
        """LWM = max(LWM, val)."""
        val = _check_long(val, "val")
        self._lwm = max(self._lwm, val)

    def update(self, start: int, delta: int) -> bool:
        """``update(start + delta)``; always returns False (as Ignite does)."""
        start = _check_long(start, "start")
        delta = _check_long(delta, "delta")
        self.update_abs(_long_sum(self, "update(start, delta): start + delta", start, delta))
        return False

    def update_initial(self, start: int, delta: int) -> None:
        """``updateInitial``: :meth:`update`, then initial = LWM."""
        self.update(start, delta)
        self._initial = self._lwm

    def finalize(self) -> list[int]:
        """``finalizeUpdateCounters()``: nothing to close; always ``[]``."""
        return []

    def reset(self) -> None:
        """``reset()``: LWM = initial = 0."""
        self._initial = 0
        self._lwm = 0

    def to_bytes(self) -> bytes | None:
        """``getBytes()``: always None (no gaps)."""
        return None

    def __repr__(self) -> str:
        return f"VolatileUpdateCounter(lwm={self._lwm})"


# --------------------------------------------------------------------------- UpdateCounters
# an operation batch's first problem (hzfast._types Status, argument) -> message
_PROBLEMS = {
    (_validate.BAD_PARTITION, 0): "partitions[{k}] = {p} is outside [0, {n})",
    (_validate.NEGATIVE, 1): "starts[{k}] = {s} is negative",
    (_validate.NEGATIVE, 2): "deltas[{k}] = {d} is negative",
    (_validate.OVERFLOW, 1): "starts[{k}] + deltas[{k}] = {s} + {d} is past the "
                             "Java long range (int64)",
}


def _snapshot(value: object, name: str, dtype: type[_Int],
              bounds: tuple[int, int] | None = None) -> NDArray[_Int]:
    """A private, C-contiguous 1-D copy of an integer array_like, as ``dtype``.

    The copy is taken before any check, so later changes to the caller's array cannot
    reach the kernel. Values must fit ``dtype``; with ``bounds=(lo, hi)`` they must lie in
    ``[lo, hi)`` when a cast is needed (the kernel checks the rest).
    """
    if isinstance(value, (str, bytes)) or value is None or np.isscalar(value):
        raise TypeError(f"{name} must be a 1-D integer array or sequence, "
                        f"got {type(value).__name__}")
    try:
        arr = np.array(value, copy=True, order="C")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} is ragged or malformed: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size == 0 and arr.dtype.kind in "fO":      # [] gives float64
        return np.empty(0, dtype=dtype)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype == dtype:
        return arr
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max + 1) if bounds is None else bounds
    bad = (arr < lo) | (arr >= hi) if arr.size else np.zeros(0, dtype=bool)
    if bad.any():
        k = int(np.argmax(bad))
        where = f"[{lo}, {hi})" if bounds is not None else f"the {np.dtype(dtype)} range"
        raise ValueError(f"{name}[{k}] = {arr[k]} is outside {where}")
    return arr.astype(dtype)


def _readonly(arr: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    """A read-only view of ``arr[:n]`` that cannot be made writeable again."""
    # numpy declares ndarray.__buffer__ only for Python >= 3.12 (the Buffer protocol)
    view = np.frombuffer(memoryview(arr).toreadonly(),  # type: ignore[arg-type]
                         dtype=arr.dtype)[:n]
    return view


class UpdateCounters:
    """The update counters of every partition of one node, as arrays (docs/design.md §9.3,
    §9.4).

    Per partition, exactly the semantics of Ignite's ``PartitionUpdateCounterTrackingImpl``
    (``tracking=True``, the scalar :class:`UpdateCounter`) or of
    ``PartitionUpdateCounterVolatileImpl`` (``tracking=False``, :class:`VolatileUpdateCounter`:
    LWM = HWM, out-of-order updates only raise the counter). The hot paths
    :meth:`update_batch` and :meth:`reserve_batch` apply whole arrays of operations in array
    order in one kernel pass (:mod:`hzfast.ignite._counters`), with the results the scalar
    calls would give one by one. Gap items live in one sorted C buffer per partition.

    Counters are Java longs that never leave int64: starts, deltas and absolute values must
    be ``>= 0``, ``start + delta`` must fit int64, and a reservation that would take HWM past
    ``2**63 - 1`` is rejected (§9.3.5) instead of wrapping as in Java.

    **Errors.** Bad arguments raise ``TypeError``/``ValueError`` naming the argument (and
    the first bad index of a batch) before anything is applied: the counters are unchanged.
    A batch whose operation ``k`` fails on the counter itself (more than
    :attr:`MAX_MISSED_UPDATES` gap items, an absolute value below the highest applied
    counter) stops there and raises :class:`UpdateCounterError` with ``index = k``,
    ``partition`` and ``results`` (the results of operations ``0 .. k-1``, which are
    applied); operation ``k`` and the following ones are not applied. A reservation batch
    is all or nothing.

    Thread-safe: every method runs under one lock (the kernels release the GIL).

    Parameters
    ----------
    partition_count : int
        Number of partitions ``P``, ``0 <= P <= 65000`` (Ignite's maximum partition count
        of a cache group; a larger count is refused before anything is allocated); all
        counters start at 0.
    tracking : bool, default True
        False for the volatile variant (in-memory groups, ATOMIC caches; §9.4).

    Raises
    ------
    TypeError, ValueError
        ``partition_count`` not an int or out of range; ``tracking`` not a bool.

    Examples
    --------
    >>> c = UpdateCounters(4)
    >>> c.reserve_batch([1, 1, 2], [3, 2, 5]).tolist()    # old HWM per reservation
    [0, 3, 0]
    >>> c.update_batch([1, 1, 1], [3, 0, 0], [2, 3, 3]).tolist()  # out of order, then stale
    [True, True, False]
    >>> c.lwm.tolist(), c.hwm.tolist()
    ([0, 5, 0, 0], [0, 5, 5, 0])
    >>> c.update(2, 1, 2), c.gaps(2), c.finalize()
    (True, [(1, 2)], {2: [(1, 1)]})
    >>> c.lwm.tolist(), c.hwm.tolist()
    ([0, 5, 3, 0], [0, 5, 3, 0])
    """

    #: More gap items than this in one partition is Ignite's "too many gaps" failure.
    MAX_MISSED_UPDATES = _counters.MAX_ITEMS
    _VERSION = 1

    def __init__(self, partition_count: int, *, tracking: bool = True) -> None:
        n = check_int(partition_count, "partition_count", minimum=0, maximum=MAX_PARTITIONS)
        if not isinstance(tracking, (bool, np.bool_)):
            raise TypeError(f"tracking must be a bool, got {type(tracking).__name__}")
        self._n = n
        self._table = _counters.CounterTable(n, bool(tracking))
        self._lwm = _readonly(self._table.lwm, n)
        self._hwm = _readonly(self._table.hwm, n)
        self._initial = _readonly(self._table.initial, n)

    # ------------------------------------------------------------------ state
    @property
    def partition_count(self) -> int:
        """``P``, the number of partitions."""
        return self._n

    def __len__(self) -> int:
        return self._n

    @property
    def tracking(self) -> bool:
        """True for ``PartitionUpdateCounterTrackingImpl``, False for the volatile one."""
        return bool(self._table.tracking)

    @property
    def lwm(self) -> NDArray[np.int64]:
        """Low watermarks (``get()``): a read-only, live ``ndarray[int64]`` of shape (P,)."""
        return self._lwm

    @property
    def hwm(self) -> NDArray[np.int64]:
        """High watermarks (``reserved()``): a read-only, live ``ndarray[int64]`` of shape
        (P,); the same values as :attr:`lwm` when ``tracking=False``."""
        return self._hwm

    @property
    def initial(self) -> NDArray[np.int64]:
        """Initial counters (``initial()``): a read-only, live ``ndarray[int64]`` (P,)."""
        return self._initial

    def gap_counts(self) -> NDArray[np.int32]:
        """Number of out-of-order gap items per partition: a new ``ndarray[int32]`` (P,)."""
        return self._table.gap_counts()

    @overload
    def highest_applied(self, partition: None = None) -> NDArray[np.int64]: ...

    @overload
    def highest_applied(self, partition: int) -> int: ...

    def highest_applied(self, partition: int | None = None) -> int | NDArray[np.int64]:
        """``highestAppliedCounter()``: the end of the last gap item, else the LWM.

        Parameters
        ----------
        partition : int, optional
            One partition; None for all.

        Returns
        -------
        int or ndarray[int64] of shape (P,)
        """
        if partition is None:
            return self._table.highest_applied()
        p = self._partition(partition)
        items = self._table.gap_items(p)
        return int(items[-1].sum()) if len(items) else int(self._lwm[p])

    def gaps(self, partition: int) -> list[tuple[int, int]]:
        """The out-of-order items of ``partition``, ``[(start, delta), ...]`` by start
        (item ``(s, d)``: counters ``s+1 .. s+d`` applied); ``[]`` when volatile."""
        p = self._partition(partition)
        return [(int(s), int(d)) for s, d in self._table.gap_items(p).tolist()]

    def sequential(self, partition: int) -> bool:
        """``sequential()``: ``partition`` has no gap items."""
        p = self._partition(partition)
        return len(self._table.gap_items(p)) == 0

    # ------------------------------------------------------------------ single operations
    def reserve(self, partition: int, delta: int) -> int:
        """§9.3.1 ``reserve(delta)``: return the old HWM of ``partition``, HWM += delta.

        Raises
        ------
        TypeError, ValueError
            A bad ``partition`` or ``delta`` (``delta < 0``), or HWM would pass int64.
        """
        p = self._partition(partition)
        delta = self._long(delta, "delta")
        return int(self.reserve_batch(np.array([p], np.int32), np.array([delta]))[0])

    def update(self, partition: int, start: int, delta: int) -> bool:
        """§9.3.2 ``update(start, delta)``: apply counters ``start+1 .. start+delta``.

        Returns False for a stale or already covered range (True otherwise; the volatile
        variant always returns False).

        Raises
        ------
        TypeError, ValueError
            Bad arguments (negative ``start``/``delta``, ``start + delta`` past int64).
        UpdateCounterError
            ``partition`` already holds :attr:`MAX_MISSED_UPDATES` gap items and the update
            needs one more (nothing is changed).
        """
        p = self._partition(partition)
        start = self._long(start, "start")
        delta = self._long(delta, "delta")
        if start > INT64_MAX - delta:
            raise ValueError(f"start + delta = {start} + {delta} is past the Java long "
                             f"range (int64)")
        out = self.update_batch(np.array([p], np.int32), np.array([start]), np.array([delta]))
        return bool(out[0])

    def update_absolute(self, partition: int, value: int) -> None:
        """§9.3.3 ``update(long val)``: the absolute counter from the exchange or a supplier.

        HWM = max(HWM, value, LWM); a value below LWM changes nothing more; otherwise the
        value becomes the LWM and, the first time, every gap item is dropped.

        Raises
        ------
        TypeError, ValueError
            Bad ``partition`` or ``value`` (negative).
        UpdateCounterError
            ``value`` is below :meth:`highest_applied` (the raised HWM is kept, as in Ignite).
        """
        p = self._partition(partition)
        value = self._long(value, "value")
        self.update_absolute_batch(np.array([p], np.int32), np.array([value]))

    def reset(self, partition: int) -> None:
        """``reset()``: LWM = HWM = initial = 0 and no gap items (the first-update flag of
        :meth:`update_absolute` is kept)."""
        self._table.reset(self._partition(partition))

    def init(self, partition: int, initial: int = 0, gaps: bytes | None = None) -> None:
        """``init(initial, gapBytes)``: LWM = HWM = initial counter = ``initial``, gap items
        from ``gaps`` (the form of :meth:`to_bytes`; None for none). As in Ignite, the
        first-update flag is not reset: an absolute update after ``init`` drops the gap
        items only if no absolute update came before.

        Raises
        ------
        TypeError, ValueError
            Bad ``partition``, negative ``initial``, or corrupt ``gaps`` (nothing changed).
        """
        p = self._partition(partition)
        initial = self._long(initial, "initial")
        items = self._parse(gaps, "gaps")
        self._table.init(p, initial)
        self._table.set_gap_items(p, items)

    def to_bytes(self, partition: int) -> bytes | None:
        """``getBytes()``: Ignite's serialized gap items of ``partition``, or None without
        items: big-endian, version byte 1, int32 count, then (int64 start, int64 delta) per
        item (§9.3.4)."""
        items = self._table.gap_items(self._partition(partition))
        if not len(items):
            return None
        return struct.pack(">bi", self._VERSION, len(items)) + items.astype(">i8").tobytes()

    def from_bytes(self, partition: int, data: bytes | None) -> None:
        """``fromBytes``: replace the gap items of ``partition`` by those in ``data`` (the
        form of :meth:`to_bytes`; None for none). LWM and HWM are kept.

        Raises
        ------
        TypeError, ValueError
            ``data`` is not bytes-like or is corrupt (wrong version, length or count,
            negative or overflowing items, a start twice); nothing is changed.
        """
        p = self._partition(partition)
        self._table.set_gap_items(p, self._parse(data, "data"))

    def finalize(self, partitions: ArrayLike | None = None) -> dict[int, list[tuple[int, int]]]:
        """§9.3.4 ``finalizeUpdateCounters()``: close every gap (a server left).

        Parameters
        ----------
        partitions : array_like, optional
            A bool mask of shape (P,) or partition ids: only these partitions (the
            exchange-free switch closes the gaps of the partitions whose primary failed).
            Default: all.

        Returns
        -------
        dict of int to list of (int, int)
            Per partition that had gap items, the missed ranges ``(from, to)``: counters
            ``from .. to`` were never applied. The LWM moves past every item and then
            HWM = LWM for every finalized partition (with or without items).

        Raises
        ------
        ValueError
            A finalized partition would report a gap starting at ``2**63`` (its LWM, or a
            gap item followed by another, ends at ``2**63 - 1``; Java wraps to a negative
            counter there); nothing is changed.
        """
        mask = self._mask(partitions, "partitions")
        bad, rows = self._table.finalize(mask.view(np.uint8))
        if rows is None:
            raise _finalize_error(bad)
        out: dict[int, list[tuple[int, int]]] = {}
        for p, lo, hi in rows.tolist():
            out.setdefault(p, []).append((lo, hi))
        return out

    # ------------------------------------------------------------------ batches
    def update_batch(self, partitions: ArrayLike, starts: ArrayLike,
                     deltas: ArrayLike) -> NDArray[np.bool_]:
        """Apply ``update(partitions[k], starts[k], deltas[k])`` for every ``k`` in array
        order, in one kernel pass: the results the scalar calls would give.

        Parameters
        ----------
        partitions : array_like of int, shape (m,)
            Partition ids in ``[0, P)`` (int32 input avoids a conversion).
        starts, deltas : array_like of int, shape (m,)
            ``>= 0``, with ``start + delta`` within int64 (int64 input avoids a conversion).

        Returns
        -------
        ndarray[bool] of shape (m,)
            ``update``'s result per operation.

        Raises
        ------
        TypeError, ValueError
            Not integer arrays, not 1-D, lengths differ, or a value out of range (the
            message names the argument and the first bad index); nothing applied.
        UpdateCounterError
            Operation ``k`` would need more than :attr:`MAX_MISSED_UPDATES` gap items: the
            batch stops there (see the class notes; ``index``, ``partition``, ``results``).
        """
        parts = _snapshot(partitions, "partitions", np.int32, (0, self._n))
        starts = _snapshot(starts, "starts", np.int64)
        deltas = _snapshot(deltas, "deltas", np.int64)
        self._same_length(("partitions", parts), ("starts", starts), ("deltas", deltas))
        self._check_ops(parts, starts, deltas)
        out = np.empty(len(parts), dtype=bool)
        outcome, k = self._table.update_batch(parts, starts, deltas, out.view(np.uint8))
        if outcome != _counters.OUTCOME_DONE:
            self._raise(outcome, k, int(parts[k]), out[:k].copy(),
                        f"update({starts[k]}, {deltas[k]})")
        return out

    def reserve_batch(self, partitions: ArrayLike, deltas: ArrayLike) -> NDArray[np.int64]:
        """Reserve ``deltas[k]`` counters of ``partitions[k]`` for every ``k`` in order.

        Parameters
        ----------
        partitions : array_like of int, shape (m,)
            Partition ids in ``[0, P)``.
        deltas : array_like of int, shape (m,)
            ``>= 0``.

        Returns
        -------
        ndarray[int64] of shape (m,)
            The HWM before each reservation (the reserved range starts after it).

        Raises
        ------
        TypeError, ValueError
            Bad arguments, or a reservation would take a HWM past int64 (the message names
            the index); nothing is applied (a reservation batch is all or nothing).
        """
        parts = _snapshot(partitions, "partitions", np.int32, (0, self._n))
        deltas = _snapshot(deltas, "deltas", np.int64)
        self._same_length(("partitions", parts), ("deltas", deltas))
        self._check_ops(parts, np.empty(0, np.int64), deltas)
        out = np.empty(len(parts), dtype=np.int64)
        scratch = np.empty(max(self._n, 1), dtype=np.int64)
        outcome, k = self._table.reserve_batch(parts, deltas, out, scratch)
        if outcome != _counters.OUTCOME_DONE:
            raise ValueError(f"deltas[{k}] = {deltas[k]}: reserving it would take the HWM of "
                             f"partition {parts[k]} past the Java long range (int64); "
                             f"nothing reserved")
        return out

    def update_absolute_batch(self, partitions: ArrayLike, values: ArrayLike) -> None:
        """:meth:`update_absolute` for every ``(partitions[k], values[k])`` in order.

        Raises
        ------
        TypeError, ValueError
            Bad arguments (``values`` must be ``>= 0``); nothing applied.
        UpdateCounterError
            ``values[k]`` is below the highest applied counter: the batch stops at ``k``
            (that operation's HWM raise is kept, as in Ignite).
        """
        parts = _snapshot(partitions, "partitions", np.int32, (0, self._n))
        values = _snapshot(values, "values", np.int64)
        self._same_length(("partitions", parts), ("values", values))
        self._check_ops(parts, np.empty(0, np.int64), values, delta_name="values")
        outcome, k = self._table.absolute_batch(parts, values)
        if outcome != _counters.OUTCOME_DONE:
            self._raise(outcome, k, int(parts[k]), None, f"update({values[k]})")

    # ------------------------------------------------------------------ helpers
    def _partition(self, partition: object) -> int:
        return check_int(partition, "partition", minimum=0, maximum=self._n - 1)

    @staticmethod
    def _long(value: object, name: str) -> int:
        return check_int(value, name, minimum=0, maximum=INT64_MAX)

    @staticmethod
    def _same_length(*named: tuple[str, NDArray[Any]]) -> None:
        lengths = {len(a) for _, a in named}
        if len(lengths) > 1:
            shown = ", ".join(f"{n} {len(a)}" for n, a in named)
            raise ValueError(f"{' and '.join(n for n, _ in named)} must have one length, "
                             f"got {shown}")

    def _check_ops(self, parts: NDArray[np.int32], starts: NDArray[np.int64],
                   deltas: NDArray[np.int64], delta_name: str = "deltas") -> None:
        status, k, which = _counters.check_ops(parts, starts, deltas, self._n)
        if status != _validate.OK:
            msg = _PROBLEMS[status, which].format(k=k, p=parts[k], n=self._n,
                                            s=starts[k] if len(starts) else None,
                                            d=deltas[k])
            raise ValueError(msg.replace("deltas", delta_name))

    def _mask(self, partitions: ArrayLike | None, name: str) -> NDArray[np.bool_]:
        if partitions is None:
            return np.ones(self._n, dtype=bool)
        arr = np.array(partitions, copy=True)
        if arr.dtype == bool:
            if arr.shape != (self._n,):
                raise ValueError(f"{name} as a mask must have shape ({self._n},), "
                                 f"got {arr.shape}")
            return np.ascontiguousarray(arr)
        ids = _snapshot(arr.reshape(-1) if arr.ndim == 0 else arr, name, np.int32,
                        (0, self._n))
        bad = (ids < 0) | (ids >= self._n)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"{name}[{k}] = {ids[k]} is outside [0, {self._n})")
        mask = np.zeros(self._n, dtype=bool)
        mask[ids] = True
        return mask

    def _raise(self, outcome: int, k: int, p: int, results: NDArray[np.bool_] | None,
               what: str) -> NoReturn:
        if outcome == _counters.OUTCOME_TOO_MANY_GAPS:
            msg = (f"Too many gaps in partition {p}: {what} at index {k} needs more than "
                   f"{self.MAX_MISSED_UPDATES} out-of-order items [lwm={self._lwm[p]}]")
        elif outcome == _counters.OUTCOME_BELOW_HIGHEST:
            msg = (f"Failed to update the counter of partition {p}: {what} at index {k} is "
                   f"below the highest applied counter [lwm={self._lwm[p]}, "
                   f"maxApplied={self.highest_applied(p)}]")
        else:
            raise MemoryError(f"partition {p}: cannot grow its gap buffer at index {k}")
        raise UpdateCounterError(msg, index=k, partition=p, results=results)

    @staticmethod
    def _parse(raw: object, name: str) -> NDArray[np.int64]:
        return _parse_gaps(raw, name)

    def __repr__(self) -> str:
        kind = "tracking" if self.tracking else "volatile"
        return (f"UpdateCounters({self._n} partitions, {kind}, "
                f"gap items={int(self.gap_counts().sum())})")


def _finalize_error(partition: int, node: str = "") -> ValueError:
    return ValueError(f"finalize: {node}partition {partition} would report a gap starting at "
                      f"lwm + 1 = 2**63, past the Java long range (its LWM or a gap item "
                      f"before another reaches 2**63 - 1); nothing changed")


def finalize_blocker(counters: UpdateCounters, mask: NDArray[np.bool_]) -> int:
    """The first partition of ``mask`` whose :meth:`UpdateCounters.finalize` would be
    refused (a gap starting past int64), or -1; for callers that finalize several tables
    and must check all of them before changing any (``exchange``)."""
    return int(counters._table.finalize_blocker(mask.view(np.uint8)))


def _parse_gaps(raw: object, name: str) -> NDArray[np.int64]:
    """Gap items from Ignite's bytes: int64 (k, 2), sorted, validated."""
    if raw is None:
        return np.empty((0, 2), dtype=np.int64)
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes or None, got {type(raw).__name__}")
    raw = bytes(raw)
    if len(raw) < 5:
        raise ValueError(f"{name} must hold a version byte and a count, got {len(raw)} "
                         f"bytes")
    version, count = struct.unpack_from(">bi", raw)
    if version != _GAP_VERSION:
        raise ValueError(f"{name} has version {version}, expected 1")
    if count < 0 or len(raw) != 5 + 16 * count:
        raise ValueError(f"{name}: expected {count} items of 16 bytes after the header, "
                         f"got {len(raw) - 5} bytes")
    items = np.frombuffer(raw, dtype=">i8", offset=5).astype(np.int64).reshape(count, 2)
    if count:
        s, d = items[:, 0], items[:, 1]
        bad = (s < 0) | (d < 0) | (s > INT64_MAX - np.maximum(d, 0))
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"{name}: item {k} ({s[k]}, {d[k]}) is negative or ends past "
                             f"int64")
        items = items[np.argsort(s, kind="stable")]
        dup = items[1:, 0] == items[:-1, 0]
        if dup.any():
            raise ValueError(f"{name}: two items start at {items[1:, 0][dup][0]}")
    return np.ascontiguousarray(items)


_GAP_VERSION = 1   # the version byte of Ignite's serialized gap items
