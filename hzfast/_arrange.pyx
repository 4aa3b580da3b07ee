# cython: language_level=3
"""Arrangement kernels: repair, keepable counts, the arranger, cycle rows, report counts.

Every ``def`` here trusts its input: ``hzfast.arrangement`` validates (dtype, shape, member
indices in ``[-1, M)``, quotas consistent) before calling. The arranger is a transliteration
of ``hzfast.reference.arrangement.arrange_core`` (same steps, same tie-breaks).
"""
import numpy as np

from hzfast._types cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, intp_t


# ---------------------------------------------------------------------------- repair
cdef void repair_c(const int32_t[:, ::1] reps, const uint8_t[::1] alive,
                   const int32_t[::1] versions, int32_t[:, ::1] out,
                   int32_t[::1] vout) noexcept nogil:
    """Empty dead slots (+1 version each); promote first backup if owner empty (+2)."""
    cdef intp_t p, i, P = reps.shape[0], R = reps.shape[1]
    cdef int32_t m, v
    for p in range(P):
        v = versions[p]
        for i in range(R):
            m = reps[p, i]
            if m >= 0 and not alive[m]:
                m = -1
                v += 1
            out[p, i] = m
        if out[p, 0] == -1:
            for i in range(1, R):
                if out[p, i] != -1:
                    out[p, 0] = out[p, i]
                    out[p, i] = -1
                    v += 2
                    break
        vout[p] = v


def repair(const int32_t[:, ::1] reps, const uint8_t[::1] alive, const int32_t[::1] versions):
    """Return new ``(replicas, versions)`` after removing dead members and promoting."""
    cdef intp_t P = reps.shape[0], R = reps.shape[1]
    out = np.empty((P, R), dtype=np.int32)
    vout = np.empty(P, dtype=np.int32)
    cdef int32_t[:, ::1] o = out
    cdef int32_t[::1] vo = vout
    with nogil:
        repair_c(reps, alive, versions, o, vo)
    return out, vout


# ---------------------------------------------------------------------------- helpers
cdef inline uint32_t mix(intp_t a, intp_t b, intp_t c) noexcept nogil:
    """32-bit tie-break hash; equals reference ``mix``."""
    cdef uint32_t h = (<uint32_t>a) * 0x9E3779B1u + (<uint32_t>b) * 0x85EBCA77u \
        + (<uint32_t>c) * 0xC2B2AE3Du + 0x27D4EB2Fu
    h ^= h >> 15
    h *= 0x2C1B3C6Du
    h ^= h >> 12
    h *= 0x297A2D39u
    h ^= h >> 15
    return h


cdef inline intp_t pos_in(const int32_t* row, intp_t W, int32_t m) noexcept nogil:
    """Index of member m in a row of width W, or -1."""
    cdef intp_t i
    for i in range(W):
        if row[i] == m:
            return i
    return -1


cdef bint creates_cycle(const int32_t* crow, const int32_t* trow, intp_t W,
                        intp_t j, intp_t r) noexcept nogil:
    """Would moving the member at current index j to target index r close a cycle?"""
    cdef intp_t k = r, t, step
    cdef int32_t c
    for step in range(W + 1):
        c = crow[k]
        if c < 0:
            return False
        t = pos_in(trow, W, c)
        if t < 0:
            return False
        if t == j:
            return True
        if t == k:
            return False
        k = t
    return False


cdef bint placeable(const int32_t* crow, const int32_t* trow, intp_t W,
                    const int32_t* gid, int32_t m, intp_t r) noexcept nogil:
    """m may take slot r: its group is not elsewhere in the target row, and no cycle."""
    cdef intp_t i, j
    cdef int32_t g = gid[m], x
    for i in range(W):
        x = trow[i]
        if i != r and x >= 0 and gid[x] == g:
            return False
    j = pos_in(crow, W, m)
    if j >= 0 and j != r and creates_cycle(crow, trow, W, j, r):
        return False
    return True


cdef inline bint key_less(int mv1, int64_t cap1, uint32_t h1,
                          int mv2, int64_t cap2, uint32_t h2) noexcept nogil:
    """Lexicographic (-cap, move, hash) comparison: True when key 1 < key 2."""
    if cap1 != cap2:
        return cap1 > cap2
    if mv1 != mv2:
        return mv1 < mv2
    return h1 < h2


cdef int32_t best_member(const int32_t* crow, const int32_t* trow, intp_t W,
                         const int32_t* gid, const int32_t* gstart, const int32_t* gmem,
                         const int32_t* mcap, int32_t g, intp_t p, intp_t r,
                         bint need_cap, int* is_move) noexcept nogil:
    """Best member of group g for slot (p, r) by (-mcap, move, hash); -1 if none."""
    cdef intp_t a, j
    cdef int32_t m, best = -1
    cdef int mv, best_mv = 0
    cdef int64_t best_cap = 0
    cdef uint32_t h, best_h = 0
    for a in range(gstart[g], gstart[g + 1]):
        m = gmem[a]
        if need_cap and mcap[m] <= 0:
            continue
        if not placeable(crow, trow, W, gid, m, r):
            continue
        j = pos_in(crow, W, m)
        mv = 1 if (j >= 0 and j != r) else 0
        h = mix(p, r, m)
        if best < 0 or key_less(mv, mcap[m], h, best_mv, best_cap, best_h):
            best = m; best_mv = mv; best_cap = mcap[m]; best_h = h
    is_move[0] = best_mv
    return best


# ---------------------------------------------------------------------------- counts
def keepable_counts(const int32_t[:, ::1] cur, const int32_t[::1] gid, intp_t G,
                    intp_t R_fill):
    """ndarray[int32] (R_fill, M): slots per member per index that could be kept
    (data member, group not already seen at an earlier index of the row)."""
    cdef intp_t P = cur.shape[0], M = gid.shape[0], p, r
    cdef int32_t m, g
    out = np.zeros((R_fill, M), dtype=np.int32)
    seen_arr = np.full(max(G, 1), -1, dtype=np.int64)
    cdef int32_t[:, ::1] o = out
    cdef int64_t[::1] seen = seen_arr
    with nogil:
        for p in range(P):
            for r in range(R_fill):
                m = cur[p, r]
                if m < 0:
                    continue
                g = gid[m]
                if g < 0 or seen[g] == p:
                    continue
                seen[g] = p
                o[r, m] += 1
    return out


# ---------------------------------------------------------------------------- arranger
cdef struct Work:
    intp_t P, W, M, G, R_fill
    const int32_t* cur      # (P, W)
    int32_t* tgt            # (P, W)
    uint8_t* keep           # (P, W)
    int32_t* holes          # (P,)
    const int32_t* gid      # (M,)
    const int32_t* gstart   # (G + 1,)
    const int32_t* gmem     # (sum of group sizes,)
    int32_t* mcap           # (R_fill, M)
    int32_t* gcap           # (R_fill, G)
    int32_t* excess         # (M,)
    int32_t* lack           # (R_fill, M)
    int32_t* filled         # (P,)
    uint8_t* in_filled      # (P,)
    int64_t* gmark          # (G,)
    int64_t stamp


cdef void mark_row_groups(Work* w, const int32_t* trow) noexcept nogil:
    cdef intp_t i
    w.stamp += 1
    for i in range(w.W):
        if trow[i] >= 0:
            w.gmark[w.gid[trow[i]]] = w.stamp


cdef bint try_swap(Work* w, intp_t p, intp_t r, intp_t nfilled) noexcept nogil:
    """Stuck slot (p, r): take the member of another row q at index r (filled rows
    newest first, then the others) and give q a member of a group with capacity."""
    cdef intp_t W = w.W, G = w.G, k, q, g
    cdef int32_t* mcap = w.mcap + r * w.M
    cdef int32_t* gcap = w.gcap + r * G
    cdef int32_t* trow = w.tgt + p * W
    cdef int32_t* qrow
    cdef int32_t mh, mg
    cdef int mv
    cdef bint any_open = False
    for g in range(G):
        if gcap[g] > 0:
            any_open = True
            break
    if not any_open:
        return False
    for k in range(nfilled + w.P):
        if k < nfilled:
            q = w.filled[nfilled - 1 - k]
        else:
            q = k - nfilled
            if w.in_filled[q]:
                continue
        if q == p:
            continue
        qrow = w.tgt + q * W
        mh = qrow[r]
        if mh < 0:
            continue
        qrow[r] = -1
        if not placeable(w.cur + p * W, trow, W, w.gid, mh, r):
            qrow[r] = mh
            continue
        for g in range(G):
            if gcap[g] <= 0:
                continue
            mg = best_member(w.cur + q * W, qrow, W, w.gid, w.gstart, w.gmem, mcap,
                             <int32_t>g, q, r, True, &mv)
            if mg < 0:
                continue
            qrow[r] = mg
            trow[r] = mh
            mcap[mg] -= 1
            gcap[g] -= 1
            w.keep[q * W + r] = 0
            return True
        qrow[r] = mh
    return False


cdef void arrange_c(Work* w) noexcept nogil:
    cdef intp_t P = w.P, W = w.W, M = w.M, G = w.G, R_fill = w.R_fill
    cdef intp_t p, r, k, g, nfilled
    cdef int32_t m, best, cand
    cdef int64_t left, best_cap
    cdef int mv, best_mv
    cdef uint32_t h, best_h
    cdef const int32_t* crow
    cdef int32_t* trow
    cdef int32_t* mcap
    cdef int32_t* gcap
    # 1. keepable slots and holes per row
    for p in range(P):
        w.holes[p] = 0
        w.stamp += 1
        for r in range(W):
            w.keep[p * W + r] = 0
        for r in range(R_fill):
            m = w.cur[p * W + r]
            if m >= 0 and w.gid[m] >= 0 and w.gmark[w.gid[m]] != w.stamp:
                w.gmark[w.gid[m]] = w.stamp
                w.keep[p * W + r] = 1
            else:
                w.holes[p] += 1
    # 2. free the excess over member quotas: first in rows where the member can move to
    #    a hole at an index where it lacks slots, then in rows with the fewest holes
    for k in range(R_fill * M):
        w.lack[k] = w.mcap[k]
    for p in range(P):
        for r in range(R_fill):
            if w.keep[p * W + r]:
                w.lack[r * M + w.cur[p * W + r]] -= 1
    for r in range(R_fill):
        left = 0
        for m in range(M):
            w.excess[m] = -w.lack[r * M + m]
            if w.excess[m] < 0:
                w.excess[m] = 0
            left += w.excess[m]
        for p in range(P):
            if left == 0:
                break
            m = w.cur[p * W + r]
            if not w.keep[p * W + r] or w.excess[m] == 0:
                continue
            for k in range(R_fill):
                if k != r and not w.keep[p * W + k] and w.lack[k * M + m] > 0:
                    w.lack[k * M + m] -= 1
                    w.excess[m] -= 1
                    left -= 1
                    w.keep[p * W + r] = 0
                    w.holes[p] += 1
                    break
        for k in range(R_fill):
            if left == 0:
                break
            for p in range(P):
                if w.keep[p * W + r] and w.holes[p] == k:
                    m = w.cur[p * W + r]
                    if w.excess[m] > 0:
                        w.excess[m] -= 1
                        left -= 1
                        w.keep[p * W + r] = 0
                        w.holes[p] += 1
    # 3. kept slots and capacities
    for p in range(P):
        for r in range(W):
            if w.keep[p * W + r]:
                m = w.cur[p * W + r]
                w.tgt[p * W + r] = m
                w.mcap[r * M + m] -= 1
            else:
                w.tgt[p * W + r] = -1
    for r in range(R_fill):
        for g in range(G):
            left = 0
            for k in range(w.gstart[g], w.gstart[g + 1]):
                left += w.mcap[r * M + w.gmem[k]]
            w.gcap[r * G + g] = <int32_t>left
    # 4. fill holes index by index
    for r in range(R_fill):
        mcap = w.mcap + r * M
        gcap = w.gcap + r * G
        nfilled = 0
        for p in range(P):
            w.in_filled[p] = 0
        for p in range(P):
            trow = w.tgt + p * W
            if trow[r] != -1:
                continue
            crow = w.cur + p * W
            mark_row_groups(w, trow)
            best = -1
            best_mv = 0; best_cap = 0; best_h = 0
            for g in range(G):
                if gcap[g] <= 0 or w.gmark[g] == w.stamp:
                    continue
                cand = best_member(crow, trow, W, w.gid, w.gstart, w.gmem, mcap,
                                   <int32_t>g, p, r, True, &mv)
                if cand < 0:
                    continue
                h = mix(p, r, g)
                if best < 0 or key_less(mv, gcap[g], h, best_mv, best_cap, best_h):
                    best = cand; best_mv = mv; best_cap = gcap[g]; best_h = h
            if best < 0:
                if try_swap(w, p, r, nfilled):
                    w.filled[nfilled] = <int32_t>p
                    nfilled += 1
                    w.in_filled[p] = 1
                    continue
                mark_row_groups(w, trow)
                best_cap = 0; best_h = 0
                for g in range(G):
                    if w.gmark[g] == w.stamp:
                        continue
                    cand = best_member(crow, trow, W, w.gid, w.gstart, w.gmem, mcap,
                                       <int32_t>g, p, r, False, &mv)
                    if cand < 0:
                        continue
                    h = mix(p, r, g)
                    if best < 0 or key_less(0, gcap[g], h, 0, best_cap, best_h):
                        best = cand; best_cap = gcap[g]; best_h = h
            if best >= 0:
                trow[r] = best
                mcap[best] -= 1
                gcap[w.gid[best]] -= 1
                w.filled[nfilled] = <int32_t>p
                nfilled += 1
                w.in_filled[p] = 1


def arrange(const int32_t[:, ::1] cur, const int32_t[::1] gid, intp_t G, intp_t R_fill,
            const int32_t[:, ::1] mq, const int32_t[::1] gstart, const int32_t[::1] gmem):
    """Target table ndarray[int32] (P, W) for prepared input (see arrangement.py)."""
    cdef intp_t P = cur.shape[0], W = cur.shape[1], M = gid.shape[0]
    out = np.empty((P, W), dtype=np.int32)
    keep = np.zeros(P * W + 1, dtype=np.uint8)
    holes = np.zeros(P + 1, dtype=np.int32)
    mcap = np.ascontiguousarray(mq, dtype=np.int32).copy().reshape(-1)
    mcap = np.concatenate([mcap, np.zeros(1, dtype=np.int32)])
    gcap = np.zeros(R_fill * G + 1, dtype=np.int32)
    excess = np.zeros(M + 1, dtype=np.int32)
    lack = np.zeros(R_fill * M + 1, dtype=np.int32)
    filled = np.zeros(P + 1, dtype=np.int32)
    in_filled = np.zeros(P + 1, dtype=np.uint8)
    gmark = np.zeros(G + 1, dtype=np.int64)
    cdef int32_t[:, ::1] o = out
    cdef uint8_t[::1] keep_v = keep
    cdef int32_t[::1] holes_v = holes, mcap_v = mcap, gcap_v = gcap, excess_v = excess
    cdef int32_t[::1] lack_v = lack
    cdef int32_t[::1] filled_v = filled
    cdef uint8_t[::1] in_filled_v = in_filled
    cdef int64_t[::1] gmark_v = gmark
    cdef Work w
    if P == 0:
        return out
    w.P = P; w.W = W; w.M = M; w.G = G; w.R_fill = R_fill
    w.cur = &cur[0, 0]
    w.tgt = &o[0, 0]
    w.keep = &keep_v[0]
    w.holes = &holes_v[0]
    w.gid = &gid[0]
    w.gstart = &gstart[0]
    w.gmem = &gmem[0]
    w.mcap = &mcap_v[0]
    w.gcap = &gcap_v[0]
    w.excess = &excess_v[0]
    w.lack = &lack_v[0]
    w.filled = &filled_v[0]
    w.in_filled = &in_filled_v[0]
    w.gmark = &gmark_v[0]
    w.stamp = 0
    with nogil:
        arrange_c(&w)
    return out


# ---------------------------------------------------------------------------- cycles
cdef bint row_has_cycle(const int32_t* c, const int32_t* t, intp_t W) noexcept nogil:
    """DESIGN section 4 for one row (same width W)."""
    cdef intp_t i, k, step, j
    for i in range(W):
        if c[i] < 0 or t[i] < 0 or c[i] == t[i]:
            continue
        k = i
        for step in range(W):
            if c[k] < 0:
                break
            j = pos_in(t, W, c[k])
            if j < 0:
                break
            k = j
            if c[k] == t[i]:
                return True
    return False


def cycle_rows(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt):
    """ndarray[bool] (P,): rows of equal-width tables that form a cycle."""
    cdef intp_t P = cur.shape[0], W = cur.shape[1], p
    out = np.zeros(P, dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    with nogil:
        for p in range(P):
            o[p] = row_has_cycle(&cur[p, 0], &tgt[p, 0], W)
    return out


# ---------------------------------------------------------------------------- report
def report_counts(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt, intp_t M):
    """Return ``(slot_changes, cur_counts (W, M), tgt_counts (W, M))`` for equal-width tables."""
    cdef intp_t P = cur.shape[0], W = cur.shape[1], p, r
    cdef int64_t changes = 0
    cdef int32_t a, b
    cc = np.zeros((W, M + 1), dtype=np.int32)
    tc = np.zeros((W, M + 1), dtype=np.int32)
    cdef int32_t[:, ::1] ccv = cc, tcv = tc
    with nogil:
        for p in range(P):
            for r in range(W):
                a = cur[p, r]
                b = tgt[p, r]
                if a != b:
                    changes += 1
                if a >= 0:
                    ccv[r, a] += 1
                if b >= 0:
                    tcv[r, b] += 1
    return changes, cc[:, :M], tc[:, :M]
