"""Type stub for the hzfast.migration._schedule extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def schedule(
    rows: NDArray[np.int32],  # int32_t[:, ::1] (a private copy; modified)
    columns: NDArray[np.int32],  # const int32_t[:, :] (7, N), rows contiguous
    inst: NDArray[np.uint8],  # const uint8_t[::1]
    limit: int,  # int32_t
    member_count: int,  # intp_t
    from_final: bool,  # bint
) -> tuple[int, NDArray[np.int32]]: ...  # (rounds or -1, start round per decision)
