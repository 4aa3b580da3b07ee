"""Type stub for the hzfast.sim._queue extension (Cython types in trailing comments)."""
from typing import Any

from typing_extensions import disjoint_base

@disjoint_base
class EventQueue:  # cdef class
    @property
    def kind(self) -> Any: ...  # object: the kind of the event pop() gave last
    @property
    def payload(self) -> Any: ...  # object: its payload
    def __len__(self) -> int: ...
    def push(
        self,
        key: int,  # int64_t: 0 .. 2**63 - 1; smaller pops first
        kind: Any,  # object
        payload: Any,  # object
    ) -> None: ...
    def pop(self) -> int: ...  # int64_t: the smallest key (IndexError when empty)
    def clear(self) -> None: ...
