"""Type stub for the hzfast.protocol._lists extension (Cython types in trailing comments)."""
from typing import Any

import numpy as np
from numpy.typing import NDArray

def attention(
    lst: tuple[Any, ...],  # tuple: a received completed list
    start: int,  # Py_ssize_t: the first index to look at
    versions: NDArray[np.int32],  # int32 ndarray (P,), C-contiguous: the member's versions
    info_type: type,  # object: MigrationInfo
    replica_count: int,  # long
    finalized: set[Any],  # set: ids the member finalized
    active: dict[int, Any],  # dict: partition -> its active migration
    unconfirmed: dict[int, Any],  # dict: partition -> an unconfirmed destination commit
    me: int,  # long: the member's id
    replicas: NDArray[np.int32] | None = None,  # int32 ndarray (P, R), C-contiguous, writeable: apply plain entries here
    success: Any = None,  # object: MigrationStatus.SUCCESS
    failed: Any = None,  # object: MigrationStatus.FAILED
) -> int: ...  # the first index needing the full rule, len(lst) if none
def of_partition(
    entries: dict[Any, Any],  # dict: id -> migration, in list order
    partition: int,  # object
) -> tuple[Any, ...]: ...  # the entries of that partition, in order
def keyed(
    lst: tuple[Any, ...],  # tuple
    stop: int,  # Py_ssize_t
    head: dict[Any, Any] | None = None,  # dict: the previous head (copied when lst starts with it)
) -> dict[Any, Any]: ...  # {x.id: x for x in lst[:stop]}
def keep_current(
    keep: dict[Any, Any],  # dict: the received entries kept (the new head)
    head: dict[Any, Any],  # dict: the previous head (read only)
    front: dict[Any, Any],  # dict: retained entries in reverse order, updated in place
    back: dict[Any, Any],  # dict: retained entries in order after front's, updated in place
    recheck: set[Any],  # set: ids to look at whatever their partition (consumed)
    index: dict[int, set[Any]],  # dict: partition -> ids, updated in place
    versions: NDArray[np.int32],  # int32 ndarray (P,), C-contiguous
    seen: NDArray[np.int32],  # int32 ndarray (P,), C-contiguous: the previous call's versions, overwritten
) -> set[Any]: ...  # ids of received entries kept below their partition's version
def plain_vector(
    a: Any,  # object: anything
) -> bool: ...  # an aligned, native-order, C-contiguous 1-D int32 ndarray (read in place here)
def unchanged(
    versions: Any,  # object: an int32 vector (anything else: False)
    seen: Any,  # object: an int32 vector (anything else: False)
) -> bool: ...  # both int32 vectors of one length, equal entry for entry
def well_formed(
    x: Any,  # object: a migration
    info_type: type,  # object: MigrationInfo
    partition_count: int,  # long
    replica_count: int,  # long
) -> bool: ...  # x is an info_type with int fields in range; False: let the Python rule decide
def apply_to(
    table: NDArray[np.int32],  # int32 ndarray (P, R), C-contiguous, writeable
    partition: int,  # object: a row index
    x: Any,  # object: the migration
    info_type: type,  # object: MigrationInfo
) -> bool: ...  # True: applied in place; False: nothing written (apply the Python rule)
def apply_fitting(
    table: NDArray[np.int32],  # int32 ndarray (P, R), C-contiguous, writeable
    partition: int,  # object: a row index
    x: Any,  # object: the migration
    info_type: type,  # object: MigrationInfo
) -> int: ...  # 1: x fits the row, applied; 0: it does not, nothing written; -1: unreadable here (apply the Python rule)
def settled(
    x: Any,  # object: a migration
    status: Any,  # object: the new status
    final: int | None,  # object: the new final version, or None to keep x's
    info_type: type,  # object: MigrationInfo
) -> Any: ...  # a new info_type, or None when x is not a plain info_type
