# Augmenting declarations for hzfast/sim/checks.py, compiled with Cython (setup.py
# COMPILED_PY; docs/speed.md §2). The .py stays the source of truth: Checker becomes an
# extension type whose hooks the event loop calls as C calls.

cimport cython

from hzfast.sim.data cimport Data
from hzfast.sim.timeline cimport Timeline


cdef class Checker:
    cdef readonly Timeline tl
    cdef readonly Data data
    cdef readonly object config
    cdef readonly dict nodes
    cdef readonly list view
    cdef readonly set lite
    cdef readonly bint safe
    cdef readonly bint strict
    cdef readonly Py_ssize_t bc
    cdef readonly Py_ssize_t P
    cdef public dict last_versions
    cdef public set committed
    cdef readonly Py_ssize_t limit
    cdef public dict in_flight
    cdef public dict load
    cdef public dict published
    cdef public object cluster_of
    cdef public bint protected

    cpdef add_member(self, m, node)
    cpdef crash(self, m)
    cpdef list data_view(self)
    cpdef after_event(self, mid, node)
    cpdef on_mark(self, mid, name, x)
    cpdef on_effect(self, mid, e)
    cpdef on_publish(self, mid, to, m)
    cpdef on_publish_ack(self, src, dst, m)
    @cython.locals(flying=dict, load=dict)
    cpdef _started(self, mid, x)
    @cython.locals(flying=dict, load=dict)
    cpdef _ended(self, mid, x)
    cpdef _evicted(self, mid)
    cpdef agreement(self, mid=*)
    cpdef bint _disagree(self, a, b) except -1
    cpdef bint settled(self) except -1
