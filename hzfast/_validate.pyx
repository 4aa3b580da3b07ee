# cython: language_level=3
"""Validation kernels: one pass over a replica table, no Python objects."""
from hzfast._types cimport int32_t, intp_t

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


cdef int check_replicas_c(const int32_t[:, ::1] a, int32_t member_count,
                          intp_t* bad_row, intp_t* bad_col) noexcept nogil:
    """Return a status code; on failure *bad_row/*bad_col locate the slot."""
    cdef intp_t p, i, j, P = a.shape[0], R = a.shape[1]
    cdef int32_t v
    for p in range(P):
        for i in range(R):
            v = a[p, i]
            if v < -1:
                bad_row[0] = p; bad_col[0] = i
                return S_BELOW_MINUS_ONE
            if member_count >= 0 and v >= member_count:
                bad_row[0] = p; bad_col[0] = i
                return S_TOO_LARGE
            if v >= 0:
                for j in range(i):
                    if a[p, j] == v:
                        bad_row[0] = p; bad_col[0] = i
                        return S_DUPLICATE
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
