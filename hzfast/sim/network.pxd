# Augmenting declarations for hzfast/sim/network.py, compiled with Cython (setup.py
# COMPILED_PY; docs/speed.md §2). The .py stays the source of truth: Network becomes an
# extension type whose rates are C fields, read by the data layer and the event loop.

cimport cython

from hzfast.sim.timeline cimport Timeline


cdef class Network:
    cdef readonly Timeline tl
    cdef readonly object rng
    cdef readonly object fp
    cdef readonly double drop
    cdef readonly double duplicate
    cdef readonly double slow
    cdef readonly object max_delay      # (an int: `10 * max_delay` stays exact)
    cdef readonly object random
    cdef readonly object getrandbits
    cdef public bint faulty
    cdef public dict clogged
    cdef public dict filters
    cdef public set cut

    @cython.locals(tl=Timeline)
    cpdef deliver(self, src, dst, m, term=*)
    cpdef bint lost(self) except -1
    cpdef delay(self)
    cpdef clog(self, list view)
    cpdef filter(self)
    cpdef heal(self)
