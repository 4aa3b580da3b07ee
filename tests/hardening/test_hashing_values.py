"""Classes 3 and 4 of the hardening issue on the hashing side: no silent wrong answer, no
mutated input, and encoders that cannot overflow when the input changes.

* byte-swapped arrays (``'>i4'``, ``'>i8'``, ``'>U'``) are keys / versions by value;
* in a mixed list every key hashes exactly as the scalar ``partition_id`` of it;
* ``murmur3_*`` refuse buffers of Python object pointers;
* float, bool, 0-d, strided, empty inputs and odd partition counts: a result equal to
  the reference, or a TypeError/ValueError naming the argument;
* the ``'U'`` and ``list[str]`` encoders check their second pass against the first.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hzfast
from hzfast import _hashing, ignite
from hzfast.reference import hashing as ref_hz
from hzfast.reference import ignite as ref_ig

SWAPPED = ">" if np.little_endian else "<"


# --------------------------------------------------------------------------- byte order
@pytest.mark.parametrize("values", [[1, 2, 3], [], [-1, 2**31 - 1, -(2**31)], list(range(9))])
def test_stamp_of_byte_swapped_versions_is_by_value(values):
    native = np.array(values, np.int32)
    swapped = native.astype(SWAPPED + "i4")
    assert swapped.tobytes() != native.tobytes() or not values
    assert hzfast.stamp(swapped) == hzfast.stamp(native) == ref_hz.stamp(values)
    assert swapped.tolist() == values                      # input unchanged


@pytest.mark.parametrize("width", [4, 8])
def test_byte_swapped_integer_keys_are_hashed_by_value(width):
    values = [5, -1, 2**31 - 1, -(2**31), 0]
    native = np.array(values, np.int32 if width == 4 else np.int64)
    swapped = native.astype(f"{SWAPPED}i{width}")
    kind = "int" if width == 4 else "long"
    want = [ref_hz.partition_id(v, 271, kind) for v in values]
    assert hzfast.partition_ids(swapped).tolist() == want
    assert hzfast.partition_hash(swapped).tolist() == [ref_hz.partition_hash(v, kind)
                                                       for v in values]
    assert ignite.partition_ids(swapped, 1000).tolist() == [ref_ig.partition(v, 1000, kind)
                                                            for v in values]
    assert ignite.java_hash_code(swapped).tolist() == [ref_ig.hash_code(v, kind)
                                                       for v in values]
    assert swapped.tolist() == values


def test_byte_swapped_unicode_keys_are_hashed_by_value():
    words = ["ab", "", "é\U0001F600", "key"]
    swapped = np.array(words, dtype=SWAPPED + "U3")
    assert hzfast.partition_ids(swapped).tolist() == [ref_hz.partition_id(w) for w in words]
    assert ignite.partition_ids(swapped).tolist() == [ref_ig.partition(w) for w in words]


def test_unaligned_versions_and_keys():
    raw = np.zeros(4 * 9 + 1, np.uint8)
    raw[1:] = np.arange(9, dtype=np.int32).view(np.uint8)
    unaligned = raw[1:].view(np.int32)
    assert not unaligned.flags.aligned
    assert hzfast.stamp(unaligned) == ref_hz.stamp(list(range(9)))
    assert hzfast.partition_ids(unaligned).tolist() == [ref_hz.partition_id(i)
                                                        for i in range(9)]


# --------------------------------------------------------------------------- mixed lists
def _scalars(keys):
    return [hzfast.partition_id(k) for k in keys]


@pytest.mark.parametrize("keys", [
    [np.int64(5), 5],
    [5, np.int64(5)],
    [np.int32(5), np.int64(5), 5, np.int16(-3), np.uint8(200)],
    [np.int64(2**40), 7, np.int64(-1)],
    [np.int64(5)] * 3,
    [5, 6, 7],
])
def test_mixed_lists_hash_each_key_as_its_scalar(keys):
    assert hzfast.partition_ids(keys).tolist() == _scalars(keys)
    assert hzfast.partition_ids(tuple(keys)).tolist() == _scalars(keys)
    assert hzfast.partition_ids(np.array(keys, dtype=object)).tolist() == _scalars(keys)
    assert hzfast.partition_hash(keys).tolist() == [hzfast.partition_hash(k) for k in keys]
    assert ignite.partition_ids(keys, 1000).tolist() == [ignite.partition_id(k, 1000)
                                                         for k in keys]
    assert ignite.java_hash_code(keys).tolist() == [ignite.java_hash_code(k) for k in keys]


def test_mixed_list_with_an_integer_outside_int32_names_it():
    with pytest.raises(ValueError, match=r"^keys\[1\] = 4294967296 does not fit a Java "
                                         r"Integer"):
        hzfast.partition_ids([np.int64(1), 2**32])
    with pytest.raises(ValueError, match=r"^keys\[2\] = 4294967296 does not fit"):
        ignite.partition_ids([np.int64(1), 3, np.uint64(2**32)])


def test_key_type_still_overrides_every_key_of_a_mixed_list():
    keys = [np.int64(5), 5, np.int32(9)]
    assert hzfast.partition_ids(keys, key_type="long").tolist() == \
        [ref_hz.partition_id(int(k), 271, "long") for k in keys]
    assert hzfast.partition_ids(keys, key_type="int").tolist() == \
        [ref_hz.partition_id(int(k), 271, "int") for k in keys]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.integers(-(2**31), 2**31 - 1).map(np.int32)), min_size=1, max_size=20))
def test_mixed_lists_property(keys):
    assert hzfast.partition_ids(keys, 1009).tolist() == \
        [hzfast.partition_id(k, 1009) for k in keys]
    assert ignite.partition_ids(keys, 1000).tolist() == \
        [ignite.partition_id(k, 1000) for k in keys]


# --------------------------------------------------------------------------- murmur3
@pytest.mark.parametrize("fn", [hzfast.murmur3_x86_32, hzfast.murmur3_x64_64])
@pytest.mark.parametrize("data", [
    np.array([1, "a"], dtype=object),
    np.array([None], dtype=object),
    np.zeros(3, dtype=[("a", "i4"), ("b", "O")]),
], ids=["object", "none", "structured-with-object"])
def test_murmur3_refuses_object_pointers(fn, data):
    with pytest.raises(TypeError, match=r"^data .*(object|pointers)"):
        fn(data)


@pytest.mark.parametrize("fn", [hzfast.murmur3_x86_32, hzfast.murmur3_x64_64])
def test_murmur3_refuses_pointer_buffers_however_wrapped(fn):
    import ctypes
    with pytest.raises(TypeError, match=r"^data holds object pointers \(buffer format 'O'\)"):
        fn(memoryview(np.array([1, None], dtype=object)))
    with pytest.raises(TypeError, match=r"^data holds object pointers \(buffer format '<?P'\)"):
        fn((ctypes.c_void_p * 3)())


@pytest.mark.parametrize("fn, ref", [(hzfast.murmur3_x86_32, ref_hz.murmur3_x86_32),
                                     (hzfast.murmur3_x64_64, ref_hz.murmur3_x64_64)])
def test_murmur3_of_numeric_arrays_is_their_raw_bytes(fn, ref):
    for arr in (np.arange(10, dtype=np.int32), np.arange(5, dtype=">i8"),
                np.array([1.5, math.nan]), np.zeros((3, 4), np.uint16), np.empty(0, np.int8)):
        assert fn(arr) == ref(arr.tobytes())
    with pytest.raises(ValueError, match="C-contiguous"):
        fn(np.arange(10, dtype=np.int32)[::2])


# --------------------------------------------------------------------------- odd inputs
@pytest.mark.parametrize("fn", [lambda k: hzfast.partition_ids(k),
                                lambda k: ignite.partition_ids(k)], ids=["hz", "ignite"])
@pytest.mark.parametrize("keys, exc, match", [
    (np.array([1.5, 2.0]), TypeError, r"^keys must have dtype"),
    (np.array([math.nan]), TypeError, r"^keys must have dtype"),
    (np.array([True, False]), TypeError, r"^keys must have dtype"),
    (np.array(5), ValueError, r"^keys must be 1-dimensional"),
    (np.arange(6, dtype=np.int64).reshape(2, 3), ValueError, r"^keys must be 1-dimensional"),
    (np.arange(10, dtype=np.int64)[::2], ValueError, r"^keys must be C-contiguous"),
    (np.arange(3, dtype=np.uint32), TypeError, r"^keys must have dtype"),
    ([1.0, 2.0], TypeError, r"^keys\[0\] is a float"),
    ([True, 1], TypeError, r"^keys\[0\] is a bool"),
    ([1, "a"], TypeError, r"^keys\[1\] is a str"),
    (["a", None], ValueError, r"^keys\[1\] is None"),
    ([2**63], ValueError, r"^keys\[0\] = 9223372036854775808 does not fit a Java Long"),
    ({1, 2}, TypeError, r"^keys must be a list"),
])
def test_odd_batches_are_refused_naming_the_argument(fn, keys, exc, match):
    with pytest.raises(exc, match=match):
        fn(keys)


@pytest.mark.parametrize("empty", [[], (), np.empty(0, np.int64), np.empty(0, np.int32),
                                   np.empty(0, "U3"), np.empty(0, object)],
                         ids=["list", "tuple", "i8", "i4", "U", "object"])
def test_empty_batches(empty):
    for out in (hzfast.partition_ids(empty), hzfast.partition_hash(empty),
                ignite.partition_ids(empty), ignite.java_hash_code(empty)):
        assert out.dtype == np.int32 and out.shape == (0,)


@pytest.mark.parametrize("pc, exc", [(0, ValueError), (-1, ValueError), (2**31, ValueError),
                                     (2**40, ValueError), (math.nan, TypeError),
                                     (271.0, TypeError), (True, TypeError), ("271", TypeError),
                                     (None, TypeError)])
def test_bad_partition_counts(pc, exc):
    with pytest.raises(exc, match="^partition_count"):
        hzfast.partition_ids([1, 2], pc)
    with pytest.raises(exc, match="^partition_count"):
        hzfast.partition_id(1, pc)
    with pytest.raises(exc, match="^partitions"):
        ignite.partition_ids([1, 2], pc if pc != 2**31 else 65_001)


def test_largest_partition_count_is_exact():
    keys = list(range(-50, 50)) + [2**31 - 1, -(2**31)]
    assert hzfast.partition_ids(keys, 2**31 - 1).tolist() == \
        [ref_hz.partition_id(k, 2**31 - 1) for k in keys]
    assert hzfast.partition_ids(np.array(keys, np.int64), 2**31 - 1).tolist() == \
        [ref_hz.partition_id(k, 2**31 - 1, "long") for k in keys]


def test_inputs_are_never_changed():
    lst = ["a", "b", "é"]
    arr = np.array([3, 1, 2], np.int64)
    uarr = np.array(["x", "yy"])
    for call in (lambda: hzfast.partition_ids(lst), lambda: hzfast.partition_ids(arr),
                 lambda: hzfast.partition_ids(uarr), lambda: ignite.partition_ids(lst),
                 lambda: ignite.partition_ids(arr), lambda: ignite.partition_ids(uarr),
                 lambda: hzfast.stamp(arr.astype(np.int32))):
        call()
    assert lst == ["a", "b", "é"] and arr.tolist() == [3, 1, 2]
    assert uarr.tolist() == ["x", "yy"] and arr.flags.writeable and uarr.flags.writeable


# --------------------------------------------------------------------------- encoders
def test_encoders_report_status_and_position():
    assert _hashing.encode_str_list(["a", 1])[:2] == (_hashing.ENC_NOT_STR, 1)
    assert _hashing.encode_str_list(["a", "\ud800"])[:2] == (_hashing.ENC_SURROGATE, 1)
    status, _pos, offsets, data = _hashing.encode_str_list(["ab", "", "é"])
    assert (status, offsets.tolist(), data.tobytes()) == (_hashing.ENC_OK, [0, 2, 2, 4],
                                                          "abé".encode())
    cps = np.array(["ab", "\ud800"]).view(np.uint32).reshape(2, -1)
    assert _hashing.encode_utf32(cps)[:2] == (_hashing.ENC_SURROGATE, 1)
    cps = np.array(["ab", "é\U0001F600"]).view(np.uint32).reshape(2, -1)
    status, _, offsets, data = _hashing.encode_utf32(np.ascontiguousarray(cps))
    assert status == _hashing.ENC_OK and data.tobytes() == "abé\U0001F600".encode()


def test_lone_surrogates_are_refused_on_every_string_form():
    for keys in (["ok", "\ud800"], np.array(["ok", "\ud800"]), ("ok", "\udfff")):
        with pytest.raises(ValueError, match=r"^keys\[1\] cannot be encoded as UTF-8"):
            hzfast.partition_ids(keys)


def test_changed_status_gives_a_clean_error(monkeypatch):
    # what the caller sees when the encoder's second pass disagreed with the first
    from hzfast import _keys

    def changed(_codepoints):
        return _hashing.ENC_CHANGED, 3, None, None

    monkeypatch.setattr(_keys, "_encode_utf32", changed)
    with pytest.raises(ValueError, match=r"^keys\[3\] changed while it was being hashed"):
        hzfast.partition_ids(np.array(["a", "b", "c", "d"]))
