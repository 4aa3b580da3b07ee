"""Ignite key kernels: Java ``hashCode`` of keys and Ignite's hash -> partition rule.

Every entry point trusts its arguments: :mod:`hzfast.ignite.hashing` validates dtypes and
value ranges first (partition count 1..65000). String keys come as Arrow-style ``offsets``
and UTF-8 ``data``; a malformed key (invalid UTF-8, offsets outside ``data``) is reported
by index, never read past.
"""
import numpy as np

from hzfast._types cimport int32_t, uint32_t, int64_t, uint64_t, uint8_t, intp_t, offset_t
from hzfast._hashing cimport item_span

# Integer key values: Integer (int32) or Long (int64) keys.
ctypedef fused int_value_t:
    int32_t
    int64_t


# --------------------------------------------------------------------------- scalar helpers
cdef inline int32_t mask_for(int32_t parts) noexcept nogil:
    """The power-of-two mask ``parts - 1``, or -1 when ``parts`` is not a power of two."""
    return parts - 1 if (parts & (parts - 1)) == 0 else -1


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


# --------------------------------------------------------------------------- cores
cdef intp_t utf8_hashes_c(const offset_t[::1] offsets, const uint8_t[::1] data,
                          int32_t parts, int32_t mask, bint reduce,
                          int32_t[::1] out) noexcept nogil:
    """String.hashCode (over UTF-16 units decoded from UTF-8) of every key, reduced to a
    partition when ``reduce``. Returns -1, or the index of the first malformed key (the rest
    of ``out`` is then unspecified): malformed UTF-8, or offsets that are decreasing or point
    outside ``data``, are an expected outcome, not an error. Surrogates encoded as 3-byte
    sequences (Python's "surrogatepass") are accepted and hashed as the UTF-16 unit they
    encode."""
    cdef intp_t i, j, end, n = out.shape[0], size = data.shape[0]
    cdef uint32_t h, b, cp, b1, b2, b3
    cdef const offset_t* op = &offsets[0]
    for i in range(n):
        # the one offsets check of every Arrow-style kernel (hzfast/_hashing.pxd): each
        # offset read once, never a byte outside data
        if not item_span(op, i, size, &j, &end):
            return i
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


# --------------------------------------------------------------------------- entry points
def utf8_hashes(const offset_t[::1] offsets, const uint8_t[::1] data, int32_t parts,
                bint reduce):
    """Hash (and reduce when ``reduce``) n = len(offsets) - 1 UTF-8 strings.

    Returns ``(out, bad)``: int32 array of n, and -1 or the index of the first malformed key
    (invalid UTF-8, or offsets outside ``data``).
    """
    cdef intp_t n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets must have length n + 1 >= 1")
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
    cdef int32_t mask = mask_for(parts)
    with nogil:
        int_hashes_c(hashes, False, parts, mask, True, o)
    return out
