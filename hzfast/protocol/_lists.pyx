# cython: boundscheck=False, wraparound=False
"""Completed-migration lists (docs/design.md §7.5, §11.2): the per-entry loops in C.

A member applies the master's completed list entry by entry. Most entries need nothing but
to be kept: they are well formed, at or below the member's version of their partition,
and the member took no part in them or finalized them already. ``attention`` skips over
those and stops at the first entry that needs hzfast.protocol.node's full per-entry rule;
``keyed`` builds the kept entries' dict; ``keep_current`` keeps the member's earlier
entries behind the received ones and keeps the per-partition index of
:meth:`hzfast.protocol.Node._keep_current` up to date. Nothing is modified but the dicts
and sets passed in. Nothing raises on malformed entries: they are left to the Python rule.

Entries are read field by field, a dozen reads per entry on every list a member receives.
When the entry class is a slots dataclass (as MigrationInfo is), its fields are read
straight from their slots at the offsets the class's member descriptors give, checked
once per class, instead of through attribute lookup; any other class is read through
its attributes. An empty slot raises the AttributeError attribute lookup would.
"""

from cpython.dict cimport (PyDict_GetItem, PyDict_SetItem, PyDict_Contains, PyDict_Copy,
                           PyDict_Next)
from cpython.set cimport PySet_Add, PySet_Contains
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from cpython.long cimport PyLong_AsLongAndOverflow

cimport numpy as cnp

from hzfast._types cimport int32_t, intp_t
from hzfast._vector cimport table32, vector32
from hzfast.protocol._slots cimport slot_offset

cnp.import_array()


cdef enum:                         # the fields read, as numbered in _FIELDS
    F_ID = 0
    F_PARTITION, F_SOURCE, F_SCI, F_SNI, F_DCI, F_DNI, F_STATUS, F_FINAL, F_PROMOTION
    F_DESTINATION, F_INITIAL, F_MASTER
    N_FIELDS

_FIELDS = ("id", "partition", "source", "source_current_index", "source_new_index",
           "destination_current_index", "destination_new_index", "status", "final",
           "promotion", "destination", "initial", "master")
if len(_FIELDS) != N_FIELDS:       # _field indexes it unchecked
    raise ImportError("hzfast.protocol._lists: _FIELDS does not match its enum")

cdef object _slotted = None        # the class _offsets are for (held: its id stays its own)
cdef object _unslotted = None      # the last class found without them
cdef Py_ssize_t _offsets[N_FIELDS]
cdef bint _copyable = False        # _slotted's instances hold nothing but those slots


cdef bint _layout(object cls) except -1:
    """Whether every field of ``cls`` the kernels read is an object slot of it (then
    their offsets are in ``_offsets``)."""
    global _slotted, _unslotted, _copyable
    cdef Py_ssize_t offs[N_FIELDS]
    cdef int f
    if cls is _slotted:
        return True
    if cls is _unslotted or not isinstance(cls, type):
        return False
    for f in range(N_FIELDS):
        offs[f] = slot_offset(cls, _FIELDS[f])
        if offs[f] < 0:
            _unslotted = cls
            return False
    for f in range(N_FIELDS):
        _offsets[f] = offs[f]
    _slotted = cls
    _copyable = _only_fields(cls)
    return True


cdef bint _only_fields(object cls) except -1:
    """Whether an instance of ``cls`` holds exactly the ``_FIELDS`` slots: no other slot,
    no ``__dict__``, no ``__weakref__``, no base with state (``settled`` copies those)."""
    if cls.__dictoffset__ != 0 or cls.__weakrefoffset__ != 0:
        return False
    if cls.__base__ is not object or set(getattr(cls, "__slots__", ())) != set(_FIELDS):
        return False
    return cls.__basicsize__ == (<object>object).__basicsize__ + N_FIELDS * sizeof(PyObject*)


cdef inline object _field(object x, int f, bint slotted):
    """Field ``f`` of entry ``x`` (``slotted``: ``type(x)`` is the ``_slotted`` class)."""
    cdef PyObject* v
    if slotted:
        v = (<PyObject**>(<char*><PyObject*>x + _offsets[f]))[0]
        if v == NULL:
            raise AttributeError(_FIELDS[f])
        return <object>v
    return getattr(x, _FIELDS[f])


cdef inline bint _slots_of(object x) except -1:
    """Entry ``x``'s fields can be read from their slots."""
    return type(x) is _slotted or _layout(type(x))


cdef inline bint _small_int(object v, long lo, long hi, long* out):
    """``v`` is an int (exactly) in ``[lo, hi)``; its value in ``out``."""
    cdef int overflow = 0
    if type(v) is not int:
        return False
    cdef long x = PyLong_AsLongAndOverflow(v, &overflow)
    out[0] = x
    return not overflow and lo <= x < hi


cdef long _ANY = 1L << 62


cdef int32_t* _versions(object a, bint writeable, intp_t* n) except NULL:
    """``a``'s data: an int32 vector as ``const int32_t[::1]`` takes it (TypeError
    otherwise, as the node expects of a vector it cannot read)."""
    cdef int32_t* v
    if not vector32(a, writeable, &v, n):
        raise TypeError("versions must be a C-contiguous int32 numpy vector")
    return v


cdef bint _current(object x, const int32_t* versions, intp_t P) except -1:
    """Entry ``x``'s partition is at its final version (Python's ``==`` for an odd final;
    a partition outside the table is never current)."""
    cdef long p = 0, final = 0
    cdef int overflow = 0
    cdef bint slotted = _slots_of(x)
    part = _field(x, F_PARTITION, slotted)
    if type(part) is int:                   # the usual case, without Python comparisons
        p = PyLong_AsLongAndOverflow(part, &overflow)
        if overflow or not 0 <= p < P:
            return False
    elif not isinstance(part, int) or not 0 <= part < P:
        return False
    else:
        p = part
    fin = _field(x, F_FINAL, slotted)
    if type(fin) is int:
        final = PyLong_AsLongAndOverflow(fin, &overflow)
        return not overflow and versions[p] == final
    return bool(versions[p] == fin)


def attention(tuple lst, Py_ssize_t start, object versions, object info_type,
              long replica_count, set finalized, dict active, dict unconfirmed, long me,
              object replicas=None, object success=None, object failed=None):
    """The first index ``>= start`` of an entry of ``lst`` that needs the full rule (or
    ``len(lst)``): not an ``info_type`` with in-range fields and a settled int status, a
    partition held unconfirmed, a final version above ``versions``, or one this member
    (``me``) still has to finalize (not in ``finalized``, and either the migration active
    here or one of which ``me`` is a passive source: Node._finalize's two cases).

    Given ``replicas`` (the member's (P, R) table, R = ``replica_count``, writeable like
    ``versions``) and the two settled statuses, an entry above the member's version that
    the full rule would simply apply is applied here instead, in place, and passed over:
    well formed (``well_formed``), starting at the member's version, its status exactly
    ``success`` or ``failed``, nothing to finalize, and, for ``success``, fitting its row
    (``_fits``; one that does not is left to the full rule, which rejects it). A
    ``success`` entry's slot updates go into its row (``apply_to``), and its partition's
    version becomes its final one
    (a ``failed`` entry's final version already holds its increment). Anything else, or
    arrays it cannot write, stops there as before."""
    cdef Py_ssize_t i, n = len(lst)
    cdef intp_t P, rows = -1, R = 0
    cdef const int32_t* vers = _versions(versions, False, &P)
    cdef int32_t* vw = NULL
    cdef int32_t* table = NULL
    cdef long p = 0, final = 0, v = 0, initial = 0
    cdef object x
    cdef bint s = _layout(info_type)
    cdef bint applying = (replicas is not None and s and success is not None
                          and failed is not None and vector32(versions, True, &vw, &P)
                          and table32(replicas, True, &table, &rows, &R)
                          and rows == P and R == replica_count)
    for i in range(start, n):
        x = lst[i]
        if type(x) is not info_type:
            return i
        if not _small_int(_field(x, F_PARTITION, s), 0, P, &p):
            return i
        if not _small_int(_field(x, F_DNI, s), 0, replica_count, &v) \
                or not _small_int(_field(x, F_SCI, s), -1, replica_count, &v) \
                or not _small_int(_field(x, F_SNI, s), -1, replica_count, &v) \
                or not _small_int(_field(x, F_DCI, s), -1, replica_count, &v):
            return i
        st = _field(x, F_STATUS, s)
        if not isinstance(st, int) or st == 0:     # ACTIVE: malformed in a completed list
            return i
        if unconfirmed and PyDict_Contains(unconfirmed, p):
            return i
        if not _small_int(_field(x, F_FINAL, s), -_ANY, _ANY, &final):
            return i
        if final > vers[p]:                        # to apply: here, or by the full rule
            if not applying or (st is not success and st is not failed) \
                    or not _well_formed(x, P, replica_count) \
                    or not _small_int(_field(x, F_INITIAL, True), 0, _VERSION_END, &initial) \
                    or initial != vers[p] or _to_finalize(x, p, s, finalized, active, me):
                return i
            if st is success and _apply_fitting(table + p * R, R, x) != 1:
                return i                           # (the full rule rejects a misfit)
            vw[p] = <int32_t>final
        elif _to_finalize(x, p, s, finalized, active, me):
            return i
    return n


cdef bint _to_finalize(object x, long p, bint s, set finalized, dict active,
                       long me) except -1:
    """Whether Node._finalize acts on entry ``x`` (of partition ``p``) on this member
    (``me``): not finalized yet, and either the migration active here or one of which
    ``me`` is a passive source."""
    mid = _field(x, F_ID, s)
    if PySet_Contains(finalized, mid):
        return False
    act = active.get(p)
    if act is not None and act.id == mid:
        return True
    return (_field(x, F_SOURCE, s) == me and _field(x, F_SCI, s) > 0
            and not _field(x, F_PROMOTION, s))


def of_partition(dict entries, object partition):
    """``tuple(x for x in entries.values() if x.partition == partition)``, in order: the
    completed migrations of one partition, as a migration request carries them."""
    cdef list out = []
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    cdef object x
    while PyDict_Next(entries, &pos, &k, &v):
        x = <object>v
        if _field(x, F_PARTITION, _slots_of(x)) == partition:
            out.append(x)
    return tuple(out)


cdef Py_ssize_t _shared_front(dict a, dict b) except -1:
    """How many leading entries ``a`` and ``b`` share, key and value the same objects, in
    order (no hashing: the two dicts are walked side by side)."""
    cdef Py_ssize_t pa = 0, pb = 0, n = 0
    cdef PyObject* ka
    cdef PyObject* va
    cdef PyObject* kb
    cdef PyObject* vb
    while PyDict_Next(a, &pa, &ka, &va) and PyDict_Next(b, &pb, &kb, &vb):
        if ka != kb or va != vb:
            break
        n += 1
    return n


def keyed(tuple lst, Py_ssize_t stop, dict head=None):
    """``{x.id: x for x in lst[:stop]}`` (a later duplicate id takes the first's place;
    ``stop`` past the end: the whole list, below 0: none).

    ``head``: the member's previous list head (its keys each value's id, as ``keyed``
    and the node make them). When ``lst`` starts with ``head``'s values, the same objects
    in the same order, the result starts as a copy of ``head`` (no key hashed again)."""
    cdef dict out
    cdef Py_ssize_t i, start = 0, n
    cdef object x
    cdef PyObject* k
    cdef PyObject* v
    cdef Py_ssize_t pos = 0
    stop = max(0, min(stop, len(lst)))        # (reads below are unchecked)
    if head is not None and 0 < len(head) <= stop:
        n = len(head)
        while PyDict_Next(head, &pos, &k, &v):
            if start >= n or <object>v is not lst[start] \
                    or <object>k is not _field(<object>v, F_ID, _slots_of(<object>v)):
                break
            start += 1
    if start and start == len(head):
        out = PyDict_Copy(head)
    else:
        out = {}
        start = 0
    for i in range(start, stop):
        x = lst[i]
        PyDict_SetItem(out, _field(x, F_ID, _slots_of(x)), x)
    return out


cdef inline bint _differ(const int32_t* a, const int32_t* b, intp_t n) noexcept nogil:
    """Any ``a[i] != b[i]`` (branch-free: the compiler vectorises it)."""
    cdef int32_t acc = 0
    cdef intp_t i
    for i in range(n):
        acc |= a[i] != b[i]
    return acc != 0


def plain_vector(object a):
    """Whether ``a`` is an int32 vector the kernels here read in place (an aligned,
    native-order, C-contiguous, 1-D int32 numpy array)."""
    cdef int32_t* v
    cdef intp_t n = 0
    return vector32(a, False, &v, &n)


def unchanged(object versions, object seen):
    """Whether ``versions`` and ``seen`` are int32 vectors (as :func:`keep_current` takes
    them) holding the same values; False for anything else. With nothing received, no id
    to recheck and the versions :func:`keep_current` saw last, it would drop nothing and
    leave the list's entries in their order: the node skips the call then (§11)."""
    cdef int32_t* a
    cdef int32_t* b
    cdef intp_t n = 0, m = 0
    if not vector32(versions, False, &a, &n) or not vector32(seen, False, &b, &m) or n != m:
        return False
    return not _differ(a, b, n)


cdef inline PyObject* _find(object mid, dict head, dict front, dict back):
    """The entry of id ``mid`` in the member's list (its three parts), or NULL."""
    cdef PyObject* x = PyDict_GetItem(head, mid)
    if x == NULL:
        x = PyDict_GetItem(front, mid)
        if x == NULL:
            x = PyDict_GetItem(back, mid)
    return x


def keep_current(dict keep, dict head, dict front, dict back, set recheck, dict index,
                 object versions, object seen):
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
    cdef intp_t P, q, n
    cdef const int32_t* vers = _versions(versions, False, &P)
    cdef int32_t* last = _versions(seen, True, &n)
    cdef PyObject* prev
    if n != P:
        raise ValueError("seen must have the length of versions")
    cdef object mid, x, ids
    cdef list drop = []
    cdef list moved = []
    if _differ(vers, last, P):
        for q in range(P):
            if vers[q] != last[q]:
                ids = index.get(q)
                if ids:
                    recheck.update(ids)
                last[q] = vers[q]
    for mid in recheck:
        if PyDict_Contains(keep, mid):
            continue
        prev = _find(mid, head, front, back)
        if prev != NULL and not _current(<object>prev, vers, P):
            drop.append(mid)
    # ``head`` is often the front of ``keep``, entry for entry (the master's list grew by
    # the migrations completed since): those entries need only the "current?" test, and
    # none of ``head`` is left over for ``front``
    cdef Py_ssize_t nhead = len(head), shared = _shared_front(keep, head), seen_head = 0
    cdef bint extends = keep is not head and shared == nhead
    cdef set out = set()
    cdef dict part_of
    for mid, x in keep.items():
        if extends and seen_head < nhead:
            seen_head += 1               # (mid, x) is head's own entry at this place
            if not _current(x, vers, P):
                PySet_Add(out, mid)
            continue
        part = _field(x, F_PARTITION, _slots_of(x))
        part_of = head
        prev = PyDict_GetItem(head, mid)
        if prev == NULL and (front or back):
            part_of = front
            prev = PyDict_GetItem(front, mid)
            if prev == NULL:
                part_of = back
                prev = PyDict_GetItem(back, mid)
        if prev == NULL or <object>prev is not x:
            ids = index.get(part)
            if ids is None:
                index[part] = {mid}
            else:
                PySet_Add(ids, mid)
        if prev != NULL and part_of is not head:
            del part_of[mid]             # in keep now (head, front and back stay disjoint)
        if not _current(x, vers, P):
            PySet_Add(out, mid)
    cdef set dropped = set(drop)
    for mid in drop:
        x = <object>_find(mid, head, front, back)
        ids = index.get(_field(x, F_PARTITION, _slots_of(x)))
        if ids is not None:
            ids.discard(mid)
        if front and PyDict_Contains(front, mid):
            del front[mid]
        elif back and PyDict_Contains(back, mid):
            del back[mid]
    if keep is head or extends:
        return out
    # the previous head's other entries, in its order, at the front of the retained ones
    for mid, x in head.items():
        if not PyDict_Contains(keep, mid) and not (dropped and PySet_Contains(dropped, mid)):
            moved.append((mid, x))
    cdef Py_ssize_t i
    for i in range(len(moved) - 1, -1, -1):
        mid, x = moved[i]
        PyDict_SetItem(front, mid, x)
    return out


cdef long _INT32_END = 1L << 31    # versions and member ids travel as int32
# versions a member accepts from others: below 2**30, so the bumps a master adds on
# failures can never wrap an int32 (an honest partition would need a billion changes)
cdef long _VERSION_END = 1L << 30


def well_formed(object x, object info_type, long partition_count, long replica_count):
    """Whether ``x`` is an ``info_type`` (MigrationInfo, exactly) whose fields are
    ints, exactly, within the ranges Node._check_migration requires: partition in
    ``[0, partition_count)``, destination new index in ``[0, replica_count)``, the other
    indices in ``[-1, replica_count)``, ``0 <= initial <= final < 2**31``, source and
    destination in ``[-1, 2**31)``, master in ``[0, 2**31)``. False means "not shown
    here": the Python rule decides (and names the problem)."""
    if type(x) is not info_type or not _layout(info_type):
        return False
    return _well_formed(x, partition_count, replica_count)


cdef bint _well_formed(object x, long partition_count, long replica_count) except -1:
    """:func:`well_formed` for an entry of the ``_slotted`` class."""
    cdef long v = 0, initial = 0, final = 0
    return (_small_int(_field(x, F_PARTITION, True), 0, partition_count, &v)
            and _small_int(_field(x, F_DNI, True), 0, replica_count, &v)
            and _small_int(_field(x, F_SCI, True), -1, replica_count, &v)
            and _small_int(_field(x, F_SNI, True), -1, replica_count, &v)
            and _small_int(_field(x, F_DCI, True), -1, replica_count, &v)
            and _small_int(_field(x, F_INITIAL, True), 0, _VERSION_END, &initial)
            and _small_int(_field(x, F_FINAL, True), initial, _VERSION_END, &final)
            and _small_int(_field(x, F_SOURCE, True), -1, _INT32_END, &v)
            and _small_int(_field(x, F_DESTINATION, True), -1, _INT32_END, &v)
            and _small_int(_field(x, F_MASTER, True), 0, _INT32_END, &v))


cdef int32_t* _row(object table, object partition, intp_t* width) noexcept:
    """The data of row ``partition`` of ``table`` when ``table`` is a writeable, aligned,
    native-order, C-contiguous 2-D int32 ndarray and ``partition`` an int row index in
    range; NULL otherwise."""
    cdef int32_t* data
    cdef intp_t rows
    cdef long p = 0
    if not table32(table, True, &data, &rows, width) or not _small_int(partition, 0, rows, &p):
        return NULL
    return data + p * width[0]


def apply_to(object table, object partition, object x, object info_type):
    """Apply migration ``x``'s slot updates to row ``partition`` of ``table`` in place
    (as Node's ``apply_to_row`` does: source and destination current index cleared, then
    source and destination written at their new indices) and return True, when ``table``
    is a writeable C-contiguous int32 (P, R) array, ``partition`` an int in range, ``x`` an
    ``info_type`` (MigrationInfo, exactly) and its indices and members ints within the row
    and int32. Otherwise return False without writing anything (the caller applies the
    Python rule)."""
    cdef intp_t R
    if type(x) is not info_type or not _layout(info_type):
        return False
    cdef int32_t* row = _row(table, partition, &R)
    if row == NULL:
        return False
    return _apply(row, R, x)


def apply_fitting(object table, object partition, object x, object info_type):
    """Apply migration ``x`` to row ``partition`` of ``table`` in place when it fits the
    row (Node's ``migration_fits_row``) and return 1; return 0, nothing written, when it
    does not fit; -1, nothing written, when this cannot read them (the conditions of
    :func:`apply_to`; the caller applies the Python rule)."""
    cdef intp_t R
    if type(x) is not info_type or not _layout(info_type):
        return -1
    cdef int32_t* row = _row(table, partition, &R)
    if row == NULL:
        return -1
    return _apply_fitting(row, R, x)


cdef inline bint _fields(object x, intp_t R, long* sci, long* dci, long* sni, long* dni,
                         long* source, long* destination) except -1:
    """``x``'s slot fields (indices within the row, members within int32), or False."""
    return (_small_int(_field(x, F_SCI, True), -1, R, sci)
            and _small_int(_field(x, F_DCI, True), -1, R, dci)
            and _small_int(_field(x, F_SNI, True), -1, R, sni)
            and _small_int(_field(x, F_DNI, True), -1, R, dni)
            and _small_int(_field(x, F_SOURCE, True), -_INT32_END, _INT32_END, source)
            and _small_int(_field(x, F_DESTINATION, True), -_INT32_END, _INT32_END,
                           destination))


cdef inline bint _held_elsewhere(const int32_t* row, intp_t R, long member, long sci,
                                 long dci, long sni, long dni) noexcept:
    """Whether ``member`` sits in a slot of the row that the migration leaves alone."""
    cdef intp_t j
    for j in range(R):
        if j != sni and j != dni and j != sci and j != dci and row[j] == member:
            return True
    return False


cdef bint _fits(const int32_t* row, intp_t R, long sci, long dci, long sni, long dni,
                long source, long destination) noexcept:
    """The row is the one the migration was made from (its source at ``sci``, its
    destination at ``dci``, where those are slots), and what it writes is a member or -1
    that the row, once applied, holds nowhere else (docs/design.md §7.5: an entry that
    does not fit is rejected like one whose version does not line up). ``_write``'s
    order: ``sci`` and ``dci`` cleared, then ``source`` at ``sni``, ``destination`` at
    ``dni`` (which wins when they are one slot)."""
    if sci >= 0 and row[sci] != source or dci >= 0 and row[dci] != destination:
        return False
    if sni >= 0 and sni != dni:                      # the source is written
        if source < -1 or source >= 0 and (
                _held_elsewhere(row, R, source, sci, dci, sni, dni)
                or dni >= 0 and destination == source):
            return False
    if dni >= 0:                                     # the destination is written
        if destination < -1 or destination >= 0 and \
                _held_elsewhere(row, R, destination, sci, dci, sni, dni):
            return False
    return True


cdef inline void _write(int32_t* row, long sci, long dci, long sni, long dni, long source,
                        long destination) noexcept:
    """Hazelcast's slot updates: ``sci`` and ``dci`` cleared, then the source written at
    ``sni`` and the destination at ``dni``."""
    if sci >= 0:
        row[sci] = -1
    if dci >= 0:
        row[dci] = -1
    if sni >= 0:
        row[sni] = <int32_t>source
    if dni >= 0:
        row[dni] = <int32_t>destination


cdef bint _apply(int32_t* row, intp_t R, object x) except -1:
    """:func:`apply_to` on a row of width ``R``, for an entry of the ``_slotted`` class
    (False, nothing written: a field out of range)."""
    cdef long sci = 0, dci = 0, sni = 0, dni = 0, source = 0, destination = 0
    if not _fields(x, R, &sci, &dci, &sni, &dni, &source, &destination):
        return False
    _write(row, sci, dci, sni, dni, source, destination)
    return True


cdef int _apply_fitting(int32_t* row, intp_t R, object x) except -2:
    """1: ``x`` fits the row (``_fits``) and is applied, as :func:`_apply` applies it;
    0: it does not fit; -1: a field out of range (nothing written in either case)."""
    cdef long sci = 0, dci = 0, sni = 0, dni = 0, source = 0, destination = 0
    if not _fields(x, R, &sci, &dci, &sni, &dni, &source, &destination):
        return -1
    if not _fits(row, R, sci, dci, sni, dni, source, destination):
        return 0
    _write(row, sci, dci, sni, dni, source, destination)
    return 1


cdef extern from "Python.h":
    ctypedef struct _TypeObject "PyTypeObject":
        PyObject* (*tp_alloc)(_TypeObject*, Py_ssize_t)


def settled(object x, object status, object final, object info_type):
    """A new ``info_type`` with ``x``'s field values, but ``status``, and ``final`` unless
    it is None: what the class's constructor makes from those values (nothing is
    validated), when ``x`` is an ``info_type`` (MigrationInfo, exactly) whose instances
    hold nothing but its fields, every one set. None otherwise (the caller builds it)."""
    cdef int f
    cdef PyObject* v
    if type(x) is not info_type or not _layout(info_type) or not _copyable:
        return None
    for f in range(N_FIELDS):
        if (<PyObject**>(<char*><PyObject*>x + _offsets[f]))[0] == NULL:
            return None
    cls = type(x)
    cdef _TypeObject* tp = <_TypeObject*><PyObject*>cls
    cdef PyObject* obj = tp.tp_alloc(tp, 0)
    if obj == NULL:
        raise MemoryError()
    out = <object>obj                # owns the new reference (one extra, dropped below)
    Py_DECREF(out)
    for f in range(N_FIELDS):
        if f == F_STATUS:
            v = <PyObject*>status
        elif f == F_FINAL and final is not None:
            v = <PyObject*>final
        else:
            v = (<PyObject**>(<char*><PyObject*>x + _offsets[f]))[0]
        Py_INCREF(<object>v)
        (<PyObject**>(<char*>obj + _offsets[f]))[0] = v
    return out
