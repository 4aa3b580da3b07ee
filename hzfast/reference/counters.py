"""Pure-Python reference for Ignite's partition update counters and the coordinator's
rebalance decision (test oracle and benchmark baseline; docs/design.md §9.3-§9.6).

* :class:`UpdateCounter`, :class:`VolatileUpdateCounter`: a copy of the scalar models in
  ``hzfast.ignite.counters`` (kept as a copy on purpose: the leaf rule of docs/design.md §0.3
  makes a shared mistake impossible), one object per partition.
* :func:`rebalance_decision`: ``assignPartitionStates`` / ``assignHistoricalSuppliers`` /
  ``resetOwnersByCounter`` / ``generateAssignments`` as Ignite writes them, with sets and
  sorted lists, for one partition at a time (§9.5).
* :func:`exchange`: the exchange step of §9.6 over lists of scalar counters.

Standard library only; never imports hzfast.
"""
from __future__ import annotations

import bisect
import operator
import struct

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# GridDhtPartitionState ordinals
MOVING, OWNING, RENTING, EVICTED, LOST = 0, 1, 2, 3, 4
# rebalance kinds
NONE, HISTORICAL, FULL = 0, 1, 2


class UpdateCounterError(RuntimeError):
    """Ignite's ``IgniteCheckedException`` / ``IgniteException`` from an update counter:
    an absolute update below the highest applied counter, or too many gaps."""


def _check_long(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{name} must fit int64, got {value}")
    return int(value)


def _in_long(total: int, what: str) -> int:
    """``total`` if a Java long holds it; ValueError otherwise (Java would wrap)."""
    if not INT64_MIN <= total <= INT64_MAX:
        raise ValueError(f"{what} = {total} leaves the Java long range (int64)")
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
            self._lwm = _in_long(self._lwm + 1, "next(): lwm + 1")
            self._hwm = self._lwm
            return self._lwm
        delta = _check_long(delta, "delta")
        old = self._lwm
        self._lwm = _in_long(old + delta, "next(delta): lwm + delta")
        return old

    def reserve(self, delta: int) -> int:
        """Reserve ``delta`` counters: return the old HWM, HWM += delta."""
        delta = _check_long(delta, "delta")
        old = self._hwm
        self._hwm = _in_long(old + delta, "reserve(delta): hwm + delta")
        return old

    def update(self, start: int, delta: int) -> bool:
        """Apply counters ``start+1 .. start+delta``; False if already applied (stale).

        Raises :class:`UpdateCounterError` when :attr:`MAX_MISSED_UPDATES` items are pending.
        """
        start = _check_long(start, "start")
        delta = _check_long(delta, "delta")
        _in_long(start + delta, "update(start, delta): start + delta")
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

    def finalize(self) -> list:
        """``finalizeUpdateCounters()``: close every gap (on node left). Returns the missed
        ranges as a flat list ``[from1, to1, from2, to2, ...]`` (LWM+1 .. item start per item;
        Java returns null when there are none: here ``[]``); LWM jumps past each item and
        HWM = LWM."""
        cur = self._lwm
        for s in self._keys:   # a gap starting past int64 is refused before any change
            _in_long(cur + 1, "finalize(): lwm + 1")
            cur = s + self._items[s][1]
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
            self._lwm = _in_long(self._lwm + 1, "next(): lwm + 1")
            return self._lwm
        delta = _check_long(delta, "delta")
        old = self._lwm
        self._lwm = _in_long(old + delta, "next(delta): lwm + delta")
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
        self.update_abs(_in_long(start + delta, "update(start, delta): start + delta"))
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
        return

    def __repr__(self) -> str:
        return f"VolatileUpdateCounter(lwm={self._lwm})"


# --------------------------------------------------------------------------- rebalance
def rebalance_decision(partition: int, states: list, counters: list, history=None,
                       sizes=None, threshold: int = 500, prefer_history: bool = False,
                       reset=True) -> dict:
    """The coordinator's decision for one partition, written the way Ignite walks it.

    Parameters
    ----------
    partition : int
        The partition id (it picks a supplier: ``candidates[partition % len]``).
    states, counters : list of int
        Per node (node index order): the state ordinal and the counter (LWM of an OWNING
        copy, initial counter of a MOVING one).
    history : list of int, optional
        Per node: the counter its WAL can replay from, -1 for none. None: no history.
    sizes : list of int, optional
        Per node: the copy's size. None: unknown, i.e. larger than any threshold and gap.
    threshold : int
        OWNING copies of at most this many entries report no history (unless preferred).
    prefer_history : bool
        ``preferWalRebalance``.
    reset : bool or list of bool
        Which nodes' OWNING copies ``resetOwnersByCounter`` may switch to MOVING.

    Returns
    -------
    dict
        ``max`` (-1 without an OWNING copy), ``max_owners`` (list of nodes),
        ``suppliers`` ({node: counter}), and per node lists ``kind``, ``supplier``,
        ``from_counter``.

    Examples
    --------
    >>> d = rebalance_decision(7, [OWNING, OWNING, OWNING, MOVING], [120, 120, 100, 0],
    ...                        history=[80, 110, -1, -1], sizes=[10000, 10000, 9990, 0])
    >>> d["max"], d["max_owners"], d["suppliers"], d["kind"], d["supplier"]
    (120, [0, 1], {0: 100}, [0, 0, 1, 2], [-1, -1, 0, 1])
    """
    n = len(states)
    big = float("inf")
    size = (lambda i: big) if sizes is None else (lambda i: sizes[i])
    resets = [reset] * n if isinstance(reset, bool) else list(reset)
    # assignPartitionStates: varCntrs, maxCntrs (first max owner gives the size)
    var_cntrs = set()
    max_cnt, max_nodes, max_size = None, [], None
    for i in range(n):
        if states[i] not in (OWNING, MOVING):
            continue
        var_cntrs.add(counters[i])
        if states[i] != OWNING:
            continue
        if max_cnt is None or counters[i] > max_cnt:
            max_cnt, max_nodes, max_size = counters[i], [i], size(i)
        elif counters[i] == max_cnt:
            max_nodes.append(i)
    # assignHistoricalSuppliers
    suppliers = {}
    max_value = max_cnt if max_cnt is not None else 0
    non_max = sorted(c for c in var_cntrs if 0 < c < max_value)
    if non_max:
        for owner in max_nodes:
            if history is None or history[owner] < 0:
                continue
            if not prefer_history and not size(owner) > threshold:
                continue  # this copy reserved no history
            k = bisect.bisect_left(non_max, history[owner])   # ceiling
            while k < len(non_max):
                c = non_max[k]
                if prefer_history or max_value - c < max_size:
                    suppliers[owner] = c
                    break
                k += 1                                         # higher
    have_history = bool(suppliers)
    # resetOwnersByCounter
    moving = [states[i] == MOVING for i in range(n)]
    owning = [states[i] == OWNING for i in range(n)]
    for i in range(n):
        if owning[i] and resets[i] and i not in max_nodes:
            owning[i], moving[i] = False, True
    cleared = [moving[i] and states[i] == OWNING and not have_history for i in range(n)]
    # generateAssignments
    kind, supplier, from_counter = [NONE] * n, [-1] * n, [-1] * n
    owners = [i for i in range(n) if owning[i]]
    for i in range(n):
        if not moving[i]:
            continue
        cands = [o for o in sorted(suppliers) if suppliers[o] <= counters[i]]
        if cands and not cleared[i]:
            kind[i], supplier[i] = HISTORICAL, cands[partition % len(cands)]
            from_counter[i] = counters[i]
        else:
            remote = [o for o in owners if o != i]
            if remote:
                kind[i], supplier[i] = FULL, remote[partition % len(remote)]
    return {"max": -1 if max_cnt is None else max_cnt, "max_owners": max_nodes,
            "suppliers": suppliers, "kind": kind, "supplier": supplier,
            "from_counter": from_counter}


# --------------------------------------------------------------------------- exchange
def exchange(nodes: list, states=None, finalize=None) -> list:
    """§9.6 over scalar counters: ``nodes[i][p]`` is node i's counter of partition p.

    Parameters
    ----------
    nodes : list of list of UpdateCounter or VolatileUpdateCounter
        Changed in place.
    states : list of list of int, optional
        ``states[i][p]``; None: every copy OWNING. Only OWNING and MOVING copies report
        their LWM and receive the maximum.
    finalize : list of bool, optional
        Partitions whose gaps every node closes first (a server left); None: none.

    Returns
    -------
    list of int
        The maximum LWM per partition (0 where no copy reported).

    Examples
    --------
    >>> a, b = UpdateCounter(), UpdateCounter()
    >>> a.update(0, 5), b.update(0, 2), b.update(3, 1)
    (True, True, True)
    >>> exchange([[a], [b]], finalize=[True])
    [5]
    >>> b.lwm, b.hwm, a.hwm
    (5, 5, 5)
    """
    parts = len(nodes[0]) if nodes else 0
    if finalize is not None:
        for row in nodes:
            for p in range(parts):
                if finalize[p]:
                    row[p].finalize()
    live = [[states is None or states[i][p] in (OWNING, MOVING) for p in range(parts)]
            for i in range(len(nodes))]
    best = []
    for p in range(parts):
        lwms = [nodes[i][p].lwm for i in range(len(nodes)) if live[i][p]]
        best.append(max(lwms) if lwms else 0)
    for i, row in enumerate(nodes):
        for p in range(parts):
            if live[i][p] and not (best[p] == 0 and row[p].lwm == 0):
                row[p].update_abs(best[p])
    return best
