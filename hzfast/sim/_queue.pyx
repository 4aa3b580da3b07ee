"""The simulator's event queue: a binary min-heap of event keys in C (docs/design.md §12).

A run pushes and pops some 9,000 events. Each has an int key, ``(time << 40) |
sequence``, unique and in the order the events run, and a kind and payload. Here the keys
sit in a C array, each with the index of a slot in two lists that hold the kind and
payload, so sifting compares C integers and moves 16-byte entries, with no Python int
comparisons and no dict keyed by the key. Popping hands the kind and payload over through
the :attr:`EventQueue.kind` and :attr:`EventQueue.payload` attributes (no tuple per event)
and frees the slot for reuse.
"""
cimport cython
from cpython.mem cimport PyMem_Realloc, PyMem_Free

from hzfast._types cimport intp_t


@cython.auto_pickle(False)      # a run's queue of live objects: nothing to pickle
cdef class EventQueue:
    """Events in key order: ``push(key, kind, payload)``; ``pop()`` gives the smallest key
    and leaves its kind and payload in :attr:`kind` and :attr:`payload`.

    Keys are ints in ``0..2**63 - 1``; two events with one key pop in no set order (the
    simulator's keys are unique)."""

    def __cinit__(self):
        self.heap = NULL
        self.cap = 0
        self.clear()

    def __dealloc__(self):
        PyMem_Free(self.heap)

    def __len__(self):
        return self.n

    cpdef push(self, key_t key, kind, payload):
        """Queue an event with ``key`` (an int in ``0..2**63 - 1``)."""
        cdef intp_t slot, i, up, cap
        cdef _Entry* grown
        if key < 0:
            raise ValueError(f"EventQueue.push: key must be >= 0, got {key}")
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
        """The smallest key; its event's kind and payload are then in :attr:`kind` and
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
        return top.key

    def clear(self):
        """Drop every event (the C array is kept for reuse)."""
        self.n = 0
        self.kinds = []
        self.payloads = []
        self.free = []
        self.kind = None
        self.payload = None
