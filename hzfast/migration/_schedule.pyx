"""The schedule kernel: rounds of Hazelcast 4.1's parallel migration loop, every
migration one time unit (docs/design.md section 6)."""
import numpy as np

from hzfast._types cimport uint8_t, int32_t, intp_t, S_OK
from hzfast.migration._decisions cimport (Columns, apply_step, check_decision, columns_of,
                                         unapply_step)


cdef int unapply_c(int32_t[:, ::1] rows, const Columns* c) noexcept nogil:
    """Undo the plan, last decision first, turning its final table into its initial one.
    Returns a status (an out-of-range decision). Never raises."""
    cdef intp_t k, P = rows.shape[0]
    cdef int R = <int>rows.shape[1], st
    for k in range(c.n - 1, -1, -1):
        st = check_decision(c, k, P, R, -1)
        if st != S_OK:
            return st
        unapply_step(c, k, &rows[c.pid[k], 0])
    return S_OK


cdef intp_t schedule_c(int32_t[:, ::1] rows, const Columns* c, const uint8_t[::1] inst,
                       int32_t limit, int32_t[::1] endpoint, intp_t[::1] qidx,
                       intp_t[::1] runs, int32_t[::1] cnt, int32_t[::1] start) noexcept nogil:
    """Rounds of parallel execution, every migration one time unit.

    ``rows`` = the initial table (modified: it ends as the final table). Returns the
    number of rounds, or -1 on an out-of-range partition, index or member (members must
    be < ``cnt.shape[0]``). Never raises.
    """
    cdef intp_t N = c.n, P = rows.shape[0], M = cnt.shape[0]
    cdef int R = <int>rows.shape[1]
    cdef intp_t k, a, b, nruns = 0, nq = 0, r, w, rounds = 0, h, full
    cdef int32_t s, d
    cdef int32_t* row
    # pass 1: per run of equal partition ids, instant decisions at once, the others
    # queued with their source endpoint (source if sci == 0, else the owner then)
    a = 0
    while a < N:
        b = a
        while b < N and c.pid[b] == c.pid[a]:
            b += 1
        runs[2 * nruns] = nq
        for k in range(a, b):
            if check_decision(c, k, P, R, M) != S_OK:
                return -1
            row = &rows[c.pid[k], 0]
            if inst[k]:
                start[k] = -1
            else:
                endpoint[k] = c.src[k] if c.sci[k] == 0 else row[0]
                start[k] = -2
                qidx[nq] = k
                nq += 1
            apply_step(c, k, row)
        runs[2 * nruns + 1] = nq
        if runs[2 * nruns + 1] > runs[2 * nruns]:
            nruns += 1
        a = b
    # pass 2: rounds; each round scans the non-empty queues in order
    while nruns > 0:
        for h in range(M):
            cnt[h] = 0
        full = 0
        w = 0
        for r in range(nruns):
            if full < M:      # once every member is at the limit nothing else can start
                k = qidx[runs[2 * r]]
                d = c.dst[k]
                s = endpoint[k]
                if (d < 0 or cnt[d] < limit) and (s < 0 or cnt[s] < limit):
                    start[k] = <int32_t>rounds
                    if d >= 0:
                        cnt[d] += 1
                        full += cnt[d] == limit
                    if s >= 0 and s != d:
                        cnt[s] += 1
                        full += cnt[s] == limit
                    runs[2 * r] += 1
            if runs[2 * r] < runs[2 * r + 1]:
                runs[2 * w] = runs[2 * r]
                runs[2 * w + 1] = runs[2 * r + 1]
                w += 1
        nruns = w
        rounds += 1
    return rounds


def schedule(int32_t[:, ::1] rows, const int32_t[:, :] columns, const uint8_t[::1] inst,
             int32_t limit, intp_t member_count, bint from_final):
    """Schedule the (7, N) column block's decisions. ``rows``: a private copy of the
    initial table, or of the final table when ``from_final`` (it is undone first).
    Returns ``(rounds, start)``; ``rounds == -1`` reports an out-of-range partition,
    index or member."""
    cdef Columns c = columns_of(columns)
    cdef intp_t N = c.n, rounds
    start_arr = np.empty(N, dtype=np.int32)
    endpoint_arr = np.empty(N, dtype=np.int32)
    qidx_arr = np.empty(N, dtype=np.intp)
    runs_arr = np.empty(2 * N + 2, dtype=np.intp)
    cnt_arr = np.zeros(max(member_count, 1), dtype=np.int32)
    cdef int32_t[::1] st = start_arr, ep = endpoint_arr, cn = cnt_arr
    cdef intp_t[::1] qi = qidx_arr, ru = runs_arr
    with nogil:
        if from_final and unapply_c(rows, &c) != S_OK:
            rounds = -1
        else:
            rounds = schedule_c(rows, &c, inst, limit, ep, qi, ru, cn, st)
    return rounds, start_arr
