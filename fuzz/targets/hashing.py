"""Fuzz target: Hazelcast hashing in every input form.

``murmur3_x86_32``/``murmur3_x64_64`` (bytes, bytearray, memoryview, numpy arrays of any
dtype, object arrays), ``stamp`` (versions in every dressing, incl. big-endian),
``serialize_key``/``partition_hash``/``partition_id`` on scalars, and ``partition_ids`` /
``partition_hash`` on batches: lists/tuples (mixed ones too), numpy int/'U'/bytes/object
arrays, Arrow string/binary/large/int/chunked/sliced arrays and arrays built with
``pa.Array.from_buffers`` from fuzzed offsets. Reference: ``hzfast.reference.hashing``;
a batch must equal the scalar answers of its items (docs/design.md §2).
"""
from __future__ import annotations

import struct
from typing import Any

import atheris
import numpy as np
import pyarrow as pa

import hzfast
from fuzz._common import (
    PLAIN_DRESSINGS,
    Finding,
    arrow_from_buffers,
    arrow_strings,
    checked,
    dress_ints,
    edgy_int,
    encodable,
    expect_equal,
    expect_rejected,
    fuzzed_str,
    rejected,
)
from hzfast.reference import hashing as R

KEY_TYPES = [None, "string", "int", "long", "data", "bogus"]
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


# ------------------------------------------------------------------ reference semantics
def ref_hash(key: Any, key_type: str | None) -> int | None:
    """Hazelcast partition hash of one key with hzfast's scalar rules, or None when the
    key must be rejected."""
    if isinstance(key, (bool, np.bool_)) or key_type not in (None, "string", "int", "long",
                                                               "data"):
        return None
    if isinstance(key, str):
        if key_type not in (None, "string") or not encodable(key):
            return None
        return R.partition_hash(key)
    if isinstance(key, (int, np.integer)):
        if key_type not in (None, "int", "long"):
            return None
        kind = key_type or ("long" if isinstance(key, np.int64) else "int")
        v = int(key)
        lo, hi = INT32 if kind == "int" else INT64
        if not lo <= v <= hi:
            return None
        return R.partition_hash(v, kind)
    if isinstance(key, (bytes, bytearray, memoryview)):
        if key_type not in (None, "data") or len(bytes(key)) < 8:
            return None
        return R.partition_hash(bytes(key), "data")
    return None


def utf8_hash(raw: bytes) -> int:
    """Partition hash of a String key given its UTF-8 bytes (Arrow string items)."""
    return R.murmur3_x86_32(struct.pack(">i", len(raw)) + raw)


def data_hash(raw: bytes) -> int | None:
    if len(raw) < 8:
        return None
    return R.partition_hash(raw, "data")


def check_batch(keys: object, expected: list[int | None] | None, P: int, key_type: Any,
                what: str) -> None:
    """``partition_ids``/``partition_hash`` of a batch against per-item hashes
    (None anywhere, or ``expected`` None: the batch must be rejected)."""
    ids = checked(hzfast.partition_ids, keys, P, key_type)
    hashes = checked(hzfast.partition_hash, keys, key_type)
    valid_p = 1 <= P <= 2**31 - 1
    if expected is None or any(h is None for h in expected) or not valid_p:
        expect_rejected(ids, f"partition_ids({what}, {P}, {key_type!r})")
        if expected is None or any(h is None for h in expected):
            expect_rejected(hashes, f"partition_hash({what}, {key_type!r})")
        return
    expect_equal(ids, [R.hash_to_index(h, P) for h in expected],
                 f"partition_ids({what}, {P}, {key_type!r})")
    if not rejected(ids) and (ids.dtype != np.int32 or ids.shape != (len(expected),)):
        raise Finding(f"partition_ids({what}) returned {ids.dtype} {ids.shape}")
    expect_equal(hashes, expected, f"partition_hash({what}, {key_type!r})")


# ------------------------------------------------------------------ pieces
def fuzz_murmur(fdp: Any) -> None:
    form = fdp.ConsumeIntInRange(0, 6)
    raw = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))
    seed = edgy_int(fdp, -(2**31), 2**32 - 1) if fdp.ConsumeBool() else R.SEED
    must_reject = not -(2**31) <= seed <= 2**32 - 1
    data: Any
    if form == 0:
        data = raw
    elif form == 1:
        data = bytearray(raw)
    elif form == 2:
        data = memoryview(raw)
    elif form == 3:
        dt = fdp.PickValueInList(["u1", "i1", "<i4", ">i4", "<i8", "f8", "<u2"])
        size = np.dtype(dt).itemsize
        data = np.frombuffer(raw[:len(raw) // size * size], dtype=dt).copy()
        if fdp.ConsumeBool():
            data.flags.writeable = False
    elif form == 4:   # non-contiguous view
        data = np.frombuffer(raw, dtype=np.uint8).copy()[::2]
    elif form == 5:   # object array: pointers must never be hashed
        data = np.array(list(raw[:8]), dtype=object)
        must_reject = True
    else:
        data = np.frombuffer(raw[:len(raw) // 4 * 4], dtype=np.int32).copy().reshape(-1, 1)
    for fn, ref in ((hzfast.murmur3_x86_32, R.murmur3_x86_32),
                    (hzfast.murmur3_x64_64, R.murmur3_x64_64)):
        got = checked(fn, data, seed)
        if must_reject:
            expect_rejected(got, f"{fn.__name__}({type(data).__name__}, seed={seed})")
        elif not rejected(got):
            as_bytes = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
            expect_equal(got, ref(as_bytes, seed), f"{fn.__name__}(len {len(as_bytes)}, {seed})")
        elif form in (0, 1, 2) or (form == 3 and data.flags.c_contiguous):
            raise Finding(f"{fn.__name__} rejected a contiguous buffer: {got!r}")


def fuzz_stamp(fdp: Any) -> None:
    n = fdp.ConsumeIntInRange(0, 16)
    values = [edgy_int(fdp, -5, 2**31 - 1) for _ in range(n)]
    obj, logical, how = dress_ints(fdp, values, (n,))
    got = checked(hzfast.stamp, obj)
    what = f"stamp({how} {values!r:.200})"
    if logical is None or not all(INT32[0] <= v <= INT32[1] for v in logical):
        expect_rejected(got, what)
        return
    if not rejected(got):
        expect_equal(got, R.stamp(logical), what)
    elif how in PLAIN_DRESSINGS or how == "big_endian":
        raise Finding(f"{what}: rejected int32 versions: {got!r}")


def scalar_key(fdp: Any) -> Any:
    kind = fdp.ConsumeIntInRange(0, 12)
    if kind <= 3:
        return fuzzed_str(fdp)
    if kind <= 6:
        return edgy_int(fdp, -1000, 1000)
    if kind == 7:
        t = fdp.PickValueInList([np.int32, np.int64, np.int8, np.uint32, np.uint64, np.int16])
        v = edgy_int(fdp, -100, 100)
        info = np.iinfo(t)
        return t(min(max(v, info.min), info.max))
    if kind == 8:
        return fdp.ConsumeBool()
    if kind == 9:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 20))
    if kind == 10:
        return bytearray(fdp.ConsumeBytes(fdp.ConsumeIntInRange(6, 20)))
    if kind == 11:
        return fdp.ConsumeFloat()
    return None


def fuzz_scalar(fdp: Any) -> None:
    key = scalar_key(fdp)
    key_type = fdp.PickValueInList(KEY_TYPES)
    P = edgy_int(fdp, 1, 300)
    want = ref_hash(key, key_type)
    h = checked(hzfast.partition_hash, key, key_type)
    pid = checked(hzfast.partition_id, key, P, key_type)
    ser = checked(hzfast.serialize_key, key, key_type)
    what = f"{type(key).__name__} {key!r:.60} key_type={key_type!r}"
    if want is None:
        expect_rejected(h, f"partition_hash({what})")
        expect_rejected(pid, f"partition_id({what})")
        expect_rejected(ser, f"serialize_key({what})")
        return
    expect_equal(h, want, f"partition_hash({what})")
    if 1 <= P <= 2**31 - 1:
        expect_equal(pid, R.hash_to_index(want, P), f"partition_id({what}, {P})")
    else:
        expect_rejected(pid, f"partition_id({what}, partition_count={P})")
    if isinstance(key, (bytes, bytearray)):
        expect_equal(ser, bytes(key), f"serialize_key({what})")
    else:
        kind = key_type or ("string" if isinstance(key, str) else
                            "long" if isinstance(key, np.int64) else "int")
        expect_equal(ser, R.serialize_key(key if isinstance(key, str) else int(key), kind),
                     f"serialize_key({what})")


def fuzz_list(fdp: Any) -> None:
    n = fdp.ConsumeIntInRange(0, 10)
    family = fdp.ConsumeIntInRange(0, 4)
    keys: list[Any] = []
    for _ in range(n):
        if family == 0:
            keys.append(fuzzed_str(fdp))
        elif family == 1:
            keys.append(edgy_int(fdp, -1000, 1000))
        elif family == 2:
            keys.append(np.int64(edgy_int(fdp, -1000, 1000) % 2**63))
        elif family == 3:
            keys.append(bytes(fdp.ConsumeBytes(fdp.ConsumeIntInRange(7, 16))))
        else:
            keys.append(scalar_key(fdp))
    key_type = fdp.PickValueInList(KEY_TYPES)
    P = edgy_int(fdp, 1, 300)
    classes = set()
    for k in keys:
        classes.add("str" if isinstance(k, str) else
                    "bytes" if isinstance(k, (bytes, bytearray)) else
                    "int" if isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                    else "other")
    expected: list[int | None] | None = [ref_hash(k, key_type) for k in keys]
    if len(classes) > 1 or key_type == "bogus":
        expected = None
    if not keys and key_type in ("bogus",):
        expected = None
    container: Any = keys if fdp.ConsumeBool() else tuple(keys)
    if keys and fdp.ConsumeIntInRange(0, 3) == 0:
        arr = np.empty(len(keys), dtype=object)
        for i, k in enumerate(keys):
            arr[i] = k
        container = arr
    if not keys and key_type in ("string", "int", "long", "data"):
        expected = []
    check_batch(container, expected, P, key_type, f"{type(container).__name__} {keys!r:.200}")


def fuzz_numpy(fdp: Any) -> None:
    n = fdp.ConsumeIntInRange(0, 10)
    kind = fdp.ConsumeIntInRange(0, 5)
    key_type = fdp.PickValueInList(KEY_TYPES)
    P = edgy_int(fdp, 1, 300)
    if kind <= 1:   # int32 / int64: Integer / Long
        dt = np.int32 if kind == 0 else np.int64
        info = np.iinfo(dt)
        vals = [min(max(edgy_int(fdp, -1000, 1000), info.min), info.max) for _ in range(n)]
        arr = np.array(vals, dtype=dt)
        natural = "int" if kind == 0 else "long"
        kt = key_type or natural
        expected: list[int | None] | None
        if kt not in ("int", "long"):
            expected = None
        else:
            expected = [ref_hash(int(v), kt) for v in vals]
    elif kind <= 3:   # unicode, sometimes big-endian
        strs = [fuzzed_str(fdp) for _ in range(n)]
        # numpy strips trailing NULs from 'U' items: the array's items are what count
        arr = np.array(strs, dtype="U") if strs else np.array([], dtype="U1")
        if kind == 3:
            arr = arr.astype(arr.dtype.newbyteorder(">"))
        items = arr.tolist()
        expected = [ref_hash(s, key_type) for s in items] \
            if key_type in (None, "string") else None
    elif kind == 4:   # bytes 'S' arrays: either rejected or read as serialized data
        raws = [bytes(fdp.ConsumeBytes(fdp.ConsumeIntInRange(8, 12))) for _ in range(n)]
        arr = np.array(raws, dtype="S") if raws else np.array([], dtype="S1")
        got = checked(hzfast.partition_ids, arr, P, key_type)
        if not rejected(got):
            want_a = [data_hash(x) for x in arr.tolist()]
            want_b = [data_hash(arr[i:i + 1].tobytes()) for i in range(len(arr))]
            ok = [R.hash_to_index(h, P) if h is not None else None for h in want_a]
            ok_b = [R.hash_to_index(h, P) if h is not None else None for h in want_b]
            if got.tolist() not in (ok, ok_b):
                raise Finding(f"partition_ids(S array {raws!r:.200}) = {got.tolist()}")
        return
    else:   # other dtypes: must be rejected
        arr = np.zeros(n, dtype=fdp.PickValueInList(["i2", "u4", "f8", "?", "u8"]))
        expected = None
    if n > 1 and fdp.ConsumeIntInRange(0, 4) == 0:
        arr = np.repeat(arr, 2)[::2]             # non-contiguous: same items
        if not rejected(checked(hzfast.partition_ids, arr, P, key_type)) and expected is None:
            raise Finding("partition_ids accepted a non-contiguous invalid array")
        return
    check_batch(arr, expected, P, key_type, f"ndarray {arr.dtype} {arr.tolist()!r:.200}")


def fuzz_arrow(fdp: Any) -> None:
    kind = fdp.ConsumeIntInRange(0, 6)
    key_type = fdp.PickValueInList(KEY_TYPES)
    P = edgy_int(fdp, 1, 300)
    expected: list[int | None] | None
    arr: Any
    if kind <= 1:   # strings / binary from Python values
        n = fdp.ConsumeIntInRange(0, 8)
        binary = kind == 1
        if binary:
            items = [bytes(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 14))) for _ in range(n)]
        else:
            items = [fuzzed_str(fdp).encode("utf-8", "replace") for _ in range(n)]
        arr = arrow_strings(fdp, items, fdp.ConsumeBool(), binary)
        items = [x.as_py() for x in arr]
        items = [x if binary else x.encode("utf-8") for x in items]
        natural = "data" if binary else "string"
    elif kind <= 3:   # from_buffers with fuzzed offsets
        binary = kind == 3
        arr, items_or_none = arrow_from_buffers(fdp, binary)
        if arr is None:
            return
        natural = "data" if binary else "string"
        if items_or_none is None:
            check_batch(arr, None, P, key_type, f"from_buffers({arr.type}) invalid offsets")
            return
        items = items_or_none
    elif kind == 4:   # int32 / int64
        t = fdp.PickValueInList([pa.int32(), pa.int64()])
        info = np.iinfo(np.int32 if t == pa.int32() else np.int64)
        vals = [min(max(edgy_int(fdp, -1000, 1000), info.min), info.max)
                for _ in range(fdp.ConsumeIntInRange(0, 8))]
        arr = pa.array(vals, type=t)
        if vals and fdp.ConsumeBool():
            arr = arr.slice(fdp.ConsumeIntInRange(0, len(vals)))
            vals = arr.to_pylist()
        kt = key_type or ("int" if t == pa.int32() else "long")
        expected = [ref_hash(v, kt) for v in vals] if kt in ("int", "long") else None
        check_batch(arr, expected, P, key_type, f"arrow {t} {vals}")
        return
    elif kind == 5:   # chunked
        chunks = [pa.array([fuzzed_str(fdp, ascii_only=True)
                            for _ in range(fdp.ConsumeIntInRange(0, 3))], type=pa.string())
                  for _ in range(fdp.ConsumeIntInRange(0, 3))]
        arr = pa.chunked_array(chunks, type=pa.string())
        items = [x.encode() for x in arr.to_pylist()]
        natural = "string"
    else:   # nulls must be rejected; dictionary arrays read like their values
        vals = [fuzzed_str(fdp, ascii_only=True) for _ in range(fdp.ConsumeIntInRange(1, 5))]
        if fdp.ConsumeBool():
            vals[fdp.ConsumeIntInRange(0, len(vals) - 1)] = None
            check_batch(pa.array(vals, type=pa.string()), None, P, key_type, "arrow nulls")
            return
        arr = pa.array(vals, type=pa.string()).dictionary_encode()
        items = [x.encode() for x in vals]
        natural = "string"
    if key_type not in (None, natural):
        expected = None
    elif natural == "data":
        expected = [data_hash(x) for x in items]
    else:
        expected = [utf8_hash(x) for x in items]
    check_batch(arr, expected, P, key_type, f"arrow {arr.type} {items!r:.200}")


PIECES = (fuzz_murmur, fuzz_stamp, fuzz_scalar, fuzz_list, fuzz_numpy, fuzz_arrow)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    PIECES[fdp.ConsumeIntInRange(0, len(PIECES) - 1)](fdp)
