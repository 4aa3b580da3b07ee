from numpy.typing import NDArray
import numpy as np

OK: int
BELOW_MINUS_ONE: int
TOO_LARGE: int
DUPLICATE: int

def check_replicas(a: NDArray[np.int32], member_count: int = -1) -> tuple[int, int, int]: ...  # const int32_t[:, ::1]
