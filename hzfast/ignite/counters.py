"""Ignite partition update counters: LWM, HWM, out-of-order gap items, finalisation.

Single-threaded models of ``PartitionUpdateCounterTrackingImpl`` (:class:`UpdateCounter`)
and ``PartitionUpdateCounterVolatileImpl`` (:class:`VolatileUpdateCounter`), checked against
every ``PartitionUpdateCounterTest`` scenario in ``tests/data/vectors/ignite.json``. Counter
values are Java longs: every argument is checked to fit int64.
"""
from __future__ import annotations

import bisect
import struct

from hzfast._check import check_int
from hzfast._keys import INT64_MAX, INT64_MIN

__all__ = ["UpdateCounter", "VolatileUpdateCounter", "UpdateCounterError"]


class UpdateCounterError(RuntimeError):
    """Ignite's ``IgniteCheckedException`` / ``IgniteException`` from an update counter:
    an absolute update below the highest applied counter, or too many gaps."""


def _check_long(value, name: str) -> int:
    return check_int(value, name, minimum=INT64_MIN, maximum=INT64_MAX)


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
        """``empty()``: LWM 0 and no out-of-order items."""
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
        """Apply counters ``start+1 .. start+delta``; False if already applied (stale).

        Raises :class:`UpdateCounterError` when :attr:`MAX_MISSED_UPDATES` items are pending.
        """
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

    def __init__(self, initial: int = 0):
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

    gaps = property(lambda self: [], doc="Always empty (no gap tracking).")
    sequential = property(lambda self: True, doc="Always True.")

    def empty(self) -> bool:
        """``empty()``: LWM 0."""
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
        """``updateInitial``: :meth:`update`, then initial = LWM."""
        self.update(start, delta)
        self._initial = self._lwm

    def finalize(self) -> list:
        """``finalizeUpdateCounters()``: nothing to close; always ``[]``."""
        return []

    def reset(self) -> None:
        """``reset()``: LWM = initial = 0."""
        self._initial = 0
        self._lwm = 0

    def to_bytes(self):
        """``getBytes()``: always None (no gaps)."""
        return None

    def __repr__(self) -> str:
        return f"VolatileUpdateCounter(lwm={self._lwm})"
