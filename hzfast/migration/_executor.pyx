"""The executor kernel: the master's parallel-migration loop of docs/design.md §6, one step at
a time (:class:`hzfast.migration.executor.Executor` wraps it and validates everything first).

State: per queue (a partition's run of queued plan rows, in queue order) its head and whether
the head is in flight; per member its load (in-flight migrations it takes part in as
destination or source endpoint). Queue heads with the same destination and endpoint (a
*pair*) are equally eligible at any moment, so each pair keeps its idle heads in a heap by
queue index and only its best head is a *candidate*. A pair whose destination or endpoint is
at the limit is *parked* on that member and examined again only when the member's load drops.

``ready`` walks the candidates in queue order with tentative loads (the §6.1 scan: each head
that fits beside the ones already picked is picked), then undoes every tentative change; the
only lasting changes are reorganisations that do not alter any answer (parking a pair on a
member at the limit, dropping stale heap entries). ``start`` and ``finish`` are O(log N) plus
the pairs a finish unparks, so driving a whole plan costs O((N + parkings) log N), as the
offline schedule does (§6.3).

Row states: WAITING (queued, not started), IN_FLIGHT, SUCCEEDED, FAILED, INSTANT (never
queued). Expected refusals are returned as ``Answer`` codes, never raised.
"""
import numpy as np

cimport cython
from libc.stdlib cimport free, realloc

from hzfast._types cimport int32_t, int64_t, uint8_t, intp_t

# row states
cdef enum:
    WAITING = 0
    IN_FLIGHT = 1
    SUCCEEDED = 2
    FAILED = 3
    INSTANT = 4

ROW_WAITING = WAITING
ROW_IN_FLIGHT = IN_FLIGHT
ROW_SUCCEEDED = SUCCEEDED
ROW_FAILED = FAILED
ROW_INSTANT = INSTANT

# Answer of start/finish: not input problems (the wrapper validated the input) but the
# executor's own refusals, which the wrapper turns into ValueErrors.
cdef enum Answer:
    ACCEPTED = 0
    IS_INSTANT = 1          # the row is an instant decision: never queued
    NOT_HEAD = 2            # an earlier row of its partition has not finished
    NOT_WAITING = 3         # start: already started or finished
    NOT_IN_FLIGHT = 4       # finish: not started, or already finished
    STOPPED = 5             # start after a failure or stop()
    DESTINATION_FULL = 6    # the destination is at the limit
    ENDPOINT_FULL = 7       # the source endpoint is at the limit

ANSWER_ACCEPTED = ACCEPTED
ANSWER_IS_INSTANT = IS_INSTANT
ANSWER_NOT_HEAD = NOT_HEAD
ANSWER_NOT_WAITING = NOT_WAITING
ANSWER_NOT_IN_FLIGHT = NOT_IN_FLIGHT
ANSWER_STOPPED = STOPPED
ANSWER_DESTINATION_FULL = DESTINATION_FULL
ANSWER_ENDPOINT_FULL = ENDPOINT_FULL


cdef struct Entry:
    int32_t q           # queue index (the heap key: Hazelcast's scan order)
    int32_t k           # plan row, the head of queue q when pushed


cdef struct Heap:
    Entry* a
    intp_t n
    intp_t cap


cdef struct Stack:
    int32_t* a
    intp_t n
    intp_t cap


cdef inline bint before(Entry x, Entry y) noexcept nogil:
    return x.q < y.q or (x.q == y.q and x.k < y.k)


cdef int heap_push(Heap* h, Entry e) except -1 nogil:
    cdef Entry* grown
    cdef intp_t i, parent
    if h.n == h.cap:
        grown = <Entry*>realloc(h.a, (2 * h.cap + 4) * sizeof(Entry))
        if grown == NULL:
            with gil:
                raise MemoryError("executor: out of memory")
        h.a = grown
        h.cap = 2 * h.cap + 4
    i = h.n
    h.n += 1
    while i > 0:
        parent = (i - 1) >> 1
        if not before(e, h.a[parent]):
            break
        h.a[i] = h.a[parent]
        i = parent
    h.a[i] = e
    return 0


cdef Entry heap_pop(Heap* h) noexcept nogil:
    """Remove and return the smallest entry (the heap is not empty)."""
    cdef Entry top = h.a[0], last
    cdef intp_t i = 0, child
    h.n -= 1
    if h.n == 0:
        return top
    last = h.a[h.n]
    while True:
        child = 2 * i + 1
        if child >= h.n:
            break
        if child + 1 < h.n and before(h.a[child + 1], h.a[child]):
            child += 1
        if not before(h.a[child], last):
            break
        h.a[i] = h.a[child]
        i = child
    h.a[i] = last
    return top


cdef int stack_push(Stack* s, int32_t v) except -1 nogil:
    cdef int32_t* grown
    if s.n == s.cap:
        grown = <int32_t*>realloc(s.a, (2 * s.cap + 4) * sizeof(int32_t))
        if grown == NULL:
            with gil:
                raise MemoryError("executor: out of memory")
        s.a = grown
        s.cap = 2 * s.cap + 4
    s.a[s.n] = v
    s.n += 1
    return 0


@cython.auto_pickle(False)   # raw heap buffers: not picklable
cdef class Core:
    """The executor's state over prepared queues (see the module docstring).

    ``dst``/``endpoint`` int32 per plan row, ``queue`` int32 per row (-1: instant),
    ``qidx``/``qstart`` the queues (queue q = rows ``qidx[qstart[q]:qstart[q+1]]``),
    ``pair`` int32 per row (queued rows: in ``[0, pair_count)``), ``member_count`` > every
    member in ``dst`` and ``endpoint``. The arrays are kept (pass private ones)."""

    cdef readonly intp_t n
    cdef readonly intp_t waiting
    cdef readonly intp_t in_flight
    cdef readonly bint stopped
    cdef readonly bint failed
    cdef int32_t limit
    cdef intp_t nqueues, npairs, nmembers
    cdef int64_t session
    cdef const int32_t[::1] dst
    cdef const int32_t[::1] endpoint
    cdef const int32_t[::1] queue
    cdef const intp_t[::1] qidx
    cdef const intp_t[::1] qstart
    cdef const int32_t[::1] pair
    cdef intp_t[::1] head
    cdef uint8_t[::1] state
    cdef int32_t[::1] load
    cdef int32_t[::1] extra          # tentative loads inside ready()
    cdef uint8_t[::1] parked
    cdef int64_t[::1] seen           # session in which a pair was found blocked
    cdef Heap* pairs
    cdef Stack* lists                # per member: the pairs parked on it
    cdef Heap cand
    cdef Heap undo_pairs             # ready(): entries taken from pair heaps (q, k)
    cdef Heap undo_cand              # ready(): candidate entries to put back
    cdef object state_arr

    def __cinit__(self, const int32_t[::1] dst, const int32_t[::1] endpoint,
                  const int32_t[::1] queue, const intp_t[::1] qidx,
                  const intp_t[::1] qstart, const int32_t[::1] pair, intp_t pair_count,
                  intp_t member_count, int32_t limit):
        cdef intp_t q, k, i
        self.n = dst.shape[0]
        self.dst = dst
        self.endpoint = endpoint
        self.queue = queue
        self.qidx = qidx
        self.qstart = qstart
        self.pair = pair
        self.nqueues = qstart.shape[0] - 1
        self.npairs = max(pair_count, 1)
        self.nmembers = max(member_count, 1)
        self.limit = limit
        self.session = 0
        self.head = np.array(qstart[:self.nqueues], dtype=np.intp)
        self.state_arr = np.full(self.n, INSTANT, dtype=np.uint8)
        self.state = self.state_arr
        self.load = np.zeros(self.nmembers, dtype=np.int32)
        self.extra = np.zeros(self.nmembers, dtype=np.int32)
        self.parked = np.zeros(self.npairs, dtype=np.uint8)
        self.seen = np.full(self.npairs, -1, dtype=np.int64)
        self.cand.a = self.undo_pairs.a = self.undo_cand.a = NULL
        self.cand.n = self.cand.cap = 0
        self.undo_pairs.n = self.undo_pairs.cap = 0
        self.undo_cand.n = self.undo_cand.cap = 0
        self.pairs = <Heap*>realloc(NULL, self.npairs * sizeof(Heap))
        self.lists = <Stack*>realloc(NULL, self.nmembers * sizeof(Stack))
        if self.pairs == NULL or self.lists == NULL:
            raise MemoryError("executor: out of memory")
        for i in range(self.npairs):
            self.pairs[i].a = NULL
            self.pairs[i].n = self.pairs[i].cap = 0
        for i in range(self.nmembers):
            self.lists[i].a = NULL
            self.lists[i].n = self.lists[i].cap = 0
        self.waiting = qstart[self.nqueues] - qstart[0] if self.nqueues > 0 else 0
        self.in_flight = 0
        self.stopped = self.failed = False
        for q in range(self.nqueues):
            for i in range(qstart[q], qstart[q + 1]):
                self.state[qidx[i]] = WAITING
            k = qidx[qstart[q]]
            heap_push(&self.pairs[pair[k]], Entry(<int32_t>q, <int32_t>k))
            heap_push(&self.cand, Entry(<int32_t>q, <int32_t>k))

    def __dealloc__(self):
        cdef intp_t i
        if self.pairs != NULL:
            for i in range(self.npairs):
                free(self.pairs[i].a)
            free(self.pairs)
        if self.lists != NULL:
            for i in range(self.nmembers):
                free(self.lists[i].a)
            free(self.lists)
        free(self.cand.a)
        free(self.undo_pairs.a)
        free(self.undo_cand.a)

    # ------------------------------------------------------------------ internals
    cdef inline bint top_of(self, intp_t pr, Entry* out) noexcept:
        """Pair ``pr``'s best idle head (dropping stale entries); False when none."""
        cdef Heap* h = &self.pairs[pr]
        while h.n and self.state[h.a[0].k] != WAITING:
            heap_pop(h)
        if h.n == 0:
            return False
        out[0] = h.a[0]
        return True

    cdef int offer(self, intp_t pr) except -1:
        """Make pair ``pr``'s best head a candidate (if it has one)."""
        cdef Entry e
        if self.top_of(pr, &e):
            heap_push(&self.cand, e)
        return 0

    cdef int park(self, intp_t pr, int32_t m) except -1:
        self.parked[pr] = 1
        stack_push(&self.lists[m], <int32_t>pr)
        return 0

    cdef int unpark(self, int32_t m) except -1:
        """Member ``m`` dropped below the limit: its parked pairs become candidates."""
        cdef Stack* s = &self.lists[m]
        cdef intp_t i, pr
        for i in range(s.n):
            pr = s.a[i]
            self.parked[pr] = 0
            self.offer(pr)
        s.n = 0
        return 0

    cdef int release(self, int32_t m) except -1:
        self.load[m] -= 1
        if self.load[m] == self.limit - 1:
            self.unpark(m)
        return 0

    # ------------------------------------------------------------------ steps
    def ready(self):
        """ndarray[int64]: the rows the §6.1 scan starts now, in scan order (no lasting
        change of the answerable state)."""
        cdef list picked = []
        cdef Entry e, top
        cdef intp_t pr, i
        cdef int32_t d, s
        cdef int32_t limit = self.limit
        if self.stopped or self.waiting == 0:
            return np.zeros(0, dtype=np.int64)
        self.session += 1
        self.undo_pairs.n = 0
        self.undo_cand.n = 0
        while self.cand.n:
            e = heap_pop(&self.cand)
            if self.state[e.k] != WAITING:
                continue                       # started or finished since: stale
            pr = self.pair[e.k]
            if self.parked[pr] or self.seen[pr] == self.session:
                continue                       # its pair cannot start anything now
            if not self.top_of(pr, &top) or top.k != e.k:
                continue                       # not the pair's best head: stale
            d = self.dst[e.k]
            s = self.endpoint[e.k]
            if d >= 0 and self.load[d] >= limit:
                self.park(pr, d)
                continue
            if s >= 0 and self.load[s] >= limit:
                self.park(pr, s)
                continue
            heap_push(&self.undo_cand, e)      # goes back as it is, picked or not
            if (d >= 0 and self.load[d] + self.extra[d] >= limit) or \
                    (s >= 0 and self.load[s] + self.extra[s] >= limit):
                self.seen[pr] = self.session   # full with this scan's picks
                continue
            picked.append(e.k)
            if d >= 0:
                self.extra[d] += 1
            if s >= 0 and s != d:
                self.extra[s] += 1
            heap_push(&self.undo_pairs, heap_pop(&self.pairs[pr]))
            self.offer(pr)                     # the pair's next head, in order
        # undo the tentative picks
        for i in range(self.undo_pairs.n):
            e = self.undo_pairs.a[i]
            heap_push(&self.pairs[self.pair[e.k]], e)
            d = self.dst[e.k]
            s = self.endpoint[e.k]
            if d >= 0:
                self.extra[d] = 0
            if s >= 0:
                self.extra[s] = 0
        for i in range(self.undo_cand.n):
            heap_push(&self.cand, self.undo_cand.a[i])
        self.undo_pairs.n = 0
        self.undo_cand.n = 0
        return np.array(picked, dtype=np.int64)

    def check_start(self, intp_t k):
        """The Answer ``start(k)`` would give (nothing changes)."""
        cdef int32_t d, s, st = self.state[k]
        cdef intp_t q
        if st == INSTANT:
            return IS_INSTANT
        if st != WAITING:
            return NOT_WAITING
        if self.stopped:
            return STOPPED
        q = self.queue[k]
        if self.qidx[self.head[q]] != k:
            return NOT_HEAD
        d = self.dst[k]
        s = self.endpoint[k]
        if d >= 0 and self.load[d] >= self.limit:
            return DESTINATION_FULL
        if s >= 0 and self.load[s] >= self.limit:
            return ENDPOINT_FULL
        return ACCEPTED

    def start(self, intp_t k):
        """Start row ``k`` if it is eligible; returns the Answer (ACCEPTED: started)."""
        cdef int answer = self.check_start(k)
        cdef int32_t d, s
        cdef Entry top
        cdef intp_t pr
        if answer != ACCEPTED:
            return answer
        d = self.dst[k]
        s = self.endpoint[k]
        pr = self.pair[k]
        self.state[k] = IN_FLIGHT
        self.waiting -= 1
        self.in_flight += 1
        if d >= 0:
            self.load[d] += 1
        if s >= 0 and s != d:
            self.load[s] += 1
        # its pair's best head changes only when k was it (otherwise k's entry is stale)
        if not self.parked[pr] and self.pairs[pr].n and self.pairs[pr].a[0].k == k:
            heap_pop(&self.pairs[pr])
            self.offer(pr)
        return ACCEPTED

    def finish(self, intp_t k, bint ok):
        """Row ``k`` completed (``ok``: SUCCESS). Returns the Answer (ACCEPTED: done)."""
        cdef int32_t d, s
        cdef intp_t q, pr, nk
        if self.state[k] == INSTANT:
            return IS_INSTANT
        if self.state[k] != IN_FLIGHT:
            return NOT_IN_FLIGHT
        self.state[k] = SUCCEEDED if ok else FAILED
        self.in_flight -= 1
        if not ok:
            self.stopped = self.failed = True
        d = self.dst[k]
        s = self.endpoint[k]
        if d >= 0:
            self.release(d)
        if s >= 0 and s != d:
            self.release(s)
        q = self.queue[k]
        self.head[q] += 1
        if not self.stopped and self.head[q] < self.qstart[q + 1]:
            nk = self.qidx[self.head[q]]
            pr = self.pair[nk]
            heap_push(&self.pairs[pr], Entry(<int32_t>q, <int32_t>nk))
            if not self.parked[pr]:
                heap_push(&self.cand, Entry(<int32_t>q, <int32_t>nk))
        return ACCEPTED

    def stop(self):
        """No new starts from now on (an abort; in-flight rows still finish)."""
        self.stopped = True

    def states(self):
        """A copy of the row states (uint8 per plan row)."""
        return np.array(self.state_arr, copy=True)

    def load_of(self, intp_t m):
        """In-flight migrations member ``m`` takes part in (0 <= m < member count)."""
        return self.load[m] if m < self.nmembers else 0
