# Augmenting declarations for hzfast/protocol/membership.py, compiled with Cython (setup.py
# COMPILED_PY; docs/speed.md §2). The .py stays the source of truth: Membership becomes an
# extension type whose fields are C struct fields, and the steps every heartbeat and every
# tick take are C calls. Every field stays readable and writable from Python, and a
# subclass (a test's broken rule) still overrides any method.

cimport cython


cdef class Membership:
    cdef public object me
    cdef public object config
    cdef public object _T
    cdef public object _wait
    cdef public object list
    cdef public bint removed
    cdef public tuple promised
    cdef public object accepted
    cdef public tuple _accepted_base
    cdef public frozenset _vouch
    cdef public dict _heard
    cdef public dict _their_sent
    cdef public dict _echo
    cdef public set _known
    cdef public set _joiners
    cdef public set _departed
    cdef public object _round
    cdef public object _adopted_at
    cdef public object _asking_since
    cdef public object _removed_by
    cdef public dict _last_vouch
    cdef public dict _their_promised
    cdef public list _deferred
    cdef public object _now
    cdef public object _last_tick
    cdef public bint _started
    cdef public list _out
    cdef dict __dict__                  # (a test's subclass adds its own attributes)

    cpdef list handle(self, event, now)
    cpdef set suspects(self, now)
    @cython.locals(echo=dict, members=tuple, e=tuple, n=Py_ssize_t, q=Py_ssize_t)
    cpdef bint may_serve(self, now) except -1
    cpdef _tick(self)
    @cython.locals(sent=dict, last=dict)
    cpdef _heartbeats(self)
    cpdef _send(self, to, m)
    cpdef _mark(self, name, detail=*)
    cpdef _release(self)
