"""Private key normaliser shared by the Hazelcast hashing and the Ignite helpers.

Every bulk key input (Python list/tuple, numpy array, pyarrow Array/ChunkedArray) is
turned into one :class:`KeyBatch` of dense buffers that a ``nogil`` kernel can walk:

* ``"int"``    - ``values`` is C-contiguous ``int32`` (Java ``Integer``);
* ``"long"``   - ``values`` is C-contiguous ``int64`` (Java ``Long``);
* ``"string"`` - ``offsets`` (``int32`` or ``int64``, length ``n + 1``, absolute byte
  offsets into ``data``) and ``data`` (``uint8``: the UTF-8 bytes; string ``i`` is
  ``data[offsets[i]:offsets[i + 1]]``);
* ``"data"``   - like ``"string"``, but every item is an already serialized Hazelcast
  ``Data`` blob (4-byte partition hash, 4-byte type id, payload; at least 8 bytes).

Arrow buffers are used zero-copy (the array offset is honoured by slicing ``offsets``),
so ``offsets`` / ``data`` / ``values`` may be read-only views of the caller's memory:
never write into them. Validation happens here, once; kernels then trust the batch.

Contract (shared with ``hzfast.ignite``; keep it stable)::

    normalize_keys(keys, key_type=None, name="keys") -> KeyBatch
    int_key(key, key_type, name) -> ("int" | "long", value)     # one integer key
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NamedTuple, NoReturn, Optional

import numpy as np
from numpy.typing import NDArray

_encode_str_list: Callable[[list[str]], tuple[int, int, NDArray[np.int64] | None,
                                               NDArray[np.uint8] | None]] | None
_encode_utf32: Callable[[NDArray[np.uint32]], tuple[int, NDArray[np.int64] | None,
                                                    NDArray[np.uint8] | None]] | None
try:  # the C encoder for lists of str (falls back to join/encode if not built)
    from hzfast._hashing import encode_str_list as _encode_str_list
    from hzfast._hashing import encode_utf32 as _encode_utf32
except ImportError:  # pragma: no cover
    _encode_str_list = _encode_utf32 = None

__all__ = ["KEY_TYPES", "KeyBatch", "normalize_keys", "check_key_type", "is_scalar_key",
           "int_key"]

KEY_TYPES = ("string", "int", "long", "data")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DATA_HEADER = 8  # partition hash + type id


class KeyBatch(NamedTuple):
    """Dense, validated keys. See the module docstring for the meaning of each field."""

    kind: str
    n: int
    values: Optional[NDArray[Any]] = None
    offsets: Optional[NDArray[Any]] = None
    data: Optional[NDArray[Any]] = None


def check_key_type(key_type: object, name: str = "key_type",
                   allowed: tuple[str, ...] = KEY_TYPES) -> str | None:
    """Return ``key_type`` if it is ``None`` or one of ``allowed``; else raise."""
    if key_type is None:
        return None
    if not isinstance(key_type, str):
        raise TypeError(f"{name} must be None or one of {allowed}, "
                        f"got {type(key_type).__name__}")
    if key_type not in allowed:
        raise ValueError(f"{name} must be None or one of {allowed}, got {key_type!r}")
    return key_type


def is_scalar_key(key: object) -> bool:
    """True for a single key (str, int, bytes-like, numpy scalar), False for a batch."""
    return isinstance(key, (str, int, bytes, bytearray, memoryview, np.generic))


def int_key(key: int | np.integer[Any], key_type: str | None, name: str) -> tuple[str, int]:
    """Java type and value of one integer key: ``("int", v)`` (Integer) or ``("long", v)``.

    ``key`` is a Python int or numpy integer (not a bool); ``key_type`` None infers it:
    numpy ``int64`` scalars are Longs (their array meaning), anything else an Integer.
    Raises TypeError if ``key_type`` is not None, "int" or "long", ValueError (naming
    ``name``) if the value does not fit the Java type.
    """
    if key_type not in (None, "int", "long"):
        raise TypeError(f"{name}: key_type={key_type!r} does not match an int key")
    v = int(key)
    kind = key_type or ("long" if isinstance(key, np.int64) else "int")
    if kind == "int" and not INT32_MIN <= v <= INT32_MAX:
        raise _not_integer(name, v)
    if kind == "long" and not INT64_MIN <= v <= INT64_MAX:
        raise _not_long(name, v)
    return kind, v


def _not_integer(name: str, v: int) -> ValueError:
    return ValueError(f"{name} = {v} does not fit a Java Integer (int32); "
                      f"pass key_type='long' to hash it as a Long")


def _not_long(name: str, v: int) -> ValueError:
    return ValueError(f"{name} = {v} does not fit a Java Long (int64)")


# --------------------------------------------------------------------------- helpers
_EMPTY_U8 = np.empty(0, dtype=np.uint8)
_EMPTY_U8.flags.writeable = False


def _empty(kind: str) -> KeyBatch:
    if kind == "int":
        return KeyBatch("int", 0, np.empty(0, np.int32), None, None)
    if kind == "long":
        return KeyBatch("long", 0, np.empty(0, np.int64), None, None)
    return KeyBatch(kind, 0, None, np.zeros(1, np.int64), _EMPTY_U8)


def _mismatch(name: str, key_type: str | None, what: str) -> TypeError:
    return TypeError(f"{name}: key_type={key_type!r} does not match the keys ({what})")


def _ints(values: NDArray[np.integer[Any]], key_type: str | None, name: str,
          natural: str) -> KeyBatch:
    """Integer array (int32 or int64, 1-D, C-contiguous) -> int/long batch."""
    kind = key_type or natural
    if kind not in ("int", "long"):
        raise _mismatch(name, key_type, f"integers ({values.dtype})")
    if kind == "long":
        if values.dtype != np.int64:
            values = values.astype(np.int64)
        return KeyBatch("long", values.shape[0], values, None, None)
    if values.dtype != np.int32:
        if values.size:
            bad = np.flatnonzero((values < INT32_MIN) | (values > INT32_MAX))
            if bad.size:
                i = int(bad[0])
                raise _not_integer(f"{name}[{i}]", int(values[i]))
        values = values.astype(np.int32)
    return KeyBatch("int", values.shape[0], values, None, None)


def _check_data_lengths(offsets: NDArray[Any], name: str) -> None:
    if offsets.shape[0] > 1:
        lengths = np.diff(offsets)
        short = np.flatnonzero(lengths < DATA_HEADER)
        if short.size:
            i = int(short[0])
            raise ValueError(f"{name}[{i}] is {int(lengths[i])} bytes: serialized Hazelcast data "
                             f"needs at least {DATA_HEADER} (partition hash + type id)")


_Items = Sequence[Any] | NDArray[np.object_]   # a batch of Python objects


def _encode_strings(seq: _Items, name: str) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """A sequence of str -> (offsets int64 (n+1), data uint8)."""
    if _encode_str_list is not None:
        if not isinstance(seq, list):
            seq = list(seq)
        status, pos, offsets, data = _encode_str_list(seq)
        if status == 0:
            assert offsets is not None and data is not None   # status 0: both arrays
            return offsets, data
        if status == 1:  # not a str
            _bad_item(seq[pos], pos, name, "str")
        # status 2: cannot be encoded as UTF-8 (lone surrogate)
        raise ValueError(f"{name}[{pos}] cannot be encoded as UTF-8 (lone surrogate?)")
    n = len(seq)
    joined = "".join(seq)
    if joined.isascii():
        raw = joined.encode("ascii")
        lengths = np.fromiter(map(len, seq), dtype=np.int64, count=n)
    else:
        try:
            enc = [s.encode("utf-8") for s in seq]
        except UnicodeEncodeError:
            for i, s in enumerate(seq):
                try:
                    s.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError(f"{name}[{i}] cannot be encoded as UTF-8 "
                                     f"(lone surrogate?)") from None
            raise  # pragma: no cover
        raw = b"".join(enc)
        lengths = np.fromiter(map(len, enc), dtype=np.int64, count=n)
    offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offs[1:])
    return offs, np.frombuffer(raw, dtype=np.uint8)


def _bad_item(item: object, pos: int, name: str, expected: str) -> NoReturn:
    if item is None:
        raise ValueError(f"{name}[{pos}] is None: null keys cannot be hashed")
    raise TypeError(f"{name}[{pos}] is a {type(item).__name__}, expected {expected} "
                    f"(all keys of one batch must have the same type)")


def _join_bytes(seq: _Items, name: str) -> KeyBatch:
    n = len(seq)
    for i, b in enumerate(seq):
        if not isinstance(b, (bytes, bytearray, memoryview)):
            _bad_item(b, i, name, "bytes")
    items = [bytes(b) for b in seq]
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    _check_data_lengths(offsets, name)
    return KeyBatch("data", n, None, offsets, np.frombuffer(b"".join(items), dtype=np.uint8))


def _classify(t: type) -> str:
    if t is str or issubclass(t, str):
        return "str"
    if t is bool or issubclass(t, (bool, np.bool_)):
        return "bool"
    if t is int or issubclass(t, (int, np.integer)):
        return "int"
    if issubclass(t, (bytes, bytearray, memoryview)):
        return "bytes"
    if t is type(None):
        return "none"
    return "other"


# --------------------------------------------------------------------------- sequences
def _from_sequence(seq: _Items, key_type: str | None, name: str) -> KeyBatch:
    n = len(seq)
    if n == 0:
        return _empty(key_type or "int")
    if (_encode_str_list is not None and type(seq[0]) is str
            and key_type in (None, "string")):
        # fast path: the C encoder checks every item is a str as it goes
        status, pos, offsets, data = _encode_str_list(seq if type(seq) is list else list(seq))
        if status == 0:
            return KeyBatch("string", n, None, offsets, data)
        if status == 2:
            raise ValueError(f"{name}[{pos}] cannot be encoded as UTF-8 (lone surrogate?)")
        # status 1 (not all str): the general path below names the offending item
    types = set(map(type, seq))
    classes = {_classify(t) for t in types}
    if "none" in classes:
        pos = next(i for i, k in enumerate(seq) if k is None)
        raise ValueError(f"{name}[{pos}] is None: null keys cannot be hashed")
    if "bool" in classes:
        pos = next(i for i, k in enumerate(seq) if isinstance(k, (bool, np.bool_)))
        raise TypeError(f"{name}[{pos}] is a bool: bools are not integer keys")
    if len(classes) != 1 or "other" in classes:
        first = _classify(type(seq[0]))
        expected = {"str": "str", "int": "int", "bytes": "bytes"}.get(first)
        if expected is None:
            raise TypeError(f"{name}[0] is a {type(seq[0]).__name__}: keys must be str, int "
                            f"or bytes (serialized data)")
        pos = next(i for i, k in enumerate(seq) if _classify(type(k)) != first)
        _bad_item(seq[pos], pos, name, expected)
    cls = classes.pop()
    if cls == "str":
        if key_type not in (None, "string"):
            raise _mismatch(name, key_type, "str")
        offsets, data = _encode_strings(seq, name)
        return KeyBatch("string", n, None, offsets, data)
    if cls == "bytes":
        if key_type not in (None, "data"):
            raise _mismatch(name, key_type, "bytes")
        return _join_bytes(seq, name)
    # integers
    if key_type not in (None, "int", "long"):
        raise _mismatch(name, key_type, "int")
    try:
        values = np.array(seq, dtype=np.int64)
    except OverflowError:
        for i, k in enumerate(seq):
            if not INT64_MIN <= int(k) <= INT64_MAX:
                raise _not_long(f"{name}[{i}]", int(k)) from None
        raise  # pragma: no cover
    if values.ndim != 1:  # pragma: no cover - defensive
        raise ValueError(f"{name} must be a flat sequence of keys")
    # numpy int64 scalars keep their array meaning (Long); Python ints are Integers
    natural = "long" if types == {np.int64} else "int"
    return _ints(values, key_type, name, natural)


# --------------------------------------------------------------------------- numpy
def _from_numpy(arr: NDArray[Any], key_type: str | None, name: str) -> KeyBatch:
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (use np.ascontiguousarray)")
    dt = arr.dtype
    if dt == np.int32 or dt == np.int64:
        return _ints(arr, key_type, name, "int" if dt == np.int32 else "long")
    if dt.kind == "U":
        if key_type not in (None, "string"):
            raise _mismatch(name, key_type, f"strings ({dt})")
        n = arr.shape[0]
        if n == 0:
            return _empty("string")
        if _encode_utf32 is None:  # pragma: no cover - extension not built
            encoded = _encode_strings(arr.tolist(), name)
            return KeyBatch("string", n, None, *encoded)
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        width = arr.dtype.itemsize // 4
        codepoints = arr.view(np.uint32).reshape(n, width) if width else \
            np.zeros((n, 0), np.uint32)
        bad, offsets, data = _encode_utf32(codepoints)
        if bad != -1:
            raise ValueError(f"{name}[{bad}] cannot be encoded as UTF-8 (lone surrogate?)")
        return KeyBatch("string", n, None, offsets, data)
    if dt == object:
        return _from_sequence(arr, key_type, name)
    raise TypeError(f"{name} must have dtype int32 (Integer keys), int64 (Long keys), "
                    f"unicode or object (str keys), got {dt}")


# --------------------------------------------------------------------------- arrow
def _arrow_null_error(arr: Any, name: str) -> ValueError:
    mask = arr.is_null().to_numpy(zero_copy_only=False)
    pos = int(np.flatnonzero(mask)[0])
    return ValueError(f"{name}[{pos}] is null: null keys cannot be hashed")


def loaded_pyarrow() -> ModuleType | None:
    """pyarrow when something has imported it, else None: an Arrow array cannot exist
    before, so ``import hzfast`` does not pay for importing pyarrow."""
    return sys.modules.get("pyarrow")


def _from_arrow(arr: Any, key_type: str | None, name: str) -> KeyBatch:
    import pyarrow as pa   # loaded already: arr is an Arrow array

    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        arr = arr.cast(pa.large_string() if pa.types.is_string_view(t) else pa.large_binary())
        t = arr.type
    n = len(arr)
    if arr.null_count:
        raise _arrow_null_error(arr, name)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        kind = "string"
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        kind = "data"
    elif pa.types.is_int32(t):
        kind = "int"
    elif pa.types.is_int64(t):
        kind = "long"
    else:
        raise TypeError(f"{name} must be a pyarrow array of string, large_string, int32, "
                        f"int64, binary or large_binary, got {t}")
    if kind in ("int", "long"):
        if key_type in ("string", "data"):
            raise _mismatch(name, key_type, f"arrow {t}")
        values = arr.to_numpy(zero_copy_only=True)
        return _ints(values, key_type, name, kind)
    if key_type is not None and key_type != kind:
        raise _mismatch(name, key_type, f"arrow {t}")
    if n == 0:
        return _empty(kind)
    bufs = arr.buffers()
    off_dtype = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) \
        else np.int32
    start = arr.offset
    offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=start + n + 1)[start:]
    data = _EMPTY_U8 if bufs[2] is None else np.frombuffer(bufs[2], dtype=np.uint8)
    if kind == "data":
        _check_data_lengths(offsets, name)
    return KeyBatch(kind, n, None, offsets, data)


def _is_arrow(keys: object) -> bool:
    pa = loaded_pyarrow()
    return pa is not None and isinstance(keys, (pa.Array, pa.ChunkedArray))


def _from_foreign(keys: object, name: str) -> Any:
    """pandas Series/Index/arrays and Arrow-protocol objects (polars, ...) -> pyarrow Array,
    or None when ``keys`` is none of those."""
    if isinstance(keys, (str, bytes, bytearray, memoryview)):
        return None
    module = type(keys).__module__ or ""
    if not (module.startswith("pandas") or hasattr(keys, "__arrow_c_array__")
            or hasattr(keys, "__arrow_c_stream__")):
        return None
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    if module.startswith("pandas"):
        try:
            return pa.array(keys, from_pandas=True)  # zero-copy for numeric dtypes
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise TypeError(f"{name}: cannot read these pandas keys ({exc})") from None
    if hasattr(keys, "__arrow_c_array__"):
        return pa.array(keys)
    if hasattr(keys, "__arrow_c_stream__"):
        return pa.chunked_array(keys)
    return None


# --------------------------------------------------------------------------- entry
def normalize_keys(keys: object, key_type: str | None = None, name: str = "keys") -> KeyBatch:
    """Validate a batch of keys and return it as dense buffers (:class:`KeyBatch`).

    Parameters
    ----------
    keys : list, tuple, ndarray, pyarrow Array/ChunkedArray, pandas Series
        Python ``str`` / ``int`` / ``bytes`` items (one type per batch); numpy ``int32``
        (Integer), ``int64`` (Long), unicode or object arrays (1-D, C-contiguous); pyarrow
        ``string``, ``large_string``, ``int32``, ``int64``, ``binary``, ``large_binary``;
        pandas Series/Index and objects speaking the Arrow C data interface (converted
        with ``pyarrow.array``: zero-copy for numeric data).
    key_type : {None, "string", "int", "long", "data"}
        ``None`` infers from the keys. ``"long"`` widens Integer keys; ``"int"`` narrows
        Long keys when they fit in int32.
    name : str
        The argument name used in error messages.

    Returns
    -------
    KeyBatch

    Raises
    ------
    TypeError
        Unsupported container or dtype, mixed item types, bools, key_type not matching.
    ValueError
        None/null keys (the position is named), ints outside int32 without
        ``key_type="long"`` (outside int64 always), non-1-D or non-contiguous arrays,
        serialized data shorter than 8 bytes, unknown key_type.
    """
    key_type = check_key_type(key_type)
    if isinstance(keys, np.ndarray):
        return _from_numpy(keys, key_type, name)
    if isinstance(keys, (list, tuple)):
        return _from_sequence(keys, key_type, name)
    if isinstance(keys, range):
        return _ints(np.arange(keys.start, keys.stop, keys.step, dtype=np.int64),
                     key_type, name, "int")
    if _is_arrow(keys):
        pa = loaded_pyarrow()
        assert pa is not None   # keys is an Arrow array
        if isinstance(keys, pa.ChunkedArray):
            if keys.num_chunks == 1:
                keys = keys.chunk(0)
            elif keys.num_chunks == 0:
                keys = pa.array([], type=keys.type)
            else:
                keys = keys.combine_chunks()
        return _from_arrow(keys, key_type, name)
    converted = _from_foreign(keys, name)
    if converted is not None:
        return normalize_keys(converted, key_type, name)
    if is_scalar_key(keys):
        raise TypeError(f"{name} must be a batch of keys (list, tuple, numpy or pyarrow "
                        f"array), got a single {type(keys).__name__}")
    raise TypeError(f"{name} must be a list, tuple, numpy array or pyarrow Array/ChunkedArray, "
                    f"got {type(keys).__name__}")
