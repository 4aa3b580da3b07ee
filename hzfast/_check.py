"""Boundary validation shared by every public function.

Kernels run with bounds checks off; everything that reaches them goes through
these helpers first. Messages always name the argument and the problem.
"""
from __future__ import annotations

import operator

import numpy as np

from hzfast import _validate

MAX_REPLICA_COUNT = 7
DEFAULT_PARTITION_COUNT = 271


def check_int(value, name: str, *, minimum=None, maximum=None) -> int:
    """Return ``value`` as a Python int, or raise TypeError/ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_partition_count(value, name: str = "partition_count") -> int:
    """A positive int32 partition count."""
    return check_int(value, name, minimum=1, maximum=2**31 - 1)


def as_int32_array(value, name: str, ndim: int) -> np.ndarray:
    """Arrays must already be int32 and C-contiguous; lists/tuples are converted."""
    if isinstance(value, np.ndarray):
        arr = value
        if arr.dtype != np.int32:
            raise TypeError(f"{name} must have dtype int32, got {arr.dtype}")
        if arr.ndim != ndim:
            raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous (use np.ascontiguousarray)")
        return arr
    if hasattr(value, "replicas") and ndim == 2:  # a PartitionTable
        return value.replicas
    if isinstance(value, (list, tuple)):
        try:
            arr = np.asarray(value)
        except ValueError as exc:
            raise ValueError(f"{name} is ragged or malformed: {exc}") from None
        if arr.size == 0:
            arr = arr.reshape((0,) * ndim if ndim == 1 else (0, 1)).astype(np.int32)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got {arr.dtype}")
        if arr.ndim != ndim:
            raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
        if arr.size and (arr.min() < -(2**31) or arr.max() > 2**31 - 1):
            raise ValueError(f"{name} holds values outside int32")
        return np.ascontiguousarray(arr, dtype=np.int32)
    raise TypeError(f"{name} must be a numpy int32 array, got {type(value).__name__}")


def as_replicas(value, name: str = "replicas", *, member_count: int | None = None,
                max_replicas: int = MAX_REPLICA_COUNT) -> np.ndarray:
    """Validate a replica table: int32, C-contiguous, shape (P, R) with 1 <= R <= 7,
    every value in [-1, member_count), no member twice in a row.

    Returns the array itself (never a copy for valid numpy input).
    """
    arr = as_int32_array(value, name, 2)
    R = arr.shape[1]
    if R < 1 or R > max_replicas:
        raise ValueError(f"{name} must have 1..{max_replicas} replica columns, got {R}")
    status, row, col = _validate.check_replicas(arr, -1 if member_count is None else member_count)
    if status == _validate.BELOW_MINUS_ONE:
        raise ValueError(f"{name}[{row}, {col}] = {arr[row, col]}: member indices must be >= -1")
    if status == _validate.TOO_LARGE:
        raise ValueError(f"{name}[{row}, {col}] = {arr[row, col]}: member index out of range "
                         f"for {member_count} members")
    if status == _validate.DUPLICATE:
        raise ValueError(f"{name}: partition {row} holds member {arr[row, col]} twice")
    return arr


def as_versions(value, partition_count: int, name: str = "versions") -> np.ndarray:
    """Validate a version vector: int32, C-contiguous, shape (partition_count,)."""
    arr = as_int32_array(value, name, 1)
    if arr.shape[0] != partition_count:
        raise ValueError(f"{name} must have length {partition_count} (one per partition), "
                         f"got {arr.shape[0]}")
    return arr


def same_shape(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name_a} and {name_b} must have the same shape, "
                         f"got {a.shape} and {b.shape}")
