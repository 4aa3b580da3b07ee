# Where an instance of a slots class keeps a field: the offset its member descriptor gives
# (hzfast.protocol._build writes dataclass fields there, hzfast.protocol._lists reads them).
from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject


cdef extern from "structmember.h":     # (Python.h declares PyMemberDef in full from 3.12 on)
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset


cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    PyTypeObject PyMemberDescr_Type


cdef enum:
    T_OBJECT_EX = 16               # structmember.h: a slot holding any object


cdef inline Py_ssize_t slot_offset(object cls, str name) except -2:
    """The offset of field ``name`` in instances of ``cls`` when it is a slot of ``cls``
    (or of a base) holding any object; -1 when it is not."""
    descr = getattr(cls, name, None)
    if type(descr) is not <object><PyObject*>&PyMemberDescr_Type \
            or descr.__objclass__ not in cls.__mro__:
        return -1
    cdef PyMemberDescrObject* d = <PyMemberDescrObject*><PyObject*>descr
    if d.d_member.type != T_OBJECT_EX:
        return -1
    return d.d_member.offset
