import numpy as np
from numpy.typing import NDArray

def utf8_hashes(
    offsets: NDArray[np.int32] | NDArray[np.int64],  # const offset_t[::1] (fused int32/int64)
    data: NDArray[np.uint8],  # const uint8_t[::1]
    parts: int,  # int32_t
    reduce: bool,  # bint
) -> tuple[NDArray[np.int32], int]: ...  # (int32_t[::1], intp_t: -1 or first malformed key)

def int_hashes(
    values: NDArray[np.int32] | NDArray[np.int64],  # const int_value_t[::1] (fused)
    as_long: bool,  # bint
    parts: int,  # int32_t
    reduce: bool,  # bint
) -> NDArray[np.int32]: ...  # int32_t[::1]

def reduce_hashes(
    hashes: NDArray[np.int32],  # const int32_t[::1]
    parts: int,  # int32_t
) -> NDArray[np.int32]: ...  # int32_t[::1]
