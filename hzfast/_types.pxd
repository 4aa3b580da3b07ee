# Shared C typedefs for every hzfast kernel. Import from here; never redefine.
from libc.stdint cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t

ctypedef Py_ssize_t intp_t

# Member index: -1 = empty slot / no member.
ctypedef int32_t member_t

cdef enum:
    MAX_REPLICAS = 7
    NO_MEMBER = -1
