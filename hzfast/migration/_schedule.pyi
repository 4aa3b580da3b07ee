"""Type stub for the hzfast.migration._schedule extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def prepare(
    rows: NDArray[np.int32],  # int32_t[:, ::1] (a private copy; modified)
    columns: NDArray[np.int32],  # const int32_t[:, :] (7, N), rows contiguous
    inst: NDArray[np.uint8],  # const uint8_t[::1]
    member_count: int,  # intp_t
    from_final: bool,  # bint
) -> tuple[bool, NDArray[np.int32] | None, NDArray[np.intp] | None, NDArray[np.intp] | None]: ...
# (ok, endpoint (N,), qidx, qstart (queues + 1,)); the arrays are None when not ok

def pair_ids(
    columns: NDArray[np.int32],  # const int32_t[:, :] (7, N), rows contiguous
    endpoint: NDArray[np.int32],  # const int32_t[::1] (N,)
    qidx: NDArray[np.intp],  # const intp_t[::1]
    member_count: int,  # intp_t
) -> tuple[NDArray[np.intp], int]: ...  # (pair id per plan row (N,), pair count)

def simulate(
    columns: NDArray[np.int32],  # const int32_t[:, :] (7, N), rows contiguous
    endpoint: NDArray[np.int32],  # const int32_t[::1] (N,)
    qidx: NDArray[np.intp],  # const intp_t[::1]
    qstart: NDArray[np.intp],  # const intp_t[::1] (queues + 1,)
    pair: NDArray[np.intp],  # const intp_t[::1] (N,)
    pair_count: int,  # intp_t
    active: int,  # intp_t
    duration: NDArray[np.float64],  # const double[::1] (N,)
    equal_durations: bool,  # bint
    key: NDArray[np.int64],  # const int64_t[::1] (N,) rank per row, or (0,): queue order
    limit: int,  # int32_t
    member_count: int,  # intp_t
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int32], NDArray[np.float64],
           float]: ...
# (start (N,), finish (N,), peak in flight per member (M,), work per member (M,), longest
# queue's summed durations)
