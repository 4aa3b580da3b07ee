"""Benchmarks for hzfast.ignite: rendezvous assignment and key -> partition.

Groups (one table each):
* ``ignite-assign-20000x16-b2``: hzfast kernel vs the pure-Python reference vs a vectorised
  numpy implementation (what a user would write without hzfast).
* ``ignite-partition-int64``: 10,000,000 int64 (Long) keys: hzfast vs a numpy expression;
  the pure-Python loop runs on a 100,000-key sample (compare per-key rates:
  ``extra_info["keys"]`` holds each test's key count).
* ``ignite-partition-strings``: 10,000,000 short ASCII strings in a pyarrow ``string`` array:
  hzfast (hashes the Arrow UTF-8 buffers directly) vs a Python loop over a 100,000 sample.

CI runs this file with ``--benchmark-disable`` (every benchmark once); all results are
checked against the reference inside the benchmark.
"""
import numpy as np
import pytest

from hzfast import ignite
from hzfast.reference import ignite as ref

P = 20_000
NODES = 16
BACKUPS = 2
N_KEYS = 10_000_000
SAMPLE = 100_000
PARTS = 1024


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def topology():
    cids = [f"10.0.0.{i}:47500" for i in range(NODES)]
    node_ids = [f"0000beef-0000-0000-0000-{i:012x}" for i in range(NODES)]
    return cids, node_ids


@pytest.fixture(scope="module")
def expected_assignment(topology):
    cids, node_ids = topology
    return np.array(ref.assign(cids, node_ids, partitions=P, backups=BACKUPS), dtype=np.int32)


# --------------------------------------------------------------------------- baselines
def numpy_node_weights(hashes: np.ndarray, partitions: int) -> np.ndarray:
    """Vectorised RendezvousAffinityFunction.hash: int64 (P, n)."""
    k = (hashes.astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF))[None, :] | \
        (np.arange(partitions, dtype=np.uint64) << np.uint64(32))[:, None]
    k = ~k + (k << np.uint64(21))
    k ^= k >> np.uint64(24)
    k += (k << np.uint64(3)) + (k << np.uint64(8))
    k ^= k >> np.uint64(14)
    k += (k << np.uint64(2)) + (k << np.uint64(4))
    k ^= k >> np.uint64(28)
    k += k << np.uint64(31)
    return k.view(np.int64)


def numpy_assign(cids, partitions, backups):
    """What a numpy user would write: weights for all (p, node), sort each row (ties by
    position = default node ids), keep the first backups + 1."""
    hashes = np.array([ref.hash_code(c) for c in cids], dtype=np.int64)
    w = numpy_node_weights(hashes, partitions)
    order = np.argsort(w, axis=1, kind="stable")
    return order[:, :backups + 1].astype(np.int32)


def python_long_partitions(keys):
    return [ref.partition_from_hash(ref.long_hash(k), PARTS) for k in keys]


def numpy_long_partitions(keys: np.ndarray) -> np.ndarray:
    u = keys.view(np.uint64)
    h = ((u ^ (u >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return ((h ^ (h >> np.uint32(16))) & np.uint32(PARTS - 1)).astype(np.int32)


def python_string_loop(keys):
    """A user's Python loop: String.hashCode over UTF-16 units, then Ignite's mask rule."""
    out = []
    for s in keys:
        h = 0
        for ch in s:
            c = ord(ch)
            if c >= 0x10000:
                c -= 0x10000
                h = (31 * h + (0xD800 + (c >> 10))) & 0xFFFFFFFF
                c = 0xDC00 + (c & 0x3FF)
            h = (31 * h + c) & 0xFFFFFFFF
        out.append((h ^ (h >> 16)) & (PARTS - 1))
    return out


# --------------------------------------------------------------------------- assign
@pytest.mark.benchmark(group="ignite-assign-20000x16-b2")
def test_assign_hzfast(benchmark, topology, expected_assignment):
    cids, node_ids = topology
    got = benchmark(ignite.assign, cids, node_ids, partitions=P, backups=BACKUPS)
    assert got.shape == (P, BACKUPS + 1)
    np.testing.assert_array_equal(got, expected_assignment)


@pytest.mark.benchmark(group="ignite-assign-20000x16-b2")
def test_assign_reference(benchmark, topology, expected_assignment):
    cids, node_ids = topology
    got = benchmark.pedantic(ref.assign, args=(cids, node_ids),
                             kwargs=dict(partitions=P, backups=BACKUPS), rounds=3, iterations=1)
    np.testing.assert_array_equal(np.array(got, dtype=np.int32), expected_assignment)


@pytest.mark.benchmark(group="ignite-assign-20000x16-b2")
def test_assign_numpy_argsort(benchmark, topology, expected_assignment):
    cids, _ = topology  # node ids ascend with position, so a stable sort breaks ties right
    got = benchmark(numpy_assign, cids, P, BACKUPS)
    np.testing.assert_array_equal(got, expected_assignment)


# --------------------------------------------------------------------------- int64 keys
@pytest.mark.benchmark(group="ignite-partition-int64")
def test_partition_ids_int64_hzfast(benchmark, int64_keys):
    benchmark.extra_info["keys"] = N_KEYS
    got = benchmark(ignite.partition_ids, int64_keys, PARTS)
    assert got.shape == (N_KEYS,) and got.dtype == np.int32
    sample = int64_keys[:2000].tolist()
    assert got[:2000].tolist() == python_long_partitions(sample)
    np.testing.assert_array_equal(got, numpy_long_partitions(int64_keys))


@pytest.mark.benchmark(group="ignite-partition-int64")
def test_partition_ids_int64_numpy(benchmark, int64_keys):
    benchmark.extra_info["keys"] = N_KEYS
    got = benchmark(numpy_long_partitions, int64_keys)
    assert got[:2000].tolist() == python_long_partitions(int64_keys[:2000].tolist())


@pytest.mark.benchmark(group="ignite-partition-int64")
def test_partition_ids_int64_python_loop(benchmark, int64_keys):
    benchmark.extra_info["keys"] = SAMPLE
    sample = int64_keys[:SAMPLE].tolist()
    got = benchmark.pedantic(python_long_partitions, args=(sample,), rounds=3, iterations=1)
    assert got == ignite.partition_ids(int64_keys[:SAMPLE], PARTS).tolist()


# --------------------------------------------------------------------------- string keys
@pytest.mark.benchmark(group="ignite-partition-strings")
def test_partition_ids_strings_hzfast(benchmark, string_keys):
    benchmark.extra_info["keys"] = N_KEYS
    got = benchmark(ignite.partition_ids, string_keys, PARTS)
    assert got.shape == (N_KEYS,) and got.dtype == np.int32
    sample = string_keys[:2000].to_pylist()
    assert got[:2000].tolist() == [ref.partition(s, PARTS) for s in sample]
    assert got[-500:].tolist() == [ref.partition(s, PARTS)
                                   for s in string_keys[-500:].to_pylist()]


@pytest.mark.benchmark(group="ignite-partition-strings")
def test_partition_ids_strings_python_loop(benchmark, string_keys):
    benchmark.extra_info["keys"] = SAMPLE
    sample = string_keys[:SAMPLE].to_pylist()
    got = benchmark.pedantic(python_string_loop, args=(sample,), rounds=3, iterations=1)
    assert got == ignite.partition_ids(string_keys[:SAMPLE], PARTS).tolist()


@pytest.mark.benchmark(group="ignite-partition-strings")
def test_partition_ids_strings_hzfast_pylist(benchmark, string_keys):
    """hzfast from a Python list of str (encoding included), same sample size as the loop."""
    benchmark.extra_info["keys"] = SAMPLE
    sample = string_keys[:SAMPLE].to_pylist()
    got = benchmark(ignite.partition_ids, sample, PARTS)
    assert got[:2000].tolist() == python_string_loop(sample[:2000])
