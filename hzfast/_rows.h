/* Fixed-width helpers on 8-slot "working rows": a replica row of R <= 7 members padded
   with -1 to 8 slots, so that loading, validating, comparing and searching a row are a few
   SSE2 instructions (baseline on x86-64); portable scalar code elsewhere.
   Shared by every hzfast kernel through hzfast/_rows.pxd; see docs/design.md section 0. */
#ifndef HZFAST_ROWS_H
#define HZFAST_ROWS_H
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
/* Nonzero when a working row holds a value >= limit (limit >= 1; padding -1 never is). */
static inline int hz_over8(const int32_t* w, int32_t limit) {
#if defined(__SSE2__)
    const __m128i top = _mm_set1_epi32(limit - 1);
    __m128i a = _mm_loadu_si128((const __m128i*)w);
    __m128i b = _mm_loadu_si128((const __m128i*)(w + 4));
    return _mm_movemask_epi8(_mm_or_si128(_mm_cmpgt_epi32(a, top), _mm_cmpgt_epi32(b, top))) != 0;
#else
    for (int i = 0; i < 8; i++) if (w[i] >= limit) return 1;
    return 0;
#endif
}

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

/* Position of member v in a row of W slots, or -1 (also for v < 0). W == 8 means a
   padded working row: one fixed-width compare; other widths are scanned. */
static inline int hz_index(const int32_t* row, int W, int32_t v) {
    if (v < 0) return -1;
    if (W == 8) return hz_index8(row, v);
    for (int i = 0; i < W; i++) if (row[i] == v) return i;
    return -1;
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

#endif  /* HZFAST_ROWS_H */
