"""The planner kernel: Hazelcast's migration decisions for whole replica tables, with the
cycle fix and the migration manager's prioritization (docs/design.md sections 4 and 5).

The ``def`` entries trust their caller (``hzfast.migration``) for dtype, contiguity and
shapes; member values are validated in the same single pass (the shared row check of
``hzfast._validate``).

A decision is ``(source, sci, sni, destination, dci, dni)``; ``-1`` = none. Per partition
the planner makes at most R decisions: every decision turns at least one slot whose
occupant differs from the (cycle-fixed) target into a matching slot and never breaks a
matching slot, so the number of decisions is bounded by the number of mismatching slots
(``count_diff_c`` counts them; the output columns are sized with it).

Rows are handled as padded 8-slot working rows (``hzfast._rows``).
"""
import numpy as np
cimport numpy as cnp

from libc.stdlib cimport calloc, free, malloc
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

from hzfast._types cimport (int8_t, uint8_t, int32_t, uint64_t, intp_t, S_OK, S_INTERNAL)
from hzfast._rows cimport (ROW_SLOTS, RowLoader, hz_ctz, hz_diffmask8, hz_differ8, hz_index8,
                          hz_over8, hz_store8, load_row8, loader_init)
from hzfast._validate cimport check_row, row_suspect
from hzfast._cycles cimport fix_row, row_is_cyclic
from hzfast.migration._decisions cimport (Columns, columns_of, is_instant, kind_of, K_REMOVE,
                                         K_COPY, K_ASSIGN_LOST_OWNER, K_SHIFT_UP, K_MOVE,
                                         K_SHIFT_DOWN, K_SHIFT_UP_SOURCE_DROPPED,
                                         K_SHIFT_UP_SHIFT_DOWN, N_COLUMNS, endpoint_of,
                                         owner_after_fields)

cnp.import_array()



cdef extern from *:
    """
    #include "_rows.h"

    /* Output columns of the planner (one row per decision); ep: each decision's source
       endpoint for the executor (NULL: not wanted). */
    typedef struct {
        int32_t *pid, *src, *sci, *sni, *dst, *dci, *dni;
        int8_t *kind;
        uint8_t *inst;
        int32_t *ep;
    } hz_out;

    /* One row's decisions in output order. Members are named by where they sit in the
       pair row: 0..7 = slot of the current row, 8..15 = slot of the target row as given
       (before the cycle fix), 16 = no member (the pair row holds -1 there). */
    typedef struct {
        int n;
        uint8_t revert;      /* target slots the cycle fix gave back to the current member */
        uint8_t src[8], dst[8], inst[8], ep[8];
        int8_t sci[8], sni[8], dci[8], dni[8], kind[8];
    } hz_pattern;

    /* Write a pattern's decisions for partition p (members renamed from the pair row) at
       rows n.. of the output columns. A plain scalar loop on purpose: GCC would otherwise
       split it into one loop per column with vector prologues and a memcpy call. */
    #if defined(__GNUC__) && !defined(__clang__)
    __attribute__((noinline, optimize("no-tree-vectorize", "no-tree-loop-distribute-patterns",
                                      "no-tree-loop-distribution")))
    #endif
    static void hz_put_pattern(const hz_out* o, Py_ssize_t n, int32_t p, const int32_t* pair,
                               const hz_pattern* pt) {
        const int cnt = pt->n;
    #if defined(__clang__)
        #pragma clang loop vectorize(disable) distribute(disable)
    #endif
        for (int q = 0; q < cnt; q++) {
            o->pid[n + q] = p;
            o->src[n + q] = pair[pt->src[q]];
            o->sci[n + q] = pt->sci[q];
            o->sni[n + q] = pt->sni[q];
            o->dst[n + q] = pair[pt->dst[q]];
            o->dci[n + q] = pt->dci[q];
            o->dni[n + q] = pt->dni[q];
            o->kind[n + q] = pt->kind[q];
            o->inst[n + q] = pt->inst[q];
        }
        if (o->ep != NULL)
            for (int q = 0; q < cnt; q++)
                o->ep[n + q] = pair[pt->ep[q]];
    }

    /* Target-row check and equality pattern of a (current, target) pair of working rows
       whose current row c is valid and which differ at the slots of mask d (equal slots
       can only repeat c, which is valid). Returns the pattern key: nibble i = where
       target slot i's member sits in c (0..7), 14 = a member absent from c, 15 = empty;
       an equal slot keeps nibble i (its member, or -1 on both sides: bit 32 + i tells);
       bits 32..39 = empty slots of c; bit 63 set. The planner only compares members with
       each other and with -1, so rows with equal keys get the same decisions up to
       renaming the members. Returns 0 when a differing slot of t holds a value < -1, a
       member >= limit or a member t holds twice (then check_row locates it). */
    static inline uint64_t hz_check_pattern8(const int32_t* c, const int32_t* t, unsigned d,
                                             int32_t limit) {
    #if defined(__SSE2__) && defined(__GNUC__)
        const __m128i z = _mm_setzero_si128();
        const __m128i c0 = _mm_loadu_si128((const __m128i*)c), c1 = _mm_loadu_si128((const __m128i*)(c + 4));
        const __m128i t0 = _mm_loadu_si128((const __m128i*)t), t1 = _mm_loadu_si128((const __m128i*)(t + 4));
        unsigned cneg = (unsigned)(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(c0, z)))
                      | (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(c1, z))) << 4));
        uint64_t key = 0x76543210ULL | (1ULL << 63) | ((uint64_t)cneg << 32);
        while (d) {
            int i = __builtin_ctz(d);
            int32_t v = t[i];
            uint64_t code;
            d &= d - 1;
            if (v < 0) {
                if (v < -1) return 0;
                code = 15;
            } else {
                if (v >= limit) return 0;
                const __m128i x = _mm_set1_epi32(v);
                unsigned mt = (unsigned)(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(t0, x)))
                            | (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(t1, x))) << 4));
                unsigned mc = (unsigned)(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(c0, x)))
                            | (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(c1, x))) << 4));
                if (mt & (mt - 1)) return 0;
                code = mc ? (uint64_t)__builtin_ctz(mc) : 14;
            }
            key = (key & ~(0xFULL << (4 * i))) | (code << (4 * i));
        }
        return key;
    #else
        uint64_t key = 0x76543210ULL | (1ULL << 63);
        if (hz_bad8(t) || hz_over8(t, limit)) return 0;
        for (int i = 0; i < 8; i++) {
            key |= (uint64_t)(c[i] < 0) << (32 + i);
            if ((d >> i) & 1u) {
                uint64_t code = 15;
                if (t[i] >= 0) { code = 14; for (int j = 0; j < 8; j++) if (c[j] == t[i]) { code = (uint64_t)j; break; } }
                key = (key & ~(0xFULL << (4 * i))) | (code << (4 * i));
            }
        }
        return key;
    #endif
    }
    """
    uint64_t hz_check_pattern8(const int32_t* c, const int32_t* t, unsigned d,
                               int32_t limit) noexcept nogil
    ctypedef struct Out "hz_out":
        int32_t* pid
        int32_t* src
        int32_t* sci
        int32_t* sni
        int32_t* dst
        int32_t* dci
        int32_t* dni
        int8_t* kind
        uint8_t* inst
        int32_t* ep
    ctypedef struct Pattern "hz_pattern":
        int n
        uint8_t revert
        uint8_t src[8]
        uint8_t dst[8]
        uint8_t inst[8]
        uint8_t ep[8]
        int8_t sci[8]
        int8_t sni[8]
        int8_t dci[8]
        int8_t dni[8]
        int8_t kind[8]
    void hz_put_pattern(const Out* o, Py_ssize_t n, int32_t p, const int32_t* pair,
                        const Pattern* pt) noexcept nogil

# ----------------------------------------------------------------- constants
cdef enum:
    DEC_CAP = ROW_SLOTS  # per-partition decision buffer (proved bound: R <= 7)


cdef inline int index_of(const int32_t* row, int32_t v) noexcept nogil:
    """Position of member ``v`` in a working row; -1 if absent or ``v == -1``.
    Cannot fail."""
    if v < 0:
        return -1
    return hz_index8(row, v)


# ------------------------------------------------------------------- planner
cdef inline void put(Out* o, intp_t n, intp_t p, int32_t src, int32_t sci, int32_t sni,
                     int32_t dst, int32_t dci, int32_t dni, int8_t kind) noexcept nogil:
    """Write one decision at row ``n`` of the output columns. Cannot fail."""
    o.pid[n] = <int32_t>p
    o.src[n] = src
    o.sci[n] = sci
    o.sni[n] = sni
    o.dst[n] = dst
    o.dci[n] = dci
    o.dni[n] = dni
    o.kind[n] = kind
    o.inst[n] = is_instant(kind)


cdef struct Decisions:
    # one row's decisions in emission order: columns, and an Out view of them (decisions_init)
    int n
    int32_t pid[DEC_CAP]
    int32_t src[DEC_CAP]
    int32_t sci[DEC_CAP]
    int32_t sni[DEC_CAP]
    int32_t dst[DEC_CAP]
    int32_t dci[DEC_CAP]
    int32_t dni[DEC_CAP]
    int8_t kind[DEC_CAP]
    uint8_t inst[DEC_CAP]
    Out out


cdef inline void decisions_init(Decisions* d) noexcept nogil:
    """Empty ``d`` and point its Out view at its columns. Cannot fail."""
    d.n = 0
    d.out.pid = d.pid; d.out.src = d.src; d.out.sci = d.sci; d.out.sni = d.sni
    d.out.dst = d.dst; d.out.dci = d.dci; d.out.dni = d.dni
    d.out.kind = d.kind; d.out.inst = d.inst; d.out.ep = NULL


cdef inline int emit(Decisions* d, int32_t src, int32_t sci, int32_t sni,
                     int32_t dst, int32_t dci, int32_t dni, int8_t kind) noexcept nogil:
    """Append one decision (its kind is known at each call site and equals
    ``kind_of`` of the fields; the tests check it); returns -1 when the buffer is full
    (never on valid input)."""
    if d.n >= DEC_CAP:
        return -1
    put(&d.out, d.n, 0, src, sci, sni, dst, dci, dni, kind)
    d.n += 1
    return 0


cdef int plan_chain(int32_t* s, const int32_t* t, int R, int c, Decisions* d) noexcept nogil:
    """Hazelcast's private ``planMigrations(..., currentIndex)``: one decision at a
    colder index. Returns 0, or -1 if an invariant is broken (status, no exception)."""
    cdef int j, k, steps
    cdef int32_t x
    for steps in range(R + 1):
        j = index_of(s, t[c])
        if j < 0:
            return -1
        if t[j] < 0:
            x = s[c]
            if x < 0:
                if emit(d, -1, -1, -1, s[j], j, c, K_SHIFT_UP) < 0:
                    return -1
                s[c] = s[j]
            else:
                k = index_of(t, x)
                if k < 0:
                    if emit(d, x, c, -1, s[j], j, c, K_SHIFT_UP_SOURCE_DROPPED) < 0:
                        return -1
                    s[c] = s[j]
                elif s[k] < 0:
                    if emit(d, x, c, k, s[j], j, c, K_SHIFT_UP_SHIFT_DOWN) < 0:
                        return -1
                    s[k] = x
                    s[c] = s[j]
                else:
                    if emit(d, x, c, -1, s[j], j, c, K_SHIFT_UP_SOURCE_DROPPED) < 0:
                        return -1
                    s[c] = s[j]
            s[j] = -1
            return 0
        if index_of(s, t[j]) < 0:
            if emit(d, s[j], j, -1, t[j], -1, j, K_MOVE) < 0:
                return -1
            s[j] = t[j]
            return 0
        c = j
    return -1


cdef int plan_row(const int32_t* cur, const int32_t* t, int R, int first,
                  Decisions* d) noexcept nogil:
    """Hazelcast ``MigrationPlanner.planMigrations`` on one row whose target ``t`` is
    already cycle-fixed (both 8-slot working rows padded with -1). ``first``: the first
    slot where they differ (the planner only walks past equal slots before it). Decisions go to ``d`` in emission order. Returns 0, or -1 if an
    invariant is broken (cannot happen on validated input; status, no exception)."""
    cdef int32_t s[DEC_CAP]
    cdef int i, j, k
    cdef int32_t ti, si
    for i in range(DEC_CAP):
        s[i] = cur[i]
    decisions_init(d)
    i = first
    # Termination: every pass either advances i or emits a decision, and emit() fails
    # (-> return -1) beyond DEC_CAP decisions, so the loop is bounded without a counter.
    while i < R:
        ti = t[i]
        si = s[i]
        if ti < 0:
            if si >= 0:
                if emit(d, si, i, -1, -1, -1, -1, K_REMOVE) < 0:
                    return -1
                s[i] = -1
            i += 1
            continue
        if si < 0:
            j = index_of(s, ti)
            if j < 0:
                if emit(d, -1, -1, -1, ti, -1, i,
                        K_ASSIGN_LOST_OWNER if i == 0 else K_COPY) < 0:
                    return -1
                s[i] = ti
                i += 1
                continue
            if j > i:
                if emit(d, -1, -1, -1, s[j], j, i, K_SHIFT_UP) < 0:
                    return -1
                s[i] = s[j]
                s[j] = -1
                continue
            return -1
        if si == ti:
            i += 1
            continue
        j = index_of(s, ti)
        if j < 0:
            k = index_of(t, si)
            if k < 0:
                if emit(d, si, i, -1, ti, -1, i, K_MOVE) < 0:                # MOVE
                    return -1
            elif k <= i:
                return -1
            elif s[k] < 0:
                if emit(d, si, i, k, ti, -1, i, K_SHIFT_DOWN) < 0:                 # SHIFT DOWN
                    return -1
                s[k] = si
            else:
                if emit(d, si, i, -1, ti, -1, i, K_MOVE) < 0:                # MOVE-3
                    return -1
            s[i] = ti
            i += 1
            continue
        if plan_chain(s, t, R, i, d) < 0:
            return -1
    for i in range(R):
        if s[i] != t[i]:
            return -1
    return 0


cdef void prioritize_order(intp_t* order, intp_t n, const int32_t* src, const int32_t* sci,
                           const int32_t* sni, const int32_t* dst,
                           const int32_t* dni) noexcept nogil:
    """``MigrationManager.prioritizeCopiesAndShiftUps`` on ``order[:n]`` (positions into
    the field arrays), in place. Cannot fail."""
    cdef intp_t index, k, q, m, o
    for index in range(n):
        m = order[index]
        if sci[m] != -1:
            continue
        k = index - 1
        while k >= 0:
            o = order[k]
            if sci[o] == -1:
                break
            if dst[o] == dst[m] or src[o] == dst[m]:
                break
            if sni[o] != -1 and sni[o] < dni[m]:
                break
            k -= 1
        if k + 1 != index:
            q = index
            while q > k + 1:
                order[q] = order[q - 1]
                q -= 1
            order[k + 1] = m


# ------------------------------------------------------------ nogil cores
cdef void cycles_c(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt, uint8_t* cyclic,
                   int32_t* fixed) noexcept nogil:
    """Per row of a non-empty pair of tables: ``cyclic[p]`` = whether the target row holds a
    cycle (when ``cyclic`` is not NULL); with ``fixed`` (a copy of ``tgt``) not NULL, its
    cycles are reverted there. Cannot fail."""
    cdef intp_t p, P = cur.shape[0]
    cdef int R = <int>cur.shape[1], i
    cdef int32_t cw[DEC_CAP]
    cdef int32_t tw[DEC_CAP]
    cdef bint found
    cdef RowLoader L
    loader_init(&L, P, R)
    for p in range(P):
        load_row8(&L, &cur[0, 0], p, cw)
        load_row8(&L, &tgt[0, 0], p, tw)
        found = hz_differ8(cw, tw) and (fix_row(cw, tw, DEC_CAP) if fixed != NULL
                                        else row_is_cyclic(cw, tw, DEC_CAP))
        if cyclic != NULL:
            cyclic[p] = found
        if found and fixed != NULL:
            for i in range(R):
                fixed[p * R + i] = tw[i]


# ------------------------------------------------------------ pattern cache
# The planner (cycle fix, decisions, prioritization) only compares members with each
# other and with -1, so its result for a row depends on the row's equality pattern
# (hz_check_pattern8) alone, the members being renamed. Real tables have few patterns (about
# 50 in the 100,000 x 7 scenarios), so each is planned once per call and replayed for
# every other row with the same pattern.

cdef enum:
    CODE_NONE = 16       # member code "no member" (slot 16 of a pair row holds -1)
    CACHE_BITS = 9
    CACHE_SIZE = 512     # patterns remembered per call (1 << CACHE_BITS)
    CACHE_PROBES = 8     # linear probes before a pattern is planned without caching


cdef struct PatternCache:
    uint64_t* keys       # CACHE_SIZE pattern keys, 0 = free (keys are never 0)
    Pattern* pats        # CACHE_SIZE patterns (valid where the key is set)


cdef inline int member_code(const int32_t* pair, int32_t v) noexcept nogil:
    """Code of member ``v`` in a pair row (see :c:type:`Pattern`); -1 when it is in
    neither row (cannot happen for a planner decision). Cannot fail."""
    cdef int j
    if v < 0:
        return CODE_NONE
    j = hz_index8(pair, v)
    if j >= 0:
        return j
    j = hz_index8(pair + DEC_CAP, v)
    if j >= 0:
        return DEC_CAP + j
    return -1


cdef int plan_pattern(const int32_t* pair, int R, bint prioritized,
                      Pattern* out) noexcept nogil:
    """Plan one valid, differing row pair (``pair[0:8]`` current, ``pair[8:16]`` target,
    ``pair[16] == -1``): cycle fix, Hazelcast's decisions, and with ``prioritized`` the
    instant decisions first then the prioritized queue. Returns 0, or -1 if a planner
    invariant is broken (impossible on validated input; status, no exception)."""
    cdef int32_t tw[DEC_CAP]
    cdef Decisions d
    cdef intp_t order[DEC_CAP]
    cdef intp_t q, m, nq
    cdef int i, first, code_s, code_d, code_e
    cdef int32_t owner
    cdef const int32_t* cw = pair
    for i in range(DEC_CAP):
        tw[i] = pair[DEC_CAP + i]
        # unused entries stay harmless (member codes in range)
        out.src[i] = CODE_NONE; out.dst[i] = CODE_NONE
        out.sci[i] = -1; out.sni[i] = -1; out.dci[i] = -1; out.dni[i] = -1
        out.kind[i] = 0; out.inst[i] = 0; out.ep[i] = CODE_NONE
    out.revert = 0
    if fix_row(cw, tw, DEC_CAP):
        for i in range(R):
            if tw[i] != pair[DEC_CAP + i]:
                out.revert |= <uint8_t>(1 << i)
    first = 0
    while first < R and cw[first] == tw[first]:
        first += 1
    if plan_row(cw, tw, R, first, &d) < 0:
        return -1
    # order: identity, or instant first then the prioritized queue
    for m in range(d.n):
        order[m] = m
    if prioritized:
        q = 0
        for m in range(d.n):
            if is_instant(d.kind[m]):
                order[q] = m
                q += 1
        nq = q
        if nq > 0:
            for m in range(d.n):
                if not is_instant(d.kind[m]):
                    order[q] = m
                    q += 1
        if d.n - nq > 1:
            prioritize_order(&order[nq], d.n - nq, d.src, d.sci, d.sni, d.dst, d.dni)
    for q in range(d.n):
        m = order[q]
        code_s = member_code(pair, d.src[m])
        code_d = member_code(pair, d.dst[m])
        if code_s < 0 or code_d < 0:
            return -1
        out.src[q] = <uint8_t>code_s
        out.dst[q] = <uint8_t>code_d
        out.sci[q] = <int8_t>d.sci[m]
        out.sni[q] = <int8_t>d.sni[m]
        out.dci[q] = <int8_t>d.dci[m]
        out.dni[q] = <int8_t>d.dni[m]
        out.kind[q] = d.kind[m]
        out.inst[q] = is_instant(d.kind[m])
    # each decision's source endpoint for the executor: slot 0 walked through the
    # decisions in output order, from the current row's owner (as the executor's own
    # preparation walks it; docs/design.md section 11)
    owner = cw[0]
    for q in range(d.n):
        m = order[q]
        code_e = member_code(pair, endpoint_of(d.src[m], d.sci[m], is_instant(d.kind[m]), owner))
        if code_e < 0:
            return -1
        out.ep[q] = <uint8_t>code_e
        owner = owner_after_fields(d.src[m], d.sci[m], d.sni[m], d.dst[m], d.dci[m],
                                   d.dni[m], owner)
    out.n = d.n
    return 0


cdef inline intp_t cache_slot(const PatternCache* C, uint64_t key) noexcept nogil:
    """Slot holding ``key``, or the free slot where it belongs, or -1 (no cache, or
    CACHE_PROBES slots taken by other keys). Cannot fail."""
    cdef intp_t h, probe
    cdef uint64_t k
    if C.keys == NULL:
        return -1
    h = <intp_t>((key * <uint64_t>0x9E3779B97F4A7C15ULL) >> (64 - CACHE_BITS))
    for probe in range(CACHE_PROBES):
        k = C.keys[h]
        if k == key or k == 0:
            return h
        h = (h + 1) & (CACHE_SIZE - 1)
    return -1


cdef intp_t plan_rows(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt,
                      int32_t* fixed, bint prioritized, intp_t capacity, Out* o,
                      PatternCache* C, int32_t limit, int* status, intp_t* which, intp_t* bad_row,
                      intp_t* bad_col) noexcept nogil:
    """Body of :func:`plan_c` (same contract) with the output pointers and the cache
    (``C.keys == NULL``: plan every row). Never raises."""
    cdef intp_t p, P = cur.shape[0], n = 0, slot
    cdef int R = <int>cur.shape[1], i, c = 0, last
    cdef int32_t s, t
    cdef unsigned dm
    cdef uint64_t key
    cdef int32_t pair[3 * DEC_CAP]     # [0:8] current, [8:16] target, [16] = -1
    cdef int32_t* cw = &pair[0]
    cdef int32_t* tw = &pair[DEC_CAP]
    cdef const int32_t* pc = &cur[0, 0]
    cdef const int32_t* pt = &tgt[0, 0]
    cdef int32_t* pf = fixed
    cdef Pattern tmp
    cdef const Pattern* pat
    cdef RowLoader L
    pair[CODE_NONE] = -1
    loader_init(&L, P, R)
    for p in range(P):
        load_row8(&L, pc, p, cw)
        if row_suspect(cw) or hz_over8(cw, limit):
            status[0] = check_row(cw, R, limit, &c)
            if status[0] != S_OK:
                which[0] = 0; bad_row[0] = p; bad_col[0] = c
                return -1
        load_row8(&L, pt, p, tw)
        if pf != NULL:                                  # the target row, fixed below
            hz_store8(pf + p * R, tw, R, p < L.wide_rows)
        dm = hz_diffmask8(cw, tw)
        if dm == 0:
            continue
        key = hz_check_pattern8(cw, tw, dm, limit)   # also checks tw (cw is valid here)
        if key == 0:
            status[0] = check_row(tw, R, limit, &c)
            if status[0] != S_OK:
                which[0] = 1; bad_row[0] = p; bad_col[0] = c
                return -1
            status[0] = S_INTERNAL; bad_row[0] = p   # (not reached: the check is exact)
            return -1
        if dm & (dm - 1) == 0:
            # one differing slot: no cycle, and the new member is not elsewhere in the
            # row (it would make a second slot differ): REMOVE, COPY or MOVE.
            if n >= capacity:
                status[0] = S_INTERNAL; bad_row[0] = p
                return -1
            last = hz_ctz(dm)
            s = cw[last]
            t = tw[last]
            if t < 0:
                put(o, n, p, s, last, -1, -1, -1, -1, K_REMOVE)
            elif s < 0:
                put(o, n, p, -1, -1, -1, t, -1, last,
                    K_ASSIGN_LOST_OWNER if last == 0 else K_COPY)
            else:
                put(o, n, p, s, last, -1, t, -1, last, K_MOVE)
            if o.ep != NULL:          # (the row's only decision: slot 0 is cw[0])
                o.ep[n] = endpoint_of(o.src[n], o.sci[n], o.inst[n], cw[0])
            n += 1
            continue
        slot = cache_slot(C, key)
        if slot >= 0 and C.keys[slot] == key:
            pat = &C.pats[slot]
        else:
            if plan_pattern(pair, R, prioritized, &tmp) < 0:
                status[0] = S_INTERNAL; bad_row[0] = p
                return -1
            if slot >= 0:
                C.pats[slot] = tmp
                C.keys[slot] = key
            pat = &tmp
        if n + pat.n > capacity:
            status[0] = S_INTERNAL; bad_row[0] = p
            return -1
        if pat.revert and pf != NULL:
            for i in range(R):
                if (pat.revert >> i) & 1:
                    pf[p * R + i] = cw[i]
        hz_put_pattern(o, n, <int32_t>p, pair, pat)
        n += pat.n
    return n


cdef intp_t plan_c(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt, int32_t* fixed,
                   bint prioritized, intp_t capacity, int32_t* o_cols, int8_t* o_kind,
                   uint8_t* o_inst, int32_t* o_ep, int32_t limit, int* status,
                   intp_t* which, intp_t* bad_row, intp_t* bad_col) noexcept nogil:
    """The whole-table planner, validating each row as it goes (one pass).

    ``fixed`` ((P, R), uninitialised on entry) holds the cycle-fixed target on return
    (NULL: not kept; the decisions are the same).
    The output columns (``o_cols``: the (7, capacity + DEC_CAP) block, row-major;
    ``o_kind``, ``o_inst``, and ``o_ep`` unless NULL: each decision's source endpoint for
    the executor) have ``capacity + DEC_CAP`` entries; ``capacity`` bounds the
    decisions (checked before every write). Returns the number of decisions written. On
    invalid input returns -1 with
    ``*status`` (BELOW_MINUS_ONE, TOO_LARGE: a member ``>= limit``, DUPLICATE), ``*which``
    (0 current, 1 target),
    ``*bad_row``, ``*bad_col``; a broken planner invariant (impossible on valid input)
    gives -1 with ``*status = INTERNAL``. Never raises (if the per-call pattern cache
    cannot be allocated, every row is planned).
    """
    cdef intp_t P = cur.shape[0], n
    cdef Out o
    cdef PatternCache C
    if P == 0:
        return 0
    # the columns have capacity + DEC_CAP rows, so these pointers are valid even when
    # no slot differs (capacity == 0: nothing is written; rows are still validated)
    cdef intp_t width = capacity + DEC_CAP
    o.pid = o_cols; o.src = o_cols + width; o.sci = o_cols + 2 * width
    o.sni = o_cols + 3 * width; o.dst = o_cols + 4 * width; o.dci = o_cols + 5 * width
    o.dni = o_cols + 6 * width
    o.kind = o_kind; o.inst = o_inst; o.ep = o_ep
    C.keys = <uint64_t*>calloc(CACHE_SIZE, sizeof(uint64_t))
    C.pats = <Pattern*>malloc(CACHE_SIZE * sizeof(Pattern))
    if C.keys == NULL or C.pats == NULL:
        free(C.keys)
        free(C.pats)
        C.keys = NULL
        C.pats = NULL
    n = plan_rows(cur, tgt, fixed, prioritized, capacity, &o, &C, limit, status, which,
                  bad_row, bad_col)
    free(C.keys)
    free(C.pats)
    return n



# -------------------------------------------------------------- def entries
def find_cycles(const int32_t[:, ::1] current, const int32_t[:, ::1] target):
    """Per-partition ``isCyclic`` -> ndarray[bool] of shape (P,)."""
    out = np.zeros(current.shape[0], dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    if current.shape[0]:
        with nogil:
            cycles_c(current, target, &o[0], NULL)
    return out


def fix_cycles(const int32_t[:, ::1] current, const int32_t[:, ::1] target):
    """Copy of ``target`` with every cycle reverted to ``current`` (int32, (P, R))."""
    out = np.array(target, dtype=np.int32, copy=True, order="C")
    cdef int32_t[:, ::1] o = out
    if current.shape[0]:
        with nogil:
            cycles_c(current, target, NULL, &o[0, 0])
    return out


cdef intp_t count_diff_c(const int32_t[:, ::1] a, const int32_t[:, ::1] b) noexcept nogil:
    """Number of slots where two equal-shape tables differ (vectorizable). Cannot fail."""
    cdef intp_t k, n = a.shape[0] * a.shape[1], mm = 0
    cdef const int32_t* pa
    cdef const int32_t* pb
    if n == 0:
        return 0
    pa = &a[0, 0]
    pb = &b[0, 0]
    for k in range(n):
        mm += pa[k] != pb[k]
    return mm


cdef object immutable_buffer(intp_t nbytes, char** data):
    """A fresh ``bytes`` object of ``nbytes`` (at least 1) that only this module holds
    until it returns it, and its data pointer: the planner writes its outputs there, and
    numpy views of it can never be made writeable (so a plan's arrays cannot be changed
    by anyone, at no copying cost)."""
    buf = PyBytes_FromStringAndSize(NULL, max(nbytes, 1))
    data[0] = PyBytes_AS_STRING(buf)
    return buf


def plan(const int32_t[:, ::1] current, const int32_t[:, ::1] target, bint prioritized,
         int32_t member_limit, bint endpoints=False, bint keep_target=True):
    """Validate both tables and run the whole-table planner (one pass).

    Returns ``(status, which, row, col, fixed, columns, kind, instant, endpoint)``:
    ``status`` 0 = success, else a validation status for table ``which`` (0 current, 1
    target) at ``[row, col]``, or INTERNAL at partition ``row``. ``columns`` is the (7, N)
    int32 block ``[pid, src, sci, sni, dst, dci, dni]`` (rows contiguous), ``kind`` int8
    and ``instant`` bool of length N. Members must be ``< member_limit`` (>= 1;
    TOO_LARGE). Every output array but ``endpoint`` is read-only for good (it rests on a
    ``bytes`` object). With ``endpoints``, ``endpoint`` is each decision's source endpoint
    for the executor (int32, -1 for instant decisions; what
    :func:`hzfast.migration._executor.prepare` derives from the current table's owner
    slots), else None. Without ``keep_target``, ``fixed`` is None (a (P, R) array fewer to
    write: the master's planning step reads only the decisions). The caller passes private
    snapshots: the tables are read twice (counting, then planning).
    """
    cdef intp_t P = current.shape[0], R = current.shape[1], n, which = -1, row = -1, col = -1
    cdef int status = S_OK
    cdef intp_t capacity, width
    cdef char* f_data
    cdef char* b_data
    cdef char* k_data
    cdef char* i_data
    # decisions <= slots that differ (module docstring); counting them first keeps the
    # outputs small (fewer fresh pages to fault in than a P * R bound would touch)
    with nogil:
        capacity = count_diff_c(current, target)
    width = capacity + DEC_CAP      # DEC_CAP spare columns: never empty, see plan_c
    fixed_buf = None
    f_data = NULL
    if keep_target:
        fixed_buf = immutable_buffer(P * R * 4, &f_data)   # the kernel writes every row
    block_buf = immutable_buffer(N_COLUMNS * width * 4, &b_data)
    kind_buf = immutable_buffer(width, &k_data)
    inst_buf = immutable_buffer(width, &i_data)
    cdef int32_t* e_data = NULL
    endpoint = None
    if endpoints:
        endpoint = np.empty(width, dtype=np.int32)
        e_data = <int32_t*>cnp.PyArray_DATA(endpoint)
    with nogil:
        n = plan_c(current, target, <int32_t*>f_data, prioritized, capacity,
                   <int32_t*>b_data, <int8_t*>k_data, <uint8_t*>i_data, e_data,
                   member_limit, &status, &which, &row, &col)
    if n < 0:
        return status, which, row, col, None, None, None, None, None
    fixed = None
    if keep_target:
        fixed = np.frombuffer(fixed_buf, dtype=np.int32, count=P * R).reshape(P, R)
    block = np.frombuffer(block_buf, dtype=np.int32, count=N_COLUMNS * width)
    kind = np.frombuffer(kind_buf, dtype=np.int8, count=width)
    inst = np.frombuffer(inst_buf, dtype=np.bool_, count=width)
    return (S_OK, -1, -1, -1, fixed, block.reshape(N_COLUMNS, width)[:, :n], kind[:n],
            inst[:n], endpoint[:n] if endpoints else None)


def prioritize_columns(const int32_t[:, :] block, const int8_t[::1] kind, bint instant_first):
    """Order (ndarray[intp]) that prioritizes each run of equal partition ids of a
    (7, N) column block (``kind``: the decisions' kinds).

    ``instant_first``: instant decisions first (in order), then the others prioritized
    (the plan's order contract); otherwise the whole run is prioritized.
    """
    cdef Columns c = columns_of(block)
    cdef intp_t N = c.n, a = 0, b, q, m, nq
    order_arr = np.empty(N, dtype=np.intp)
    cdef intp_t[::1] order = order_arr
    with nogil:
        while a < N:
            b = a
            while b < N and c.pid[b] == c.pid[a]:
                b += 1
            q = a
            if instant_first:
                for m in range(a, b):
                    if is_instant(kind[m]):
                        order[q] = m
                        q += 1
            nq = q
            for m in range(a, b):
                if not instant_first or not is_instant(kind[m]):
                    order[q] = m
                    q += 1
            if b > nq:
                prioritize_order(&order[nq], b - nq, c.src, c.sci, c.sni, c.dst, c.dni)
            a = b
    return order_arr


def classify(const int32_t[:, :] block):
    """``(kind ndarray[int8], instant ndarray[bool])`` of a (7, N) column block's
    decisions (the rule of docs/design.md section 5; the planner emits the same kinds)."""
    cdef Columns c = columns_of(block)
    cdef intp_t k
    kind_arr = np.empty(c.n, dtype=np.int8)
    inst_arr = np.empty(c.n, dtype=np.bool_)
    cdef int8_t[::1] kd = kind_arr
    cdef uint8_t[::1] ins = inst_arr.view(np.uint8)
    with nogil:
        for k in range(c.n):
            kd[k] = kind_of(c.src[k], c.sni[k], c.dst[k], c.dci[k], c.dni[k])
            ins[k] = is_instant(kd[k])
    return kind_arr, inst_arr
