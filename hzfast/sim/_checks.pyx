"""The simulator's per-event invariant check in one pass (docs/design.md §12).

After every event a member handles, the simulator checks that none of its partition
versions went down, then remembers them for the next event: one loop over the two arrays
instead of a comparison, a reduction and a copy in numpy. hzfast.sim.cluster checks shapes
and dtypes; nothing here raises.
"""
from hzfast._types cimport int32_t, intp_t


def advance_versions(const int32_t[::1] versions, int32_t[::1] last):
    """Copy ``versions`` into ``last`` (same length), returning the first partition whose
    version is lower than in ``last``, or -1 when none is. That one partition's entry of
    ``last`` keeps its old value (for the caller's message; the caller then copies it)."""
    cdef intp_t P = versions.shape[0], p, first = -1
    with nogil:
        for p in range(P):
            if versions[p] < last[p] and first < 0:
                first = p
            else:
                last[p] = versions[p]
    return first
