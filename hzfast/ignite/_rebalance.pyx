"""Ignite's coordinator decision per partition (docs/design.md §9.5): the maximum counter and
its owners, the historical suppliers, the owners reset to MOVING, and per MOVING copy a
historical or full rebalance with its supplier.

Every entry point trusts its arguments: :mod:`hzfast.ignite.exchange` validates a private
snapshot of them first (state codes in 0..4, counters and sizes ``>= 0``, history ``>= -1``,
shapes (N, P), ``sizes`` of shape (N, P) or (1, P)).
"""
import numpy as np

from libc.string cimport memcpy, memset

from hzfast._types cimport int8_t, int32_t, int64_t, uint8_t, intp_t

# GridDhtPartitionState ordinals
cdef enum:
    MOVING = 0
    OWNING = 1
    LOST = 4

# rebalance kinds
cdef enum:
    KIND_NONE = 0
    KIND_HISTORICAL = 1
    KIND_FULL = 2

cdef int64_t INT64_MAX_C = 0x7FFFFFFFFFFFFFFF

# What the gather found wrong with a cell (first in block, row, column order). Not
# hzfast._types.Status, whose codes describe replica tables.
cdef enum Problem:
    FINE = 0
    BAD_STATE = 1        # a state code outside 0..4
    BAD_COUNTER = 2      # a negative counter
    BAD_HISTORY = 3      # a history counter below -1
    BAD_SIZE = 4         # a negative size

PROBLEM_BAD_STATE = BAD_STATE
PROBLEM_BAD_COUNTER = BAD_COUNTER
PROBLEM_BAD_HISTORY = BAD_HISTORY
PROBLEM_BAD_SIZE = BAD_SIZE

#: partitions per block: a block of every row is copied (memcpy) into private node-major
#: buffers, checked, decided column by column, and its outputs copied back row by row.
cdef enum:
    BLOCK_C = 512
    # row pitch of the block buffers: not a power of two, so that the N values of one
    # column do not all fall into the same L1 cache set (4K aliasing)
    PITCH_C = BLOCK_C + 8

BLOCK = BLOCK_C


cdef inline void decide(intp_t p, intp_t j, intp_t N, int8_t* st, const int64_t* cn,
                        const int64_t* h, bint has_history, const int64_t* sz, intp_t szstep,
                        bint has_sizes, const uint8_t* reset, int64_t threshold, bint prefer,
                        int64_t* max_out, uint8_t* own, int8_t* kind, int32_t* sup_node,
                        int64_t* from_c, int64_t* sf, int64_t* nm, intp_t* sups,
                        intp_t* owners, intp_t* live) noexcept nogil:
    """The decision for partition ``p``, column ``j`` of the block buffers (node ``n`` at
    ``n * PITCH_C + j``; sizes at ``n * szstep + j``, ``szstep`` 0 when shared). ``st`` is
    changed (§9.5.3). Outputs hold their defaults (own 0, kind NONE, -1) on entry; only
    the others are written. Scratch ``nm``, ``sups``, ``owners``, ``live`` hold N values."""
    cdef int64_t mx = -1, c, c0, t, size_p, own_size
    cdef intp_t first = -1, n, o, k, m, q, nl = 0, nnm = 0, nsup = 0, nown = 0, pick
    # §9.5.1: the OWNING and MOVING copies, the maximum OWNING counter, its first owner
    for n in range(N):
        q = n * PITCH_C + j
        if st[q] == OWNING:
            live[nl] = n
            nl += 1
            if cn[q] > mx:
                mx = cn[q]
                first = n
        elif st[q] == MOVING:
            live[nl] = n
            nl += 1
    max_out[0] = mx
    if first < 0:
        return                   # no OWNING copy: nothing to supply, MOVING copies own
    # the max owners, and nonMax = {c of OWNING/MOVING copies : 0 < c < max}, sorted, distinct
    for k in range(nl):
        q = live[k] * PITCH_C + j
        c = cn[q]
        if c == mx and st[q] == OWNING:
            own[q] = 1
        elif c > 0 and c < mx:
            o = nnm
            while o > 0 and nm[o - 1] > c:
                o -= 1
            if o == 0 or nm[o - 1] != c:
                m = nnm
                while m > o:
                    nm[m] = nm[m - 1]
                    m -= 1
                nm[o] = c
                nnm += 1
    # §9.5.2: each max owner with reserved history supplies from the least counter c of
    # nonMax with c >= h and max - c < size (c >= max - size + 1: monotone in c)
    if has_history and nnm:
        size_p = sz[first * szstep + j] if has_sizes else INT64_MAX_C
        for k in range(nl):
            o = live[k]
            q = o * PITCH_C + j
            if not own[q] or h[q] < 0:
                continue
            if prefer:
                t = h[q]
            else:
                own_size = sz[o * szstep + j] if has_sizes else INT64_MAX_C
                if own_size <= threshold:
                    continue     # a copy this small reserves no history
                t = mx - size_p + 1
                if t < h[q]:
                    t = h[q]
            for m in range(nnm):
                if nm[m] >= t:
                    sf[q] = nm[m]
                    sups[nsup] = o
                    nsup += 1
                    break
    # §9.5.3: OWNING copies behind the maximum become MOVING where reset allows
    for k in range(nl):
        n = live[k]
        q = n * PITCH_C + j
        if st[q] == OWNING:
            if not own[q] and reset[n]:
                st[q] = MOVING
            else:
                owners[nown] = n
                nown += 1
    # §9.5.4: every MOVING copy picks its supplier
    for k in range(nl):
        q = live[k] * PITCH_C + j
        if st[q] != MOVING:
            continue
        c0 = cn[q]
        m = 0
        for o in range(nsup):
            if sf[sups[o] * PITCH_C + j] <= c0:
                m += 1
        if m:
            pick = p % m
            for o in range(nsup):
                if sf[sups[o] * PITCH_C + j] <= c0:
                    if pick == 0:
                        break
                    pick -= 1
            kind[q] = KIND_HISTORICAL
            sup_node[q] = <int32_t>sups[o]
            from_c[q] = c0
        elif nown:
            kind[q] = KIND_FULL
            sup_node[q] = <int32_t>owners[p % nown]


cdef inline intp_t first_bad_cell(const int8_t* st, const int64_t* a, int64_t lo,
                                  intp_t nb) noexcept nogil:
    """First j < nb with ``st[j]`` not a state code (if ``st``) or ``a[j] < lo``; -1."""
    cdef intp_t j
    cdef bint bad = False
    for j in range(nb):          # branch-free scan first (vectorizes), then locate
        bad |= a[j] < lo
        if st != NULL:
            bad |= <uint8_t>st[j] > LOST
    if not bad:
        return -1
    for j in range(nb):
        if a[j] < lo or (st != NULL and <uint8_t>st[j] > LOST):
            return j
    return -1


cdef int rebalance_c(const int8_t[:, ::1] states, const int64_t[:, ::1] counters,
                     const int64_t[:, ::1] history, bint has_history,
                     const int64_t[:, ::1] sizes, bint has_sizes,
                     const uint8_t[::1] reset, int64_t threshold, bint prefer,
                     int64_t[::1] max_counter, uint8_t[:, ::1] max_owner,
                     int8_t[:, ::1] kind, int32_t[:, ::1] supplier,
                     int64_t[:, ::1] from_counter,
                     int8_t* lst, int64_t* lcn, int64_t* lh, int64_t* lsz, uint8_t* lown,
                     int8_t* lkind, int32_t* lsup, int64_t* lfrom, int64_t* lsf, int64_t* nm,
                     intp_t* sups, intp_t* owners, intp_t* live, intp_t* bad) noexcept nogil:
    """Every partition's decision, block by block. Block buffers hold N * PITCH_C values,
    node-major (node n, column j at ``n * PITCH_C + j``); nm, sups, owners, live hold N.

    Each input cell is read once, into the private block buffers, and checked there before
    any decision uses it. Returns FINE, or the Problem of the first bad cell found (blocks
    in order, then rows) with its (node, partition) in ``bad[0], bad[1]``; the outputs are
    then incomplete.
    """
    cdef intp_t N = states.shape[0], P = states.shape[1], p0 = 0, nb, j, n, q, r
    cdef bint size_rows = has_sizes and sizes.shape[0] > 1
    cdef intp_t szstep = PITCH_C if size_rows else 0
    cdef intp_t cells = N * PITCH_C
    while p0 < P:
        nb = P - p0 if P - p0 < BLOCK_C else BLOCK_C
        for n in range(N):                       # copy this block of every row, check it
            q = n * PITCH_C
            memcpy(&lst[q], &states[n, p0], nb)
            memcpy(&lcn[q], &counters[n, p0], nb * sizeof(int64_t))
            r = first_bad_cell(&lst[q], &lcn[q], 0, nb)
            if r >= 0:
                bad[0] = n
                bad[1] = p0 + r
                return BAD_STATE if <uint8_t>lst[q + r] > LOST else BAD_COUNTER
            if has_history:
                memcpy(&lh[q], &history[n, p0], nb * sizeof(int64_t))
                r = first_bad_cell(NULL, &lh[q], -1, nb)
                if r >= 0:
                    bad[0] = n
                    bad[1] = p0 + r
                    return BAD_HISTORY
            if size_rows or (has_sizes and n == 0):
                memcpy(&lsz[q], &sizes[n, p0], nb * sizeof(int64_t))
                r = first_bad_cell(NULL, &lsz[q], 0, nb)
                if r >= 0:
                    bad[0] = n
                    bad[1] = p0 + r
                    return BAD_SIZE
        memset(lown, 0, cells)                   # the defaults: no owner, NONE, -1
        memset(lkind, KIND_NONE, cells)
        memset(lsup, 0xFF, cells * sizeof(int32_t))
        memset(lfrom, 0xFF, cells * sizeof(int64_t))
        memset(lsf, 0xFF, cells * sizeof(int64_t))   # suppliers' counters (scratch)
        for j in range(nb):
            decide(p0 + j, j, N, lst, lcn, lh, has_history, lsz, szstep, has_sizes,
                   &reset[0], threshold, prefer, &max_counter[p0 + j], lown, lkind, lsup,
                   lfrom, lsf, nm, sups, owners, live)
        for n in range(N):                       # write the block of every row back
            q = n * PITCH_C
            memcpy(&max_owner[n, p0], &lown[q], nb)
            memcpy(&kind[n, p0], &lkind[q], nb)
            memcpy(&supplier[n, p0], &lsup[q], nb * sizeof(int32_t))
            memcpy(&from_counter[n, p0], &lfrom[q], nb * sizeof(int64_t))
        p0 += nb
    return FINE


def rebalance(const int8_t[:, ::1] states, const int64_t[:, ::1] counters,
              const int64_t[:, ::1] history, bint has_history,
              const int64_t[:, ::1] sizes, bint has_sizes, const uint8_t[::1] reset,
              int64_t threshold, bint prefer, int64_t[::1] max_counter,
              uint8_t[:, ::1] max_owner, int8_t[:, ::1] kind, int32_t[:, ::1] supplier,
              int64_t[:, ::1] from_counter):
    """Write the decision of every partition into the outputs (every cell; see
    :func:`hzfast.ignite.rebalance.rebalance_plan`). Needs N >= 1 and P >= 1; ``history`` is
    (N, P) when ``has_history``, ``sizes`` (N, P) or (1, P) when ``has_sizes``; shapes
    checked by the caller.

    Returns ``(problem, node, partition)``: ``(0, -1, -1)``, or the first bad cell (the
    outputs are then incomplete and must be discarded).
    """
    cdef intp_t N = states.shape[0]
    cdef intp_t cells = N * PITCH_C
    cdef int8_t[::1] lst = np.empty(cells, np.int8)
    cdef int8_t[::1] lkind = np.empty(cells, np.int8)
    cdef uint8_t[::1] lown = np.empty(cells, np.uint8)
    cdef int32_t[::1] lsup = np.empty(cells, np.int32)
    cdef int64_t[::1] lcn = np.empty(cells, np.int64)
    cdef int64_t[::1] lh = np.empty(cells, np.int64)
    cdef int64_t[::1] lsz = np.empty(cells, np.int64)
    cdef int64_t[::1] lfrom = np.empty(cells, np.int64)
    cdef int64_t[::1] lsf = np.empty(cells, np.int64)
    cdef int64_t[::1] nm = np.empty(N, np.int64)
    cdef intp_t[::1] sups = np.empty(N, np.intp)
    cdef intp_t[::1] owners = np.empty(N, np.intp)
    cdef intp_t[::1] live = np.empty(N, np.intp)
    cdef intp_t bad[2]
    cdef int problem
    bad[0] = bad[1] = -1
    with nogil:
        problem = rebalance_c(states, counters, history, has_history, sizes, has_sizes,
                              reset, threshold, prefer, max_counter, max_owner, kind, supplier,
                              from_counter, &lst[0], &lcn[0], &lh[0], &lsz[0],
                              &lown[0], &lkind[0], &lsup[0], &lfrom[0], &lsf[0], &nm[0],
                              &sups[0], &owners[0], &live[0], bad)
    return problem, bad[0], bad[1]
