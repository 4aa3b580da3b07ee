"""Table scans of the master's planning step (docs/design.md §11), one pass each.

``repair_dense`` is §7.7(a)'s first half over every slot at once: clear the slots of members
that left (or turned lite), bump each partition's version by the slots it lost, and list the
partitions left without an owner that still hold a replica (their promotions); in the same
pass it writes the table in view positions for the arranger and planner. ``dense`` is that
mapping alone. Both read member ids through a lookup table indexed by id; an id at or past
its end (or -1) is "not a member". ``repair_dense`` first checks, in one vectorised pass,
whether every id is inside the table, and then reads it without a bound test per slot; when
the lookup table has at most 16 entries (member ids below 14) and the CPU has AVX2, one pass
caps each id into it and looks it up in registers instead.
hzfast.protocol.node checks shapes, dtypes and writability; nothing here raises.
"""
import numpy as np
cimport numpy as cnp

from hzfast._types cimport int32_t, uint8_t, uint32_t, int64_t, intp_t

cnp.import_array()


cdef extern from *:
    """
    #include <stdint.h>
    /* The two slot loops of repair_dense in C, so that GCC on x86-64 Linux can also build an
       AVX2 clone of each (chosen once at load time by the CPU): the ids-in-range check
       becomes 256-bit min and max reductions and the mapping a vectorised loop (GCC
       assembles its gathers from scalar loads under generic tuning; still about twice the
       scalar loop's speed here). Other compilers and CPUs run the plain loops. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define HZ_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define HZ_CLONES
    #endif
    /* The mapping when every view position fits one 16-entry lookup table (member ids
       below 14: the usual small cluster): each id, plus one and capped (-1 reads entry 0,
       every id past the table's last the "not a member" entry), picks its entry through
       two 8-lane permutes and a blend, 8 slots an iteration, with no separate range pass.
       An AVX2 function, called only when the CPU has AVX2 (checked at the call). */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #include <immintrin.h>
    static int hz_map16_ok(void) { return __builtin_cpu_supports("avx2"); }
    __attribute__((target("avx2")))
    static int32_t hz_map16(const int32_t* __restrict table, int32_t* __restrict out,
                            const int32_t* __restrict lut16, intptr_t n, uint32_t last) {
        /* lut16: entry 0 for id -1, entry v + 1 for id v, entry ``last`` for any id past
           ``last - 2`` (and below -1); entries after ``last`` are never read */
        const __m256i lo = _mm256_loadu_si256((const __m256i*)lut16);
        const __m256i hi = _mm256_loadu_si256((const __m256i*)(lut16 + 8));
        const __m256i one = _mm256_set1_epi32(1), seven = _mm256_set1_epi32(7);
        const __m256i cap = _mm256_set1_epi32((int32_t)last);
        __m256i acc = _mm256_setzero_si256();
        intptr_t i = 0;
        for (; i + 8 <= n; i += 8) {
            __m256i u = _mm256_add_epi32(_mm256_loadu_si256((const __m256i*)(table + i)), one);
            u = _mm256_min_epu32(u, cap);
            __m256i c = _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(lo, u),
                                           _mm256_permutevar8x32_epi32(hi, u),
                                           _mm256_cmpgt_epi32(u, seven));
            _mm256_storeu_si256((__m256i*)(out + i), c);
            acc = _mm256_or_si256(acc, _mm256_add_epi32(c, one));
        }
        int32_t lanes[8];
        _mm256_storeu_si256((__m256i*)lanes, acc);
        int32_t a = lanes[0] | lanes[1] | lanes[2] | lanes[3] | lanes[4] | lanes[5]
                    | lanes[6] | lanes[7];
        for (; i < n; i++) {
            uint32_t u = (uint32_t)table[i] + 1u;
            int32_t c = lut16[u < last ? u : last];
            out[i] = c;
            a |= c + 1;
        }
        return a;
    }
    #else
    static int hz_map16_ok(void) { return 0; }
    static int32_t hz_map16(const int32_t* table, int32_t* out, const int32_t* lut16,
                            intptr_t n, uint32_t last) { return 0; }   /* never called */
    #endif
    HZ_CLONES static uint32_t hz_ids_outside(const int32_t* __restrict table, intptr_t n,
                                             uint32_t m) {
        /* -1 .. m - 1 are inside: the least and the greatest id (min and max reductions,
           one vector instruction each per 8 slots) */
        int32_t lo = -1, hi = -1;
        for (intptr_t i = 0; i < n; i++) {
            int32_t v = table[i];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        return lo < -1 || (int64_t)hi >= (int64_t)m;
    }
    HZ_CLONES static int32_t hz_map_ids(const int32_t* __restrict table,
                                        int32_t* __restrict out,
                                        const int32_t* __restrict at, intptr_t n) {
        int32_t acc = 0;
        for (intptr_t i = 0; i < n; i++) {
            int32_t c = at[table[i]];
            out[i] = c;
            acc |= c + 1;
        }
        return acc;
    }
    """
    uint32_t hz_ids_outside(const int32_t* table, intp_t n, uint32_t m) noexcept nogil
    int32_t hz_map_ids(const int32_t* table, int32_t* out, const int32_t* at,
                       intp_t n) noexcept nogil
    int hz_map16_ok() noexcept nogil
    int32_t hz_map16(const int32_t* table, int32_t* out, const int32_t* lut16, intp_t n,
                     uint32_t last) noexcept nogil


cdef bint MAP16 = hz_map16_ok() != 0          # this CPU runs hz_map16


def dense(const int32_t[:, ::1] replicas, const int32_t[::1] position):
    """The table with every id replaced by ``position[id]`` (``-1`` where the slot is empty
    or the id is at or past the end of ``position``): a new int32 (P, R) array."""
    cdef intp_t P = replicas.shape[0], R = replicas.shape[1], M = position.shape[0]
    cdef intp_t p, j
    cdef int32_t v
    out_arr = np.empty((P, R), dtype=np.int32)
    cdef int32_t[:, ::1] out = out_arr
    with nogil:
        for p in range(P):
            for j in range(R):
                v = replicas[p, j]
                out[p, j] = position[v] if 0 <= v < M else -1
    return out_arr


def repair_dense(int32_t[:, ::1] replicas, int32_t[::1] versions, const int32_t[::1] code):
    """:func:`dense` and §7.7(a)'s repair in one pass, for a lookup table ``code`` that gives
    each data member's view position and ``-1`` for every other id (lite members, members
    not in the view; ids at or past its end count as not in the view): clear, IN PLACE, the
    slots whose id has no position, add each row's cleared count to ``versions``, list the
    rows left with slot 0 empty while another slot is filled, and write the repaired table
    in view positions. Returns ``(cleared, rows, dense)``."""
    cdef intp_t P = replicas.shape[0], R = replicas.shape[1], M = code.shape[0]
    cdef intp_t i, p, j, cleared = 0, n = 0, slots = P * R
    cdef int32_t c, lost, acc = 0
    cdef uint32_t u
    cdef int32_t* table = &replicas[0, 0] if slots else NULL
    cdef uint32_t outside = 0
    cdef bint small = MAP16 and M + 2 <= 16
    if not small:
        with nogil:                    # every id in [-1, M)? (min/max reductions: vectorised)
            outside = hz_ids_outside(table, slots, <uint32_t>M)
    # one entry per id from -1 to M - 1 and one for every id past it: a data member's
    # position, -1 for an empty slot, -2 for an id without a position (cleared below)
    lut_arr = np.full(max(M + 2, 16), -2, dtype=np.int32)
    lut_arr[0] = -1
    lut_arr[1:M + 1] = np.where(np.asarray(code) >= 0, code, -2)
    cdef const int32_t* at = <const int32_t*>cnp.PyArray_DATA(lut_arr) + 1   # at[-1] == -1
    need_arr = np.empty(P, dtype=np.int64)
    out_arr = np.empty((P, R), dtype=np.int32)
    cdef int32_t* out = <int32_t*>cnp.PyArray_DATA(out_arr)
    cdef int32_t* ver = &versions[0] if P else NULL
    cdef int64_t* need = <int64_t*>cnp.PyArray_DATA(need_arr)
    with nogil:
        if small:                      # one pass, ids capped into the 16-entry table
            acc = hz_map16(table, out, at - 1, slots, <uint32_t>M + 1)
        elif not outside:              # every id in [-1, M): no bound test per slot;
            acc = hz_map_ids(table, out, at, slots)   # negative only if some slot read -2
        else:
            for i in range(slots):     # -1 and every id past M - 1 read at[M] (-2)...
                u = <uint32_t>table[i] + 1u
                c = at[<intp_t>(u if u <= <uint32_t>M else <uint32_t>M + 1) - 1]
                out[i] = c             # ...except -1, which reads at[-1]
                acc |= c + 1
        if acc < 0:                    # a member left (or turned lite): clear its slots
            for p in range(P):
                lost = 0
                for j in range(p * R, p * R + R):
                    if out[j] == -2:
                        out[j] = -1
                        table[j] = -1
                        lost += 1
                ver[p] += lost
                cleared += lost
        for p in range(P):             # no owner, yet a replica further on
            if out[p * R] < 0:
                for j in range(p * R + 1, p * R + R):
                    if out[j] >= 0:
                        need[n] = p
                        n += 1
                        break
    return cleared, need_arr[:n].copy(), out_arr
