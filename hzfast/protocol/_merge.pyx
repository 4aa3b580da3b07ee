"""The table-merge kernel: docs/design.md §7.4 over every partition at once.

Per partition ``p``, with local version ``a`` and received version ``b``: ``b < a`` keeps the
local row, ``b == a`` keeps it too but requires the received row to be identical (else ``p``
has diverged), ``b > a`` takes the received row and version. One pass, each input value read
once; the caller (hzfast.protocol.tables) has checked shapes and dtypes and allocates the
outputs. Never raises.
"""
from hzfast._types cimport int32_t, uint8_t, intp_t


cdef inline intp_t merge_c(const int32_t* lr, const int32_t* lv, const int32_t* rr,
                           const int32_t* rv, int32_t* out_r, int32_t* out_v,
                           uint8_t* updated, int32_t* diverged, intp_t P,
                           const intp_t R) noexcept nogil:
    """The merge over raw C-contiguous buffers; returns the number of diverged partitions
    (their ids, ascending, in ``diverged``). Inlined at call sites with a constant ``R``,
    so the compiler unrolls the row loops."""
    cdef intp_t p, j, n = 0, off = 0
    cdef int32_t a, b, differ
    for p in range(P):
        a = lv[p]
        b = rv[p]
        if b > a:
            for j in range(R):
                out_r[off + j] = rr[off + j]
            out_v[p] = b
            updated[p] = 1
        else:
            differ = 0
            for j in range(R):
                out_r[off + j] = lr[off + j]
                differ |= lr[off + j] ^ rr[off + j]
            diverged[n] = <int32_t>p         # kept only when p diverged
            n += (b == a) & (differ != 0)
            out_v[p] = a
            updated[p] = 0
        off += R
    return n


def merge(const int32_t[:, ::1] local_replicas, const int32_t[::1] local_versions,
          const int32_t[:, ::1] received_replicas, const int32_t[::1] received_versions,
          int32_t[:, ::1] replicas, int32_t[::1] versions, uint8_t[::1] updated,
          int32_t[::1] diverged):
    """Merge into the caller's fresh outputs (``replicas`` (P, R), ``versions`` (P,),
    ``updated`` (P,), ``diverged`` (P,) scratch). Shapes: every table (P, R), every vector
    (P,). Returns the count of diverged partitions (ids in ``diverged[:count]``); the
    outputs are meaningful only when it is 0."""
    cdef intp_t P = local_replicas.shape[0], R = local_replicas.shape[1], n = 0
    if P == 0:
        return 0
    cdef const int32_t* lr = &local_replicas[0, 0]
    cdef const int32_t* lv = &local_versions[0]
    cdef const int32_t* rr = &received_replicas[0, 0]
    cdef const int32_t* rv = &received_versions[0]
    cdef int32_t* out_r = &replicas[0, 0]
    cdef int32_t* out_v = &versions[0]
    cdef uint8_t* up = &updated[0]
    cdef int32_t* dv = &diverged[0]
    with nogil:
        if R == 7:
            n = merge_c(lr, lv, rr, rv, out_r, out_v, up, dv, P, 7)
        elif R == 1:
            n = merge_c(lr, lv, rr, rv, out_r, out_v, up, dv, P, 1)
        elif R == 2:
            n = merge_c(lr, lv, rr, rv, out_r, out_v, up, dv, P, 2)
        elif R == 3:
            n = merge_c(lr, lv, rr, rv, out_r, out_v, up, dv, P, 3)
        else:
            n = merge_c(lr, lv, rr, rv, out_r, out_v, up, dv, P, R)
    return n
