"""The simulator's event queue: a binary min-heap of event keys in C (docs/design.md §12).

A run pushes and pops some 9,000 events. Each has a time, a sequence number (unique, in
the order the events were queued) and a kind and payload, and the events run in (time,
sequence) order. Here each event's key ``(time << 40) | sequence`` (one compare instead
of two) is made in C and sits in a C array with the index of a slot in two lists that
hold the kind and payload, so sifting compares C integers and moves 16-byte entries, with
no Python int arithmetic or comparisons and no dict keyed by the key. Popping returns the
time and hands the kind and payload over through the :attr:`EventQueue.kind` and
:attr:`EventQueue.payload` attributes (no tuple per event), freeing the slot for reuse.
"""
cimport cython
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.mem cimport PyMem_Realloc, PyMem_Free

from hzfast._types cimport intp_t

cdef enum:
    _SEQ_BITS = 40               # sequence numbers are below 2**_SEQ_BITS
cdef key_t _SEQ_END = 1LL << _SEQ_BITS
cdef key_t _TIME_MAX = 1LL << 22   # (time << _SEQ_BITS) stays below 2**63
SEQ_BITS = _SEQ_BITS             #: sequence numbers are below 2**SEQ_BITS
TIME_MAX = _TIME_MAX             #: later times are queued at this one (see push)


@cython.auto_pickle(False)      # a run's queue of live objects: nothing to pickle
cdef class EventQueue:
    """Events in (time, sequence) order: ``push(time, sequence, kind, payload)``; ``pop()``
    gives the first one's time and leaves its kind and payload in :attr:`kind` and
    :attr:`payload`.

    Times are ints >= 0; one past ``TIME_MAX`` (2**22) is queued at ``TIME_MAX``, after
    every earlier one (the simulator's runs end long before). Sequence numbers are ints in
    ``0..2**40 - 1``; two events with one time and sequence pop in no set order (the
    simulator's sequence numbers are unique)."""

    def __cinit__(self):
        self.heap = NULL
        self.cap = 0
        self.clear()

    def __dealloc__(self):
        PyMem_Free(self.heap)

    def __len__(self):
        return self.n

    cpdef push(self, object time, key_t sequence, kind, payload):
        """Queue an event at ``time`` (an int >= 0) with ``sequence`` (``0..2**40 - 1``)."""
        cdef intp_t slot, i, up, cap
        cdef _Entry* grown
        cdef int overflow = 0
        cdef key_t t = PyLong_AsLongLongAndOverflow(time, &overflow)   # (TypeError: no int)
        if overflow > 0 or (overflow == 0 and t > _TIME_MAX):
            t = _TIME_MAX
        elif overflow < 0 or t < 0:
            raise ValueError(f"EventQueue.push: time must be >= 0, got {time}")
        if not 0 <= sequence < _SEQ_END:
            raise ValueError(f"EventQueue.push: sequence must be in 0..2**40 - 1, got {sequence}")
        cdef key_t key = (t << _SEQ_BITS) | sequence
        if self.n == self.cap:
            cap = 64 if self.cap == 0 else 2 * self.cap
            grown = <_Entry*>PyMem_Realloc(self.heap, cap * sizeof(_Entry))
            if grown == NULL:
                raise MemoryError()
            self.heap = grown
            self.cap = cap
        if self.free:
            slot = self.free.pop()
            self.kinds[slot] = kind
            self.payloads[slot] = payload
        else:
            slot = len(self.kinds)
            self.kinds.append(kind)
            self.payloads.append(payload)
        i = self.n                       # sift the new entry up from the end
        self.n += 1
        while i > 0:
            up = (i - 1) >> 1
            if self.heap[up].key <= key:
                break
            self.heap[i] = self.heap[up]
            i = up
        self.heap[i].key = key
        self.heap[i].slot = slot

    cpdef key_t pop(self) except? -1:
        """The first event's time; its kind and payload are then in :attr:`kind` and
        :attr:`payload`. IndexError when the queue is empty."""
        cdef _Entry top, last
        cdef intp_t i, child, n
        if self.n == 0:
            raise IndexError("pop from an empty EventQueue")
        top = self.heap[0]
        self.n -= 1
        n = self.n
        if n > 0:                        # sift the last entry down from the root
            last = self.heap[n]
            i = 0
            while True:
                child = 2 * i + 1
                if child >= n:
                    break
                if child + 1 < n and self.heap[child + 1].key < self.heap[child].key:
                    child += 1
                if last.key <= self.heap[child].key:
                    break
                self.heap[i] = self.heap[child]
                i = child
            self.heap[i] = last
        self.kind = self.kinds[top.slot]
        self.payload = self.payloads[top.slot]
        self.kinds[top.slot] = None      # the slot lets go of them
        self.payloads[top.slot] = None
        self.free.append(top.slot)
        return top.key >> _SEQ_BITS

    def clear(self):
        """Drop every event (the C array is kept for reuse)."""
        self.n = 0
        self.kinds = []
        self.payloads = []
        self.free = []
        self.kind = None
        self.payload = None
