"""The table-merge kernel: docs/design.md §7.4 over every partition at once.

Per partition ``p``, with local version ``a`` and received version ``b``: ``b < a`` keeps the
local row, ``b == a`` keeps it too but requires the received row to be identical (else ``p``
has diverged), ``b > a`` takes the received row and version. One pass, in place on the
caller's private copy of the local table (only rows taken from the received table are
written); hzfast.protocol.tables has checked shapes and dtypes. Never raises.

Also the check a member makes of the rows it would take from a received table
(``first_invalid``, docs/design.md §7.4).
"""
cimport numpy as cnp
from libc.string cimport memcmp

from hzfast._types cimport int32_t, uint8_t, intp_t, S_OK
from hzfast._validate cimport check_row
from hzfast._vector cimport table32, vector32

cnp.import_array()


cdef enum:
    RUN_FOR_MEMCMP = 4       # equal-version runs at least this long are compared by memcmp


cdef inline intp_t merge_c(int32_t* reps, int32_t* vers, const int32_t* rr,
                           const int32_t* rv, uint8_t* updated, int32_t* diverged, intp_t P,
                           const intp_t R) noexcept nogil:
    """The merge over raw C-contiguous buffers, in place on ``reps``/``vers`` (the caller's
    private copies of the local table); returns the number of diverged partitions (their
    ids, ascending, in ``diverged``). Inlined at call sites with a constant ``R``, so the
    compiler unrolls the row loops.

    A run of partitions with equal versions (the common case: most of a full table is what
    the member already has) is compared as one block with memcmp; only a run that differs,
    or a short one, is compared row by row."""
    cdef intp_t p = 0, q, j, n = 0
    cdef int32_t a, b, differ
    while p < P:
        a = vers[p]
        b = rv[p]
        if b > a:                            # newer: take the received row and version
            for j in range(R):
                reps[p * R + j] = rr[p * R + j]
            vers[p] = b
            updated[p] = 1
            p += 1
        elif b < a:                          # older: ignored
            updated[p] = 0
            p += 1
        else:                                # equal: the rows must be identical
            q = p
            while q < P and rv[q] == vers[q]:
                updated[q] = 0
                q += 1
            if q - p < RUN_FOR_MEMCMP or \
                    memcmp(reps + p * R, rr + p * R, <size_t>((q - p) * R) * sizeof(int32_t)):
                while p < q:
                    differ = 0
                    for j in range(R):
                        differ |= reps[p * R + j] ^ rr[p * R + j]
                    diverged[n] = <int32_t>p     # kept only when p diverged
                    n += differ != 0
                    p += 1
            p = q
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


def left(const int32_t[:, ::1] old, const int32_t[:, ::1] new, const uint8_t[::1] updated,
         int32_t member, intp_t k):
    """The rows ``p`` (ascending, a list of ints) where ``updated[p]`` is set and
    ``member`` is in ``old[p, :k]`` but not in ``new[p, :k]``: the partitions a merge moved
    ``member`` out of the first ``k`` slots of (``old`` and ``new`` the tables before and
    after it, same shape; ``k`` clipped to the width)."""
    cdef intp_t P = old.shape[0], R = old.shape[1], p, j
    cdef bint was, now
    if new.shape[0] != P or new.shape[1] != R or updated.shape[0] != P:
        raise ValueError("old, new and updated must describe the same partitions")
    k = max(0, min(k, R))
    cdef list out = []
    for p in range(P):
        if not updated[p]:
            continue
        was = False
        now = False
        for j in range(k):
            was |= old[p, j] == member
            now |= new[p, j] == member
        if was and not now:
            out.append(p)
    return out


def first_invalid(object replicas, object versions, object updated, int32_t version_limit):
    """The first partition ``p`` (of those with ``updated[p]`` set, or of all when
    ``updated`` is None) whose row holds a slot below -1 or a member twice, or whose
    version is outside ``[0, version_limit)``; -1 when there is none. What a member checks
    before it takes rows from a received table: no honest member sends such a row.

    ``replicas`` (P, R) and ``versions`` (P,) are aligned, native-order, C-contiguous int32
    arrays and ``updated`` a C-contiguous (P,) bool array (TypeError otherwise). They are
    read through their C pointers (a memoryview's acquisition would cost more than the
    loop on a 271-partition table)."""
    cdef int32_t* reps
    cdef int32_t* vers
    cdef const uint8_t* up = NULL
    cdef intp_t P, R, n, p
    cdef int col = 0
    if not table32(replicas, False, &reps, &P, &R) or not vector32(versions, False, &vers, &n) \
            or n != P:
        raise TypeError("first_invalid takes a C-contiguous int32 table (P, R) and "
                        "int32 versions (P,)")
    if updated is not None:
        if (type(updated) is not cnp.ndarray
                or cnp.PyArray_TYPE(<cnp.ndarray>updated) != cnp.NPY_BOOL
                or cnp.PyArray_NDIM(<cnp.ndarray>updated) != 1
                or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>updated)
                or cnp.PyArray_DIM(<cnp.ndarray>updated, 0) != P):
            raise TypeError("updated must be None or a C-contiguous bool array (P,)")
        up = <const uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>updated)
    for p in range(P):
        if up != NULL and not up[p]:
            continue
        if vers[p] < 0 or vers[p] >= version_limit \
                or check_row(reps + p * R, <int>R, -1, &col) != S_OK:
            return p
    return -1
