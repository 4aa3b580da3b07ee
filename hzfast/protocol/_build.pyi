"""Type stub for the hzfast.protocol._build extension (Cython types in trailing comments)."""
from typing import Any, Generic, TypeVar

from typing_extensions import disjoint_base

_T = TypeVar("_T")

@disjoint_base
class Builder(Generic[_T]):  # cdef class
    @property
    def cls(self) -> type[_T]: ...  # object: the dataclass
    @property
    def fields(self) -> tuple[str, ...]: ...  # tuple: its field names, in order
    def __init__(self, cls: type[_T]) -> None: ...
    def __call__(self, *values: Any) -> _T: ...  # one value per field, in field order
