# cython: language_level=3
"""Migration-planner kernels: validation, cycles, Hazelcast's planner, prioritization,
apply and diff over whole replica tables.

Every ``def`` here trusts its caller (``hzfast.planning``) for dtype, contiguity and
shapes (memoryview signatures enforce dtype/contiguity anyway); member values are
validated by :func:`check_pair`, which every public function calls first.

A decision is ``(source, sci, sni, destination, dci, dni)``; ``-1`` = none.
Per partition the planner makes at most R decisions: every decision turns at least one
slot whose occupant differs from the (cycle-fixed) target into a matching slot and never
breaks a matching slot, so the number of decisions is bounded by the number of
mismatching slots (``count_diff_c`` counts them; the output columns are sized with it).

Rows are handled as 8-slot "working rows" padded with -1 so that the small row
operations (load, validate, compare, find a member) are fixed-width SSE2 helpers
(portable scalar fallbacks when SSE2 is unavailable).
"""
import numpy as np

from libc.stdlib cimport calloc, free, malloc

from hzfast._types cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, intp_t



cdef extern from *:
    """
    /* Row helpers on 8-slot working rows (a row of R <= 7 members padded with -1).
       SSE2 (baseline on x86-64) when available, portable scalar code otherwise. */
    #include <stdint.h>
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif

    /* Row of R values at src into dst[0..7], padded with -1. wide != 0 allows reading
       8 values from src (the caller guarantees they are inside the table). */
    static inline void hz_load8(const int32_t* src, int R, int wide, int32_t* dst) {
    #if defined(__SSE2__)
        if (wide) {
            const __m128i r = _mm_set1_epi32(R);
            const __m128i k0 = _mm_cmplt_epi32(_mm_setr_epi32(0, 1, 2, 3), r);
            const __m128i k1 = _mm_cmplt_epi32(_mm_setr_epi32(4, 5, 6, 7), r);
            __m128i a = _mm_loadu_si128((const __m128i*)src);
            __m128i b = _mm_loadu_si128((const __m128i*)(src + 4));
            a = _mm_or_si128(_mm_and_si128(a, k0), _mm_andnot_si128(k0, _mm_set1_epi32(-1)));
            b = _mm_or_si128(_mm_and_si128(b, k1), _mm_andnot_si128(k1, _mm_set1_epi32(-1)));
            _mm_storeu_si128((__m128i*)dst, a);
            _mm_storeu_si128((__m128i*)(dst + 4), b);
            return;
        }
    #endif
        for (int i = 0; i < 8; i++) dst[i] = (i < R) ? src[i] : -1;
    }

    /* Nonzero when the working row holds a value < -1 or a member twice (exact). */
    static inline int hz_bad8(const int32_t* w) {
    #if defined(__SSE2__)
        const __m128i zero = _mm_setzero_si128(), m1 = _mm_set1_epi32(-1);
        __m128i a = _mm_loadu_si128((const __m128i*)w);
        __m128i b = _mm_loadu_si128((const __m128i*)(w + 4));
        __m128i bad = _mm_or_si128(_mm_cmplt_epi32(a, m1), _mm_cmplt_epi32(b, m1));
        /* empty slots become distinct negatives so they never compare equal */
        __m128i na = _mm_cmplt_epi32(a, zero), nb = _mm_cmplt_epi32(b, zero);
        a = _mm_or_si128(_mm_andnot_si128(na, a), _mm_and_si128(na, _mm_setr_epi32(-2, -3, -4, -5)));
        b = _mm_or_si128(_mm_andnot_si128(nb, b), _mm_and_si128(nb, _mm_setr_epi32(-6, -7, -8, -9)));
        __m128i a1 = _mm_shuffle_epi32(a, _MM_SHUFFLE(0, 3, 2, 1));
        __m128i a2 = _mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 3, 2));
        __m128i b1 = _mm_shuffle_epi32(b, _MM_SHUFFLE(0, 3, 2, 1));
        __m128i b2 = _mm_shuffle_epi32(b, _MM_SHUFFLE(1, 0, 3, 2));
        __m128i b3 = _mm_shuffle_epi32(b, _MM_SHUFFLE(2, 1, 0, 3));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi32(a, a1));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi32(a, a2));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi32(b, b1));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi32(b, b2));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi32(a, b));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi32(a, b1));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi32(a, b2));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi32(a, b3));
        return _mm_movemask_epi8(bad) != 0;
    #else
        for (int i = 0; i < 8; i++) {
            if (w[i] < -1) return 1;
            if (w[i] < 0) continue;
            for (int j = 0; j < i; j++) if (w[j] == w[i]) return 1;
        }
        return 0;
    #endif
    }

    /* Nonzero when two working rows differ. */
    static inline int hz_differ8(const int32_t* a, const int32_t* b) {
    #if defined(__SSE2__)
        __m128i e0 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i*)a),
                                     _mm_loadu_si128((const __m128i*)b));
        __m128i e1 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i*)(a + 4)),
                                     _mm_loadu_si128((const __m128i*)(b + 4)));
        return _mm_movemask_epi8(_mm_and_si128(e0, e1)) != 0xFFFF;
    #else
        int32_t x = 0;
        for (int i = 0; i < 8; i++) x |= a[i] ^ b[i];
        return x != 0;
    #endif
    }

    /* Position of member v (>= 0) in the working row, or -1. */
    static inline int hz_index8(const int32_t* w, int32_t v) {
    #if defined(__SSE2__) && defined(__GNUC__)
        const __m128i x = _mm_set1_epi32(v);
        int m = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_loadu_si128((const __m128i*)w), x)))
              | (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_loadu_si128((const __m128i*)(w + 4)), x))) << 4);
        return m ? __builtin_ctz((unsigned)m) : -1;
    #else
        for (int i = 0; i < 8; i++) if (w[i] == v) return i;
        return -1;
    #endif
    }

    /* Lowest set bit of x != 0. */
    static inline int hz_ctz(unsigned x) {
    #if defined(__GNUC__)
        return __builtin_ctz(x);
    #else
        int i = 0; while (!((x >> i) & 1u)) i++; return i;
    #endif
    }

    /* Bit i set where two working rows differ (slots 0..7). */
    static inline unsigned hz_diffmask8(const int32_t* a, const int32_t* b) {
    #if defined(__SSE2__)
        __m128i e0 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i*)a), _mm_loadu_si128((const __m128i*)b));
        __m128i e1 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i*)(a + 4)), _mm_loadu_si128((const __m128i*)(b + 4)));
        unsigned eq = (unsigned)(_mm_movemask_ps(_mm_castsi128_ps(e0)) | (_mm_movemask_ps(_mm_castsi128_ps(e1)) << 4));
        return (~eq) & 0xFFu;
    #else
        unsigned d = 0;
        for (int i = 0; i < 8; i++) d |= (unsigned)(a[i] != b[i]) << i;
        return d;
    #endif
    }


    /* Output columns of the planner (one row per decision). */
    typedef struct {
        int32_t *pid, *src, *sci, *sni, *dst, *dci, *dni;
        int8_t *kind;
        uint8_t *inst;
    } hz_out;

    /* One row's decisions in output order. Members are named by where they sit in the
       pair row: 0..7 = slot of the current row, 8..15 = slot of the target row as given
       (before the cycle fix), 16 = no member (the pair row holds -1 there). */
    typedef struct {
        int n;
        uint8_t revert;      /* target slots the cycle fix gave back to the current member */
        uint8_t src[8], dst[8], inst[8];
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
    }

    /* Target-row check and equality pattern of a (current, target) pair of working rows
       whose current row c is valid and which differ at the slots of mask d (equal slots
       can only repeat c, which is valid). Returns the pattern key: nibble i = where
       target slot i's member sits in c (0..7), 14 = a member absent from c, 15 = empty;
       an equal slot keeps nibble i (its member, or -1 on both sides: bit 32 + i tells);
       bits 32..39 = empty slots of c; bit 63 set. The planner only compares members with
       each other and with -1, so rows with equal keys get the same decisions up to
       renaming the members. Returns 0 when a differing slot of t holds a value < -1 or
       a member t holds twice (then check_row locates it). */
    static inline uint64_t hz_check_pattern8(const int32_t* c, const int32_t* t, unsigned d) {
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
        if (hz_bad8(t)) return 0;
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

    /* Working row w (8 slots) into a table row of R values at dst; wide != 0 allows
       writing 8 values (the caller guarantees they are inside the table and that the
       values past R are overwritten later, by the next row). */
    static inline void hz_store8(int32_t* dst, const int32_t* w, int R, int wide) {
    #if defined(__SSE2__)
        if (wide) {
            _mm_storeu_si128((__m128i*)dst, _mm_loadu_si128((const __m128i*)w));
            if (R > 4)
                _mm_storeu_si128((__m128i*)(dst + 4), _mm_loadu_si128((const __m128i*)(w + 4)));
            return;
        }
    #endif
        for (int i = 0; i < R; i++) dst[i] = w[i];
    }
    """
    uint64_t hz_check_pattern8(const int32_t* c, const int32_t* t, unsigned d) noexcept nogil
    void hz_store8(int32_t* dst, const int32_t* w, int R, int wide) noexcept nogil
    void hz_store8(int32_t* dst, const int32_t* w, int R, int wide) noexcept nogil
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
    ctypedef struct Pattern "hz_pattern":
        int n
        uint8_t revert
        uint8_t src[8]
        uint8_t dst[8]
        uint8_t inst[8]
        int8_t sci[8]
        int8_t sni[8]
        int8_t dci[8]
        int8_t dni[8]
        int8_t kind[8]
    void hz_put_pattern(const Out* o, Py_ssize_t n, int32_t p, const int32_t* pair,
                        const Pattern* pt) noexcept nogil
    unsigned hz_diffmask8(const int32_t* a, const int32_t* b) noexcept nogil
    int hz_ctz(unsigned x) noexcept nogil
    int hz_index8(const int32_t* w, int32_t v) noexcept nogil
    void hz_load8(const int32_t* src, int R, int wide, int32_t* dst) noexcept nogil
    int hz_bad8(const int32_t* w) noexcept nogil
    int hz_differ8(const int32_t* a, const int32_t* b) noexcept nogil

# ----------------------------------------------------------------- constants
cdef enum:
    MAXR = 7
    DEC_CAP = 8          # per-partition decision buffer (proved bound: R <= 7)

# status codes (first problem found)
cdef enum:
    S_OK = 0
    S_BELOW_MINUS_ONE = 1
    S_DUPLICATE = 2
    S_INTERNAL = 3       # planner invariant broken (cannot happen on validated input)
    S_BAD_PARTITION = 4
    S_BAD_INDEX = 5
    S_SOURCE_MISMATCH = 6
    S_DESTINATION_MISMATCH = 7
    S_BAD_MEMBER = 8

OK = S_OK
BELOW_MINUS_ONE = S_BELOW_MINUS_ONE
DUPLICATE = S_DUPLICATE
INTERNAL = S_INTERNAL
BAD_PARTITION = S_BAD_PARTITION
BAD_INDEX = S_BAD_INDEX
SOURCE_MISMATCH = S_SOURCE_MISMATCH
DESTINATION_MISMATCH = S_DESTINATION_MISMATCH
BAD_MEMBER = S_BAD_MEMBER

# MigrationKind values (hzfast.planning.MigrationKind)
cdef enum:
    K_REMOVE = 0
    K_COPY = 1
    K_ASSIGN_LOST_OWNER = 2
    K_SHIFT_UP = 3
    K_MOVE = 4
    K_SHIFT_DOWN = 5
    K_SHIFT_UP_SOURCE_DROPPED = 6
    K_SHIFT_UP_SHIFT_DOWN = 7


# ------------------------------------------------------------------ row helpers
cdef inline int index_of(const int32_t* row, int R, int32_t v) noexcept nogil:
    """Position of member ``v`` in ``row``; -1 if absent or ``v == -1``. Cannot fail.

    ``row`` is an 8-slot working row padded with -1 beyond R, so the scan is one
    fixed-width compare (``R`` is unused; kept for readability of call sites).
    """
    if v < 0:
        return -1
    return hz_index8(row, v)


cdef inline bint row_suspect(const int32_t* row) noexcept nogil:
    """Exact, branch-free check of a padded 8-slot working row: True when a value is
    < -1 or a member appears twice (then :func:`check_row` locates it). Cannot fail."""
    return hz_bad8(row) != 0


cdef inline int check_row(const int32_t* row, int R, int* col) noexcept nogil:
    """Status of one row (values >= -1, no member twice); *col = offending column.

    A 64-bit membership filter makes the common duplicate-free row cost R steps.
    Cannot fail (returns a status).
    """
    cdef uint64_t seen = 0, bit
    cdef int i, j
    cdef int32_t v
    for i in range(R):
        v = row[i]
        if v < 0:
            if v < -1:
                col[0] = i
                return S_BELOW_MINUS_ONE
            continue
        bit = (<uint64_t>1) << (v & 63)
        if seen & bit:
            for j in range(i):
                if row[j] == v:
                    col[0] = i
                    return S_DUPLICATE
        seen |= bit
    return S_OK


cdef inline bint cyclic_at(const int32_t* cur, const int32_t* tgt, int R, int index) noexcept nogil:
    """Hazelcast ``isCyclic(old, new, index)``. At most R steps (the index map is
    injective on validated rows, so the walk ends; the cap only guards). Cannot fail."""
    cdef int32_t new_owner = tgt[index]
    cdef int first = index, nxt, steps
    for steps in range(R + 1):
        nxt = index_of(tgt, R, cur[first])
        if nxt == -1 or nxt == first:
            return False
        if cur[nxt] == new_owner:
            return True
        first = nxt
    return False


cdef inline bint row_is_cyclic(const int32_t* cur, const int32_t* tgt, int R) noexcept nogil:
    """Hazelcast ``isCyclic(old, new)`` on one row. Cannot fail."""
    cdef int i
    cdef int32_t c, t
    for i in range(R):
        c = cur[i]
        t = tgt[i]
        if c < 0 or t < 0 or c == t:
            continue
        if cyclic_at(cur, tgt, R, i):
            return True
    return False


cdef inline bint fix_row(const int32_t* cur, int32_t* tgt, int R) noexcept nogil:
    """Hazelcast ``fixCycle(old, new)``: reverts every cycle of ``tgt`` (in place) to
    ``cur``; returns whether there was one. Cannot fail."""
    cdef int i, index, nxt, steps
    cdef int32_t c, t
    cdef bint cyclic = False
    for i in range(R):
        c = cur[i]
        t = tgt[i]
        if c < 0 or t < 0 or c == t:
            continue
        if cyclic_at(cur, tgt, R, i):
            index = i
            for steps in range(R + 1):
                nxt = index_of(tgt, R, cur[index])
                tgt[index] = cur[index]
                if nxt == -1:
                    break
                index = nxt
            cyclic = True
    return cyclic


# ------------------------------------------------------------------- planner
cdef struct Decisions:
    int n
    int32_t src[DEC_CAP]
    int32_t sci[DEC_CAP]
    int32_t sni[DEC_CAP]
    int32_t dst[DEC_CAP]
    int32_t dci[DEC_CAP]
    int32_t dni[DEC_CAP]
    int8_t kind[DEC_CAP]


cdef inline int emit(Decisions* d, int32_t src, int32_t sci, int32_t sni,
                     int32_t dst, int32_t dci, int32_t dni, int8_t kind) noexcept nogil:
    """Append one decision (its kind is known at each call site and equals
    ``hzfast.reference.planning.kind_of`` of the fields; the tests check it); returns -1
    when the buffer is full
    (never on valid input)."""
    cdef int n = d.n
    if n >= DEC_CAP:
        return -1
    d.kind[n] = kind
    d.src[n] = src
    d.sci[n] = sci
    d.sni[n] = sni
    d.dst[n] = dst
    d.dci[n] = dci
    d.dni[n] = dni
    d.n = n + 1
    return 0


cdef int plan_chain(int32_t* s, const int32_t* t, int R, int c, Decisions* d) noexcept nogil:
    """Hazelcast's private ``planMigrations(..., currentIndex)``: one decision at a
    colder index. Returns 0, or -1 if an invariant is broken (status, no exception)."""
    cdef int j, k, steps
    cdef int32_t x
    for steps in range(R + 1):
        j = index_of(s, R, t[c])
        if j < 0:
            return -1
        if t[j] < 0:
            x = s[c]
            if x < 0:
                if emit(d, -1, -1, -1, s[j], j, c, K_SHIFT_UP) < 0:
                    return -1
                s[c] = s[j]
            else:
                k = index_of(t, R, x)
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
        if index_of(s, R, t[j]) < 0:
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
    d.n = 0
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
            j = index_of(s, R, ti)
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
        j = index_of(s, R, ti)
        if j < 0:
            k = index_of(t, R, si)
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


cdef inline bint is_instant(int32_t src, int32_t dst, int32_t dci, int32_t dni) noexcept nogil:
    """REMOVE or lost-owner assignment (applied at once, never queued). Cannot fail."""
    return (dst < 0) | ((src < 0) & (dci < 0) & (dni == 0))


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
cdef struct RowLoader:
    int R
    intp_t wide_rows           # rows that may be read 8 values at a time


cdef inline void loader_init(RowLoader* L, intp_t P, int R) noexcept nogil:
    """Prepare padded row loads for a (P, R) table. Cannot fail."""
    L.R = R
    # an 8-value read from row p stays inside the table when p * R + 8 <= P * R
    L.wide_rows = P - (DEC_CAP + R - 1) // R
    if L.wide_rows < 0:
        L.wide_rows = 0


cdef inline void load_row8(const RowLoader* L, const int32_t* base, intp_t p,
                           int32_t* dst) noexcept nogil:
    """Row ``p`` of a (P, R) table into the 8-slot working row ``dst``, padded with -1;
    8-value reads only where they stay inside the table. Cannot fail."""
    hz_load8(base + p * L.R, L.R, p < L.wide_rows, dst)


cdef inline bint differ8(const int32_t* a, const int32_t* b) noexcept nogil:
    """Whether two padded working rows differ. Cannot fail."""
    return hz_differ8(a, b) != 0


cdef int check_pair_c(const int32_t[:, ::1] a, const int32_t[:, ::1] b, bint has_b,
                      intp_t* which, intp_t* row, intp_t* col, intp_t* mismatches,
                      int32_t* max_member) noexcept nogil:
    """Validate ``a`` (and ``b``), count slots where they differ, find the largest
    member. Returns a status (first problem row-major, ``a`` before ``b``); never
    raises."""
    cdef intp_t p, P = a.shape[0], k, n
    cdef int R = <int>a.shape[1], c = 0, st
    cdef intp_t mm = 0
    cdef int32_t mx = -1, v, w
    cdef RowLoader L
    cdef int32_t aw[DEC_CAP]
    cdef int32_t bw[DEC_CAP]
    cdef const int32_t* pa
    cdef const int32_t* pb
    if P == 0:
        mismatches[0] = 0
        max_member[0] = -1
        return S_OK
    loader_init(&L, P, R)
    pa = &a[0, 0]
    pb = &b[0, 0]
    n = P * R
    for p in range(P):
        load_row8(&L, pa, p, aw)
        if row_suspect(aw):
            st = check_row(aw, R, &c)
            if st != S_OK:
                which[0] = 0; row[0] = p; col[0] = c
                return st
        if has_b:
            load_row8(&L, pb, p, bw)
            if differ8(aw, bw) and row_suspect(bw):
                st = check_row(bw, R, &c)
                if st != S_OK:
                    which[0] = 1; row[0] = p; col[0] = c
                    return st
    for k in range(n):
        v = pa[k]
        mx = v if v > mx else mx
    if has_b:
        for k in range(n):
            v = pa[k]
            w = pb[k]
            mx = w if w > mx else mx
            mm += v != w
    mismatches[0] = mm
    max_member[0] = mx
    return S_OK


cdef void find_cycles_c(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt,
                        uint8_t[::1] out) noexcept nogil:
    """Cannot fail."""
    cdef intp_t p, P = cur.shape[0]
    cdef int R = <int>cur.shape[1]
    cdef int32_t cw[DEC_CAP]
    cdef int32_t tw[DEC_CAP]
    cdef RowLoader L
    if P == 0:
        return
    loader_init(&L, P, R)
    for p in range(P):
        load_row8(&L, &cur[0, 0], p, cw)
        load_row8(&L, &tgt[0, 0], p, tw)
        out[p] = differ8(cw, tw) and row_is_cyclic(cw, tw, R)


cdef void fix_cycles_c(const int32_t[:, ::1] cur, int32_t[:, ::1] tgt) noexcept nogil:
    """Fix ``tgt`` (the caller's copy) in place. Cannot fail."""
    cdef intp_t p, P = cur.shape[0]
    cdef int R = <int>cur.shape[1], i
    cdef int32_t cw[DEC_CAP]
    cdef int32_t tw[DEC_CAP]
    cdef RowLoader L
    if P == 0:
        return
    loader_init(&L, P, R)
    for p in range(P):
        load_row8(&L, &cur[0, 0], p, cw)
        load_row8(&L, &tgt[0, 0], p, tw)
        if differ8(cw, tw) and fix_row(cw, tw, R):
            for i in range(R):
                tgt[p, i] = tw[i]


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
    o.inst[n] = (kind == K_REMOVE) | (kind == K_ASSIGN_LOST_OWNER)


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
    cdef int i, first, code_s, code_d
    cdef const int32_t* cw = pair
    for i in range(DEC_CAP):
        tw[i] = pair[DEC_CAP + i]
        # unused entries stay harmless (member codes in range)
        out.src[i] = CODE_NONE; out.dst[i] = CODE_NONE
        out.sci[i] = -1; out.sni[i] = -1; out.dci[i] = -1; out.dni[i] = -1
        out.kind[i] = 0; out.inst[i] = 0
    out.revert = 0
    if fix_row(cw, tw, R):
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
            if d.kind[m] == K_REMOVE or d.kind[m] == K_ASSIGN_LOST_OWNER:
                order[q] = m
                q += 1
        nq = q
        if nq > 0:
            for m in range(d.n):
                if not (d.kind[m] == K_REMOVE or d.kind[m] == K_ASSIGN_LOST_OWNER):
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
        out.inst[q] = (d.kind[m] == K_REMOVE) | (d.kind[m] == K_ASSIGN_LOST_OWNER)
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
                      int32_t[:, ::1] fixed, bint prioritized, intp_t capacity, Out* o,
                      PatternCache* C, int* status, intp_t* which, intp_t* bad_row,
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
    cdef int32_t* pf = &fixed[0, 0]
    cdef Pattern tmp
    cdef const Pattern* pat
    cdef RowLoader L
    pair[CODE_NONE] = -1
    loader_init(&L, P, R)
    for p in range(P):
        load_row8(&L, pc, p, cw)
        if row_suspect(cw):
            status[0] = check_row(cw, R, &c)
            if status[0] != S_OK:
                which[0] = 0; bad_row[0] = p; bad_col[0] = c
                return -1
        load_row8(&L, pt, p, tw)
        hz_store8(pf + p * R, tw, R, p < L.wide_rows)   # the target row, fixed below
        dm = hz_diffmask8(cw, tw)
        if dm == 0:
            continue
        key = hz_check_pattern8(cw, tw, dm)   # also checks tw (cw is valid here)
        if key == 0:
            status[0] = check_row(tw, R, &c)
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
        if pat.revert:
            for i in range(R):
                if (pat.revert >> i) & 1:
                    pf[p * R + i] = cw[i]
        hz_put_pattern(o, n, <int32_t>p, pair, pat)
        n += pat.n
    return n


cdef intp_t plan_c(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt, int32_t[:, ::1] fixed,
                   bint prioritized, intp_t capacity,
                   int32_t[::1] o_pid, int32_t[::1] o_src, int32_t[::1] o_sci,
                   int32_t[::1] o_sni, int32_t[::1] o_dst, int32_t[::1] o_dci,
                   int32_t[::1] o_dni, int8_t[::1] o_kind, uint8_t[::1] o_inst,
                   int* status, intp_t* which, intp_t* bad_row, intp_t* bad_col) noexcept nogil:
    """The whole-table planner, validating each row as it goes (one pass).

    ``fixed`` (uninitialised on entry) holds the cycle-fixed target on return.
    The output columns have ``capacity + DEC_CAP`` rows; ``capacity`` bounds the
    decisions (checked before every write). Returns the number of decisions written. On invalid input returns -1 with
    ``*status`` (BELOW_MINUS_ONE / DUPLICATE), ``*which`` (0 current, 1 target),
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
    o.pid = &o_pid[0]; o.src = &o_src[0]; o.sci = &o_sci[0]; o.sni = &o_sni[0]
    o.dst = &o_dst[0]; o.dci = &o_dci[0]; o.dni = &o_dni[0]
    o.kind = &o_kind[0]; o.inst = &o_inst[0]
    C.keys = <uint64_t*>calloc(CACHE_SIZE, sizeof(uint64_t))
    C.pats = <Pattern*>malloc(CACHE_SIZE * sizeof(Pattern))
    if C.keys == NULL or C.pats == NULL:
        free(C.keys)
        free(C.pats)
        C.keys = NULL
        C.pats = NULL
    n = plan_rows(cur, tgt, fixed, prioritized, capacity, &o, &C, status, which,
                  bad_row, bad_col)
    free(C.keys)
    free(C.pats)
    return n



cdef int apply_c(int32_t[:, ::1] reps, int32_t[::1] vers,
                 const int32_t[::1] pid, const int32_t[::1] src, const int32_t[::1] sci,
                 const int32_t[::1] sni, const int32_t[::1] dst, const int32_t[::1] dci,
                 const int32_t[::1] dni, intp_t* bad) noexcept nogil:
    """Apply rows in order to ``reps``/``vers`` (the caller's fresh copies), checking each
    step. Returns a status; ``*bad`` = offending plan row. Never raises."""
    cdef intp_t n, N = pid.shape[0], P = reps.shape[0]
    cdef int R = <int>reps.shape[1], c = 0, st
    cdef int32_t p, a, b, x, y, z, sm, dm
    cdef int32_t* r
    for n in range(N):
        bad[0] = n
        p = pid[n]
        if p < 0 or p >= P:
            return S_BAD_PARTITION
        a = sci[n]; b = sni[n]; x = dci[n]; y = dni[n]
        if a < -1 or a >= R or b < -1 or b >= R or x < -1 or x >= R or y < -1 or y >= R:
            return S_BAD_INDEX
        sm = src[n]; dm = dst[n]
        if sm < -1 or dm < -1:
            return S_BAD_MEMBER
        if (y >= 0) != (dm >= 0) or (b >= 0 and sm < 0):
            return S_BAD_INDEX
        r = &reps[p, 0]
        if a >= 0 and r[a] != sm:
            return S_SOURCE_MISMATCH
        if x >= 0 and r[x] != dm:
            return S_DESTINATION_MISMATCH
        if a >= 0:
            r[a] = -1
        if x >= 0:
            r[x] = -1
        if y >= 0:
            r[y] = dm
        if b >= 0:
            r[b] = sm
        z = 1
        if b >= 0:
            z += 1
        if x >= 0:
            z += 1
        vers[p] += z
        st = check_row(r, R, &c)
        if st != S_OK:
            return st
    return S_OK


cdef intp_t diff_c(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt, uint8_t[:, ::1] mask,
                   int64_t[::1] changed, int64_t[:, ::1] gains, int64_t[:, ::1] losses,
                   intp_t* n_changed) noexcept nogil:
    """Fill the mask/gains/losses; returns the number of changed slots. Cannot fail
    (members were bounded by the caller's validation and sizing)."""
    cdef intp_t p, P = cur.shape[0], moves = 0, nc = 0
    cdef int R = <int>cur.shape[1], i
    cdef int32_t a, b
    cdef bint any_changed
    for p in range(P):
        any_changed = False
        for i in range(R):
            a = cur[p, i]
            b = tgt[p, i]
            if a != b:
                mask[p, i] = 1
                any_changed = True
                moves += 1
                if b >= 0:
                    gains[b, i] += 1
                if a >= 0:
                    losses[a, i] += 1
            else:
                mask[p, i] = 0
        if any_changed:
            changed[nc] = p
            nc += 1
    n_changed[0] = nc
    return moves


# -------------------------------------------------------------- def entries
def check_pair(const int32_t[:, ::1] a, b=None):
    """Validate one or two replica tables of equal shape.

    Returns ``(status, which, row, col, mismatches, max_member)``; ``which`` is 0 for
    ``a`` and 1 for ``b``; ``mismatches`` counts slots where ``a != b``.
    """
    cdef const int32_t[:, ::1] bb = a if b is None else b
    cdef bint has_b = b is not None
    cdef intp_t which = -1, row = -1, col = -1, mm = 0
    cdef int32_t mx = -1
    cdef int st
    with nogil:
        st = check_pair_c(a, bb, has_b, &which, &row, &col, &mm, &mx)
    return st, which, row, col, mm, mx


def find_cycles(const int32_t[:, ::1] current, const int32_t[:, ::1] target):
    """Per-partition ``isCyclic`` -> ndarray[bool] of shape (P,)."""
    out = np.empty(current.shape[0], dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    with nogil:
        find_cycles_c(current, target, o)
    return out


def fix_cycles(const int32_t[:, ::1] current, const int32_t[:, ::1] target):
    """Copy of ``target`` with every cycle reverted to ``current`` (int32, (P, R))."""
    out = np.array(target, dtype=np.int32, copy=True, order="C")
    cdef int32_t[:, ::1] o = out
    with nogil:
        fix_cycles_c(current, o)
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


cdef intp_t plan_into(const int32_t[:, ::1] current, const int32_t[:, ::1] target,
                     bint prioritized, object fixed, object cols, int* status, intp_t* which,
                     intp_t* row, intp_t* col) except? -9:
    """Acquire the output buffers (memoryviews released on return, so the arrays can
    be shrunk afterwards) and run :func:`plan_c` without the GIL. Returns its result."""
    cdef int32_t[:, ::1] f = fixed
    cdef int32_t[::1] a1 = cols[0], a2 = cols[1], a3 = cols[2], a4 = cols[3]
    cdef int32_t[::1] a5 = cols[4], a6 = cols[5], a7 = cols[6]
    cdef int8_t[::1] a8 = cols[7]
    cdef uint8_t[::1] a9 = cols[8].view(np.uint8)
    cdef intp_t n
    with nogil:
        n = plan_c(current, target, f, prioritized, a1.shape[0] - DEC_CAP,
                   a1, a2, a3, a4, a5, a6, a7, a8, a9, status, which, row, col)
    return n


def plan(const int32_t[:, ::1] current, const int32_t[:, ::1] target, bint prioritized):
    """Validate both tables and run the whole-table planner (one pass).

    Returns ``(status, which, row, col, fixed, columns)``: ``status`` 0 = success, else
    a validation status for table ``which`` (0 current, 1 target) at ``[row, col]``,
    or INTERNAL at partition ``row``. ``columns`` = ``[pid, src, sci, sni, dst, dci,
    dni, kind, instant]`` (int32 x 7, int8, bool), already cut to the decision count.
    """
    cdef intp_t P = current.shape[0], R = current.shape[1], n, which = -1, row = -1, col = -1
    cdef int status = S_OK
    cdef intp_t capacity
    fixed = np.empty((P, R), dtype=np.int32)   # the kernel writes every row
    # decisions <= slots that differ (module docstring); counting them first keeps the
    # outputs small (fewer fresh pages to fault in than a P * R bound would touch)
    with nogil:
        capacity = count_diff_c(current, target)
    # one allocation, 7 contiguous rows (+ DEC_CAP spare rows: never empty, see plan_c)
    block = np.empty((7, capacity + DEC_CAP), dtype=np.int32)
    cols = [block[i] for i in range(7)]
    cols.append(np.empty(capacity + DEC_CAP, dtype=np.int8))
    cols.append(np.empty(capacity + DEC_CAP, dtype=np.bool_))
    n = plan_into(current, target, prioritized, fixed, cols, &status, &which, &row, &col)
    if n < 0:
        return status, which, row, col, None, None
    return S_OK, -1, -1, -1, fixed, [c[:n] for c in cols]


def prioritize_columns(const int32_t[::1] pid, const int32_t[::1] src,
                       const int32_t[::1] sci, const int32_t[::1] sni,
                       const int32_t[::1] dst, const int32_t[::1] dci,
                       const int32_t[::1] dni, bint instant_first):
    """Order (ndarray[intp]) that prioritizes each run of equal ``pid``.

    ``instant_first``: instant decisions first (in order), then the others prioritized
    (the plan's order contract); otherwise the whole run is prioritized.
    """
    cdef intp_t N = pid.shape[0], a = 0, b, q, m, nq
    order_arr = np.empty(N, dtype=np.intp)
    cdef intp_t[::1] order = order_arr
    with nogil:
        while a < N:
            b = a
            while b < N and pid[b] == pid[a]:
                b += 1
            q = a
            if instant_first:
                for m in range(a, b):
                    if is_instant(src[m], dst[m], dci[m], dni[m]):
                        order[q] = m
                        q += 1
            nq = q
            for m in range(a, b):
                if not instant_first or not is_instant(src[m], dst[m], dci[m], dni[m]):
                    order[q] = m
                    q += 1
            if b > nq:
                prioritize_order(&order[nq], b - nq, &src[0], &sci[0], &sni[0], &dst[0], &dni[0])
            a = b
    return order_arr


def apply(int32_t[:, ::1] replicas, int32_t[::1] versions,
          const int32_t[::1] pid, const int32_t[::1] src, const int32_t[::1] sci,
          const int32_t[::1] sni, const int32_t[::1] dst, const int32_t[::1] dci,
          const int32_t[::1] dni):
    """Apply plan rows in order to ``replicas``/``versions`` IN PLACE (pass copies).

    Returns ``(status, bad_row)``.
    """
    cdef intp_t bad = -1
    cdef int st
    with nogil:
        st = apply_c(replicas, versions, pid, src, sci, sni, dst, dci, dni, &bad)
    return st, bad


def diff(const int32_t[:, ::1] current, const int32_t[:, ::1] target, intp_t member_count):
    """``(mask, changed, gains, losses, moves)``; members must be < ``member_count``."""
    cdef intp_t P = current.shape[0], R = current.shape[1], nc = 0, moves
    mask = np.empty((P, R), dtype=np.bool_)
    changed = np.empty(P, dtype=np.int64)
    gains = np.zeros((member_count, R), dtype=np.int64)
    losses = np.zeros((member_count, R), dtype=np.int64)
    cdef uint8_t[:, ::1] m = mask.view(np.uint8)
    cdef int64_t[::1] c = changed
    cdef int64_t[:, ::1] g = gains, l = losses
    with nogil:
        moves = diff_c(current, target, m, c, g, l, &nc)
    return mask, changed[:nc].copy(), gains, losses, moves


# ------------------------------------------------------------------ schedule
cdef int unapply_c(int32_t[:, ::1] rows, const int32_t[::1] pid, const int32_t[::1] src,
                   const int32_t[::1] sci, const int32_t[::1] sni, const int32_t[::1] dst,
                   const int32_t[::1] dci, const int32_t[::1] dni) noexcept nogil:
    """Undo the plan, last decision first, turning the final table into the initial one
    (every slot a planner decision writes, other than the source's or the
    destination's old slot, was empty before). Returns 0, or -1 on an out-of-range
    partition or index. Never raises."""
    cdef intp_t k, P = rows.shape[0]
    cdef int R = <int>rows.shape[1]
    cdef int32_t p
    for k in range(pid.shape[0] - 1, -1, -1):
        p = pid[k]
        if p < 0 or p >= P or sci[k] >= R or sni[k] >= R or dci[k] >= R or dni[k] >= R:
            return -1
        if sni[k] >= 0:
            rows[p, sni[k]] = -1
        if dni[k] >= 0:
            rows[p, dni[k]] = -1
        if dci[k] >= 0:
            rows[p, dci[k]] = dst[k]
        if sci[k] >= 0:
            rows[p, sci[k]] = src[k]
    return 0


cdef intp_t schedule_c(int32_t[:, ::1] rows, const int32_t[::1] pid, const int32_t[::1] src,
                       const int32_t[::1] sci, const int32_t[::1] sni,
                       const int32_t[::1] dst, const int32_t[::1] dci,
                       const int32_t[::1] dni, const uint8_t[::1] inst,
                       int32_t limit, int32_t[::1] endpoint, intp_t[::1] qidx,
                       intp_t[::1] runs, int32_t[::1] cnt, int32_t[::1] start) noexcept nogil:
    """Rounds of parallel execution (DESIGN section 6), every migration one time unit.

    ``rows`` = the initial table (modified: it ends as the final table). Returns the
    number of rounds, or -1 on an out-of-range partition, index or member. Never raises.
    """
    cdef intp_t N = pid.shape[0], P = rows.shape[0], M = cnt.shape[0]
    cdef int R = <int>rows.shape[1]
    cdef intp_t k, a, b, nruns = 0, nq = 0, r, w, rounds = 0, h, full
    cdef int32_t p, s, d
    cdef int32_t* row
    # pass 1: per run of equal partition ids, instant decisions at once, the others
    # queued with their source endpoint (source if sci == 0, else the owner then)
    a = 0
    while a < N:
        b = a
        while b < N and pid[b] == pid[a]:
            b += 1
        p = pid[a]
        if p < 0 or p >= P:
            return -1
        row = &rows[p, 0]
        runs[2 * nruns] = nq
        for k in range(a, b):
            if sci[k] >= R or sni[k] >= R or dci[k] >= R or dni[k] >= R or \
                    src[k] >= M or dst[k] >= M:
                return -1
            if inst[k]:
                start[k] = -1
            else:
                endpoint[k] = src[k] if sci[k] == 0 else row[0]
                start[k] = -2
                qidx[nq] = k
                nq += 1
            if sci[k] >= 0:
                row[sci[k]] = -1
            if dci[k] >= 0:
                row[dci[k]] = -1
            if dni[k] >= 0:
                row[dni[k]] = dst[k]
            if sni[k] >= 0:
                row[sni[k]] = src[k]
        runs[2 * nruns + 1] = nq
        if runs[2 * nruns + 1] > runs[2 * nruns]:
            nruns += 1
        a = b
    # pass 2: rounds; each round scans the non-empty queues in order
    while nruns > 0:
        for h in range(M):
            cnt[h] = 0
        full = 0
        w = 0
        for r in range(nruns):
            if full < M:      # once every member is at the limit nothing else can start
                k = qidx[runs[2 * r]]
                d = dst[k]
                s = endpoint[k]
                if (d < 0 or cnt[d] < limit) and (s < 0 or cnt[s] < limit):
                    start[k] = <int32_t>rounds
                    if d >= 0:
                        cnt[d] += 1
                        full += cnt[d] == limit
                    if s >= 0 and s != d:
                        cnt[s] += 1
                        full += cnt[s] == limit
                    runs[2 * r] += 1
            if runs[2 * r] < runs[2 * r + 1]:
                runs[2 * w] = runs[2 * r]
                runs[2 * w + 1] = runs[2 * r + 1]
                w += 1
        nruns = w
        rounds += 1
    return rounds


def schedule(int32_t[:, ::1] rows, const int32_t[::1] pid, const int32_t[::1] src,
             const int32_t[::1] sci, const int32_t[::1] sni, const int32_t[::1] dst,
             const int32_t[::1] dci, const int32_t[::1] dni, const uint8_t[::1] inst,
             int32_t limit, intp_t member_count, bint from_final):
    """Schedule a plan. ``rows``: a private copy of the initial table, or of the final
    table when ``from_final`` (it is undone first). Returns ``(rounds, start)``;
    ``rounds == -1`` reports an out-of-range partition, index or member."""
    cdef intp_t N = pid.shape[0], rounds
    start_arr = np.empty(N, dtype=np.int32)
    endpoint_arr = np.empty(N, dtype=np.int32)
    qidx_arr = np.empty(N, dtype=np.intp)
    runs_arr = np.empty(2 * N + 2, dtype=np.intp)
    cnt_arr = np.zeros(max(member_count, 1), dtype=np.int32)
    cdef int32_t[::1] st = start_arr, ep = endpoint_arr, cn = cnt_arr
    cdef intp_t[::1] qi = qidx_arr, ru = runs_arr
    with nogil:
        if from_final and unapply_c(rows, pid, src, sci, sni, dst, dci, dni) < 0:
            rounds = -1
        else:
            rounds = schedule_c(rows, pid, src, sci, sni, dst, dci, dni, inst, limit,
                                ep, qi, ru, cn, st)
    return rounds, start_arr
