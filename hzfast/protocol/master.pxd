# Augmenting declarations for hzfast/protocol/master.py (see core.pxd): MasterSide is an
# extension type of NodeCore, so its steps read the node's fields as C struct fields. It
# adds no fields and no C methods (hzfast.protocol.Node derives from it and MemberSide).

from hzfast.protocol.core cimport NodeCore


cdef class MasterSide(NodeCore):
    pass
