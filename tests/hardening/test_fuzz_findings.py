"""Regression tests of what the fuzz targets found (fuzz/findings/, docs/fuzzing.md).

One test per finding, asserting the contract the finding broke: a clean ValueError or
TypeError naming the argument, or the reference's answer. A finding that is still open
is marked ``xfail(strict=True)``: the day it is fixed the test passes, the strict mark
turns that into a failure, and whoever fixed it removes the mark.
"""
import struct

import numpy as np
import pyarrow as pa
import pytest

import hzfast
from hzfast import ignite
from hzfast.reference import hashing as R
from hzfast.reference import ignite as ref_ignite


def malformed_strings(large=False):
    """A string array whose inner offsets decrease (0, 5, 2): pyarrow checks only the
    first and last offsets when building it."""
    dtype, t = (np.int64, pa.large_string()) if large else (np.int32, pa.string())
    offsets = pa.py_buffer(np.array([0, 5, 2], dtype).tobytes())
    return pa.Array.from_buffers(t, 2, [None, offsets, pa.py_buffer(b"abcdefgh")],
                                 null_count=0)


# ------------------------------------------------------------------ finding 1
@pytest.mark.parametrize("fn", [hzfast.murmur3_x86_32, hzfast.murmur3_x64_64])
def test_finding_1_murmur3_refuses_object_arrays(fn):
    with pytest.raises(TypeError, match="object"):
        fn(np.array([1, 2], dtype=object))


# ------------------------------------------------------------------ finding 2
def test_finding_2_stamp_reads_big_endian_versions_by_value():
    versions = [1, 2, 3, 2**31 - 1, -5]
    assert hzfast.stamp(np.array(versions, ">i4")) == R.stamp(versions)


# ------------------------------------------------------------------ finding 3
@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("fn", [hzfast.partition_ids, ignite.java_hash_code,
                                ignite.partition_ids])
def test_finding_3_malformed_arrow_offsets_are_refused(fn, large):
    arr = malformed_strings(large)
    before = [b.to_pybytes() for b in arr.buffers() if b is not None]
    with pytest.raises(ValueError, match=r"keys\[1\]"):
        fn(arr)
    assert [b.to_pybytes() for b in arr.buffers() if b is not None] == before


# ------------------------------------------------------------------ finding 4
def test_finding_4_ignite_hashes_numpy_unicode_arrays():
    keys = ["ab", "", "\U0001F600x", "zz\u00e9"]
    got = ignite.java_hash_code(np.array(keys))
    assert got.tolist() == [ref_ignite.string_hash(k) for k in keys]


# ------------------------------------------------------------------ finding 5
@pytest.mark.parametrize("fn", [ignite.java_hash_code, ignite.partition_ids])
def test_finding_5_uuid_keys_from_malformed_arrow_are_refused(fn):
    with pytest.raises(ValueError, match="keys"):
        fn(malformed_strings(), key_type="uuid")


# ------------------------------------------------------------------ finding 6
@pytest.mark.parametrize("flag", ["false", "true", None, 2, 0.5])
def test_finding_6_members_lite_flags_must_be_bools(flag):
    with pytest.raises(TypeError, match=r"lite\[0\]"):
        hzfast.Members(["a:1"], lite=[flag])


# ------------------------------------------------------------------ finding 7
# partition 0: REMOVE member 1 from slot 0, then COPY member 3 into slot 1
PLAN_COLUMNS = ([0, 0], [1, -1], [0, -1], [-1, -1], [-1, 3], [-1, -1], [-1, 1])
REMOVE = int(hzfast.MigrationKind.REMOVE)


@pytest.mark.parametrize("n, kind", [(2, [REMOVE]), (1, []), (2, [REMOVE] * 3)])
def test_finding_7_plan_kind_of_the_wrong_length_is_refused(n, kind):
    cols = [np.array(c[:n], np.int32) for c in PLAN_COLUMNS]
    with pytest.raises(ValueError, match=f"kind has length {len(kind)}"):
        hzfast.MigrationPlan(*cols, kind=np.array(kind, np.int8))


# ------------------------------------------------------------------ finding 8
GAPS_BELOW_LWM = struct.pack(">bi", 1, 1) + struct.pack(">qq", 15, 48)
I64 = (-(2**63), 2**63 - 1)


def check_finalize(finalize, lwm):
    """finalize() refuses (ValueError, nothing changed) or reports ranges inside int64;
    either way the LWM is not lowered."""
    try:
        ranges = finalize()
    except ValueError:
        assert lwm() == 2**63 - 1
        return
    flat = [v for r in ranges for v in r]
    assert all(I64[0] <= v <= I64[1] for v in flat)
    assert lwm() == 2**63 - 1


def test_finding_8_scalar_counter_gap_below_initial():
    try:
        c = ignite.UpdateCounter(2**63 - 1, GAPS_BELOW_LWM)
    except ValueError:
        return   # refusing the blob is one correct answer
    check_finalize(lambda: list(zip(*[iter(c.finalize())] * 2)), lambda: c.lwm)


def test_finding_8_counter_table_gap_below_initial():
    t = ignite.UpdateCounters(1)
    try:
        t.init(0, 2**63 - 1, GAPS_BELOW_LWM)
    except ValueError:
        return
    check_finalize(lambda: t.finalize().get(0, []), lambda: int(t.lwm[0]))


# ------------------------------------------------------------------ finding 9
@pytest.mark.parametrize("name, data, max_bytes", [
    ("empty.bin", b"", None),
    ("junk.bin", b"\x00\x01garbage" * 8, None),
    ("damaged.npz", b"PK\x03\x04" + b"\xff" * 60, None),
    ("big.bin", b"\x00" * 64, 10),
], ids=["empty", "junk", "damaged-npz", "over-max-bytes"])
def test_finding_9_read_table_names_the_file(tmp_path, name, data, max_bytes):
    from hzfast import persistence

    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        persistence.read_table(path, max_bytes=max_bytes)


# ------------------------------------------------------------------ finding 10
@pytest.mark.parametrize("field, text", [
    ("hosts", "\udcdc\udc41\ud82c\udcdc"),   # the input the table target found
    ("zones", "\ud800"), ("groups", "x\udc80"), ("uuids", "\udfff"),
])
def test_finding_10_members_refuse_lone_surrogates(field, text):
    with pytest.raises(ValueError, match=rf"{field}\[0\] holds an unpaired surrogate"):
        hzfast.Members(["a:1"], **{field: [text]})


def test_finding_10_members_refuse_lone_surrogates_in_addresses_and_json():
    with pytest.raises(ValueError, match=r"addresses\[1\] holds an unpaired surrogate"):
        hzfast.Members(["a:1", "h\ud83d:2"])
    with pytest.raises(ValueError, match=r"zones\[0\] holds an unpaired surrogate"):
        hzfast.Members.from_json('{"addresses": ["a:1"], "zones": ["\\ud800"]}')


def test_finding_10_members_text_round_trips_json():
    """Valid text outside the BMP (a real surrogate pair in UTF-16) still round-trips."""
    m = hzfast.Members(["a:1", "b:2"], hosts=["h\U0001F600\u00e9", "\U0001B0DC"],
                       zones=["z\u4e2d", ""], groups=["g\U0010FFFF", 7])
    assert hzfast.Members.from_json(m.to_json()) == m
