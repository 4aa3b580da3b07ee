import numpy as np
from numpy.typing import NDArray
from typing_extensions import Self, disjoint_base

MAX_ITEMS: int  # 10,000 gap items per partition
OUTCOME_DONE: int
OUTCOME_TOO_MANY_GAPS: int
OUTCOME_BELOW_HIGHEST: int
OUTCOME_OVERFLOW: int
OUTCOME_NO_MEMORY: int

def check_ops(
    parts: NDArray[np.int32],  # const int32_t[::1]
    starts: NDArray[np.int64],  # const int64_t[::1], empty for a reservation batch
    deltas: NDArray[np.int64],  # const int64_t[::1]
    partition_count: int,  # intp_t
) -> tuple[int, int, int]: ...  # (Status, index, argument) or (0, -1, -1)

@disjoint_base
class CounterTable:  # cdef class
    n: int  # intp_t, partitions
    tracking: bool  # bint
    lwm: NDArray[np.int64]  # length max(n, 1); hwm is lwm when not tracking
    hwm: NDArray[np.int64]
    initial: NDArray[np.int64]
    first: NDArray[np.uint8]
    lock: object  # threading.Lock held by every method
    def __new__(cls, n: int, tracking: bool) -> Self: ...  # __cinit__(intp_t, bint)
    def update_batch(
        self,
        parts: NDArray[np.int32],  # const int32_t[::1], in [0, n)
        starts: NDArray[np.int64],  # const int64_t[::1], >= 0
        deltas: NDArray[np.int64],  # const int64_t[::1], >= 0, start + delta <= INT64_MAX
        out: NDArray[np.uint8],  # uint8_t[::1], results
    ) -> tuple[int, int]: ...  # (Outcome, index where it stopped)
    def reserve_batch(
        self,
        parts: NDArray[np.int32],  # const int32_t[::1]
        deltas: NDArray[np.int64],  # const int64_t[::1]
        out: NDArray[np.int64],  # int64_t[::1], old HWM per reservation
        scratch: NDArray[np.int64],  # int64_t[::1] of length >= n
    ) -> tuple[int, int]: ...  # all or nothing
    def absolute_batch(
        self,
        parts: NDArray[np.int32],  # const int32_t[::1]
        values: NDArray[np.int64],  # const int64_t[::1], >= 0
    ) -> tuple[int, int]: ...
    def gap_items(self, p: int) -> NDArray[np.int64]: ...  # (count, 2) copy
    def set_gap_items(self, p: int, items: NDArray[np.int64]) -> None: ...  # const int64_t[:, ::1]
    def gap_counts(self) -> NDArray[np.int32]: ...
    def highest_applied(self) -> NDArray[np.int64]: ...
    def finalize(self, mask: NDArray[np.uint8]) -> tuple[int, NDArray[np.int64] | None]: ...  # (-1, (k, 3) rows) or (partition, None)
    def finalize_blocker(self, mask: NDArray[np.uint8]) -> int: ...  # intp_t: -1 or partition
    def reset(self, p: int) -> None: ...
    def init(self, p: int, initial: int) -> None: ...
