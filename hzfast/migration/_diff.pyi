"""Type stub for the hzfast.migration._diff extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def diff(
    current: NDArray[np.int32],  # const int32_t[:, ::1]
    target: NDArray[np.int32],  # const int32_t[:, ::1]
    member_count: int,  # intp_t
) -> tuple[NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int]: ...
# (changed-slot mask, changed partitions, gains (M, R), losses (M, R), changed slots)
