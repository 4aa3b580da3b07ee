"""Table files (docs/hardening.md, class 7): ``save``/``load`` agree on the name, and
every corrupt, truncated, wrong-kind or hostile file gives one ValueError that names the
file and the problem - never BadZipFile, EOFError, KeyError, RecursionError,
OverflowError, a pickle hint, or an allocation the file cannot back."""
from __future__ import annotations

import io
import json
import pickle
import struct
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import hzfast
from hzfast import PartitionTable


@pytest.fixture
def table():
    return PartitionTable(hzfast.arrange(PartitionTable.empty(40, 3), 5), members=5)


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _parts(table):
    return {"replicas": np.array(table.replicas), "versions": np.array(table.versions),
            "members": np.array(table.members.to_json())}


def _load_bytes(tmp_path, data: bytes, name: str = "t.npz"):
    path = tmp_path / name
    path.write_bytes(data)
    return PartitionTable.load(path)


def _refused(tmp_path, data: bytes, match: str = "", name: str = "bad.npz") -> str:
    with pytest.raises(ValueError, match=match) as info:
        _load_bytes(tmp_path, data, name)
    assert f"table file '{tmp_path / name}'" in str(info.value)
    return str(info.value)


# -------------------------------------------------------------------------- names
def test_save_and_load_agree_on_the_name(tmp_path, table):
    path = tmp_path / "x"
    table.save(str(path))
    assert path.exists() and not (tmp_path / "x.npz").exists()
    assert PartitionTable.load(str(path)) == table
    table.save(tmp_path / "y.npz")
    assert PartitionTable.load(tmp_path / "y.npz") == table


def test_file_objects(table):
    buf = io.BytesIO()
    table.save(buf)
    buf.seek(0)
    assert PartitionTable.load(buf) == table


def test_unopenable_paths_raise_os_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        PartitionTable.load(tmp_path / "missing.npz")
    with pytest.raises(IsADirectoryError):
        PartitionTable.load(tmp_path)


def test_loaded_arrays_are_immutable(tmp_path, table):
    table.save(tmp_path / "t.npz")
    back = PartitionTable.load(tmp_path / "t.npz")
    with pytest.raises(ValueError):
        back.replicas.flags.writeable = True


# ----------------------------------------------------------------- wrong kinds
def test_not_an_archive(tmp_path, table):
    _refused(tmp_path, b"", "is empty")
    _refused(tmp_path, b"hello world, not a zip", "is not an .npz")
    buf = io.BytesIO()
    np.save(buf, np.array(table.replicas))
    _refused(tmp_path, buf.getvalue(), "single .npy array")
    _refused(tmp_path, pickle.dumps({"replicas": table.replicas}), "pickle")
    _refused(tmp_path, b"PK\x03\x04" + b"\x00" * 40, "corrupt or truncated")


def test_object_arrays_are_refused_as_pickles(tmp_path, table):
    parts = _parts(table)
    parts["members"] = np.array([{"addresses": []}], dtype=object)
    buf = io.BytesIO()
    np.savez(buf, **parts)                       # numpy pickles object arrays
    msg = _refused(tmp_path, buf.getvalue(), "Python objects")
    assert "allow_pickle" not in msg


def test_missing_and_extra_arrays(tmp_path, table):
    parts = _parts(table)
    _refused(tmp_path, _npz(replicas=parts["replicas"]), r"lacks the array\(s\) \['members', 'versions'\]")
    _refused(tmp_path, _npz(**parts, extra=np.zeros(1)), "unexpected entries")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("notes.txt", "a zip, but not a table")
    _refused(tmp_path, buf.getvalue(), "lacks")


def test_duplicate_entries(tmp_path, table):
    data = _npz(**_parts(table))
    buf = io.BytesIO(data)
    with pytest.warns(UserWarning), zipfile.ZipFile(buf, "a") as zf:
        zf.writestr("replicas.npy", b"again")
    _refused(tmp_path, buf.getvalue(), "entry twice")


@pytest.mark.parametrize("name, value, match", [
    ("replicas", np.zeros((40, 5), np.int64), "dtype int64, expected int32"),
    ("replicas", np.zeros((40, 5), np.float32), "expected int32"),
    ("replicas", np.zeros(40, np.int32), "expected 2 dimensions"),
    ("versions", np.zeros((40, 1), np.int32), "expected 1 dimensions"),
    ("members", np.array(["[]"]), "expected 0 dimensions"),
    ("members", np.array(7), "expected unicode"),
    ("replicas", np.zeros((40, 9), np.int32) - 1, "replica columns"),
    ("versions", np.zeros(39, np.int32), "length 40"),
    ("replicas", np.full((40, 3), 70_000, np.int32), "member"),
])
def test_wrong_dtypes_and_shapes(tmp_path, table, name, value, match):
    parts = _parts(table)
    parts[name] = value
    _refused(tmp_path, _npz(**parts), match)


def test_byte_order_and_fortran_order_are_read_by_value(tmp_path, table):
    parts = _parts(table)
    parts["replicas"] = np.asfortranarray(parts["replicas"].astype(">i4"))
    assert _load_bytes(tmp_path, _npz(**parts)) == table


@pytest.mark.parametrize("members, match", [
    ("not json", "invalid member registry"),
    ("[" * 100_000 + "]" * 100_000, "invalid member registry"),
    ('{"addresses": 5}', "invalid member registry"),
    ("{}", "invalid member registry"),
    (json.dumps({"addresses": ["h:1"] * 5}), "invalid member registry"),   # repeated
])
def test_bad_member_registries(tmp_path, table, members, match):
    parts = _parts(table)
    parts["members"] = np.array(members)
    _refused(tmp_path, _npz(**parts), match)


def test_invalid_tables_inside_valid_files(tmp_path, table):
    parts = _parts(table)
    parts["replicas"][3, :2] = 1
    _refused(tmp_path, _npz(**parts), "invalid table: replicas: partition 3 holds member 1 twice")
    parts = _parts(table)
    parts["replicas"][0, 0] = 9                      # the registry has 5 members
    _refused(tmp_path, _npz(**parts), "out of range for 5 members")


# ------------------------------------------------------------ truncation, damage
def test_every_truncation_is_refused(tmp_path, table):
    buf = io.BytesIO()
    table.save(buf)
    data = buf.getvalue()
    for k in range(len(data)):                  # every prefix, byte by byte
        _refused(tmp_path, data[:k], "table file")


def test_every_damaged_byte_is_refused_or_harmless(tmp_path, table):
    buf = io.BytesIO()
    table.save(buf)
    data = buf.getvalue()
    survived = 0
    for k in range(len(data)):
        bad = bytearray(data)
        bad[k] ^= 0xFF
        try:
            back = _load_bytes(tmp_path, bytes(bad))
        except ValueError as exc:
            assert "table file" in str(exc)
            continue
        back.validate()           # e.g. a timestamp byte: still the same table
        assert back == table
        survived += 1
    assert survived < len(data) // 2


# ------------------------------------------------------------ hostile sizes
def _npy_header(shape, descr="<i4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False,
                                                "shape": shape})
    return buf.getvalue()


def _hostile(table, replicas_entry: bytes, *, declare: int | None = None) -> bytes:
    """A table file whose replicas entry is ``replicas_entry`` (raw .npy bytes), its
    central-directory size optionally patched to ``declare``."""
    parts = _parts(table)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("replicas.npy", replicas_entry)
        for name in ("versions", "members"):
            inner = io.BytesIO()
            np.save(inner, parts[name])
            zf.writestr(f"{name}.npy", inner.getvalue())
    data = bytearray(buf.getvalue())
    if declare is not None:
        at = data.index(b"PK\x01\x02")                # the first central-directory entry
        data[at + 24:at + 28] = struct.pack("<I", declare)
    return bytes(data)


def test_a_header_claiming_two_billion_rows_allocates_nothing(tmp_path, table):
    entry = _npy_header((2_000_000_000, 7)) + b"\x00" * 64
    tracemalloc.start()
    start = time.perf_counter()
    _refused(tmp_path, _hostile(table, entry), r"claims shape \(2000000000, 7\)")
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 2.0 and peak < 20_000_000


def test_declared_sizes_deflate_cannot_produce(tmp_path, table):
    shape = (142_857_142, 7)                        # just under 4 GB of int32
    header = _npy_header(shape)
    entry = header + b"\x00" * 64
    declared = len(header) + shape[0] * shape[1] * 4
    tracemalloc.start()
    _refused(tmp_path, _hostile(table, entry, declare=declared), "compressed bytes")
    assert tracemalloc.get_traced_memory()[1] < 20_000_000
    tracemalloc.stop()


@pytest.mark.parametrize("descr, shape, match", [
    ("|O", (40, 3), "Python objects"),
    ("<i4", (-1, 3), "corrupt|shape"),
    ("<U2000000000", (), "not a valid dtype|claims"),
    ("<i4", (40, 3, 2**62), "expected 2 dimensions"),
    ("<i4", (2**62, 2**3), "claims"),
])
def test_hostile_headers(tmp_path, table, descr, shape, match):
    try:
        header = _npy_header(shape, descr)
    except ValueError:
        pytest.skip("numpy will not even write this header")
    _refused(tmp_path, _hostile(table, header + b"\x00" * 16), match)


def test_garbage_header_text(tmp_path, table):
    bad = b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) + b"{" * 117 + b"\n"
    _refused(tmp_path, _hostile(table, bad), "corrupt")
    deep = b"\x93NUMPY\x01\x00" + struct.pack("<H", 9990) + b"(" * 9989 + b"\n"
    _refused(tmp_path, _hostile(table, deep), "corrupt")


def test_trailing_data_in_an_entry(tmp_path, table):
    inner = io.BytesIO()
    np.save(inner, np.array(table.replicas))
    _refused(tmp_path, _hostile(table, inner.getvalue() + b"\x00" * 4), "claims shape")
