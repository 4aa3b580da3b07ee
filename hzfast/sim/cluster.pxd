# Augmenting declarations for hzfast/sim/cluster.py, compiled with Cython (setup.py
# COMPILED_PY; docs/design.md §12 "Speed"). The .py stays the source of truth: this file
# makes Simulation an extension type whose attributes are C struct fields, with C types
# where a value is always of that type. Every attribute of the .py is declared here; all
# stay readable from Python, and writable but for the generator and the fault plan, which
# the rates and bound methods beside them are copied from once; a Python subclass
# (hzfast.sim.scenario) still overrides any method and adds its own attributes.

cimport cython

from hzfast.sim._queue cimport EventQueue


cdef class Simulation:
    cdef readonly object rng
    cdef public object seed
    cdef public str design
    cdef public bint trace_on
    cdef public bint strict
    cdef readonly object fp
    cdef readonly double drop
    cdef readonly double duplicate
    cdef readonly double slow
    cdef readonly object max_delay      # (an int: `10 * max_delay` stays exact)
    cdef readonly object random
    cdef readonly object getrandbits
    cdef public object config
    cdef public Py_ssize_t bc
    cdef public Py_ssize_t P
    cdef public object result
    cdef public dict injected
    cdef public dict marks
    cdef public list violations
    cdef public EventQueue queue
    cdef public Py_ssize_t seq
    cdef public object now
    cdef public dict nodes
    cdef public list view
    cdef public Py_ssize_t view_no
    cdef public dict seen_view
    cdef public Py_ssize_t next_id
    cdef public dict store
    cdef public dict staged
    cdef public dict timer_tok
    cdef public dict last_versions
    cdef public set committed
    cdef public bint faulty
    cdef public dict clogged
    cdef public dict filters
    cdef public list script
    cdef public object recent
    cdef public list trace
    cdef public Py_ssize_t events
    cdef public object part_of
    cdef public dict keys_of
    cdef public dict pending
    cdef public dict acked
    cdef public dict attempted
    cdef public dict crashes
    cdef public dict lost_by_clear
    cdef public dict expected_lost
    cdef public Py_ssize_t write_batches
    cdef public dict write_tries
    cdef public object write_window
    cdef public Py_ssize_t sync_ticks
    cdef public dict sync_free
    cdef public dict effect_free
    cdef public Py_ssize_t initial_members
    cdef public Py_ssize_t limit
    cdef public dict in_flight
    cdef public dict load
    cdef public dict published

    # the per-event steps: C calls inside the module; a Python subclass still overrides
    # them (hzfast.sim.scenario.ScenarioSimulation)
    cpdef _push(self, t, kind, payload)
    cpdef _inject(self, kind)
    cpdef _deliver(self, src, dst, m)
    cpdef _handle(self, mid, ev)
    cpdef _on_mark(self, mid, mk, crash)
    cpdef _effect(self, mid, e)
    cpdef _arrive(self, src, to, kind, p, x, snap, eid)
    cpdef _write(self, p)
    cpdef _violation(self, text)
    cpdef _clear(self, m, p)
    cpdef _stable(self, p, held, row)
    cpdef _committed_row(self, p)
    @cython.locals(flying=dict, load=dict)
    cpdef _started(self, mid, x)
    @cython.locals(flying=dict, load=dict)
    cpdef _ended(self, mid, x)
    cpdef _published(self, mid, to, m)
    cpdef _evicted(self, mid)
    cpdef _check_agreement(self, mid=*)
    cpdef bint _disagree(self, a, b) except -1


cpdef long _randint(rng, long lo, long hi) except? -1
@cython.locals(n=long, k=int, r=long)
cpdef long _randbits(getrandbits, long lo, long hi) except? -1
cpdef list _bits(mask)
@cython.locals(j=Py_ssize_t)
cpdef _count_crash(list levels, held, first)
cpdef _forget(list levels, mask)
