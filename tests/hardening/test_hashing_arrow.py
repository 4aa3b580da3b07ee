"""Class 1 of the hardening issue: Arrow buffers reach the kernels only through one check.

Both paths (Hazelcast ``partition_ids``/``partition_hash`` and Ignite ``partition_ids``/
``java_hash_code``) walk Arrow offsets with the same routine (``item_span`` in
``hzfast/_hashing.pxd``) and report a bad item with the same message
(``hzfast._keys.malformed_item``). Every form: string, large_string, binary (serialized
Hazelcast data), sliced arrays, null bitmaps, chunked arrays, missing buffers. Results of
well-formed arrays equal the pure-Python references.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import hzfast
from hzfast import _keys, ignite
from hzfast.reference import hashing as ref_hz
from hzfast.reference import ignite as ref_ig

WORDS = ["alpha", "", "bé", "\U0001F600x", "key", "hello world, a longer key", "z"]

# every public entry point that takes Arrow strings: (name, function, reference per key)
STRING_PATHS = [
    ("hazelcast.partition_ids", lambda a: hzfast.partition_ids(a, 271),
     lambda s: ref_hz.partition_id(s, 271)),
    ("hazelcast.partition_hash", lambda a: hzfast.partition_hash(a),
     lambda s: ref_hz.partition_hash(s)),
    ("ignite.partition_ids", lambda a: ignite.partition_ids(a, 1000),
     lambda s: ref_ig.partition(s, 1000)),
    ("ignite.java_hash_code", lambda a: ignite.java_hash_code(a),
     lambda s: ref_ig.hash_code(s)),
]
PATH_IDS = [p[0] for p in STRING_PATHS]


def hostile(offsets, type_=None, data=b"hello world"):
    """An Arrow array built straight from buffers (Arrow's own check only looks at the
    first and last offsets, so the ones in between can be anything)."""
    type_ = pa.string() if type_ is None else type_
    dt = np.int64 if type_ in (pa.large_string(), pa.large_binary()) else np.int32
    return pa.Array.from_buffers(type_, len(offsets) - 1,
                                 [None, pa.py_buffer(np.array(offsets, dt).tobytes()),
                                  pa.py_buffer(data)])


BAD_OFFSETS = {
    "past the data": [0, 1000, 5, 11],
    "negative": [0, -5, 6, 11],
    "decreasing": [0, 5, 3, 11],
    "int32 max": [0, 2**31 - 1, 3, 11],
    "int32 min": [0, -(2**31), 3, 11],
}


@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
@pytest.mark.parametrize("type_", [pa.string(), pa.large_string()], ids=str)
@pytest.mark.parametrize("offsets", list(BAD_OFFSETS.values()), ids=list(BAD_OFFSETS))
def test_malformed_string_offsets_are_refused_the_same_way(path, type_, offsets):
    _, fn, _ = path
    arr = hostile(offsets, type_)
    before = arr.buffers()[1].to_pybytes()
    with pytest.raises(ValueError, match=r"^keys\[[01]\]: offsets point outside the data "
                                         r"buffer \(.*malformed Arrow array\)$"):
        fn(arr)
    assert arr.buffers()[1].to_pybytes() == before     # input unchanged


@pytest.mark.parametrize("type_", [pa.binary(), pa.large_binary()], ids=str)
@pytest.mark.parametrize("offsets", [[0, 1000, 5], [0, -5, 6], [9, 1, 2], [0, 2**31 - 1, 3],
                                     [0, -(2**31), 3]],
                         ids=["past", "negative", "decreasing", "int32 max", "int32 min"])
def test_malformed_binary_offsets_name_the_offsets_not_a_length(type_, offsets):
    # Before: "keys[1] is -995 bytes: serialized Hazelcast data needs at least 8"
    data = hzfast.serialize_key("a") + b"xyz"
    arr = hostile(offsets + [len(data)], type_, data)
    with pytest.raises(ValueError, match=r"offsets point outside the data buffer"):
        hzfast.partition_ids(arr)
    with pytest.raises(ValueError, match=r"no Ignite partition"):
        ignite.partition_ids(arr)


def test_short_serialized_data_is_named_after_the_kernel_check():
    arr = pa.array([hzfast.serialize_key("a"), b"\x00" * 7], pa.binary())
    with pytest.raises(ValueError, match=r"^keys\[1\] is 7 bytes: serialized Hazelcast data "
                                         r"needs at least 8"):
        hzfast.partition_ids(arr)


@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
def test_invalid_utf8_is_refused_or_hashed_as_documented(path):
    name, fn, _ = path
    arr = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(
        np.array([0, 2], np.int32).tobytes()), pa.py_buffer(b"\xff\xfe")])
    if name.startswith("ignite"):   # Java decodes UTF-16 units from the bytes: must be UTF-8
        with pytest.raises(ValueError, match=r"^keys\[0\] is not valid UTF-8$"):
            fn(arr)
    else:   # Hazelcast hashes the bytes it is given
        assert fn(arr).shape == (1,)


@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
@pytest.mark.parametrize("type_", [pa.string(), pa.large_string()], ids=str)
def test_sliced_arrays_honour_their_offset(path, type_):
    _, fn, ref = path
    arr = pa.array(WORDS * 5, type_)
    for start, stop in [(0, 0), (1, 4), (3, 35), (7, 8), (34, 35)]:
        part = arr.slice(start, stop - start)
        want = [ref(s) for s in (WORDS * 5)[start:stop]]
        assert fn(part).tolist() == want


@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
def test_nulls_are_named_by_position_and_ignored_outside_a_slice(path):
    _, fn, ref = path
    arr = pa.array(["a", None, "b", "c", None, "d"], pa.string())
    with pytest.raises(ValueError, match=r"^keys\[1\] is null"):
        fn(arr)
    assert fn(arr.slice(2, 2)).tolist() == [ref("b"), ref("c")]   # no null inside
    with pytest.raises(ValueError, match=r"^keys\[2\] is null"):
        fn(arr.slice(2, 3))


@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
def test_chunked_arrays_equal_the_whole_and_name_global_positions(path):
    _, fn, ref = path
    chunks = pa.chunked_array([WORDS[:3], WORDS[3:], [], ["q"]], pa.string())
    assert fn(chunks).tolist() == [ref(s) for s in WORDS + ["q"]]
    bad = pa.chunked_array([["a", "b"], ["c", None]], pa.string())
    with pytest.raises(ValueError, match=r"^keys\[3\] is null"):   # not keys[1]
        fn(bad)
    assert fn(pa.chunked_array([], pa.string())).tolist() == []


def test_chunked_malformed_chunk_is_named_by_global_position():
    good = pa.array(["x", "y", "z"])
    bad = hostile([0, 1000, 5, 11])
    with pytest.raises(ValueError, match=r"^keys\[3\]: offsets point outside"):
        hzfast.partition_ids(pa.chunked_array([good, bad]))
    with pytest.raises(ValueError, match=r"^keys\[3\]: offsets point outside"):
        ignite.partition_ids(pa.chunked_array([good, bad]))


@pytest.mark.parametrize("system", ["hazelcast", "ignite"])
@pytest.mark.parametrize("type_", [pa.int32(), pa.int64()], ids=str)
def test_arrow_integers_sliced_and_with_nulls(system, type_):
    values = [5, -1, 2**31 - 1, -(2**31), 0, 77]
    arr = pa.array(values, type_)
    long_ = type_ == pa.int64()
    if system == "hazelcast":
        got = hzfast.partition_ids(arr.slice(1, 4)).tolist()
        want = [ref_hz.partition_id(v, 271, "long" if long_ else "int") for v in values[1:5]]
        fn = hzfast.partition_ids
    else:
        got = ignite.partition_ids(arr.slice(1, 4), 1000).tolist()
        want = [ref_ig.partition(v, 1000, "long" if long_ else "int") for v in values[1:5]]
        fn = ignite.partition_ids
    assert got == want
    with pytest.raises(ValueError, match=r"^keys\[2\] is null"):
        fn(pa.array([1, 2, None], type_))


class _FakeArrow:
    """An array whose buffers do not cover it (what a buggy producer's C data could look
    like); only the attributes ``_keys`` reads."""

    def __init__(self, buffers, length, offset=0):
        self._buffers, self._length, self.offset = buffers, length, offset

    def buffers(self):
        return self._buffers

    def __len__(self):
        return self._length


@pytest.mark.parametrize("buffers, length, offset", [
    ([None, None, pa.py_buffer(b"abc")], 2, 0),                       # no offsets at all
    ([None, pa.py_buffer(np.array([0, 1], np.int32).tobytes()), None], 2, 0),   # too short
    ([None, pa.py_buffer(np.array([0, 1, 2], np.int32).tobytes()), None], 2, 1),  # offset
])
def test_buffers_shorter_than_the_array_are_refused(buffers, length, offset):
    with pytest.raises(ValueError, match=r"^keys: malformed Arrow array: its buffer 1 is "):
        _keys._arrow_buffer(_FakeArrow(buffers, length, offset), 1,
                            (offset + length + 1) * 4, "keys")


def test_all_empty_strings_without_a_data_buffer():
    arr = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(
        np.zeros(4, np.int32).tobytes()), pa.py_buffer(b"")])
    assert hzfast.partition_ids(arr).tolist() == [ref_hz.partition_id("", 271)] * 3
    assert ignite.partition_ids(arr).tolist() == [ref_ig.partition("", 1024)] * 3


def test_one_offsets_routine_for_both_paths():
    # the Ignite kernel cimports the Hazelcast kernels' item_span instead of its own check
    from pathlib import Path
    root = Path(hzfast.__file__).parent
    ig_src = (root / "ignite" / "_hash.pyx").read_text()
    hz_src = (root / "_hashing.pyx").read_text()
    assert "from hzfast._hashing cimport item_span" in ig_src
    assert ig_src.count("item_span(") == 1 and hz_src.count("item_span(") == 1
    assert "def item_span" not in ig_src and "cdef inline bint item_span" in \
        (root / "_hashing.pxd").read_text()


# --------------------------------------------------------------------------- dictionaries
@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
def test_dictionary_arrays_hash_through_their_dictionary(path):
    _, fn, ref = path
    words = WORDS * 3
    arr = pa.array(words).dictionary_encode()
    assert fn(arr).tolist() == [ref(s) for s in words]
    assert fn(arr.slice(4, 9)).tolist() == [ref(s) for s in words[4:13]]
    chunked = pa.chunked_array([pa.array(WORDS[:4]).dictionary_encode(),
                                pa.array(WORDS[4:]).dictionary_encode()])
    assert fn(chunked).tolist() == [ref(s) for s in WORDS]


@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
def test_dictionary_nulls_and_bad_indices(path):
    _, fn, _ = path
    with pytest.raises(ValueError, match=r"^keys\[1\] is null"):
        fn(pa.array(["a", None, "b"]).dictionary_encode())
    # a null only in the dictionary, referenced through a valid index
    x = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["a", None]))
    with pytest.raises(ValueError, match=r"^keys\[1\] is null"):
        fn(x)
    bad = pa.DictionaryArray.from_arrays(pa.array([0, 5, -1], pa.int8()), pa.array(["a"]),
                                         safe=False)
    with pytest.raises(ValueError, match=r"^keys\[1\]: dictionary index 5 is outside its "
                                         r"dictionary of 1 values \(malformed Arrow array\)"):
        fn(bad)


_BIG_DICTIONARY = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))   # a regression fails, cleanly
import numpy as np, pyarrow as pa, hzfast, hzfast.ignite as ignite
big = pa.DictionaryArray.from_arrays(pa.array(np.zeros(1_000_000, np.int32)),
                                     pa.array(["v" * 1_000_000], pa.large_string()))
assert (hzfast.partition_ids(big) == hzfast.partition_id("v" * 1_000_000)).all()
assert (ignite.partition_ids(big, 1000) == ignite.partition_id("v" * 1_000_000, 1000)).all()
import pandas as pd   # a categorical Series arrives as an Arrow dictionary array
cat = pd.Series(pd.Categorical.from_codes(np.zeros(1_000_000, np.int8), ["v" * 1_000_000]))
assert (hzfast.partition_ids(cat) == hzfast.partition_id("v" * 1_000_000)).all()
assert (ignite.partition_ids(cat) == ignite.partition_id("v" * 1_000_000)).all()
print("ok")
"""


def test_a_dictionary_is_never_decoded_into_copies_of_its_values():
    # 1,000,000 keys all naming one 1 MB string: decoding first needed a terabyte (the
    # process was killed); through the dictionary it is one hash and one index per key.
    # In a subprocess under a 4 GiB address-space limit, so a regression cannot take the
    # machine's memory.
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", _BIG_DICTIONARY], check=False,
                          capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


# --------------------------------------------------------------------------- views
@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
@pytest.mark.parametrize("piece", [_keys.PIECE_BYTES, 7], ids=["default", "7-bytes"])
def test_string_views_in_bounded_pieces(path, piece, monkeypatch):
    _, fn, ref = path
    monkeypatch.setattr(_keys, "PIECE_BYTES", piece)
    words = WORDS * 4
    arr = pa.array(words, pa.string_view())
    assert fn(arr).tolist() == [ref(s) for s in words]
    assert fn(arr.slice(3, 17)).tolist() == [ref(s) for s in words[3:20]]
    assert fn(pa.array([], pa.string_view())).tolist() == []
    with pytest.raises(ValueError, match=r"^keys\[9\] is null"):
        fn(pa.array(words[:9] + [None], pa.string_view()))


def test_a_bad_key_in_a_later_view_piece_is_named_by_its_position(monkeypatch):
    monkeypatch.setattr(_keys, "PIECE_BYTES", 4)
    def inline(b):   # a view holding its (<= 12) bytes itself: length, then the bytes
        return np.int32(len(b)).tobytes() + b + bytes(12 - len(b))

    views = b"".join(inline(x) for x in [b"ab", b"cd", b"\xff\xfe", b"x"])
    arr = pa.Array.from_buffers(pa.string_view(), 4, [None, pa.py_buffer(views)])
    with pytest.raises(ValueError, match=r"^keys\[2\] is not valid UTF-8"):
        ignite.partition_ids(arr)
    data = [hzfast.serialize_key(i) for i in range(5)] + [b"short"]
    with pytest.raises(ValueError, match=r"^keys\[5\] is 5 bytes"):
        hzfast.partition_ids(pa.array(data, pa.binary_view()))


_MANY_VIEWS = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))   # 1 GiB address space
import numpy as np, pyarrow as pa, hzfast, hzfast.ignite as ignite
n, size = 1200, 1_000_000       # 1.2 GB of key bytes, all in one 1 MB buffer
views = np.zeros((n, 4), np.int32)
views[:, 0] = size
views[:, 1] = np.frombuffer(b"vvvv", np.int32)[0]
arr = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views.tobytes()),
                                                  pa.py_buffer(b"v" * size)])
assert (hzfast.partition_ids(arr) == hzfast.partition_id("v" * size)).all()
assert (ignite.partition_ids(arr[:300]) == ignite.partition_id("v" * size)).all()
print("ok")
"""


def test_views_of_one_long_value_are_not_expanded_at_once():
    # converting the whole array first needed 1.2 GB (one copy per view); in pieces of
    # PIECE_BYTES it fits well under a 1 GiB address space
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", _MANY_VIEWS], check=False,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


# --------------------------------------------------------------------------- Arrow reads Arrow
# Where hzfast hands an array to Arrow itself (dictionary decoding, converting views,
# to_pylist for UUID batches), Arrow trusts the array: it is fully validated first.
def _hostile_view(length, buffer_index, offset):
    views = np.array([length, 0, buffer_index, offset], np.int32).tobytes()
    return pa.Array.from_buffers(pa.string_view(), 1, [None, pa.py_buffer(views),
                                                       pa.py_buffer(b"x" * 30)])


_HOSTILE_VIEW = """
import numpy as np, pyarrow as pa, hzfast, hzfast.ignite as ignite
views = np.array([1 << 20, 0, 0, 1 << 30], np.int32).tobytes()   # 1 MiB from offset 1 GiB
arr = pa.Array.from_buffers(pa.string_view(), 1, [None, pa.py_buffer(views),
                                                  pa.py_buffer(b"x" * 30)])
for fn in (hzfast.partition_ids, ignite.partition_ids, ignite.java_hash_code):
    try:
        fn(arr)
    except ValueError as exc:
        assert "malformed Arrow array" in str(exc), exc
    else:
        raise AssertionError("accepted")
print("ok")
"""


def test_a_view_pointing_outside_its_buffer_does_not_crash():
    # found while fuzzing: Arrow's cast read 1 MiB at offset 1 GiB (segmentation fault)
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", _HOSTILE_VIEW], check=False,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", \
        (proc.returncode, proc.stderr[-2000:])


@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
@pytest.mark.parametrize("length, buffer_index, offset, what", [
    (20, 3, 0, "references buffer 3"),
    (20, 0, 25, "references range 25-45"),
])
def test_hostile_views_are_refused(path, length, buffer_index, offset, what):
    _, fn, _ = path
    with pytest.raises(ValueError, match=rf"^keys: malformed Arrow array \(View .*{what}"):
        fn(_hostile_view(length, buffer_index, offset))


@pytest.mark.parametrize("path", STRING_PATHS, ids=PATH_IDS)
def test_dictionary_with_nulls_and_a_bad_index_is_validated_before_decoding(path):
    _, fn, _ = path
    d = pa.DictionaryArray.from_arrays(pa.array([0, 7], pa.int8()), pa.array(["a", None]),
                                       safe=False)
    with pytest.raises(ValueError, match=r"^keys: malformed Arrow array \(Dictionary "
                                         r"indices invalid"):
        fn(d)


@pytest.mark.parametrize("offsets", [[0, -5, 6, 11], [0, 2**40, 6, 11]],
                         ids=["negative", "far past"])
def test_uuid_batches_from_malformed_arrow_are_refused(offsets):
    # fuzz finding (ignite_hashing): key_type="uuid" read the strings with to_pylist,
    # which trusted the offsets (SystemError: negative size; MemoryError far past)
    arr = hostile(offsets, pa.large_string())
    for keys in (arr, pa.chunked_array([arr])):
        with pytest.raises(ValueError, match=r"^keys: malformed Arrow array \(.*[Oo]ffset"):
            ignite.java_hash_code(keys, key_type="uuid")
        with pytest.raises(ValueError, match=r"^keys: malformed Arrow array"):
            ignite.partition_ids(keys, key_type="uuid")
