# Augmenting declarations for hzfast/protocol/core.py, compiled with Cython (setup.py
# COMPILED_PY; docs/design.md §11). The .py stays the source of truth: this file makes
# NodeCore an extension type whose fields are C struct fields (read directly by the node's
# parts, member.py and master.py, which are extension types of it too), and its per-event
# helpers C calls from those parts. Every field of the .py is declared here; all stay
# readable and writable from Python. Only NodeCore has C methods: the parts add none, so
# hzfast.protocol.Node can derive from both with one method table.

cdef class NodeCore:
    cdef public object me
    cdef public object config
    cdef public object _design
    cdef public Py_ssize_t _P
    cdef public Py_ssize_t _R
    cdef public Py_ssize_t _bc
    cdef public object _timeout
    cdef public object replicas
    cdef public object versions
    cdef public bint initialized
    cdef public object term
    cdef public object stale_term
    cdef public tuple members
    cdef public frozenset lite
    cdef public object _list
    cdef public dict active
    cdef public dict _carried
    cdef public dict _install_eid
    cdef public dict _unconfirmed
    cdef public dict _waiters
    cdef public set _finalized
    cdef public dict _finalizing
    cdef public dict _kept
    cdef public dict _effects
    cdef public object _effect_seq
    cdef public list _out
    cdef public object _inbox
    cdef public object _now
    cdef public object phase
    cdef public object _seq
    cdef public object _run
    cdef public dict _fetching
    cdef public dict _promotions
    cdef public object _promotion_seq
    cdef public bint _dirty
    cdef public object _paused_until
    cdef public tuple _publish
    cdef public bint _check_timer
    cdef public dict _deadlines
    cdef public object _wake
    cdef public bint _waking
    cdef public set _told
    cdef public object diverged
    cdef public object dropped
    cdef dict __dict__                  # (Node and tests add their own attributes)

    cpdef _send(self, to, m)
    cpdef _timer_set(self, key, delay)
    cpdef _timer_cancel(self, key)
    cpdef _reject(self, sender, m, why)
    cpdef _check_migration(self, x)
