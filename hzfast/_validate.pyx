# cython: language_level=3
"""Validation kernels: one pass over a replica table, no Python objects."""
from hzfast._types cimport int32_t, int64_t, uint64_t, intp_t

# Status codes returned by check_replicas_c (first problem found, row-major).
cdef enum:
    S_OK = 0
    S_BELOW_MINUS_ONE = 1
    S_TOO_LARGE = 2
    S_DUPLICATE = 3

OK = S_OK
BELOW_MINUS_ONE = S_BELOW_MINUS_ONE
TOO_LARGE = S_TOO_LARGE
DUPLICATE = S_DUPLICATE


cdef int check_row_c(const int32_t* row, intp_t R, int32_t member_count,
                     intp_t* bad_col) noexcept nogil:
    """The first problem in one row (in slot order), as a status code."""
    cdef intp_t i, j
    cdef int32_t v
    for i in range(R):
        v = row[i]
        if v < -1:
            bad_col[0] = i
            return S_BELOW_MINUS_ONE
        if member_count >= 0 and v >= member_count:
            bad_col[0] = i
            return S_TOO_LARGE
        if v >= 0:
            for j in range(i):
                if row[j] == v:
                    bad_col[0] = i
                    return S_DUPLICATE
    return S_OK


cdef int check_replicas_c(const int32_t[:, ::1] a, int32_t member_count,
                          intp_t* bad_row, intp_t* bad_col) noexcept nogil:
    """Return a status code (the first problem in row-major order); on failure
    *bad_row/*bad_col locate the slot.

    Each row is first checked branch-free (range via one unsigned comparison, duplicates
    via a 64-bit member set); only a row that may have a problem (or holds a member
    index >= 64) is re-scanned slot by slot (``check_row_c``) for the exact first
    problem."""
    cdef intp_t p, i, P = a.shape[0], R = a.shape[1]
    cdef const int32_t* row
    cdef int status
    cdef int32_t v
    cdef uint64_t lim, bad, seen, bit
    if P == 0:
        return S_OK
    row = &a[0, 0]
    # rows whose members are all in [0, lim) are checked branch-free; any other row
    # (a value >= lim, < -1, or a duplicate) is re-scanned by check_row_c
    lim = <uint64_t>member_count if 0 <= member_count <= 64 else 64
    for p in range(P):
        bad = 0
        seen = 0
        for i in range(R):
            v = row[i]
            bad |= (<uint64_t>(<int64_t>v + 1)) > lim
            bit = ((<uint64_t>(v >= 0)) << (v & 63))
            bad |= seen & bit
            seen |= bit
        if bad:
            status = check_row_c(row, R, member_count, bad_col)
            if status != S_OK:
                bad_row[0] = p
                return status
        row += R
    return S_OK


def check_replicas(const int32_t[:, ::1] a, int member_count=-1):
    """Check a replica table; return ``(status, row, col)``.

    ``member_count < 0`` skips the upper bound check.
    """
    cdef intp_t row = -1, col = -1
    cdef int status
    with nogil:
        status = check_replicas_c(a, member_count, &row, &col)
    return status, row, col
