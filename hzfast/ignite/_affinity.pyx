"""Ignite rendezvous kernels: node weights and ``RendezvousAffinityFunction`` assignment.

Every entry point trusts its arguments: :mod:`hzfast.ignite.affinity` validates them first
(partition count 1..65000, ``rank`` a permutation of 0..n-1, group ids in
[0, group_count), 1 <= width <= n).
"""
import numpy as np

from hzfast._types cimport int32_t, uint32_t, int64_t, uint64_t, uint8_t, intp_t


# --------------------------------------------------------------------------- scalar helpers
cdef inline int64_t weight_c(int32_t node_hash, int32_t part) noexcept nogil:
    """RendezvousAffinityFunction.hash(node_hash, part): Wang/Jenkins 64-bit mix, signed."""
    cdef uint64_t k = (<uint64_t>(<uint32_t>node_hash)) | ((<uint64_t>(<uint32_t>part)) << 32)
    k = ~k + (k << 21)
    k ^= k >> 24
    k += (k << 3) + (k << 8)
    k ^= k >> 14
    k += (k << 2) + (k << 4)
    k ^= k >> 28
    k += k << 31
    return <int64_t>k


cdef inline bint before_c(int64_t wa, int32_t ra, int64_t wb, int32_t rb) noexcept nogil:
    """HashComparator: weight ascending, ties by node-id rank (UUID.compareTo order)."""
    return wa < wb or (wa == wb and ra < rb)


cdef inline void sift_down_c(int32_t* heap, intp_t size, intp_t pos,
                             const int64_t* w, const int32_t* rank) noexcept nogil:
    """Restore the min-heap property (key = (w, rank)) below ``pos``."""
    cdef intp_t child
    cdef int32_t item = heap[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and before_c(w[heap[child + 1]], rank[heap[child + 1]],
                                         w[heap[child]], rank[heap[child]]):
            child += 1
        if not before_c(w[heap[child]], rank[heap[child]], w[item], rank[item]):
            break
        heap[pos] = heap[child]
        pos = child
    heap[pos] = item


# --------------------------------------------------------------------------- core
cdef void assign_c(const int32_t[::1] node_hash, const int32_t[::1] rank,
                   const int32_t[::1] group, int32_t parts, bint replicated, bint exclude,
                   int32_t[:, ::1] out, int64_t[::1] w, int32_t[::1] buf,
                   int32_t[::1] seq, uint8_t[::1] used, uint8_t[::1] chosen) noexcept nogil:
    """RendezvousAffinityFunction.assignPartition for every partition (no backup filters).

    ``out`` has shape (parts, width), width = min(backups + 1, n) (n if replicated).
    Scratch: w (n), buf (n), seq (n), used (group_count, zeroed), chosen (n, zeroed).
    """
    cdef intp_t n = node_hash.shape[0], width = out.shape[1]
    cdef intp_t i, j, pos, cnt, hn, rc
    cdef int32_t p, node, best
    cdef int64_t wi
    cdef int32_t ri
    cdef const int32_t* rk = &rank[0]
    cdef int64_t* wp = &w[0]
    cdef int32_t* hp = &buf[0]
    for p in range(parts):
        if n == 1:
            out[p, 0] = 0
            continue
        for i in range(n):
            wp[i] = weight_c(node_hash[i], p)
        if replicated:
            # REPLICATED: primary = smallest weight, then all others in topology order.
            best = 0
            for i in range(1, n):
                if before_c(wp[i], rk[i], wp[best], rk[best]):
                    best = <int32_t>i
            out[p, 0] = best
            j = 1
            for i in range(n):
                if i != best:
                    out[p, j] = <int32_t>i
                    j += 1
        elif not exclude:
            # Partial selection: keep the `width` smallest (weight, rank) in hp[0..cnt).
            cnt = 0
            for i in range(n):
                wi = wp[i]
                ri = rk[i]
                if cnt == width:
                    node = hp[width - 1]
                    if not before_c(wi, ri, wp[node], rk[node]):
                        continue
                    pos = width - 1
                else:
                    pos = cnt
                    cnt += 1
                while pos > 0 and before_c(wi, ri, wp[hp[pos - 1]], rk[hp[pos - 1]]):
                    hp[pos] = hp[pos - 1]
                    pos -= 1
                hp[pos] = <int32_t>i
            for i in range(width):
                out[p, i] = hp[i]
        else:
            # Exclude neighbours: walk the sorted order lazily (binary heap), as Ignite's
            # LazyLinearSortedContainer does; seq keeps the order walked so far.
            for i in range(n):
                hp[i] = <int32_t>i
            hn = n
            i = n // 2
            while i > 0:
                i -= 1
                sift_down_c(hp, hn, i, wp, rk)
            node = hp[0]
            hn -= 1
            hp[0] = hp[hn]
            sift_down_c(hp, hn, 0, wp, rk)
            seq[0] = node
            cnt = 1
            out[p, 0] = node
            rc = 1
            used[group[node]] = 1
            chosen[node] = 1
            if width > 1:
                while hn > 0 and rc < width:
                    node = hp[0]
                    hn -= 1
                    hp[0] = hp[hn]
                    sift_down_c(hp, hn, 0, wp, rk)
                    seq[cnt] = node
                    cnt += 1
                    if not used[group[node]]:
                        out[p, rc] = node
                        rc += 1
                        used[group[node]] = 1
                        chosen[node] = 1
                if rc < width:
                    # Too few nodes passed the criterion: Ignite iterates the sorted nodes
                    # again (skipping the primary) and takes those not chosen yet. The first
                    # walk exhausted the heap, so seq holds the full order.
                    for i in range(1, n):
                        if rc >= width:
                            break
                        node = seq[i]
                        if not chosen[node]:
                            out[p, rc] = node
                            rc += 1
                            chosen[node] = 1
            for i in range(rc):
                node = out[p, i]
                used[group[node]] = 0
                chosen[node] = 0


# --------------------------------------------------------------------------- entry points
def node_weights(const int32_t[::1] node_hash, const int32_t[::1] part):
    """RendezvousAffinityFunction.hash for each (node_hash[i], part[i]); int64 array.

    ``part`` must be at least as long as ``node_hash``.
    """
    cdef intp_t i, n = node_hash.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for i in range(n):
            o[i] = weight_c(node_hash[i], part[i])
    return out


def assign(const int32_t[::1] node_hash, const int32_t[::1] rank, const int32_t[::1] group,
           int32_t group_count, int32_t parts, int32_t width, bint replicated, bint exclude):
    """Rendezvous assignment: int32 array (parts, width) of member indexes.

    node_hash: consistentId.hashCode() per member; rank: position of each member's node id
    in UUID.compareTo order (a permutation of 0..n-1); group: neighbour group id per member
    in [0, group_count) (read only when ``exclude``).
    """
    cdef intp_t n = node_hash.shape[0]
    out = np.empty((parts, width), dtype=np.int32)
    w = np.empty(max(n, 1), dtype=np.int64)
    buf = np.empty(max(n, 1), dtype=np.int32)
    seq = np.empty(max(n, 1), dtype=np.int32)
    used = np.zeros(max(group_count, 1), dtype=np.uint8)
    chosen = np.zeros(max(n, 1), dtype=np.uint8)
    cdef int32_t[:, ::1] o = out
    cdef int64_t[::1] wv = w
    cdef int32_t[::1] bv = buf, sv = seq
    cdef uint8_t[::1] uv = used, cv = chosen
    with nogil:
        assign_c(node_hash, rank, group, parts, replicated, exclude, o, wv, bv, sv, uv, cv)
    return out
