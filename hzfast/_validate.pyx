"""The validation kernel: one pass over one or two replica tables, no Python objects.

Every public function reaches its kernel through ``hzfast._check``, which calls
:func:`check_tables` and turns a status (``hzfast._types.Status``) into a ValueError that
names the argument (docs/design.md section 0).
"""
from hzfast._types cimport (int32_t, intp_t, S_OK, S_BELOW_MINUS_ONE, S_TOO_LARGE, S_DUPLICATE,
                           S_INTERNAL, S_BAD_PARTITION, S_BAD_INDEX, S_SOURCE_MISMATCH,
                           S_DESTINATION_MISMATCH, S_BAD_MEMBER, S_NEGATIVE, S_OVERFLOW,
                           S_BAD_CODE)
from hzfast._rows cimport ROW_SLOTS, RowLoader, hz_differ8, load_row8, loader_init

# the Status codes, for hzfast._check
OK = S_OK
BELOW_MINUS_ONE = S_BELOW_MINUS_ONE
TOO_LARGE = S_TOO_LARGE
DUPLICATE = S_DUPLICATE
INTERNAL = S_INTERNAL
BAD_PARTITION = S_BAD_PARTITION
BAD_INDEX = S_BAD_INDEX
SOURCE_MISMATCH = S_SOURCE_MISMATCH
DESTINATION_MISMATCH = S_DESTINATION_MISMATCH
BAD_MEMBER = S_BAD_MEMBER
NEGATIVE = S_NEGATIVE
OVERFLOW = S_OVERFLOW
BAD_CODE = S_BAD_CODE


cdef int first_problem(const int32_t[:, ::1] a, const int32_t[:, ::1] b, bint has_b,
                       int32_t member_count, intp_t* which, intp_t* row,
                       intp_t* col) noexcept nogil:
    """The exact first problem, row-major, ``a`` before ``b`` in each row (the slow path,
    run only once a problem is known to exist). Cannot fail (returns a status)."""
    cdef intp_t p, P = a.shape[0]
    cdef int R = <int>a.shape[1], c = 0, st
    for p in range(P):
        st = check_row(&a[p, 0], R, member_count, &c)
        if st != S_OK:
            which[0] = 0; row[0] = p; col[0] = c
            return st
        if has_b:
            st = check_row(&b[p, 0], R, member_count, &c)
            if st != S_OK:
                which[0] = 1; row[0] = p; col[0] = c
                return st
    return S_OK


cdef int check_tables_c(const int32_t[:, ::1] a, const int32_t[:, ::1] b, bint has_b,
                        int32_t member_count, intp_t* which, intp_t* row, intp_t* col,
                        intp_t* mismatches, int32_t* max_member) noexcept nogil:
    """Validate ``a`` (and ``b``, same shape), count the slots where they differ and find
    the largest member. Returns a status, the first problem row-major (``a`` before ``b``
    in a row). Never raises.

    The fast path loads each row as a working row and checks it branch-free (a value
    < -1, a duplicate); the upper bound is checked once against the largest member. Only
    when something is wrong is the exact first problem searched for."""
    cdef intp_t p, P = a.shape[0], k, n
    cdef int R = <int>a.shape[1]
    cdef intp_t mm = 0
    cdef int32_t mx = -1, v, w
    cdef bint bad = False
    cdef RowLoader L
    cdef int32_t aw[ROW_SLOTS]
    cdef int32_t bw[ROW_SLOTS]
    cdef const int32_t* pa
    cdef const int32_t* pb
    mismatches[0] = 0
    max_member[0] = -1
    if P == 0:
        return S_OK
    loader_init(&L, P, R)
    pa = &a[0, 0]
    pb = &b[0, 0]
    n = P * R
    for p in range(P):
        load_row8(&L, pa, p, aw)
        if row_suspect(aw):
            bad = True
            break
        if has_b:
            load_row8(&L, pb, p, bw)
            if hz_differ8(aw, bw) and row_suspect(bw):
                bad = True
                break
    if not bad:
        for k in range(n):
            v = pa[k]
            mx = v if v > mx else mx
        if has_b:
            for k in range(n):
                v = pa[k]
                w = pb[k]
                mx = w if w > mx else mx
                mm += v != w
        bad = member_count >= 0 and mx >= member_count
    if bad:
        return first_problem(a, b, has_b, member_count, which, row, col)
    mismatches[0] = mm
    max_member[0] = mx
    return S_OK


def check_tables(const int32_t[:, ::1] a, b=None, int member_count=-1):
    """Check one replica table, or two of equal shape (ValueError otherwise: the fast path
    reads rows of both as 8-slot working rows).

    Returns ``(status, which, row, col, mismatches, max_member)``: ``which`` is 0 for
    ``a`` and 1 for ``b``, ``[row, col]`` the offending slot; ``mismatches`` counts the
    slots where ``a != b``; ``max_member`` is the largest member (-1 if none).
    ``member_count < 0`` skips the upper bound.
    """
    cdef const int32_t[:, ::1] bb = a if b is None else b
    cdef bint has_b = b is not None
    if bb.shape[0] != a.shape[0] or bb.shape[1] != a.shape[1]:
        raise ValueError("check_tables: the two tables must have the same shape")
    if a.shape[1] > 7:
        raise ValueError("check_tables: at most 7 replica columns")
    cdef intp_t which = -1, row = -1, col = -1, mm = 0
    cdef int32_t mx = -1
    cdef int st
    with nogil:
        st = check_tables_c(a, bb, has_b, member_count, &which, &row, &col, &mm, &mx)
    return st, which, row, col, mm, mx
