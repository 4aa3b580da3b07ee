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

