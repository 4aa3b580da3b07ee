"""Type stub for the hzfast.migration._apply extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def apply(
    replicas: NDArray[np.int32],  # int32_t[:, ::1] (modified in place)
    versions: NDArray[np.int32],  # int32_t[::1] (modified in place)
    columns: NDArray[np.int32],  # const int32_t[:, :] (7, N), rows contiguous
) -> tuple[int, int]: ...  # (status, offending decision)
