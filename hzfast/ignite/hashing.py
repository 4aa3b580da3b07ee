"""Ignite keys: Java ``hashCode`` and key -> partition (``RendezvousAffinityFunction.partition``).

Bit-exact with the JDK's ``String``/``Integer``/``Long``/``UUID.hashCode`` and Ignite 2.x's
partition rule; checked against ``tests/data/vectors/ignite.json``. Batches are normalised by
:mod:`hzfast._keys` (the same code as the Hazelcast path) and hashed by the
:mod:`hzfast.ignite._hash` kernels; every argument is validated here first.

Key types
---------
* ``str`` / Arrow ``string``/``large_string`` / numpy unicode: ``java.lang.String``
  (hashed over UTF-16 code units, decoded from UTF-8 inside the kernel: characters outside
  the BMP count as two surrogate units, exactly like Java).
* Python ``int`` that fits int32, numpy/Arrow ``int32``: ``java.lang.Integer``.
* numpy/Arrow ``int64`` (or ``key_type="long"``): ``java.lang.Long``.
* :class:`uuid.UUID` (or ``key_type="uuid"``): ``java.util.UUID`` (Python-speed path).
"""
from __future__ import annotations

import uuid as _uuid
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast._check import check_int
from hzfast._keys import (
    INT32_MAX,
    INT32_MIN,
    KeyBatch,
    check_key_type,
    int_key,
    is_scalar_key,
    malformed_item,
    normalize_keys,
    piecewise,
    split_mixed,
    validated_arrow,
)
from hzfast.ignite import _hash

__all__ = ["DEFAULT_PARTITIONS", "MAX_PARTITIONS", "java_hash_code", "partition_id",
           "partition_ids"]

#: Ignite's default partition count (RendezvousAffinityFunction.DFLT_PARTITION_COUNT).
DEFAULT_PARTITIONS = 1024
#: Ignite's maximum partition count (CacheConfiguration.MAX_PARTITIONS_COUNT).
MAX_PARTITIONS = 65000

KEY_TYPES = ("string", "int", "long", "uuid")
_MASK64 = (1 << 64) - 1


# --------------------------------------------------------------------------- validation
# Shared with hzfast.ignite.affinity.
def check_partitions(partitions: object, name: str = "partitions") -> int:
    """An Ignite partition count: an int in 1..65000, else TypeError/ValueError naming it."""
    return check_int(partitions, name, minimum=1, maximum=MAX_PARTITIONS)


def as_uuid(value: object, name: str) -> _uuid.UUID:
    """A :class:`uuid.UUID` or a UUID string, as a UUID; else TypeError/ValueError naming it."""
    if isinstance(value, _uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return _uuid.UUID(value)
        except ValueError:
            raise ValueError(f"{name} = {value!r} is not a valid UUID") from None
    if value is None:
        raise ValueError(f"{name} is None")
    raise TypeError(f"{name} must be a uuid.UUID or a UUID string, got {type(value).__name__}")


# --------------------------------------------------------------------------- scalar hashCode
def _to_int32(v: int) -> int:
    """Java ``(int)`` of a non-negative value: its low 32 bits, signed."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= (1 << 31) else v


def _uuid_hash(u: _uuid.UUID) -> int:
    hilo = (u.int >> 64) ^ (u.int & _MASK64)
    return _to_int32((hilo >> 32) ^ hilo)


def _string_hash(s: str) -> int:
    data = np.frombuffer(s.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    out, _bad = _hash.utf8_hashes(np.array([0, data.shape[0]], dtype=np.int64), data, 1, False)
    return int(out[0])


def scalar_hash(key: object, key_type: str | None, name: str) -> int:
    """Java ``hashCode`` of one validated key (``key_type`` already checked)."""
    if type(key) is int and key_type in (None, "int") and INT32_MIN <= key <= INT32_MAX:
        return key  # fast path: an Integer's hashCode is its value
    if key is None:
        raise ValueError(f"{name} is None: null keys cannot be hashed")
    if isinstance(key, (bool, np.bool_)):
        raise TypeError(f"{name} is a bool: bools are not integer keys")
    if key_type == "uuid" or (key_type is None and isinstance(key, _uuid.UUID)):
        return _uuid_hash(as_uuid(key, name))
    if isinstance(key, str):
        if key_type not in (None, "string"):
            raise TypeError(f"{name}: key_type={key_type!r} does not match a str key")
        return _string_hash(key)
    if isinstance(key, (int, np.integer)):
        kind, v = int_key(key, key_type, name)
        if kind == "int":
            return v
        u = v & _MASK64
        return _to_int32(u ^ (u >> 32))
    raise TypeError(f"{name} must be a str, int or uuid.UUID, got {type(key).__name__}")


def _is_scalar(key: object) -> bool:
    return key is None or isinstance(key, _uuid.UUID) or is_scalar_key(key)


# --------------------------------------------------------------------------- batches
def _uuid_batch_hashes(keys: Any, name: str, parse: bool) -> NDArray[np.int32]:
    """UUID hashCodes of a batch; ``parse`` (``key_type="uuid"``) also takes UUID strings.
    Without it every key must be a :class:`uuid.UUID` (a str in a batch inferred as UUIDs
    is a String key, as alone, so it is refused rather than parsed)."""
    if isinstance(keys, np.ndarray):
        keys = keys.tolist()
    elif hasattr(keys, "to_pylist"):  # pyarrow: Arrow reads it, so it must be well-formed
        keys = validated_arrow(keys, name).to_pylist()
    if not isinstance(keys, (list, tuple)):
        raise TypeError(f"{name} must be a list, tuple or array of UUIDs, "
                        f"got {type(keys).__name__}")
    keys = tuple(keys)   # private snapshot
    out = np.empty(len(keys), dtype=np.int32)
    for i, k in enumerate(keys):
        if not parse and not isinstance(k, _uuid.UUID):
            if k is None:
                raise ValueError(f"{name}[{i}] is None: null keys cannot be hashed")
            raise TypeError(f"{name}[{i}] is a {type(k).__name__}, expected uuid.UUID (all "
                            f"keys of one batch must have the same type; key_type='uuid' "
                            f"parses UUID strings)")
        out[i] = _uuid_hash(as_uuid(k, f"{name}[{i}]"))
    return out


def _bulk(keys: Any, key_type: str | None, partitions: int, reduce: bool,
          name: str = "keys") -> NDArray[np.int32]:
    """Hash (reduce=False) or map to partitions (reduce=True) a batch of keys."""
    if keys is None:
        raise ValueError(f"{name} is None")
    looks_uuid = (isinstance(keys, (list, tuple)) or (isinstance(keys, np.ndarray)
                                                       and keys.dtype == object and keys.ndim == 1))
    if key_type == "uuid" or (key_type is None and looks_uuid and len(keys)
                              and isinstance(keys[0], _uuid.UUID)):
        h = _uuid_batch_hashes(keys, name, parse=key_type == "uuid")
        return _hash.reduce_hashes(h, partitions) if reduce else h
    # chunked Arrow arrays chunk by chunk, dictionary arrays through their dictionary
    out = piecewise(keys, name, lambda piece, nm: _bulk(piece, key_type, partitions, reduce, nm))
    if out is not None:
        return out
    return _hash_batch(normalize_keys(keys, key_type, name), partitions, reduce, name)


def _hash_batch(batch: KeyBatch, partitions: int, reduce: bool,
                name: str) -> NDArray[np.int32]:
    """Kernel dispatch for one normalized batch (the Hazelcast path's twin)."""
    if batch.kind == "data":
        raise ValueError(f"{name}: serialized bytes/binary keys have no Ignite partition "
                         f"(Ignite hashes the key object); pass str, int or UUID keys")
    if batch.kind == "mixed":   # Integers and Longs, each as its scalar would hash
        out = np.empty(batch.n, dtype=np.int32)
        for part, where in split_mixed(batch):
            out[where] = _hash_batch(part, partitions, reduce, name)
        return out
    if batch.kind == "string":
        assert batch.offsets is not None and batch.data is not None
        out, bad = _hash.utf8_hashes(batch.offsets, batch.data, partitions, reduce)
        if bad >= 0:   # the same check and message as the Hazelcast path
            raise malformed_item(batch.offsets, batch.data.shape[0], bad, name, utf8=True)
        return out
    assert batch.values is not None
    return _hash.int_hashes(batch.values, batch.kind == "long", partitions, reduce)


# --------------------------------------------------------------------------- public API
def java_hash_code(keys: object, key_type: str | None = None) -> int | NDArray[np.int32]:
    """Java ``hashCode()`` of one key or of a batch of keys.

    Parameters
    ----------
    keys : str, int, uuid.UUID, or a batch
        A scalar key, or a batch: list/tuple of str or int (one type per batch), numpy
        ``int32`` / ``int64`` / unicode / object array, pyarrow ``string`` /
        ``large_string`` / ``int32`` / ``int64`` Array or ChunkedArray; a list of
        :class:`uuid.UUID` (or anything with ``key_type="uuid"``).
    key_type : {None, "string", "int", "long", "uuid"}
        ``None`` infers: str -> String, int32 / Python int -> Integer, int64 -> Long,
        UUID -> UUID. ``"long"`` hashes integers as ``java.lang.Long``.

    Returns
    -------
    int or ndarray[int32] of shape (n,)
        ``String.hashCode`` (over UTF-16 code units, int32 wrap), ``Integer.hashCode``
        (the value), ``Long.hashCode`` (``(int)(v ^ (v >>> 32))``) or ``UUID.hashCode``.

    Raises
    ------
    ValueError
        None/null keys (the position is named), Python ints outside int32 without
        ``key_type="long"``, invalid UTF-8 / UUIDs, serialized (bytes) keys.
    TypeError
        Unsupported key or container type, mixed types, bools, unknown ``key_type`` type.

    Examples
    --------
    >>> java_hash_code("key")
    106079
    >>> java_hash_code(-1, key_type="long")
    0
    >>> java_hash_code(["Aa", "BB"]).tolist()
    [2112, 2112]
    """
    key_type = check_key_type(key_type, "key_type", KEY_TYPES)
    if _is_scalar(keys):
        return scalar_hash(keys, key_type, "keys")
    return _bulk(keys, key_type, 1, False)


def partition_id(key: str | int | np.integer[Any] | _uuid.UUID,
                 partitions: int = DEFAULT_PARTITIONS, key_type: str | None = None) -> int:
    """Ignite partition of one key (``RendezvousAffinityFunction.partition``).

    Parameters
    ----------
    key : str, int or uuid.UUID
    partitions : int, default 1024
        1..65000. Powers of two use ``(h ^ (h >>> 16)) & (P - 1)``; other counts
        ``abs(h % P)`` with Java's truncating remainder.
    key_type : {None, "string", "int", "long", "uuid"}

    Returns
    -------
    int in [0, partitions)

    Raises
    ------
    ValueError
        ``partitions`` outside 1..65000, None key, int out of range for its type.
    TypeError
        Non-int ``partitions``, unsupported key type.

    Examples
    --------
    >>> partition_id("key"), partition_id("key", 1000)
    (606, 79)
    """
    partitions = check_partitions(partitions)
    key_type = check_key_type(key_type, "key_type", KEY_TYPES)
    if not _is_scalar(key):
        raise TypeError(f"key must be a single str, int or uuid.UUID, got "
                        f"{type(key).__name__} (use partition_ids for batches)")
    h = scalar_hash(key, key_type, "key")
    return int(_hash.reduce_hashes(np.array([h], dtype=np.int32), partitions)[0])


def partition_ids(keys: object, partitions: int = DEFAULT_PARTITIONS,
                  key_type: str | None = None) -> NDArray[np.int32]:
    """Ignite partition of every key in a batch.

    Parameters
    ----------
    keys : batch
        Same forms as :func:`java_hash_code` (list/tuple, numpy, pyarrow Array or
        ChunkedArray). Arrow strings are hashed straight from their UTF-8 buffers.
    partitions : int, default 1024
        1..65000.
    key_type : {None, "string", "int", "long", "uuid"}

    Returns
    -------
    ndarray[int32] of shape (n,)

    Raises
    ------
    ValueError, TypeError
        As :func:`java_hash_code`; ``partitions`` outside 1..65000 or not an int.

    Examples
    --------
    >>> partition_ids(["key", "Hello"], 1024).tolist()
    [606, 148]
    >>> import numpy as np
    >>> partition_ids(np.array([-1, 1024], dtype=np.int64), 1024).tolist()
    [0, 0]
    """
    partitions = check_partitions(partitions)
    key_type = check_key_type(key_type, "key_type", KEY_TYPES)
    if _is_scalar(keys):
        if keys is None:
            raise ValueError("keys is None")
        raise TypeError(f"keys must be a batch (list, tuple, numpy or pyarrow array), got a "
                        f"single {type(keys).__name__} (use partition_id)")
    return _bulk(keys, key_type, partitions, True)
