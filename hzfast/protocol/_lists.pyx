# cython: boundscheck=False, wraparound=False
"""Completed-migration lists (docs/design.md §7 rule 5, §11): the per-entry loops in C.

A member applies the master's completed list entry by entry. Most entries need nothing but
to be kept: they are well formed, at or below the member's version of their partition,
and the member took no part in them or finalized them already. ``attention`` skips over
those and stops at the first entry that needs hzfast.protocol.node's full per-entry rule;
``keyed`` builds the kept entries' dict; ``keep_current`` keeps the member's earlier
entries behind the received ones and keeps the per-partition index of
:meth:`hzfast.protocol.Node._keep_current` up to date. Entries are read through their
attributes; nothing is modified but the dicts and sets passed in. Nothing raises on
malformed entries: they are left to the Python rule.
"""
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem, PyDict_Contains
from cpython.set cimport PySet_Add, PySet_Contains
from cpython.ref cimport PyObject
from cpython.long cimport PyLong_AsLongAndOverflow

from hzfast._types cimport int32_t, intp_t


cdef inline bint _small_int(object v, long lo, long hi, long* out):
    """``v`` is an int (exactly) in ``[lo, hi)``; its value in ``out``."""
    cdef int overflow = 0
    if type(v) is not int:
        return False
    cdef long x = PyLong_AsLongAndOverflow(v, &overflow)
    out[0] = x
    return not overflow and lo <= x < hi


cdef long _ANY = 1L << 62


cdef bint _current(object x, const int32_t[::1] versions, intp_t P):
    """Entry ``x``'s partition is at its final version (Python's ``==`` for an odd final;
    a partition outside the table is never current)."""
    cdef long p, final
    cdef int overflow = 0
    part = x.partition
    if not isinstance(part, int) or not 0 <= part < P:
        return False
    p = part
    fin = x.final
    if type(fin) is int:
        final = PyLong_AsLongAndOverflow(fin, &overflow)
        return not overflow and versions[p] == final
    return bool(versions[p] == fin)


def attention(tuple lst, Py_ssize_t start, const int32_t[::1] versions, object info_type,
              long replica_count, set finalized, dict active, dict unconfirmed, long me):
    """The first index ``>= start`` of an entry of ``lst`` that needs the full rule (or
    ``len(lst)``): not an ``info_type`` with in-range fields and a settled int status, a
    partition held unconfirmed, a final version above ``versions``, or one this member
    (``me``) still has to finalize (not in ``finalized``, and either the migration active
    here or one of which ``me`` is a passive source: Node._finalize's two cases)."""
    cdef Py_ssize_t i, n = len(lst)
    cdef intp_t P = versions.shape[0]
    cdef long p, final, v
    cdef object x
    for i in range(start, n):
        x = lst[i]
        if type(x) is not info_type:
            return i
        if not _small_int(x.partition, 0, P, &p):
            return i
        if not _small_int(x.destination_new_index, 0, replica_count, &v) \
                or not _small_int(x.source_current_index, -1, replica_count, &v) \
                or not _small_int(x.source_new_index, -1, replica_count, &v) \
                or not _small_int(x.destination_current_index, -1, replica_count, &v):
            return i
        st = x.status
        if not isinstance(st, int) or st == 0:     # ACTIVE: malformed in a completed list
            return i
        if unconfirmed and PyDict_Contains(unconfirmed, p):
            return i
        if not _small_int(x.final, -_ANY, _ANY, &final) or final > versions[p]:
            return i
        if not PySet_Contains(finalized, x.id):    # what Node._finalize acts on
            act = active.get(p)
            if act is not None and act.id == x.id:
                return i
            if x.source == me and x.source_current_index > 0 and not x.promotion:
                return i
    return n


def keyed(tuple lst, Py_ssize_t stop):
    """``{x.id: x for x in lst[:stop]}`` (a later duplicate id takes the first's place)."""
    cdef dict out = {}
    cdef Py_ssize_t i
    cdef object x
    for i in range(stop):
        x = lst[i]
        PyDict_SetItem(out, x.id, x)
    return out


cdef inline PyObject* _find(object mid, dict head, dict front, dict back):
    """The entry of id ``mid`` in the member's list (its three parts), or NULL."""
    cdef PyObject* x = PyDict_GetItem(head, mid)
    if x == NULL:
        x = PyDict_GetItem(front, mid)
        if x == NULL:
            x = PyDict_GetItem(back, mid)
    return x


def keep_current(dict keep, dict head, dict front, dict back, set recheck, dict index,
                 const int32_t[::1] versions, int32_t[::1] seen):
    """Make ``keep`` (received entries, in order) the member's list, followed by the
    entries of its previous list that are not in ``keep`` and still current.

    The previous list is ``head`` (the entries received last time), then the retained
    entries: ``front`` in reverse order, then ``back`` in order. In place: the caller's new
    head is ``keep``; ``head``'s leftovers move to the front of the retained entries (onto
    the end of ``front``), and ``front`` and ``back`` lose the entries now in ``keep`` and
    those no longer current. So a call costs the received entries and the previous head,
    not the retained entries (docs/design.md §11).

    An entry of the previous list is looked at only when its partition's version differs
    from ``seen`` (the versions of the previous call) or its id is in ``recheck``; it stays
    when its partition is at its final version. ``index`` (partition -> set of ids)
    follows, ``seen`` takes ``versions``. Returns the ids of the received entries whose
    partition is not at their final version (the next call's ``recheck``)."""
    cdef intp_t P = versions.shape[0], q
    cdef PyObject* prev
    cdef object mid, x, ids
    cdef list drop = []
    cdef list moved = []
    for q in range(P):
        if versions[q] != seen[q]:
            ids = index.get(q)
            if ids:
                recheck.update(ids)
            seen[q] = versions[q]
    for mid in recheck:
        if PyDict_Contains(keep, mid):
            continue
        prev = _find(mid, head, front, back)
        if prev != NULL and not _current(<object>prev, versions, P):
            drop.append(mid)
    cdef set out = set()
    for mid, x in keep.items():
        part = x.partition
        prev = _find(mid, head, front, back)
        if prev == NULL or <object>prev is not x:
            ids = index.get(part)
            if ids is None:
                index[part] = {mid}
            else:
                PySet_Add(ids, mid)
        if not _current(x, versions, P):
            PySet_Add(out, mid)
    cdef set dropped = set(drop)
    for mid in drop:
        x = <object>_find(mid, head, front, back)
        ids = index.get(x.partition)
        if ids is not None:
            ids.discard(mid)
        if front and PyDict_Contains(front, mid):
            del front[mid]
        elif back and PyDict_Contains(back, mid):
            del back[mid]
    if keep is head:
        return out
    if front or back:
        for mid in keep:
            if front and PyDict_Contains(front, mid):
                del front[mid]
            elif back and PyDict_Contains(back, mid):
                del back[mid]
    # the previous head's other entries, in its order, at the front of the retained ones
    for mid, x in head.items():
        if not PyDict_Contains(keep, mid) and not (dropped and PySet_Contains(dropped, mid)):
            moved.append((mid, x))
    cdef Py_ssize_t i
    for i in range(len(moved) - 1, -1, -1):
        mid, x = moved[i]
        PyDict_SetItem(front, mid, x)
    return out
