# Augmenting declarations for hzfast/sim/cluster.py, compiled with Cython (setup.py
# COMPILED_PY; docs/speed.md §2). The .py stays the source of truth: Simulation becomes
# an extension type whose layers are typed fields, so the event loop's calls into the
# network, the data and the checker are C calls. Every attribute stays readable from
# Python.

cimport cython

from hzfast.sim._queue cimport EventQueue
from hzfast.sim.checks cimport Checker
from hzfast.sim.data cimport Data
from hzfast.sim.members cimport Members
from hzfast.sim.network cimport Network
from hzfast.sim.timeline cimport Timeline


cdef class Simulation:
    cdef readonly object rng
    cdef readonly object getrandbits
    cdef public object seed
    cdef public str design
    cdef public bint trace_on
    cdef readonly object fp
    cdef public object config
    cdef public object result
    cdef readonly Timeline tl
    cdef public dict marks
    cdef public dict nodes
    cdef public list view
    cdef public set lite
    cdef public Py_ssize_t view_no
    cdef public dict seen_view
    cdef public Py_ssize_t next_id
    cdef public dict timer_tok
    cdef public dict effect_free
    cdef public list script
    cdef public object recent
    cdef public list trace
    cdef public Py_ssize_t events
    cdef public object hooks
    cdef readonly Network net
    cdef readonly Data data
    cdef readonly Checker checks
    cdef public Py_ssize_t initial_members
    cdef public list reachable
    cdef public object members
    cdef public str merge_policy
    cdef public object _view_key

    @cython.locals(tl=Timeline, queue=EventQueue, nodes=dict, data=Data, checks=Checker,
                   members=Members)
    cpdef _run(self)
    cpdef _handle(self, mid, ev)
    cpdef _on_mark(self, mid, mk, list crash)
    cpdef _ms(self, changed, removed, mid)
    cpdef crash(self, m, why)
