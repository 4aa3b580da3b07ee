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


cdef inline int next_cyclic(const int32_t* cur, const int32_t* tgt, int W,
                            int start) noexcept nogil:
    """The first slot ``i >= start`` where a cycle starts (both members set and
    different, :func:`cyclic_at`), or -1. Cannot fail."""
    cdef int i
    for i in range(start, W):
        if cur[i] >= 0 and tgt[i] >= 0 and cur[i] != tgt[i] and cyclic_at(cur, tgt, W, i):
            return i
    return -1


cdef inline bint row_is_cyclic(const int32_t* cur, const int32_t* tgt, int W) noexcept nogil:
    """Hazelcast's ``isCyclic(old, new)``: some slot starts a cycle. Cannot fail."""
    return next_cyclic(cur, tgt, W, 0) >= 0


cdef inline bint fix_row(const int32_t* cur, int32_t* tgt, int W) noexcept nogil:
    """Hazelcast's ``fixCycle(old, new)``: every slot on a cycle of ``tgt`` gets its
    current member back (in place); returns whether there was a cycle. Cannot fail."""
    cdef int i = next_cyclic(cur, tgt, W, 0), index, nxt, steps
    cdef bint cyclic = i >= 0
    while i >= 0:
        index = i
        for steps in range(W + 1):
            nxt = hz_index(tgt, W, cur[index])
            tgt[index] = cur[index]
            if nxt == -1:
                break
            index = nxt
        i = next_cyclic(cur, tgt, W, i + 1)
    return cyclic
