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

Building it is linear (docs/design.md §11, the master's planning step): :func:`prepare`
derives every queued row's endpoint from the partition's owner slot alone (a decision
writes constants into the slots it names and reads none, so slot 0 can be followed without
the rest of the row, backwards from the final table when that is what the caller has; or
takes the endpoints the planner wrote beside the decisions, for the master's step), and
numbers the pairs through a small table or a hash; :class:`Core` fills each pair's heap
with its queues in ascending order (a sorted array is a heap) and makes only each pair's
first head a candidate, so the first ``ready`` examines at most one head per pair rather
than every queue. ``ready`` stops as soon as every member that takes part in a queued row
is at the limit (counting its tentative picks): nothing after that could start.
"""
import numpy as np

cimport cython
from libc.stdlib cimport calloc, free, malloc, realloc

from hzfast._types cimport int32_t, int64_t, uint8_t, uint64_t, intp_t, S_OK
from hzfast.migration._decisions cimport (Columns, check_decision, columns_of,
                                         endpoint_of, owner_after_fields)

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


# ------------------------------------------------------------------ preparation
cdef inline int32_t owner_before(const Columns* c, intp_t k, int32_t o) noexcept nogil:
    """Slot 0 of a row before decision ``k``, from slot 0 after it (the decision undone:
    ``S[sni] = -1``, ``S[dni] = -1``, ``S[dci] = destination``, ``S[sci] = source``, in that
    order, as ``_decisions.unapply_step``). Cannot fail."""
    if c.sni[k] == 0:
        o = -1
    if c.dni[k] == 0:
        o = -1
    if c.dci[k] == 0:
        o = c.dst[k]
    if c.sci[k] == 0:
        o = c.src[k]
    return o


cdef inline int32_t owner_after(const Columns* c, intp_t k, int32_t o) noexcept nogil:
    """Slot 0 of a row after decision ``k``, from slot 0 before it
    (``_decisions.owner_after_fields``). Cannot fail."""
    return owner_after_fields(c.src[k], c.sci[k], c.sni[k], c.dst[k], c.dci[k], c.dni[k], o)


def first_descent(const int32_t[:] pid):
    """The first ``k`` with ``pid[k] < pid[k - 1]``, or -1 when ``pid`` is ascending."""
    cdef intp_t k, n = pid.shape[0], bad = -1
    with nogil:
        for k in range(1, n):
            if pid[k] < pid[k - 1]:
                bad = k
                break
    return bad


cdef bint valid_c(const Columns* c, intp_t P, intp_t R) noexcept nogil:
    """Every decision in range (``_decisions.check_decision`` with no member bound) and the
    partitions ascending (equal ones adjacent). One branch-free pass. Never raises."""
    cdef intp_t N = c.n, k
    cdef const int32_t* pid = c.pid
    cdef const int32_t* src = c.src
    cdef const int32_t* sci = c.sci
    cdef const int32_t* sni = c.sni
    cdef const int32_t* dst = c.dst
    cdef const int32_t* dci = c.dci
    cdef const int32_t* dni = c.dni
    cdef int bad = 0
    cdef int32_t R32 = <int32_t>R
    if N == 0:
        return True
    if P > 2147483647:
        P = 2147483647
    for k in range(N):
        bad |= ((pid[k] < 0) | (pid[k] >= <int32_t>P)
                | (sci[k] < -1) | (sci[k] >= R32) | (sni[k] < -1) | (sni[k] >= R32)
                | (dci[k] < -1) | (dci[k] >= R32) | (dni[k] < -1) | (dni[k] >= R32)
                | (src[k] < -1) | (dst[k] < -1)
                | ((dni[k] >= 0) != (dst[k] >= 0)) | ((sni[k] >= 0) & (src[k] < 0)))
    for k in range(1, N):
        bad |= pid[k] < pid[k - 1]
    return bad == 0


cdef void endpoints_c(const Columns* c, const uint8_t* inst, const int32_t[:] owner,
                      bint from_final, int32_t* endpoint) noexcept nogil:
    """Each row's source endpoint (``_decisions.endpoint_of``; instant rows -1): the
    partition's owner slot walked through its earlier decisions. ``owner`` is slot 0 of
    the initial table, or of the final one when ``from_final`` (each run is then undone on
    slot 0 first). The decisions passed :func:`valid_c`. Never raises."""
    cdef intp_t N = c.n, k, a = 0, b
    cdef const int32_t* pid = c.pid
    cdef int32_t p, o
    while a < N:
        p = pid[a]
        b = a + 1
        while b < N and pid[b] == p:
            b += 1
        o = owner[p]
        if from_final:
            for k in range(b - 1, a - 1, -1):
                o = owner_before(c, k, o)
        for k in range(a, b):
            endpoint[k] = endpoint_of(c.src[k], c.sci[k], inst[k], o)
            o = owner_after(c, k, o)
        a = b


cdef intp_t queues_c(const Columns* c, const uint8_t* inst, const int32_t* endpoint,
                     int32_t* queue, int32_t* qidx, int32_t* qstart, int32_t* pair,
                     intp_t* members) noexcept nogil:
    """The queues (``qidx[qstart[q]:qstart[q + 1]]`` = queue q's plan rows in order, one
    queue per run of equal partition ids that has a queued row; ``queue[k]`` = q, -1 for
    instant rows), in one pass that also zeroes ``pair`` for instant rows and sets
    ``members[0]`` to one more than every destination and endpoint of a queued row.
    Returns the number of queues, or -1 when an endpoint of a queued row is below -1 (a
    table slot below -1). Never raises."""
    cdef intp_t N = c.n, k, nq = 0, nqueues = 0, M = 0
    cdef const int32_t* pid = c.pid
    cdef const int32_t* dst = c.dst
    cdef int32_t p, prev = -1, e, lo = 0
    qstart[0] = 0
    for k in range(N):
        p = pid[k]
        if p != prev:                  # a new run: close the previous queue, if any
            if nq > qstart[nqueues]:
                nqueues += 1
                qstart[nqueues] = <int32_t>nq
            prev = p
        if inst[k]:
            queue[k] = -1
            pair[k] = 0
        else:
            e = endpoint[k]
            queue[k] = <int32_t>nqueues
            qidx[nq] = <int32_t>k
            nq += 1
            M = max(M, dst[k] + 1, e + 1)
            lo = min(lo, e)
    if nq > qstart[nqueues]:
        nqueues += 1
        qstart[nqueues] = <int32_t>nq
    members[0] = M
    return -1 if lo < -1 else nqueues


cdef intp_t pairs_c(const Columns* c, const int32_t[::1] endpoint, const int32_t[::1] qidx,
                    intp_t M, int32_t[::1] pair, intp_t* active) except -2 nogil:
    """Number the (destination, endpoint) pairs of the queued rows in order of first
    appearance (``pair[k]``), through a direct table when ``(M + 1)**2`` is small beside
    the plan, else an open-addressing hash; returns the count. ``active[0]``: how many
    members take part in a queued row, or -1 when some queued row loads nobody (no
    destination, no endpoint). -2: MemoryError."""
    cdef intp_t nq = qidx.shape[0], i, k, count = 0, span = (M + 1) * (M + 1)
    cdef intp_t cap = 16, h, members = 0
    cdef int bits = 4
    cdef int64_t code
    cdef int32_t* table
    cdef int64_t* keys
    cdef int64_t* firsts = <int64_t*>malloc((nq + 1) * sizeof(int64_t))   # code per pair
    cdef uint8_t* seen = <uint8_t*>calloc(M + 1, sizeof(uint8_t))
    if firsts == NULL or seen == NULL:
        free(firsts)
        free(seen)
        with gil:
            raise MemoryError("executor: out of memory")
    if span <= 2 * nq + 4096:
        table = <int32_t*>calloc(span, sizeof(int32_t))       # id + 1; 0: not seen
        if table == NULL:
            free(firsts)
            free(seen)
            with gil:
                raise MemoryError("executor: out of memory")
        for i in range(nq):
            k = qidx[i]
            code = (<int64_t>c.dst[k] + 1) * (M + 1) + endpoint[k] + 1
            if table[code] == 0:
                firsts[count] = code
                count += 1
                table[code] = <int32_t>count
            pair[k] = table[code] - 1
        free(table)
    else:
        while cap < 2 * nq:
            cap *= 2
            bits += 1
        keys = <int64_t*>malloc(cap * sizeof(int64_t))
        table = <int32_t*>malloc(cap * sizeof(int32_t))
        if keys == NULL or table == NULL:
            free(keys)
            free(table)
            free(firsts)
            free(seen)
            with gil:
                raise MemoryError("executor: out of memory")
        for h in range(cap):
            keys[h] = -1
        for i in range(nq):
            k = qidx[i]
            code = (<int64_t>c.dst[k] + 1) * (M + 1) + endpoint[k] + 1
            h = <intp_t>((<uint64_t>code * <uint64_t>0x9E3779B97F4A7C15) >> (64 - bits))
            while keys[h] != code and keys[h] != -1:
                h = (h + 1) & (cap - 1)
            if keys[h] == -1:
                keys[h] = code
                table[h] = <int32_t>count
                firsts[count] = code
                count += 1
            pair[k] = table[h]
        free(keys)
        free(table)
    # the members of the pairs (index m + 1 of ``seen``; 0 stands for "none")
    for i in range(count):
        seen[firsts[i] // (M + 1)] = 1
        seen[firsts[i] % (M + 1)] = 1
    for i in range(1, M + 1):
        members += seen[i]
    active[0] = members
    for i in range(count):
        if firsts[i] == 0:                     # no destination, no endpoint
            active[0] = -1
    free(firsts)
    free(seen)
    return count


def prepare(const int32_t[:, :] columns, const uint8_t[::1] inst, const int32_t[:] owner,
            intp_t replica_count, bint from_final, bint checked=False, endpoints=None):
    """Everything :class:`Core` takes, from a plan's (7, N) column block, its instant flags
    and slot 0 of the table it starts from (``from_final``: of the table it ends in).

    Returns ``(ok, endpoint, queue, qidx, qstart, pair, pair_count, member_count,
    active)``; ``ok`` False (the arrays None, the counts 0) reports a partition out of range
    or out of ascending order, an index outside ``[-1, replica_count)`` or a member below -1
    (``checked``: the caller vouches for the decisions, as a plan with a target of
    ``(owner.shape[0], replica_count)`` does; only the endpoints are checked).
    ``endpoint`` int32 per row (-1 for instant rows), ``queue`` int32 per row (-1 for
    instant rows), ``qidx``/``qstart`` int32 (the queues), ``pair`` int32 per row (0 for
    instant rows), ``member_count`` > every destination and endpoint of a queued row,
    ``active`` how many members take part in a queued row (-1: some queued row loads
    nobody).

    ``endpoints``: the endpoints the planner made with the plan (a C-contiguous int32
    array of one entry per row, -1 for instant rows; adopted as ``endpoint``, not
    copied, so it must be private to the caller); ``owner`` and ``from_final`` are then
    not read, and ``checked`` must be True."""
    cdef Columns c = columns_of(columns)
    cdef intp_t N = c.n, nqueues = -1, nq = 0, npairs = 0, M = 0, active = 0
    if inst.shape[0] != N:
        raise ValueError(f"inst has {inst.shape[0]} flags for {N} decisions")
    if N >= 2**31:
        raise ValueError(f"prepare: {N} decisions; the queues are int32, fewer than 2**31")
    cdef bint given = endpoints is not None
    if given:
        if not checked:
            raise ValueError("prepare: endpoints are only taken for a checked plan")
        if type(endpoints) is not np.ndarray or endpoints.dtype != np.int32 \
                or endpoints.shape != (N,) or not endpoints.flags.c_contiguous:
            raise ValueError(f"endpoints must be a C-contiguous int32 array of {N} entries")
        endpoint_arr = endpoints
    else:
        endpoint_arr = np.empty(N, dtype=np.int32)      # endpoints_c writes every row
    pair_arr = np.empty(N, dtype=np.int32)              # queues_c zeroes instant rows
    queue_arr = np.empty(N, dtype=np.int32)
    qidx_arr = np.empty(N, dtype=np.int32)            # N < 2**31: checked above
    qstart_arr = np.empty(N + 1, dtype=np.int32)
    cdef int32_t[::1] ep = endpoint_arr, qu = queue_arr, pr = pair_arr
    cdef int32_t[::1] qi = qidx_arr, qs = qstart_arr
    with nogil:
        if checked or valid_c(&c, owner.shape[0], replica_count):   # (given: checked)
            if not given:
                endpoints_c(&c, &inst[0] if N else NULL, owner, from_final,
                            &ep[0] if N else NULL)
            nqueues = queues_c(&c, &inst[0] if N else NULL, &ep[0] if N else NULL,
                               &qu[0] if N else NULL, &qi[0] if N else NULL, &qs[0],
                               &pr[0] if N else NULL, &M)
            if nqueues >= 0:
                nq = qs[nqueues]
                npairs = pairs_c(&c, ep, qi[:nq], M, pr, &active)
    if nqueues < 0:
        return False, None, None, None, None, None, 0, 0, 0
    return (True, endpoint_arr, queue_arr, qidx_arr[:nq], qstart_arr[:nqueues + 1], pair_arr,
            npairs, M, active)


# ------------------------------------------------------------------ the state
@cython.auto_pickle(False)   # raw heap buffers: not picklable
cdef class Core:
    """The executor's state over prepared queues (see the module docstring; :func:`prepare`
    makes the arrays).

    ``dst``/``endpoint`` int32 per plan row, ``queue`` int32 per row (-1: instant),
    ``qidx``/``qstart`` int32, the queues (queue q = rows ``qidx[qstart[q]:qstart[q+1]]``),
    ``pair`` int32 per row (queued rows: in ``[0, pair_count)``), ``member_count`` > every
    member in ``dst`` and ``endpoint`` of a queued row. The arrays are kept (pass private
    ones)."""

    cdef readonly intp_t n
    cdef readonly intp_t waiting
    cdef readonly intp_t in_flight
    cdef readonly bint stopped
    cdef readonly bint failed
    cdef int32_t limit
    cdef intp_t nqueues, npairs, nmembers
    cdef intp_t nactive              # members in some queued row (dst or endpoint)
    cdef intp_t nfull                # of those, how many are at the limit
    cdef bint unbounded              # a queued row loads nobody: ready() never stops early
    cdef int64_t session
    cdef const int32_t[::1] dst
    cdef const int32_t[::1] endpoint
    cdef const int32_t[::1] queue
    cdef const int32_t[::1] qidx
    cdef const int32_t[::1] qstart
    cdef const int32_t[::1] pair
    cdef int32_t[::1] head
    cdef uint8_t[::1] state
    cdef int32_t[::1] load
    cdef int32_t[::1] extra          # tentative loads inside ready()
    cdef uint8_t[::1] parked
    cdef int64_t[::1] seen           # session in which a pair was found blocked
    cdef Heap* pairs
    cdef Stack* lists                # per member: the pairs parked on it
    cdef Heap cand                   # at least every unparked pair's best idle head
    cdef Heap fresh                  # ready(): heads behind its tentative picks
    cdef Heap undo_pairs             # ready(): entries taken from pair heaps (q, k)
    cdef Heap undo_cand              # ready(): candidate entries to put back
    cdef object state_arr

    def __cinit__(self, const int32_t[::1] dst, const int32_t[::1] endpoint,
                  const int32_t[::1] queue, const int32_t[::1] qidx,
                  const int32_t[::1] qstart, const int32_t[::1] pair, intp_t pair_count,
                  intp_t member_count, intp_t active, int32_t limit):
        cdef intp_t q, k, i, pr
        cdef int32_t d, s
        cdef Heap* h
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
        self.head = np.empty(self.nqueues, dtype=np.int32)
        self.state_arr = np.empty(self.n, dtype=np.uint8)
        self.state = self.state_arr
        self.load = np.zeros(self.nmembers, dtype=np.int32)
        self.extra = np.zeros(self.nmembers, dtype=np.int32)
        self.parked = np.zeros(self.npairs, dtype=np.uint8)
        self.seen = np.full(self.npairs, -1, dtype=np.int64)
        self.cand.a = self.fresh.a = self.undo_pairs.a = self.undo_cand.a = NULL
        self.cand.n = self.cand.cap = self.fresh.n = self.fresh.cap = 0
        self.undo_pairs.n = self.undo_pairs.cap = 0
        self.undo_cand.n = self.undo_cand.cap = 0
        self.pairs = <Heap*>calloc(self.npairs, sizeof(Heap))
        self.lists = <Stack*>calloc(self.nmembers, sizeof(Stack))
        if self.pairs == NULL or self.lists == NULL:
            raise MemoryError("executor: out of memory")
        self.waiting = qstart[self.nqueues] - qstart[0] if self.nqueues > 0 else 0
        self.in_flight = 0
        self.stopped = self.failed = False
        self.nfull = 0
        self.nactive = active
        self.unbounded = active < 0
        self.fill(queue, qidx, qstart, pair)

    cdef int fill(self, const int32_t[::1] queue_v, const int32_t[::1] qidx_v,
                  const int32_t[::1] qstart_v, const int32_t[::1] pair_v) except -1:
        """The first fill of the state from the queues (raw pointers: a byte store would
        make the compiler reload every memoryview of ``self``)."""
        cdef intp_t q, k, nqueues = self.nqueues
        cdef uint8_t* state = &self.state[0] if self.n else NULL
        cdef const int32_t* queue = &queue_v[0] if self.n else NULL
        cdef const int32_t* qidx = &qidx_v[0] if qidx_v.shape[0] else NULL
        cdef const int32_t* qstart = &qstart_v[0]
        cdef const int32_t* pair = &pair_v[0] if self.n else NULL
        cdef int32_t* head = &self.head[0] if nqueues else NULL
        cdef Heap* pairs = self.pairs
        cdef Heap* h
        cdef intp_t pr, npairs = self.npairs
        for k in range(self.n):
            state[k] = WAITING if queue[k] >= 0 else INSTANT
        for q in range(nqueues):
            head[q] = qstart[q]
        # each pair's heads in ascending queue order (a sorted array is a heap); only the
        # first head of each pair is a candidate. Each heap is allocated once, at its size
        # (counted first; later pushes grow it as needed).
        for q in range(nqueues):
            pairs[pair[qidx[qstart[q]]]].cap += 1
        for pr in range(npairs):
            h = &pairs[pr]
            h.cap += 4
            h.a = <Entry*>malloc(h.cap * sizeof(Entry))
            if h.a == NULL:
                raise MemoryError("executor: out of memory")
        self.cand.cap = npairs
        self.cand.a = <Entry*>malloc(npairs * sizeof(Entry))
        if self.cand.a == NULL:
            raise MemoryError("executor: out of memory")
        for q in range(nqueues):
            k = qidx[qstart[q]]
            h = &pairs[pair[k]]
            if h.n == 0:
                heap_push(&self.cand, Entry(<int32_t>q, <int32_t>k))   # ascending: no sift
            h.a[h.n] = Entry(<int32_t>q, <int32_t>k)
            h.n += 1
        return 0

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
        free(self.fresh.a)
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

    cdef int offer(self, intp_t pr, Heap* into) except -1:
        """Make pair ``pr``'s best head a candidate in ``into`` (if it has one)."""
        cdef Entry e
        if self.top_of(pr, &e):
            heap_push(into, e)
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
            self.offer(pr, &self.cand)
        s.n = 0
        return 0

    cdef inline void take(self, int32_t m) noexcept:
        self.load[m] += 1
        if self.load[m] == self.limit:
            self.nfull += 1

    cdef int release(self, int32_t m) except -1:
        self.load[m] -= 1
        if self.load[m] == self.limit - 1:
            self.nfull -= 1
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
        cdef intp_t free_members = self.nactive - self.nfull
        cdef bint from_cand
        if self.stopped or self.waiting == 0 or (free_members <= 0 and not self.unbounded):
            return np.zeros(0, dtype=np.int64)
        self.session += 1
        self.undo_pairs.n = 0
        self.undo_cand.n = 0
        self.fresh.n = 0
        # candidates: ``cand`` merged with ``fresh`` (the heads behind this scan's picks,
        # thrown away at the end: once the picks are undone they are not their pair's best)
        while (self.cand.n or self.fresh.n) and (free_members > 0 or self.unbounded):
            from_cand = self.fresh.n == 0 or (self.cand.n and before(self.cand.a[0],
                                                                     self.fresh.a[0]))
            e = heap_pop(&self.cand) if from_cand else heap_pop(&self.fresh)
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
            if from_cand:
                heap_push(&self.undo_cand, e)  # goes back as it is, picked or not
            if (d >= 0 and self.load[d] + self.extra[d] >= limit) or \
                    (s >= 0 and self.load[s] + self.extra[s] >= limit):
                self.seen[pr] = self.session   # full with this scan's picks
                continue
            picked.append(e.k)
            if d >= 0:
                self.extra[d] += 1
                if self.load[d] + self.extra[d] == limit:
                    free_members -= 1
            if s >= 0 and s != d:
                self.extra[s] += 1
                if self.load[s] + self.extra[s] == limit:
                    free_members -= 1
            heap_push(&self.undo_pairs, heap_pop(&self.pairs[pr]))
            self.offer(pr, &self.fresh)        # the pair's next head, in order
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
        self.fresh.n = 0
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
            self.take(d)
        if s >= 0 and s != d:
            self.take(s)
        # its pair's best head changes only when k was it (otherwise k's entry is stale)
        if not self.parked[pr] and self.pairs[pr].n and self.pairs[pr].a[0].k == k:
            heap_pop(&self.pairs[pr])
            self.offer(pr, &self.cand)
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
