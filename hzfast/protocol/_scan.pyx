"""Table scans of the master's planning step (docs/design.md §11), one pass each.

``repair_dense`` is rule 7's first half over every slot at once: clear the slots of members
that left (or turned lite), bump each partition's version by the slots it lost, and list the
partitions left without an owner that still hold a replica (their promotions); in the same
pass it writes the table in view positions for the arranger and planner. ``dense`` is that
mapping alone. Both read member ids through a lookup table indexed by id, padded with one
``-1`` entry that every id at or past its end (and -1) reads, so the pass has no branch per
slot. hzfast.protocol.node checks shapes, dtypes and writability; nothing here raises.
"""
import numpy as np
cimport numpy as cnp

from hzfast._types cimport int32_t, uint8_t, uint32_t, int64_t, intp_t

cnp.import_array()


def dense(const int32_t[:, ::1] replicas, const int32_t[::1] position):
    """The table with every id replaced by ``position[id]`` (``-1`` where the slot is empty
    or the id is at or past the end of ``position``): a new int32 (P, R) array."""
    cdef intp_t P = replicas.shape[0], R = replicas.shape[1], M = position.shape[0]
    cdef intp_t i, n = P * R
    cdef uint32_t u
    out_arr = np.empty((P, R), dtype=np.int32)
    # the positions padded with one -1 that every out-of-range id (and -1) reads
    pos_arr = np.full(M + 1, -1, dtype=np.int32)
    pos_arr[:M] = position
    cdef const int32_t* pos = <const int32_t*>cnp.PyArray_DATA(pos_arr)
    cdef const int32_t* src = &replicas[0, 0] if n else NULL
    cdef int32_t* out = <int32_t*>cnp.PyArray_DATA(out_arr)
    with nogil:
        for i in range(n):
            u = <uint32_t>src[i]
            out[i] = pos[u if u < <uint32_t>M else M]
    return out_arr


def repair_dense(int32_t[:, ::1] replicas, int32_t[::1] versions, const int32_t[::1] code):
    """:func:`repair` and :func:`dense` in one pass, for a lookup table ``code`` that gives
    each data member's view position and ``-1`` for every other id (lite members, members
    not in the view): clear, IN PLACE, the slots whose id has no position, add each row's
    cleared count to ``versions``, list the rows left with slot 0 empty while another slot
    is filled, and write the repaired table in view positions. Returns ``(cleared, rows,
    dense)``."""
    cdef intp_t P = replicas.shape[0], R = replicas.shape[1], M = code.shape[0]
    cdef intp_t i, p, j, cleared = 0, n = 0, slots = P * R
    cdef int32_t v, c, lost, acc = 0
    cdef uint32_t u
    need_arr = np.empty(P, dtype=np.int64)
    out_arr = np.empty((P, R), dtype=np.int32)
    # the codes padded with one -1 that every out-of-range id (and -1) reads
    pos_arr = np.full(M + 1, -1, dtype=np.int32)
    pos_arr[:M] = code
    cdef const int32_t* pos = <const int32_t*>cnp.PyArray_DATA(pos_arr)
    cdef int32_t* table = &replicas[0, 0] if slots else NULL
    cdef int32_t* out = <int32_t*>cnp.PyArray_DATA(out_arr)
    cdef int32_t* ver = &versions[0] if P else NULL
    cdef int64_t* need = <int64_t*>cnp.PyArray_DATA(need_arr)
    with nogil:
        # every slot mapped; ``acc`` takes the sign bit of any slot whose member has no
        # position (``c < 0``) although the slot is filled (``v >= 0``)
        for i in range(slots):
            v = table[i]
            u = <uint32_t>v
            c = pos[u if u < <uint32_t>M else M]
            out[i] = c
            acc |= c & ~v
        if acc < 0:                    # a member left (or turned lite): clear its slots
            for p in range(P):
                lost = 0
                for j in range(p * R, p * R + R):
                    if (table[j] >= 0) & (out[j] < 0):
                        table[j] = -1
                        lost += 1
                ver[p] += lost
                cleared += lost
        for p in range(P):             # no owner, yet a replica further on
            if out[p * R] < 0:
                for j in range(p * R + 1, p * R + R):
                    if out[j] >= 0:
                        need[n] = p
                        n += 1
                        break
    return cleared, need_arr[:n].copy(), out_arr
