"""Hash kernels: Hazelcast-exact MurmurHash3 (x86_32 and the x64_64 variant), the
partition-table stamp and bulk key -> partition hashing.

Every ``def`` here trusts its caller (``hzfast.hashing`` / ``hzfast._keys`` validate
dtypes, shapes and ranges); the only checks left are the cheap ones that keep memory
safe (output length, offsets inside the data buffer), reported as a status so the
public layer can raise a clear error.
"""
import numpy as np

cimport numpy as cnp
from libc.string cimport memcpy
from hzfast._types cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, intp_t, offset_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static inline uint32_t hz_load32le(const uint8_t* p) {
        uint32_t v; memcpy(&v, p, 4);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap32(v);
    #endif
        return v;
    }
    static inline uint64_t hz_load64le(const uint8_t* p) {
        uint64_t v; memcpy(&v, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
    #endif
        return v;
    }
    static inline uint32_t hz_load32be(const uint8_t* p) {
        return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
    }
    /* Little-endian load of the big-endian bytes of x == byte swap on this side. */
    static inline uint32_t hz_bswap32(uint32_t x) { return __builtin_bswap32(x); }
    /* Two native int32 at p, as the little-endian uint64 of their big-endian bytes:
       bswap32(v0) | bswap32(v1) << 32 == rotl64(bswap64(load64(p)), 32) (3 instructions). */
    static inline uint64_t hz_pair_be(const uint8_t* p) {
        uint64_t v; memcpy(&v, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        return v;
    #else
        v = __builtin_bswap64(v);
        return (v << 32) | (v >> 32);
    #endif
    }
    /* A code point of a caller-owned numpy 'U' array, loaded exactly once. */
    static inline uint32_t hz_load_cp(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static inline uint32_t hz_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
    static inline uint64_t hz_rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
    /* Lemire's fastmod: a % d for 32-bit a and d >= 1, with m = UINT64_MAX / d + 1. */
    static inline uint64_t hz_fastmod_m(uint32_t d) { return UINT64_C(0xFFFFFFFFFFFFFFFF) / d + 1; }
    static inline uint32_t hz_fastmod(uint32_t a, uint64_t m, uint32_t d) {
        uint64_t low = m * a;
        return (uint32_t)(((__uint128_t)low * d) >> 64);
    }

    /* ---- AVX2 bulk path for Integer/Long keys (x86-64 with GCC/Clang; runtime check).
       8 keys per step: murmur3_x86_32 over the 4/8 big-endian payload bytes in 32-bit
       lanes, then hashToIndex with a float64 quotient (exact after one correction: for
       a < 2**31 the product a * (1/d) is off by far less than 1/d, so the truncated
       quotient is floor(a/d) or, when d divides a, one less). Returns how many keys it
       did (a multiple of 8; 0 without AVX2); the caller finishes the rest. */
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    #include <immintrin.h>
    #define HZ_HAVE_AVX2_PATH 1
    static int hz_avx2_state = -1;
    static int hz_has_avx2(void) {
        if (hz_avx2_state < 0) {
            __builtin_cpu_init();
            hz_avx2_state = __builtin_cpu_supports("avx2") ? 1 : 0;
        }
        return hz_avx2_state;
    }
    __attribute__((target("avx2")))
    static inline __m256i hz_v_rotl(__m256i x, int r) {
        return _mm256_or_si256(_mm256_slli_epi32(x, r), _mm256_srli_epi32(x, 32 - r));
    }
    __attribute__((target("avx2")))
    static inline __m256i hz_v_mix_h(__m256i h, __m256i k) {
        k = _mm256_mullo_epi32(k, _mm256_set1_epi32((int)0xcc9e2d51u));
        k = hz_v_rotl(k, 15);
        k = _mm256_mullo_epi32(k, _mm256_set1_epi32(0x1b873593));
        h = _mm256_xor_si256(h, k);
        h = hz_v_rotl(h, 13);
        return _mm256_add_epi32(_mm256_mullo_epi32(h, _mm256_set1_epi32(5)),
                                _mm256_set1_epi32((int)0xe6546b64u));
    }
    __attribute__((target("avx2")))
    static inline __m256i hz_v_fmix(__m256i h) {
        h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
        h = _mm256_mullo_epi32(h, _mm256_set1_epi32((int)0x85ebca6bu));
        h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
        h = _mm256_mullo_epi32(h, _mm256_set1_epi32((int)0xc2b2ae35u));
        return _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    }
    __attribute__((target("avx2")))
    static inline __m256i hz_v_index(__m256i h, __m256d inv, __m256i d) {
        __m256i int_min = _mm256_set1_epi32((int)0x80000000u);
        __m256i is_min = _mm256_cmpeq_epi32(h, int_min);
        __m256i a = _mm256_abs_epi32(h);
        __m128i qlo = _mm256_cvttpd_epi32(_mm256_mul_pd(
            _mm256_cvtepi32_pd(_mm256_castsi256_si128(a)), inv));
        __m128i qhi = _mm256_cvttpd_epi32(_mm256_mul_pd(
            _mm256_cvtepi32_pd(_mm256_extracti128_si256(a, 1)), inv));
        __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(qlo), qhi, 1);
        __m256i r = _mm256_sub_epi32(a, _mm256_mullo_epi32(q, d));
        /* r in [0, 2d): subtract d once where r >= d; add d where r < 0 (defensive) */
        r = _mm256_sub_epi32(r, _mm256_and_si256(
            _mm256_cmpgt_epi32(r, _mm256_sub_epi32(d, _mm256_set1_epi32(1))), d));
        r = _mm256_add_epi32(r, _mm256_and_si256(
            _mm256_cmpgt_epi32(_mm256_setzero_si256(), r), d));
        return _mm256_andnot_si256(is_min, r);
    }
    __attribute__((target("avx2")))
    static int64_t hz_bulk_avx2(const void* keys, int is_long, int64_t n, int32_t* out,
                                int32_t partition_count) {
        const __m256i bswap = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8,
                                               15, 14, 13, 12, 3, 2, 1, 0, 7, 6, 5, 4,
                                               11, 10, 9, 8, 15, 14, 13, 12);
        const __m256i split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
        const __m256i seed = _mm256_set1_epi32(0x01000193);
        const __m256i d = _mm256_set1_epi32(partition_count > 0 ? partition_count : 1);
        const __m256d inv = _mm256_set1_pd(1.0 / (double)(partition_count > 0 ? partition_count : 1));
        int64_t i, end = n & ~(int64_t)7;
        __m256i h, k0, k1, a, b;
        for (i = 0; i < end; i += 8) {
            if (is_long) {
                a = _mm256_permutevar8x32_epi32(
                    _mm256_loadu_si256((const __m256i*)((const int64_t*)keys + i)), split);
                b = _mm256_permutevar8x32_epi32(
                    _mm256_loadu_si256((const __m256i*)((const int64_t*)keys + i + 4)), split);
                k0 = _mm256_permute2x128_si256(a, b, 0x31);   /* high words: first 4 bytes */
                k1 = _mm256_permute2x128_si256(a, b, 0x20);   /* low words: last 4 bytes */
                h = hz_v_mix_h(seed, _mm256_shuffle_epi8(k0, bswap));
                h = hz_v_mix_h(h, _mm256_shuffle_epi8(k1, bswap));
                h = _mm256_xor_si256(h, _mm256_set1_epi32(8));
            } else {
                k0 = _mm256_loadu_si256((const __m256i*)((const int32_t*)keys + i));
                h = hz_v_mix_h(seed, _mm256_shuffle_epi8(k0, bswap));
                h = _mm256_xor_si256(h, _mm256_set1_epi32(4));
            }
            h = hz_v_fmix(h);
            if (partition_count > 0)
                h = hz_v_index(h, inv, d);
            _mm256_storeu_si256((__m256i*)(out + i), h);
        }
        return end;
    }
    /* Strings, 8 per step, while every string of the group is <= 16 bytes with 16
       readable bytes from its start (and offsets are sane): the 4 blocks are loaded
       (16 bytes per string, transposed) and mixed under a per-lane mask, the block at len >> 2, masked to its len & 3
       valid bytes, is the tail (mix_k(0) == 0). Returns how many strings it did, a
       multiple of 8, stopping at the first group that does not qualify. */
    __attribute__((target("avx2")))
    static int64_t hz_strings_avx2(const void* offsets, int off64, int64_t n,
                                   const uint8_t* data, int64_t data_len, int32_t* out,
                                   int32_t partition_count) {
        const __m256i bswap = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8,
                                               15, 14, 13, 12, 3, 2, 1, 0, 7, 6, 5, 4,
                                               11, 10, 9, 8, 15, 14, 13, 12);
        const __m256i seed = _mm256_set1_epi32(0x01000193);
        const __m256i d = _mm256_set1_epi32(partition_count > 0 ? partition_count : 1);
        const __m256d inv = _mm256_set1_pd(1.0 / (double)(partition_count > 0 ? partition_count : 1));
        const __m256i zero = _mm256_setzero_si256();
        const __m256i ones = _mm256_set1_epi32(1);
        const __m256i c1 = _mm256_set1_epi32((int)0xcc9e2d51u);
        const __m256i c2 = _mm256_set1_epi32(0x1b873593);
        int32_t st[8], ln[8];
        int64_t g, k, s, e, limit = data_len - 16;
        if (limit > 2147483647 - 16) limit = 2147483647 - 16;
        for (g = 0; g + 8 <= n; g += 8) {
            for (k = 0; k < 8; k++) {
                /* each offset loaded once (the caller may be changing them) */
                if (off64) {
                    s = __atomic_load_n((const int64_t*)offsets + g + k, __ATOMIC_RELAXED);
                    e = __atomic_load_n((const int64_t*)offsets + g + k + 1, __ATOMIC_RELAXED);
                } else {
                    s = __atomic_load_n((const int32_t*)offsets + g + k, __ATOMIC_RELAXED);
                    e = __atomic_load_n((const int32_t*)offsets + g + k + 1, __ATOMIC_RELAXED);
                }
                if (s < 0 || e < s || e - s > 16 || s > limit) return g;
                st[k] = (int32_t)s;
                ln[k] = (int32_t)(e - s);
            }
            __m256i vl = _mm256_loadu_si256((const __m256i*)ln);
            __m256i nb = _mm256_srli_epi32(vl, 2);
            __m256i tail_mask = _mm256_sub_epi32(
                _mm256_sllv_epi32(ones, _mm256_slli_epi32(
                    _mm256_and_si256(vl, _mm256_set1_epi32(3)), 3)), ones);
            __m256i h = hz_v_mix_h(seed, _mm256_shuffle_epi8(vl, bswap));
            __m256i tail = zero;
            /* 16 bytes per string; lane k of block j = bytes [4j, 4j+4) of string k:
               strings k and k+4 share a 256-bit row, then a 4x4 dword transpose. */
            __m256i r0 = _mm256_inserti128_si256(_mm256_castsi128_si256(
                _mm_loadu_si128((const __m128i*)(data + st[0]))),
                _mm_loadu_si128((const __m128i*)(data + st[4])), 1);
            __m256i r1 = _mm256_inserti128_si256(_mm256_castsi128_si256(
                _mm_loadu_si128((const __m128i*)(data + st[1]))),
                _mm_loadu_si128((const __m128i*)(data + st[5])), 1);
            __m256i r2 = _mm256_inserti128_si256(_mm256_castsi128_si256(
                _mm_loadu_si128((const __m128i*)(data + st[2]))),
                _mm_loadu_si128((const __m128i*)(data + st[6])), 1);
            __m256i r3 = _mm256_inserti128_si256(_mm256_castsi128_si256(
                _mm_loadu_si128((const __m128i*)(data + st[3]))),
                _mm_loadu_si128((const __m128i*)(data + st[7])), 1);
            __m256i t0 = _mm256_unpacklo_epi32(r0, r1), t1 = _mm256_unpackhi_epi32(r0, r1);
            __m256i t2 = _mm256_unpacklo_epi32(r2, r3), t3 = _mm256_unpackhi_epi32(r2, r3);
            __m256i blocks[4];
            blocks[0] = _mm256_unpacklo_epi64(t0, t2);
            blocks[1] = _mm256_unpackhi_epi64(t0, t2);
            blocks[2] = _mm256_unpacklo_epi64(t1, t3);
            blocks[3] = _mm256_unpackhi_epi64(t1, t3);
            for (k = 0; k < 4; k++) {
                __m256i j = _mm256_set1_epi32((int)k);
                __m256i blk = blocks[k];
                __m256i keep = _mm256_cmpgt_epi32(nb, j);
                h = _mm256_blendv_epi8(h, hz_v_mix_h(h, blk), keep);
                tail = _mm256_or_si256(tail, _mm256_and_si256(
                    _mm256_and_si256(blk, tail_mask), _mm256_cmpeq_epi32(nb, j)));
            }
            tail = _mm256_mullo_epi32(tail, c1);
            tail = hz_v_rotl(tail, 15);
            tail = _mm256_mullo_epi32(tail, c2);
            h = _mm256_xor_si256(h, tail);
            h = _mm256_xor_si256(h, _mm256_add_epi32(vl, _mm256_set1_epi32(4)));
            h = hz_v_fmix(h);
            if (partition_count > 0)
                h = hz_v_index(h, inv, d);
            _mm256_storeu_si256((__m256i*)(out + g), h);
        }
        return g;
    }
    #else
    static int hz_has_avx2(void) { return 0; }
    static int64_t hz_bulk_avx2(const void* keys, int is_long, int64_t n, int32_t* out,
                                int32_t partition_count) { return 0; }
    static int64_t hz_strings_avx2(const void* offsets, int off64, int64_t n,
                                   const uint8_t* data, int64_t data_len, int32_t* out,
                                   int32_t partition_count) { return 0; }
    #endif
    """
    int hz_has_avx2() noexcept nogil
    int64_t hz_bulk_avx2(const void* keys, int is_long, int64_t n, int32_t* out,
                         int32_t partition_count) noexcept nogil
    int64_t hz_strings_avx2(const void* offsets, int off64, int64_t n, const uint8_t* data,
                            int64_t data_len, int32_t* out, int32_t partition_count) noexcept nogil
    uint32_t hz_load32le(const uint8_t* p) noexcept nogil
    uint64_t hz_load64le(const uint8_t* p) noexcept nogil
    uint32_t hz_load32be(const uint8_t* p) noexcept nogil
    uint32_t hz_bswap32(uint32_t x) noexcept nogil
    uint64_t hz_pair_be(const uint8_t* p) noexcept nogil
    uint32_t hz_load_cp(const uint32_t* p) noexcept nogil
    uint32_t hz_rotl32(uint32_t x, int r) noexcept nogil
    uint64_t hz_rotl64(uint64_t x, int r) noexcept nogil
    uint64_t hz_fastmod_m(uint32_t d) noexcept nogil
    uint32_t hz_fastmod(uint32_t a, uint64_t m, uint32_t d) noexcept nogil

cdef extern from "Python.h":
    bint PyUnicode_Check(object o)
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    void* PyUnicode_DATA(object o)
    const char* PyUnicode_AsUTF8AndSize(object o, Py_ssize_t* size) except NULL

cdef enum:
    HZ_SEED = 0x01000193          # Hazelcast's murmur seed
    INT32_MIN = -2147483647 - 1

# Status of the bulk kernels: -1 = fine, else the index of the first bad item.
OK = -1


# ----------------------------------------------------------------------------- x86_32
cdef inline uint32_t _mix_k(uint32_t k) noexcept nogil:
    k *= 0xcc9e2d51u
    k = hz_rotl32(k, 15)
    return k * 0x1b873593u


cdef inline uint32_t _mix_h(uint32_t h, uint32_t k) noexcept nogil:
    h ^= _mix_k(k)
    h = hz_rotl32(h, 13)
    return h * 5u + 0xe6546b64u


cdef inline uint32_t _fmix32(uint32_t h) noexcept nogil:
    h ^= h >> 16
    h *= 0x85ebca6bu
    h ^= h >> 13
    h *= 0xc2b2ae35u
    h ^= h >> 16
    return h


cdef inline uint32_t _body32(uint32_t h, const uint8_t* p, intp_t n) noexcept nogil:
    """Blocks and tail of x86_32 over p[0:n], continuing from state h (no finalisation)."""
    cdef intp_t i, nblocks = n >> 2
    cdef uint32_t k = 0
    cdef const uint8_t* tail = p + (nblocks << 2)
    for i in range(nblocks):
        h = _mix_h(h, hz_load32le(p + (i << 2)))
    n &= 3
    if n:
        if n == 3:
            k ^= (<uint32_t>tail[2]) << 16
        if n >= 2:
            k ^= (<uint32_t>tail[1]) << 8
        k ^= tail[0]
        h ^= _mix_k(k)
    return h


cdef int32_t murmur3_32_c(const uint8_t* p, intp_t n, uint32_t seed) noexcept nogil:
    cdef uint32_t h = _body32(seed, p, n)
    return <int32_t>_fmix32(h ^ <uint32_t>n)


cdef inline int32_t _hash_int32(int32_t v) noexcept nogil:
    # Payload = 4 big-endian bytes: one block, read little-endian = byte swap.
    cdef uint32_t h = _mix_h(HZ_SEED, hz_bswap32(<uint32_t>v))
    return <int32_t>_fmix32(h ^ 4u)


cdef inline int32_t _hash_int64(int64_t v) noexcept nogil:
    # Payload = 8 big-endian bytes: high word first, each read little-endian.
    cdef uint64_t u = <uint64_t>v
    cdef uint32_t h = _mix_h(HZ_SEED, hz_bswap32(<uint32_t>(u >> 32)))
    h = _mix_h(h, hz_bswap32(<uint32_t>u))
    return <int32_t>_fmix32(h ^ 8u)


cdef inline int32_t _hash_string(const uint8_t* p, intp_t n) noexcept nogil:
    # Payload = int32 BE UTF-8 length (exactly one block), then the UTF-8 bytes.
    cdef uint32_t h = _mix_h(HZ_SEED, hz_bswap32(<uint32_t>n))
    h = _body32(h, p, n)
    return <int32_t>_fmix32(h ^ <uint32_t>(n + 4))


cdef inline int32_t _hash_string_wide(const uint8_t* p, intp_t n) noexcept nogil:
    # As _hash_string when the 4 bytes at p + (n & ~3) are readable (the caller checks):
    # the tail is one masked 4-byte load instead of a branch on n & 3 (random string
    # lengths made that branch mispredict; mix_k(0) == 0, so an empty tail is a no-op).
    cdef uint32_t h = _mix_h(HZ_SEED, hz_bswap32(<uint32_t>n))
    cdef intp_t i, nblocks = n >> 2
    cdef uint32_t tail_mask = (<uint32_t>1 << (8 * (n & 3))) - 1
    for i in range(nblocks):
        h = _mix_h(h, hz_load32le(p + (i << 2)))
    h ^= _mix_k(hz_load32le(p + (nblocks << 2)) & tail_mask)
    return <int32_t>_fmix32(h ^ <uint32_t>(n + 4))


cdef inline int32_t _hash_data(const uint8_t* p, intp_t n) noexcept nogil:
    # Serialized Data (n >= 8): the header's partition hash when non-zero, else the
    # murmur of everything after the 8-byte header.
    cdef int32_t ph = <int32_t>hz_load32be(p)
    if ph != 0:
        return ph
    return murmur3_32_c(p + 8, n - 8, HZ_SEED)


cdef int32_t hash_to_index_c(int32_t h, int32_t partition_count) noexcept nogil:
    if h == INT32_MIN:
        return 0
    if h < 0:
        h = -h
    return h % partition_count


cdef inline int32_t _to_index(int32_t h, uint64_t m, uint32_t d) noexcept nogil:
    # hashToIndex with a precomputed fastmod multiplier (no division in the loop).
    cdef uint32_t a
    if h == INT32_MIN:
        return 0
    a = <uint32_t>(-h) if h < 0 else <uint32_t>h
    return <int32_t>hz_fastmod(a, m, d)


# ----------------------------------------------------------------------------- x64_64 variant
cdef inline uint64_t _fmix64(uint64_t k) noexcept nogil:
    k ^= k >> 33
    k *= 0xff51afd7ed558ccdULL
    k ^= k >> 33
    k *= 0xc4ceb9fe1a85ec53ULL
    k ^= k >> 33
    return k


cdef struct X64State:
    uint64_t h1
    uint64_t h2
    uint64_t c1
    uint64_t c2


cdef inline void _x64_init(X64State* s, int32_t seed) noexcept nogil:
    cdef uint64_t sd = <uint64_t>(<int64_t>seed)  # sign-extended, as Java does
    s.h1 = 0x9368e53c2f6af274ULL ^ sd
    s.h2 = 0x586dcd208f7cd3fdULL ^ sd
    s.c1 = 0x87c37b91114253d5ULL
    s.c2 = 0x4cf5ad432745937fULL


cdef inline void _x64_bmix(X64State* s, uint64_t k1, uint64_t k2) noexcept nogil:
    k1 *= s.c1
    k1 = hz_rotl64(k1, 23)
    k1 *= s.c2
    s.h1 ^= k1
    s.h1 += s.h2
    s.h2 = hz_rotl64(s.h2, 41)
    k2 *= s.c2
    k2 = hz_rotl64(k2, 23)
    k2 *= s.c1
    s.h2 ^= k2
    s.h2 += s.h1
    s.h1 = s.h1 * 3 + 0x52dce729ULL
    s.h2 = s.h2 * 3 + 0x38495ab5ULL


cdef inline void _x64_block(X64State* s, uint64_t k1, uint64_t k2) noexcept nogil:
    _x64_bmix(s, k1, k2)
    s.c1 = s.c1 * 5 + 0x7b7d159cULL
    s.c2 = s.c2 * 5 + 0x6bce6396ULL


cdef inline void _x64_tail(X64State* s, const uint8_t* tail, intp_t rem) noexcept nogil:
    # Each tail byte is sign-extended (Java's (long) byte) before shifting.
    cdef uint64_t k1 = 0, k2 = 0
    cdef intp_t t
    if rem == 0:
        return
    for t in range(rem):
        if t < 8:
            k1 ^= (<uint64_t>(<int64_t>(<int8_t>tail[t]))) << (8 * t)
        else:
            k2 ^= (<uint64_t>(<int64_t>(<int8_t>tail[t]))) << (8 * (t - 8))
    _x64_bmix(s, k1, k2)


cdef inline int64_t _x64_final(X64State* s, intp_t n) noexcept nogil:
    s.h2 ^= <uint64_t>n
    s.h1 += s.h2
    s.h2 += s.h1
    s.h1 = _fmix64(s.h1)
    s.h2 = _fmix64(s.h2)
    return <int64_t>(s.h1 + s.h2)


cdef int64_t murmur3_x64_64_c(const uint8_t* p, intp_t n, int32_t seed) noexcept nogil:
    cdef X64State s
    cdef intp_t i, nblocks = n >> 4
    _x64_init(&s, seed)
    for i in range(nblocks):
        _x64_block(&s, hz_load64le(p + (i << 4)), hz_load64le(p + (i << 4) + 8))
    _x64_tail(&s, p + (nblocks << 4), n & 15)
    return _x64_final(&s, n)


cdef int64_t stamp_c(const int32_t* v, intp_t count) noexcept nogil:
    # The buffer is the big-endian int32 versions; a 16-byte block holds 4 of them and
    # its little-endian uint64 words are the byte-swapped versions side by side.
    cdef X64State s
    cdef intp_t i, nblocks = count >> 2, rem = count & 3
    cdef uint8_t tail[16]
    cdef uint32_t w
    _x64_init(&s, <int32_t>HZ_SEED)
    for i in range(nblocks):
        _x64_block(&s, hz_pair_be(<const uint8_t*>(v + 4 * i)),
                   hz_pair_be(<const uint8_t*>(v + 4 * i + 2)))
    for i in range(rem):
        w = <uint32_t>v[4 * nblocks + i]
        tail[4 * i] = <uint8_t>(w >> 24)
        tail[4 * i + 1] = <uint8_t>(w >> 16)
        tail[4 * i + 2] = <uint8_t>(w >> 8)
        tail[4 * i + 3] = <uint8_t>w
    _x64_tail(&s, tail, 4 * rem)
    return _x64_final(&s, 4 * count)


# ----------------------------------------------------------------------------- bulk cores
cdef bint _use_simd = True


def set_simd(bint enabled):
    """Turn the AVX2 path for Integer/Long keys on or off (tests compare both); returns
    whether it is available on this CPU."""
    global _use_simd
    _use_simd = enabled
    return hz_has_avx2() != 0


cdef void _bulk_int32(const int32_t* keys, intp_t n, int32_t* out,
                      int32_t partition_count) noexcept nogil:
    cdef intp_t i
    cdef uint32_t d = <uint32_t>partition_count
    cdef uint64_t m
    if _use_simd and hz_has_avx2():
        i = hz_bulk_avx2(keys, 0, n, out, partition_count)
        keys += i
        out += i
        n -= i
    if partition_count <= 0:  # raw hashes
        for i in range(n):
            out[i] = _hash_int32(keys[i])
    else:
        m = hz_fastmod_m(d)
        for i in range(n):
            out[i] = _to_index(_hash_int32(keys[i]), m, d)


cdef void _bulk_int64(const int64_t* keys, intp_t n, int32_t* out,
                      int32_t partition_count) noexcept nogil:
    cdef intp_t i
    cdef uint32_t d = <uint32_t>partition_count
    cdef uint64_t m
    if _use_simd and hz_has_avx2():
        i = hz_bulk_avx2(keys, 1, n, out, partition_count)
        keys += i
        out += i
        n -= i
    if partition_count <= 0:
        for i in range(n):
            out[i] = _hash_int64(keys[i])
    else:
        m = hz_fastmod_m(d)
        for i in range(n):
            out[i] = _to_index(_hash_int64(keys[i]), m, d)


cdef intp_t _bulk_bytes(const offset_t* offsets, intp_t n, const uint8_t* data,
                        intp_t data_len, int32_t* out, int32_t partition_count,
                        bint is_data) noexcept nogil:
    """Strings (is_data=False) or serialized Data. Returns -1, or the index of the first
    item whose offsets fall outside data[0:data_len] (or, for Data, is shorter than 8)."""
    cdef intp_t i, bad
    cdef uint32_t d = <uint32_t>partition_count
    cdef uint64_t m = hz_fastmod_m(d) if partition_count > 0 else 0
    cdef intp_t min_len = 8 if is_data else 0
    cdef intp_t stop
    i = 0
    while i < n:
        # SIMD over runs of short strings; the scalar loop takes the next 8 (or the rest)
        if not is_data and _use_simd and hz_has_avx2():
            i += hz_strings_avx2(offsets + i, offset_t is int64_t, n - i, data, data_len,
                                 out + i, partition_count)
        stop = i + 8 if i + 8 < n else n
        bad = _scalar_bytes(offsets, i, stop, data, data_len, out, partition_count,
                            is_data, m, d, min_len)
        if bad != -1:
            return bad
        i = stop
    return -1


cdef inline intp_t _scalar_bytes(const offset_t* offsets, intp_t first, intp_t stop,
                                 const uint8_t* data, intp_t data_len, int32_t* out,
                                 int32_t partition_count, bint is_data, uint64_t m,
                                 uint32_t d, intp_t min_len) noexcept nogil:
    cdef intp_t i, start, end
    cdef int32_t h
    for i in range(first, stop):
        if not item_span(offsets, i, data_len, &start, &end) or end - start < min_len:
            return i
        if is_data:
            h = _hash_data(data + start, end - start)
        elif end - ((end - start) & 3) + 4 <= data_len:
            h = _hash_string_wide(data + start, end - start)
        else:
            h = _hash_string(data + start, end - start)
        out[i] = _to_index(h, m, d) if partition_count > 0 else h
    return -1


# ----------------------------------------------------------------------------- def entries
# Below this many bytes a GIL round trip costs more than the hash itself.
cdef enum:
    NOGIL_MIN_BYTES = 32768


def murmur3_x86_32(const uint8_t[::1] data, uint32_t seed):
    """Standard MurmurHash3_x86_32 of ``data``; signed int32."""
    cdef int32_t h
    cdef intp_t n = data.shape[0]
    cdef const uint8_t* p = &data[0] if n else NULL
    if n < NOGIL_MIN_BYTES:
        return murmur3_32_c(p, n, seed)
    with nogil:
        h = murmur3_32_c(p, n, seed)
    return h


def murmur3_x64_64(const uint8_t[::1] data, int32_t seed):
    """Hazelcast's MurmurHash3_x64_64 variant of ``data``; signed int64."""
    cdef int64_t h
    cdef intp_t n = data.shape[0]
    cdef const uint8_t* p = &data[0] if n else NULL
    if n < NOGIL_MIN_BYTES:
        return murmur3_x64_64_c(p, n, seed)
    with nogil:
        h = murmur3_x64_64_c(p, n, seed)
    return h


def stamp(const int32_t[::1] versions):
    """Partition-table stamp of ``versions`` (int32, C-contiguous); signed int64."""
    cdef int64_t h
    cdef intp_t n = versions.shape[0]
    with nogil:
        h = stamp_c(&versions[0] if n else NULL, n)
    return h


cnp.import_array()


def stamp_fast(object versions):
    """Stamp of an int32, 1-D, C-contiguous ndarray without a memoryview round trip;
    ``None`` for anything else (the caller then validates and calls :func:`stamp`).

    For the 271-partition case the memoryview acquisition would cost more than the hash.
    """
    cdef cnp.ndarray arr
    cdef int64_t h
    cdef intp_t n
    cdef const int32_t* p
    if type(versions) is not cnp.ndarray:
        return None
    arr = <cnp.ndarray>versions
    # NPY_INT32 covers '>i4' too: a byte-swapped array goes the validated (by value) way
    if (cnp.PyArray_TYPE(arr) != cnp.NPY_INT32 or cnp.PyArray_NDIM(arr) != 1
            or not cnp.PyArray_IS_C_CONTIGUOUS(arr) or not cnp.PyArray_ISNOTSWAPPED(arr)
            or not cnp.PyArray_ISALIGNED(arr)):
        return None
    n = cnp.PyArray_DIM(arr, 0)
    p = <const int32_t*>cnp.PyArray_DATA(arr)
    if n < 8192:  # a few microseconds at most: not worth a GIL round trip
        return stamp_c(p, n)
    with nogil:
        h = stamp_c(p, n)
    return h


def hash_to_index(int32_t h, int32_t partition_count):
    """Hazelcast hashToIndex; ``partition_count`` must be > 0."""
    if partition_count <= 0:  # a division by zero would kill the interpreter
        raise ValueError(f"partition_count must be > 0, got {partition_count}")
    return hash_to_index_c(h, partition_count)


# ----------------------------------------------------------------------------- scalar keys
# One key at a time without building its serialized bytes (partition_id, Table.locate).
def str_hash(str key):
    """Partition hash of a String key. Raises UnicodeEncodeError for a lone surrogate."""
    cdef Py_ssize_t n
    cdef const char* p
    if PyUnicode_IS_ASCII(key):
        n = PyUnicode_GET_LENGTH(key)
        p = <const char*>PyUnicode_DATA(key)
    else:
        p = PyUnicode_AsUTF8AndSize(key, &n)
    return _hash_string(<const uint8_t*>p, n)


def int32_hash(int32_t key):
    """Partition hash of an Integer key (OverflowError outside int32)."""
    return _hash_int32(key)


def int64_hash(int64_t key):
    """Partition hash of a Long key (OverflowError outside int64)."""
    return _hash_int64(key)


def bytes_data_hash(bytes data):
    """Partition hash of one serialized Data blob (``len(data) >= 8``)."""
    cdef Py_ssize_t n = len(data)
    if n < 8:
        raise ValueError(f"serialized data needs at least 8 bytes, got {n}")
    return _hash_data(<const uint8_t*><const char*>data, n)


def bytes_murmur3_x86_32(bytes data, uint32_t seed):
    """As :func:`murmur3_x86_32` for a ``bytes`` object (no memoryview round trip)."""
    return murmur3_32_c(<const uint8_t*><const char*>data, len(data), seed)


def bulk_int32(const int32_t[::1] keys, int32_t[::1] out, int32_t partition_count):
    """Integer keys -> hashes (``partition_count <= 0``) or partition ids into ``out``."""
    if out.shape[0] != keys.shape[0]:
        raise ValueError("out must have the length of keys")
    if keys.shape[0] == 0:
        return
    with nogil:
        _bulk_int32(&keys[0], keys.shape[0], &out[0], partition_count)


def bulk_int64(const int64_t[::1] keys, int32_t[::1] out, int32_t partition_count):
    """Long keys -> hashes (``partition_count <= 0``) or partition ids into ``out``."""
    if out.shape[0] != keys.shape[0]:
        raise ValueError("out must have the length of keys")
    if keys.shape[0] == 0:
        return
    with nogil:
        _bulk_int64(&keys[0], keys.shape[0], &out[0], partition_count)


def bulk_bytes(const offset_t[::1] offsets, const uint8_t[::1] data, int32_t[::1] out,
               int32_t partition_count, bint is_data):
    """String (UTF-8) or serialized-Data keys given as Arrow-style ``offsets`` (length
    n + 1, absolute into ``data``) -> hashes or partition ids into ``out``.

    Returns -1, or the index of the first item whose offsets are out of bounds (or, for
    Data, shorter than 8 bytes); ``out`` is then only partly written.
    """
    cdef intp_t n = offsets.shape[0] - 1
    cdef intp_t bad
    cdef const uint8_t* dp = &data[0] if data.shape[0] else NULL
    if n < 0 or out.shape[0] != n:
        raise ValueError("offsets must have length len(out) + 1")
    if n == 0:
        return -1
    with nogil:
        bad = _bulk_bytes(&offsets[0], n, dp, data.shape[0], &out[0], partition_count, is_data)
    return bad


# ----------------------------------------------------------------------------- list[str] encoder
# Statuses of the two encoders below.
ENC_OK = 0
ENC_NOT_STR = 1       # an item is not a str
ENC_SURROGATE = 2     # an item cannot be encoded as UTF-8 (lone surrogate)
ENC_CHANGED = 3       # the input changed while it was encoded (another thread wrote to it)


def encode_str_list(list seq):
    """UTF-8 encode a list of str into one buffer, without temporary bytes objects.

    Returns ``(status, position, offsets, data)``: ``ENC_OK`` (offsets int64 of length
    n + 1, data uint8), ``ENC_NOT_STR`` (``seq[position]`` is not a str) or
    ``ENC_SURROGATE`` (it cannot be encoded as UTF-8). ASCII strings are copied straight
    from the str object; others go through CPython's cached UTF-8 form.

    Another thread can change the list between the sizing and the copying pass (any
    allocation may run a finalizer that lets it in), so the copying pass trusts nothing
    it re-reads: the list must still be as long, and every item still a str whose UTF-8
    size is exactly its slot, before a byte is copied; otherwise ``ENC_CHANGED`` (with
    the position) and nothing was written out of bounds. No snapshot of the list is made
    (it cost a third of the time of the whole call).
    """
    cdef Py_ssize_t n = len(seq), i, size
    cdef int64_t total = 0
    cdef object item
    cdef const char* src
    offsets_arr = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] offsets = offsets_arr
    offsets[0] = 0
    for i in range(n):
        if i >= len(seq):
            return ENC_CHANGED, i, None, None
        item = seq[i]
        if not PyUnicode_Check(item):
            return ENC_NOT_STR, i, None, None
        if PyUnicode_IS_ASCII(item):
            size = PyUnicode_GET_LENGTH(item)
        else:
            try:
                PyUnicode_AsUTF8AndSize(item, &size)
            except UnicodeEncodeError:
                return ENC_SURROGATE, i, None, None
        total += size
        offsets[i + 1] = total
    data_arr = np.empty(total, dtype=np.uint8)
    cdef uint8_t[::1] data = data_arr
    cdef uint8_t* dst = &data[0] if total else NULL
    for i in range(n):
        if i >= len(seq):                    # the list shrank
            return ENC_CHANGED, i, None, None
        item = seq[i]                        # a reference: the item lives while copied
        if not PyUnicode_Check(item):
            return ENC_CHANGED, i, None, None
        if PyUnicode_IS_ASCII(item):
            src = <const char*>PyUnicode_DATA(item)
            size = PyUnicode_GET_LENGTH(item)
        else:
            try:
                src = PyUnicode_AsUTF8AndSize(item, &size)
            except UnicodeEncodeError:
                return ENC_CHANGED, i, None, None
        if size != offsets[i + 1] - offsets[i]:   # another item now: it must fit its slot
            return ENC_CHANGED, i, None, None
        if size:
            memcpy(dst + offsets[i], src, size)
    return ENC_OK, 0, offsets_arr, data_arr


# ----------------------------------------------------------------------------- numpy 'U' encoder
cdef inline int _utf8_len(uint32_t c) noexcept nogil:
    """UTF-8 length of code point c; 0 if it cannot be encoded (surrogate / > U+10FFFF)."""
    if c < 0x80:
        return 1
    if c < 0x800:
        return 2
    if c < 0x10000:
        return 0 if 0xD800 <= c <= 0xDFFF else 3
    return 4 if c <= 0x10FFFF else 0


cdef inline intp_t _utf32_used(const uint32_t* row, intp_t width) noexcept nogil:
    """Length of one string of a 'U' array: trailing NULs stripped, as numpy does.
    (Any answer is safe: it only bounds a loop over the row's ``width`` points.)"""
    cdef intp_t end = width
    while end > 0 and row[end - 1] == 0:
        end -= 1
    return end


cdef intp_t _utf32_sizes(const uint32_t* cp, intp_t n, intp_t width,
                         int64_t* offsets) noexcept nogil:
    """Pass 1: offsets[i+1] = UTF-8 end of string i. Returns -1, or the index of the
    first string holding an unencodable code point."""
    cdef intp_t i, j, end
    cdef int64_t total = 0
    cdef int size
    offsets[0] = 0
    for i in range(n):
        end = _utf32_used(cp + i * width, width)
        for j in range(end):
            size = _utf8_len(cp[i * width + j])    # sizing only: pass 2 rechecks
            if size == 0:
                return i
            total += size
        offsets[i + 1] = total
    return -1


cdef intp_t _utf32_encode(const uint32_t* cp, intp_t n, intp_t width, const int64_t* offsets,
                          uint8_t* out) noexcept nogil:
    """Pass 2: write the UTF-8 bytes of string i inside its slot ``[offsets[i],
    offsets[i+1])`` only. The code points are the caller's memory, which another thread
    may change after pass 1: each is loaded once, and a string whose encoding no longer
    fits its slot exactly (or holds an unencodable point now) stops the pass before
    anything is written past the slot. Returns -1, or the index of that string."""
    cdef intp_t i, j, end
    cdef uint32_t c
    cdef int size
    cdef uint8_t* o
    cdef uint8_t* stop
    for i in range(n):
        o = out + offsets[i]
        stop = out + offsets[i + 1]
        end = _utf32_used(cp + i * width, width)
        for j in range(end):
            c = hz_load_cp(cp + i * width + j)
            size = _utf8_len(c)
            if size == 0 or size > stop - o:
                return i
            if size == 1:
                o[0] = <uint8_t>c
            elif size == 2:
                o[0] = <uint8_t>(0xC0 | (c >> 6))
                o[1] = <uint8_t>(0x80 | (c & 0x3F))
            elif size == 3:
                o[0] = <uint8_t>(0xE0 | (c >> 12))
                o[1] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
                o[2] = <uint8_t>(0x80 | (c & 0x3F))
            else:
                o[0] = <uint8_t>(0xF0 | (c >> 18))
                o[1] = <uint8_t>(0x80 | ((c >> 12) & 0x3F))
                o[2] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
                o[3] = <uint8_t>(0x80 | (c & 0x3F))
            o += size
        if o != stop:
            return i
    return -1


def encode_utf32(const uint32_t[:, ::1] codepoints):
    """UTF-8 encode a numpy ``'U'`` array viewed as ``uint32`` of shape (n, width).

    Returns ``(status, position, offsets, data)`` as :func:`encode_str_list`:
    ``ENC_OK``; ``ENC_SURROGATE`` (string ``position`` holds a surrogate or a point past
    U+10FFFF); ``ENC_CHANGED`` (string ``position`` changed between the sizing and the
    writing pass: another thread wrote to the array; nothing was written out of bounds).
    """
    cdef intp_t n = codepoints.shape[0], width = codepoints.shape[1], bad
    offsets_arr = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] offsets = offsets_arr
    cdef const uint32_t* cp = &codepoints[0, 0] if n and width else NULL
    if cp == NULL:
        offsets_arr[:] = 0
        return ENC_OK, 0, offsets_arr, np.empty(0, dtype=np.uint8)
    with nogil:
        bad = _utf32_sizes(cp, n, width, &offsets[0])
    if bad != -1:
        return ENC_SURROGATE, bad, None, None
    data_arr = np.empty(offsets[n], dtype=np.uint8)
    cdef uint8_t[::1] data = data_arr
    if offsets[n]:
        with nogil:
            bad = _utf32_encode(cp, n, width, &offsets[0], &data[0])
        if bad != -1:
            return ENC_CHANGED, bad, None, None
    return ENC_OK, 0, offsets_arr, data_arr
