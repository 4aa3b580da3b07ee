"""Hazelcast-exact key hashing and partition-table stamps.

Thin, validating layer over the ``hzfast._hashing`` kernels:

* :func:`murmur3_x86_32` - standard MurmurHash3_x86_32 (what Hazelcast hashes keys with);
* :func:`murmur3_x64_64` - Hazelcast's non-standard MurmurHash3_x64_64 variant;
* :func:`stamp` - the partition-table stamp of a version vector;
* :func:`serialize_key` - Hazelcast's serialized form of a String/Integer/Long key;
* :func:`partition_hash`, :func:`partition_id`, :func:`partition_ids` - key -> partition,
  bit-exact with Hazelcast's ``PartitionService.getPartitionId`` (and with Java for the
  ``-2**31`` hash that hazelcast-python-client gets wrong).
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from hzfast import _check
from hzfast import _hashing as _k
from hzfast._check import DEFAULT_PARTITION_COUNT
from hzfast._keys import (
    DATA_HEADER,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    KeyBatch,
    check_key_type,
    int_key,
    is_scalar_key,
    malformed_item,
    native,
    normalize_keys,
    piecewise,
    split_mixed,
)
from hzfast._typing import VectorLike

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

__all__ = [
    "HAZELCAST_SEED",
    "murmur3_x64_64",
    "murmur3_x86_32",
    "partition_hash",
    "partition_id",
    "partition_ids",
    "serialize_key",
    "stamp",
]

#: Seed of every Hazelcast MurmurHash3 call (``HashUtil.MURMUR3_SEED``).
HAZELCAST_SEED = 0x01000193

TYPE_STRING, TYPE_INTEGER, TYPE_LONG = -11, -7, -8
_HDR_STRING = struct.pack(">ii", 0, TYPE_STRING)
_HDR_INT = struct.pack(">ii", 0, TYPE_INTEGER)
_HDR_LONG = struct.pack(">ii", 0, TYPE_LONG)
_pack_i = struct.Struct(">i").pack
_pack_q = struct.Struct(">q").pack



# --------------------------------------------------------------------------- helpers
def _as_bytes(data: object, name: str = "data") -> bytes | memoryview:
    """A 1-D, C-contiguous byte view of a bytes-like object (never a copy).

    Buffers holding Python object pointers (numpy ``object`` arrays, or structured dtypes
    with an object field) are refused: their bytes are addresses, not data."""
    if isinstance(data, bytes):
        return data  # the kernel takes bytes directly
    if isinstance(data, str):
        raise TypeError(f"{name} must be bytes-like, got str (encode it first)")
    if isinstance(data, np.ndarray) and data.dtype.hasobject:
        raise TypeError(f"{name} is a numpy array of dtype {data.dtype}: it holds Python "
                        f"object pointers, not bytes to hash")
    try:
        mv = memoryview(cast("Buffer", data))   # not a buffer: TypeError
    except TypeError:
        raise TypeError(f"{name} must be bytes-like, got {type(data).__name__}") from None
    if "O" in mv.format or "P" in mv.format:   # 'O': PyObject*, 'P': void*
        raise TypeError(f"{name} holds object pointers (buffer format {mv.format!r}), not "
                        f"bytes to hash")
    if not mv.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    return mv


def _check_seed(seed: object, name: str = "seed") -> int:
    """A 32-bit seed: any value in [-2**31, 2**32); returned as its unsigned bit pattern."""
    if type(seed) is int and INT32_MIN <= seed <= 0xFFFFFFFF:  # fast path
        return seed & 0xFFFFFFFF
    s = _check.check_int(seed, name, minimum=INT32_MIN, maximum=2**32 - 1)
    return s & 0xFFFFFFFF


def _partition_count(value: object) -> int:
    if type(value) is int and 0 < value <= INT32_MAX:  # fast path
        return value
    return _check.check_partition_count(value)


def _scalar_hash(key: Any, key_type: str | None, name: str) -> int:
    """Partition hash of one key; common cases straight in the kernel, no bytes built."""
    t = type(key)
    if t is str and key_type in (None, "string"):
        try:
            return _k.str_hash(key)
        except UnicodeEncodeError:
            raise ValueError(f"{name} cannot be encoded as UTF-8 (lone surrogate?)") from None
    if t is int:
        if key_type in (None, "int") and INT32_MIN <= key <= INT32_MAX:
            return _k.int32_hash(key)
        if key_type == "long" and INT64_MIN <= key <= INT64_MAX:
            return _k.int64_hash(key)
    if t is bytes and key_type in (None, "data") and len(key) >= DATA_HEADER:
        return _k.bytes_data_hash(key)
    return _k.bytes_data_hash(_serialize(key, key_type, name))  # validates, raises


def _signed32(u: int) -> int:
    return u - 2**32 if u >= 2**31 else u


def _serialize(key: object, key_type: str | None, name: str) -> bytes:
    if key_type == "data" or (key_type is None and isinstance(key, (bytes, bytearray,
                                                                      memoryview))):
        if not isinstance(key, (bytes, bytearray, memoryview)):
            raise TypeError(f"{name}: key_type='data' needs bytes-like serialized data, "
                            f"got {type(key).__name__}")
        b = bytes(key)
        if len(b) < DATA_HEADER:
            raise ValueError(f"{name} is {len(b)} bytes: serialized Hazelcast data needs at "
                             f"least {DATA_HEADER} (partition hash + type id)")
        return b
    if isinstance(key, str):
        if key_type not in (None, "string"):
            raise TypeError(f"{name}: key_type={key_type!r} does not match a str key")
        try:
            utf8 = key.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{name} cannot be encoded as UTF-8 (lone surrogate?)") from None
        return _HDR_STRING + _pack_i(len(utf8)) + utf8
    if key is None:
        raise ValueError(f"{name} is None: null keys cannot be hashed")
    if isinstance(key, (bool, np.bool_)):
        raise TypeError(f"{name} is a bool: bools are not integer keys")
    if isinstance(key, (int, np.integer)):
        kind, v = int_key(key, key_type, name)
        return _HDR_INT + _pack_i(v) if kind == "int" else _HDR_LONG + _pack_q(v)
    raise TypeError(f"{name} must be a str, int or bytes (serialized data), "
                    f"got {type(key).__name__}")


def _hash_batch(batch: KeyBatch, partition_count: int, name: str) -> NDArray[np.int32]:
    """Kernel dispatch: partition_count 0 = raw hashes."""
    out = np.empty(batch.n, dtype=np.int32)
    if batch.kind == "mixed":   # Integers and Longs, each as its scalar would hash
        for part, where in split_mixed(batch):
            out[where] = _hash_batch(part, partition_count, name)
    elif batch.kind == "int":
        assert batch.values is not None
        _k.bulk_int32(batch.values, out, partition_count)
    elif batch.kind == "long":
        assert batch.values is not None
        _k.bulk_int64(batch.values, out, partition_count)
    else:
        assert batch.offsets is not None and batch.data is not None
        bad = _k.bulk_bytes(batch.offsets, batch.data, out, partition_count,
                            batch.kind == "data")
        if bad != -1:
            raise malformed_item(batch.offsets, batch.data.shape[0], bad, name,
                                 min_len=DATA_HEADER if batch.kind == "data" else 0)
    return out


def _bulk(keys: object, key_type: str | None, partition_count: int,
          name: str = "keys") -> NDArray[np.int32]:
    # chunked Arrow arrays chunk by chunk, dictionary arrays through their dictionary
    out = piecewise(keys, name, lambda piece, nm: _bulk(piece, key_type, partition_count, nm))
    if out is not None:
        return out
    return _hash_batch(normalize_keys(keys, key_type, name), partition_count, name)


# --------------------------------------------------------------------------- public API
def murmur3_x86_32(data: Buffer | NDArray[Any], seed: int = HAZELCAST_SEED) -> int:
    """Standard MurmurHash3_x86_32 (Hazelcast ``HashUtil.MurmurHash3_x86_32``).

    Parameters
    ----------
    data : bytes-like
        bytes, bytearray, memoryview or a C-contiguous numpy array (hashed as raw bytes).
    seed : int, default 0x01000193
        32-bit seed, ``-2**31 <= seed < 2**32`` (negative values are their two's complement).

    Returns
    -------
    int
        The signed 32-bit hash; equals ``mmh3.hash(data, seed, signed=True)``.

    Raises
    ------
    TypeError
        ``data`` is not bytes-like (a str must be encoded first) or holds Python object
        pointers (a numpy ``object`` array); ``seed`` not an int.
    ValueError
        ``seed`` out of range; non-contiguous ``data``.

    Examples
    --------
    >>> import hzfast
    >>> hzfast.murmur3_x86_32(b"key-1")
    1228513025
    """
    if type(data) is bytes:
        return _k.bytes_murmur3_x86_32(data, _check_seed(seed))
    return _k.murmur3_x86_32(_as_bytes(data), _check_seed(seed))


def murmur3_x64_64(data: Buffer | NDArray[Any], seed: int = HAZELCAST_SEED) -> int:
    """Hazelcast's ``HashUtil.MurmurHash3_x64_64``: a non-standard 64-bit MurmurHash3.

    It differs from the standard x64_128 (``mmh3.hash64``): other initial state, block
    constants that evolve per block, sign-extended tail bytes and a different
    finalisation (see docs/design.md §3).

    Parameters
    ----------
    data : bytes-like
    seed : int, default 0x01000193
        32-bit seed (a Java ``int``: values >= 2**31 are their negative two's complement,
        sign-extended to 64 bits as Java does).

    Returns
    -------
    int
        The signed 64-bit hash.

    Raises
    ------
    TypeError, ValueError
        As :func:`murmur3_x86_32`.

    Examples
    --------
    >>> import hzfast
    >>> hzfast.murmur3_x64_64(b"")
    9168145165656307917
    """
    return _k.murmur3_x64_64(_as_bytes(data), _signed32(_check_seed(seed)))


def stamp(versions: VectorLike) -> int:
    """Hazelcast's partition-table stamp (``PartitionStampUtil``) of a version vector.

    The x64_64 variant, seed 0x01000193, over the versions as big-endian int32 (partition
    ``p`` at byte offset ``4 * p``). The kernel byte-swaps on the fly: no buffer is built.

    Parameters
    ----------
    versions : ndarray[int32] of shape (P,)
        C-contiguous. A list/tuple of ints in int32 range is converted; a byte-swapped
        array (``'>i4'``) is read by value. ``P = 0`` is fine.

    Returns
    -------
    int
        The signed 64-bit stamp.

    Raises
    ------
    TypeError
        Not int32 / not an array of integers.
    ValueError
        Not 1-D, not C-contiguous, values outside int32.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> hzfast.stamp(np.zeros(271, dtype=np.int32))
    -1991270704151068896
    """
    h = _k.stamp_fast(versions)  # native int32 1-D C-contiguous ndarray: nothing to check
    if h is None:
        if isinstance(versions, np.ndarray):
            versions = native(versions)   # '>i4': the versions are its values, not its bytes
        h = _k.stamp(_check.as_int32_array(versions, "versions", 1))
    return h


def serialize_key(key: str | int | np.integer[Any] | Buffer,
                  key_type: str | None = None) -> bytes:
    """Hazelcast's serialized form (``Data``) of a key.

    4-byte partition hash (0), 4-byte big-endian type id, big-endian payload:
    String (type id -11) = int32 UTF-8 length + UTF-8 bytes; Integer (-7) = int32;
    Long (-8) = int64.

    Parameters
    ----------
    key : str, int or bytes-like
        A Python ``int`` is an Integer when it fits in int32 (as hazelcast-python-client
        does), else ``key_type="long"`` is required. ``numpy.int32`` / ``numpy.int64``
        scalars are Integer / Long. Bytes are already serialized data.
    key_type : {None, "string", "int", "long", "data"}
        ``"data"``: ``key`` is already serialized and is returned unchanged (>= 8 bytes).

    Returns
    -------
    bytes

    Raises
    ------
    TypeError
        Unsupported key type, bool, key_type not matching the key.
    ValueError
        None, int out of range, data shorter than 8 bytes, unknown key_type.

    Examples
    --------
    >>> import hzfast
    >>> hzfast.serialize_key("a").hex()
    '00000000fffffff50000000161'
    >>> hzfast.serialize_key(1, key_type="long").hex()
    '00000000fffffff80000000000000001'
    """
    return _serialize(key, check_key_type(key_type), "key")


def partition_hash(keys: object, key_type: str | None = None) -> int | NDArray[np.int32]:
    """Hazelcast's partition hash of one key or of a batch of keys.

    MurmurHash3_x86_32 (seed 0x01000193) of the serialized key after its 8-byte header;
    for serialized data with a non-zero header hash, that header hash.

    Parameters
    ----------
    keys : scalar key or batch
        A str / int / bytes key, or anything :func:`partition_ids` accepts.
    key_type : {None, "string", "int", "long", "data"}

    Returns
    -------
    int (scalar key) or ndarray[int32] of shape (N,)

    Raises
    ------
    TypeError, ValueError
        As :func:`partition_ids`.

    Examples
    --------
    >>> import hzfast
    >>> hzfast.partition_hash("key")
    1476017569
    >>> hzfast.partition_hash([0, 1]).tolist()
    [923237662, 768969306]
    """
    if key_type is not None:
        check_key_type(key_type)
    if is_scalar_key(keys) or keys is None:
        return _scalar_hash(keys, key_type, "keys")
    return _bulk(keys, key_type, 0)


def partition_id(key: str | int | np.integer[Any] | Buffer,
                 partition_count: int = DEFAULT_PARTITION_COUNT,
                 key_type: str | None = None) -> int:
    """The partition of one key (Hazelcast ``PartitionService.getPartitionId``).

    ``0`` if the hash is ``-2**31`` (as Java; hazelcast-python-client differs there), else
    ``abs(hash) % partition_count``.

    Parameters
    ----------
    key : str, int or bytes-like
    partition_count : int, default 271
        ``1 <= partition_count < 2**31``.
    key_type : {None, "string", "int", "long", "data"}

    Returns
    -------
    int

    Raises
    ------
    TypeError
        As :func:`serialize_key`; ``partition_count`` not an int; a batch was given (use
        :func:`partition_ids`).
    ValueError
        As :func:`serialize_key`; ``partition_count <= 0``.

    Examples
    --------
    >>> import hzfast
    >>> hzfast.partition_id("hello"), hzfast.partition_id("hello", 20000)
    (270, 8981)
    """
    pc = _partition_count(partition_count)
    if key_type is not None:
        check_key_type(key_type)
    if not (is_scalar_key(key) or key is None):
        raise TypeError(f"key must be a single key (str, int or bytes), got "
                        f"{type(key).__name__}; use partition_ids for a batch")
    return _k.hash_to_index(_scalar_hash(key, key_type, "key"), pc)


def partition_ids(keys: object, partition_count: int = DEFAULT_PARTITION_COUNT,
                  key_type: str | None = None) -> NDArray[np.int32]:
    """The partition of every key of a batch, in one ``nogil`` pass.

    Parameters
    ----------
    keys : batch of keys
        * list / tuple of ``str`` or of ``int`` (Integers; ints outside int32 need
          ``key_type="long"``), or of bytes (serialized data);
        * numpy ``int32`` (Integer), ``int64`` (Long), unicode (``'U'``) or object-of-str
          arrays, 1-D and C-contiguous;
        * pyarrow ``Array`` / ``ChunkedArray`` of ``string``, ``large_string``, ``int32``,
          ``int64``, or ``binary`` / ``large_binary`` holding serialized Hazelcast data.
          Strings are hashed straight from the Arrow buffers (zero-copy, offset honoured);
        * pandas Series/Index and Arrow C data interface objects (via ``pyarrow.array``).
    partition_count : int, default 271
        ``1 <= partition_count < 2**31``.
    key_type : {None, "string", "int", "long", "data"}
        ``None`` infers from the keys; ``"long"`` hashes integer keys as Java Longs.

    Returns
    -------
    ndarray[int32] of shape (N,)

    Raises
    ------
    TypeError
        Unsupported container or dtype (float, uint, bool, ...), mixed str/int items,
        bools, key_type not matching the keys, ``partition_count`` not an int.
    ValueError
        None/null keys (position named), ints out of range, 2-D or non-contiguous arrays,
        serialized data shorter than 8 bytes, unknown key_type, ``partition_count <= 0``.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> hzfast.partition_ids(["key", "hello"]).tolist()
    [80, 270]
    >>> hzfast.partition_ids(np.array([0, 1], dtype=np.int64), 20000).tolist()
    [3647, 3549]
    """
    pc = _partition_count(partition_count)
    return _bulk(keys, check_key_type(key_type), pc)
