"""Arrangement kernels: repair, the arranger (keepable counts, then the target), report counts.

Every ``def`` here trusts its input: ``hzfast.arrangement`` validates (dtype, shape, member
indices in ``[-1, M)``, quotas consistent) before calling. The arranger is a transliteration
of ``hzfast.reference.arrangement.arrange_core`` (same steps, same tie-breaks); its
augmenting searches for stuck slots run, once an index has a few, on an index of the
holders at that index (docs/design.md §8.5 "Stuck, fast"): the same paths, found without
reading every row.

Threads (docs/design.md §8.8): the arranger's per-row passes (the scan of step 1, the hole
lists) split the rows into ``chunks`` contiguous chunks, each written only by its own
thread (OpenMP ``prange``, when compiled with it; one after the other otherwise); the
counts are summed per chunk, and the hole lists are laid out chunk by chunk, so every
result is the same for any number of chunks. The fill (step 4) is sequential: each slot
depends on the capacities left by the slots before it.
"""
cimport cython
import numpy as np

from cython.parallel cimport prange

from hzfast._types cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, intp_t
from hzfast._rows cimport ROW_SLOTS, RowLoader, load_row8, loader_init
from hzfast._cycles cimport closes_cycle, row_is_cyclic


# ---------------------------------------------------------------------------- repair
cdef void repair_c(const int32_t[:, ::1] reps, const uint8_t[::1] alive,
                   const int32_t[::1] versions, int32_t[:, ::1] out,
                   int32_t[::1] vout, intp_t lo, intp_t hi) noexcept nogil:
    """Rows lo..hi-1: empty dead slots (+1 version each); promote first backup if owner
    empty (+2). Versions wrap as Java ints do (unsigned arithmetic: defined in C)."""
    cdef intp_t p, i, R = reps.shape[1]
    cdef int32_t m
    cdef uint32_t v
    for p in range(lo, hi):
        v = <uint32_t>versions[p]
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
        vout[p] = <int32_t>v


def repair(const int32_t[:, ::1] reps, const uint8_t[::1] alive, const int32_t[::1] versions,
           intp_t chunks=1):
    """Return new ``(replicas, versions)`` after removing dead members and promoting; the
    rows in ``chunks`` (>= 1) contiguous chunks (threads with OpenMP), same result."""
    cdef intp_t P = reps.shape[0], R = reps.shape[1], t, T = chunks
    out = np.empty((P, R), dtype=np.int32)
    vout = np.empty(P, dtype=np.int32)
    cdef int32_t[:, ::1] o = out
    cdef int32_t[::1] vo = vout
    if T == 1:
        with nogil:
            repair_c(reps, alive, versions, o, vo, 0, P)
    else:
        for t in prange(T, nogil=True, num_threads=T, schedule="static", chunksize=1):
            repair_c(reps, alive, versions, o, vo, chunk_lo(t, T, P), chunk_lo(t + 1, T, P))
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


cdef inline intp_t start_of(uint32_t s, intp_t n) noexcept nogil:
    """Tie-break start in 0..n-1 for hash s: (s * n) >> 32 (no division)."""
    return <intp_t>((<uint64_t>s * <uint64_t>n) >> 32)


cdef inline uint32_t rot(intp_t x, uint32_t s, intp_t n) noexcept nogil:
    """Position of x in the cyclic order of 0..n-1 starting at start_of(s, n)."""
    cdef intp_t st = start_of(s, n)
    return <uint32_t>(x - st if x >= st else x - st + n)


cdef inline intp_t pos_in(const int32_t* row, intp_t W, int32_t m) noexcept nogil:
    """Index of member m (>= 0) in a row of width W, or -1. Cannot fail."""
    cdef intp_t i
    for i in range(W):
        if row[i] == m:
            return i
    return -1


cdef bint placeable(const int32_t* crow, const int32_t* trow, intp_t W,
                    const int32_t* gid, int32_t m, intp_t r, bint check_cycle=True) noexcept nogil:
    """m may take slot r: its group is not elsewhere in the target row, and (when
    check_cycle) the move closes no cycle."""
    cdef intp_t i, j
    cdef int32_t g = gid[m], x
    for i in range(W):
        x = trow[i]
        if i != r and x >= 0 and gid[x] == g:
            return False
    j = pos_in(crow, W, m)
    if check_cycle and j >= 0 and j != r and closes_cycle(crow, trow, <int>W, <int>r, m):
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
                         bint need_cap, int* is_move, intp_t M,
                         bint check_cycle=True) noexcept nogil:
    """Best member of group g for slot (p, r) by (-mcap, move, hash); -1 if none."""
    cdef intp_t a, j
    cdef int32_t m, best = -1
    cdef int mv, best_mv = 0
    cdef int64_t best_cap = 0
    cdef uint32_t h, best_h = 0
    cdef uint32_t s = mix(p, r, 0)
    for a in range(gstart[g], gstart[g + 1]):
        m = gmem[a]
        if need_cap and mcap[m] <= 0:
            continue
        if not placeable(crow, trow, W, gid, m, r, check_cycle):
            continue
        j = pos_in(crow, W, m)
        mv = 1 if (j >= 0 and j != r) else 0
        h = rot(m, s, M)
        if best < 0 or key_less(mv, mcap[m], h, best_mv, best_cap, best_h):
            best = m; best_mv = mv; best_cap = mcap[m]; best_h = h
    is_move[0] = best_mv
    return best


# ---------------------------------------------------------------------------- threads
cdef extern from *:
    """
    #ifdef _OPENMP
    #define HZ_ARRANGE_OPENMP 1
    #else
    #define HZ_ARRANGE_OPENMP 0
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    #define HZ_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #define HZ_POPCOUNT(x) __builtin_popcount((unsigned)(x))
    #else
    #define HZ_PREFETCH(p) ((void)(p))
    static int HZ_POPCOUNT(unsigned x) { int n = 0; while (x) { x &= x - 1; n++; } return n; }
    #endif
    """
    int HZ_ARRANGE_OPENMP
    void prefetch "HZ_PREFETCH"(const void* p) noexcept nogil
    int popcount "HZ_POPCOUNT"(unsigned x) noexcept nogil

#: True when this module was compiled with OpenMP (``chunks > 1`` then runs the per-row
#: passes on that many threads); without it the chunks run one after the other.
OPENMP = bool(HZ_ARRANGE_OPENMP)


cdef enum:
    PREFETCH_AHEAD = 8     # holes ahead whose rows the fill prefetches
    LEVEL_GROUPS = 8       # up to this many groups, the augmenting search runs on the index
    AUG_PLAIN = 4          # searches at an index before the index is made


cdef inline intp_t chunk_lo(intp_t t, intp_t T, intp_t P) noexcept nogil:
    """First row of chunk t of T (rows split into T contiguous, near-equal chunks)."""
    return <intp_t>((<int64_t>P * t) // T)


# ---------------------------------------------------------------------------- arranger
cdef struct Work:
    intp_t P, W, M, G, R_fill
    const int32_t* cur      # (P, W)
    int32_t* tgt            # (P, W)
    uint8_t* keep           # (P,) bit r set iff slot (p, r) is kept (r < R_fill <= 7)
    const int32_t* gid      # (M,)
    const int32_t* gstart   # (G + 1,)
    const int32_t* gmem     # (sum of group sizes,)
    int32_t* mcap           # (R_fill, M)
    int32_t* gcap           # (R_fill, G)
    int32_t* excess         # (M,)
    int32_t* lack           # (R_fill, M)
    int32_t* nlack          # (M,) number of indices where the member lacks slots
    int32_t* bg_start       # (G + 1,)
    int32_t* bg_fill        # (G,)
    int32_t* bg_rows        # (P,)
    int32_t* parent         # (P,)
    int32_t* queue          # (P,)
    int64_t* rmark          # (P,)
    int64_t* gvis           # (G,)
    int64_t* gmark          # (G,)
    int64_t* cmark          # (M,)
    int32_t* cpos           # (M,)
    int64_t stamp
    int cycle_fallback      # set when a cycle-closing member had to be placed
    int32_t* caphist        # (P + 2,) number of groups per positive capacity
    int64_t maxcap          # max(0, max_g gcap[g]) at the current index
    uint64_t* maxmask       # ((G + 63) // 64,) bit g set iff gcap[g] == maxcap > 0
    uint64_t* rowmask       # (P,) when G <= 64: bit g set iff group g is in target row p
    uint64_t posmask        # when G <= 64: bit g set iff gcap[g] > 0 at the current index
    bint use_rowmask        # G <= 64
    const int32_t* cnt      # (R_fill, M) keepable slots per index and member (keep_scan)
    int32_t* freed          # (R_fill, M) kept slots freed in step 2
    intp_t T                # row chunks of the per-row passes (threads with OpenMP)
    int64_t* hc             # (T, R_fill) holes per chunk and index, then their offsets
    int64_t* hstart         # (R_fill + 1,) where each index's holes start in hlist
    int32_t* hlist          # the holes (rows whose slot r is empty), index by index, rows
                            # ascending
    bint holes_exact        # the holes at the index being filled are exactly its rows whose
                            # slot is not kept (until a kept slot there moves)
    # the augmenting-path index of the index being filled (G <= 64; docs/design.md §8.5
    # "Stuck, fast"), made at its first stuck slot: valid while aug_r == r
    intp_t aug_r            # the index it is for, -1: none yet
    intp_t fill_idx         # the hlist position of the stuck row being searched for
    intp_t aug_pos          # the index knows the fill's holes before this hlist position
    uint8_t* ain            # (P,) the row is in the index's counts as a holder
    intp_t aug_calls        # searches at the index being filled so far (the index is
                            # made only after AUG_PLAIN of them: a few plain searches
                            # cost less than making it)
    intp_t nwords           # words per row bitmap: (P + 63) // 64
    uint64_t* lmask         # (P,) the groups row x lacks at its other indices (fixed while
                            # its index is filled: only that index's column changes)
    int32_t* lall           # (G, G) [g, k]: holders of g at r whose lmask has group k
    int32_t* lres           # (G, G) the same over the holders whose slot r is not kept
    uint64_t* uall          # (G,) bit k of g: lall[g, k] > 0
    uint64_t* ures          # (G,) bit k of g: lres[g, k] > 0
    bint use_levels         # G <= LEVEL_GROUPS: the whole search runs on the index, with
                            # the four arrays below (else only the counts above are kept)
    uint64_t* hbits         # (G, nwords) at least every holder of g at r that lacks an
                            # open group (more bits are dropped when read)
    intp_t* hfirst          # (G,) no set bit of g's bitmap below this word
    uint64_t* kbits         # (G, G, nwords) [g, k]: at least every holder of g at r that
                            # lacks group k (more bits are dropped when read)
    intp_t* kfirst          # (G, G) no set bit of [g, k]'s bitmap below this word


cdef inline bint kept(const Work* w, intp_t p, intp_t r) noexcept nogil:
    """Slot (p, r) is kept (r < R_fill)."""
    return (w.keep[p] >> r) & 1


cdef inline intp_t row_holes(const Work* w, intp_t p) noexcept nogil:
    """Indices < R_fill of row p that are not kept (step 2's holes of the row)."""
    return w.R_fill - popcount(w.keep[p])


cdef inline int32_t fast_member(const int32_t* crow, const int32_t* trow, intp_t W,
                                const int32_t* gstart, const int32_t* gmem,
                                const int64_t* cmark, const int32_t* cpos, int64_t stamp,
                                const int32_t* mcap, int32_t g, intp_t r, int* is_move,
                                intp_t sM, intp_t M) noexcept nogil:
    """best_member(need_cap=True) for a row marked as in arrange_c (gmark: the target
    row's groups, cmark/cpos: the current row's members, stamp ``stamp``), whose
    target row does not hold group g: same result, O(1) per member unless the member
    would move. ``sM = start_of(mix(p, r, 0), M)``; the tie-break position
    ``rot(m, s, M)`` is computed only when needed."""
    cdef intp_t a, a1 = gstart[g + 1]
    cdef int32_t m, best = -1, cm
    cdef int mv, best_mv = 0
    cdef int32_t best_cap = 0
    cdef intp_t h, best_h = 0
    for a in range(gstart[g], a1):
        m = gmem[a]
        cm = mcap[m]
        if cm <= 0:
            continue
        mv = 0
        if cmark[m] == stamp and cpos[m] != r:
            if closes_cycle(crow, trow, <int>W, <int>r, m):
                continue
            mv = 1
        if best < 0:
            best = m; best_mv = mv; best_cap = cm
            best_h = m - sM if m >= sM else m - sM + M
            continue
        if cm < best_cap or (cm == best_cap and mv > best_mv):
            continue
        h = m - sM if m >= sM else m - sM + M
        if cm > best_cap or mv < best_mv:
            best = m; best_mv = mv; best_cap = cm; best_h = h
            continue
        if h < best_h:
            best = m; best_h = h
    is_move[0] = best_mv
    return best


cdef inline int32_t group_best(Work* w, const int32_t* crow, const int32_t* trow, intp_t g,
                               intp_t r, const int32_t* mcap, bint stay_only, int* is_move,
                               int64_t* st, intp_t sM) noexcept nogil:
    """fast_member for slot (p, r) (crow, trow: p's rows) and group g (not in the target
    row): its best member, or -1; with ``stay_only`` -1 also when that member would move.
    ``st[0]``: the stamp of the current row's marks (cmark, cpos), 0 until a group of
    several members needs them (then this marks the row)."""
    cdef intp_t W = w.W, i, j
    cdef int32_t m
    cdef const int32_t* gstart = w.gstart
    if gstart[g + 1] - gstart[g] == 1:
        m = w.gmem[gstart[g]]
        if mcap[m] <= 0:
            return -1
        j = pos_in(crow, W, m)
        if j >= 0 and j != r:
            if stay_only or closes_cycle(crow, trow, <int>W, <int>r, m):
                return -1
            is_move[0] = 1
        else:
            is_move[0] = 0
        return m
    if st[0] == 0:
        w.stamp += 1
        st[0] = w.stamp
        for i in range(W):
            m = crow[i]
            if m >= 0:
                w.cmark[m] = st[0]
                w.cpos[m] = <int32_t>i
    m = fast_member(crow, trow, W, gstart, w.gmem, w.cmark, w.cpos, st[0], mcap,
                    <int32_t>g, r, is_move, sM, w.M)
    if stay_only and is_move[0]:
        return -1
    return m


cdef extern from *:
    int ctz64 "__builtin_ctzll"(unsigned long long x) noexcept nogil
    int ctz32 "__builtin_ctz"(unsigned x) noexcept nogil


cdef void build_maxmask(Work* w, const int32_t* gcap) noexcept nogil:
    """maxmask = the groups whose capacity equals w.maxcap (none when maxcap is 0)."""
    cdef intp_t g
    for g in range((w.G + 63) >> 6):
        w.maxmask[g] = 0
    if w.maxcap <= 0:
        return
    for g in range(w.G):
        if gcap[g] == w.maxcap:
            w.maxmask[g >> 6] |= (<uint64_t>1) << (g & 63)


cdef inline intp_t next_set(const uint64_t* mask, intp_t lo, intp_t hi) noexcept nogil:
    """First set bit of mask in [lo, hi), or -1."""
    cdef intp_t wi, b
    cdef uint64_t word
    if lo >= hi:
        return -1
    wi = lo >> 6
    word = mask[wi] & ((~(<uint64_t>0)) << (lo & 63))
    while True:
        if word:
            b = (wi << 6) + ctz64(word)
            return b if b < hi else -1
        wi += 1
        if (wi << 6) >= hi:
            return -1
        word = mask[wi]


cdef inline void dec_gcap(Work* w, int32_t* gcap, intp_t g) noexcept nogil:
    """gcap[g] -= 1, keeping the positive-capacity histogram, w.maxcap and w.maxmask
    current."""
    cdef int32_t c = gcap[g]
    cdef int64_t old = w.maxcap
    gcap[g] = c - 1
    if c == 1 and w.use_rowmask:
        w.posmask &= ~((<uint64_t>1) << g)
    if c > 0:
        w.caphist[c] -= 1
        if c > 1:
            w.caphist[c - 1] += 1
        if c == old:
            w.maxmask[g >> 6] &= ~((<uint64_t>1) << (g & 63))
            if w.caphist[c] == 0:
                # g was the last group at maxcap and now holds c - 1: the new maximum
                # (or 0, when c - 1 == 0)
                w.maxcap = c - 1
                build_maxmask(w, gcap)


cdef void mark_row_groups(Work* w, const int32_t* trow) noexcept nogil:
    cdef intp_t i
    w.stamp += 1
    for i in range(w.W):
        if trow[i] >= 0:
            w.gmark[w.gid[trow[i]]] = w.stamp


cdef inline const int32_t* scan_rows_at(Work* w, intp_t r, bint kept_ok,
                                       intp_t* n) noexcept nogil:
    """The rows a search at index r must scan, ascending: with ``kept_ok`` False only the
    rows whose slot r is not kept, i.e. the holes of index r (hlist) as long as no kept
    slot at r was moved (w.holes_exact); returns that list and its length in n, or NULL
    and n = P: every row q (its number is its position)."""
    if not kept_ok and w.holes_exact:
        n[0] = <intp_t>(w.hstart[r + 1] - w.hstart[r])
        return w.hlist + w.hstart[r]
    n[0] = w.P
    return NULL


cdef void build_rows_by_group(Work* w, intp_t p, intp_t r, bint kept_ok) noexcept nogil:
    """CSR (bg_start, bg_rows) of the rows q != p holding each group at index r (ascending
    rows; with ``kept_ok`` False only rows whose slot r was not kept)."""
    cdef intp_t W = w.W, G = w.G, q, g, a, n
    cdef int32_t m
    cdef const int32_t* rows = scan_rows_at(w, r, kept_ok, &n)
    for g in range(G + 1):
        w.bg_start[g] = 0
    for a in range(n):
        q = rows[a] if rows != NULL else a
        m = w.tgt[q * W + r]
        if q != p and m >= 0 and (kept_ok or not kept(w, q, r)):
            w.bg_start[w.gid[m] + 1] += 1
    for g in range(G):
        w.bg_start[g + 1] += w.bg_start[g]
    for g in range(G):
        w.bg_fill[g] = w.bg_start[g]
    for a in range(n):
        q = rows[a] if rows != NULL else a
        m = w.tgt[q * W + r]
        if q != p and m >= 0 and (kept_ok or not kept(w, q, r)):
            w.bg_rows[w.bg_fill[w.gid[m]]] = <int32_t>q
            w.bg_fill[w.gid[m]] += 1


cdef int32_t row_success(Work* w, intp_t x, intp_t r, int32_t* g_out) noexcept nogil:
    """The member that could take slot r of row x if x's slot r were empty (first group
    in ascending order with capacity and a fitting member), or -1. Pure: the row is
    restored before returning."""
    cdef intp_t W = w.W, g
    cdef int32_t* xrow = w.tgt + x * W
    cdef int32_t* mcap = w.mcap + r * w.M
    cdef int32_t* gcap = w.gcap + r * w.G
    cdef int32_t old = xrow[r], mg
    cdef int mv
    xrow[r] = -1
    for g in range(w.G):
        if gcap[g] <= 0:
            continue
        mg = best_member(w.cur + x * W, xrow, W, w.gid, w.gstart, w.gmem, mcap,
                         <int32_t>g, x, r, True, &mv, w.M)
        if mg >= 0:
            xrow[r] = old
            g_out[0] = <int32_t>g
            return mg
    xrow[r] = old
    return -1


cdef void apply_path(Work* w, intp_t x, intp_t r, int32_t mg, int32_t g) noexcept nogil:
    """Row x takes member mg at index r; every row on the parent chain shifts its
    member at r to its parent."""
    cdef intp_t W = w.W, y
    cdef int32_t incoming, out
    w.mcap[r * w.M + mg] -= 1
    dec_gcap(w, w.gcap + r * w.G, g)
    y = x
    incoming = mg
    while y != -1:
        out = w.tgt[y * W + r]
        w.tgt[y * W + r] = incoming
        if w.aug_r == r:               # the augmenting-path index follows
            if out >= 0:               # (else the stuck row: a new holder, not kept)
                aug_count(w, y, w.gid[out], -1, not kept(w, y, r))
            aug_count(w, y, w.gid[incoming], 1, True)
            aug_mark(w, y, w.gid[incoming])
            w.ain[y] = 1
        if kept(w, y, r):
            w.holes_exact = False      # a kept slot at r is not kept any more
            w.keep[y] &= ~(1 << r)
        if w.use_rowmask:      # a group is at most once in a target row
            if out >= 0:
                w.rowmask[y] &= ~((<uint64_t>1) << w.gid[out])
            w.rowmask[y] |= (<uint64_t>1) << w.gid[incoming]
        incoming = out
        y = w.parent[y]


cdef inline void aug_count(Work* w, intp_t x, intp_t g, int d, bint res) noexcept nogil:
    """Row x (its lmask) joins (d = 1) or leaves (d = -1) the holders of group g at the
    index being filled: all of them, and (``res``) those not kept."""
    cdef uint64_t b = w.lmask[x]
    cdef intp_t k, G = w.G
    while b:
        k = ctz64(b)
        b &= b - 1
        w.lall[g * G + k] += d
        if w.lall[g * G + k] == 0:
            w.uall[g] &= ~((<uint64_t>1) << k)
        else:
            w.uall[g] |= (<uint64_t>1) << k
        if res:
            w.lres[g * G + k] += d
            if w.lres[g * G + k] == 0:
                w.ures[g] &= ~((<uint64_t>1) << k)
            else:
                w.ures[g] |= (<uint64_t>1) << k


cdef inline void aug_mark(Work* w, intp_t x, intp_t g) noexcept nogil:
    """Row x now holds group g at the index being filled: its bit, if x lacks an open
    group."""
    cdef intp_t wi = x >> 6, k, j
    cdef uint64_t bit = (<uint64_t>1) << (x & 63), b
    if w.use_levels:
        if w.lmask[x] & w.posmask:
            w.hbits[g * w.nwords + wi] |= bit
            if wi < w.hfirst[g]:
                w.hfirst[g] = wi
        b = w.lmask[x]
        while b:
            k = ctz64(b)
            b &= b - 1
            j = g * w.G + k
            w.kbits[j * w.nwords + wi] |= bit
            if wi < w.kfirst[j]:
                w.kfirst[j] = wi


cdef void aug_catch_up(Work* w, intp_t r) noexcept nogil:
    """The index learns the holes the fill took since it last looked (hlist from aug_pos
    to the stuck row's position, fill_idx): each a new holder, not kept. (The fill itself
    does not stop for the index: the stuck rows are few.)"""
    cdef intp_t i, x
    cdef int32_t m
    for i in range(w.aug_pos, w.fill_idx):
        x = w.hlist[i]
        m = w.tgt[x * w.W + r]
        if m >= 0 and not w.ain[x]:
            aug_count(w, x, w.gid[m], 1, True)
            aug_mark(w, x, w.gid[m])
            w.ain[x] = 1
    w.aug_pos = w.fill_idx


cdef void aug_index(Work* w, intp_t r) noexcept nogil:
    """Make the augmenting-path index of index r from the table as it is."""
    cdef intp_t P = w.P, W = w.W, G = w.G, x, g, k
    cdef int32_t m
    cdef uint64_t every = (~(<uint64_t>0)) if G == 64 else (((<uint64_t>1) << G) - 1)
    for g in range(G):
        w.uall[g] = 0
        w.ures[g] = 0
    for k in range(G * G):
        w.lall[k] = 0
        w.lres[k] = 0
    if w.use_levels:
        for g in range(G):
            w.hfirst[g] = w.nwords
        for k in range(G * w.nwords):
            w.hbits[k] = 0
        for k in range(G * G):
            w.kfirst[k] = w.nwords
        for k in range(G * G * w.nwords):
            w.kbits[k] = 0
    for x in range(P):
        m = w.tgt[x * W + r]
        w.ain[x] = m >= 0
        if m < 0:              # slot r empty: rowmask holds the other indices' groups
            w.lmask[x] = every & ~w.rowmask[x]
            continue
        w.lmask[x] = every & ~(w.rowmask[x] & ~((<uint64_t>1) << w.gid[m]))
        aug_count(w, x, w.gid[m], 1, not kept(w, x, r))
        aug_mark(w, x, w.gid[m])
    w.aug_r = r
    w.aug_pos = w.fill_idx


cdef bint aug_hopeless(Work* w, intp_t p, bint kept_ok) noexcept nogil:
    """The search from stuck row p cannot succeed: it reaches only holders of the groups
    it explores, starting with those p lacks and adding those each reached row lacks;
    a row succeeds only if it lacks an open group. Over every holder of every group
    the search could explore (as if every member fitted everywhere), none lacks one."""
    cdef const uint64_t* u = w.uall if kept_ok else w.ures
    cdef uint64_t reach = w.lmask[p], seen = 0, b
    cdef intp_t g
    while reach & ~seen:
        b = reach & ~seen
        seen |= b
        while b:
            g = ctz64(b)
            b &= b - 1
            if u[g] & w.posmask:
                return False
            reach |= u[g]
    return True


cdef bint fits(Work* w, intp_t x, intp_t r, int32_t m) noexcept nogil:
    """placeable(m) in row x with x's slot r treated as empty (as the search reads it)."""
    cdef int32_t* xrow = w.tgt + x * w.W
    cdef int32_t old = xrow[r]
    cdef bint ok
    xrow[r] = -1
    ok = placeable(w.cur + x * w.W, xrow, w.W, w.gid, m, r)
    xrow[r] = old
    return ok


cdef intp_t aug_scan(Work* w, uint64_t* bits, intp_t* first, intp_t g, intp_t x, intp_t r,
                     bint succeed) noexcept nogil:
    """The first row, ascending, of a bitmap of holders of group g at r (``first``: no
    set bit below that word) that is placeable in row x (x's slot r treated as empty);
    with ``succeed``, the first that also succeeds (its path is applied, x its parent).
    Bits of rows that no longer hold g (or, with ``succeed``, lack no open group any
    more) are dropped on the way. Returns the row, or -1."""
    cdef intp_t W = w.W, wi, b, q, nw = w.nwords
    cdef uint64_t word
    cdef int32_t m, mg, sg = 0
    if w.gstart[g + 1] - w.gstart[g] == 1 and not fits(w, x, r, w.gmem[w.gstart[g]]):
        return -1              # one member, not placeable in x: no holder is
    wi = first[0]
    while wi < nw:
        word = bits[wi]
        while word:
            b = ctz64(word)
            word &= word - 1
            q = (wi << 6) + b
            m = w.tgt[q * W + r]
            if m < 0 or w.gid[m] != g or (succeed and not (w.lmask[q] & w.posmask)):
                bits[wi] &= ~((<uint64_t>1) << b)     # not (or no longer) a candidate
                continue
            if not fits(w, x, r, m):
                continue
            if not succeed:
                return q
            mg = row_success(w, q, r, &sg)
            if mg >= 0:
                w.parent[q] = <int32_t>x
                apply_path(w, q, r, mg, sg)
                return q
        if bits[wi] == 0 and wi == first[0]:
            first[0] = wi + 1
        wi += 1
    return -1


cdef inline bint aug_group(Work* w, intp_t x, intp_t r, intp_t g) noexcept nogil:
    """The search explores group g from row x (its parent chain set): of g's holders at r
    in ascending rows, each placeable in x's row is tested for success; only those that
    lack an open group can succeed, and hbits lists at least those. True when one
    succeeded (the path is applied)."""
    return aug_scan(w, w.hbits + g * w.nwords, w.hfirst + g, g, x, r, True) >= 0


cdef inline intp_t aug_first_lacking(Work* w, intp_t g, intp_t k, intp_t x,
                                     intp_t r) noexcept nogil:
    """The first row (ascending) of the holders of group g at r that are placeable in row
    x (x's slot r treated as empty) and lack group k, or -1."""
    cdef intp_t j = g * w.G + k
    return aug_scan(w, w.kbits + j * w.nwords, w.kfirst + j, g, x, r, False)


cdef bint aug_search(Work* w, intp_t p, intp_t r) noexcept nogil:
    """The augmenting search from stuck row p through every holder (kept ones too), on
    the index: the breadth-first search of :func:`augment` taken a group at a time. A
    group is explored once, from the first queued row that lacks it, and its holders
    placeable in that row join the queue in ascending order, each tested then; so the
    queue is a sequence of blocks (group, exploring row), and the rows of a block
    explore, in ascending order, the groups they lack and nobody explored yet: each such
    group from the block's first row that lacks it (at most G <= LEVEL_GROUPS blocks).
    True: a path is applied, the same as the full search's; False: none exists (the full
    search would fail too)."""
    cdef intp_t G = w.G, nb = 0, bi = 0, g, x, k, q, i, j, n
    cdef intp_t bg[LEVEL_GROUPS]
    cdef intp_t bx[LEVEL_GROUPS]
    cdef intp_t pos[LEVEL_GROUPS]
    cdef intp_t kk[LEVEL_GROUPS]
    cdef uint64_t every = (((<uint64_t>1) << G) - 1)
    cdef uint64_t visited = 0, b
    b = w.lmask[p]                     # p's slot r is empty: the groups not in its row
    while b:
        k = ctz64(b)
        b &= b - 1
        visited |= (<uint64_t>1) << k
        if aug_group(w, p, r, k):
            return True
        bg[nb] = k
        bx[nb] = p
        nb += 1
    while bi < nb:
        g = bg[bi]
        x = bx[bi]
        bi += 1
        n = 0
        b = every & ~visited
        while b:                       # each unexplored group: its first row here
            k = ctz64(b)
            b &= b - 1
            q = aug_first_lacking(w, g, k, x, r)
            if q < 0:
                continue
            i = n                      # insert, ordered by (row, group)
            while i > 0 and pos[i - 1] > q:
                pos[i] = pos[i - 1]
                kk[i] = kk[i - 1]
                i -= 1
            pos[i] = q
            kk[i] = k
            n += 1
        for j in range(n):
            q = pos[j]
            k = kk[j]
            visited |= (<uint64_t>1) << k
            w.parent[q] = <int32_t>x
            if aug_group(w, q, r, k):
                return True
            bg[nb] = k
            bx[nb] = q
            nb += 1
    return False


cdef bint augment(Work* w, intp_t p, intp_t r, bint kept_ok) noexcept nogil:
    """Stuck slot (p, r): breadth-first augmenting path over rows at index r (see the
    reference ``_augment``). Returns True when the slot was filled.

    Same result as the reference's BFS, which tests each row for success when it is
    dequeued: the test depends only on state the search does not change, so each row is
    tested when it is enqueued instead (same order, so the same first success and the
    same parent chain) and the search stops there. The rows-by-group lists are built
    only when the first group explored from p does not already give a success (the
    rows of that group are found by a direct ascending scan)."""
    cdef intp_t W = w.W, G = w.G, q, g, x, head = 0, tail = 0, a, i, n
    cdef const int32_t* rows
    cdef int32_t* xrow
    cdef int32_t old, mg, sg = 0
    cdef int64_t bstamp, gst
    cdef bint built = False, first_group
    w.stamp += 1
    bstamp = w.stamp                 # rows seen (rmark) and groups explored (gvis)
    w.rmark[p] = bstamp
    w.parent[p] = -1
    mg = row_success(w, p, r, &sg)
    if mg >= 0:
        apply_path(w, p, r, mg, sg)
        return True
    if w.use_rowmask and w.aug_r != r:
        w.aug_calls += 1
        if w.aug_calls > AUG_PLAIN:
            aug_index(w, r)
    if w.aug_r == r:           # the index (docs/design.md §8.5 "Stuck, fast")
        aug_catch_up(w, r)
        if aug_hopeless(w, p, kept_ok):
            return False
        if kept_ok and w.use_levels:
            return aug_search(w, p, r)
    w.queue[tail] = <int32_t>p
    tail += 1
    while head < tail:
        x = w.queue[head]
        head += 1
        if not built and x != p:
            build_rows_by_group(w, p, r, kept_ok)
            built = True
        xrow = w.tgt + x * W
        old = xrow[r]
        xrow[r] = -1
        w.stamp += 1
        gst = w.stamp
        for i in range(W):
            if xrow[i] >= 0:
                w.gmark[w.gid[xrow[i]]] = gst
        first_group = True
        for g in range(G):
            if w.gvis[g] == bstamp or w.gmark[g] == gst:
                continue
            w.gvis[g] = bstamp
            if first_group and not built:
                # x == p (its slot r is empty in the table too): scan the rows directly
                first_group = False
                rows = scan_rows_at(w, r, kept_ok, &n)
                for a in range(n):
                    q = rows[a] if rows != NULL else a
                    mg = w.tgt[q * W + r]
                    if q == p or mg < 0 or w.gid[mg] != g or not (kept_ok or not kept(w, q, r)):
                        continue
                    if w.rmark[q] == bstamp:
                        continue
                    if placeable(w.cur + x * W, xrow, W, w.gid, mg, r):
                        w.rmark[q] = bstamp
                        w.parent[q] = <int32_t>x
                        w.queue[tail] = <int32_t>q
                        tail += 1
                        mg = row_success(w, q, r, &sg)
                        if mg >= 0:
                            xrow[r] = old
                            apply_path(w, q, r, mg, sg)
                            return True
                continue
            if not built:
                build_rows_by_group(w, p, r, kept_ok)   # x == p: its slot r is -1 anyway
                built = True
            for a in range(w.bg_start[g], w.bg_start[g + 1]):
                q = w.bg_rows[a]
                if w.rmark[q] == bstamp:
                    continue
                if placeable(w.cur + x * W, xrow, W, w.gid, w.tgt[q * W + r], r):
                    w.rmark[q] = bstamp
                    w.parent[q] = <int32_t>x
                    w.queue[tail] = <int32_t>q
                    tail += 1
                    mg = row_success(w, q, r, &sg)
                    if mg >= 0:
                        xrow[r] = old
                        apply_path(w, q, r, mg, sg)
                        return True
        xrow[r] = old
    return False


cdef int64_t arrange_c(Work* w) noexcept nogil:
    """Steps 2-3 (docs/design.md §8.5) after scan_rows (step 1), and where each chunk's
    holes go in hlist; returns the number of holes (hlist's size)."""
    cdef intp_t P = w.P, W = w.W, M = w.M, G = w.G, R_fill = w.R_fill
    cdef intp_t p, r, k, g, t
    cdef int32_t m
    cdef int64_t left
    cdef intp_t i, nc
    cdef intp_t bcnt[16]
    # 1. keepable slots, holes per row, the target's kept slots: scan_rows; lack = quota
    #    minus kept slots per member and index
    for k in range(R_fill * M):
        w.lack[k] = w.mcap[k] - w.cnt[k]
    # 2. free the excess over member quotas: first in rows where the member can move to
    #    a hole at an index where it lacks slots, then in rows with the fewest holes
    for m in range(M):
        w.nlack[m] = 0
        for k in range(R_fill):
            if w.lack[k * M + m] > 0:
                w.nlack[m] += 1
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
            if not kept(w, p, r) or w.excess[m] == 0 or w.nlack[m] == 0:
                continue                  # (excess at r: the member does not lack at r)
            for k in range(R_fill):
                if k != r and not kept(w, p, k) and w.lack[k * M + m] > 0:
                    w.lack[k * M + m] -= 1
                    if w.lack[k * M + m] == 0:
                        w.nlack[m] -= 1
                    w.excess[m] -= 1
                    left -= 1
                    w.freed[r * M + m] += 1
                    unkeep(w, p, r, m)
                    break
        if left == 0:
            continue
        # candidate rows (a member over quota holds the slot), ascending, visited in
        # passes k = 0, 1, ..: the rows with k holes. A row's holes change only when it
        # is freed (then it is no longer a candidate), so the passes visit the rows in
        # order of their holes now, ascending rows inside: a stable bucket sort.
        for k in range(R_fill + 1):
            bcnt[k] = 0
        nc = 0
        for p in range(P):
            if kept(w, p, r) and w.excess[w.cur[p * W + r]] > 0 and row_holes(w, p) < R_fill:
                w.queue[nc] = <int32_t>p
                nc += 1
                bcnt[row_holes(w, p) + 1] += 1
        for k in range(R_fill):
            bcnt[k + 1] += bcnt[k]
        for i in range(nc):
            p = w.queue[i]
            w.bg_rows[bcnt[row_holes(w, p)]] = <int32_t>p
            bcnt[row_holes(w, p)] += 1
        for i in range(nc):
            if left == 0:
                break
            p = w.bg_rows[i]
            m = w.cur[p * W + r]
            if w.excess[m] > 0:
                w.excess[m] -= 1
                left -= 1
                w.freed[r * M + m] += 1
                unkeep(w, p, r, m)
    # 3. capacities (the target holds the kept slots since scan_rows)
    for k in range(R_fill * M):
        w.mcap[k] -= w.cnt[k] - w.freed[k]
    for r in range(R_fill):
        for g in range(G):
            left = 0
            for k in range(w.gstart[g], w.gstart[g + 1]):
                left += w.mcap[r * M + w.gmem[k]]
            w.gcap[r * G + g] = <int32_t>left
    # where each chunk's holes at each index go in hlist: index by index, chunk by chunk
    left = 0
    for r in range(R_fill):
        w.hstart[r] = left
        for t in range(w.T):
            k = w.hc[t * R_fill + r]
            w.hc[t * R_fill + r] = left
            left += k
    w.hstart[R_fill] = left
    return left


cdef void scan_rows(Work* w, intp_t t, int64_t* seen, int32_t* cnt) noexcept nogil:
    """Step 1 for the rows of chunk t: mark the keepable slots (data member whose group
    is not already at a lower index of the row) in keep, count them per (index, member)
    into cnt and the other indices < R_fill per index into hc[t]; the target row starts
    as its kept slots (others -1), rowmask as their groups. ``seen`` (G,): the chunk's
    own, all below its rows (used when G > 64)."""
    cdef intp_t W = w.W, R_fill = w.R_fill, M = w.M, p, r
    cdef intp_t lo = chunk_lo(t, w.T, w.P), hi = chunk_lo(t + 1, w.T, w.P)
    cdef int32_t m, g
    cdef const int32_t* crow
    cdef int32_t* trow
    cdef uint64_t rm
    cdef int64_t nh[8]
    cdef const int32_t* gid = w.gid
    cdef uint8_t kb
    for r in range(R_fill):
        nh[r] = 0
    if w.use_rowmask:
        # G <= 64: the row's kept groups in rm
        for p in range(lo, hi):
            rm = 0
            kb = 0
            crow = w.cur + p * W
            trow = w.tgt + p * W
            for r in range(R_fill):
                m = crow[r]
                trow[r] = -1
                if m >= 0:
                    g = gid[m]
                    if g >= 0 and ((rm >> g) & 1) == 0:
                        rm |= (<uint64_t>1) << g
                        kb |= <uint8_t>(1 << r)
                        trow[r] = m
                        cnt[r * M + m] += 1
                        continue
                nh[r] += 1
            for r in range(R_fill, W):
                trow[r] = -1
            w.keep[p] = kb
            w.rowmask[p] = rm
    else:
        for p in range(lo, hi):
            kb = 0
            crow = w.cur + p * W
            trow = w.tgt + p * W
            for r in range(R_fill):
                m = crow[r]
                trow[r] = -1
                if m >= 0:
                    g = gid[m]
                    if g >= 0 and seen[g] != p:
                        seen[g] = p
                        kb |= <uint8_t>(1 << r)
                        trow[r] = m
                        cnt[r * M + m] += 1
                        continue
                nh[r] += 1
            for r in range(R_fill, W):
                trow[r] = -1
            w.keep[p] = kb
    for r in range(R_fill):
        w.hc[t * R_fill + r] = nh[r]


cdef inline void unkeep(Work* w, intp_t p, intp_t r, int32_t m) noexcept nogil:
    """Step 2 frees kept slot (p, r) of member m (freed is counted by the caller): the
    slot is not kept, the target slot empties, m's group leaves the target row's mask,
    and the hole is counted for its chunk (the row's holes: row_holes)."""
    w.keep[p] &= ~(1 << r)
    w.tgt[p * w.W + r] = -1
    if w.use_rowmask:          # a group is at most once among a row's kept slots
        w.rowmask[p] &= ~((<uint64_t>1) << w.gid[m])
    # chunk_lo(t) <= p < chunk_lo(t + 1) for t = ((p + 1) * T - 1) // P
    w.hc[((<int64_t>(p + 1) * w.T - 1) // w.P) * w.R_fill + r] += 1


cdef void hole_rows(Work* w, intp_t t) noexcept nogil:
    """The holes of chunk t's rows into hlist, at the offsets hc[t] (ascending rows)."""
    cdef intp_t R_fill = w.R_fill, p, r
    cdef intp_t lo = chunk_lo(t, w.T, w.P), hi = chunk_lo(t + 1, w.T, w.P)
    cdef int64_t off[8]
    cdef int32_t* hlist = w.hlist
    cdef const uint8_t* keep = w.keep
    cdef unsigned full = ((<unsigned>1) << R_fill) - 1, hb
    for r in range(R_fill):
        off[r] = w.hc[t * R_fill + r]
    for p in range(lo, hi):
        hb = ~(<unsigned>keep[p]) & full
        while hb:
            r = ctz32(hb)
            hlist[off[r]] = <int32_t>p
            off[r] += 1
            hb &= hb - 1


cdef void fill_c(Work* w) noexcept nogil:
    """The hole lists (hole_rows on each chunk), then step 4 (after arrange_c, with hlist
    allocated at the size it returned)."""
    cdef intp_t W = w.W, M = w.M, G = w.G, R_fill = w.R_fill
    cdef intp_t p, r, g, t, q
    cdef int32_t m, best, cand
    cdef int64_t best_cap, maxcap, idx, iend
    cdef intp_t i
    cdef uint32_t s
    cdef int mv, best_mv
    cdef uint32_t h, best_h
    cdef const int32_t* crow
    cdef int32_t* trow
    cdef int32_t* mcap
    cdef int32_t* gcap
    cdef int64_t* gmark = w.gmark
    cdef int64_t* cmark = w.cmark
    cdef int32_t* cpos = w.cpos
    cdef const int32_t* gid = w.gid
    cdef const int32_t* gstart = w.gstart
    cdef const int32_t* gmem = w.gmem
    cdef int64_t st
    cdef intp_t sM
    cdef int32_t gc
    cdef intp_t lo, hi, gg
    cdef bint wrapped
    cdef uint64_t cands, hb, avail
    if w.T == 1:
        hole_rows(w, 0)
    else:
        for t in prange(w.T, num_threads=w.T, schedule="static", chunksize=1):
            hole_rows(w, t)
    # 4. fill holes index by index
    for r in range(R_fill):
        mcap = w.mcap + r * M
        gcap = w.gcap + r * G
        w.aug_r = -1                   # no augmenting-path index for this index yet
        w.aug_calls = 0
        # histogram of positive group capacities, for the running maximum
        w.maxcap = 0
        w.posmask = 0
        for g in range(G):
            if gcap[g] > 0:
                w.caphist[gcap[g]] += 1
                if gcap[g] > w.maxcap:
                    w.maxcap = gcap[g]
                if w.use_rowmask:
                    w.posmask |= (<uint64_t>1) << g
        build_maxmask(w, gcap)
        w.holes_exact = True
        iend = w.hstart[r + 1]
        for idx in range(w.hstart[r], iend):
            p = w.hlist[idx]
            if idx + PREFETCH_AHEAD < iend:
                # the rows ahead: the loads below would otherwise wait for memory
                q = w.hlist[idx + PREFETCH_AHEAD]
                prefetch(w.cur + q * W)
                prefetch(w.cur + q * W + W - 1)
                prefetch(w.tgt + q * W)
                prefetch(w.tgt + q * W + W - 1)
                if w.use_rowmask:
                    prefetch(w.rowmask + q)
            trow = w.tgt + p * W
            if trow[r] != -1:
                continue                  # (cannot happen: only p's own slot fills p)
            crow = w.cur + p * W
            s = mix(p, r, 0)
            g = start_of(s, G)
            best = -1
            best_mv = 0; best_cap = 0
            maxcap = w.maxcap          # max(0, max_g gcap[g]), kept by dec_gcap
            sM = start_of(s, M)
            if w.use_rowmask:
                # G <= 64: the loop below (else branch) over bit masks, same result.
                # First the groups at maxcap not in the target row, in tie-break order:
                # the loop ends at the first whose best member does not move. Then, if
                # there is none, every group with capacity that is not in the target row,
                # in the same order, with the same key and first-best rule. The current
                # row's members are marked only if a group of several members needs them.
                st = 0
                cands = w.maxmask[0] & ~w.rowmask[p] if maxcap > 0 else 0
                while cands:
                    hb = cands & ((~(<uint64_t>0)) << g)
                    gg = ctz64(hb) if hb else ctz64(cands)
                    cands &= ~((<uint64_t>1) << gg)
                    cand = group_best(w, crow, trow, gg, r, mcap, True, &mv, &st, sM)
                    if cand >= 0:
                        best = cand
                        break
                if best >= 0:
                    trow[r] = best
                    mcap[best] -= 1
                    w.rowmask[p] |= (<uint64_t>1) << gg
                    dec_gcap(w, gcap, gg)
                    continue
                avail = w.posmask & ~w.rowmask[p]
                while avail:
                    hb = avail & ((~(<uint64_t>0)) << g)
                    gg = ctz64(hb) if hb else ctz64(avail)
                    avail &= ~((<uint64_t>1) << gg)
                    gc = gcap[gg]
                    if best >= 0 and (gc < best_cap or (gc == best_cap and best_mv == 0)):
                        continue                  # cannot beat the best key
                    cand = group_best(w, crow, trow, gg, r, mcap, False, &mv, &st, sM)
                    if cand < 0:
                        continue
                    if best < 0 or gc > best_cap or mv < best_mv:
                        best = cand; best_mv = mv; best_cap = gc
                        if mv == 0 and best_cap == maxcap:
                            break                 # nothing later can beat it
            else:
                # mark_row, inlined: the target row's groups, the current row's members
                st = w.stamp + 1
                w.stamp = st
                for i in range(W):
                    m = trow[i]
                    if m >= 0:
                        gmark[gid[m]] = st
                    m = crow[i]
                    if m >= 0:
                        cmark[m] = st
                        cpos[m] = <int32_t>i
                # Fast path: the loop below ends at the first group in tie-break order whose
                # capacity is maxcap and whose best member does not move. Find it directly
                # among the groups at maxcap (bit mask); if there is none, run the loop.
                if maxcap > 0:
                    lo = g; hi = G; wrapped = False
                    while True:
                        gg = next_set(w.maxmask, lo, hi)
                        if gg < 0:
                            if wrapped or g == 0:
                                break
                            wrapped = True; lo = 0; hi = g
                            continue
                        lo = gg + 1
                        if gmark[gg] == st:
                            continue
                        if gstart[gg + 1] - gstart[gg] == 1 and cmark[gmem[gstart[gg]]] != st:
                            cand = gmem[gstart[gg]]
                            if mcap[cand] <= 0:
                                continue
                            mv = 0
                        else:
                            cand = fast_member(crow, trow, W, gstart, gmem, cmark, cpos, st, mcap,
                                               <int32_t>gg, r, &mv, sM, M)
                        if cand >= 0 and mv == 0:
                            best = cand
                            break
                    if best >= 0:
                        trow[r] = best
                        mcap[best] -= 1
                        if w.use_rowmask:
                            w.rowmask[p] |= (<uint64_t>1) << gid[best]
                        dec_gcap(w, gcap, gid[best])
                        continue
                # groups in tie-break order; key (-gcap, move); first best wins ties
                for i in range(G):
                    if i:
                        g += 1
                        if g == G:
                            g = 0
                    gc = gcap[g]
                    if gc <= 0 or gmark[g] == st:
                        continue
                    if best >= 0 and (gc < best_cap or (gc == best_cap and best_mv == 0)):
                        continue                      # cannot beat the best key
                    if gstart[g + 1] - gstart[g] == 1 and cmark[gmem[gstart[g]]] != st:
                        # one member, not in the current row: no move, no cycle
                        cand = gmem[gstart[g]]
                        if mcap[cand] <= 0:
                            continue
                        mv = 0
                    else:
                        cand = fast_member(crow, trow, W, gstart, gmem, cmark, cpos, st, mcap,
                                           <int32_t>g, r, &mv, sM, M)
                        if cand < 0:
                            continue
                    if best < 0 or gc > best_cap or mv < best_mv:
                        best = cand; best_mv = mv; best_cap = gc
                        if mv == 0 and best_cap == maxcap:
                            break                     # nothing later can beat it
            if best < 0:
                w.fill_idx = idx
                if augment(w, p, r, False) or augment(w, p, r, True):
                    continue
                mark_row_groups(w, trow)
                best_cap = 0; best_h = 0
                for g in range(G):
                    if w.gmark[g] == w.stamp:
                        continue
                    cand = best_member(crow, trow, W, w.gid, w.gstart, w.gmem, mcap,
                                       <int32_t>g, p, r, False, &mv, M)
                    if cand < 0:
                        continue
                    h = rot(g, s, G)
                    if best < 0 or key_less(0, gcap[g], h, 0, best_cap, best_h):
                        best = cand; best_cap = gcap[g]; best_h = h
                if best < 0:
                    # only a cycle-closing move fits (the row is a permutation of its
                    # current members): take it; the caller reverts the cycle
                    for g in range(G):
                        if w.gmark[g] == w.stamp:
                            continue
                        cand = best_member(crow, trow, W, w.gid, w.gstart, w.gmem, mcap,
                                           <int32_t>g, p, r, False, &mv, M, False)
                        if cand < 0:
                            continue
                        w.cycle_fallback = 1
                        h = rot(g, s, G)
                        if best < 0 or key_less(0, gcap[g], h, 0, best_cap, best_h):
                            best = cand; best_cap = gcap[g]; best_h = h
            if best >= 0:
                trow[r] = best
                mcap[best] -= 1
                if w.use_rowmask:
                    w.rowmask[p] |= (<uint64_t>1) << gid[best]
                dec_gcap(w, gcap, w.gid[best])
        for g in range(G):
            if gcap[g] > 0:
                w.caphist[gcap[g]] = 0


@cython.auto_pickle(False)   # pointers into its own arrays: not picklable
cdef class Arranger:
    """The arranger's working state for one prepared input (see arrangement.py).

    ``Arranger(cur, gid, G, R_fill, gstart, gmem, chunks)`` scans the rows once (step 1:
    keepable slots, holes, the kept target slots) and exposes ``counts``, the keepable
    slots per index and member (ndarray[int32] (R_fill, M)), from which the caller derives
    the member quotas; :meth:`finish` runs steps 2-4 once. The per-row passes run on
    ``chunks`` (>= 1) contiguous chunks of rows, in parallel when compiled with OpenMP;
    the result does not depend on ``chunks``."""

    cdef Work w
    cdef bint done
    cdef readonly object counts
    cdef object cur, gid, gstart, gmem, out, keep, gcap, excess, lack, freed, nlack
    cdef object bg_start, bg_fill, bg_rows, parent, queue, rmark, caphist, maxmask, rowmask
    cdef object gvis, gmark, cmark, cpos, hc, hstart, hlist, mcap
    cdef object lmask, lall, lres, uall, ures, hbits, hfirst, kbits, kfirst, ain

    def __init__(self, const int32_t[:, ::1] cur, const int32_t[::1] gid, intp_t G,
                 intp_t R_fill, const int32_t[::1] gstart, const int32_t[::1] gmem,
                 intp_t chunks):
        cdef intp_t P = cur.shape[0], W = cur.shape[1], M = gid.shape[0], T = chunks
        cdef intp_t t, k
        # the inputs stay alive as long as the pointers to them in w
        self.cur, self.gid, self.gstart, self.gmem = cur, gid, gstart, gmem
        self.done = False
        self.out = np.empty((P, W), dtype=np.int32)
        self.keep = np.empty(P + 1, dtype=np.uint8)
        self.rowmask = np.zeros(P + 1 if G <= 64 else 1, dtype=np.uint64)
        self.hc = np.zeros(T * R_fill + 1, dtype=np.int64)
        cnt_all = np.zeros((T, R_fill * M + 1), dtype=np.int32)
        seen_all = np.full((T, G + 1), -1, dtype=np.int64)
        cdef int32_t[:, ::1] cv = cnt_all
        cdef int64_t[:, ::1] sv = seen_all
        cdef int32_t[:, ::1] o = self.out
        cdef uint8_t[::1] keep_v = self.keep
        cdef uint64_t[::1] rowmask_v = self.rowmask
        cdef int64_t[::1] hc_v = self.hc
        self.counts = cnt_all[0, :R_fill * M].reshape(R_fill, M)
        if P == 0:
            return
        w = &self.w
        w.P = P; w.W = W; w.M = M; w.G = G; w.R_fill = R_fill; w.T = T
        w.cur = &cur[0, 0]
        w.gid = &gid[0]
        w.gstart = &gstart[0]
        w.gmem = &gmem[0]
        w.tgt = &o[0, 0]
        w.keep = &keep_v[0]
        w.rowmask = &rowmask_v[0]
        w.use_rowmask = G <= 64
        w.hc = &hc_v[0]
        if T == 1:
            with nogil:
                scan_rows(w, 0, &sv[0, 0], &cv[0, 0])
        else:
            for t in prange(T, nogil=True, num_threads=T, schedule="static", chunksize=1):
                scan_rows(w, t, &sv[t, 0], &cv[t, 0])
            with nogil:
                for t in range(1, T):
                    for k in range(R_fill * M):
                        cv[0, k] += cv[t, k]

    def finish(self, const int32_t[:, ::1] mq):
        """Steps 2-4 with the member quotas ``mq`` (R_fill, M); returns ``(target
        ndarray[int32] (P, W), cycle_fallback bool)``; ``cycle_fallback`` says a cycle
        may exist (the caller reverts it). Once only (RuntimeError after)."""
        cdef Work* w = &self.w
        cdef int64_t nholes
        if self.done:
            raise RuntimeError("Arranger.finish runs once")
        self.done = True
        if w.P == 0:
            out, self.out = self.out, None
            return out, False
        cdef intp_t P = w.P, M = w.M, G = w.G, R_fill = w.R_fill
        self.mcap = np.concatenate([np.asarray(mq, dtype=np.int32).reshape(-1),
                                    np.zeros(1, dtype=np.int32)])
        self.gcap = np.zeros(R_fill * G + 1, dtype=np.int32)
        self.excess = np.zeros(M + 1, dtype=np.int32)
        self.lack = np.zeros(R_fill * M + 1, dtype=np.int32)
        self.freed = np.zeros(R_fill * M + 1, dtype=np.int32)
        self.nlack = np.zeros(M + 1, dtype=np.int32)
        self.bg_start = np.zeros(G + 2, dtype=np.int32)
        self.bg_fill = np.zeros(G + 1, dtype=np.int32)
        self.bg_rows = np.zeros(P + 1, dtype=np.int32)
        self.parent = np.zeros(P + 1, dtype=np.int32)
        self.queue = np.zeros(P + 1, dtype=np.int32)
        self.rmark = np.zeros(P + 1, dtype=np.int64)
        self.caphist = np.zeros(P + 2, dtype=np.int32)
        self.maxmask = np.zeros((G + 63) // 64 + 1, dtype=np.uint64)
        self.gvis = np.zeros(G + 1, dtype=np.int64)
        self.gmark = np.zeros(G + 1, dtype=np.int64)
        self.cmark = np.zeros(M + 1, dtype=np.int64)
        self.cpos = np.zeros(M + 1, dtype=np.int32)
        self.hstart = np.zeros(R_fill + 2, dtype=np.int64)
        # the augmenting-path index (made, and so written before it is read, by aug_index)
        nwords = (P + 63) // 64 if G <= 64 else 0
        self.lmask = np.empty(P + 1 if G <= 64 else 1, dtype=np.uint64)
        self.ain = np.empty(P + 1 if G <= 64 else 1, dtype=np.uint8)
        cdef uint8_t[::1] ain_v = self.ain
        self.lall = np.empty(G * G + 1 if G <= 64 else 1, dtype=np.int32)
        self.lres = np.empty(G * G + 1 if G <= 64 else 1, dtype=np.int32)
        self.uall = np.empty(G + 1, dtype=np.uint64)
        self.ures = np.empty(G + 1, dtype=np.uint64)
        levels = G <= LEVEL_GROUPS
        self.hbits = np.empty(G * nwords + 1 if levels else 1, dtype=np.uint64)
        self.hfirst = np.empty(G + 1, dtype=np.intp)
        self.kbits = np.empty(G * G * nwords + 1 if levels else 1, dtype=np.uint64)
        self.kfirst = np.empty(G * G + 1 if levels else 1, dtype=np.intp)
        cdef uint64_t[::1] kbits_v = self.kbits
        cdef intp_t[::1] kfirst_v = self.kfirst
        cdef uint64_t[::1] lmask_v = self.lmask, hbits_v = self.hbits
        cdef uint64_t[::1] uall_v = self.uall, ures_v = self.ures
        cdef int32_t[::1] lall_v = self.lall, lres_v = self.lres
        cdef intp_t[::1] hfirst_v = self.hfirst
        cdef const int32_t[:, ::1] cnt = self.counts
        cdef int32_t[::1] mcap_v = self.mcap, gcap_v = self.gcap, excess_v = self.excess
        cdef int32_t[::1] lack_v = self.lack, nlack_v = self.nlack, freed_v = self.freed
        cdef int32_t[::1] bg_start_v = self.bg_start, bg_fill_v = self.bg_fill
        cdef int32_t[::1] bg_rows_v = self.bg_rows, parent_v = self.parent
        cdef int32_t[::1] queue_v = self.queue, caphist_v = self.caphist
        cdef int64_t[::1] rmark_v = self.rmark, gvis_v = self.gvis
        cdef int64_t[::1] gmark_v = self.gmark, cmark_v = self.cmark, hstart_v = self.hstart
        cdef int32_t[::1] cpos_v = self.cpos, hlist_v
        cdef uint64_t[::1] maxmask_v = self.maxmask
        w.cnt = &cnt[0, 0]
        w.mcap = &mcap_v[0]
        w.gcap = &gcap_v[0]
        w.excess = &excess_v[0]
        w.lack = &lack_v[0]
        w.freed = &freed_v[0]
        w.nlack = &nlack_v[0]
        w.bg_start = &bg_start_v[0]
        w.bg_fill = &bg_fill_v[0]
        w.bg_rows = &bg_rows_v[0]
        w.parent = &parent_v[0]
        w.queue = &queue_v[0]
        w.rmark = &rmark_v[0]
        w.caphist = &caphist_v[0]
        w.maxmask = &maxmask_v[0]
        w.gvis = &gvis_v[0]
        w.gmark = &gmark_v[0]
        w.cmark = &cmark_v[0]
        w.cpos = &cpos_v[0]
        w.hstart = &hstart_v[0]
        w.nwords = nwords
        w.lmask = &lmask_v[0]
        w.lall = &lall_v[0]
        w.lres = &lres_v[0]
        w.uall = &uall_v[0]
        w.ures = &ures_v[0]
        w.hbits = &hbits_v[0]
        w.hfirst = &hfirst_v[0]
        w.use_levels = levels
        w.ain = &ain_v[0]
        w.fill_idx = 0
        w.aug_pos = 0
        w.kbits = &kbits_v[0]
        w.kfirst = &kfirst_v[0]
        w.aug_r = -1
        w.stamp = 0
        w.cycle_fallback = 0
        with nogil:
            nholes = arrange_c(w)
        self.hlist = np.empty(nholes + 1, dtype=np.int32)
        hlist_v = self.hlist
        w.hlist = &hlist_v[0]
        with nogil:
            fill_c(w)
        out = self.out
        # the working arrays are not needed any more
        self.keep = self.rowmask = self.hc = self.hlist = None
        self.mcap = self.gcap = self.excess = self.lack = self.freed = self.nlack = None
        self.bg_start = self.bg_fill = self.bg_rows = self.parent = self.queue = None
        self.rmark = self.caphist = self.maxmask = self.gvis = self.gmark = None
        self.cmark = self.cpos = self.hstart = self.out = None
        self.lmask = self.lall = self.lres = self.uall = self.ures = None
        self.hbits = self.hfirst = self.kbits = self.kfirst = self.ain = None
        return out, bool(w.cycle_fallback)


# ---------------------------------------------------------------------------- report
def report_scan(const int32_t[:, ::1] cur, const int32_t[:, ::1] tgt,
                const int32_t[::1] gid, intp_t G, intp_t R_fill):
    """One pass over equal-width tables for ``arrangement_report``.

    Returns ``(slot_changes, cur_counts (W, M), tgt_counts (W, M), unfilled, duplicate_rows,
    lite_slots, cyclic (P,) bool)``: ``unfilled`` empty target slots at indices < R_fill,
    ``duplicate_rows`` target rows holding a group twice, ``lite_slots`` target slots
    held by members with ``gid < 0``, ``cyclic`` rows forming a cycle (docs/design.md §4).
    """
    cdef intp_t P = cur.shape[0], W = cur.shape[1], M = gid.shape[0], p, r
    cdef int64_t changes = 0, unfilled = 0, dups = 0, lite = 0
    cdef intp_t row_changes
    cdef int32_t a, b, g
    cdef bint dup
    # counts are kept at column m + 1 (column 0 collects the empty slots): no branch
    cc = np.zeros((W, M + 1), dtype=np.int32)
    tc = np.zeros((W, M + 1), dtype=np.int32)
    cyc = np.zeros(P, dtype=np.bool_)
    seen_arr = np.full(G + 1, -1, dtype=np.int64)
    cdef int32_t[:, ::1] ccv = cc, tcv = tc
    cdef uint8_t[::1] cycv = cyc.view(np.uint8)
    cdef int64_t[::1] seen = seen_arr
    cdef RowLoader L
    cdef int32_t cw[ROW_SLOTS]
    cdef int32_t tw[ROW_SLOTS]
    cdef int32_t* ccp = &ccv[0, 0] + 1
    cdef int32_t* tcp = &tcv[0, 0] + 1
    cdef const int32_t* crow
    cdef const int32_t* trow
    if P == 0:
        return 0, cc[:, 1:], tc[:, 1:], 0, 0, 0, cyc
    with nogil:
        loader_init(&L, P, <int>W)
        for p in range(P):
            dup = False
            row_changes = 0
            crow = &cur[p, 0]
            trow = &tgt[p, 0]
            for r in range(W):
                a = crow[r]
                b = trow[r]
                row_changes += a != b
                ccp[r * (M + 1) + a] += 1
                tcp[r * (M + 1) + b] += 1
                if b >= 0:
                    g = gid[b]
                    if g < 0:
                        lite += 1
                    elif seen[g] == p:
                        dup = True
                    else:
                        seen[g] = p
                elif r < R_fill:
                    unfilled += 1
            if dup:
                dups += 1
            changes += row_changes
            if row_changes >= 2:   # a cycle needs at least two changed slots
                load_row8(&L, &cur[0, 0], p, cw)
                load_row8(&L, &tgt[0, 0], p, tw)
                cycv[p] = row_is_cyclic(cw, tw, ROW_SLOTS)
    return changes, cc[:, 1:], tc[:, 1:], unfilled, dups, lite, cyc
