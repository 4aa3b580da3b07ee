"""Type stub for the hzfast.protocol._merge extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def merge(
    local_replicas: NDArray[np.int32],  # const int32_t[:, ::1] (P, R)
    local_versions: NDArray[np.int32],  # const int32_t[::1] (P,)
    received_replicas: NDArray[np.int32],  # const int32_t[:, ::1] (P, R)
    received_versions: NDArray[np.int32],  # const int32_t[::1] (P,)
    replicas: NDArray[np.int32],  # int32_t[:, ::1] (P, R), written
    versions: NDArray[np.int32],  # int32_t[::1] (P,), written
    updated: NDArray[np.uint8],  # uint8_t[::1] (P,), written (a bool array's view)
    diverged: NDArray[np.int32],  # int32_t[::1] (P,), scratch: diverged ids first
) -> int: ...  # count of diverged partitions
