"""The simulator's invariant checks in C (docs/design.md §12).

After every event a member handles, the simulator checks that none of its partition
versions went down, then remembers them for the next event. It runs some 8,000 times a
run on 271 partitions, so the arrays are read through their C pointers once their type,
shape, layout and byte order are checked (a memoryview's acquisition would cost more than
the loop), and the loop is the branch-free comparison the compiler vectorises, followed
by a copy; only a decrease takes the slow path. Every hundred ticks it also checks that
members holding a partition at one version list the same replicas for it: one pass over
two tables instead of five numpy temporaries. Nothing here raises but a TypeError for
arrays it does not take.
"""
cimport numpy as cnp
from libc.string cimport memmove

from hzfast._types cimport int32_t, intp_t
from hzfast._vector cimport table32, vector32

cnp.import_array()


cdef inline int32_t _any_lower(const int32_t* v, const int32_t* last, intp_t n) noexcept nogil:
    cdef int32_t acc = 0
    cdef intp_t p
    for p in range(n):
        acc |= v[p] < last[p]
    return acc


def advance_versions(object versions, object last):
    """Copy ``versions`` into ``last`` (same length), returning the first partition whose
    version is lower than in ``last``, or -1 when none is. That one partition's entry of
    ``last`` keeps its old value (for the caller's message; the caller then copies it).
    Both are int32 numpy vectors (``last`` writeable); TypeError otherwise."""
    cdef int32_t* v
    cdef int32_t* l
    cdef intp_t P, m, p, first = -1
    if not vector32(versions, False, &v, &P) or not vector32(last, True, &l, &m) or m != P:
        raise TypeError("advance_versions takes two int32 numpy vectors of one length")
    if v == l:
        return -1
    if not _any_lower(v, l, P):
        memmove(l, v, P * sizeof(int32_t))
        return -1
    for p in range(P):
        if v[p] < l[p] and first < 0:
            first = p
        else:
            l[p] = v[p]
    return first


def first_disagreement(object versions_a, object replicas_a, object versions_b,
                       object replicas_b):
    """The first partition that two members hold at the same version with different
    replica rows, or -1 when there is none. Versions are int32 numpy vectors of length P,
    replicas C-contiguous int32 numpy tables (P, R) with one R; TypeError otherwise."""
    cdef int32_t* va
    cdef int32_t* vb
    cdef int32_t* ra
    cdef int32_t* rb
    cdef intp_t P, Pb, Pa2, Pb2, R, Rb, p, j
    if (not vector32(versions_a, False, &va, &P) or not vector32(versions_b, False, &vb, &Pb)
            or not table32(replicas_a, False, &ra, &Pa2, &R)
            or not table32(replicas_b, False, &rb, &Pb2, &Rb)
            or Pb != P or Pa2 != P or Pb2 != P or Rb != R):
        raise TypeError("first_disagreement takes two int32 version vectors of length P "
                        "and two C-contiguous int32 tables (P, R)")
    for p in range(P):
        if va[p] != vb[p]:
            continue
        for j in range(R):
            if ra[p * R + j] != rb[p * R + j]:
                return p
    return -1
