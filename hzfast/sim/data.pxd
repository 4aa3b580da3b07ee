# Augmenting declarations for hzfast/sim/data.py, compiled with Cython (setup.py
# COMPILED_PY; docs/speed.md §2). The .py stays the source of truth: Data becomes an
# extension type whose fields are C struct fields; all stay readable from Python.

cimport cython

from hzfast.sim.network cimport Network
from hzfast.sim.timeline cimport Timeline


cdef class Data:
    cdef readonly Timeline tl
    cdef readonly Network net
    cdef readonly object rng
    cdef readonly dict nodes
    cdef readonly list view
    cdef readonly Py_ssize_t P
    cdef readonly Py_ssize_t bc
    cdef public dict store
    cdef public dict staged
    cdef public object part_of
    cdef public dict keys_of
    cdef public dict pending
    cdef public dict acked
    cdef public dict attempted
    cdef public dict crashes
    cdef public dict lost_to_crashes
    cdef public dict lost_to_few_crashes
    cdef public dict lost_to_clear
    cdef public dict lost_to_split_brain
    cdef public dict merging
    cdef public object serves
    cdef public Py_ssize_t write_batches
    cdef public dict write_tries
    cdef public object write_window
    cdef public Py_ssize_t sync_ticks
    cdef public dict sync_free

    cpdef add_member(self, m)
    cpdef crash(self, m)
    cpdef remove(self, m, bint merge)
    @cython.locals(net=Network, tl=Timeline)
    cpdef write(self, p)
    @cython.locals(tl=Timeline)
    cpdef merge(self, p)
    @cython.locals(net=Network, nodes=dict)
    cpdef bint _put(self, p, batch, bint attempt) except -1
    @cython.locals(tl=Timeline)
    cpdef effect(self, mid, e)
    cpdef arrive(self, src, to, kind, p, x, snap, eid)
    cpdef sync_start(self, src, to, p, eid, d)
    cpdef committed_row(self, p)
    cpdef stable(self, p, held, row)
    cpdef list _crash_levels(self, p)
    cpdef _ghost_crash(self, m)
    cpdef clear(self, m, p)
    cpdef _others(self, m, p)
    cpdef _vanished(self, p, crashes, few, clear, split=*)


@cython.locals(j=Py_ssize_t)
cpdef count_crash(list levels, held, first)
cpdef forget(list levels, mask)
cpdef list bits(mask)
