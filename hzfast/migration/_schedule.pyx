"""The schedule kernel: Hazelcast 4.1's parallel migration loop as an event-driven
simulation with real durations (docs/design.md §6).

Queue heads that need the same destination and source endpoint (a *pair* of members) are
equally eligible at any moment, so only the best head of each pair is ever examined; a pair
that cannot start is parked on a member at the limit. A completion only re-examines what it
unblocks: the next head of its partition's queue, and the pairs parked on a member it frees.
So the cost is O((N + parkings) log N), not a rescan of every queue at every event.
"""
import numpy as np

from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy

from hzfast._types cimport uint8_t, int32_t, int64_t, intp_t, S_OK
from hzfast.migration._decisions cimport (Columns, apply_step, check_decision, columns_of,
                                         unapply_step)


# ------------------------------------------------------------------ binary heaps
cdef struct Entry:
    # 16 bytes: queues, plan rows and pairs are < 2**31 (schedule checks the plan size)
    int64_t key         # a head's rank, or for completions the bits of the (>= 0) finish
                        # time, which order as the times do; smaller first
    int32_t item        # queue index, or plan row for completions (ties: lower first)
    int32_t tag         # candidates: the pair; completions: the queue


cdef struct Heap:
    Entry* a
    intp_t n
    intp_t cap


cdef struct Stack:
    intp_t* a
    intp_t n
    intp_t cap


cdef struct Pair:
    # the idle queue heads of one (destination, endpoint) pair: the queues' first heads,
    # ordered, as a FIFO (fifo[pos:end], queue indices), and later heads in a heap
    const intp_t* fifo
    intp_t pos
    intp_t end
    Heap heap


cdef inline bint before(const Entry* x, const Entry* y) noexcept nogil:
    return x.key < y.key or (x.key == y.key and x.item < y.item)


cdef int room(void** a, intp_t* cap, intp_t n, size_t item) except -1 nogil:
    """Room for one more item in the growable array ``*a`` of ``n`` items; -1 (MemoryError)
    when it cannot grow."""
    cdef void* grown
    if n == cap[0]:
        grown = realloc(a[0], (2 * cap[0] + 4) * item)
        if grown == NULL:
            with gil:
                raise MemoryError("schedule: out of memory")
        a[0] = grown
        cap[0] = 2 * cap[0] + 4
    return 0


cdef inline int grow(Heap* h) except -1 nogil:
    """Room for one more entry; -1 (MemoryError) when the array cannot grow."""
    return room(<void**>&h.a, &h.cap, h.n, sizeof(Entry))


cdef inline int heap_push(Heap* h, int64_t key, intp_t item, intp_t tag) except -1 nogil:
    """Add an entry; -1 (MemoryError) when the heap cannot grow."""
    cdef intp_t i, parent
    cdef Entry e
    grow(h)
    e.key = key
    e.item = <int32_t>item
    e.tag = <int32_t>tag
    i = h.n
    h.n += 1
    while i > 0:
        parent = (i - 1) >> 1
        if not before(&e, &h.a[parent]):
            break
        h.a[i] = h.a[parent]
        i = parent
    h.a[i] = e
    return 0


cdef int heap_append(Heap* h, int64_t key, intp_t item, intp_t tag) except -1 nogil:
    """Add an entry at the end (the array used as a FIFO). -1 on MemoryError."""
    grow(h)
    h.a[h.n].key = key
    h.a[h.n].item = <int32_t>item
    h.a[h.n].tag = <int32_t>tag
    h.n += 1
    return 0


cdef inline Entry heap_pop(Heap* h) noexcept nogil:
    """Remove and return the smallest entry (the heap is not empty). Cannot fail."""
    cdef Entry top = h.a[0], last
    cdef intp_t i = 0, child
    h.n -= 1
    if h.n > 0:
        last = h.a[h.n]
        while True:
            child = 2 * i + 1
            if child >= h.n:
                break
            if child + 1 < h.n and before(&h.a[child + 1], &h.a[child]):
                child += 1
            if not before(&h.a[child], &last):
                break
            h.a[i] = h.a[child]
            i = child
        h.a[i] = last
    return top


# --------------------------------------------------------------------- passes
cdef int unapply_c(int32_t[:, ::1] rows, const Columns* c) noexcept nogil:
    """Undo the plan, last decision first, turning its final table into its initial one.
    Returns a status (an out-of-range decision). Never raises."""
    cdef intp_t k, P = rows.shape[0]
    cdef int R = <int>rows.shape[1], st
    for k in range(c.n - 1, -1, -1):
        st = check_decision(c, k, P, R, -1)
        if st != S_OK:
            return st
        unapply_step(c, k, &rows[c.pid[k], 0])
    return S_OK


cdef intp_t queues_c(int32_t[:, ::1] rows, const Columns* c, const uint8_t[::1] inst,
                     intp_t M, int32_t[::1] endpoint, intp_t[::1] qidx,
                     intp_t[::1] qstart) noexcept nogil:
    """Replay the plan on ``rows`` (the initial table; it ends as the final one): instant
    decisions are applied, the others are queued per run of equal partition ids
    (``qidx[qstart[q]:qstart[q + 1]]`` = queue q's plan rows in order) with their source
    endpoint (the source if sci == 0, else the partition's owner then). Returns the number
    of queues, or -1 on an out-of-range partition, index or member. Never raises."""
    cdef intp_t N = c.n, P = rows.shape[0], k, a = 0, b, nq = 0, nqueues = 0
    cdef int R = <int>rows.shape[1]
    cdef int32_t* row
    qstart[0] = 0
    while a < N:
        b = a
        while b < N and c.pid[b] == c.pid[a]:
            b += 1
        for k in range(a, b):
            if check_decision(c, k, P, R, M) != S_OK:
                return -1
            row = &rows[c.pid[k], 0]
            if not inst[k]:
                endpoint[k] = c.src[k] if c.sci[k] == 0 else row[0]
                qidx[nq] = k
                nq += 1
            apply_step(c, k, row)
        if nq > qstart[nqueues]:
            nqueues += 1
            qstart[nqueues] = nq
        a = b
    return nqueues


cdef int park(intp_t pr, int32_t x, uint8_t[::1] parked, Stack* lists) except -1 nogil:
    """Park pair ``pr`` on member ``x`` (at the limit). -1 only on MemoryError."""
    cdef Stack* st = &lists[x]
    room(<void**>&st.a, &st.cap, st.n, sizeof(intp_t))
    st.a[st.n] = pr
    st.n += 1
    parked[pr] = 1
    return 0


cdef inline int64_t rank(const int64_t[::1] key, intp_t k, intp_t q) noexcept nogil:
    """The rank of plan row ``k``, the head of queue ``q`` (smaller is examined first):
    ``key[k]``, or with no keys (Hazelcast's order) the queue's position. Cannot fail."""
    return key[k] if key.shape[0] else q


cdef inline bint pair_top(const Pair* pp, const int64_t[::1] key, const intp_t[::1] qidx,
                          const intp_t[::1] qstart, Entry* out) noexcept nogil:
    """The pair's best idle head into ``*out``; False when it has none. Cannot fail."""
    cdef Entry f
    if pp.pos < pp.end:
        f.item = <int32_t>pp.fifo[pp.pos]
        f.key = rank(key, qidx[qstart[f.item]], f.item)
        f.tag = 0
        if pp.heap.n == 0 or before(&f, &pp.heap.a[0]):
            out[0] = f
            return True
    if pp.heap.n:
        out[0] = pp.heap.a[0]
        return True
    return False


cdef inline void pair_pop(Pair* pp, const Entry* top) noexcept nogil:
    """Remove ``top`` (the pair's best head, from pair_top). Cannot fail."""
    if pp.pos < pp.end and pp.fifo[pp.pos] == top.item and \
            (pp.heap.n == 0 or pp.heap.a[0].item != top.item):
        pp.pos += 1
    else:
        heap_pop(&pp.heap)


cdef inline int offer(Pair* pairs, intp_t pr, const int64_t[::1] key, const intp_t[::1] qidx,
               const intp_t[::1] qstart, Heap* cand) except -1 nogil:
    """Put pair ``pr``'s best head among the candidates (if it has one). -1 only on
    MemoryError."""
    cdef Entry e
    if pair_top(&pairs[pr], key, qidx, qstart, &e):
        heap_push(cand, e.key, e.item, <int32_t>pr)
    return 0


cdef int unpark(int32_t x, uint8_t[::1] parked, Stack* lists, Pair* pairs,
                const int64_t[::1] key, const intp_t[::1] qidx, const intp_t[::1] qstart,
                Heap* cand) except -1 nogil:
    """Member ``x`` dropped below the limit: every pair parked on it goes back to the
    candidates with its best head. -1 only on MemoryError."""
    cdef Stack* st = &lists[x]
    cdef intp_t i, pr
    for i in range(st.n):
        pr = st.a[i]
        parked[pr] = 0
        offer(pairs, pr, key, qidx, qstart, cand)
    st.n = 0
    return 0


cdef inline int64_t time_key(double t) noexcept nogil:
    """The bits of a finite t >= 0 as an int64: they order as the times do."""
    cdef int64_t k
    memcpy(&k, &t, sizeof(double))
    return k


cdef inline double key_time(int64_t k) noexcept nogil:
    cdef double t
    memcpy(&t, &k, sizeof(double))
    return t


cdef int simulate_c(const Columns* c, const int32_t[::1] endpoint, const intp_t[::1] qidx,
                    const intp_t[::1] qstart, intp_t nqueues, const intp_t[::1] pair,
                    intp_t pair_count, intp_t active, const double[::1] duration,
                    bint fifo_running, const int64_t[::1] key, int32_t limit,
                    intp_t[::1] head, int32_t[::1] load, int32_t[::1] peak,
                    uint8_t[::1] parked, Pair* pairs, Stack* lists, Heap* cand,
                    Heap* running, double[::1] start, double[::1] finish) except -1 nogil:
    """The migration manager's loop (docs/design.md §6) over the queues.

    Queue heads with the same destination and source endpoint (a *pair*) are equally
    eligible, so only the best head of each pair is examined: at each event time, absorb
    every completion due, then examine the candidates in priority order (``key`` of a
    plan row's head, smaller first), starting each whose destination and endpoint are below
    ``limit``; a pair that cannot start is parked on a member at the limit until that
    member completes something. Fills ``start``/``finish`` and ``peak`` (per member).
    -1 only on MemoryError.
    """
    cdef intp_t q, k, pr
    cdef int32_t d, s
    cdef double t = 0.0
    cdef int64_t tk
    cdef intp_t nfull = 0               # members at the limit
    cdef intp_t rpos = 0                # the FIFO's front (always 0 for the heap)
    cdef Entry e, top
    cdef Pair* pp
    for q in range(nqueues):
        head[q] = qstart[q]
    for pr in range(pair_count):
        offer(pairs, pr, key, qidx, qstart, cand)
    while True:
        # examine the candidates in order; once every member with work is at the limit
        # nothing can start, and the rest wait in cand for the next event
        while cand.n and nfull < active:
            e = heap_pop(cand)
            pr = e.tag
            pp = &pairs[pr]
            if parked[pr] or not pair_top(pp, key, qidx, qstart, &top) or \
                    top.item != e.item or top.key != e.key:
                continue                 # a stale entry
            q = e.item
            k = qidx[head[q]]
            d = c.dst[k]
            s = endpoint[k]
            if d >= 0 and load[d] >= limit:
                park(pr, d, parked, lists)
                continue
            if s >= 0 and load[s] >= limit:
                park(pr, s, parked, lists)
                continue
            pair_pop(pp, &top)
            start[k] = t
            finish[k] = t + duration[k]
            if fifo_running:             # equal durations finish in start order
                heap_append(running, time_key(finish[k]), k, <int32_t>q)
            else:
                heap_push(running, time_key(finish[k]), k, <int32_t>q)
            if d >= 0:
                load[d] += 1
                nfull += load[d] == limit
                if load[d] > peak[d]:
                    peak[d] = load[d]
            if s >= 0 and s != d:
                load[s] += 1
                nfull += load[s] == limit
                if load[s] > peak[s]:
                    peak[s] = load[s]
            offer(pairs, pr, key, qidx, qstart, cand)
        if running.n == rpos:
            return 0
        tk = running.a[rpos].key         # absorb every completion due then
        t = key_time(tk)
        while running.n > rpos and running.a[rpos].key == tk:
            if fifo_running:
                e = running.a[rpos]
                rpos += 1
            else:
                e = heap_pop(running)
            k = e.item
            q = e.tag
            d = c.dst[k]
            s = endpoint[k]
            if d >= 0:
                load[d] -= 1
                if load[d] == limit - 1:
                    nfull -= 1
                    unpark(d, parked, lists, pairs, key, qidx, qstart, cand)
            if s >= 0 and s != d:
                load[s] -= 1
                if load[s] == limit - 1:
                    nfull -= 1
                    unpark(s, parked, lists, pairs, key, qidx, qstart, cand)
            head[q] += 1
            if fifo_running and rpos == running.n:
                rpos = running.n = 0     # drained: reuse the array
            if head[q] < qstart[q + 1]:
                k = qidx[head[q]]
                pr = pair[k]
                heap_push(&pairs[pr].heap, rank(key, k, q), q, 0)
                if not parked[pr]:
                    heap_push(cand, rank(key, k, q), q, <int32_t>pr)


def prepare(int32_t[:, ::1] rows, const int32_t[:, :] columns, const uint8_t[::1] inst,
            intp_t member_count, bint from_final):
    """Replay a (7, N) column block on ``rows`` (a private copy of the initial table, or of
    the final one when ``from_final``: it is undone first). Returns ``(ok, endpoint, qidx,
    qstart)``: ``ok`` False reports an out-of-range partition, index or member;
    ``endpoint`` int32 per row (the member a queued migration loads besides its
    destination; -1 for instant rows), queue q = plan rows ``qidx[qstart[q]:qstart[q+1]]``."""
    cdef Columns c = columns_of(columns)
    cdef intp_t N = c.n, nqueues = -1
    endpoint_arr = np.full(N, -1, dtype=np.int32)
    qidx_arr = np.empty(N, dtype=np.intp)
    qstart_arr = np.empty(N + 1, dtype=np.intp)
    cdef int32_t[::1] ep = endpoint_arr
    cdef intp_t[::1] qi = qidx_arr, qs = qstart_arr
    with nogil:
        if not (from_final and unapply_c(rows, &c) != S_OK):
            nqueues = queues_c(rows, &c, inst, max(member_count, 1), ep, qi, qs)
    if nqueues < 0:
        return False, None, None, None
    return True, endpoint_arr, qidx_arr[:qstart_arr[nqueues]], qstart_arr[:nqueues + 1]


def pair_ids(const int32_t[:, :] columns, const int32_t[::1] endpoint,
             const intp_t[::1] qidx, intp_t member_count):
    """``(pair, count)``: a dense id per queued row (``pair[qidx]``; other rows 0) for its
    (destination, endpoint), numbered in order of first appearance, through a table of
    ``member_count * (member_count + 1)`` entries (the caller keeps that small)."""
    cdef Columns c = columns_of(columns)
    cdef intp_t i, k, code, count = 0, M = max(member_count, 1)
    pair_arr = np.zeros(c.n, dtype=np.intp)
    table_arr = np.full(M * (M + 1), -1, dtype=np.intp)
    cdef intp_t[::1] pair = pair_arr, table = table_arr
    with nogil:
        for i in range(qidx.shape[0]):
            k = qidx[i]
            code = <intp_t>c.dst[k] * (M + 1) + endpoint[k] + 1
            if table[code] < 0:
                table[code] = count
                count += 1
            pair[k] = table[code]
    return pair_arr, count


def simulate(const int32_t[:, :] columns, const int32_t[::1] endpoint, const intp_t[::1] qidx,
             const intp_t[::1] qstart, const intp_t[::1] pair, intp_t pair_count,
             intp_t active, const double[::1] duration, bint equal_durations,
             const int64_t[::1] key, int32_t limit, intp_t member_count):
    """Run the loop over prepared queues (``pair``: the pair id of each queued row, in
    ``[0, pair_count)``; ``active``: how many members take part in a queued migration;
    ``equal_durations``: every queued migration takes the same time).
    Returns ``(start, finish, peak, work, chain)``: float64 per row, float64 per row,
    int32 per member (most in flight at once), float64 per member (summed durations of
    the migrations it takes part in), and the longest queue's summed durations."""
    cdef Columns c = columns_of(columns)
    cdef intp_t N = c.n, M = max(member_count, 1), nqueues = qstart.shape[0] - 1, i
    start_arr = np.zeros(N, dtype=np.float64)
    finish_arr = np.zeros(N, dtype=np.float64)
    head_arr = np.empty(nqueues + 1, dtype=np.intp)
    load_arr = np.zeros(M, dtype=np.int32)
    peak_arr = np.zeros(M, dtype=np.int32)
    parked_arr = np.zeros(max(pair_count, 1), dtype=np.uint8)
    cdef double[::1] st = start_arr, fi = finish_arr
    cdef int32_t[::1] ld = load_arr, pk = peak_arr
    cdef intp_t[::1] hd = head_arr
    cdef uint8_t[::1] pa = parked_arr
    cdef Heap cand, running
    cdef intp_t P2 = max(pair_count, 1)
    cdef Pair* pairs = <Pair*>calloc(P2, sizeof(Pair))
    cdef Stack* lists = <Stack*>calloc(M, sizeof(Stack))
    # every queue's first head, grouped by pair in queue order (a counting sort)
    fifo_arr = np.empty(max(nqueues, 1), dtype=np.intp)
    fill_arr = np.zeros(P2 + 1, dtype=np.intp)
    cdef intp_t[::1] fifo = fifo_arr, fill = fill_arr
    cdef intp_t q, pr, j, k
    cdef double w, chain = 0.0
    work_arr = np.zeros(M, dtype=np.float64)
    cdef double[::1] wk = work_arr
    cand.a = running.a = NULL
    cand.n = cand.cap = running.n = running.cap = 0
    try:
        if pairs == NULL or lists == NULL:
            raise MemoryError("schedule: out of memory")
        with nogil:
            for q in range(nqueues):
                fill[pair[qidx[qstart[q]]] + 1] += 1
            for pr in range(P2):
                fill[pr + 1] += fill[pr]
            for pr in range(P2):
                pairs[pr].fifo = &fifo[0] + fill[pr]
                pairs[pr].pos = 0
            for q in range(nqueues):
                k = qidx[qstart[q]]
                pr = pair[k]
                fifo[fill[pr] + pairs[pr].pos] = q
                pairs[pr].pos += 1
            for pr in range(P2):
                pairs[pr].end = pairs[pr].pos
                pairs[pr].pos = 0
                # a FIFO needs its heads in rank order; otherwise they go to the heap
                for j in range(1, pairs[pr].end):
                    q = pairs[pr].fifo[j]
                    if rank(key, qidx[qstart[q]], q) < \
                            rank(key, qidx[qstart[pairs[pr].fifo[j - 1]]], pairs[pr].fifo[j - 1]):
                        for j in range(pairs[pr].end):
                            q = pairs[pr].fifo[j]
                            heap_push(&pairs[pr].heap, rank(key, qidx[qstart[q]], q), q, 0)
                        pairs[pr].end = 0
                        break
            simulate_c(&c, endpoint, qidx, qstart, nqueues, pair, pair_count, active, duration,
                       equal_durations, key, limit, hd, ld, pk, pa, pairs, lists, &cand, &running, st, fi)
            # what bounds any schedule: the longest queue, each member's work
            for q in range(nqueues):
                w = 0.0
                for j in range(qstart[q], qstart[q + 1]):
                    k = qidx[j]
                    w += duration[k]
                    wk[c.dst[k]] += duration[k]
                    if endpoint[k] >= 0 and endpoint[k] != c.dst[k]:
                        wk[endpoint[k]] += duration[k]
                if w > chain:
                    chain = w
    finally:
        if pairs != NULL:
            for i in range(P2):
                free(pairs[i].heap.a)
        if lists != NULL:
            for i in range(M):
                free(lists[i].a)
        free(pairs)
        free(lists)
        free(cand.a)
        free(running.a)
    return start_arr, finish_arr, peak_arr, work_arr, chain
