"""Classes 4 and 6 of the hardening issue on the Ignite side: counters that would leave
Java's long range, one reader of gap bytes, and results too large to build."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from hzfast import ignite
from hzfast.ignite import affinity
from hzfast.reference import counters as ref

MAX = 2**63 - 1
MODELS = [ignite.UpdateCounter, ignite.VolatileUpdateCounter]


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("op, what", [
    (lambda c: c.next(), r"next\(\): lwm \+ 1"),
    (lambda c: c.next(1), r"next\(delta\): lwm \+ delta"),
    (lambda c: c.reserve(1), r"(reserve|next)\(delta\)"),
    (lambda c: c.update(MAX, 1), r"update\(start, delta\): start \+ delta"),
    (lambda c: c.update_initial(MAX, 1), r"update\(start, delta\)"),
])
def test_counters_never_leave_int64(cls, op, what):
    c = cls(MAX)
    before = repr(c)
    with pytest.raises(ValueError, match=rf"^{cls.__name__}\(lwm={MAX}.*\): {what}.* leaves "
                                         rf"the Java long range \(int64\); the counter is "
                                         rf"unchanged$"):
        op(c)
    assert repr(c) == before        # nothing changed
    r = getattr(ref, cls.__name__)(MAX)     # the reference agrees it is an error
    with pytest.raises(ValueError, match="Java long range"):
        op(r)


def test_counters_reach_the_last_long_exactly():
    c = ignite.UpdateCounter(MAX - 2)
    assert c.next() == MAX - 1 and c.next(1) == MAX - 1 and c.lwm == MAX
    assert c.reserve(0) == MAX - 1 and c.hwm == MAX - 1
    v = ignite.VolatileUpdateCounter(MAX - 1)
    assert v.next() == MAX
    assert ignite.UpdateCounter().update(MAX - 5, 5) is True


def test_negative_sums_still_follow_java_within_range():
    c = ignite.UpdateCounter(-(2**63) + 1)
    assert c.next(-1) == -(2**63) + 1 and c.lwm == -(2**63)
    with pytest.raises(ValueError, match="Java long range"):
        c.next(-1)


@pytest.mark.parametrize("raw, match", [
    (b"\x02\x00\x00\x00\x00", "has version 2, expected 1"),
    (b"\x01\x00\x00\x00\x01", "expected 1 items of 16 bytes"),
    (b"\x01\xff\xff\xff\xff", "expected -1 items"),
    (struct.pack(">biqq", 1, 1, MAX, 5), "ends past int64"),
    (struct.pack(">biqq", 1, 1, -1, 5), "is negative"),
    (struct.pack(">biqqqq", 1, 2, 4, 1, 4, 2), "two items start at 4"),
    (b"\x01", "must hold a version byte and a count"),
])
def test_one_reader_of_gap_bytes_for_the_model_and_the_arrays(raw, match):
    with pytest.raises(ValueError, match=match):
        ignite.UpdateCounter(gaps=raw)
    with pytest.raises(ValueError, match=match):
        ignite.UpdateCounters(1).init(0, 0, raw)
    with pytest.raises(ValueError, match=match):
        ignite.UpdateCounters(1).from_bytes(0, raw)


def test_gap_bytes_of_another_type_are_a_type_error():
    for bad in ("abc", 5, [1]):
        with pytest.raises(TypeError, match="^gaps must be bytes or None"):
            ignite.UpdateCounter(gaps=bad)


def test_valid_gap_bytes_round_trip_through_the_model():
    c = ignite.UpdateCounter()
    c.update(5, 3)
    c.update(1, 1)
    raw = c.to_bytes()
    assert ignite.UpdateCounter(gaps=raw).gaps == c.gaps == [(1, 1), (5, 3)]
    arr = ignite.UpdateCounters(1)
    arr.init(0, 0, raw)
    assert arr.to_bytes(0) == raw


def test_batches_refuse_what_the_kernel_would_wrap():
    c = ignite.UpdateCounters(2)
    c.reserve_batch([0], [MAX])
    with pytest.raises(ValueError, match=r"^deltas\[1\] = 1: reserving it would take the HWM "
                                         r"of partition 0 past the Java long range"):
        c.reserve_batch([1, 0], [5, 1])
    assert c.hwm.tolist() == [MAX, 0]          # all or nothing
    with pytest.raises(ValueError, match=r"^starts\[0\] \+ deltas\[0\]"):
        c.update_batch([0], [MAX], [1])
    with pytest.raises(ValueError, match=r"^partitions\[0\] = 2147483647 is outside"):
        c.update_batch(np.array([2**31 - 1], np.int64), [0], [1])


# --------------------------------------------------------------------------- sizes
def test_assign_refuses_results_beyond_max_cells_before_allocating():
    nodes = [f"n{i}" for i in range(affinity.MAX_CELLS // 65_000 + 1)]
    with pytest.raises(ValueError, match=r"^assign's result \(65000 partitions x \d+ nodes\) "
                                         r"would have \d+ cells, more than MAX_CELLS"):
        ignite.assign(nodes, partitions=65_000, backups=ignite.REPLICATED)
    # the same nodes with 2 backups are small
    assert ignite.assign(nodes[:50], partitions=1024, backups=2).shape == (1024, 3)


def test_node_weight_refuses_huge_broadcasts_and_names_mismatched_shapes():
    with pytest.raises(ValueError, match="more than MAX_CELLS"):
        ignite.node_weight(np.zeros((1 << 15, 1), np.int32), np.zeros((1, 1 << 15), np.int32))
    with pytest.raises(ValueError, match=r"^cid_hash of shape \(2,\) and partition of shape "
                                         r"\(3,\) do not broadcast"):
        ignite.node_weight([1, 2], [1, 2, 3])
    swapped = np.array([0, 1], ">i4")
    assert ignite.node_weight(swapped, 0).tolist() == ignite.node_weight([0, 1], 0).tolist()


@pytest.mark.parametrize("bad, exc", [(2**40, ValueError), (0, ValueError), (65_001, ValueError),
                                      (1.5, TypeError), (float("nan"), TypeError),
                                      (True, TypeError)])
def test_partition_counts_of_affinity(bad, exc):
    with pytest.raises(exc, match="^partitions"):
        ignite.assign(["a", "b"], partitions=bad)


def test_rebalance_inputs_are_read_by_value():
    O, M = ignite.PartitionState.OWNING, ignite.PartitionState.MOVING
    states = np.array([[O], [O], [M]], np.int8)
    counters = np.array([[120], [100], [0]], np.int64)
    want = ignite.rebalance_plan(states, counters, sizes=[10_000])
    got = ignite.rebalance_plan(states, counters.astype(">i8"), sizes=[10_000])
    assert got.rebalance.tolist() == want.rebalance.tolist()
    assert got.supplier.tolist() == want.supplier.tolist()
    with pytest.raises(TypeError, match="^counters must hold integers"):
        ignite.rebalance_plan(states, counters.astype(float))


def test_update_counters_partition_count_is_bounded_by_ignites_maximum():
    assert len(ignite.UpdateCounters(ignite.MAX_PARTITIONS)) == 65_000
    for bad in (65_001, 2**31 - 1):   # 2**31 - 1 used to allocate ~100 GB of gap buffers
        with pytest.raises(ValueError, match=rf"^partition_count must be <= 65000, got {bad}"):
            ignite.UpdateCounters(bad)


def test_uuid_batches_hash_strings_as_strings_unless_asked_to_parse():
    import uuid
    u = uuid.UUID(int=5)
    with pytest.raises(TypeError, match=r"^keys\[1\] is a str, expected uuid.UUID"):
        ignite.java_hash_code([u, str(u)])
    with pytest.raises(ValueError, match=r"^keys\[1\] is None"):
        ignite.partition_ids([u, None])
    assert ignite.java_hash_code([u, str(u)], key_type="uuid").tolist() == \
        [ignite.java_hash_code(u)] * 2
    assert ignite.java_hash_code([str(u)]).tolist() == [ignite.java_hash_code(str(u))]


@pytest.mark.parametrize("ids, as_list", [
    (np.array([-1, -2, -3, -4], np.int64), [np.int64(v) for v in (-1, -2, -3, -4)]),
    (np.array([-1, -2, -3], np.int32), [-1, -2, -3]),
    (np.array(["a", "b", "c"]), ["a", "b", "c"]),
], ids=["int64", "int32", "str"])
def test_consistent_id_arrays_keep_their_java_types(ids, as_list):
    # an int64 array's ids are Longs, like np.int64 ids (they were hashed as Integers:
    # Long.hashCode(-2) is 1, Integer.hashCode(-2) is -2)
    for backups in (0, 1, ignite.REPLICATED):
        assert ignite.assign(ids, partitions=64, backups=backups).tolist() == \
            ignite.assign(as_list, partitions=64, backups=backups).tolist()
    with pytest.raises(ValueError, match=r"^consistent_ids must be 1-dimensional"):
        ignite.assign(np.array([["a", "b"]]))


def _stale_item_at_the_top(c, p=None):
    """LWM 2**63 - 1 with a gap item left below it: reachable with valid calls (the first
    absolute update drops the items, later ones keep them)."""
    if p is None:
        c.update_abs(5)
        c.update(20, 1)
        c.update_abs(MAX)
    else:
        c.update_absolute(p, 5)
        c.update(p, 20, 1)
        c.update_absolute(p, MAX)


def test_finalize_never_reports_a_gap_past_int64():
    # fuzz finding (ignite_counters): the kernel reported the gap (-2**63, 20) (Java's
    # wrap), the model (2**63, 20) (not a Java long)
    arr = ignite.UpdateCounters(3)
    _stale_item_at_the_top(arr, 1)
    arr.update(2, 7, 1)
    with pytest.raises(ValueError, match=r"^finalize: partition 1 would report a gap starting "
                                         r"at lwm \+ 1 = 2\*\*63.*nothing changed$"):
        arr.finalize()
    assert arr.gaps(1) == [(20, 1)] and arr.gaps(2) == [(7, 1)] and arr.lwm[1] == MAX
    assert arr.finalize([2]) == {2: [(1, 7)]}          # the other partitions still can
    for cls in (ignite.UpdateCounter, ref.UpdateCounter):
        c = cls()
        _stale_item_at_the_top(c)
        with pytest.raises(ValueError, match=r"finalize\(\): lwm \+ 1"):
            c.finalize()
        assert c.gaps == [(20, 1)] and c.lwm == MAX


def test_finalize_refuses_items_that_end_at_the_top_before_another():
    raw = struct.pack(">biqqqq", 1, 2, 0, MAX, 22, 22)    # (0, MAX) then (22, 22)
    arr = ignite.UpdateCounters(1)
    arr.init(0, 0, raw)
    with pytest.raises(ValueError, match="^finalize: partition 0"):
        arr.finalize()
    with pytest.raises(ValueError, match="Java long range"):
        ignite.UpdateCounter(0, raw).finalize()


def test_exchange_checks_every_node_before_finalizing_any():
    a, b = ignite.UpdateCounters(2), ignite.UpdateCounters(2)
    a.update(0, 3, 1)
    _stale_item_at_the_top(b, 1)
    with pytest.raises(ValueError, match=r"^finalize: counters_by_node\[1\], partition 1"):
        ignite.exchange([a, b], finalize=True)
    assert a.gaps(0) == [(3, 1)] and a.lwm.tolist() == [0, 0]      # node 0 untouched
    assert b.gaps(1) == [(20, 1)]
