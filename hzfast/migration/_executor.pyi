"""Type stub for the hzfast.migration._executor extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray
from typing_extensions import Self, disjoint_base

ROW_WAITING: int
ROW_IN_FLIGHT: int
ROW_SUCCEEDED: int
ROW_FAILED: int
ROW_INSTANT: int
ANSWER_ACCEPTED: int
ANSWER_IS_INSTANT: int
ANSWER_NOT_HEAD: int
ANSWER_NOT_WAITING: int
ANSWER_NOT_IN_FLIGHT: int
ANSWER_STOPPED: int
ANSWER_DESTINATION_FULL: int
ANSWER_ENDPOINT_FULL: int

def first_descent(pid: NDArray[np.int32]) -> int: ...  # const int32_t[:]
# the first k with pid[k] < pid[k - 1], or -1

def prepare(
    columns: NDArray[np.int32],  # const int32_t[:, :] (7, N), rows contiguous
    inst: NDArray[np.uint8],  # const uint8_t[::1] (N,)
    owner: NDArray[np.int32],  # const int32_t[:] (P,), slot 0 of the initial/final table
    replica_count: int,  # intp_t
    from_final: bool,  # bint
    checked: bool = ...,  # bint, default False: the decisions are known to be in range
    endpoints: NDArray[np.int32] | None = ...,  # the planner's endpoints (N,), adopted
) -> tuple[bool, NDArray[np.int32] | None, NDArray[np.int32] | None, NDArray[np.intp] | None,
           NDArray[np.intp] | None, NDArray[np.int32] | None, int, int, int]: ...
# (ok, endpoint (N,), queue (N,), qidx, qstart (queues + 1,), pair (N,), pair count,
# member count, active members or -1); the arrays are None when not ok

@disjoint_base
class Core:  # cdef class
    @property
    def n(self) -> int: ...  # readonly intp_t, plan rows
    @property
    def waiting(self) -> int: ...  # readonly intp_t, queued rows not started
    @property
    def in_flight(self) -> int: ...  # readonly intp_t
    @property
    def stopped(self) -> bool: ...  # readonly bint
    @property
    def failed(self) -> bool: ...  # readonly bint
    def __new__(
        cls,
        dst: NDArray[np.int32],  # const int32_t[::1] (N,), kept
        endpoint: NDArray[np.int32],  # const int32_t[::1] (N,), kept
        queue: NDArray[np.int32],  # const int32_t[::1] (N,), -1 for instant rows, kept
        qidx: NDArray[np.intp],  # const intp_t[::1], kept
        qstart: NDArray[np.intp],  # const intp_t[::1] (queues + 1,), kept
        pair: NDArray[np.int32],  # const int32_t[::1] (N,), kept
        pair_count: int,  # intp_t
        member_count: int,  # intp_t
        active: int,  # intp_t, members in a queued row (-1: a queued row loads nobody)
        limit: int,  # int32_t
    ) -> Self: ...  # __cinit__
    def ready(self) -> NDArray[np.int64]: ...
    def check_start(self, k: int) -> int: ...  # intp_t in [0, N) -> Answer
    def start(self, k: int) -> int: ...  # intp_t in [0, N) -> Answer
    def finish(self, k: int, ok: bool) -> int: ...  # (intp_t in [0, N), bint) -> Answer
    def stop(self) -> None: ...
    def states(self) -> NDArray[np.uint8]: ...  # a copy, ROW_* per plan row
    def load_of(self, m: int) -> int: ...  # intp_t >= 0
