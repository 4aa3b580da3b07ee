"""Private key normaliser shared by the Hazelcast hashing and the Ignite helpers.

Every bulk key input (Python list/tuple, numpy array, pyarrow Array/ChunkedArray) is
turned into one :class:`KeyBatch` of dense buffers that a ``nogil`` kernel can walk:

* ``"int"``    - ``values`` is C-contiguous ``int32`` (Java ``Integer``);
* ``"long"``   - ``values`` is C-contiguous ``int64`` (Java ``Long``);
* ``"string"`` - ``offsets`` (``int32`` or ``int64``, length ``n + 1``, absolute byte
  offsets into ``data``) and ``data`` (``uint8``: the UTF-8 bytes; string ``i`` is
  ``data[offsets[i]:offsets[i + 1]]``);
* ``"data"``   - like ``"string"``, but every item is an already serialized Hazelcast
  ``Data`` blob (4-byte partition hash, 4-byte type id, payload; at least 8 bytes);
* ``"mixed"``  - a list mixing numpy ``int64`` scalars (Longs) with other integers
  (Integers): ``values`` is ``int64`` and ``longs`` marks the Longs, so that every key
  hashes exactly as the scalar ``partition_id`` of it would; :func:`split_mixed` turns it
  into one ``"int"`` and one ``"long"`` batch.

Arrow buffers are used zero-copy (the array offset is honoured by slicing ``offsets``),
so ``offsets`` / ``data`` / ``values`` may be read-only views of the caller's memory:
never write into them. Validation happens here, once; kernels then trust the batch, with
one exception: the offsets of Arrow-style batches are checked by the kernels themselves,
item by item as they read them (``item_span`` in ``hzfast/_hashing.pxd``, one routine
for every such kernel), because the caller's buffer can change after any check made
here. :func:`malformed_item` turns a kernel's bad index into the one error message.
Everything built from Python objects (lists, numpy unicode arrays) is sized and filled
from a private snapshot, so another thread changing the input cannot overflow a buffer.

Contract (shared with ``hzfast.ignite``; keep it stable)::

    normalize_keys(keys, key_type=None, name="keys") -> KeyBatch
    int_key(key, key_type, name) -> ("int" | "long", value)     # one integer key
    split_mixed(batch) -> [(KeyBatch, positions), ...]          # "mixed" -> int + long
    piecewise(keys, name, hash_fn) -> ndarray[int32] | None      # chunked / dictionary Arrow
    malformed_item(offsets, size, i, name, min_len) -> ValueError
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NamedTuple, NoReturn

import numpy as np
from numpy.typing import NDArray

_encode_str_list: Callable[[list[str]], tuple[int, int, NDArray[np.int64] | None,
                                               NDArray[np.uint8] | None]] | None
_encode_utf32: Callable[[NDArray[np.uint32]], tuple[int, int, NDArray[np.int64] | None,
                                                    NDArray[np.uint8] | None]] | None
try:  # the C encoder for lists of str (falls back to join/encode if not built)
    from hzfast._hashing import encode_str_list as _encode_str_list
    from hzfast._hashing import encode_utf32 as _encode_utf32
except ImportError:  # pragma: no cover
    _encode_str_list = _encode_utf32 = None

# statuses of the two encoders (hzfast._hashing.ENC_*)
_ENC_OK, _ENC_NOT_STR, _ENC_SURROGATE, _ENC_CHANGED = 0, 1, 2, 3

__all__ = [
    "KEY_TYPES",
    "KeyBatch",
    "check_key_type",
    "int_key",
    "is_scalar_key",
    "malformed_item",
    "normalize_keys",
    "piecewise",
    "split_mixed",
    "validated_arrow",
]

KEY_TYPES = ("string", "int", "long", "data")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DATA_HEADER = 8  # partition hash + type id


class KeyBatch(NamedTuple):
    """Dense, validated keys. See the module docstring for the meaning of each field."""

    kind: str
    n: int
    values: NDArray[Any] | None = None
    offsets: NDArray[Any] | None = None
    data: NDArray[Any] | None = None
    longs: NDArray[np.bool_] | None = None   # kind "mixed": which values are Longs


def split_mixed(batch: KeyBatch) -> list[tuple[KeyBatch, NDArray[np.intp]]]:
    """A ``"mixed"`` batch as an ``"int"`` and a ``"long"`` batch, each with the positions
    of its keys in the original batch (their results go back there)."""
    assert batch.kind == "mixed" and batch.values is not None and batch.longs is not None
    out = []
    for kind, where in (("int", np.flatnonzero(~batch.longs)),
                        ("long", np.flatnonzero(batch.longs))):
        values = batch.values[where]
        if kind == "int":
            values = values.astype(np.int32)   # range checked by _from_sequence
        out.append((KeyBatch(kind, int(where.shape[0]), values), where))
    return out


def malformed_item(offsets: NDArray[Any], size: int, i: int, name: str, *,
                   min_len: int = 0, utf8: bool = False) -> ValueError:
    """The error for item ``i`` of an Arrow-style batch that a kernel refused.

    Every kernel walking ``(offsets, data)`` reports the first item it cannot read; this
    says why, the same way for every path (Hazelcast strings and serialized data, Ignite
    strings): offsets negative, decreasing or past the ``size`` bytes of the data buffer;
    serialized data shorter than ``min_len``; invalid UTF-8 (``utf8``: the kernel decodes
    the bytes). When none of these holds any more, the buffers changed during the call.
    """
    start, end = int(offsets[i]), int(offsets[i + 1])
    if start < 0 or end < start or end > size:
        return ValueError(f"{name}[{i}]: offsets point outside the data buffer ({start}.."
                          f"{end}: negative, decreasing or past its {size} bytes; malformed "
                          f"Arrow array)")
    if end - start < min_len:
        return ValueError(f"{name}[{i}] is {end - start} bytes: serialized Hazelcast data "
                          f"needs at least {min_len} (partition hash + type id)")
    if utf8:
        return ValueError(f"{name}[{i}] is not valid UTF-8")
    return _changed(name, i)


def _changed(name: str, i: int) -> ValueError:
    return ValueError(f"{name}[{i}] changed while it was being hashed (another thread wrote "
                      f"to the keys); nothing was read or written out of bounds")


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
    """Integer array (int32 or int64, 1-D, C-contiguous, any byte order) -> int/long batch.

    A byte-swapped array (``'>i4'``, ``'>i8'`` on a little-endian machine) is converted to
    native order by value: the keys are the numbers it holds, never its raw bytes."""
    values = native(values)
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


def native(arr: NDArray[Any]) -> NDArray[Any]:
    """``arr`` in native byte order: itself when it already is, else a converted copy
    (by value). Shared by every hashing input that takes numeric arrays."""
    if arr.dtype.isnative:
        return arr
    return arr.astype(arr.dtype.newbyteorder("="))


_Items = Sequence[Any] | NDArray[np.object_]   # a batch of Python objects


def _encode_strings(seq: _Items, name: str) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """A sequence of str -> (offsets int64 (n+1), data uint8)."""
    if _encode_str_list is not None:
        if not isinstance(seq, list):
            seq = list(seq)
        status, pos, offsets, data = _encode_str_list(seq)
        if status == _ENC_OK:
            assert offsets is not None and data is not None   # status 0: both arrays
            return offsets, data
        _encode_failed(status, pos, seq, name)
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


def _encode_failed(status: int, pos: int, seq: _Items | None, name: str) -> NoReturn:
    """Raise the error of a failed encoder status (hzfast._hashing.ENC_*)."""
    if status == _ENC_NOT_STR and seq is not None:
        _bad_item(seq[pos], pos, name, "str")
    if status == _ENC_SURROGATE:
        raise ValueError(f"{name}[{pos}] cannot be encoded as UTF-8 (lone surrogate?)")
    raise _changed(name, pos)


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
        # fast path: the C encoder snapshots the items and checks each is a str
        status, pos, offsets, data = _encode_str_list(seq if type(seq) is list else list(seq))
        if status == _ENC_OK:
            return KeyBatch("string", n, None, offsets, data)
        if status != _ENC_NOT_STR:
            _encode_failed(status, pos, None, name)
        # not all str: the general path below names the offending item
    # every later pass reads this private snapshot, never the caller's container again
    seq = tuple(seq)
    n = len(seq)
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
    # every key means what it means alone (int_key): numpy int64 scalars are Longs (their
    # array meaning), every other integer an Integer
    longs = np.fromiter((isinstance(k, np.int64) for k in seq), dtype=bool, count=n)
    if key_type is not None or not longs.any():
        return _ints(values, key_type, name, "int")
    if longs.all():
        return _ints(values, None, name, "long")
    ints = values[~longs]
    bad = np.flatnonzero((ints < INT32_MIN) | (ints > INT32_MAX))
    if bad.size:
        i = int(np.flatnonzero(~longs)[bad[0]])
        raise _not_integer(f"{name}[{i}]", int(values[i]))
    return KeyBatch("mixed", n, values, None, None, longs)


# --------------------------------------------------------------------------- numpy
def _from_numpy(arr: NDArray[Any], key_type: str | None, name: str) -> KeyBatch:
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (use np.ascontiguousarray)")
    dt = arr.dtype
    if dt.kind == "i" and dt.itemsize in (4, 8):   # int32 / int64, either byte order
        return _ints(arr, key_type, name, "int" if dt.itemsize == 4 else "long")
    if dt.kind == "U":
        if key_type not in (None, "string"):
            raise _mismatch(name, key_type, f"strings ({dt})")
        n = arr.shape[0]
        if n == 0:
            return _empty("string")
        if _encode_utf32 is None:  # pragma: no cover - extension not built
            encoded = _encode_strings(arr.tolist(), name)
            return KeyBatch("string", n, None, *encoded)
        arr = native(arr)
        width = arr.dtype.itemsize // 4
        codepoints = arr.view(np.uint32).reshape(n, width) if width else \
            np.zeros((n, 0), np.uint32)
        status, pos, offsets, data = _encode_utf32(codepoints)
        if status != _ENC_OK:
            _encode_failed(status, pos, None, name)
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
    import pyarrow as pa  # loaded already: arr is an Arrow array

    t = arr.type
    if pa.types.is_dictionary(t):
        arr = validated_arrow(arr, name, utf8=False).dictionary_decode()
        t = arr.type
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        arr = validated_arrow(arr, name, utf8=False).cast(
            pa.large_string() if pa.types.is_string_view(t) else pa.large_binary())
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
        dtype = np.dtype(np.int32 if kind == "int" else np.int64)
        ints: NDArray[np.integer[Any]] = np.empty(0, dtype)
        if n:   # zero-copy, offset honoured; the buffer must cover the array
            buf = _arrow_buffer(arr, 1, (arr.offset + n) * dtype.itemsize, name)
            ints = np.frombuffer(buf, dtype=dtype, count=arr.offset + n)[arr.offset:]
        return _ints(ints, key_type, name, kind)
    if key_type is not None and key_type != kind:
        raise _mismatch(name, key_type, f"arrow {t}")
    if n == 0:
        return _empty(kind)
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    off_dtype = np.int64 if large else np.int32
    start = arr.offset
    offsets = np.frombuffer(_arrow_buffer(arr, 1, (start + n + 1) * (8 if large else 4), name),
                            dtype=off_dtype, count=start + n + 1)[start:]
    buf = arr.buffers()[2]
    # the kernels check every item's offsets against this size as they read them
    data = _EMPTY_U8 if buf is None or buf.size == 0 else np.frombuffer(buf, dtype=np.uint8)
    return KeyBatch(kind, n, None, offsets, data)


def validated_arrow(arr: Any, name: str, *, utf8: bool = True) -> Any:
    """``arr`` after Arrow's full validation (offsets, views, dictionary indices, and with
    ``utf8`` the UTF-8 of strings), for the few places that hand an Arrow array to Arrow
    itself to read (decoding a dictionary, converting views, ``to_pylist``): Arrow trusts
    what it built, so a hostile array would make it read outside its buffers. Without
    ``utf8`` strings are checked as the bytes they are (Hazelcast hashes any bytes; the
    Ignite kernel reports invalid UTF-8 itself). ValueError naming ``name``."""
    import pyarrow as pa  # loaded already: arr is an Arrow array

    as_bytes = {pa.string_view(): pa.binary_view(), pa.string(): pa.binary(),
                pa.large_string(): pa.large_binary()}
    check = arr
    if not utf8 and isinstance(arr, pa.DictionaryArray) and arr.dictionary.type in as_bytes:
        check = pa.DictionaryArray.from_arrays(
            arr.indices, arr.dictionary.view(as_bytes[arr.dictionary.type]), safe=False)
    elif not utf8 and arr.type in as_bytes:
        check = arr.view(as_bytes[arr.type])
    try:
        check.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowIndexError) as exc:
        raise ValueError(f"{name}: malformed Arrow array ({exc})") from None
    return arr


def _arrow_buffer(arr: Any, index: int, need: int, name: str) -> Any:
    """Buffer ``index`` of an Arrow array, checked to hold at least ``need`` bytes (an
    array imported through the C data interface is not validated by Arrow)."""
    buf = arr.buffers()[index]
    if need and (buf is None or buf.size < need):
        have = "missing" if buf is None else f"{buf.size} bytes"
        raise ValueError(f"{name}: malformed Arrow array: its buffer {index} is {have}, "
                         f"{len(arr)} items from offset {arr.offset} need {need}")
    return buf


def piecewise(keys: object, name: str,
              hash_fn: Callable[[Any, str], NDArray[np.int32]]) -> NDArray[np.int32] | None:
    """Hash Arrow inputs that are best taken in pieces; None for any other input.

    * A ChunkedArray of several chunks: chunk by chunk (Arrow buffers stay zero-copy), a
      key named by its position in the whole array.
    * A DictionaryArray: its dictionary once, then every key through its index. Decoding
      first would build ``len(keys)`` copies of the values (a 1 MB value referenced a
      million times is a terabyte); this costs the dictionary plus one index per key.
      The indices are a private copy, each checked to lie inside the dictionary; a
      dictionary holding nulls is decoded instead (so a null key is named where it is).
    * A string_view / binary_view array: converted to large_string / large_binary (what
      the kernels read) in slices of at most ``PIECE_BYTES`` of key bytes (one key may
      be longer), since views may all name one long value: converting at once would
      again build a copy per key.

    ``hash_fn(piece, name)`` hashes one piece (the caller's bulk function, whose answer is
    the same for the whole input).
    """
    if isinstance(keys, (list, tuple, np.ndarray)):   # the common case, first
        return None
    pa = loaded_pyarrow()
    if pa is None or not isinstance(keys, (pa.Array, pa.ChunkedArray)):
        converted = _from_foreign(keys, name)   # pandas (categoricals: dictionaries), ...
        return None if converted is None else hash_fn(converted, name)
    if isinstance(keys, pa.ChunkedArray) and keys.num_chunks > 1:
        parts, base = [], 0
        for chunk in keys.iterchunks():
            try:
                parts.append(hash_fn(chunk, name))
            except ValueError as exc:   # name the key by its position in the whole array
                raise ValueError(_shifted(str(exc), name, base)) from None
            base += len(chunk)
        return np.concatenate(parts)
    if isinstance(keys, pa.ChunkedArray) and keys.num_chunks == 1:
        keys = keys.chunk(0)
    if isinstance(keys, pa.Array) and (pa.types.is_string_view(keys.type)
                                       or pa.types.is_binary_view(keys.type)):
        return _views(keys, name, hash_fn)
    if not isinstance(keys, pa.DictionaryArray) or keys.dictionary.null_count:
        return None
    if keys.null_count:
        raise _arrow_null_error(keys, name)
    index = np.array(keys.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    size = len(keys.dictionary)
    bad = np.flatnonzero((index < 0) | (index >= size))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}]: dictionary index {int(index[i])} is outside its "
                         f"dictionary of {size} values (malformed Arrow array)")
    out: NDArray[np.int32] = hash_fn(keys.dictionary, f"{name}.dictionary")[index]
    return out


PIECE_BYTES = 64 << 20   # key bytes converted at once from a string_view/binary_view array


def _views(keys: Any, name: str,
           hash_fn: Callable[[Any, str], NDArray[np.int32]]) -> NDArray[np.int32]:
    """A string_view/binary_view array, converted and hashed in bounded slices."""
    import pyarrow as pa  # loaded already: keys is an Arrow array

    target = pa.large_string() if pa.types.is_string_view(keys.type) else pa.large_binary()
    n = len(keys)
    if keys.null_count:
        raise _arrow_null_error(keys, name)
    validated_arrow(keys, name, utf8=False)   # the views are handed to Arrow's cast below
    if n == 0:
        return hash_fn(keys.cast(target), name)
    # every view is 16 bytes, its int32 length first (Arrow's columnar format)
    views = np.frombuffer(_arrow_buffer(keys, 1, (keys.offset + n) * 16, name),
                          dtype=np.int32, count=(keys.offset + n) * 4).reshape(-1, 4)
    lengths = views[keys.offset:, 0].astype(np.int64)
    if (lengths < 0).any():
        i = int(np.argmax(lengths < 0))
        raise ValueError(f"{name}[{i}]: negative view length {int(lengths[i])} (malformed "
                         f"Arrow array)")
    ends = np.cumsum(lengths)
    parts, start = [], 0
    while start < n:
        done = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, done + PIECE_BYTES, side="right")))
        piece = keys.slice(start, stop - start).cast(target)
        try:
            parts.append(hash_fn(piece, name))
        except ValueError as exc:
            raise ValueError(_shifted(str(exc), name, start)) from None
        start = stop
    return np.concatenate(parts)


def _shifted(message: str, name: str, base: int) -> str:
    """``message`` about ``name[i]`` of one chunk, about ``name[base + i]`` instead."""
    head = f"{name}["
    end = message.find("]")
    if base and message.startswith(head) and message[len(head):end].isdigit():
        return f"{head}{base + int(message[len(head):end])}{message[end:]}"
    return message


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
