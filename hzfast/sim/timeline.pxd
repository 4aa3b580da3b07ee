# Augmenting declarations for hzfast/sim/timeline.py, compiled with Cython (setup.py
# COMPILED_PY; docs/speed.md §2). The .py stays the source of truth: Timeline becomes an
# extension type whose fields the other layers read as C struct fields.

cimport cython

from hzfast.sim._queue cimport EventQueue


cdef class Timeline:
    cdef public EventQueue queue
    cdef public Py_ssize_t seq
    cdef public object now
    cdef public dict injected
    cdef public list violations

    cpdef push(self, t, kind, payload)
    cpdef inject(self, kind)
    cpdef violation(self, text)


cpdef long randint(rng, long lo, long hi) except? -1
@cython.locals(n=long, k=int, r=long)
cpdef long randbits(getrandbits, long lo, long hi) except? -1
