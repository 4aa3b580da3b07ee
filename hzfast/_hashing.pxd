# Hazelcast-exact hash kernels, cimportable by other hzfast kernels:
#     from hzfast._hashing cimport murmur3_32_c, murmur3_x64_64_c, hash_to_index_c, item_span
from hzfast._types cimport uint8_t, int32_t, uint32_t, int64_t, intp_t, offset_t

# Standard MurmurHash3_x86_32 of n bytes; returns the signed result. Cannot fail.
cdef int32_t murmur3_32_c(const uint8_t* p, intp_t n, uint32_t seed) noexcept nogil

# Hazelcast's non-standard MurmurHash3_x64_64 variant (docs/design.md §3). Cannot fail.
cdef int64_t murmur3_x64_64_c(const uint8_t* p, intp_t n, int32_t seed) noexcept nogil

# The partition-table stamp of P int32 versions (x64_64 variant over big-endian versions,
# no intermediate buffer). Cannot fail.
cdef int64_t stamp_c(const int32_t* versions, intp_t count) noexcept nogil

# Hazelcast HashUtil.hashToIndex: 0 for INT_MIN, else abs(h) % partition_count.
# partition_count must be > 0 (the caller validates). Cannot fail.
cdef int32_t hash_to_index_c(int32_t h, int32_t partition_count) noexcept nogil


# ---------------------------------------------------------------- Arrow-style offsets
# The one check of a string/binary item's offsets, shared by every kernel that walks
# Arrow-style (offsets, data) buffers (Hazelcast strings and Data, Ignite strings).
# The offsets may be the caller's memory (zero-copy Arrow buffers) and another thread
# may change them during the call, so each offset is loaded exactly once (a relaxed
# atomic load: the compiler may not load it again after the check) and only the
# checked copies are used.
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define HZ_LOAD_ONCE(p) __atomic_load_n((p), __ATOMIC_RELAXED)
    #else
    #define HZ_LOAD_ONCE(p) (*(const volatile __typeof__(*(p))*)(p))
    #endif
    /* Item i of an offsets array: 1 and [*start, *end) when 0 <= start <= end <= size,
       else 0 (negative, decreasing or past the data buffer). */
    static inline int hz_span32(const int32_t* o, Py_ssize_t i, Py_ssize_t size,
                                Py_ssize_t* start, Py_ssize_t* end) {
        int64_t a = HZ_LOAD_ONCE(o + i), b = HZ_LOAD_ONCE(o + i + 1);
        if (a < 0 || b < a || b > (int64_t)size) return 0;
        *start = (Py_ssize_t)a; *end = (Py_ssize_t)b;
        return 1;
    }
    static inline int hz_span64(const int64_t* o, Py_ssize_t i, Py_ssize_t size,
                                Py_ssize_t* start, Py_ssize_t* end) {
        int64_t a = HZ_LOAD_ONCE(o + i), b = HZ_LOAD_ONCE(o + i + 1);
        if (a < 0 || b < a || b > (int64_t)size) return 0;
        *start = (Py_ssize_t)a; *end = (Py_ssize_t)b;
        return 1;
    }
    """
    bint hz_span32(const int32_t* o, intp_t i, intp_t size, intp_t* start,
                   intp_t* end) noexcept nogil
    bint hz_span64(const int64_t* o, intp_t i, intp_t size, intp_t* start,
                   intp_t* end) noexcept nogil


cdef inline bint item_span(const offset_t* offsets, intp_t i, intp_t size, intp_t* start,
                           intp_t* end) noexcept nogil:
    """Bounds of item ``i``: True with ``[start, end)`` inside ``data[0:size]``, or False
    for a malformed item (negative, decreasing or past ``size``). Reads each offset once."""
    if offset_t is int32_t:
        return hz_span32(offsets, i, size, start, end)
    else:
        return hz_span64(offsets, i, size, start, end)
