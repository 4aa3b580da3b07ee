"""Type stub for the hzfast.protocol._merge extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def merge(
    replicas: NDArray[np.int32],  # int32_t[:, ::1] (P, R): a private copy of the local table, merged in place
    versions: NDArray[np.int32],  # int32_t[::1] (P,): a private copy of the local versions, merged in place
    received_replicas: NDArray[np.int32],  # const int32_t[:, ::1] (P, R)
    received_versions: NDArray[np.int32],  # const int32_t[::1] (P,)
    updated: NDArray[np.uint8],  # uint8_t[::1] (P,), written (a bool array's view)
    diverged: NDArray[np.int32],  # int32_t[::1] (P,), scratch: diverged ids first
) -> int: ...  # count of diverged partitions
def left(
    old: NDArray[np.int32],  # const int32_t[:, ::1] (P, R): the table before a merge
    new: NDArray[np.int32],  # const int32_t[:, ::1] (P, R): the table after it
    updated: NDArray[np.uint8],  # const uint8_t[::1] (P,): the merge's updated flags (a bool array's view)
    member: int,  # int32_t
    k: int,  # intp_t: the slots looked at, clipped to R
) -> list[int]: ...  # rows updated that listed member in their first k slots and no longer do
def first_invalid(
    replicas: NDArray[np.int32],  # object: a C-contiguous int32 (P, R)
    versions: NDArray[np.int32],  # object: a C-contiguous int32 (P,)
    updated: NDArray[np.bool_] | None,  # object: None (every row) or a C-contiguous bool (P,): the rows to check
    version_limit: int,  # int32_t
) -> int: ...  # the first such row with a slot below -1, a member twice or a version out of [0, limit); -1 if none
