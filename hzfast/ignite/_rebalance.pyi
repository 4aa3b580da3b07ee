import numpy as np
from numpy.typing import NDArray

BLOCK: int  # partitions per kernel block

def rebalance(
    states: NDArray[np.int8],  # const int8_t[:, ::1] of shape (N, P), N >= 1
    counters: NDArray[np.int64],  # const int64_t[:, ::1] (N, P)
    history: NDArray[np.int64],  # const int64_t[:, ::1] (N, P) if has_history
    has_history: bool,  # bint
    sizes: NDArray[np.int64],  # const int64_t[:, ::1] (N, P) or (1, P) if has_sizes
    has_sizes: bool,  # bint
    reset: NDArray[np.uint8],  # const uint8_t[::1] (N,)
    threshold: int,  # int64_t
    prefer: bool,  # bint
    max_counter: NDArray[np.int64],  # int64_t[::1] (P,)
    max_owner: NDArray[np.uint8],  # uint8_t[:, ::1] (N, P)
    kind: NDArray[np.int8],  # int8_t[:, ::1] (N, P)
    supplier: NDArray[np.int32],  # int32_t[:, ::1] (N, P)
    from_counter: NDArray[np.int64],  # int64_t[:, ::1] (N, P)
) -> tuple[int, int, int, int]: ...  # (Status, node, partition, argument) or (0, -1, -1, -1)
