"""Table scans of the master's planning step (docs/design.md §11), one pass each.

``repair`` is rule 7's first half over every slot at once: clear the slots of members that
left (or turned lite), bump each partition's version by the slots it lost, and list the
partitions left without an owner that still hold a replica (their promotions). ``dense``
maps member ids to view positions for the arranger and planner. Both read member ids
through a lookup table indexed by id; an id at or past its end (or -1) is "not a member".
hzfast.protocol.node checks shapes, dtypes and writability; nothing here raises.
"""
import numpy as np

from hzfast._types cimport int32_t, uint8_t, int64_t, intp_t


def repair(int32_t[:, ::1] replicas, int32_t[::1] versions, const uint8_t[::1] member):
    """Clear, IN PLACE, every slot whose id is not flagged in ``member`` (``-1`` slots stay),
    add the cleared count of each row to ``versions``; then list the rows whose slot 0 is
    empty while another slot is filled. Returns ``(cleared, rows)``: the slot count cleared
    and an int64 array of those rows, ascending."""
    cdef intp_t P = replicas.shape[0], R = replicas.shape[1], M = member.shape[0]
    cdef intp_t p, j, cleared = 0, n = 0
    cdef int32_t v, lost
    cdef bint filled
    need_arr = np.empty(P, dtype=np.int64)
    cdef int64_t[::1] need = need_arr
    with nogil:
        for p in range(P):
            lost = 0
            filled = False
            for j in range(R):
                v = replicas[p, j]
                if v < 0:
                    continue
                if v >= M or not member[v]:
                    replicas[p, j] = -1
                    lost += 1
                elif j > 0:
                    filled = True
            if lost:
                versions[p] += lost
                cleared += lost
            if replicas[p, 0] == -1 and filled:
                need[n] = p
                n += 1
    return cleared, need_arr[:n].copy()


def dense(const int32_t[:, ::1] replicas, const int32_t[::1] position):
    """The table with every id replaced by ``position[id]`` (``-1`` where the slot is empty
    or the id is at or past the end of ``position``): a new int32 (P, R) array."""
    cdef intp_t P = replicas.shape[0], R = replicas.shape[1], M = position.shape[0]
    cdef intp_t p, j
    cdef int32_t v
    out_arr = np.empty((P, R), dtype=np.int32)
    cdef int32_t[:, ::1] out = out_arr
    with nogil:
        for p in range(P):
            for j in range(R):
                v = replicas[p, j]
                out[p, j] = position[v] if 0 <= v < M else -1
    return out_arr
