"""The validator: boundary checks shared by every public function (docs/design.md §0).

Kernels run with bounds checks off; everything that reaches them goes through these
helpers first. Replica tables are checked by one kernel (``hzfast._validate``), whose
status codes (``hzfast._types.Status``) are turned into messages here, and only here.
Messages always name the argument and the problem.
"""
from __future__ import annotations

import operator
from typing import SupportsIndex, cast

import numpy as np

from hzfast import _validate
from hzfast._typing import Int32Array

MAX_REPLICA_COUNT = 7
DEFAULT_PARTITION_COUNT = 271
INTERNAL = _validate.INTERNAL   # a kernel invariant broken (impossible on validated input)

# why a plan's decision cannot be applied, per status
_DECISION_PROBLEMS = {
    _validate.BAD_PARTITION: "partition id out of range",
    _validate.BAD_INDEX: "replica index out of range or inconsistent with its member",
    _validate.BAD_MEMBER: "member index out of range",
    _validate.SOURCE_MISMATCH: "the source is not at source_current_index",
    _validate.DESTINATION_MISMATCH: "the destination is not at destination_current_index",
    _validate.DUPLICATE: "it would put a member twice in the partition's row",
    _validate.BELOW_MINUS_ONE: "member index < -1",
}


def decision_problem(status: int) -> str:
    """What a kernel status says about a plan decision that cannot be applied."""
    return _DECISION_PROBLEMS.get(status, "invalid")


def check_int(value: object, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise TypeError/ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        v = operator.index(cast(SupportsIndex, value))   # anything else: TypeError
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_member_count(member_count: object, largest: int, holder: str) -> int:
    """``member_count`` checked against the largest member ``holder`` uses (``None``: that
    member + 1)."""
    if member_count is None:
        return largest + 1
    count = check_int(member_count, "member_count", minimum=0)
    if largest >= count:
        raise ValueError(f"member_count={count} but {holder} {largest}")
    return count


def check_partition_count(value: object, name: str = "partition_count") -> int:
    """A positive int32 partition count."""
    return check_int(value, name, minimum=1, maximum=2**31 - 1)


def as_int32_array(value: object, name: str, ndim: int) -> Int32Array:
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
        replicas: Int32Array = value.replicas
        return replicas
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


def as_table(value: object, name: str) -> Int32Array:
    """An int32, C-contiguous (P, R) array with 1 <= R <= 7 (values not yet checked)."""
    arr = as_int32_array(value, name, 2)
    R = arr.shape[1]
    if R < 1 or R > MAX_REPLICA_COUNT:
        raise ValueError(f"{name} must have 1..{MAX_REPLICA_COUNT} replica columns, got {R}")
    return arr


def raise_for_status(status: int, name: str, arr: Int32Array, row: int, col: int,
                     member_count: int | None = None) -> None:
    """Raise the ValueError for a failed table check of ``arr`` (argument ``name``) at
    ``[row, col]``; return quietly when ``status`` is OK."""
    if status == _validate.OK:
        return
    if status == _validate.BELOW_MINUS_ONE:
        raise ValueError(f"{name}[{row}, {col}] = {arr[row, col]}: member indices must be >= -1")
    if status == _validate.TOO_LARGE:
        raise ValueError(f"{name}[{row}, {col}] = {arr[row, col]}: member index out of range "
                         f"for {member_count} members")
    if status == _validate.DUPLICATE:
        raise ValueError(f"{name}: partition {row} holds member {arr[row, col]} twice")
    raise ValueError(f"{name}: invalid row {row}")  # pragma: no cover - no other table status


def check_table(value: object, name: str, *,
                member_count: int | None = None) -> tuple[Int32Array, int]:
    """Validate a replica table; return ``(array, largest member)`` (-1 if none).

    The array is the input itself for valid numpy input (never a copy)."""
    arr = as_table(value, name)
    status, _, row, col, _, mx = _validate.check_tables(
        arr, None, -1 if member_count is None else member_count)
    raise_for_status(status, name, arr, row, col, member_count)
    return arr, mx


def check_pair(current: object, target: object, name_a: str = "current",
               name_b: str = "target") -> tuple[Int32Array, Int32Array, int, int]:
    """Validate two replica tables of one shape; return ``(a, b, mismatching slots,
    largest member)``."""
    a = as_table(current, name_a)
    b = as_table(target, name_b)
    same_shape(a, b, name_a, name_b)
    status, which, row, col, mismatches, mx = _validate.check_tables(a, b)
    raise_for_status(status, (name_a, name_b)[which], (a, b)[which], row, col)
    return a, b, mismatches, mx


def as_replicas(value: object, name: str = "replicas", *,
                member_count: int | None = None) -> Int32Array:
    """Validate a replica table: int32, C-contiguous, shape (P, R) with 1 <= R <= 7,
    every value in [-1, member_count), no member twice in a row.

    Returns the array itself (never a copy for valid numpy input).
    """
    return check_table(value, name, member_count=member_count)[0]


def as_versions(value: object, partition_count: int, name: str = "versions") -> Int32Array:
    """Validate a version vector: int32, C-contiguous, shape (partition_count,)."""
    arr = as_int32_array(value, name, 1)
    if arr.shape[0] != partition_count:
        raise ValueError(f"{name} must have length {partition_count} (one per partition), "
                         f"got {arr.shape[0]}")
    return arr


def same_shape(a: Int32Array, b: Int32Array, name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name_a} and {name_b} must have the same shape, "
                         f"got {a.shape} and {b.shape}")
