# Augmenting declarations for hzfast/protocol/node.py (see core.pxd): NodeEvents, the part
# of Node in node.py, is an extension type of NodeCore, so the event loop reads the node's
# fields as C struct fields. It adds no fields and no C methods.

from hzfast.protocol.core cimport NodeCore


cdef class NodeEvents(NodeCore):
    pass
