# Augmenting declarations for hzfast/sim/members.py, compiled with Cython (setup.py
# COMPILED_PY; docs/speed.md §2). The .py stays the source of truth: Members becomes an
# extension type whose fields are C struct fields, so the checks made at every write (the
# lease, the writer check) and the routing of every heartbeat read them directly. Every
# field stays readable and writable from Python.

cimport cython

from hzfast.protocol.core cimport NodeCore
from hzfast.protocol.membership cimport Membership
from hzfast.sim.network cimport Network
from hzfast.sim.timeline cimport Timeline


cdef class Members:
    cdef public object factory
    cdef public Timeline tl
    cdef public Network net
    cdef public dict nodes
    cdef public object config
    cdef public bint protected
    cdef public dict ms
    cdef public dict out
    cdef public dict timer_tok
    cdef public dict paused
    cdef public dict backlog
    cdef public dict committed
    cdef public dict term_master
    cdef public tuple newest
    cdef public list known
    cdef public dict _lease
    cdef public object _lease_at

    cpdef tuple receive(self, src, dst, m)
    cpdef tuple timer(self, mid, tok)
    @cython.locals(tl=Timeline, node=Membership)
    cpdef tuple handle(self, mid, ev)
    @cython.locals(ms=Membership)
    cpdef bint _leased(self, m, now) except -1
    @cython.locals(node=NodeCore)
    cpdef _check_writer(self, m, p, now)
