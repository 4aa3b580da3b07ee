# Hazelcast-exact hash kernels, cimportable by other hzfast kernels:
#     from hzfast._hashing cimport murmur3_32_c, murmur3_x64_64_c, hash_to_index_c
from hzfast._types cimport uint8_t, int32_t, uint32_t, int64_t, intp_t

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
