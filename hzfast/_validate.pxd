# The row check every validating kernel shares (statuses: hzfast._types.Status).
from hzfast._types cimport int32_t, uint32_t, uint64_t, S_OK, S_BELOW_MINUS_ONE, S_TOO_LARGE, S_DUPLICATE
from hzfast._rows cimport hz_bad8


cdef inline int check_row(const int32_t* row, int R, int32_t member_count,
                          int* col) noexcept nogil:
    """Status of one row of R slots, the first problem in slot order: a value < -1, a
    member ``>= member_count`` (not checked when ``member_count < 0``), a member twice;
    ``*col`` = the offending slot. A 64-bit membership filter makes a duplicate-free row
    cost R steps. Cannot fail (returns a status)."""
    cdef uint64_t seen = 0, bit
    cdef int i, j
    cdef int32_t v
    for i in range(R):
        v = row[i]
        if v < 0:
            if v < -1:
                col[0] = i
                return S_BELOW_MINUS_ONE
            continue
        # member_count < 0 (no bound) is the largest unsigned value: one compare either way
        if <uint32_t>v >= <uint32_t>member_count:
            col[0] = i
            return S_TOO_LARGE
        bit = (<uint64_t>1) << (v & 63)
        if seen & bit:
            for j in range(i):
                if row[j] == v:
                    col[0] = i
                    return S_DUPLICATE
        seen |= bit
    return S_OK


cdef inline bint row_suspect(const int32_t* w) noexcept nogil:
    """Exact, branch-free check of a padded working row: True when a value is < -1 or a
    member appears twice (then :func:`check_row` locates it). Cannot fail."""
    return hz_bad8(w) != 0
