"""Ignite partition update counters for many partitions at once (docs/design.md §9.3, §9.4).

One :class:`CounterTable` holds, per partition, LWM, HWM, the initial counter, the ``first``
flag and the out-of-order gap items. The items of a partition live in one sorted C buffer of
``(start, delta)`` int64 pairs (grown by doubling, at most ``MAX_ITEMS`` items), searched by
bisection: no Python object per partition or per item.

Every entry point trusts its arguments: :mod:`hzfast.ignite.counters` validates a private
snapshot of them first (partitions in ``[0, P)``, starts, deltas and values ``>= 0``,
``start + delta`` within int64, gap items sorted, distinct and within int64). Kernels
report expected outcomes (too many gaps, an absolute value below the highest applied counter,
a reservation past int64) as an outcome code and the index where they stopped; they never
raise from inside a loop.

Invariant kept on validated input: every item has ``start >= 0``, ``delta >= 0`` and
``start + delta <= INT64_MAX``, so no sum the kernels form can overflow (§9.3.5).
"""
import threading

import numpy as np

cimport cython
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memmove

from hzfast._types cimport (int32_t, int64_t, uint8_t, intp_t, S_OK, S_BAD_PARTITION,
                           S_NEGATIVE, S_OVERFLOW)

# Outcome of a counter operation. Not hzfast._types.Status: these are not input problems but
# the counter's own answers, which the Python layer turns into UpdateCounterError/MemoryError.
cdef enum Outcome:
    DONE = 0              # applied
    TOO_MANY_GAPS = 1     # MAX_ITEMS items present and the update needs a new one
    BELOW_HIGHEST = 2     # update_absolute(v) with LWM <= v < highest applied counter
    OVERFLOW = 3          # a reservation would take HWM past INT64_MAX
    NO_MEMORY = 4         # growing a gap buffer failed

cdef enum:
    MAX_ITEMS_C = 10000

MAX_ITEMS = MAX_ITEMS_C
OUTCOME_DONE = DONE
OUTCOME_TOO_MANY_GAPS = TOO_MANY_GAPS
OUTCOME_BELOW_HIGHEST = BELOW_HIGHEST
OUTCOME_OVERFLOW = OVERFLOW
OUTCOME_NO_MEMORY = NO_MEMORY

cdef int64_t INT64_MAX_C = 0x7FFFFFFFFFFFFFFF


cdef struct Gaps:
    int64_t* data      # 2 * cap int64: start, delta, start, delta, ... sorted by start
    int32_t count
    int32_t cap


# --------------------------------------------------------------------------- gap buffer
cdef inline intp_t lower_bound(const int64_t* a, intp_t count, int64_t key) noexcept nogil:
    """First item index whose start is ``>= key`` (``count`` if none)."""
    cdef intp_t lo = 0, hi = count, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[2 * mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline void gap_remove(Gaps* g, intp_t i) noexcept nogil:
    """Drop item ``i`` (``0 <= i < count``)."""
    memmove(g.data + 2 * i, g.data + 2 * (i + 1), (g.count - i - 1) * 2 * sizeof(int64_t))
    g.count -= 1


cdef inline int gap_reserve(Gaps* g, intp_t need) noexcept nogil:
    """Make room for ``need`` items: DONE, or NO_MEMORY (the buffer is left as it was)."""
    cdef intp_t cap = g.cap
    cdef int64_t* grown
    if need <= cap:
        return DONE
    if cap < 4:
        cap = 4
    while cap < need:
        cap *= 2
    grown = <int64_t*>realloc(g.data, cap * 2 * sizeof(int64_t))
    if grown == NULL:
        return NO_MEMORY
    g.data = grown
    g.cap = <int32_t>cap
    return DONE


cdef inline int gap_insert(Gaps* g, intp_t i, int64_t start, int64_t delta) noexcept nogil:
    """Insert ``(start, delta)`` at index ``i``: DONE or NO_MEMORY (nothing changed)."""
    if gap_reserve(g, g.count + 1) != DONE:
        return NO_MEMORY
    memmove(g.data + 2 * (i + 1), g.data + 2 * i, (g.count - i) * 2 * sizeof(int64_t))
    g.data[2 * i] = start
    g.data[2 * i + 1] = delta
    g.count += 1
    return DONE


cdef inline int64_t gap_highest(const Gaps* g, int64_t lwm) noexcept nogil:
    """``highestAppliedCounter()``: the end of the last item (by start), else the LWM."""
    if g.count == 0:
        return lwm
    return g.data[2 * (g.count - 1)] + g.data[2 * (g.count - 1) + 1]


# --------------------------------------------------------------------------- one operation
cdef inline int tracking_update(int64_t* lwm, Gaps* g, int64_t s, int64_t d,
                                uint8_t* applied) noexcept nogil:
    """§9.3.2 ``update(s, d)`` on one partition; ``applied`` receives the boolean result.

    Same decisions as Ignite, in an order that mutates nothing before the outcome is known:
    on TOO_MANY_GAPS (or NO_MEMORY) the partition is exactly as before the call (§9.3.2).
    """
    cdef int64_t cur = lwm[0], e = s + d, folded = d, ps, pd
    cdef intp_t cnt = g.count, i = 0, j = 0
    cdef bint found = False
    cdef int64_t* a = g.data
    if cur > s:                                   # stale
        applied[0] = 0
        return DONE
    if cnt:
        j = lower_bound(a, cnt, e)
        found = j < cnt and a[2 * j] == e
    if cur == s:                                  # in order: LWM moves, absorbing the next item
        if found:
            e += a[2 * j + 1]
            gap_remove(g, j)
        lwm[0] = e
        applied[0] = 1
        return DONE
    if found:                                     # cur < s: fold the item starting at e
        folded += a[2 * j + 1]
    if cnt:
        i = lower_bound(a, cnt, s)                # i - 1: greatest start < s
        if i > 0:
            ps = a[2 * (i - 1)]
            pd = a[2 * (i - 1) + 1]
            if ps + pd == s:                      # the previous item grows
                a[2 * (i - 1) + 1] = pd + folded
                if found:
                    gap_remove(g, j)
                applied[0] = 1
                return DONE
            if (e - 1) - ps < pd:                 # covered by the previous item
                if found:
                    gap_remove(g, j)
                applied[0] = 0
                return DONE
    if cnt - found >= MAX_ITEMS_C:
        return TOO_MANY_GAPS
    if i < cnt and a[2 * i] == s and not (found and j == i):
        if found:                                 # an item already starts at s
            gap_remove(g, j)
        applied[0] = 0
        return DONE
    if found:                                     # j >= i: shift [i, j) right over item j
        memmove(a + 2 * (i + 1), a + 2 * i, (j - i) * 2 * sizeof(int64_t))
        a[2 * i] = s
        a[2 * i + 1] = folded
    elif gap_insert(g, i, s, folded) != DONE:
        return NO_MEMORY
    applied[0] = 1
    return DONE


cdef inline int tracking_absolute(int64_t* lwm, int64_t* hwm, uint8_t* first, Gaps* g,
                                  int64_t v) noexcept nogil:
    """§9.3.3 ``update(long val)``: DONE or BELOW_HIGHEST (HWM already raised)."""
    cdef int64_t cur = lwm[0]
    cdef int64_t mx = v if v > cur else cur
    if hwm[0] < mx:
        hwm[0] = mx
    if v < cur:
        return DONE
    if v < gap_highest(g, cur):
        return BELOW_HIGHEST
    lwm[0] = v
    if first[0]:
        g.count = 0
        first[0] = 0
    return DONE


# --------------------------------------------------------------------------- batch checks
def check_ops(const int32_t[::1] parts, const int64_t[::1] starts, const int64_t[::1] deltas,
              intp_t partition_count):
    """First problem of an operation batch: ``(status, index, which)`` (hzfast._types
    Status; ``which``: 0 partitions, 1 starts, 2 deltas), ``(S_OK, -1, -1)`` when none.

    ``starts`` may be empty (a reservation batch has none); otherwise all three have one
    length. Problems, per operation in array order: partition outside ``[0, P)``
    (BAD_PARTITION), negative delta, negative start (NEGATIVE), ``start + delta`` past
    int64 (OVERFLOW).
    """
    cdef intp_t m = parts.shape[0], k
    cdef bint with_starts = starts.shape[0] != 0
    cdef int status = S_OK, which = -1
    with nogil:
        for k in range(m):
            if <size_t>parts[k] >= <size_t>partition_count:
                status = S_BAD_PARTITION; which = 0
            elif deltas[k] < 0:
                status = S_NEGATIVE; which = 2
            elif with_starts and starts[k] < 0:
                status = S_NEGATIVE; which = 1
            elif with_starts and starts[k] > INT64_MAX_C - deltas[k]:
                status = S_OVERFLOW; which = 1
            if status != S_OK:
                break
    if status == S_OK:
        return S_OK, -1, -1
    return status, k, which


# --------------------------------------------------------------------------- the table
@cython.auto_pickle(False)   # raw gap buffers: not picklable
cdef class CounterTable:
    """Update counters of ``n`` partitions (tracking or volatile) behind one lock.

    ``lwm``, ``hwm``, ``initial`` are int64 arrays of length ``n`` (in the volatile variant
    ``hwm`` is ``lwm``); ``first`` is uint8. Methods take already-validated arguments.
    """
    cdef Gaps* gaps
    cdef int64_t* lwm_p
    cdef int64_t* hwm_p
    cdef int64_t* initial_p
    cdef uint8_t* first_p
    cdef readonly intp_t n
    cdef readonly bint tracking
    cdef readonly object lwm, hwm, initial, first, lock

    def __cinit__(self, intp_t n, bint tracking):
        cdef intp_t size = n if n > 0 else 1, i
        cdef int64_t[::1] lw, hw, ini
        cdef uint8_t[::1] fi
        self.n = n
        self.tracking = tracking
        self.lock = threading.Lock()
        # one spare element so that a table of 0 partitions still has valid pointers
        self.lwm = np.zeros(size, dtype=np.int64)
        self.hwm = np.zeros(size, dtype=np.int64) if tracking else self.lwm
        self.initial = np.zeros(size, dtype=np.int64)
        self.first = np.ones(size, dtype=np.uint8)
        lw, hw, ini, fi = self.lwm, self.hwm, self.initial, self.first
        self.lwm_p = &lw[0]
        self.hwm_p = &hw[0]
        self.initial_p = &ini[0]
        self.first_p = &fi[0]
        self.gaps = NULL
        if tracking:
            self.gaps = <Gaps*>realloc(NULL, size * sizeof(Gaps))
            if self.gaps == NULL:
                raise MemoryError("cannot allocate the gap directory")
            for i in range(size):
                self.gaps[i].data = NULL
                self.gaps[i].count = 0
                self.gaps[i].cap = 0

    def __dealloc__(self):
        cdef intp_t i
        if self.gaps != NULL:
            for i in range(self.n):
                free(self.gaps[i].data)
            free(self.gaps)

    # ------------------------------------------------------------------ batches
    def update_batch(self, const int32_t[::1] parts, const int64_t[::1] starts,
                     const int64_t[::1] deltas, uint8_t[::1] out):
        """Apply ``update(parts[k], starts[k], deltas[k])`` in order, results into ``out``.

        Returns ``(outcome, k)``: ``(DONE, m)`` when all ``m`` were applied, else the outcome
        of operation ``k``, which had no effect (operations before it are applied).
        """
        cdef intp_t m = parts.shape[0], k = 0
        cdef int outcome = DONE
        cdef int32_t p
        cdef int64_t s, d, e
        with self.lock, nogil:
            if self.tracking:
                for k in range(m):
                    p = parts[k]
                    outcome = tracking_update(&self.lwm_p[p], &self.gaps[p], starts[k],
                                              deltas[k], &out[k])
                    if outcome != DONE:
                        break
            else:
                for k in range(m):
                    p = parts[k]
                    e = starts[k] + deltas[k]
                    if self.lwm_p[p] < e:
                        self.lwm_p[p] = e
                    out[k] = 0
        if outcome == DONE:
            return DONE, m
        return outcome, k

    def reserve_batch(self, const int32_t[::1] parts, const int64_t[::1] deltas,
                      int64_t[::1] out, int64_t[::1] scratch):
        """Reserve ``deltas[k]`` counters of ``parts[k]`` in order: ``out[k]`` = old HWM.

        All or nothing: HWM is updated only if no reservation passes INT64_MAX; otherwise
        returns ``(OVERFLOW, k)`` for the first one that would and changes nothing.
        ``scratch`` has length ``n``.
        """
        cdef intp_t m = parts.shape[0], k = 0, n = self.n
        cdef int outcome = DONE
        cdef int32_t p
        cdef int64_t h, d
        with self.lock, nogil:
            if n:
                memcpy(&scratch[0], self.hwm_p, n * sizeof(int64_t))
            for k in range(m):
                p = parts[k]
                h = scratch[p]
                d = deltas[k]
                if d > INT64_MAX_C - h:
                    outcome = OVERFLOW
                    break
                out[k] = h
                scratch[p] = h + d
            if outcome == DONE and n:
                memcpy(self.hwm_p, &scratch[0], n * sizeof(int64_t))
        if outcome == DONE:
            return DONE, m
        return outcome, k

    def absolute_batch(self, const int32_t[::1] parts, const int64_t[::1] values):
        """``update_absolute(parts[k], values[k])`` in order; ``(outcome, k)`` as
        :meth:`update_batch` (on BELOW_HIGHEST the HWM of operation ``k`` is raised, as
        in Ignite, and nothing else of it is applied)."""
        cdef intp_t m = parts.shape[0], k = 0
        cdef int outcome = DONE
        cdef int32_t p
        cdef int64_t v
        with self.lock, nogil:
            for k in range(m):
                p = parts[k]
                v = values[k]
                if self.tracking:
                    outcome = tracking_absolute(&self.lwm_p[p], &self.hwm_p[p],
                                                &self.first_p[p], &self.gaps[p], v)
                    if outcome != DONE:
                        break
                elif self.lwm_p[p] < v:
                    self.lwm_p[p] = v
        if outcome == DONE:
            return DONE, m
        return outcome, k

    # ------------------------------------------------------------------ per partition
    def gap_items(self, intp_t p):
        """The items of partition ``p``: int64 array of shape (count, 2), a copy."""
        cdef intp_t c = self.gaps[p].count if self.tracking else 0
        out = np.empty((c, 2), dtype=np.int64)
        cdef int64_t[:, ::1] o = out
        if c:
            with self.lock:
                memcpy(&o[0, 0], self.gaps[p].data, c * 2 * sizeof(int64_t))
        return out

    def set_gap_items(self, intp_t p, const int64_t[:, ::1] items):
        """Replace the items of ``p`` by ``items`` (sorted, distinct starts, validated)."""
        cdef intp_t c = items.shape[0]
        with self.lock:
            if gap_reserve(&self.gaps[p], c) != DONE:
                raise MemoryError("cannot grow a gap buffer")
            if c:
                memcpy(self.gaps[p].data, &items[0, 0], c * 2 * sizeof(int64_t))
            self.gaps[p].count = <int32_t>c

    def gap_counts(self):
        """Items per partition: int32 array of length ``n``."""
        out = np.zeros(self.n, dtype=np.int32)
        cdef int32_t[::1] o = out
        cdef intp_t i
        if self.tracking:
            for i in range(self.n):
                o[i] = self.gaps[i].count
        return out

    def highest_applied(self):
        """``highestAppliedCounter()`` of every partition: int64 array of length ``n``."""
        out = np.empty(self.n, dtype=np.int64)
        cdef int64_t[::1] o = out
        cdef intp_t i
        with self.lock:
            for i in range(self.n):
                o[i] = gap_highest(&self.gaps[i], self.lwm_p[i]) if self.tracking \
                    else self.lwm_p[i]
        return out

    def finalize(self, const uint8_t[::1] mask):
        """§9.3.4 on every partition ``p`` with ``mask[p]``: returns ``(-1, rows)``, the
        closed gaps as int64 (k, 3) rows ``(partition, from, to)`` in partition then start
        order; then those partitions have no items and HWM = LWM.

        Returns ``(p, None)`` and changes nothing when partition ``p`` would report a gap
        starting past int64 (its LWM, or an item before the next, at 2**63 - 1: ``from =
        LWM + 1`` would wrap, as it does in Java)."""
        cdef intp_t i, total = 0, bad
        with self.lock:
            bad = self._blocker(mask)
            if bad != -1:
                return bad, None
            if self.tracking:
                for i in range(self.n):
                    if mask[i]:
                        total += self.gaps[i].count
            out = np.empty((total, 3), dtype=np.int64)
            if self.tracking:
                self._finalize_into(mask, out)
            for i in range(self.n):
                if mask[i]:
                    if self.tracking:
                        self.gaps[i].count = 0
                    self.hwm_p[i] = self.lwm_p[i]
        return -1, out

    def finalize_blocker(self, const uint8_t[::1] mask):
        """The first masked partition that :meth:`finalize` would refuse, or -1."""
        with self.lock:
            return self._blocker(mask)

    cdef intp_t _blocker(self, const uint8_t[::1] mask) noexcept:
        """First masked partition whose gaps would start past int64 (LWM, or the end of
        an item followed by another, at 2**63 - 1), else -1. Caller holds the lock."""
        cdef intp_t i, j
        cdef int64_t cur
        cdef Gaps* g
        if not self.tracking:
            return -1
        for i in range(self.n):
            if mask[i]:
                g = &self.gaps[i]
                cur = self.lwm_p[i]
                for j in range(g.count):
                    if cur == INT64_MAX_C:
                        return i
                    cur = g.data[2 * j] + g.data[2 * j + 1]
        return -1

    cdef void _finalize_into(self, const uint8_t[::1] mask, int64_t[:, ::1] out) noexcept:
        """Write the gaps of the masked partitions and move their LWM (items kept)."""
        cdef intp_t i, j, r = 0
        cdef int64_t cur
        cdef Gaps* g
        for i in range(self.n):
            if not mask[i]:
                continue
            g = &self.gaps[i]
            cur = self.lwm_p[i]
            for j in range(g.count):
                out[r, 0] = i
                out[r, 1] = cur + 1
                out[r, 2] = g.data[2 * j]
                cur = g.data[2 * j] + g.data[2 * j + 1]
                r += 1
            self.lwm_p[i] = cur

    def reset(self, intp_t p):
        """``reset()``: LWM = HWM = initial = 0, no items, ``first`` kept."""
        with self.lock:
            self.lwm_p[p] = 0
            self.hwm_p[p] = 0
            self.initial_p[p] = 0
            if self.tracking:
                self.gaps[p].count = 0

    def init(self, intp_t p, int64_t initial):
        """``init(initial, ...)``: LWM = HWM = initial = ``initial`` (items untouched)."""
        with self.lock:
            self.lwm_p[p] = initial
            self.hwm_p[p] = initial
            self.initial_p[p] = initial
