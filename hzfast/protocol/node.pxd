# Augmenting declarations for hzfast/protocol/node.py, compiled with Cython (setup.py
# COMPILED_PY; docs/design.md §11 "Speed"). The .py stays the source of truth: this file
# only makes Node and _Run extension types whose attributes are C struct fields (no
# instance dict), with C types where a value is always of that type. Every attribute of
# the .py is declared here (an extension type takes no other); all stay readable and
# writable from Python.

cdef class _Run:
    cdef public object executor
    cdef public object core
    cdef public object ids
    cdef public dict inflight
    cdef public bint aborted
    cdef public Py_ssize_t changes
    cdef public Py_ssize_t idle_at


cdef class Node:
    cdef public object me
    cdef public object config
    cdef public bint _legacy
    cdef public Py_ssize_t _P
    cdef public Py_ssize_t _R
    cdef public Py_ssize_t _bc
    cdef public object _timeout
    cdef public object replicas
    cdef public object versions
    cdef public bint initialized
    cdef public tuple members
    cdef public frozenset lite
    cdef public dict _completed
    cdef public dict _front
    cdef public dict _back
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
    cdef public object _seq
    cdef public _Run _run
    cdef public object _run_plan
    cdef public object _legacy_seen
    cdef public bint _dirty
    cdef public object _paused_until
    cdef public dict _fetching
    cdef public dict _promotions
    cdef public object _promotion_seq
    cdef public tuple _publish
    cdef public bint _check_timer
    cdef public bint _was_master
    cdef public set _told
    cdef public object diverged
    cdef public dict _kc_dict
    cdef public Py_ssize_t _kc_len
    cdef public object _kc_vers
    cdef public dict _kc_index
    cdef public set _kc_recheck
    cdef public dict _deadlines
    cdef public object _wake
    cdef public bint _waking

    # the per-event helpers: C calls inside the module, still methods from Python
    cpdef _drain(self)
    cpdef _send(self, to, m)
    cpdef _mark(self, name, x=*, partition=*, detail=*)
    cpdef _effect(self, kind, partition, x=*, to=*)
    cpdef _timer_set(self, key, delay)
    cpdef _timer_cancel(self, key)
    cpdef _wake_up(self)
    cpdef _settle(self)
    cpdef _reject(self, sender, m, why)
    cpdef _receive(self, sender, m)
    cpdef _effect_done(self, eid, ok)
    cpdef _completed_tuple(self)
    cpdef _completed_of(self, p)
    cpdef _apply_completed(self, lst)
    cpdef _keep_current(self, keep)
    cpdef _put_completed(self, x)
    cpdef _finalize(self, x)
    cpdef _from_master(self, m)
    cpdef _check_migration(self, x)
    cpdef _destination_commit(self, x)
    cpdef _master_commit(self, x)
    cpdef _fail(self, x, notify, why)
    cpdef _publish_completed(self)
    cpdef _table_message(self)
    cpdef _master_step(self)
    cpdef _drive(self)
    cpdef _start(self, i)
    cpdef _info(self, plan, i, ids)


cpdef apply_to_row(row, x)
cpdef _apply_row(table, p, x)
cpdef bint _apply_fitting_row(table, p, x) except -1
cpdef _settled(x, status, final=*)
cpdef _finished(_Run run, i, ok)
