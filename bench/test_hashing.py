"""Benchmarks for hzfast.hashing: table stamps and key -> partition ids (issue 2, "Speed").

Groups (one table each; competitors side by side, measured in one run):

* ``stamp-271`` / ``stamp-20000`` / ``stamp-100000``: :func:`hzfast.stamp` vs
  ``versions.astype('>i4').tobytes()`` + ``mmh3.hash64`` (the same work with a standard
  hash) vs the pure-Python reference (not at 100,000: too slow to be useful).
* ``ids-int64``: 10,000,000 int64 (Long) keys through :func:`hzfast.partition_ids`; the
  Python loops (mmh3 over serialized bytes + hashToIndex, hazelcast-python-client's
  serialize + hash, the pure-Python reference) run on samples: compare per-key rates.
* ``ids-arrow-str``: 10,000,000 short strings (6..16 ASCII bytes) in a pyarrow StringArray;
  same baselines on samples.
* ``ids-list-str``: a Python list of 1,000,000 str vs the mmh3 loop on a 100,000 sample.

Every test stores its key count in ``extra_info["keys"]``: the per-key time is
``stats.mean / keys``. Every result is checked inside the benchmark (the loops must give
the kernel's ids on their sample). CI runs this file with ``--benchmark-disable``.
"""
import struct

import mmh3
import numpy as np
import pytest

import hzfast
from hzfast.reference import hashing as ref

SEED = 0x01000193
PC = 271
N_KEYS = 10_000_000
N_LIST = 1_000_000
SAMPLE = 100_000          # mmh3 loops
SLOW_SAMPLE = 20_000      # hazelcast-python-client and the pure-Python reference
INT_MIN = -(2**31)

_pack_i = struct.Struct(">i").pack
_pack_q = struct.Struct(">q").pack


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module", params=[271, 20_000, 100_000], ids=lambda p: f"P{p}")
def versions(request):
    rng = np.random.default_rng(request.param)
    return rng.integers(0, 1000, request.param, dtype=np.int32)


@pytest.fixture(scope="module")
def int64_expected(int64_keys):
    return hzfast.partition_ids(int64_keys, PC)


@pytest.fixture(scope="module")
def string_expected(string_keys):
    return hzfast.partition_ids(string_keys, PC)


@pytest.fixture(scope="module")
def string_list(string_keys):
    return string_keys.slice(0, N_LIST).to_pylist()


@pytest.fixture(scope="module")
def hz_services():
    from hazelcast.config import Config, IntType
    from hazelcast.serialization.service import SerializationServiceV1

    cfg = Config()
    cfg.default_int_type = IntType.LONG
    return SerializationServiceV1(Config()), SerializationServiceV1(cfg)


def _to_index(h, n):
    return 0 if h == INT_MIN else abs(h) % n


# --------------------------------------------------------------------------- loops (baselines)
def mmh3_loop_long(keys, n=PC):
    out = []
    for k in keys:
        h = mmh3.hash(_pack_q(k), SEED, signed=True)
        out.append(0 if h == INT_MIN else abs(h) % n)
    return out


def mmh3_loop_payloads(payloads, n=PC):
    out = []
    for p in payloads:
        h = mmh3.hash(p, SEED, signed=True)
        out.append(0 if h == INT_MIN else abs(h) % n)
    return out


def mmh3_loop_str(keys, n=PC):
    out = []
    for s in keys:
        e = s.encode()
        h = mmh3.hash(_pack_i(len(e)) + e, SEED, signed=True)
        out.append(0 if h == INT_MIN else abs(h) % n)
    return out


def client_loop(service, keys, n=PC):
    from hazelcast.hash import hash_to_index
    return [hash_to_index(service.to_data(k).get_partition_hash(), n) for k in keys]


# --------------------------------------------------------------------------- stamp
def _stamp_group(benchmark, versions):
    benchmark.group = f"stamp-{versions.shape[0]}"
    benchmark.extra_info["keys"] = int(versions.shape[0])


def test_stamp_hzfast(benchmark, versions):
    _stamp_group(benchmark, versions)
    expected = hzfast.murmur3_x64_64(versions.astype(">i4").tobytes())
    assert benchmark(hzfast.stamp, versions) == expected


def test_stamp_mmh3_buffer(benchmark, versions):
    _stamp_group(benchmark, versions)
    h = benchmark(lambda v: mmh3.hash64(v.astype(">i4").tobytes(), SEED, signed=True), versions)
    assert h == mmh3.hash64(versions.byteswap().tobytes(), SEED, signed=True)


@pytest.mark.parametrize("P", [271, 20_000], ids=lambda p: f"P{p}")
def test_stamp_reference(benchmark, P):
    """The pure-Python reference, at the two smaller sizes (100,000 takes too long)."""
    versions = np.random.default_rng(P).integers(0, 1000, P, dtype=np.int32)
    _stamp_group(benchmark, versions)
    vl = versions.tolist()
    assert benchmark(ref.stamp, vl) == hzfast.stamp(versions)


# --------------------------------------------------------------------------- int64 keys
def test_ids_int64_hzfast(benchmark, int64_keys, int64_expected):
    benchmark.group = "ids-int64"
    benchmark.extra_info["keys"] = N_KEYS
    ids = benchmark(hzfast.partition_ids, int64_keys, PC)
    assert ids.shape == (N_KEYS,) and np.array_equal(ids, int64_expected)
    assert hzfast.partition_id(int(int64_keys[-1]), PC, "long") == ids[-1]


def test_ids_int64_mmh3_loop(benchmark, int64_keys, int64_expected):
    benchmark.group = "ids-int64"
    benchmark.extra_info["keys"] = SAMPLE
    sample = int64_keys[:SAMPLE].tolist()
    assert benchmark(mmh3_loop_long, sample) == int64_expected[:SAMPLE].tolist()


def test_ids_int64_mmh3_loop_preserialized(benchmark, int64_keys, int64_expected):
    benchmark.group = "ids-int64"
    benchmark.extra_info["keys"] = SAMPLE
    payloads = [_pack_q(k) for k in int64_keys[:SAMPLE].tolist()]
    assert benchmark(mmh3_loop_payloads, payloads) == int64_expected[:SAMPLE].tolist()


def test_ids_int64_hazelcast_client(benchmark, int64_keys, int64_expected, hz_services):
    benchmark.group = "ids-int64"
    benchmark.extra_info["keys"] = SLOW_SAMPLE
    sample = int64_keys[:SLOW_SAMPLE].tolist()
    got = benchmark(client_loop, hz_services[1], sample)
    assert got == int64_expected[:SLOW_SAMPLE].tolist()


def test_ids_int64_reference(benchmark, int64_keys, int64_expected):
    benchmark.group = "ids-int64"
    benchmark.extra_info["keys"] = SLOW_SAMPLE
    sample = int64_keys[:SLOW_SAMPLE].tolist()
    got = benchmark(lambda ks: [ref.partition_id(k, PC, "long") for k in ks], sample)
    assert got == int64_expected[:SLOW_SAMPLE].tolist()


# --------------------------------------------------------------------------- arrow strings
def test_ids_arrow_str_hzfast(benchmark, string_keys, string_expected):
    benchmark.group = "ids-arrow-str"
    benchmark.extra_info["keys"] = N_KEYS
    ids = benchmark(hzfast.partition_ids, string_keys, PC)
    assert ids.shape == (N_KEYS,) and np.array_equal(ids, string_expected)
    last = string_keys[N_KEYS - 1].as_py()
    assert hzfast.partition_id(last, PC) == ids[-1]


def test_ids_arrow_str_mmh3_loop(benchmark, string_keys, string_expected):
    benchmark.group = "ids-arrow-str"
    benchmark.extra_info["keys"] = SAMPLE
    sample = string_keys.slice(0, SAMPLE).to_pylist()
    assert benchmark(mmh3_loop_str, sample) == string_expected[:SAMPLE].tolist()


def test_ids_arrow_str_hazelcast_client(benchmark, string_keys, string_expected, hz_services):
    benchmark.group = "ids-arrow-str"
    benchmark.extra_info["keys"] = SLOW_SAMPLE
    sample = string_keys.slice(0, SLOW_SAMPLE).to_pylist()
    got = benchmark(client_loop, hz_services[0], sample)
    assert got == string_expected[:SLOW_SAMPLE].tolist()


def test_ids_arrow_str_reference(benchmark, string_keys, string_expected):
    benchmark.group = "ids-arrow-str"
    benchmark.extra_info["keys"] = SLOW_SAMPLE
    sample = string_keys.slice(0, SLOW_SAMPLE).to_pylist()
    got = benchmark(lambda ks: [ref.partition_id(k, PC) for k in ks], sample)
    assert got == string_expected[:SLOW_SAMPLE].tolist()


# --------------------------------------------------------------------------- list of str
def test_ids_list_str_hzfast(benchmark, string_list, string_expected):
    benchmark.group = "ids-list-str"
    benchmark.extra_info["keys"] = N_LIST
    ids = benchmark(hzfast.partition_ids, string_list, PC)
    assert np.array_equal(ids, string_expected[:N_LIST])


def test_ids_list_str_mmh3_loop(benchmark, string_list, string_expected):
    benchmark.group = "ids-list-str"
    benchmark.extra_info["keys"] = SAMPLE
    sample = string_list[:SAMPLE]
    assert benchmark(mmh3_loop_str, sample) == string_expected[:SAMPLE].tolist()
