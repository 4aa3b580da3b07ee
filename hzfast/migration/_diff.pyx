"""The diff kernel: slot-by-slot comparison of two replica tables."""
import numpy as np

from hzfast._types cimport uint8_t, int32_t, int64_t, intp_t


cdef intp_t diff_c(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt, uint8_t[:, ::1] mask,
                   int64_t[::1] changed, int64_t[:, ::1] gains, int64_t[:, ::1] losses,
                   intp_t* n_changed) noexcept nogil:
    """Fill the mask/gains/losses; returns the number of changed slots. Cannot fail
    (members were bounded by the caller's validation and sizing)."""
    cdef intp_t p, P = cur.shape[0], moves = 0, nc = 0
    cdef int R = <int>cur.shape[1], i
    cdef int32_t a, b
    cdef bint any_changed
    for p in range(P):
        any_changed = False
        for i in range(R):
            a = cur[p, i]
            b = tgt[p, i]
            if a != b:
                mask[p, i] = 1
                any_changed = True
                moves += 1
                if b >= 0:
                    gains[b, i] += 1
                if a >= 0:
                    losses[a, i] += 1
            else:
                mask[p, i] = 0
        if any_changed:
            changed[nc] = p
            nc += 1
    n_changed[0] = nc
    return moves


def diff(const int32_t[:, ::1] current, const int32_t[:, ::1] target, intp_t member_count):
    """``(mask, changed, gains, losses, moves)``; members must be < ``member_count``."""
    cdef intp_t P = current.shape[0], R = current.shape[1], nc = 0, moves
    mask = np.empty((P, R), dtype=np.bool_)
    changed = np.empty(P, dtype=np.int64)
    gains = np.zeros((member_count, R), dtype=np.int64)
    losses = np.zeros((member_count, R), dtype=np.int64)
    cdef uint8_t[:, ::1] m = mask.view(np.uint8)
    cdef int64_t[::1] c = changed
    cdef int64_t[:, ::1] g = gains, l = losses
    with nogil:
        moves = diff_c(current, target, m, c, g, l, &nc)
    return mask, changed[:nc].copy(), gains, losses, moves
