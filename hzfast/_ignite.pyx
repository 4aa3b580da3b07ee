# cython: language_level=3
"""Apache Ignite kernels: Java hashCode, key -> partition, rendezvous affinity.

Every entry point trusts its arguments: ``hzfast.ignite`` validates dtypes, shapes and value
ranges first (partition count 1..65000, member indexes, group ids in [0, group_count)).
"""
import numpy as np

from hzfast._types cimport int32_t, uint32_t, int64_t, uint64_t, uint8_t, intp_t

ctypedef fused offset_t:
    int32_t
    int64_t

ctypedef fused int_value_t:
    int32_t
    int64_t


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


cdef inline int32_t reduce_c(int32_t h, int32_t parts, int32_t mask) noexcept nogil:
    """calculatePartition: mask >= 0 -> (h ^ (h >>> 16)) & mask, else safeAbs(h % parts)."""
    cdef uint32_t u
    cdef int32_t r
    if mask >= 0:
        u = <uint32_t>h
        return <int32_t>((u ^ (u >> 16)) & <uint32_t>mask)
    r = h % parts          # cdivision: C truncates toward zero, as Java does
    return -r if r < 0 else r   # |r| < parts <= 65000: never Integer.MIN_VALUE


cdef inline int32_t long_hash_c(int64_t v) noexcept nogil:
    """Long.hashCode: (int)(v ^ (v >>> 32))."""
    cdef uint64_t u = <uint64_t>v
    return <int32_t>(<uint32_t>(u ^ (u >> 32)))


cdef inline bint before_c(int64_t wa, int32_t ra, int64_t wb, int32_t rb) noexcept nogil:
    """HashComparator: weight ascending, ties by node-id rank (UUID.compareTo order)."""
    return wa < wb or (wa == wb and ra < rb)


# --------------------------------------------------------------------------- key hashing
cdef intp_t utf8_hashes_c(const offset_t[::1] offsets, const uint8_t[::1] data,
                          int32_t parts, int32_t mask, bint reduce,
                          int32_t[::1] out) noexcept nogil:
    """String.hashCode (over UTF-16 units decoded from UTF-8) of every key, reduced to a
    partition when ``reduce``. Returns -1, or the index of the first malformed key (the rest
    of ``out`` is then unspecified). Surrogates encoded as 3-byte sequences (Python's
    "surrogatepass") are accepted and hashed as the UTF-16 unit they encode."""
    cdef intp_t i, j, end, n = out.shape[0]
    cdef uint32_t h, b, cp, b1, b2, b3
    for i in range(n):
        j = <intp_t>offsets[i]
        end = <intp_t>offsets[i + 1]
        h = 0
        while j < end:
            # ASCII fast path, 4 bytes per step: h*31^4 + b0*31^3 + b1*31^2 + b2*31 + b3
            # (breaks the serial multiply chain; identical modulo 2**32).
            while j + 4 <= end:
                b = data[j]
                b1 = data[j + 1]
                b2 = data[j + 2]
                b3 = data[j + 3]
                if (b | b1 | b2 | b3) & 0x80:
                    break
                h = h * 923521u + b * 29791u + b1 * 961u + b2 * 31u + b3
                j += 4
            if j >= end:
                break
            b = data[j]
            if b < 0x80:
                h = 31 * h + b
                j += 1
            elif b < 0xC2:                  # stray continuation byte or overlong 2-byte lead
                return i
            elif b < 0xE0:
                if j + 1 >= end or (data[j + 1] & 0xC0) != 0x80:
                    return i
                h = 31 * h + (((b & 0x1F) << 6) | (data[j + 1] & 0x3F))
                j += 2
            elif b < 0xF0:
                if j + 2 >= end or (data[j + 1] & 0xC0) != 0x80 or (data[j + 2] & 0xC0) != 0x80:
                    return i
                cp = ((b & 0x0F) << 12) | ((data[j + 1] & 0x3F) << 6) | (data[j + 2] & 0x3F)
                if cp < 0x800:
                    return i
                h = 31 * h + cp
                j += 3
            elif b < 0xF5:
                if (j + 3 >= end or (data[j + 1] & 0xC0) != 0x80
                        or (data[j + 2] & 0xC0) != 0x80 or (data[j + 3] & 0xC0) != 0x80):
                    return i
                cp = (((b & 0x07) << 18) | ((data[j + 1] & 0x3F) << 12)
                      | ((data[j + 2] & 0x3F) << 6) | (data[j + 3] & 0x3F))
                if cp < 0x10000 or cp > 0x10FFFF:
                    return i
                cp -= 0x10000
                h = 31 * h + (0xD800 + (cp >> 10))
                h = 31 * h + (0xDC00 + (cp & 0x3FF))
                j += 4
            else:
                return i
        if reduce:
            out[i] = reduce_c(<int32_t>h, parts, mask)
        else:
            out[i] = <int32_t>h
    return -1


cdef void int_hashes_c(const int_value_t[::1] values, bint as_long, int32_t parts,
                       int32_t mask, bint reduce, int32_t[::1] out) noexcept nogil:
    """Integer.hashCode (the value) or Long.hashCode of every key, optionally reduced."""
    cdef intp_t i, n = out.shape[0]
    cdef int32_t h
    for i in range(n):
        if as_long:
            h = long_hash_c(<int64_t>values[i])
        else:
            h = <int32_t>values[i]
        if reduce:
            out[i] = reduce_c(h, parts, mask)
        else:
            out[i] = h


cdef inline int32_t mask_for(int32_t parts) noexcept nogil:
    return parts - 1 if (parts & (parts - 1)) == 0 else -1


def utf8_hashes(const offset_t[::1] offsets, const uint8_t[::1] data, int32_t parts,
                bint reduce):
    """Hash (and reduce when ``reduce``) n = len(offsets) - 1 UTF-8 strings.

    Returns ``(out, bad)``: int32 array of n, and -1 or the index of the first malformed key.
    """
    cdef intp_t n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef int32_t mask = mask_for(parts)
    cdef intp_t bad
    with nogil:
        bad = utf8_hashes_c(offsets, data, parts, mask, reduce, o)
    return out, bad


def int_hashes(const int_value_t[::1] values, bint as_long, int32_t parts, bint reduce):
    """Integer (``as_long`` False) or Long hashCode of every value, reduced when ``reduce``."""
    out = np.empty(values.shape[0], dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef int32_t mask = mask_for(parts)
    with nogil:
        int_hashes_c(values, as_long, parts, mask, reduce, o)
    return out


def reduce_hashes(const int32_t[::1] hashes, int32_t parts):
    """calculatePartition over precomputed hashCodes."""
    out = np.empty(hashes.shape[0], dtype=np.int32)
    cdef int32_t[::1] o = out
    with nogil:
        int_hashes_c(hashes, False, parts, mask_for(parts), True, o)
    return out


def node_weights(const int32_t[::1] node_hash, const int32_t[::1] part):
    """RendezvousAffinityFunction.hash for each (node_hash[i], part[i]); int64 array."""
    cdef intp_t i, n = node_hash.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for i in range(n):
            o[i] = weight_c(node_hash[i], part[i])
    return out


# --------------------------------------------------------------------------- rendezvous
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
