"""The apply kernel: replay a plan's decisions on a replica table, checking every step
(docs/design.md section 5)."""
from hzfast._types cimport int32_t, uint32_t, intp_t, S_OK
from hzfast._validate cimport check_row
from hzfast.migration._decisions cimport (Columns, apply_step, check_decision, columns_of,
                                         matches_row)


cdef int apply_c(int32_t[:, ::1] reps, int32_t[::1] vers, Columns cols,
                 intp_t* bad) noexcept nogil:
    """Apply the decisions in order to ``reps``/``vers`` (the caller's private copies),
    checking each one and the row it leaves. Returns a status; ``*bad`` = the offending
    decision. Never raises."""
    cdef intp_t k, P = reps.shape[0]
    cdef int R = <int>reps.shape[1], col = 0, st
    cdef int32_t p
    cdef int32_t* row
    cdef const Columns* c = &cols      # a private copy: its pointers stay in registers
    for k in range(c.n):
        st = check_decision(c, k, P, R, -1)
        if st == S_OK:
            p = c.pid[k]
            row = &reps[p, 0]
            st = matches_row(c, k, row)
            if st == S_OK:
                # versions are Java ints: they wrap (in unsigned arithmetic, defined in C)
                vers[p] = <int32_t>(<uint32_t>vers[p] + <uint32_t>apply_step(c, k, row))
                st = check_row(row, R, -1, &col)
        if st != S_OK:
            bad[0] = k
            return st
    return S_OK


def apply(int32_t[:, ::1] replicas, int32_t[::1] versions, const int32_t[:, :] columns):
    """Apply a (7, N) column block's decisions in order to ``replicas``/``versions`` IN
    PLACE (pass private copies). Returns ``(status, bad_decision)``."""
    cdef Columns c = columns_of(columns)
    cdef intp_t bad = -1
    cdef int st
    with nogil:
        st = apply_c(replicas, versions, c, &bad)
    return st, bad
