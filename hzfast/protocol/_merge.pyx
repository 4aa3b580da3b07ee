"""The table-merge kernel: docs/design.md §7.4 over every partition at once.

Per partition ``p``, with local version ``a`` and received version ``b``: ``b < a`` keeps the
local row, ``b == a`` keeps it too but requires the received row to be identical (else ``p``
has diverged), ``b > a`` takes the received row and version. One pass, each value read
once, working in place on the caller's private copy of the local table (only rows taken
from the received table are written); hzfast.protocol.tables has checked shapes and
dtypes. Never raises.
"""
from hzfast._types cimport int32_t, uint8_t, intp_t


cdef inline intp_t merge_c(int32_t* reps, int32_t* vers, const int32_t* rr,
                           const int32_t* rv, uint8_t* updated, int32_t* diverged, intp_t P,
                           const intp_t R) noexcept nogil:
    """The merge over raw C-contiguous buffers, in place on ``reps``/``vers`` (the caller's
    private copies of the local table); returns the number of diverged partitions (their
    ids, ascending, in ``diverged``). Inlined at call sites with a constant ``R``, so the
    compiler unrolls the row loops."""
    cdef intp_t p, j, n = 0, off = 0
    cdef int32_t a, b, differ
    for p in range(P):
        a = vers[p]
        b = rv[p]
        if b > a:
            for j in range(R):
                reps[off + j] = rr[off + j]
            vers[p] = b
            updated[p] = 1
        else:
            differ = 0
            for j in range(R):
                differ |= reps[off + j] ^ rr[off + j]
            diverged[n] = <int32_t>p         # kept only when p diverged
            n += (b == a) & (differ != 0)
            updated[p] = 0
        off += R
    return n


def merge(int32_t[:, ::1] replicas, int32_t[::1] versions,
          const int32_t[:, ::1] received_replicas, const int32_t[::1] received_versions,
          uint8_t[::1] updated, int32_t[::1] diverged):
    """Merge the received table into ``replicas``/``versions`` IN PLACE (pass private
    copies of the local table), filling ``updated`` (P,) and the scratch ``diverged``
    (P,). Shapes: both tables (P, R), every vector (P,). Returns the count of diverged
    partitions (ids in ``diverged[:count]``); when it is not 0 the caller discards the
    half-merged copies."""
    cdef intp_t P = replicas.shape[0], R = replicas.shape[1], n = 0
    if P == 0:
        return 0
    cdef int32_t* reps = &replicas[0, 0]
    cdef int32_t* vers = &versions[0]
    cdef const int32_t* rr = &received_replicas[0, 0]
    cdef const int32_t* rv = &received_versions[0]
    cdef uint8_t* up = &updated[0]
    cdef int32_t* dv = &diverged[0]
    with nogil:
        if R == 7:
            n = merge_c(reps, vers, rr, rv, up, dv, P, 7)
        elif R == 1:
            n = merge_c(reps, vers, rr, rv, up, dv, P, 1)
        elif R == 2:
            n = merge_c(reps, vers, rr, rv, up, dv, P, 2)
        elif R == 3:
            n = merge_c(reps, vers, rr, rv, up, dv, P, 3)
        else:
            n = merge_c(reps, vers, rr, rv, up, dv, P, R)
    return n
