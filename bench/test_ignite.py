"""Benchmarks for hzfast.ignite: rendezvous assignment and key -> partition.

Groups (one table each):
* ``ignite-assign-20000x16-b2``: hzfast kernel vs the pure-Python reference vs a vectorised
  numpy implementation (what a user would write without hzfast).
* ``ignite-partition-int64``: 10,000,000 int64 (Long) keys: hzfast vs a numpy expression;
  the pure-Python loop runs on a 100,000-key sample (compare per-key rates:
  ``extra_info["keys"]`` holds each test's key count).
* ``ignite-partition-strings``: 10,000,000 short ASCII strings in a pyarrow ``string`` array:
  hzfast (hashes the Arrow UTF-8 buffers directly) vs a Python loop over a 100,000 sample.
* ``ignite-update-batch-10M-20000``: ``UpdateCounters.update_batch`` of 10,000,000 update
  operations over 20,000 partitions, 10% out of order, vs the scalar reference counters
  (``hzfast.reference.counters.UpdateCounter``, one per partition) on the first 300,000
  (compare per-operation rates: ``extra_info["ops"]``).
* ``ignite-rebalance-16x100000``: ``rebalance_plan`` for 16 nodes x 100,000 partitions, with
  3 copies per partition (primary + 2 backups, the rest EVICTED) and with all 16 copies (a
  replicated cache), vs the pure-Python reference on 2,000 partitions
  (``extra_info["partitions"]``).

CI runs this file with ``--benchmark-disable`` (every benchmark once); all results are
checked against the reference inside the benchmark.
"""
import numpy as np
import pytest

from hzfast import ignite
from hzfast.reference import counters as ref_counters
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


# --------------------------------------------------------------------------- update counters
UPD_OPS = 10_000_000
UPD_PARTS = 20_000
UPD_SAMPLE = 300_000


@pytest.fixture(scope="module")
def update_stream():
    """10M updates over 20,000 partitions: each partition's ranges (1-5 counters) in order,
    then 5% of adjacent same-partition pairs swapped (10% of operations out of order).
    Also the expected final LWM per partition (every range applied once)."""
    rng = np.random.default_rng(17)
    parts = rng.integers(0, UPD_PARTS, UPD_OPS).astype(np.int32)
    deltas = rng.integers(1, 6, UPD_OPS).astype(np.int64)
    order = np.argsort(parts, kind="stable")
    cum = np.cumsum(deltas[order])
    first = np.searchsorted(parts[order], parts[order])
    starts = np.empty(UPD_OPS, np.int64)
    starts[order] = cum - deltas[order] - np.where(first > 0, cum[first - 1], 0)
    k = np.flatnonzero(rng.random(UPD_OPS - 1) < 0.10)
    k = k[(k % 2 == 0) & (parts[order][k] == parts[order][np.minimum(k + 1, UPD_OPS - 1)])]
    a, b = order[k], order[k + 1]                   # a before b in the stream: swap them
    for arr in (starts, deltas):
        arr[a], arr[b] = arr[b].copy(), arr[a].copy()
    expected_lwm = np.bincount(parts, weights=deltas, minlength=UPD_PARTS).astype(np.int64)
    out_of_order = 2 * len(k) / UPD_OPS
    assert 0.09 < out_of_order < 0.11
    return parts, starts, deltas, expected_lwm


def reference_updates(parts, starts, deltas):
    counters = [ref_counters.UpdateCounter() for _ in range(UPD_PARTS)]
    return [counters[p].update(s, d) for p, s, d in zip(parts, starts, deltas)], counters


@pytest.mark.benchmark(group="ignite-update-batch-10M-20000")
def test_update_batch_hzfast(benchmark, update_stream):
    parts, starts, deltas, expected_lwm = update_stream
    benchmark.extra_info["ops"] = UPD_OPS
    state = {}

    def fresh():
        state["c"] = ignite.UpdateCounters(UPD_PARTS)
        return (state["c"], parts, starts, deltas), {}

    got = benchmark.pedantic(lambda c, *a: c.update_batch(*a), setup=fresh, rounds=5,
                             iterations=1)
    c = state["c"]
    assert got.all() and np.array_equal(c.lwm, expected_lwm) and not c.gap_counts().any()
    n = UPD_SAMPLE                                   # the sample agrees with the reference
    ref_results, ref_counts = reference_updates(parts[:n].tolist(), starts[:n].tolist(),
                                                deltas[:n].tolist())
    head = ignite.UpdateCounters(UPD_PARTS)
    assert head.update_batch(parts[:n], starts[:n], deltas[:n]).tolist() == ref_results
    assert head.lwm.tolist() == [r.lwm for r in ref_counts]
    assert head.gap_counts().tolist() == [len(r.gaps) for r in ref_counts]


@pytest.mark.benchmark(group="ignite-update-batch-10M-20000")
def test_update_batch_reference(benchmark, update_stream):
    parts, starts, deltas, _ = update_stream
    benchmark.extra_info["ops"] = UPD_SAMPLE
    args = (parts[:UPD_SAMPLE].tolist(), starts[:UPD_SAMPLE].tolist(),
            deltas[:UPD_SAMPLE].tolist())
    results, _ = benchmark.pedantic(reference_updates, args=args, rounds=3, iterations=1)
    assert sum(results) == UPD_SAMPLE            # every range is applied exactly once
    c = ignite.UpdateCounters(UPD_PARTS)
    assert c.update_batch(parts[:UPD_SAMPLE], starts[:UPD_SAMPLE],
                          deltas[:UPD_SAMPLE]).tolist() == results


# --------------------------------------------------------------------------- rebalance plan
RB_NODES = 16
RB_PARTS = 100_000
RB_SAMPLE = 2_000


def rebalance_inputs(copies: int):
    """States, counters, history, sizes for 16 nodes x 100,000 partitions: ``copies`` nodes
    hold each partition (the rest EVICTED); node 3 restarted behind on its copies; 2% of
    copies MOVING (half of them at 0); WAL history on every OWNING copy."""
    rng = np.random.default_rng(23)
    N, P = RB_NODES, RB_PARTS
    holders = np.argsort(rng.random((P, N)), axis=1)[:, :copies]
    states = np.full((N, P), int(ignite.PartitionState.EVICTED), np.int8)
    states[holders.T, np.arange(P)] = int(ignite.PartitionState.OWNING)
    held = states == ignite.PartitionState.OWNING
    counters = np.repeat(rng.integers(10_000, 1_000_000, P)[None, :], N, axis=0)
    counters[3] -= rng.integers(1, 5_000, P)
    moving = (rng.random((N, P)) < 0.02) & held
    states[moving] = int(ignite.PartitionState.MOVING)
    counters[moving] = np.where(rng.random(int(moving.sum())) < 0.5, 0,
                                counters[moving] - 100)
    counters = np.maximum(counters, 0)
    history = np.where(held & ~moving, np.maximum(counters - rng.integers(0, 8_000, (N, P)),
                                                  0), -1)
    sizes = rng.integers(0, 20_000, (N, P))
    return states, counters, history, sizes


def reference_plan(states, counters, history, sizes, parts):
    return [ref_counters.rebalance_decision(p, states[:, p].tolist(), counters[:, p].tolist(),
                                            history[:, p].tolist(), sizes[:, p].tolist())
            for p in parts]


def check_plan(plan, inputs, parts):
    for p, want in zip(parts, reference_plan(*inputs, parts)):
        assert plan.max_counter[p] == want["max"]
        assert plan.rebalance[:, p].tolist() == want["kind"]
        assert plan.supplier[:, p].tolist() == want["supplier"]
        assert plan.from_counter[:, p].tolist() == want["from_counter"]


@pytest.fixture(scope="module", params=[3, 16], ids=["3-copies", "16-copies"])
def rebalance_case(request):
    return request.param, rebalance_inputs(request.param)


@pytest.mark.benchmark(group="ignite-rebalance-16x100000")
def test_rebalance_plan_hzfast(benchmark, rebalance_case):
    copies, inputs = rebalance_case
    states, counters, history, sizes = inputs
    benchmark.extra_info["partitions"] = RB_PARTS
    benchmark.extra_info["copies"] = copies
    plan = benchmark(ignite.rebalance_plan, states, counters, history=history, sizes=sizes)
    counts = plan.counts()
    assert counts["HISTORICAL"] > 0 and counts["FULL"] > 0
    check_plan(plan, inputs, list(range(0, RB_PARTS, RB_PARTS // 500)))


@pytest.mark.benchmark(group="ignite-rebalance-16x100000")
def test_rebalance_plan_reference(benchmark, rebalance_case):
    copies, inputs = rebalance_case
    benchmark.extra_info["partitions"] = RB_SAMPLE
    benchmark.extra_info["copies"] = copies
    parts = list(range(RB_SAMPLE))
    wants = benchmark.pedantic(reference_plan, args=(*inputs, parts), rounds=3, iterations=1)
    plan = ignite.rebalance_plan(inputs[0][:, :RB_SAMPLE], inputs[1][:, :RB_SAMPLE],
                                 history=inputs[2][:, :RB_SAMPLE], sizes=inputs[3][:, :RB_SAMPLE])
    assert [w["kind"] for w in wants] == plan.rebalance.T.tolist()
