# Augmenting declarations for hzfast/protocol/member.py (see core.pxd): MemberSide is an
# extension type of NodeCore, so its steps read the node's fields as C struct fields. It
# adds no fields and no C methods (hzfast.protocol.Node derives from it and MasterSide).

from hzfast.protocol.core cimport NodeCore


cdef class MemberSide(NodeCore):
    pass
