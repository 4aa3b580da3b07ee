import numpy as np
from numpy.typing import NDArray

def node_weights(
    node_hash: NDArray[np.int32],  # const int32_t[::1]
    part: NDArray[np.int32],  # const int32_t[::1], at least as long as node_hash
) -> NDArray[np.int64]: ...  # int64_t[::1]

def assign(
    node_hash: NDArray[np.int32],  # const int32_t[::1]
    rank: NDArray[np.int32],  # const int32_t[::1]
    group: NDArray[np.int32],  # const int32_t[::1]
    group_count: int,  # int32_t
    parts: int,  # int32_t
    width: int,  # int32_t
    replicated: bool,  # bint
    exclude: bool,  # bint
) -> NDArray[np.int32]: ...  # int32_t[:, ::1] of shape (parts, width)
