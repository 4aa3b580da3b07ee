"""Type stub for the hzfast._planner extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

OK: int
BELOW_MINUS_ONE: int
DUPLICATE: int
INTERNAL: int
BAD_PARTITION: int
BAD_INDEX: int
SOURCE_MISMATCH: int
DESTINATION_MISMATCH: int
BAD_MEMBER: int

def check_pair(
    a: NDArray[np.int32],  # const int32_t[:, ::1]
    b: NDArray[np.int32] | None = None,  # const int32_t[:, ::1] or None
) -> tuple[int, int, int, int, int, int]: ...  # (status, which, row, col, mismatches, max_member)
def find_cycles(
    current: NDArray[np.int32],  # const int32_t[:, ::1]
    target: NDArray[np.int32],  # const int32_t[:, ::1]
) -> NDArray[np.bool_]: ...
def fix_cycles(
    current: NDArray[np.int32],  # const int32_t[:, ::1]
    target: NDArray[np.int32],  # const int32_t[:, ::1]
) -> NDArray[np.int32]: ...
def plan(
    current: NDArray[np.int32],  # const int32_t[:, ::1]
    target: NDArray[np.int32],  # const int32_t[:, ::1]
    prioritized: bool,  # bint
) -> tuple[int, int, int, int, NDArray[np.int32] | None, list[NDArray] | None]: ...
# (status, which, row, col, cycle-fixed target, [pid, src, sci, sni, dst, dci, dni (int32),
#  kind (int8), instant (bool)]); fixed/columns are None when status != 0
def prioritize_columns(
    pid: NDArray[np.int32],  # const int32_t[::1]
    src: NDArray[np.int32],  # const int32_t[::1]
    sci: NDArray[np.int32],  # const int32_t[::1]
    sni: NDArray[np.int32],  # const int32_t[::1]
    dst: NDArray[np.int32],  # const int32_t[::1]
    dci: NDArray[np.int32],  # const int32_t[::1]
    dni: NDArray[np.int32],  # const int32_t[::1]
    instant_first: bool,  # bint
) -> NDArray[np.intp]: ...
def apply(
    replicas: NDArray[np.int32],  # int32_t[:, ::1] (modified in place)
    versions: NDArray[np.int32],  # int32_t[::1] (modified in place)
    pid: NDArray[np.int32],  # const int32_t[::1]
    src: NDArray[np.int32],  # const int32_t[::1]
    sci: NDArray[np.int32],  # const int32_t[::1]
    sni: NDArray[np.int32],  # const int32_t[::1]
    dst: NDArray[np.int32],  # const int32_t[::1]
    dci: NDArray[np.int32],  # const int32_t[::1]
    dni: NDArray[np.int32],  # const int32_t[::1]
) -> tuple[int, int]: ...  # (status, bad_row)
def diff(
    current: NDArray[np.int32],  # const int32_t[:, ::1]
    target: NDArray[np.int32],  # const int32_t[:, ::1]
    member_count: int,  # intp_t
) -> tuple[NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int]: ...
def schedule(
    rows: NDArray[np.int32],  # int32_t[:, ::1] (a private copy; modified)
    pid: NDArray[np.int32],  # const int32_t[::1]
    src: NDArray[np.int32],  # const int32_t[::1]
    sci: NDArray[np.int32],  # const int32_t[::1]
    sni: NDArray[np.int32],  # const int32_t[::1]
    dst: NDArray[np.int32],  # const int32_t[::1]
    dci: NDArray[np.int32],  # const int32_t[::1]
    dni: NDArray[np.int32],  # const int32_t[::1]
    inst: NDArray[np.uint8],  # const uint8_t[::1]
    limit: int,  # int32_t
    member_count: int,  # intp_t
    from_final: bool,  # bint
) -> tuple[int, NDArray[np.int32]]: ...  # (rounds, start round per decision)
