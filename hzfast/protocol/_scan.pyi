"""Type stub for the hzfast.protocol._scan extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def dense(
    replicas: NDArray[np.int32],  # const int32_t[:, ::1] (P, R): member ids
    position: NDArray[np.int32],  # const int32_t[::1]: view position by id, -1 for none
) -> NDArray[np.int32]: ...  # (P, R) view positions, -1 where empty or unknown
def repair_dense(
    replicas: NDArray[np.int32],  # int32_t[:, ::1] (P, R): the master's table, cleared in place
    versions: NDArray[np.int32],  # int32_t[::1] (P,): bumped in place by each row's cleared slots
    code: NDArray[np.int32],  # const int32_t[::1]: a data member's view position by id, else -1
) -> tuple[int, NDArray[np.int64], NDArray[np.int32]]: ...
# (slots cleared, rows without owner that hold a replica, the repaired table in positions)
