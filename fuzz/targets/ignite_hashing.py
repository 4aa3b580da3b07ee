"""Fuzz target: Ignite hashing: ``hzfast.ignite.java_hash_code``, ``partition_id`` and
``partition_ids`` on scalars, lists, numpy arrays and Arrow arrays (sliced, chunked and
built with ``pa.Array.from_buffers`` from fuzzed offsets: docs/design.md §9.1).

Reference: ``hzfast.reference.ignite``; a batch must equal the scalar answers of its items
(str: String over UTF-16 units; int and numpy integers but int64: Integer; numpy int64:
Long; UUID: UUID).
"""
from __future__ import annotations

import uuid
from typing import Any

import atheris
import numpy as np
import pyarrow as pa

from fuzz._common import (
    Finding,
    arrow_from_buffers,
    arrow_strings,
    checked,
    edgy_int,
    encodable,
    expect_equal,
    expect_rejected,
    fuzzed_str,
    rejected,
)
from hzfast import ignite
from hzfast.reference import ignite as ref

KEY_TYPES = [None, "string", "int", "long", "uuid", "data"]


def ref_hash(key: Any, key_type: str | None) -> int | None:
    """Java hashCode of one key under hzfast's scalar rules; None: must be rejected."""
    if isinstance(key, (bool, np.bool_)) or key_type not in (None, "string", "int", "long",
                                                               "uuid"):
        return None
    if isinstance(key, str):
        if key_type == "uuid":
            try:
                return ref.uuid_hash(uuid.UUID(key))
            except ValueError:
                return None
        return ref.string_hash(key) if key_type in (None, "string") else None
    if isinstance(key, uuid.UUID):
        return ref.uuid_hash(key) if key_type in (None, "uuid") else None
    if isinstance(key, (int, np.integer)):
        if key_type not in (None, "int", "long"):
            return None
        kind = key_type or ("long" if isinstance(key, np.int64) else "int")
        v = int(key)
        if kind == "int" and not -(2**31) <= v < 2**31:
            return None
        if not -(2**63) <= v < 2**63:
            return None
        return ref.hash_code(v, kind)
    return None


def key(fdp: Any) -> Any:
    kind = fdp.ConsumeIntInRange(0, 9)
    if kind <= 3:
        return fuzzed_str(fdp)
    if kind <= 5:
        return edgy_int(fdp, -1000, 1000)
    if kind == 6:
        t = fdp.PickValueInList([np.int32, np.int64, np.uint64, np.int8])
        info = np.iinfo(t)
        return t(min(max(edgy_int(fdp, -50, 50), info.min), info.max))
    if kind == 7:
        return uuid.UUID(bytes=fdp.ConsumeBytes(16).ljust(16, b"\0"))
    if kind == 8:
        return fdp.ConsumeBool()
    return fdp.ConsumeBytes(4)


def check_batch(keys: object, expected: list[int | None] | None, P: int, key_type: Any,
                what: str, surrogates_ok: bool = False) -> None:
    hashes = checked(ignite.java_hash_code, keys, key_type)
    ids = checked(ignite.partition_ids, keys, P, key_type)
    if expected is None or any(h is None for h in expected):
        expect_rejected(hashes, f"java_hash_code({what}, {key_type!r})")
        expect_rejected(ids, f"ignite.partition_ids({what}, {P}, {key_type!r})")
        return
    if surrogates_ok and rejected(hashes) and rejected(ids):
        return  # lone surrogates: a batch may refuse what it cannot encode as UTF-8
    expect_equal(hashes, expected, f"java_hash_code({what}, {key_type!r})")
    if 1 <= P <= ignite.MAX_PARTITIONS:
        expect_equal(ids, [ref.partition_from_hash(h, P) for h in expected],
                     f"ignite.partition_ids({what}, {P}, {key_type!r})")
    else:
        expect_rejected(ids, f"ignite.partition_ids({what}, partitions={P})")


def fuzz_scalar(fdp: Any) -> None:
    k = key(fdp)
    key_type = fdp.PickValueInList(KEY_TYPES)
    P = edgy_int(fdp, 1, 70000)
    want = ref_hash(k, key_type)
    h = checked(ignite.java_hash_code, k, key_type)
    pid = checked(ignite.partition_id, k, P, key_type)
    what = f"{type(k).__name__} {k!r:.60} key_type={key_type!r}"
    if want is None:
        expect_rejected(h, f"java_hash_code({what})")
        expect_rejected(pid, f"ignite.partition_id({what})")
        return
    expect_equal(h, want, f"java_hash_code({what})")
    if 1 <= P <= ignite.MAX_PARTITIONS:
        expect_equal(pid, ref.partition_from_hash(want, P), f"ignite.partition_id({what}, {P})")
    else:
        expect_rejected(pid, f"ignite.partition_id({what}, partitions={P})")


def fuzz_sequence(fdp: Any) -> None:
    n = fdp.ConsumeIntInRange(0, 8)
    family = fdp.ConsumeIntInRange(0, 4)
    keys = []
    for _ in range(n):
        keys.append(fuzzed_str(fdp) if family == 0 else
                    edgy_int(fdp, -1000, 1000) if family == 1 else
                    np.int64(min(max(edgy_int(fdp, -9, 9), -(2**63)), 2**63 - 1)) if family == 2 else
                    uuid.UUID(int=edgy_int(fdp, 0, 2**20) % 2**128) if family == 3 else key(fdp))
    key_type = fdp.PickValueInList(KEY_TYPES)
    P = edgy_int(fdp, 1, 70000)
    classes = {"str" if isinstance(k, str) else "uuid" if isinstance(k, uuid.UUID) else
               "int" if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else
               "other" for k in keys}
    expected: list[int | None] | None = [ref_hash(k, key_type) for k in keys]
    if len(classes) > 1:
        expected = None
    if not keys:
        # an empty batch: its type cannot be checked against the (absent) keys
        got = checked(ignite.java_hash_code, keys, key_type)
        if not rejected(got) and len(got):
            raise Finding(f"java_hash_code([]) = {got!r}")
        return
    container: Any = keys
    if fdp.ConsumeBool():
        container = np.empty(len(keys), dtype=object)
        for i, k in enumerate(keys):
            container[i] = k
    surrogates = any(isinstance(k, str) and not encodable(k) for k in keys)
    check_batch(container, expected, P, key_type, f"{keys!r:.200}", surrogates)


def fuzz_arrays(fdp: Any) -> None:
    kind = fdp.ConsumeIntInRange(0, 5)
    key_type = fdp.PickValueInList(KEY_TYPES)
    P = edgy_int(fdp, 1, 70000)
    if kind == 0:   # numpy int32 / int64
        dt = fdp.PickValueInList([np.int32, np.int64])
        info = np.iinfo(dt)
        vals = [min(max(edgy_int(fdp, -99, 99), info.min), info.max)
                for _ in range(fdp.ConsumeIntInRange(0, 8))]
        arr = np.array(vals, dtype=dt)
        kt = key_type or ("int" if dt == np.int32 else "long")
        expected = [ref_hash(v, kt) for v in vals] if kt in ("int", "long") else None
        if not vals:
            return
        check_batch(arr, expected, P, key_type, f"ndarray {arr.dtype} {vals}")
        return
    if kind == 1:   # numpy unicode, sometimes big-endian
        strs = [fuzzed_str(fdp) for _ in range(fdp.ConsumeIntInRange(1, 6))]
        arr = np.array(strs, dtype="U")
        if fdp.ConsumeBool():
            arr = arr.astype(arr.dtype.newbyteorder(">"))
        items = arr.tolist()
        expected = [ref_hash(s, "string") for s in items] if key_type in (None, "string") \
            else None
        check_batch(arr, expected, P, key_type, f"ndarray U {items!r:.200}",
                    any(not encodable(s) for s in items))
        return
    if kind == 2:   # Arrow strings from Python values, sometimes sliced
        items_b = [fuzzed_str(fdp).encode("utf-8", "replace")
                   for _ in range(fdp.ConsumeIntInRange(1, 6))]
        arr = arrow_strings(fdp, items_b, fdp.ConsumeBool(), False)
        strs = arr.to_pylist()
    elif kind == 3:   # from_buffers with fuzzed offsets
        arr, items = arrow_from_buffers(fdp, False)
        if arr is None:
            return
        if items is None:
            check_batch(arr, None, P, key_type, f"from_buffers({arr.type}) invalid offsets")
            return
        strs = [x.decode("ascii") for x in items]
    elif kind == 4:   # Arrow int32 / int64
        t = fdp.PickValueInList([pa.int32(), pa.int64()])
        vals = [edgy_int(fdp, -99, 99) % 2**31 for _ in range(fdp.ConsumeIntInRange(1, 6))]
        arr = pa.array(vals, type=t)
        kt = key_type or ("int" if t == pa.int32() else "long")
        expected = [ref_hash(v, kt) for v in vals] if kt in ("int", "long") else None
        check_batch(arr, expected, P, key_type, f"arrow {t} {vals}")
        return
    else:   # chunked strings
        arr = pa.chunked_array([pa.array([fuzzed_str(fdp, ascii_only=True) for _ in range(2)])
                                for _ in range(fdp.ConsumeIntInRange(1, 3))])
        strs = arr.to_pylist()
    if not strs:
        return
    expected = [ref.string_hash(s) for s in strs] if key_type in (None, "string") else None
    check_batch(arr, expected, P, key_type, f"arrow {arr.type} {strs!r:.200}")


PIECES = (fuzz_scalar, fuzz_sequence, fuzz_arrays)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    PIECES[fdp.ConsumeIntInRange(0, len(PIECES) - 1)](fdp)
