"""Shared pieces of the fuzz targets: the contract check and structured-input builders.

The contract (docs/fuzzing.md): a public call either returns, and the result is then
compared with the reference by the target, or raises ``ValueError``/``TypeError``; the
caller's inputs are unchanged either way. :func:`checked` runs one call under that
contract; anything else propagates and is a finding.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

try:  # pyarrow is a dependency of hzfast, but keep the helpers importable without it
    import pyarrow as pa
except ImportError:  # pragma: no cover
    pa = None


class Finding(AssertionError):
    """A broken contract: wrong result, mutated input, or an error that should not be."""


class _Rejected:
    """Sentinel: the call raised ValueError or TypeError."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __repr__(self) -> str:
        return f"Rejected({type(self.exc).__name__}: {self.exc})"


def rejected(result: object) -> bool:
    """True when :func:`checked` saw a ValueError/TypeError."""
    return isinstance(result, _Rejected)


# ----------------------------------------------------------------------- snapshots
def snapshot(obj: object, depth: int = 0) -> object:
    """A comparable picture of ``obj``: contents, dtype, shape, strides and writeability
    of arrays, Arrow buffers byte for byte, containers element by element."""
    if depth > 6:
        return ("deep", id(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            body: object = [snapshot(x, depth + 1) for x in obj.ravel(order="K").tolist()]
        else:
            body = obj.tobytes(order="A")
        return ("nd", obj.dtype.str, obj.shape, obj.strides, bool(obj.flags.writeable), body)
    if isinstance(obj, np.generic):
        return ("np", obj.dtype.str, obj.tobytes())
    if pa is not None and isinstance(obj, pa.ChunkedArray):
        return ("chunked", [snapshot(c, depth + 1) for c in obj.chunks])
    if pa is not None and isinstance(obj, pa.Array):
        return ("arrow", str(obj.type), len(obj), obj.offset,
                [None if b is None else b.to_pybytes() for b in obj.buffers()])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [snapshot(x, depth + 1) for x in obj])
    if isinstance(obj, dict):
        return ("dict", [(snapshot(k, depth + 1), snapshot(v, depth + 1)) for k, v in obj.items()])
    if isinstance(obj, (bytearray, memoryview)):
        return (type(obj).__name__, bytes(obj))
    if isinstance(obj, float) and math.isnan(obj):
        return ("nan",)
    if isinstance(obj, (str, bytes, int, float, bool, type(None))):
        return (type(obj).__name__, obj)
    # immutable value objects (PartitionTable, Members, MigrationPlan, ...): their own
    # arrays are read-only, so their public state is what a call could change
    for attr in ("replicas", "versions", "_columns"):
        if hasattr(obj, attr):
            return (type(obj).__name__, snapshot(getattr(obj, attr), depth + 1))
    return (type(obj).__name__, repr(obj))


def checked(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` under the contract: its result, or a rejection marker on
    ValueError/TypeError; raises :class:`Finding` if any argument changed."""
    before = [snapshot(a) for a in args], {k: snapshot(v) for k, v in kwargs.items()}
    try:
        result: Any = fn(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        result = _Rejected(exc)
    after = [snapshot(a) for a in args], {k: snapshot(v) for k, v in kwargs.items()}
    if before != after:
        changed = [i for i, (x, y) in enumerate(zip(before[0], after[0])) if x != y]
        changed_kw = [k for k in before[1] if before[1][k] != after[1][k]]
        raise Finding(f"{getattr(fn, '__qualname__', fn)} changed its input "
                      f"(positional {changed}, keyword {changed_kw})")
    return result


def expect_rejected(result: object, what: str) -> None:
    """The input was invalid: the call must have raised ValueError/TypeError."""
    if not rejected(result):
        raise Finding(f"{what}: accepted an invalid input and returned {result!r:.300}")


def expect_equal(got: object, want: object, what: str) -> None:
    if rejected(got):
        raise Finding(f"{what}: rejected a valid input: {got!r}")
    if isinstance(got, np.ndarray):
        got = got.tolist()
    if isinstance(want, np.ndarray):
        want = want.tolist()
    if got != want:
        raise Finding(f"{what}: got {got!r:.400}, reference {want!r:.400}")


# ----------------------------------------------------------------------- builders
INT_EDGES = (0, 1, -1, 2, 7, 8, 2**31 - 1, -(2**31), 2**31, 2**32, 2**63 - 1, -(2**63), 2**63,
             2**64, -(2**64), 255, 256, 65535, 65536)


def small_int(fdp: Any, lo: int, hi: int) -> int:
    return int(fdp.ConsumeIntInRange(lo, hi))


def edgy_int(fdp: Any, lo: int, hi: int) -> int:
    """Mostly an int in [lo, hi]; sometimes an edge value far outside it."""
    if fdp.ConsumeIntInRange(0, 7) == 0:
        return int(fdp.PickValueInList(list(INT_EDGES)))
    return int(fdp.ConsumeIntInRange(lo, hi))


def fuzzed_str(fdp: Any, max_len: int = 12, ascii_only: bool = False) -> str:
    """A short string: ASCII, BMP, astral or with a lone surrogate."""
    mode = fdp.ConsumeIntInRange(0, 9)
    n = fdp.ConsumeIntInRange(0, max_len)
    if ascii_only or mode < 5:
        return "".join(chr(fdp.ConsumeIntInRange(0, 127)) for _ in range(n))
    if mode < 8:
        return "".join(chr(fdp.ConsumeIntInRange(0, 0xFFFF)) for _ in range(n))
    return "".join(chr(fdp.ConsumeIntInRange(0, 0x10FFFF)) for _ in range(n))


def encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# Dressings of an integer array: how the same logical values reach the API.
INT_DRESSINGS = ("int32", "int64", "list", "tuple", "int16", "uint32", "uint64", "float64",
                 "float_frac", "bool", "object", "big_endian", "noncontig", "fortran",
                 "readonly", "int8")
# dressings a function taking an int32 array or a list must accept when the values are valid
PLAIN_DRESSINGS = ("int32", "list", "tuple", "readonly")


def dress_ints(fdp: Any, values: list[int], shape: tuple[int, ...]
               ) -> tuple[object, list[int] | None, str]:
    """Return ``(obj, logical, how)``: ``values`` (a flat list of ints, row-major for
    ``shape``) dressed as some array-like. ``logical`` is the flat list of the integers
    ``obj`` really holds (a cast to a narrower dtype wraps them; that is the caller's
    array), or None when ``obj`` holds non-integers (fractional floats, bools): such an
    input must be rejected, never converted silently."""
    how = fdp.PickValueInList(list(INT_DRESSINGS))
    if how in ("list", "tuple", "object"):
        nested = _nested(list(values), shape)
        if how == "tuple":
            obj: object = tuple(tuple(r) for r in nested) if len(shape) == 2 else tuple(nested)
        elif how == "list":
            obj = nested
        else:
            arr_o = np.empty(shape, dtype=object)
            for i, v in enumerate(values):
                arr_o.flat[i] = v
            obj = arr_o
        return obj, list(values), how
    clipped = [min(max(v, -(2**63)), 2**63 - 1) for v in values]
    arr64 = np.array(clipped, dtype=np.int64).reshape(shape)
    if how in ("int16", "uint32", "uint64", "int8", "int64"):
        arr = arr64.astype(how)
        return arr, [int(x) for x in arr.ravel().tolist()], how
    if how in ("float64", "float_frac"):
        arr_f = np.array([float(v) for v in values], dtype=np.float64).reshape(shape)
        if how == "float_frac" and arr_f.size:   # (an empty array has nothing to round)
            arr_f.flat[fdp.ConsumeIntInRange(0, arr_f.size - 1)] += 0.5
            return arr_f, None, how
        ok = all(float(v).is_integer() and abs(v) <= 2**53 for v in values)
        return arr_f, [int(v) for v in values] if ok else None, how
    if how == "bool":
        return arr64.astype(bool), (None if values else []), how
    arr32 = arr64.astype(np.int32)
    logical = [int(x) for x in arr32.ravel().tolist()]
    if how == "big_endian":
        return arr32.astype(">i4"), logical, how
    if how == "noncontig":
        big = np.zeros((*shape[:-1], shape[-1] * 2), np.int32)
        big[..., ::2] = arr32
        return big[..., ::2], logical, how
    if how == "fortran":
        return np.asfortranarray(arr32), logical, how
    if how == "readonly":
        arr32.flags.writeable = False
    return arr32, logical, how


def _nested(values: list[Any], shape: tuple[int, ...]) -> list[Any]:
    if len(shape) == 2:
        c = shape[1]
        return [list(values[i * c:(i + 1) * c]) for i in range(shape[0])]
    return list(values)


def table_values(fdp: Any, P: int, R: int, M: int, hostile: bool) -> list[list[int]]:
    """A (P, R) table as rows of member indices in [-1, M): distinct per row; with
    ``hostile`` some cells get out-of-range values or repeat a member."""
    rows = []
    for _ in range(P):
        pool = list(range(M))
        row = []
        for _ in range(R):
            if not pool or fdp.ConsumeIntInRange(0, 4) == 0:
                row.append(-1)
            else:
                row.append(pool.pop(fdp.ConsumeIntInRange(0, len(pool) - 1)))
        rows.append(row)
    if hostile and P and R:
        for _ in range(fdp.ConsumeIntInRange(1, 3)):
            p, r = fdp.ConsumeIntInRange(0, P - 1), fdp.ConsumeIntInRange(0, R - 1)
            kind = fdp.ConsumeIntInRange(0, 2)
            if kind == 0:
                rows[p][r] = int(fdp.PickValueInList(
                    [-2, M, M + 1, 2**31 - 1, -(2**31), 2**31, 2**40, -(2**40)]))
            elif kind == 1 and R > 1:
                rows[p][r] = rows[p][(r + 1) % R]
    return rows


def valid_table(rows: list[list[int]], M: int | None) -> bool:
    """Member indices in [-1, M) (any non-negative int32 if M is None), none twice."""
    for row in rows:
        seen = [m for m in row if m != -1]
        if len(seen) != len(set(seen)):
            return False
        for m in row:
            if m < -1 or m > 2**31 - 1 or (M is not None and m >= M):
                return False
    return True


def arrow_strings(fdp: Any, items: list[bytes], large: bool, binary: bool) -> Any:
    """An Arrow string/binary array of ``items``, sometimes sliced (non-zero offset)."""
    t = (pa.large_binary() if large else pa.binary()) if binary else \
        (pa.large_string() if large else pa.string())
    arr = pa.array([bytes(x) if binary else bytes(x).decode("utf-8", "surrogatepass")
                    for x in items], type=t)
    if len(arr) and fdp.ConsumeBool():
        start = fdp.ConsumeIntInRange(0, len(arr))
        arr = arr.slice(start, fdp.ConsumeIntInRange(0, len(arr) - start))
    return arr


def arrow_from_buffers(fdp: Any, binary: bool) -> tuple[Any, list[bytes] | None]:
    """An Arrow string/binary array built with ``pa.Array.from_buffers`` from fuzzed
    offsets over a fuzzed data buffer. Returns ``(array, items)`` where ``items`` are the
    byte strings the array denotes, or None when its offsets are invalid (negative,
    decreasing, or past the data buffer): such an array must be rejected. ``array`` is
    None when pyarrow itself refused the buffers."""
    large = fdp.ConsumeBool()
    n = fdp.ConsumeIntInRange(0, 8)
    offset = fdp.ConsumeIntInRange(0, 3)
    data = bytes(fdp.ConsumeIntInRange(32, 126) for _ in range(fdp.ConsumeIntInRange(0, 40)))
    offs = []
    pos = 0
    for _ in range(n + offset + 1):
        mode = fdp.ConsumeIntInRange(0, 15)
        if mode == 0:
            pos = int(fdp.PickValueInList([-1, -(2**31), 2**31 - 1, len(data) + 1,
                                           len(data) + 4096]))
        elif mode == 1:
            pos = max(pos - fdp.ConsumeIntInRange(1, 8), -4)
        else:
            pos = pos + fdp.ConsumeIntInRange(0, 6)
        offs.append(pos)
    dtype = np.int64 if large else np.int32
    lim = np.iinfo(dtype)
    offs = [min(max(o, lim.min), lim.max) for o in offs]
    off_buf = pa.py_buffer(np.array(offs, dtype=dtype).tobytes())
    t = (pa.large_binary() if large else pa.binary()) if binary else \
        (pa.large_string() if large else pa.string())
    try:   # pyarrow checks the first and last offsets itself, not the ones between
        arr = pa.Array.from_buffers(t, n, [None, off_buf, pa.py_buffer(data)], null_count=0,
                                    offset=offset)
    except (pa.ArrowInvalid, ValueError):
        return None, None
    used = offs[offset:offset + n + 1]
    ok = all(0 <= o <= len(data) for o in used) and all(a <= b for a, b in itertools.pairwise(used))
    if n == 0:
        return arr, []   # nothing is read: an empty array is empty whatever its offset
    items = [data[a:b] for a, b in itertools.pairwise(used)] if ok else None
    return arr, items
