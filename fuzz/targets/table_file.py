"""Fuzz target: ``PartitionTable.load`` of fuzzed files and ``save``/``load`` round trips.

Files are raw fuzzed bytes, valid ``.npz`` tables with bytes flipped or cut off, or
archives assembled from fuzzed members (wrong names, dtypes, shapes, object arrays,
``.npy`` headers claiming huge shapes, nested zips). The contract: a valid table, or one
``ValueError`` naming the file; never ``BadZipFile``, ``EOFError``, ``KeyError``,
``OverflowError``, a pickle being loaded, or gigabytes allocated. ``save(path)`` then
``load(path)`` gives the same table whatever the path's suffix. ``hzfast.persistence``
(Hazelcast's hz41/hzlegacy layouts, JSON, format detection, ``read_table``) gets valid
files damaged: flipped bytes, count fields set huge or negative, truncation, trailing
bytes; the same contract (a table, or a ValueError naming the file).
"""
from __future__ import annotations

import atexit
import io
import os
import shutil
import struct
import tempfile
import zipfile
from typing import Any

import atheris
import numpy as np

import hzfast
from fuzz._common import Finding, checked, rejected, table_values
from hzfast import persistence

_DIR = tempfile.mkdtemp(prefix="hzfast-fuzz-files-")
atexit.register(shutil.rmtree, _DIR, True)


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _hostile_npy(fdp: Any) -> bytes:
    """An .npy whose header lies: huge shapes, odd dtypes, pickled objects, truncation."""
    mode = fdp.ConsumeIntInRange(0, 5)
    if mode == 0:   # header claims a huge shape, no data behind it
        shape = fdp.PickValueInList([(2_000_000_000, 7), (2**40,), (2**31, 2**31), (10, 2**33)])
        header = {"descr": "<i4", "fortran_order": False, "shape": shape}
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, header)
        return buf.getvalue() + fdp.ConsumeBytes(16)
    if mode == 1:   # pickled object array
        return _npy(np.array([{"a": 1}, None], dtype=object))
    if mode == 2:   # other dtypes
        dt = fdp.PickValueInList(["<f8", ">i4", "<i8", "|b1", "<U3", "<c8"])
        return _npy(np.zeros((fdp.ConsumeIntInRange(0, 3), 2), dtype=dt))
    if mode == 3:   # a header with a fuzzed dict
        text = fdp.ConsumeUnicodeNoSurrogates(60)
        head = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text.encode())) + text.encode()
        return head + fdp.ConsumeBytes(20)
    if mode == 4:   # truncated valid array
        raw = _npy(np.arange(12, dtype=np.int32).reshape(6, 2))
        return raw[:fdp.ConsumeIntInRange(0, len(raw))]
    return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))


def _table_npz(fdp: Any) -> bytes:
    P, R_, M = fdp.ConsumeIntInRange(1, 6), fdp.ConsumeIntInRange(1, 4), 5
    rows = table_values(fdp, P, R_, M, False)
    t = hzfast.PartitionTable(np.array(rows, dtype=np.int32).reshape(P, R_), members=M)
    path = os.path.join(_DIR, "seed.npz")
    t.save(path)
    with open(path, "rb") as f:
        return f.read()


def file_bytes(fdp: Any) -> bytes:
    mode = fdp.ConsumeIntInRange(0, 4)
    if mode == 0:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 300))
    if mode == 1:   # valid, then damaged
        raw = bytearray(_table_npz(fdp))
        for _ in range(fdp.ConsumeIntInRange(0, 4)):
            if raw:
                raw[fdp.ConsumeIntInRange(0, len(raw) - 1)] = fdp.ConsumeIntInRange(0, 255)
        if fdp.ConsumeBool():
            raw = raw[:fdp.ConsumeIntInRange(0, len(raw))]
        return bytes(raw)
    # an archive assembled from (possibly hostile) members
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        names = ["replicas.npy", "versions.npy", "members.npy", "extra.npy", "replicas"]
        for _ in range(fdp.ConsumeIntInRange(0, 4)):
            name = names.pop(fdp.ConsumeIntInRange(0, len(names) - 1))
            kind = fdp.ConsumeIntInRange(0, 3)
            if kind == 0:
                data = _hostile_npy(fdp)
            elif kind == 1:
                data = _npy(np.array(fdp.ConsumeUnicodeNoSurrogates(80)))
            elif kind == 2:
                data = _npy(np.arange(fdp.ConsumeIntInRange(0, 8), dtype=np.int32)
                            .reshape(-1, 1) % 3)
            else:
                inner = io.BytesIO()
                with zipfile.ZipFile(inner, "w") as z2:
                    z2.writestr("replicas.npy", _hostile_npy(fdp))
                data = inner.getvalue()
            try:
                z.writestr(name, data)
            except (ValueError, zipfile.BadZipFile):  # pragma: no cover - duplicate name etc.
                pass
    return buf.getvalue()


def fuzz_load(fdp: Any) -> None:
    suffix = fdp.PickValueInList([".npz", "", ".bin", ".npy"])
    path = os.path.join(_DIR, f"fuzzed{suffix}")
    raw = file_bytes(fdp)
    with open(path, "wb") as f:
        f.write(raw)
    try:
        table = hzfast.PartitionTable.load(path)
    except ValueError as exc:
        if os.path.basename(path) not in str(exc):
            raise Finding(f"load: the ValueError does not name the file: {exc}") from None
        return
    if not isinstance(table, hzfast.PartitionTable):
        raise Finding(f"load returned {type(table).__name__}")
    again = os.path.join(_DIR, "again.npz")
    table.save(again)
    back = hzfast.PartitionTable.load(again)
    if back != table or back.stamp != table.stamp:
        raise Finding("a loaded table does not survive save/load")


def fuzz_roundtrip(fdp: Any) -> None:
    name = fdp.PickValueInList(["x", "x.npz", "x.NPZ", "x.tar", "dir.d/x", "x.npz.npz"])
    path = os.path.join(_DIR, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    P, R_ = fdp.ConsumeIntInRange(1, 5), fdp.ConsumeIntInRange(1, 3)
    rows = table_values(fdp, P, R_, 4, False)
    t = hzfast.PartitionTable(np.array(rows, dtype=np.int32).reshape(P, R_), members=4)
    try:
        t.save(path)
        back = hzfast.PartitionTable.load(path)
    except ValueError as exc:
        raise Finding(f"save({name!r}) then load({name!r}) failed: {exc}") from None
    if back != t:
        raise Finding(f"save({name!r})/load({name!r}) changed the table")


def _table(fdp: Any) -> hzfast.PartitionTable:
    P, R_ = fdp.ConsumeIntInRange(1, 5), fdp.ConsumeIntInRange(1, 4)
    rows = table_values(fdp, P, R_, 5, False)
    versions = [fdp.ConsumeIntInRange(0, 2**31 - 1) for _ in range(P)]
    return hzfast.PartitionTable(np.array(rows, dtype=np.int32).reshape(P, R_),
                                 np.array(versions, dtype=np.int32), members=5)


def fuzz_persisted(fdp: Any) -> None:
    """hzfast.persistence: Hazelcast's hz41/hzlegacy layouts and JSON, damaged or not."""
    table = _table(fdp)
    fmt = fdp.PickValueInList(["hz41", "hzlegacy", "json", "npz"])
    if fmt == "json":
        raw = persistence.table_to_json(table).encode()
    elif fmt == "npz":
        raw = _table_npz(fdp)
    else:
        raw = persistence.to_bytes(table, fmt)
        back = persistence.from_bytes(raw, fmt, replica_count=table.replica_count)
        if back.replicas.tolist() != table.replicas.tolist() or (
                fmt == "hz41" and back.versions.tolist() != table.versions.tolist()):
            raise Finding(f"from_bytes(to_bytes(table, {fmt!r})) changed the table")
    damaged = bytearray(raw)
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        mode = fdp.ConsumeIntInRange(0, 3)
        if not damaged:
            break
        pos = fdp.ConsumeIntInRange(0, len(damaged) - 1)
        if mode == 0:
            damaged[pos] = fdp.ConsumeIntInRange(0, 255)
        elif mode == 1:   # a count or length field set huge or negative
            damaged[pos:pos + 4] = fdp.PickValueInList(
                [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00",
                 b"\x00\x00\x01\x00"])
        elif mode == 2:
            del damaged[pos:]
        else:
            damaged += fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 16))
    data = bytes(damaged)
    for call, args in ((persistence.from_bytes, (data,)),
                       (persistence.from_bytes, (data, fdp.PickValueInList(["hz41", "hzlegacy"]))),
                       (persistence.detect_format, (data,)),
                       (persistence.table_from_json, (data,))):
        got = checked(call, *args)
        if not rejected(got) and not isinstance(got, (hzfast.PartitionTable, str)):
            raise Finding(f"{call.__name__} returned {type(got).__name__}")
    path = os.path.join(_DIR, fdp.PickValueInList(["t.bin", "t", "t.npz", "t.json"]))
    with open(path, "wb") as f:
        f.write(data)
    try:
        persistence.read_table(path, max_bytes=fdp.PickValueInList([None, 10, 1 << 20]))
    except ValueError as exc:
        if os.path.basename(path) not in str(exc):
            raise Finding(f"read_table: the ValueError does not name the file: {exc}") from None


PIECES = (fuzz_load, fuzz_load, fuzz_load, fuzz_roundtrip, fuzz_persisted, fuzz_persisted)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    PIECES[fdp.ConsumeIntInRange(0, len(PIECES) - 1)](fdp)
