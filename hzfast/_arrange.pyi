"""Type stub for the hzfast._arrange extension (Cython types in trailing comments)."""
from numpy.typing import NDArray
import numpy as np

def repair(
    reps: NDArray[np.int32],        # const int32_t[:, ::1] (P, R)
    alive: NDArray[np.uint8],       # const uint8_t[::1] (M,)
    versions: NDArray[np.int32],    # const int32_t[::1] (P,)
) -> tuple[NDArray[np.int32], NDArray[np.int32]]: ...

def keepable_counts(
    cur: NDArray[np.int32],         # const int32_t[:, ::1] (P, W)
    gid: NDArray[np.int32],         # const int32_t[::1] (M,), -1 = lite
    G: int,                         # intp_t
    R_fill: int,                    # intp_t
) -> NDArray[np.int32]: ...         # (R_fill, M)

def arrange(
    cur: NDArray[np.int32],         # const int32_t[:, ::1] (P, W)
    gid: NDArray[np.int32],         # const int32_t[::1] (M,)
    G: int,                         # intp_t
    R_fill: int,                    # intp_t
    mq: NDArray[np.int32],          # const int32_t[:, ::1] (R_fill, M) member quotas
    gstart: NDArray[np.int32],      # const int32_t[::1] (G + 1,)
    gmem: NDArray[np.int32],        # const int32_t[::1] members grouped by group
) -> tuple[NDArray[np.int32], bool]: ...  # target (P, W), cycle_fallback used


def report_scan(
    cur: NDArray[np.int32],         # const int32_t[:, ::1] (P, W)
    tgt: NDArray[np.int32],         # const int32_t[:, ::1] (P, W)
    gid: NDArray[np.int32],         # const int32_t[::1] (M,), -1 = lite
    G: int,                         # intp_t
    R_fill: int,                    # intp_t
) -> tuple[int, NDArray[np.int32], NDArray[np.int32], int, int, int, NDArray[np.bool_]]: ...
    # changes, cur counts (W, M), tgt counts (W, M), unfilled, duplicate rows, lite slots,
    # cyclic rows (P,)
