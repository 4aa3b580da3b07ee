"""Exactness, equivalence and bad-input tests for hzfast.hashing (and hzfast._keys)."""
import struct

import mmh3
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hzfast
from hzfast import _hashing as K
from hzfast import hashing as H
from hzfast._keys import KeyBatch, normalize_keys
from hzfast.reference import hashing as R

SEED = 0x01000193
INT_MIN = -(2**31)

# Keys whose Hazelcast partition hash is exactly -2**31 (found by an exhaustive kernel scan
# of the int32 range; re-checked against the reference and mmh3 below).
INT_KEY_MIN_HASH = 1611540325
LONG_KEY_MIN_HASH = 1676864925


# =============================================================================== vectors
def _stamp_versions(vec):
    """Build a stamp vector's versions from its description text."""
    P = vec["partition_count"]
    desc = vec["versions"]
    i = np.arange(P, dtype=np.int64)
    if desc.startswith("all versions "):
        return np.full(P, int(desc.split()[2]), dtype=np.int32)
    if desc == "version[i] = i":
        return i.astype(np.int32)
    if desc == "version[i] = (i*7919) % 1000":
        return ((i * 7919) % 1000).astype(np.int32)
    raise AssertionError(f"unknown stamp vector description {desc!r}")


def test_murmur3_x86_32_vectors(hz_vectors):
    vecs = hz_vectors["murmur3_x86_32_vectors"]
    assert len(vecs) >= 16
    for v in vecs:
        data = bytes.fromhex(v["data_hex"])
        expected = v["hz_MurmurHash3_x86_32"]
        assert hzfast.murmur3_x86_32(data) == expected, v
        assert hzfast.murmur3_x86_32(data, SEED) == expected
        assert R.murmur3_x86_32(data) == expected
        assert mmh3.hash(data, SEED, signed=True) == expected
        if "partition_id_271" in v:
            assert K.hash_to_index(expected, 271) == v["partition_id_271"]


def test_murmur3_x64_64_vectors(hz_vectors):
    vecs = hz_vectors["murmur3_x64_64_vectors"]
    assert len(vecs) >= 16
    lengths = set()
    for v in vecs:
        data = bytes.fromhex(v["data_hex"])
        lengths.add(len(data))
        expected = v["hz_MurmurHash3_x64_64"]
        if expected >= 2**63:  # tolerate an unsigned spelling
            expected -= 2**64
        assert hzfast.murmur3_x64_64(data) == expected, v
        assert R.murmur3_x64_64(data) == expected, v
    assert 0 in lengths and any(n > 16 for n in lengths)  # the vectors cover tails and blocks


def test_hash_to_index_vectors(hz_vectors):
    vecs = hz_vectors["hash_to_index_vectors"]
    assert vecs
    errors = 0
    for v in vecs:
        h, n = v["hash"], v["length"]
        if "error" in v:  # Java: IllegalArgumentException for length <= 0
            errors += 1
            data = struct.pack(">ii", h, -7) + b"\0\0\0\0"
            _raises(ValueError, "partition_count", hzfast.partition_id, data, n, "data")
            _raises(ValueError, "partition_count", hzfast.partition_ids, [data], n, "data")
            with pytest.raises(ValueError):
                R.hash_to_index(h, n)
            continue
        idx = v["index"]
        assert K.hash_to_index(h, n) == idx
        assert R.hash_to_index(h, n) == idx
        if h != 0:  # through the public API: serialized data carrying h in its header
            data = struct.pack(">ii", h, -7) + b"\0\0\0\0"
            assert hzfast.partition_hash(data, key_type="data") == h
            assert hzfast.partition_id(data, n, key_type="data") == idx
            assert hzfast.partition_ids([data], n, key_type="data").tolist() == [idx]
    assert errors >= 1


def test_stamp_vectors(hz_vectors):
    vecs = hz_vectors["stamp_vectors"]["vectors"]
    assert len(vecs) >= 10
    for v in vecs:
        versions = _stamp_versions(v)
        assert hzfast.stamp(versions) == v["stamp_signed"], v
        assert (v["stamp_signed"] & (2**64 - 1)) == int(v["stamp_hex_u64"], 16)
        if v["partition_count"] <= 271:
            assert R.stamp(versions) == v["stamp_signed"]
        # the stamp is the x64_64 variant over the big-endian buffer
        assert hzfast.murmur3_x64_64(versions.astype(">i4").tobytes()) == v["stamp_signed"]


def test_key_partition_vectors(hz_vectors):
    vecs = hz_vectors["key_partition_vectors"]["vectors"]
    assert len(vecs) == 30
    for v in vecs:
        key, kind = v["key"], v["kind"]
        key_type = {"string": "string", "int": "int", "long": "long"}[kind]
        serialized = bytes.fromhex(v["serialized_hex"])
        assert hzfast.serialize_key(key, key_type) == serialized
        assert R.serialize_key(key, key_type) == serialized
        if kind != "long":  # inference: str -> String, small int -> Integer
            assert hzfast.serialize_key(key) == serialized
        assert hzfast.partition_hash(key, key_type) == v["partition_hash"]
        assert hzfast.partition_id(key, 271, key_type) == v["partition_id"]
        assert hzfast.partition_id(key, 20000, key_type) == v["partition_id_20000"]
        assert R.partition_id(key, 271, key_type) == v["partition_id"]
        assert hzfast.partition_ids([key], 271, key_type).tolist() == [v["partition_id"]]
        assert hzfast.partition_ids([key], 20000, key_type).tolist() == [v["partition_id_20000"]]
        # already serialized data gives the same answers
        assert hzfast.partition_hash(serialized, "data") == v["partition_hash"]
        assert hzfast.partition_id(serialized, 20000, "data") == v["partition_id_20000"]
        assert hzfast.serialize_key(serialized, "data") == serialized
    # and in bulk, one array per kind
    for kind, dtype in (("int", np.int32), ("long", np.int64)):
        sub = [v for v in vecs if v["kind"] == kind]
        arr = np.array([v["key"] for v in sub], dtype=dtype)
        assert hzfast.partition_ids(arr).tolist() == [v["partition_id"] for v in sub]
        assert hzfast.partition_ids(arr, 20000).tolist() == [v["partition_id_20000"] for v in sub]
        assert hzfast.partition_hash(arr).tolist() == [v["partition_hash"] for v in sub]
    sub = [v for v in vecs if v["kind"] == "string"]
    sa = pa.array([v["key"] for v in sub])
    assert hzfast.partition_ids(sa).tolist() == [v["partition_id"] for v in sub]
    assert hzfast.partition_ids(sa, 20000).tolist() == [v["partition_id_20000"] for v in sub]
    blobs = pa.array([bytes.fromhex(v["serialized_hex"]) for v in vecs], type=pa.binary())
    assert hzfast.partition_ids(blobs, 20000).tolist() == [v["partition_id_20000"] for v in vecs]


# =============================================================================== properties
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.integers(0, 2**32 - 1))
def test_murmur3_x86_32_equals_mmh3(data, seed):
    assert hzfast.murmur3_x86_32(data, seed) == mmh3.hash(data, seed, signed=True)
    assert hzfast.murmur3_x86_32(bytearray(data), seed) == R.murmur3_x86_32(data, seed)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=100), st.integers(-(2**31), 2**32 - 1))
def test_murmur3_x64_64_equals_reference(data, seed):
    assert hzfast.murmur3_x64_64(data, seed) == R.murmur3_x64_64(data, seed)


def test_negative_seed_is_java_int():
    data = b"hazelcast-seed"
    assert hzfast.murmur3_x64_64(data, -1) == hzfast.murmur3_x64_64(data, 2**32 - 1)
    assert hzfast.murmur3_x86_32(data, -1) == mmh3.hash(data, 2**32 - 1, signed=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=70))
def test_stamp_equals_reference(versions):
    arr = np.array(versions, dtype=np.int32)
    expected = R.stamp(versions)
    assert hzfast.stamp(arr) == expected
    assert hzfast.stamp(versions) == expected  # list input
    assert hzfast.stamp(arr) == hzfast.murmur3_x64_64(arr.astype(">i4").tobytes())


def test_stamp_large_random_matches_buffer_hash():
    rng = np.random.default_rng(7)
    for P in (0, 1, 2, 3, 4, 5, 271, 20000, 100003):
        v = rng.integers(INT_MIN, 2**31, P, dtype=np.int64).astype(np.int32)
        assert hzfast.stamp(v) == hzfast.murmur3_x64_64(v.astype(">i4").tobytes())


def test_stamp_empty():
    assert hzfast.stamp(np.zeros(0, np.int32)) == R.stamp([]) == hzfast.murmur3_x64_64(b"")


# ----------------------------------------------------------------- hazelcast-python-client oracle
@pytest.fixture(scope="module")
def hz_client():
    from hazelcast.config import Config, IntType
    from hazelcast.hash import hash_to_index
    from hazelcast.serialization.service import SerializationServiceV1

    as_int = SerializationServiceV1(Config())
    cfg = Config()
    cfg.default_int_type = IntType.LONG
    as_long = SerializationServiceV1(cfg)

    def oracle(key, partition_count, long=False):
        data = (as_long if long else as_int).to_data(key)
        h = data.get_partition_hash()
        return bytes(data.buffer), h, hash_to_index(h, partition_count)

    return oracle


def _random_strings(rng, n):
    alphabet = list("abcdefghijklmnopqrstuvwxyz0123456789-_ ") + list("äöüßéèñç日本語€😀\u0301")
    out = []
    for _ in range(n):
        length = int(rng.integers(0, 40))
        out.append("".join(rng.choice(alphabet, length)))
    return out


@pytest.mark.parametrize("partition_count", [271, 20000, 1, 7])
def test_partition_ids_match_python_client(hz_client, partition_count):
    rng = np.random.default_rng(partition_count)
    strings = _random_strings(rng, 2000)
    ints = rng.integers(INT_MIN, 2**31, 2000, dtype=np.int64).astype(np.int32)
    longs = rng.integers(-(2**63), 2**63 - 1, 2000, dtype=np.int64, endpoint=True)
    for keys, arr, long in ((strings, pa.array(strings), False),
                            (ints.tolist(), ints, False),
                            (longs.tolist(), longs, True)):
        expected, hashes = [], []
        for k in keys:
            data, h, idx = hz_client(k, partition_count, long)
            assert h != INT_MIN  # the client bug case has its own test
            assert hzfast.serialize_key(k, "long" if long else None) == data
            expected.append(idx)
            hashes.append(h)
        assert hzfast.partition_ids(arr, partition_count).tolist() == expected
        assert hzfast.partition_ids(keys, partition_count,
                                    "long" if long else None).tolist() == expected
        assert hzfast.partition_hash(arr).tolist() == hashes


def test_min_hash_java_semantics_not_client_bug(hz_client):
    """hash == -2**31: Java (and hzfast) give partition 0; the Python client gives 245."""
    from hazelcast.hash import hash_to_index as client_hash_to_index

    assert client_hash_to_index(INT_MIN, 271) == 245  # the documented client bug
    assert R.hash_to_index(INT_MIN, 271) == 0
    assert K.hash_to_index(INT_MIN, 271) == 0
    # serialized data whose header carries the hash
    data = struct.pack(">ii", INT_MIN, -7) + struct.pack(">i", 5)
    assert hzfast.partition_hash(data, "data") == INT_MIN
    for pc in (271, 20000, 1, 2**31 - 1):
        assert hzfast.partition_id(data, pc, "data") == 0
        assert hzfast.partition_ids([data], pc, "data").tolist() == [0]
        assert hzfast.partition_ids(pa.array([data], pa.binary()), pc).tolist() == [0]
    # real keys that hash to -2**31
    for key, key_type in ((INT_KEY_MIN_HASH, "int"), (LONG_KEY_MIN_HASH, "long")):
        ser = hzfast.serialize_key(key, key_type)
        assert mmh3.hash(ser[8:], SEED, signed=True) == INT_MIN
        assert hzfast.partition_hash(key, key_type) == INT_MIN
        assert hzfast.partition_id(key, 271, key_type) == 0
        dtype = np.int32 if key_type == "int" else np.int64
        assert hzfast.partition_ids(np.array([key, key], dtype), 271).tolist() == [0, 0]
        _, h, client_idx = hz_client(key, 271, key_type == "long")
        assert h == INT_MIN and client_idx == 245


# =============================================================================== bulk forms
def _scalar_ids(keys, pc, key_type=None):
    return [hzfast.partition_id(k, pc, key_type) for k in keys]


STRINGS = ["", "a", "key", "hello", "ünïcødé", "日本語", "😀 emoji", "x" * 17,
           "The quick brown fox jumps over the lazy dog", "", "abc\x00def", "key-42"]


@pytest.mark.parametrize("pc", [271, 20000])
def test_string_forms_agree(pc):
    expected = _scalar_ids(STRINGS, pc)
    forms = [
        STRINGS, tuple(STRINGS), np.array(STRINGS, dtype=object),
        pa.array(STRINGS, pa.string()), pa.array(STRINGS, pa.large_string()),
        pa.chunked_array([STRINGS[:5], STRINGS[5:]], pa.string()),
        pa.chunked_array([STRINGS[:3], [], STRINGS[3:]], pa.large_string()),
        pa.array(STRINGS).dictionary_encode(),
    ]
    for form in forms:
        assert hzfast.partition_ids(form, pc).tolist() == expected, type(form)
        assert hzfast.partition_ids(form, pc, key_type="string").tolist() == expected
    # numpy 'U' drops trailing NULs by design; use strings without them
    no_nul = [s for s in STRINGS if not s.endswith("\x00")]
    assert hzfast.partition_ids(np.array(no_nul), pc).tolist() == _scalar_ids(no_nul, pc)
    # sliced arrays (non-zero offset), both offset widths
    for typ in (pa.string(), pa.large_string()):
        arr = pa.array(["skip", "me"] + STRINGS + ["tail"], typ)
        sliced = arr.slice(2, len(STRINGS))
        assert sliced.offset == 2
        assert hzfast.partition_ids(sliced, pc).tolist() == expected
        assert hzfast.partition_ids(arr.slice(5, 3), pc).tolist() == expected[3:6]
    assert hzfast.partition_hash(pa.array(STRINGS)).tolist() == \
        [hzfast.partition_hash(s) for s in STRINGS]


@pytest.mark.parametrize("pc", [271, 20000])
def test_int_forms_agree(pc):
    ints = [0, 1, -1, 42, 271, 2**31 - 1, INT_MIN, 123456789, -987654]
    expected = _scalar_ids(ints, pc)
    for form in (ints, tuple(ints), np.array(ints, np.int32), np.array(ints, dtype=object),
                 pa.array(ints, pa.int32()), pa.chunked_array([ints[:4], ints[4:]], pa.int32()),
                 pa.array([7] + ints, pa.int32()).slice(1), range(0)):
        if isinstance(form, range):
            continue
        assert hzfast.partition_ids(form, pc).tolist() == expected
        assert hzfast.partition_ids(form, pc, "int").tolist() == expected
    # int64 arrays holding Integer-range values, with key_type="int", are Integers
    assert hzfast.partition_ids(np.array(ints, np.int64), pc, "int").tolist() == expected
    # np.int32 scalars are Integers
    assert [hzfast.partition_id(np.int32(k), pc) for k in ints] == expected
    assert hzfast.partition_ids(range(5), pc).tolist() == _scalar_ids(range(5), pc)


@pytest.mark.parametrize("pc", [271, 20000])
def test_long_forms_agree(pc):
    longs = [0, 1, -1, 42, 2**40, -(2**63), 2**63 - 1, 1000000000000, 5]
    expected = _scalar_ids(longs, pc, "long")
    arr64 = np.array(longs, np.int64)
    for form, kt in ((longs, "long"), (tuple(longs), "long"), (arr64, None), (arr64, "long"),
                     (pa.array(longs, pa.int64()), None),
                     (pa.chunked_array([longs[:2], longs[2:]], pa.int64()), None),
                     (pa.array([9, 9] + longs, pa.int64()).slice(2), None),
                     (list(arr64), None)):  # a list of np.int64 keeps the Long meaning
        assert hzfast.partition_ids(form, pc, kt).tolist() == expected
    assert [hzfast.partition_id(k, pc) for k in arr64] == expected  # np.int64 scalars
    # int32 arrays hashed as Longs on request
    small = [0, 1, -1, 42]
    assert hzfast.partition_ids(np.array(small, np.int32), pc, "long").tolist() == \
        _scalar_ids(small, pc, "long")
    # Integer vs Long really differ
    assert hzfast.partition_id(1, pc) != hzfast.partition_id(1, pc, "long")


def test_data_forms_agree():
    keys = ["a", "key", "日本語"]
    blobs = [hzfast.serialize_key(k) for k in keys] + [hzfast.serialize_key(7),
                                                        hzfast.serialize_key(7, "long"),
                                                        struct.pack(">ii", 12345, -7) + b"xyzw"]
    expected = [hzfast.partition_id(b, 271, "data") for b in blobs]
    assert expected[:3] == _scalar_ids(keys, 271)
    assert expected[5] == 12345 % 271
    for form, kt in ((blobs, None), (blobs, "data"), (tuple(blobs), "data"),
                     ([bytearray(b) for b in blobs], "data"),
                     (pa.array(blobs, pa.binary()), None),
                     (pa.array(blobs, pa.large_binary()), "data"),
                     (pa.chunked_array([blobs[:2], blobs[2:]], pa.binary()), None),
                     (pa.array([b"12345678"] + blobs, pa.binary()).slice(1), None)):
        assert hzfast.partition_ids(form, 271, kt).tolist() == expected


def test_pandas_inputs():
    pd = pytest.importorskip("pandas")
    assert hzfast.partition_ids(pd.Series(STRINGS), 271).tolist() == _scalar_ids(STRINGS, 271)
    longs = [0, 1, -1, 2**40]
    assert hzfast.partition_ids(pd.Series(longs, dtype="int64")).tolist() == \
        _scalar_ids(longs, 271, "long")
    assert hzfast.partition_ids(pd.Series([0, 1], dtype="int32")).tolist() == \
        _scalar_ids([0, 1], 271)
    _raises(ValueError, r"keys\[1\] is null", hzfast.partition_ids, pd.Series(["a", None]))
    _raises(TypeError, "keys", hzfast.partition_ids, pd.Series([1.5, 2.5]))


def test_empty_inputs():
    for form, kt in (([], None), ((), None), ([], "string"), ([], "long"), ([], "data"),
                     (np.zeros(0, np.int32), None), (np.zeros(0, np.int64), None),
                     (np.array([], dtype="U1"), None), (np.array([], dtype=object), None),
                     (pa.array([], pa.string()), None), (pa.array([], pa.large_string()), None),
                     (pa.array([], pa.int32()), None), (pa.array([], pa.int64()), None),
                     (pa.array([], pa.binary()), None),
                     (pa.chunked_array([], pa.string()), None),
                     (pa.array(["a", "b"]).slice(1, 0), None)):
        out = hzfast.partition_ids(form, 271, kt)
        assert out.dtype == np.int32 and out.shape == (0,)
        assert hzfast.partition_hash(form, kt).shape == (0,)


def test_string_lengths_and_buffer_ends():
    """Every length 0..40, as the last item of its buffer (byte-wise tail) and followed by
    other data (the kernel's masked 4-byte tail load)."""
    for n in range(41):
        s = "".join(chr(97 + (i * 7) % 26) for i in range(n))
        expected = R.partition_id(s, 20000)
        assert hzfast.partition_id(s, 20000) == expected
        assert hzfast.partition_ids([s], 20000).tolist() == [expected]
        assert hzfast.partition_ids([s, "tail-padding"], 20000).tolist()[0] == expected
        arr = pa.array(["x", s, "after"], pa.large_string())
        assert hzfast.partition_ids(arr.slice(1, 1), 20000).tolist() == [expected]
        for extra in range(4):  # data buffer ending 0..3 bytes after the string
            data = np.frombuffer((s + "z" * extra).encode(), dtype=np.uint8)
            offsets = np.array([0, n], dtype=np.int64)
            out = np.empty(1, np.int32)
            assert K.bulk_bytes(offsets, data, out, 20000, False) == -1
            assert out.tolist() == [expected]


def test_malformed_offsets_are_reported_not_crashing():
    data = np.frombuffer(b"abcdef", dtype=np.uint8)
    out = np.empty(2, np.int32)
    assert K.bulk_bytes(np.array([0, 3, 99], np.int32), data, out, 271, False) == 1
    assert K.bulk_bytes(np.array([4, 2, 6], np.int64), data, out, 271, False) == 0
    assert K.bulk_bytes(np.array([0, 3, 6], np.int64), data, out, 271, True) == 0  # < 8
    assert K.bulk_bytes(np.array([-1, 3, 6], np.int64), data, out, 271, False) == 0


def test_empty_strings_only():
    arr = pa.array(["", "", ""])
    assert hzfast.partition_ids(arr).tolist() == [hzfast.partition_id("")] * 3
    assert hzfast.partition_id("") == 11  # vector: "" -> 11


def test_large_random_bulk_equals_scalar():
    rng = np.random.default_rng(3)
    strings = _random_strings(rng, 3000)
    ids = hzfast.partition_ids(strings, 1009)
    assert ids.tolist() == [R.partition_id(s, 1009) for s in strings]
    assert hzfast.partition_ids(pa.array(strings, pa.large_string()), 1009).tolist() == ids.tolist()
    longs = rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64)
    assert hzfast.partition_ids(longs, 1009).tolist() == \
        [R.partition_id(int(k), 1009, "long") for k in longs]


def test_partition_ids_dtype_and_range():
    rng = np.random.default_rng(5)
    keys = rng.integers(-(2**63), 2**63 - 1, 100000, dtype=np.int64)
    for pc in (1, 2, 271, 20000, 2**31 - 1):
        ids = hzfast.partition_ids(keys, pc)
        assert ids.dtype == np.int32 and ids.shape == keys.shape and ids.flags.c_contiguous
        assert ids.min() >= 0 and ids.max() < pc
        h = hzfast.partition_hash(keys).astype(np.int64)
        assert np.array_equal(ids, np.where(h == INT_MIN, 0, np.abs(h) % pc))


@pytest.mark.parametrize("pc", [0, 1, 2, 3, 7, 271, 20000, 65536, 1000003, 2**31 - 1])
def test_simd_path_equals_scalar_path(pc):
    """The AVX2 Integer/Long kernel (when the CPU has it) gives the scalar kernel's output."""
    rng = np.random.default_rng(pc)
    longs = rng.integers(-(2**63), 2**63 - 1, 50_003, dtype=np.int64)
    longs[:6] = [0, -1, 2**63 - 1, -(2**63), LONG_KEY_MIN_HASH, 271]
    ints = rng.integers(INT_MIN, 2**31, 50_003, dtype=np.int64).astype(np.int32)
    ints[:5] = [0, -1, 2**31 - 1, INT_MIN, INT_KEY_MIN_HASH]
    seq = np.arange(-40_000, 40_000, dtype=np.int64)  # many exact multiples of pc
    results = {}
    try:
        for simd in (False, True):
            K.set_simd(simd)
            outs = []
            for keys, fn in ((longs, K.bulk_int64), (ints, K.bulk_int32), (seq, K.bulk_int64)):
                out = np.empty(keys.shape[0], np.int32)
                fn(keys, out, pc)
                outs.append(out)
            results[simd] = outs
    finally:
        K.set_simd(True)
    for a, b in zip(results[False], results[True]):
        assert np.array_equal(a, b)
    if pc > 0:
        assert results[True][0][4] == 0 and results[True][1][4] == 0  # hash -2**31 -> 0
        h = hzfast.partition_hash(longs).astype(np.int64)
        assert np.array_equal(results[True][0], np.where(h == INT_MIN, 0, np.abs(h) % pc))


@pytest.mark.parametrize("lo, hi", [(0, 0), (0, 3), (0, 16), (6, 16), (10, 20), (0, 40),
                                    (15, 17)])
@pytest.mark.parametrize("offset_dtype", [np.int32, np.int64])
def test_simd_strings_equal_scalar_path(lo, hi, offset_dtype):
    """The AVX2 string kernel (runs of <= 16-byte strings) gives the scalar kernel's output,
    whatever the mix of lengths, the batch size or the offset width."""
    rng = np.random.default_rng(lo * 100 + hi)
    for n in (0, 1, 7, 8, 9, 63, 1000, 20_003):
        lengths = rng.integers(lo, hi + 1, n)
        offsets = np.zeros(n + 1, dtype=offset_dtype)
        np.cumsum(lengths, out=offsets[1:])
        data = rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8)
        for pc in (0, 1, 271, 20000):
            outs = []
            try:
                for simd in (False, True):
                    K.set_simd(simd)
                    out = np.empty(n, np.int32)
                    assert K.bulk_bytes(offsets, data, out, pc, False) == -1
                    outs.append(out)
            finally:
                K.set_simd(True)
            assert np.array_equal(outs[0], outs[1]), (n, pc)
    # a malformed item inside a run of short strings is still found
    offsets = np.arange(0, 65 * 8, 8, dtype=offset_dtype)
    offsets[20] = offsets[19] - 1
    data = np.zeros(int(offsets[-1]), np.uint8)
    assert K.bulk_bytes(offsets, data, np.empty(64, np.int32), 271, False) == 19


def test_read_only_and_memory_mapped_inputs(tmp_path):
    keys = np.arange(-50, 50, dtype=np.int64)
    ro = keys.copy()
    ro.flags.writeable = False
    assert hzfast.partition_ids(ro).tolist() == hzfast.partition_ids(keys).tolist()
    path = tmp_path / "keys.npy"
    np.save(path, keys)
    mm = np.load(path, mmap_mode="r")
    assert hzfast.partition_ids(mm).tolist() == hzfast.partition_ids(keys).tolist()
    v = np.arange(271, dtype=np.int32)
    v.flags.writeable = False
    assert hzfast.stamp(v) == R.stamp(v)


def test_inputs_not_mutated():
    lst = ["b", "a", "ü"]
    arr = np.array([3, 1, 2], np.int64)
    sa = pa.array(["x", "y"])
    v = np.array([5, 4, 3], np.int32)
    hzfast.partition_ids(lst)
    hzfast.partition_ids(arr)
    hzfast.partition_ids(sa)
    hzfast.stamp(v)
    assert lst == ["b", "a", "ü"]
    assert arr.tolist() == [3, 1, 2]
    assert sa.to_pylist() == ["x", "y"]
    assert v.tolist() == [5, 4, 3]


def test_table_stamp_and_locate_use_hashing():
    t = hzfast.PartitionTable.round_robin(271, hzfast.Members.from_count(3), 2)
    assert t.stamp == hzfast.stamp(np.zeros(271, np.int32))
    assert t.locate("hello") == t.replicas[270, 0]


# =============================================================================== _keys contract
def test_normalize_keys_contract():
    b = normalize_keys(["ab", "", "ü"])
    assert isinstance(b, KeyBatch) and b.kind == "string" and b.n == 3
    assert b.offsets.tolist() == [0, 2, 2, 4] and bytes(b.data) == "abü".encode()
    sa = pa.array(["zz", "abc", "d"]).slice(1)
    b = normalize_keys(sa)
    assert b.offsets.dtype == np.int32 and b.offsets.shape == (3,)
    assert bytes(b.data[b.offsets[0]:b.offsets[1]]) == b"abc"  # absolute offsets
    assert bytes(b.data[b.offsets[1]:b.offsets[2]]) == b"d"
    b = normalize_keys(np.array([1, 2], np.int64))
    assert b.kind == "long" and b.values.dtype == np.int64
    b = normalize_keys([1, 2])
    assert b.kind == "int" and b.values.dtype == np.int32
    b = normalize_keys([1, 2], key_type="long")
    assert b.kind == "long" and b.values.tolist() == [1, 2]
    b = normalize_keys(pa.array([b"\0" * 8], pa.large_binary()))
    assert b.kind == "data" and b.offsets.dtype == np.int64
    with pytest.raises(ValueError, match="ids"):
        normalize_keys(["a", None], name="ids")


# =============================================================================== bad input
def _raises(exc, match, fn, *args, **kwargs):
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


@pytest.mark.parametrize("bad, exc, match", [
    (np.zeros(3, np.float64), TypeError, "keys must have dtype"),
    (np.zeros(3, np.uint32), TypeError, "keys must have dtype"),
    (np.zeros(3, np.uint64), TypeError, "keys must have dtype"),
    (np.zeros(3, np.int16), TypeError, "keys must have dtype"),
    (np.zeros(3, bool), TypeError, "keys must have dtype"),
    (np.zeros(3, "S4"), TypeError, "keys must have dtype"),
    (np.zeros((2, 2), np.int32), ValueError, "keys must be 1-dimensional"),
    (np.zeros((2, 2), "U3"), ValueError, "keys must be 1-dimensional"),
    (np.arange(10, dtype=np.int64)[::2], ValueError, "keys must be C-contiguous"),
    (np.array(["a", "b", "c", "d"])[::2], ValueError, "keys must be C-contiguous"),
    ([1, None, 3], ValueError, r"keys\[1\] is None"),
    (["a", None], ValueError, r"keys\[1\] is None"),
    (np.array(["a", None], dtype=object), ValueError, r"keys\[1\] is None"),
    (pa.array(["a", "b", None]), ValueError, r"keys\[2\] is null"),
    (pa.array([1, None], pa.int64()), ValueError, r"keys\[1\] is null"),
    (pa.chunked_array([["a"], ["b", None]]), ValueError, "null"),
    ([1, "a"], TypeError, r"keys\[1\] is a str"),
    (["a", 1], TypeError, r"keys\[1\] is a int"),
    ([True, False], TypeError, r"keys\[0\] is a bool"),
    ([1, True], TypeError, r"keys\[1\] is a bool"),
    ([1.5], TypeError, r"keys\[0\] is a float"),
    ([2**31], ValueError, r"keys\[0\] = 2147483648 does not fit a Java Integer"),
    ([0, -(2**31) - 1], ValueError, r"keys\[1\].*key_type='long'"),
    ([b"short"], ValueError, r"keys\[0\] is 5 bytes"),
    (pa.array([b"12345678", b"1234"]), ValueError, r"keys\[1\] is 4 bytes"),
    (pa.array([1.0, 2.0]), TypeError, "keys must be a pyarrow array of"),
    (pa.array([1, 2], pa.int16()), TypeError, "keys must be a pyarrow array of"),
    ({"a": 1}, TypeError, "keys must be a list"),
    ({"a", "b"}, TypeError, "keys must be a list"),
    (iter([1, 2]), TypeError, "keys must be a list"),
    ("abc", TypeError, "keys must be a batch"),
    (5, TypeError, "keys must be a batch"),
    (["\ud800"], ValueError, r"keys\[0\] cannot be encoded as UTF-8"),
    (np.array(["ok", "\ud800"]), ValueError, r"keys\[1\] cannot be encoded as UTF-8"),
])
def test_partition_ids_bad_keys(bad, exc, match):
    before = bad.copy() if isinstance(bad, np.ndarray) else None
    _raises(exc, match, hzfast.partition_ids, bad)
    if before is not None:
        assert np.array_equal(bad, before) or bad.dtype == object
    if not isinstance(bad, (str, int)):
        _raises(exc, match, hzfast.partition_hash, bad)


def test_long_out_of_range_always_fails():
    _raises(ValueError, "does not fit a Java Long", hzfast.partition_ids, [2**63], 271, "long")
    _raises(ValueError, "does not fit a Java Long", hzfast.partition_ids,
            [-(2**63) - 1], 271, "long")
    _raises(ValueError, "does not fit a Java Long", hzfast.partition_id, 2**63, 271, "long")
    _raises(ValueError, "does not fit a Java Long", hzfast.serialize_key, 2**64, "long")
    _raises(ValueError, "does not fit a Java Integer", hzfast.partition_id, 2**31)
    _raises(ValueError, "key_type='long'", hzfast.serialize_key, 2**40)
    assert hzfast.partition_ids([2**40], 271, "long").tolist() == \
        [hzfast.partition_id(2**40, 271, "long")]
    _raises(ValueError, "does not fit a Java Integer",
            hzfast.partition_ids, np.array([2**40], np.int64), 271, "int")


@pytest.mark.parametrize("pc, exc", [(0, ValueError), (-1, ValueError), (2**31, ValueError),
                                     (1.5, TypeError), ("271", TypeError), (True, TypeError),
                                     (None, TypeError)])
def test_bad_partition_count(pc, exc):
    _raises(exc, "partition_count", hzfast.partition_ids, [1, 2], pc)
    _raises(exc, "partition_count", hzfast.partition_id, "a", pc)
    _raises(exc, "partition_count", hzfast.partition_ids, np.array([1], np.int64), pc)


def test_partition_count_numpy_int_ok():
    assert hzfast.partition_id("a", np.int64(271)) == 73
    assert hzfast.partition_ids(["a"], np.int32(271)).tolist() == [73]


@pytest.mark.parametrize("key_type, exc", [("str", ValueError), ("Long", ValueError),
                                           ("bytes", ValueError), (1, TypeError),
                                           (str, TypeError)])
def test_unknown_key_type(key_type, exc):
    _raises(exc, "key_type", hzfast.partition_ids, [1], 271, key_type)
    _raises(exc, "key_type", hzfast.partition_id, 1, 271, key_type)
    _raises(exc, "key_type", hzfast.partition_hash, [1], key_type)
    _raises(exc, "key_type", hzfast.serialize_key, 1, key_type)


@pytest.mark.parametrize("keys, key_type", [
    (["a"], "int"), (["a"], "long"), (["a"], "data"), ([1], "string"), ([1], "data"),
    (np.array([1], np.int32), "string"), (np.array([1], np.int64), "data"),
    (np.array(["a"]), "int"), (pa.array(["a"]), "long"), (pa.array(["a"]), "data"),
    (pa.array([1], pa.int64()), "string"), (pa.array([b"12345678"]), "string"),
    ([b"12345678"], "string"),
])
def test_key_type_mismatch(keys, key_type):
    _raises(TypeError, "key_type=.*does not match", hzfast.partition_ids, keys, 271, key_type)


def test_scalar_bad_keys():
    _raises(ValueError, "key is None", hzfast.partition_id, None)
    _raises(ValueError, "key is None", hzfast.serialize_key, None)
    _raises(TypeError, "bool", hzfast.partition_id, True)
    _raises(TypeError, "bool", hzfast.serialize_key, np.bool_(True))
    _raises(TypeError, "key must be a str, int or bytes", hzfast.serialize_key, 1.5)
    _raises(TypeError, "key_type=.*does not match", hzfast.serialize_key, "a", "int")
    _raises(TypeError, "key_type=.*does not match", hzfast.serialize_key, 1, "string")
    _raises(TypeError, "key_type='data' needs bytes", hzfast.serialize_key, "abcdefgh", "data")
    _raises(ValueError, "key is 7 bytes", hzfast.serialize_key, b"1234567", "data")
    _raises(ValueError, "key is 0 bytes", hzfast.partition_id, b"")
    _raises(ValueError, "keys is 3 bytes", hzfast.partition_hash, b"abc", "data")
    _raises(TypeError, "use partition_ids", hzfast.partition_id, ["a", "b"])
    _raises(ValueError, "cannot be encoded as UTF-8", hzfast.partition_id, "\udfff")


def test_murmur_bad_input():
    _raises(TypeError, "data must be bytes-like, got str", hzfast.murmur3_x86_32, "abc")
    _raises(TypeError, "data must be bytes-like", hzfast.murmur3_x64_64, 123)
    _raises(TypeError, "data must be bytes-like", hzfast.murmur3_x64_64, None)
    _raises(ValueError, "data must be C-contiguous", hzfast.murmur3_x86_32,
            memoryview(b"abcdef")[::2])
    _raises(ValueError, "seed", hzfast.murmur3_x86_32, b"a", 2**32)
    _raises(ValueError, "seed", hzfast.murmur3_x64_64, b"a", -(2**31) - 1)
    _raises(TypeError, "seed", hzfast.murmur3_x86_32, b"a", 1.0)
    # numpy arrays are hashed as their raw bytes
    a = np.arange(10, dtype=np.int32)
    assert hzfast.murmur3_x86_32(a) == mmh3.hash(a.tobytes(), SEED, signed=True)
    assert hzfast.murmur3_x64_64(a) == R.murmur3_x64_64(a.tobytes())


@pytest.mark.parametrize("bad, exc, match", [
    (np.zeros(4, np.int64), TypeError, "versions must have dtype int32"),
    (np.zeros(4, np.float32), TypeError, "versions must have dtype int32"),
    (np.zeros(4, np.uint32), TypeError, "versions must have dtype int32"),
    (np.zeros((2, 2), np.int32), ValueError, "versions must be 1-dimensional"),
    (np.arange(8, dtype=np.int32)[::2], ValueError, "versions must be C-contiguous"),
    ([1.5, 2.5], TypeError, "versions must hold integers"),
    ([2**31], ValueError, "versions holds values outside int32"),
    ("abc", TypeError, "versions must be"),
    (None, TypeError, "versions must be"),
])
def test_stamp_bad_input(bad, exc, match):
    before = bad.copy() if isinstance(bad, np.ndarray) else None
    _raises(exc, match, hzfast.stamp, bad)
    if before is not None:
        assert np.array_equal(bad, before)


def test_public_names():
    for name in ("murmur3_x86_32", "murmur3_x64_64", "stamp", "serialize_key",
                 "partition_hash", "partition_id", "partition_ids"):
        assert name in H.__all__ and getattr(hzfast, name) is getattr(H, name)
        assert getattr(H, name).__doc__ and "Examples" in getattr(H, name).__doc__
