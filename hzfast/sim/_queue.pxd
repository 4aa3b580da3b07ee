# The simulator's event queue (hzfast/sim/_queue.pyx), declared for hzfast/sim/cluster.pxd:
# its calls from the compiled simulator are C calls.
from hzfast._types cimport int64_t, intp_t

ctypedef int64_t key_t


cdef struct _Entry:
    key_t key
    intp_t slot


cdef class EventQueue:
    cdef _Entry* heap
    cdef intp_t n
    cdef intp_t cap
    cdef list kinds
    cdef list payloads
    cdef list free
    cdef readonly object kind
    cdef readonly object payload

    cpdef push(self, object time, key_t sequence, kind, payload)
    cpdef key_t pop(self) except? -1
