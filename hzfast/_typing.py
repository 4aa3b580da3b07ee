"""Type aliases for hzfast's annotations (a leaf: imports numpy and the standard library only).

They name what the validators accept; nothing here runs any check.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeAlias, Union

import numpy as np
from numpy.typing import NDArray

__all__ = ["Int32Array", "BoolArray", "HasReplicas", "TableLike", "VectorLike"]

Int32Array: TypeAlias = NDArray[np.int32]
BoolArray: TypeAlias = NDArray[np.bool_]


class HasReplicas(Protocol):
    """Anything with a ``replicas`` table, such as :class:`hzfast.PartitionTable`."""

    @property
    def replicas(self) -> NDArray[np.int32]: ...


#: A replica table: an int32 C-contiguous (P, R) array, a PartitionTable, or nested
#: lists/tuples of ints (converted).
TableLike: TypeAlias = Union[NDArray[np.int32], HasReplicas, Sequence[Sequence[int]]]
#: A 1-D int32 vector (e.g. versions): an int32 C-contiguous array or a list/tuple of ints.
VectorLike: TypeAlias = Union[NDArray[np.int32], Sequence[int]]
