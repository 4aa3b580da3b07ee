"""Type stub for the hzfast.migration._planner extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def find_cycles(
    current: NDArray[np.int32],  # const int32_t[:, ::1]
    target: NDArray[np.int32],  # const int32_t[:, ::1]
) -> NDArray[np.bool_]: ...
def fix_cycles(
    current: NDArray[np.int32],  # const int32_t[:, ::1]
    target: NDArray[np.int32],  # const int32_t[:, ::1]
) -> NDArray[np.int32]: ...
def plan(
    current: NDArray[np.int32],  # const int32_t[:, ::1]
    target: NDArray[np.int32],  # const int32_t[:, ::1]
    prioritized: bool,  # bint
    member_limit: int,  # int32_t (a value outside [-1, it): TOO_LARGE, which == -1)
    endpoints: bool = ...,  # bint, default False: also each decision's source endpoint
    keep_target: bool = ...,  # bint, default True: False gives no cycle-fixed target (None)
) -> tuple[int, int, int, int, NDArray[np.int32] | None, NDArray[np.int32] | None,
           NDArray[np.int8] | None, NDArray[np.bool_] | None, NDArray[np.int32] | None]: ...
# (status, which, row, col, cycle-fixed target, (7, N) column block, kind, instant,
# endpoint); the arrays are None when status != 0, endpoint also without endpoints, the
# target also without keep_target
def prioritize_columns(
    block: NDArray[np.int32],  # const int32_t[:, :] (7, N), rows contiguous
    kind: NDArray[np.int8],  # const int8_t[::1]
    instant_first: bool,  # bint
) -> NDArray[np.intp]: ...
def classify(
    block: NDArray[np.int32],  # const int32_t[:, :] (7, N), rows contiguous
) -> tuple[NDArray[np.int8], NDArray[np.bool_]]: ...  # (kind, instant)
