"""Type stub for the hzfast.sim._queue extension (Cython types in trailing comments)."""
from typing import Any

from typing_extensions import disjoint_base

SEQ_BITS: int  # 40: sequence numbers are below 2**SEQ_BITS
TIME_MAX: int  # 2**22: later times are queued at this one

@disjoint_base
class EventQueue:  # cdef class
    @property
    def kind(self) -> Any: ...  # object: the kind of the event pop() gave last
    @property
    def payload(self) -> Any: ...  # object: its payload
    def __len__(self) -> int: ...
    def push(
        self,
        time: int,  # object: an int >= 0 (past TIME_MAX: queued at TIME_MAX)
        sequence: int,  # int64_t: 0 .. 2**40 - 1; the order among events of one time
        kind: Any,  # object
        payload: Any,  # object
    ) -> None: ...
    def pop(self) -> int: ...  # int64_t: the first event's time (IndexError when empty)
    def clear(self) -> None: ...
