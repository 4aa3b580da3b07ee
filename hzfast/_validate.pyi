"""Type stub for the hzfast._validate extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

# hzfast._types.Status
OK: int
BELOW_MINUS_ONE: int
TOO_LARGE: int
DUPLICATE: int
INTERNAL: int
BAD_PARTITION: int
BAD_INDEX: int
SOURCE_MISMATCH: int
DESTINATION_MISMATCH: int
BAD_MEMBER: int
NEGATIVE: int
OVERFLOW: int
BAD_CODE: int

def check_tables(
    a: NDArray[np.int32],  # const int32_t[:, ::1]
    b: NDArray[np.int32] | None = None,  # const int32_t[:, ::1] of a's shape, or None
    member_count: int = -1,  # int (< 0: no upper bound)
) -> tuple[int, int, int, int, int, int]: ...  # (status, which, row, col, mismatches, max_member)
