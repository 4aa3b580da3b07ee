"""Type stub for the hzfast.sim._checks extension (Cython types in trailing comments)."""
import numpy as np
from numpy.typing import NDArray

def advance_versions(
    versions: NDArray[np.int32],  # int32 ndarray (P,), C-contiguous: a member's versions now
    last: NDArray[np.int32],  # int32 ndarray (P,), C-contiguous, writeable: its versions after its previous event; overwritten with versions
) -> int: ...  # the first partition whose version went down (its last entry kept), -1 if none

def first_disagreement(
    versions_a: NDArray[np.int32],  # int32 ndarray (P,), C-contiguous: one member's versions
    replicas_a: NDArray[np.int32],  # int32 ndarray (P, R), C-contiguous: its replica table
    versions_b: NDArray[np.int32],  # int32 ndarray (P,), C-contiguous: another member's versions
    replicas_b: NDArray[np.int32],  # int32 ndarray (P, R), C-contiguous: its replica table
) -> int: ...  # the first partition held at one version with different rows, -1 if none
