# Migration cycles (docs/design.md section 4), once for every kernel: the planner reverts
# them, the arranger avoids creating them, the report counts them. Rows are either padded
# working rows (W == 8, see _rows.pxd) or plain rows of W slots; empty slots hold -1 and a
# row never holds a member twice (the caller validated it).
from hzfast._types cimport int32_t
from hzfast._rows cimport hz_index


cdef inline bint closes_cycle(const int32_t* cur, const int32_t* tgt, int W, int index,
                              int32_t member) noexcept nogil:
    """Walk from slot ``index`` along slot -> position of its current member in ``tgt``;
    True when the walk reaches a slot whose current member is ``member`` (placing
    ``member`` at ``tgt[index]`` closes a cycle). The slot map is injective on valid rows,
    so the walk ends within W steps; the bound only guards. Cannot fail."""
    cdef int first = index, nxt, steps
    for steps in range(W + 1):
        nxt = hz_index(tgt, W, cur[first])
        if nxt == -1 or nxt == first:
            return False
        if cur[nxt] == member:
            return True
        first = nxt
    return False


cdef inline bint cyclic_at(const int32_t* cur, const int32_t* tgt, int W,
                           int index) noexcept nogil:
    """Hazelcast's ``isCyclic(old, new, index)``. Cannot fail."""
    return closes_cycle(cur, tgt, W, index, tgt[index])


cdef inline bint row_is_cyclic(const int32_t* cur, const int32_t* tgt, int W) noexcept nogil:
    """Hazelcast's ``isCyclic(old, new)``: some slot starts a cycle. Cannot fail."""
    cdef int i
    cdef int32_t c, t
    for i in range(W):
        c = cur[i]
        t = tgt[i]
        if c < 0 or t < 0 or c == t:
            continue
        if cyclic_at(cur, tgt, W, i):
            return True
    return False


cdef inline bint fix_row(const int32_t* cur, int32_t* tgt, int W) noexcept nogil:
    """Hazelcast's ``fixCycle(old, new)``: every slot on a cycle of ``tgt`` gets its
    current member back (in place); returns whether there was a cycle. Cannot fail."""
    cdef int i, index, nxt, steps
    cdef int32_t c, t
    cdef bint cyclic = False
    for i in range(W):
        c = cur[i]
        t = tgt[i]
        if c < 0 or t < 0 or c == t:
            continue
        if cyclic_at(cur, tgt, W, i):
            index = i
            for steps in range(W + 1):
                nxt = hz_index(tgt, W, cur[index])
                tgt[index] = cur[index]
                if nxt == -1:
                    break
                index = nxt
            cyclic = True
    return cyclic
