"""Type stub for the hzfast._arrange extension (Cython types in trailing comments)."""
from numpy.typing import NDArray
import numpy as np
from typing_extensions import disjoint_base

def repair(
    reps: NDArray[np.int32],        # const int32_t[:, ::1] (P, R)
    alive: NDArray[np.uint8],       # const uint8_t[::1] (M,)
    versions: NDArray[np.int32],    # const int32_t[::1] (P,)
    chunks: int = 1,                # intp_t >= 1: row chunks (threads with OpenMP)
) -> tuple[NDArray[np.int32], NDArray[np.int32]]: ...

#: True when the module was compiled with OpenMP (chunks then run on threads).
OPENMP: bool

@disjoint_base
class Arranger:  # cdef class
    """Working state of the arranger for one prepared input; ``finish`` runs once."""
    @property
    def counts(self) -> NDArray[np.int32]: ...   # (R_fill, M) keepable slots
    def __init__(
        self,
        cur: NDArray[np.int32],     # const int32_t[:, ::1] (P, W)
        gid: NDArray[np.int32],     # const int32_t[::1] (M,), -1 = lite
        G: int,                     # intp_t
        R_fill: int,                # intp_t
        gstart: NDArray[np.int32],  # const int32_t[::1] (G + 1,)
        gmem: NDArray[np.int32],    # const int32_t[::1] members grouped by group
        chunks: int,                # intp_t >= 1: row chunks (threads with OpenMP)
    ) -> None: ...
    def finish(
        self,
        mq: NDArray[np.int32],      # const int32_t[:, ::1] (R_fill, M) member quotas
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
