"""Frozen slots dataclasses built without their generated ``__init__`` (docs/design.md §12).

A simulated run makes some 21,000 small frozen dataclass instances (events, outputs,
messages, :class:`~hzfast.protocol.messages.MigrationInfo`); the ``__init__`` that
``dataclasses`` generates for a frozen class sets every field through
``object.__setattr__``, which costs more than the rest of making the object.
``Builder(cls)`` checks once that ``cls`` is a dataclass whose every field is a slot of
the class itself (a ``__slots__`` member holding any object), with no ``__post_init__``
and no instance ``__dict__``; ``builder(*values)`` then allocates an instance and stores
the values, one per field in field order, straight into its slots: the same object the
class's own constructor makes from the same values (nothing is validated or converted
there either).
"""
import dataclasses

cimport cython

from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF


from hzfast.protocol._slots cimport slot_offset


cdef extern from "Python.h":
    ctypedef struct TypeObject "PyTypeObject"
    ctypedef PyObject* (*allocfunc)(TypeObject*, Py_ssize_t)
    ctypedef struct TypeObject "PyTypeObject":
        allocfunc tp_alloc


cdef enum:
    MAX_FIELDS = 32


@cython.auto_pickle(False)      # it holds a type's slot offsets: nothing to pickle
cdef class Builder:
    """Builds instances of one frozen slots dataclass from its field values, in order."""

    cdef readonly object cls
    cdef readonly tuple fields
    cdef TypeObject* tp
    cdef Py_ssize_t n
    cdef Py_ssize_t offsets[MAX_FIELDS]

    def __init__(self, cls):
        cdef Py_ssize_t off
        if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
            raise TypeError(f"Builder needs a dataclass, got {cls!r}")
        if hasattr(cls, "__post_init__") or cls.__dictoffset__ != 0:
            raise TypeError(f"{cls.__name__}: a __post_init__ or an instance __dict__")
        names = tuple(f.name for f in dataclasses.fields(cls))
        if len(names) > MAX_FIELDS:
            raise TypeError(f"{cls.__name__}: more than {MAX_FIELDS} fields")
        for i, name in enumerate(names):
            off = slot_offset(cls, name)
            if off < 0:
                raise TypeError(f"{cls.__name__}.{name} is not a slot holding any object")
            self.offsets[i] = off
        self.cls = cls
        self.fields = names
        self.tp = <TypeObject*><PyObject*>cls
        self.n = len(names)

    def __call__(self, *values):
        cdef Py_ssize_t i
        cdef PyObject* obj
        cdef PyObject** slot
        if len(values) != self.n:
            raise TypeError(f"{self.cls.__name__} takes {self.n} values, got {len(values)}")
        obj = self.tp.tp_alloc(self.tp, 0)
        if obj == NULL:
            raise MemoryError()
        for i in range(self.n):
            v = values[i]
            Py_INCREF(v)
            slot = <PyObject**>(<char*>obj + self.offsets[i])
            slot[0] = <PyObject*>v
        out = <object>obj                # the new reference, taken over
        Py_DECREF(out)
        return out
