"""hzfast.ignite.hashing: Java hashCode and key -> partition vs. the Ignite vectors and the
pure-Python reference."""
import random
import uuid

import numpy as np
import pyarrow as pa
import pytest

from hzfast.ignite import hashing
from hzfast.reference import ignite as ref

JAVA_TYPES = {"java.lang.String": "string", "java.lang.Integer": "int",
              "java.lang.Long": "long", "java.util.UUID": "uuid"}



# --------------------------------------------------------------------------- hashCode / partition
def test_key_to_partition_rule_text(ignite_vectors):
    # The rule we implement; fail loudly if the vector file's rule ever changes.
    rule = ignite_vectors["key_to_partition"]["rule"]
    assert "(h ^ (h >>> 16)) & mask" in rule and "safeAbs(Integer.MIN_VALUE)=0" in rule



def test_key_to_partition_vectors_scalar(ignite_vectors):
    vecs = ignite_vectors["key_to_partition"]["vectors"]
    assert len(vecs) == 41
    for v in vecs:
        kt = JAVA_TYPES[v["type"]]
        key = uuid.UUID(v["key"]) if kt == "uuid" else v["key"]
        assert hashing.java_hash_code(key, key_type=kt) == v["hashCode"], v
        if kt != "long":  # Long keys need key_type; others infer it
            assert hashing.java_hash_code(key) == v["hashCode"], v
        for parts, expected in v["partition"].items():
            assert hashing.partition_id(key, int(parts), key_type=kt) == expected, (v, parts)
            assert ref.partition(key, int(parts), kt) == expected, (v, parts)



@pytest.mark.parametrize("form", ["list", "numpy", "arrow", "chunked"])
def test_key_to_partition_vectors_bulk(ignite_vectors, form):
    vecs = ignite_vectors["key_to_partition"]["vectors"]
    for java_type, kt in JAVA_TYPES.items():
        group = [v for v in vecs if v["type"] == java_type]
        keys = [v["key"] for v in group]
        if kt == "uuid":
            if form != "list":
                continue
            keys = [uuid.UUID(k) for k in keys]
        elif form == "numpy":
            dtype = {"string": np.str_, "int": np.int32, "long": np.int64}[kt]
            keys = np.array(keys, dtype=dtype)
        elif form in ("arrow", "chunked"):
            typ = {"string": pa.string(), "int": pa.int32(), "long": pa.int64()}[kt]
            keys = pa.array(keys, type=typ)
            if form == "chunked":
                keys = pa.chunked_array([keys[:2], keys[2:]])
        hashes = hashing.java_hash_code(keys, key_type=kt)
        assert hashes.dtype == np.int32
        assert hashes.tolist() == [v["hashCode"] for v in group], (java_type, form)
        for parts in ("1024", "32768", "1000", "20000", "65000"):
            got = hashing.partition_ids(keys, int(parts), key_type=kt)
            assert got.dtype == np.int32
            assert got.tolist() == [v["partition"][parts] for v in group], (java_type, parts)



def test_dtype_inference_int32_vs_int64(ignite_vectors):
    # numpy int32 keys are Integers, int64 Longs: -1 hashes to -1 vs 0.
    assert hashing.java_hash_code(np.array([-1, -46], np.int32)).tolist() == [-1, -46]
    assert hashing.java_hash_code(np.array([-1, -46], np.int64)).tolist() == [0, 45]
    assert hashing.java_hash_code([-1, -46], key_type="long").tolist() == [0, 45]
    assert hashing.java_hash_code(np.int64(-1)) == 0
    assert hashing.java_hash_code(np.int32(-1)) == -1
    assert hashing.java_hash_code(2**40, key_type="long") == ref.long_hash(2**40)



def test_legacy_examples_use_current_rule(ignite_vectors):
    for ex in ignite_vectors["key_to_partition_legacy_examples"]:
        assert hashing.java_hash_code(ex["key"]) == ex["hashCode"]
        got = hashing.partition_id(ex["key"], ex["parts"])
        assert got == ex["current_mask_rule"]
        assert got != ex["legacy_mod_rule"]  # pre-mask Ignite (abs(h) % parts) differs



def test_pyignite_pow2_agrees_with_java(ignite_vectors):
    py = ignite_vectors["pyignite"]
    assert len(py["pow2"]) == 35
    for v in py["pow2"]:
        kt = v["key_type"].lower().replace("integer", "int")
        key = uuid.UUID(v["key"]) if kt == "uuid" else v["key"]
        assert hashing.java_hash_code(key, key_type=kt) == v["java_hash"], v
        got = hashing.partition_id(key, v["partitions"], key_type=kt)
        assert got == v["java_partition"] == v["partition"], v  # pyignite agrees here
        if v["hash"] != v["java_hash"]:
            # pyignite 0.6.1 hashes Longs to unbounded Python ints (not (int)(v ^ v>>>32));
            # only the low bits survive its mask, so the partition still agrees.
            assert kt == "long"



def test_pyignite_differences_documented(ignite_vectors):
    py = ignite_vectors["pyignite"]
    nb = py["non_bmp"]
    # Java hashes UTF-16 units (a non-BMP char counts twice); pyignite hashes code points.
    assert hashing.java_hash_code(nb["key"]) == nb["java_hash"] != nb["pyignite_hash"]
    assert hashing.partition_id(nb["key"], 1024) == nb["java_partition"] != \
        nb["pyignite_partition"]
    # pyignite 0.6.1 uses abs(hash // parts) for non-power-of-two counts: wrong or crashes.
    # (partition count 1000; pyignite hashes Python ints as LongObject, i.e. Java Long.)
    parts = 1000
    assert len(py["non_pow2"]) == 9
    for v in py["non_pow2"]:
        kt = "string" if isinstance(v["key"], str) else "long"
        got = hashing.partition_id(v["key"], parts, key_type=kt)
        assert got == v["java_partition"] == ref.partition(v["key"], parts, kt), v
        assert got != v["pyignite_partition"]  # an int or the string 'AssertionError'



def test_string_hash_non_bmp_and_surrogates():
    s = "a\U0001F600b\u00e9\u65e5"
    assert hashing.java_hash_code(s) == ref.string_hash(s)
    # Lone surrogates are legal Java chars: hashed as the unit itself (scalar path).
    assert hashing.java_hash_code("x\ud800") == 31 * ord("x") + 0xD800
    # A surrogate pair written as two code points hashes like the real character.
    assert hashing.java_hash_code("\ud83d\ude00") == hashing.java_hash_code("\U0001F600")



def _random_strings(rng, n):
    alphabet = ["a", "Z", "0", ":", "é", "ж", "日", "キ", "\U0001F600", "\U00010348", "\u07ff",
                "\u0800", "\uffff", "\U0010FFFF"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
            for _ in range(n)]



@pytest.mark.parametrize("parts", [1, 2, 1000, 1024, 271, 65000, 32768])
def test_bulk_strings_match_reference(parts):
    rng = random.Random(parts)
    keys = _random_strings(rng, 300)
    expected = [ref.partition(k, parts) for k in keys]
    exp_hash = [ref.string_hash(k) for k in keys]
    assert hashing.java_hash_code(keys).tolist() == exp_hash
    assert hashing.partition_ids(keys, parts).tolist() == expected
    assert hashing.partition_ids(tuple(keys), parts).tolist() == expected
    assert hashing.partition_ids(np.array(keys), parts).tolist() == expected
    assert hashing.partition_ids(np.array(keys, dtype=object), parts).tolist() == expected
    for typ in (pa.string(), pa.large_string()):
        arr = pa.array(keys, type=typ)
        assert hashing.partition_ids(arr, parts).tolist() == expected
        # sliced arrays (non-zero offset) and multi-chunk arrays
        assert hashing.partition_ids(arr[7:], parts).tolist() == expected[7:]
        chunked = pa.chunked_array([arr[:100], arr[100:250], arr[250:]])
        assert hashing.partition_ids(chunked, parts).tolist() == expected



@pytest.mark.parametrize("parts", [1, 3, 1000, 1024, 65000])
def test_bulk_ints_match_reference(parts):
    rng = np.random.default_rng(parts)
    v32 = rng.integers(-2**31, 2**31, 500, dtype=np.int64).astype(np.int32)
    v32[:3] = [-2**31, 2**31 - 1, 0]
    v64 = rng.integers(-2**63, 2**63 - 1, 500, dtype=np.int64)
    v64[:3] = [-2**63, 2**63 - 1, -1]
    exp32 = [ref.partition(int(x), parts, "int") for x in v32]
    exp64 = [ref.partition(int(x), parts, "long") for x in v64]
    assert hashing.partition_ids(v32, parts).tolist() == exp32
    assert hashing.partition_ids(v32.tolist(), parts).tolist() == exp32
    assert hashing.partition_ids(pa.array(v32), parts).tolist() == exp32
    assert hashing.partition_ids(v64, parts).tolist() == exp64
    assert hashing.partition_ids(pa.array(v64), parts).tolist() == exp64
    assert hashing.partition_ids(v64.tolist(), parts, key_type="long").tolist() == exp64
    assert hashing.java_hash_code(v64).tolist() == [ref.long_hash(int(x)) for x in v64]



def test_empty_batches():
    assert hashing.partition_ids([], 1024).shape == (0,)
    assert hashing.partition_ids(np.array([], np.int64)).dtype == np.int32
    assert hashing.partition_ids(pa.array([], pa.string())).shape == (0,)
    assert hashing.partition_ids(["", ""]).tolist() == [0, 0]



def test_uuid_keys_bulk(ignite_vectors):
    us = [uuid.UUID(int=random.Random(1).getrandbits(128)) for _ in range(5)] + [uuid.UUID(int=0)]
    expected = [ref.uuid_hash(u) for u in us]
    assert hashing.java_hash_code(us).tolist() == expected
    assert hashing.java_hash_code([str(u) for u in us], key_type="uuid").tolist() == expected
    assert hashing.partition_ids(us, 1000).tolist() == [ref.partition_from_hash(h, 1000)
                                                        for h in expected]



def test_uuid_keys_object_array_and_mixed():
    us = [uuid.UUID(int=5), uuid.UUID(int=2**127 + 9)]
    arr = np.array(us, dtype=object)
    assert hashing.java_hash_code(arr).tolist() == [ref.uuid_hash(u) for u in us]
    with pytest.raises(TypeError, match=r"keys\[1\]"):
        hashing.java_hash_code([us[0], 5])



def test_arrow_invalid_utf8_rejected():
    offsets = np.array([0, 1, 3], dtype=np.int32)
    data = np.frombuffer(b"a\xc3\x28", dtype=np.uint8)
    arr = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(offsets.tobytes()),
                                                 pa.py_buffer(data.tobytes())])
    with pytest.raises(ValueError, match=r"keys\[1\] is not valid UTF-8"):
        hashing.partition_ids(arr)



def test_long_mostly_ascii_strings_match_reference():
    # exercises the kernel's 4-byte ASCII fast path and its hand-over to the UTF-8 decoder
    rng = random.Random(11)
    alphabet = "abcXYZ019:-_ " * 6 + "éж日\U0001F600"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 90)))
            for _ in range(400)]
    expected = [ref.string_hash(k) for k in keys]
    assert hashing.java_hash_code(keys).tolist() == expected
    assert hashing.java_hash_code(pa.array(keys, pa.large_string())).tolist() == expected
    for k in keys[:50]:
        assert hashing.java_hash_code(k) == ref.string_hash(k)



def test_arrow_offsets_outside_data_rejected():
    # pyarrow's from_buffers checks only the first and last offsets: the kernel must not read
    # past the data for the others, and the error names the key.
    data = pa.py_buffer(b"abc")
    for offsets in ([0, 9, 3], [0, 100_000_000, 3], [0, -5, 3], [0, 2, 1]):
        buf = pa.py_buffer(np.array(offsets, dtype=np.int32).tobytes())
        arr = pa.Array.from_buffers(pa.string(), 2, [None, buf, data])
        with pytest.raises(ValueError, match=r"keys\[\d\]: offsets point outside"):
            hashing.partition_ids(arr)
        with pytest.raises(ValueError, match=r"keys\[\d\]: offsets point outside"):
            hashing.java_hash_code(arr)


def test_int_key_messages_shared_with_batches():
    # one integer key and a batch report an out-of-range value in the same words
    with pytest.raises(ValueError, match=r"^key = 1099511627776 does not fit a Java Integer"):
        hashing.partition_id(2**40)
    with pytest.raises(ValueError, match=r"^keys\[1\] = 1099511627776 does not fit a Java "
                                         r"Integer"):
        hashing.partition_ids([1, 2**40])
    with pytest.raises(ValueError, match=r"^keys = 18446744073709551616 does not fit a Java "
                                         r"Long"):
        hashing.java_hash_code(2**64, key_type="long")
    with pytest.raises(TypeError, match=r"key_type='string' does not match an int key"):
        hashing.java_hash_code(5, key_type="string")


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad,exc", [(0, ValueError), (65001, ValueError), (-1, ValueError),
                                     (1024.0, TypeError), ("1024", TypeError),
                                     (True, TypeError), (None, TypeError)])
def test_bad_partitions(bad, exc):
    with pytest.raises(exc, match="partitions"):
        hashing.partition_ids(["a"], bad)
    with pytest.raises(exc, match="partitions"):
        hashing.partition_id("a", bad)


def test_partition_bounds_ok():
    assert hashing.partition_ids(["a"], 1).tolist() == [0]
    assert hashing.partition_ids(["a"], 65000).tolist() == [97]


def test_bad_keys():
    with pytest.raises(ValueError, match="keys"):
        hashing.partition_ids(None)
    with pytest.raises(ValueError, match="key"):
        hashing.partition_id(None)
    with pytest.raises(ValueError, match="keys"):
        hashing.java_hash_code(None)
    with pytest.raises(ValueError, match=r"keys\[1\] is None"):
        hashing.partition_ids(["a", None])
    with pytest.raises(ValueError, match=r"keys\[1\] is null"):
        hashing.partition_ids(pa.array(["a", None]))
    with pytest.raises(TypeError, match="keys"):
        hashing.partition_ids(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="keys"):
        hashing.partition_ids(np.array([1, 2], dtype=np.uint8))
    with pytest.raises(TypeError, match="keys"):
        hashing.partition_ids(pa.array([1.0]))
    with pytest.raises(TypeError, match="keys"):
        hashing.partition_ids(["a", 1])
    with pytest.raises(TypeError, match="keys"):
        hashing.partition_ids("abc")  # a single key is not a batch
    with pytest.raises(TypeError, match="key"):
        hashing.partition_id(["abc"])  # a batch is not a key
    with pytest.raises(TypeError, match="key"):
        hashing.partition_id(1.5)
    with pytest.raises(TypeError, match="bool"):
        hashing.partition_id(True)
    with pytest.raises(ValueError, match="key_type='long'"):
        hashing.partition_id(2**40)
    with pytest.raises(ValueError, match="keys"):
        hashing.partition_ids([1, 2**40])
    with pytest.raises(ValueError, match="Long"):
        hashing.java_hash_code(2**64, key_type="long")
    with pytest.raises(ValueError, match="key_type"):
        hashing.partition_ids(["a"], key_type="double")
    with pytest.raises(TypeError, match="key_type"):
        hashing.partition_ids(["a"], key_type=3)
    with pytest.raises(TypeError, match="key_type"):
        hashing.partition_ids(["a"], key_type="long")
    with pytest.raises(ValueError, match="serialized"):
        hashing.partition_ids([b"12345678"])
    with pytest.raises(ValueError, match=r"keys\[1\].*UUID"):
        hashing.java_hash_code(["00000000-0000-0000-0000-000000000001", "x"], key_type="uuid")
    with pytest.raises(ValueError, match="keys"):
        hashing.partition_ids(np.zeros((2, 2), np.int64))



def test_inputs_not_mutated():
    keys = np.array([5, -7, 2**40], dtype=np.int64)
    keys_copy = keys.copy()
    strs = ["a", "\U0001F600"]
    hashing.partition_ids(keys, 1000)
    hashing.partition_ids(strs)
    assert (keys == keys_copy).all()
    assert strs == ["a", "\U0001F600"]
    ro = np.array([1, 2, 3], np.int32)
    ro.flags.writeable = False
    assert hashing.partition_ids(ro, 1000).tolist() == [1, 2, 3]
