"""hzfast.ignite.counters: partition update counters vs. every PartitionUpdateCounterTest
scenario in the Ignite vectors."""
import pytest

from hzfast.ignite import counters


def _state(c):
    return {"lwm": c.lwm, "hwm": c.hwm, "gaps_items": [list(g) for g in c.gaps],
            "highest_applied": c.highest_applied(), "sequential": c.sequential}



def _apply(c, step):
    op, args = step["op"], step["args"]
    if op == "update":
        return c.update(*args)
    if op == "update_abs":
        return c.update_abs(*args)
    if op == "reserve":
        return c.reserve(*args)
    if op == "finalize":
        return c.finalize()
    if op == "reset":
        return c.reset()
    raise AssertionError(op)



def test_update_counter_step_scenarios(ignite_vectors):
    scen = ignite_vectors["partition_update_counter"]["scenarios"]
    assert len(scen) == 11
    ran = 0
    for s in scen:
        if "steps" not in s:
            continue
        c = counters.UpdateCounter()
        rets = []
        for i, step in enumerate(s["steps"]):
            if "raises" in step:
                with pytest.raises(counters.UpdateCounterError, match="Failed to update"):
                    _apply(c, step)
            else:
                ret = _apply(c, step)
                rets.append(ret)
                assert ret == step["ret"], (s["name"], i)
            assert _state(c) == step["state_after"], (s["name"], i)
            if i == 3 and "after_step_4_iterator_len" in (s.get("assert") or {}):
                assert len(c.gaps) == s["assert"]["after_step_4_iterator_len"]
        a = s.get("assert") or {}
        if "returns" in a:
            assert rets == a["returns"]
        if "iterator" in a:
            assert [list(g) for g in c.gaps] == a["iterator"]
        if "final_sequential" in a:
            assert c.sequential == a["final_sequential"]
        ran += 1
    assert ran == 8  # the other 3 (ops/ranges/items) have their own tests below



def test_update_counter_max_gaps(ignite_vectors):
    s = next(x for x in ignite_vectors["partition_update_counter"]["scenarios"]
             if x["name"] == "testMaxGaps")
    c = counters.UpdateCounter()
    for i in range(1, 10001):
        assert c.update(3 * i, 3 * i + 1)
    assert len(c.gaps) == s["derived"]["gap_items_before_last"]
    assert c.lwm == s["derived"]["lwm"]
    assert s["assert"]["last_call_raises"]
    with pytest.raises(counters.UpdateCounterError, match="Too many gaps"):
        c.update(3 * 10002, 3 * 10002 + 1)



def test_update_counter_random_permutations(ignite_vectors):
    s = next(x for x in ignite_vectors["partition_update_counter"]["scenarios"]
             if x["name"] == "testRandomUpdates_deterministic")
    assert len(s["permutations"]) == 3
    for perm in s["permutations"]:
        assert sorted(map(tuple, perm)) == sorted(map(tuple, s["ranges"]))
        c = counters.UpdateCounter()
        for start, delta in perm:
            assert c.update(start, delta)
        assert c.lwm == s["assert"]["lwm_after_any_permutation"]
        assert c.sequential is s["assert"]["sequential"]



def test_update_counter_gap_serialization(ignite_vectors):
    s = next(x for x in ignite_vectors["partition_update_counter"]["scenarios"]
             if x["name"] == "gaps_serialization")
    c = counters.UpdateCounter()
    for start, delta in s["items"]:
        c.update(start, delta)
    raw = c.to_bytes()
    assert raw.hex() == s["bytes_hex"]
    again = counters.UpdateCounter(0, raw)
    assert again.gaps == [tuple(x) for x in s["items"]]
    assert counters.UpdateCounter().to_bytes() is None
    with pytest.raises(ValueError, match="gaps"):
        counters.UpdateCounter(0, raw[:-1])



def test_volatile_update_counter(ignite_vectors):
    v = ignite_vectors["partition_update_counter_volatile"]
    c = counters.VolatileUpdateCounter()
    for step in v["example"]:
        ret = _apply(c, step)
        if "ret" in step:
            assert ret == step["ret"], step
        assert c.lwm == step["lwm"] == c.reserved() == c.hwm
    assert c.sequential and c.finalize() == [] and c.to_bytes() is None and c.gaps == []
    assert c.next() == 13 and c.next(5) == 13 and c.lwm == 18
    c.reset()
    assert c.empty()



def test_update_counter_bad_input():
    c = counters.UpdateCounter()
    with pytest.raises(TypeError, match="start"):
        c.update(1.5, 1)
    with pytest.raises(ValueError, match="delta"):
        c.reserve(2**63)
    with pytest.raises(TypeError, match="val"):
        counters.VolatileUpdateCounter().update_abs("3")



# =========================================================================== UpdateCounters
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hst

from hzfast.ignite import UpdateCounters
from hzfast.reference import counters as ref

INT64_MAX = 2**63 - 1


def _batch_state(c, p):
    return {"lwm": int(c.lwm[p]), "hwm": int(c.hwm[p]),
            "gaps_items": [list(g) for g in c.gaps(p)],
            "highest_applied": c.highest_applied(p), "sequential": c.sequential(p)}


def _apply_many(c, p, step, batch):
    """One vector step on partition ``p`` of UpdateCounters, scalar or as a 1-op batch."""
    op, args = step["op"], step["args"]
    if op == "update":
        if batch:
            return bool(c.update_batch([p], [args[0]], [args[1]])[0])
        return c.update(p, *args)
    if op == "update_abs":
        return c.update_absolute(p, *args)
    if op == "reserve":
        return int(c.reserve_batch([p], args)[0]) if batch else c.reserve(p, *args)
    if op == "finalize":
        got = c.finalize([p])
        return [x for pair in got.get(p, []) for x in pair]
    if op == "reset":
        return c.reset(p)
    raise AssertionError(op)


@pytest.mark.parametrize("batch", [False, True])
def test_update_counters_every_vector_step(ignite_vectors, batch):
    """Every scenario step, on partition 2 of 5, others must stay untouched."""
    ran = 0
    for s in ignite_vectors["partition_update_counter"]["scenarios"]:
        if "steps" not in s:
            continue
        c = UpdateCounters(5)
        for i, step in enumerate(s["steps"]):
            if "raises" in step:
                with pytest.raises(counters.UpdateCounterError,
                                   match="Failed to update.*partition 2") as err:
                    _apply_many(c, 2, step, batch)
                assert err.value.partition == 2
            else:
                assert _apply_many(c, 2, step, batch) == step["ret"], (s["name"], i)
            assert _batch_state(c, 2) == step["state_after"], (s["name"], i)
            others = [0, 1, 3, 4]
            assert not c.lwm[others].any() and not c.hwm[others].any()
            assert not c.gap_counts()[others].any()
            ran += 1
    assert ran == 38    # 8 step scenarios


def test_volatile_update_counters_vector(ignite_vectors):
    v = ignite_vectors["partition_update_counter_volatile"]
    c = UpdateCounters(3, tracking=False)
    assert not c.tracking
    for step in v["example"]:
        ret = _apply_many(c, 1, step, batch=True)
        if "ret" in step:
            assert ret == step["ret"], step
        assert c.lwm[1] == step["lwm"] == c.hwm[1]
    assert c.finalize() == {} and c.to_bytes(1) is None and c.gaps(1) == []
    assert c.lwm.tolist() == [0, 12, 0]


# ---- Ignite's PartitionUpdateCounterTest cases, written from their described behaviour
def test_ignite_stale_update():
    """testStaleUpdate: re-applying an applied range (in order or out of order) is False."""
    c = UpdateCounters(1)
    got = c.update_batch([0] * 6, [0, 0, 2, 2, 1, 1], [1] * 6)
    assert got.tolist() == [True, False, True, False, True, False]
    assert c.lwm[0] == 3 and c.sequential(0)


def test_ignite_fold_intermediate_updates():
    """testFoldIntermediateUpdates: (60,5) and (67,3) out of order, (65,2) bridges them into
    one item, then (59,1) closes the hole and the LWM jumps to 70."""
    c = UpdateCounters(1)
    assert c.update_batch([0, 0, 0], [0, 60, 67], [59, 5, 3]).all()
    assert len(c.gaps(0)) == 2
    assert c.update(0, 65, 2)
    assert c.gaps(0) == [(60, 10)]
    assert c.update(0, 59, 1)
    assert c.lwm[0] == 70 and c.sequential(0)


def test_ignite_out_of_order_updates_iterator():
    """testOutOfOrderUpdatesIterator: the items come back sorted by start."""
    c = UpdateCounters(1)
    c.update_batch([0, 0, 0], [67, 1, 60], [3, 58, 5])
    assert c.gaps(0) == [(1, 58), (60, 5), (67, 3)] and c.lwm[0] == 0


def test_ignite_overlap():
    """testOverlap: (6,7) absorbs the item starting at its end (13,3); both re-applied are
    covered."""
    c = UpdateCounters(1)
    assert c.update_batch([0] * 4, [13, 6, 13, 6], [3, 7, 3, 7]).tolist() == \
        [True, True, False, False]
    assert c.gaps(0) == [(6, 10)]


def test_ignite_max_gaps():
    """testMaxGaps: 10,000 non-adjacent out-of-order updates fit, the next one fails; the
    error names the partition and where the batch stopped, and changes nothing."""
    c = UpdateCounters(3)
    i = np.arange(1, 10_001)
    assert c.update_batch(np.full(10_000, 1), 3 * i, 3 * i + 1).all()
    assert c.gap_counts().tolist() == [0, 10_000, 0]
    before = c.gaps(1)
    parts, starts, deltas = [0, 1, 2], [0, 3 * 10_002, 0], [5, 3 * 10_002 + 1, 7]
    with pytest.raises(counters.UpdateCounterError, match="partition 1") as err:
        c.update_batch(parts, starts, deltas)
    assert (err.value.index, err.value.partition) == (1, 1)
    assert err.value.results.tolist() == [True]
    assert c.lwm.tolist() == [5, 0, 0]             # op 0 applied, op 1 nothing, op 2 not run
    assert c.gaps(1) == before
    with pytest.raises(counters.UpdateCounterError, match="Too many gaps in partition 1"):
        c.update(1, 3 * 10_002, 3 * 10_002 + 1)
    # adjacent to the last item (30000, 30001): it grows, no new item needed
    assert c.update(1, 60_001, 5)
    assert c.gap_counts()[1] == 10_000 and c.gaps(1)[-1] == (30_000, 30_006)


def test_ignite_random_updates():
    """testRandomUpdates: 1,000 consecutive ranges of size 1-5, shuffled 100 times; every
    order ends with LWM = the total and no gaps. Each shuffle runs on its own partition of
    one batch (interleaved), and on a fresh counter."""
    rng = np.random.default_rng(12)
    sizes = rng.integers(1, 6, 1000)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    perms = [rng.permutation(1000) for _ in range(100)]
    s = np.concatenate([starts[p] for p in perms])
    d = np.concatenate([sizes[p] for p in perms])
    owner = np.repeat(np.arange(100), 1000)
    # interleave the 100 shuffles at random, each keeping its own order
    slots = rng.permutation(len(owner))
    slots = np.concatenate([np.sort(slots[owner == q]) for q in range(100)])
    parts, s2, d2 = (np.empty_like(a) for a in (owner, s, d))
    parts[slots], s2[slots], d2[slots] = owner, s, d
    assert (np.diff(parts) != 0).sum() > 50_000               # really interleaved
    c = UpdateCounters(100)
    assert c.update_batch(parts, s2, d2).all()
    assert (c.lwm == sizes.sum()).all() and not c.gap_counts().any()
    for perm in perms[:3]:
        one = UpdateCounters(1)
        assert one.update_batch(np.zeros(1000, np.int32), starts[perm], sizes[perm]).all()
        assert one.lwm[0] == sizes.sum() and one.sequential(0)


def test_ignite_gaps_serialization(ignite_vectors):
    """testGapsSerialization: bytes in Ignite's layout, and back."""
    s = next(x for x in ignite_vectors["partition_update_counter"]["scenarios"]
             if x["name"] == "gaps_serialization")
    c = UpdateCounters(2)
    for start, delta in s["items"]:
        c.update(1, start, delta)
    raw = c.to_bytes(1)
    assert raw.hex() == s["bytes_hex"] and c.to_bytes(0) is None
    c.from_bytes(0, raw)
    assert c.gaps(0) == [tuple(x) for x in s["items"]] and c.lwm[0] == 0
    c.init(0, 3, raw)
    assert c.lwm[0] == c.hwm[0] == c.initial[0] == 3
    # many random items round-trip, in any order on input
    rng = np.random.default_rng(3)
    items = np.unique(rng.integers(0, 10**12, 500))
    blob = bytes([1]) + len(items).to_bytes(4, "big") + np.column_stack(
        [items, rng.integers(0, 10**6, len(items))])[rng.permutation(len(items))].astype(
        ">i8").tobytes()
    c.from_bytes(1, blob)
    got = c.gaps(1)
    assert [g[0] for g in got] == items.tolist()
    again = UpdateCounters(1)
    again.from_bytes(0, c.to_bytes(1))
    assert again.gaps(0) == got


@pytest.mark.parametrize("blob, message", [
    (b"", "version byte and a count"),
    (bytes.fromhex("0200000000"), "version 2"),
    (bytes.fromhex("0100000001") + bytes(15), "expected 1 items"),
    (bytes.fromhex("01ffffffff"), "expected -1 items"),
    (bytes.fromhex("0100000001") + (-1).to_bytes(8, "big", signed=True) + bytes(8),
     "negative"),
    (bytes.fromhex("0100000001") + (2**63 - 1).to_bytes(8, "big") + (1).to_bytes(8, "big"),
     "past int64"),
    (bytes.fromhex("0100000002") + bytes(32), "two items start at 0"),
])
def test_corrupt_bytes_change_nothing(blob, message):
    c = UpdateCounters(1)
    c.update(0, 4, 1)
    with pytest.raises(ValueError, match=message):
        c.from_bytes(0, blob)
    with pytest.raises(ValueError, match="gaps"):
        c.init(0, 9, blob if blob else b"\x01")
    assert c.gaps(0) == [(4, 1)] and c.lwm[0] == 0
    with pytest.raises(TypeError, match="data"):
        c.from_bytes(0, "01")


# ---- the differential test: batch == scalar reference
def _random_ops(rng, P, m, *, reorder=0.1, dup=0.05, stale=0.05, garbage=0.02):
    """``m`` update operations over ``P`` partitions: consecutive ranges per partition
    (sizes 0..5), some moved later in the stream, duplicated, made stale, or random."""
    parts = rng.integers(0, P, m).astype(np.int32)
    deltas = rng.integers(0, 6, m).astype(np.int64)
    order = np.argsort(parts, kind="stable")
    cum = np.cumsum(deltas[order])
    first = np.searchsorted(parts[order], parts[order])        # group start in sorted order
    base = np.where(first > 0, cum[first - 1], 0)
    starts = np.empty(m, np.int64)
    starts[order] = cum - deltas[order] - base
    # reorder: swap with an operation a few positions later
    i = np.flatnonzero(rng.random(m) < reorder / 2)
    j = np.minimum(i + rng.integers(1, 64, len(i)), m - 1)
    for a in (parts, starts, deltas):
        a[i], a[j] = a[j].copy(), a[i].copy()
    # duplicates of an earlier operation
    i = np.flatnonzero(rng.random(m) < dup)
    i = i[i > 0]
    j = (rng.random(len(i)) * i).astype(np.int64)
    for a in (parts, starts, deltas):
        a[i] = a[j]
    # stale: start moved below where it was
    i = np.flatnonzero(rng.random(m) < stale)
    starts[i] = (starts[i] * rng.random(len(i))).astype(np.int64)
    # garbage: arbitrary overlapping ranges
    i = np.flatnonzero(rng.random(m) < garbage)
    starts[i] = rng.integers(0, int(starts.max(initial=0)) + 8, len(i))
    deltas[i] = rng.integers(0, 40, len(i))
    return parts, starts, deltas


def _replay(refs, parts, starts, deltas):
    return [refs[p].update(s, d) for p, s, d in
            zip(parts.tolist(), starts.tolist(), deltas.tolist())]


def _same(c, refs):
    assert c.lwm.tolist() == [r.lwm for r in refs]
    assert c.hwm.tolist() == [r.hwm for r in refs]
    assert c.highest_applied().tolist() == [r.highest_applied() for r in refs]
    for p, r in enumerate(refs):
        assert c.gaps(p) == r.gaps, p


@pytest.mark.slow   # a long sweep: opt-in (-m slow), CI runs it
def test_differential_one_million_operations():
    """1,000,000 random operations (in order, reordered, duplicated, stale, overlapping)
    over 500 partitions, in 10 batches with reservations and absolute updates between:
    every result and the state after every batch equal the scalar reference's."""
    rng = np.random.default_rng(2024)
    P = 500
    c = UpdateCounters(P)
    refs = [ref.UpdateCounter() for _ in range(P)]
    total = 0
    for chunk in range(10):
        parts, starts, deltas = _random_ops(rng, P, 100_000)
        starts += c.lwm[parts] // 2 if chunk else 0       # keep later chunks near the LWM
        got = c.update_batch(parts, starts, deltas)
        assert got.tolist() == _replay(refs, parts, starts, deltas)
        total += len(parts)
        rp = rng.integers(0, P, 1000)
        rd = rng.integers(0, 10, 1000)
        assert c.reserve_batch(rp, rd).tolist() == \
            [refs[p].reserve(d) for p, d in zip(rp.tolist(), rd.tolist())]
        ap = np.unique(rng.integers(0, P, 20))
        vals = c.highest_applied()[ap] + rng.integers(0, 3, len(ap))
        c.update_absolute_batch(ap, vals)
        for p, v in zip(ap.tolist(), vals.tolist()):
            refs[p].update_abs(v)
        _same(c, refs)
    assert total == 1_000_000
    assert c.gap_counts().sum() > 0            # the stream really left gaps
    fin = c.finalize()
    for p, r in enumerate(refs):
        flat = r.finalize()
        assert [x for pair in fin.get(p, []) for x in pair] == flat
    _same(c, refs)


@settings(max_examples=40, deadline=None)
@given(seed=hst.integers(0, 2**32 - 1), P=hst.integers(1, 9), m=hst.integers(0, 3000),
       reorder=hst.floats(0, 1), dup=hst.floats(0, 0.5), stale=hst.floats(0, 0.5),
       garbage=hst.floats(0, 0.5), tracking=hst.booleans())
def test_differential_hypothesis(seed, P, m, reorder, dup, stale, garbage, tracking):
    rng = np.random.default_rng(seed)
    parts, starts, deltas = _random_ops(rng, P, m, reorder=reorder, dup=dup, stale=stale,
                                        garbage=garbage)
    c = UpdateCounters(P, tracking=tracking)
    kind = ref.UpdateCounter if tracking else ref.VolatileUpdateCounter
    refs = [kind() for _ in range(P)]
    half = m // 2
    got = np.concatenate([c.update_batch(parts[:half], starts[:half], deltas[:half]),
                          c.update_batch(parts[half:], starts[half:], deltas[half:])])
    assert got.tolist() == _replay(refs, parts, starts, deltas)
    assert c.lwm.tolist() == [r.lwm for r in refs]
    assert c.hwm.tolist() == [r.hwm for r in refs]
    for p, r in enumerate(refs):
        assert c.gaps(p) == r.gaps


def test_volatile_differential():
    rng = np.random.default_rng(5)
    parts, starts, deltas = _random_ops(rng, 50, 50_000)
    c = UpdateCounters(50, tracking=False)
    refs = [ref.VolatileUpdateCounter() for _ in range(50)]
    assert not c.update_batch(parts, starts, deltas).any()
    _replay(refs, parts, starts, deltas)
    assert c.lwm.tolist() == [r.lwm for r in refs] and c.hwm is not c.lwm
    assert np.array_equal(c.hwm, c.lwm)
    rp, rd = rng.integers(0, 50, 500), rng.integers(0, 9, 500)
    assert c.reserve_batch(rp, rd).tolist() == [refs[p].reserve(d) for p, d in
                                                zip(rp.tolist(), rd.tolist())]
    c.update_absolute_batch([3, 4], [0, 10**12])
    refs[3].update_abs(0), refs[4].update_abs(10**12)
    assert c.lwm.tolist() == [r.lwm for r in refs] == c.hwm.tolist()


# ---- bad input: errors name the argument, counters unchanged
def _snapshot_state(c):
    return (c.lwm.copy(), c.hwm.copy(), [c.gaps(p) for p in range(c.partition_count)])


def _assert_unchanged(c, before):
    after = _snapshot_state(c)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert before[2] == after[2]


@pytest.fixture
def busy():
    c = UpdateCounters(4)
    c.update_batch([0, 1, 1, 2], [0, 5, 0, 9], [3, 2, 2, 1])
    c.reserve_batch([3], [7])
    return c


@pytest.mark.parametrize("args, error, message", [
    (([0, 4], [0, 0], [1, 1]), ValueError, r"partitions\[1\] = 4 is outside \[0, 4\)"),
    (([0, -1], [0, 0], [1, 1]), ValueError, r"partitions\[1\] = -1 is outside"),
    ((np.array([0, 2**40]), [0, 0], [1, 1]), ValueError, r"partitions\[1\] = 1099511627776"),
    (([0, 1], [0, -3], [1, 1]), ValueError, r"starts\[1\] = -3 is negative"),
    (([0, 1], [0, 3], [1, -1]), ValueError, r"deltas\[1\] = -1 is negative"),
    (([1], [INT64_MAX], [1]), ValueError, r"starts\[0\] \+ deltas\[0\].*int64"),
    (([0, 1], [0, 3], [1]), ValueError, ("partitions and starts and deltas must have one "
                                        "length")),
    (([[0]], [0], [1]), ValueError, "partitions must be 1-dimensional"),
    (([0.5], [0], [1]), TypeError, "partitions must hold integers"),
    (([0], [True], [1]), TypeError, "starts must hold integers"),
    (([0], ["1"], [1]), TypeError, "starts must hold integers"),
    ((0, [0], [1]), TypeError, "partitions must be a 1-D"),
    (([0], [0], np.array([2**64 - 1], dtype=np.uint64)), ValueError, r"deltas\[0\]"),
])
def test_update_batch_bad_input(busy, args, error, message):
    before = _snapshot_state(busy)
    with pytest.raises(error, match=message):
        busy.update_batch(*args)
    _assert_unchanged(busy, before)


def test_reserve_batch_is_all_or_nothing(busy):
    before = _snapshot_state(busy)
    with pytest.raises(ValueError, match=r"deltas\[2\] .*partition 3 past .*int64"):
        busy.reserve_batch([0, 3, 3], [1, 5, INT64_MAX - 12 + 1])
    _assert_unchanged(busy, before)
    with pytest.raises(ValueError, match=r"deltas\[0\] = -2 is negative"):
        busy.reserve_batch([0], [-2])
    assert busy.reserve_batch([3, 3], [5, INT64_MAX - 12]).tolist() == [7, 12]
    assert busy.hwm[3] == INT64_MAX
    with pytest.raises(ValueError, match="int64"):
        busy.reserve(3, 1)
    assert busy.reserve(3, 0) == INT64_MAX


def test_scalar_bad_input(busy):
    before = _snapshot_state(busy)
    for call, error, message in [
        (lambda: busy.update(4, 0, 1), ValueError, "partition must be <= 3"),
        (lambda: busy.update(-1, 0, 1), ValueError, "partition must be >= 0"),
        (lambda: busy.update(0, -1, 1), ValueError, "start must be >= 0"),
        (lambda: busy.update(0, 1, -1), ValueError, "delta must be >= 0"),
        (lambda: busy.update(0, 1.0, 1), TypeError, "start must be an integer"),
        (lambda: busy.update(0, INT64_MAX, 1), ValueError, "int64"),
        (lambda: busy.reserve(0, 2**63), ValueError, "delta must be <="),
        (lambda: busy.update_absolute(0, -5), ValueError, "value must be >= 0"),
        (lambda: busy.update_absolute_batch([0, 1], [1]), ValueError, "one length"),
        (lambda: busy.update_absolute_batch([0, 1], [1, -1]), ValueError,
         r"values\[1\] = -1 is negative"),
        (lambda: busy.finalize([0, 9]), ValueError, r"partitions\[1\] = 9"),
        (lambda: busy.finalize(np.ones(3, bool)), ValueError, r"shape \(4,\)"),
        (lambda: busy.gaps(7), ValueError, "partition"),
        (lambda: UpdateCounters(-1), ValueError, "partition_count"),
        (lambda: UpdateCounters(3, tracking=1), TypeError, "tracking"),
    ]:
        with pytest.raises(error, match=message):
            call()
    _assert_unchanged(busy, before)


def test_update_absolute_batch_stops_where_it_failed():
    c = UpdateCounters(3)
    c.update_batch([0, 1, 1], [0, 0, 5], [2, 2, 3])
    with pytest.raises(counters.UpdateCounterError, match="maxApplied=8"):
        c.update_absolute(1, 3)                 # below the end of item (5, 3)
    assert c.hwm[1] == 3 and c.gaps(1) == [(5, 3)]
    c.update_absolute(1, 8)                     # the first success drops the gaps
    c.update_batch([1], [10], [2])
    with pytest.raises(counters.UpdateCounterError, match="partition 1") as err:
        c.update_absolute_batch([0, 1, 2], [4, 9, 9])
    assert (err.value.index, err.value.partition) == (1, 1)
    assert c.lwm.tolist() == [4, 8, 0] and c.hwm.tolist() == [4, 9, 0]   # HWM kept raised
    c.update_absolute(1, 12)                    # not the first time: the item stays
    assert c.lwm[1] == 12 and c.gaps(1) == [(10, 2)]


def test_views_are_read_only_and_live():
    c = UpdateCounters(3)
    lwm, hwm = c.lwm, c.hwm
    assert lwm.dtype == np.int64 and lwm.shape == (3,) and hwm.dtype == np.int64
    with pytest.raises(ValueError):
        lwm[0] = 5
    with pytest.raises(ValueError):
        lwm.flags.writeable = True
    c.update_batch([2], [0], [4])
    c.reserve(1, 6)
    assert lwm.tolist() == [0, 0, 4] and hwm.tolist() == [0, 6, 0]


def test_inputs_are_not_changed_and_any_integer_dtype_works():
    parts = np.array([2, 0, 2], dtype=np.int64)
    starts = np.array([0, 0, 1], dtype=np.uint16)
    deltas = [1, 2, 3]
    c = UpdateCounters(3)
    assert c.update_batch(parts, starts, deltas).tolist() == [True, True, True]
    assert parts.tolist() == [2, 0, 2] and starts.tolist() == [0, 0, 1]
    assert c.lwm.tolist() == [2, 0, 4]
    assert c.update_batch([], [], []).shape == (0,)
    assert c.reserve_batch(np.empty(0, np.int32), []).dtype == np.int64
    empty = UpdateCounters(0)
    assert empty.finalize() == {} and len(empty.lwm) == 0


def test_finalize_subset_reset_and_init():
    c = UpdateCounters(3)
    c.update_batch([0, 0, 1, 2], [0, 5, 3, 0], [2, 3, 1, 1])
    c.reserve_batch([0, 1, 2], [20, 20, 20])
    assert c.finalize(np.array([False, True, False])) == {1: [(1, 3)]}
    assert c.lwm.tolist() == [2, 4, 1] and c.hwm.tolist() == [20, 4, 20]
    assert c.finalize([0]) == {0: [(3, 5)]} and c.lwm[0] == c.hwm[0] == 8
    c.reset(0)
    assert c.lwm[0] == c.hwm[0] == 0 and c.sequential(0)
    c.init(2, 40)
    assert (c.lwm[2], c.hwm[2], c.initial[2]) == (40, 40, 40)
    assert not c.update(2, 39, 1) and c.update(2, 40, 1) and c.lwm[2] == 41
