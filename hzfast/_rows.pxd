# Row helpers shared by the kernels (hzfast/_rows.h): a replica row of R <= 7 members is
# handled as an 8-slot "working row" padded with -1 (docs/design.md section 0).
from hzfast._types cimport int32_t, intp_t

cdef extern from "_rows.h" nogil:
    # row of R values at src into dst[0..7], padded with -1; wide != 0 may read 8 values
    void hz_load8(const int32_t* src, int R, int wide, int32_t* dst) noexcept
    # working row w into a table row of R values (wide != 0 may write 8 values)
    void hz_store8(int32_t* dst, const int32_t* w, int R, int wide) noexcept
    # nonzero when a working row holds a value < -1 or a member twice (exact)
    int hz_bad8(const int32_t* w) noexcept
    # nonzero when a working row holds a value >= limit (limit >= 1)
    int hz_over8(const int32_t* w, int32_t limit) noexcept
    # nonzero when two working rows differ
    int hz_differ8(const int32_t* a, const int32_t* b) noexcept
    # bit i set where two working rows differ
    unsigned hz_diffmask8(const int32_t* a, const int32_t* b) noexcept
    # position of member v in a working row, or -1 (v >= 0)
    int hz_index8(const int32_t* w, int32_t v) noexcept
    # position of member v in a row of W slots (W == 8: a working row), or -1 (v < 0: -1)
    int hz_index(const int32_t* row, int W, int32_t v) noexcept
    # lowest set bit of x != 0
    int hz_ctz(unsigned x) noexcept

cdef enum:
    ROW_SLOTS = 8        # slots of a working row (R <= 7 members plus padding)


cdef struct RowLoader:
    int R
    intp_t wide_rows     # rows that may be read 8 values at a time


cdef inline void loader_init(RowLoader* L, intp_t P, int R) noexcept nogil:
    """Prepare padded row loads for a (P, R) table. Cannot fail."""
    L.R = R
    # an 8-value read from row p stays inside the table when p * R + 8 <= P * R
    L.wide_rows = P - (ROW_SLOTS + R - 1) // R
    if L.wide_rows < 0:
        L.wide_rows = 0


cdef inline void load_row8(const RowLoader* L, const int32_t* base, intp_t p,
                           int32_t* dst) noexcept nogil:
    """Row ``p`` of a (P, R) table into the working row ``dst``, padded with -1;
    8-value reads only where they stay inside the table. Cannot fail."""
    hz_load8(base + p * L.R, L.R, p < L.wide_rows, dst)
