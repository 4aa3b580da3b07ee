"""hzfast.ignite.rebalance: the rebalance decision (vector, Ignite's rules, differential
against the reference) and the exchange step."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from hzfast import ignite
from hzfast.ignite import (
    FULL,
    HISTORICAL,
    NONE,
    PartitionState,
    RebalanceKind,
    UpdateCounterError,
    UpdateCounters,
    exchange,
    rebalance_plan,
)
from hzfast.reference import counters as ref

O, M, R, E, L = (int(s) for s in (PartitionState.OWNING, PartitionState.MOVING,
                                  PartitionState.RENTING, PartitionState.EVICTED,
                                  PartitionState.LOST))


def test_codes_are_ignites():
    assert [s.name for s in PartitionState] == ["MOVING", "OWNING", "RENTING", "EVICTED",
                                                "LOST"]
    assert [int(s) for s in PartitionState] == [0, 1, 2, 3, 4]       # Java ordinals
    assert (NONE, HISTORICAL, FULL) == (0, 1, 2) and ignite.NONE is RebalanceKind.NONE


def test_rebalance_decision_vector(ignite_vectors):
    v = ignite_vectors["rebalance_decision_example"]
    inp, out = v["input"], v["output"]
    names = sorted(inp["nodes"])
    p = inp["partition"]
    P = p + 5
    col = {k: [] for k in ("states", "counters", "history", "sizes")}
    for name in names:
        node = inp["nodes"][name]
        col["states"].append(int(PartitionState[node["state"]]))
        col["counters"].append(node["lwm"] if node["state"] == "OWNING"
                               else node["initial_cntr"])
        col["history"].append(node.get("wal_history_from_cntr", -1))
        col["sizes"].append(node.get("size", 0))
    arrays = {k: np.repeat(np.array(c, dtype=np.int64)[:, None], P, axis=1)
              for k, c in col.items()}
    plan = rebalance_plan(arrays["states"], arrays["counters"], history=arrays["history"],
                          sizes=arrays["sizes"], threshold=inp["threshold_entries"])
    idx = {n: i for i, n in enumerate(names)}
    assert plan.max_counter[p] == out["maxCntr"]
    assert [names[i] for i in np.flatnonzero(plan.max_owner[:, p])] == out["max_owners"]
    # historical suppliers {A: 100}: C (at 100) is served by A from its counter
    (supplier_name, supplied_from), = out["historical_suppliers"].items()
    reset = [n for n in names if col["states"][idx[n]] == O and not plan.max_owner[idx[n], p]]
    assert reset == out["reset_to_MOVING"] == ["C"]
    c = idx["C"]
    assert out["C_rebalance"].startswith("historical from A")
    assert plan.rebalance[c, p] == HISTORICAL and plan.supplier[c, p] == idx[supplier_name]
    assert plan.from_counter[c, p] == col["counters"][c] >= supplied_from
    d = idx["D"]
    assert out["D_rebalance"].startswith("full")
    owners = [idx[n] for n in out["max_owners"]]          # remoteOwners, node order
    assert plan.rebalance[d, p] == FULL and plan.supplier[d, p] == owners[p % len(owners)]
    assert plan.from_counter[d, p] == -1
    assert plan.rebalance[owners, p].tolist() == [NONE, NONE]
    assert plan.supplier[owners, p].tolist() == [-1, -1]
    # on a server leave nothing is reset: C stays OWNING, only D moves
    leave = rebalance_plan(arrays["states"], arrays["counters"], history=arrays["history"],
                           sizes=arrays["sizes"], reset=False)
    assert leave.rebalance[:, p].tolist() == [NONE, NONE, NONE, FULL]


def _column_plan(states, counters, **kw):
    """rebalance_plan on one partition (partition id ``kw.pop('p', 0)``)."""
    p = kw.pop("p", 0)
    st = np.full((len(states), p + 1), E, np.int8)
    cn = np.zeros((len(states), p + 1), np.int64)
    st[:, p], cn[:, p] = states, counters
    for k in ("history", "sizes"):
        if k in kw and kw[k] is not None:
            a = np.full((len(states), p + 1), -1 if k == "history" else 0, np.int64)
            a[:, p] = kw[k]
            kw[k] = a
    plan = rebalance_plan(st, cn, **kw)
    return (plan.rebalance[:, p].tolist(), plan.supplier[:, p].tolist(),
            plan.from_counter[:, p].tolist())


def test_counter_zero_always_full():
    kinds, _sup, frm = _column_plan([O, O, M], [50, 50, 0], history=[0, 0, -1],
                                   sizes=[10**6] * 3, prefer_history=True)
    assert kinds == [NONE, NONE, FULL] and frm == [-1, -1, -1]


def test_threshold_small_partitions_never_historical():
    args = {"history": [10, -1, -1], "sizes": [500, 500, 500]}
    assert _column_plan([O, O, M], [90, 80, 80], **args)[0] == [NONE, FULL, FULL]
    args["sizes"] = [501, 500, 500]
    assert _column_plan([O, O, M], [90, 80, 80], **args)[0] == [NONE, HISTORICAL, HISTORICAL]
    args["sizes"] = [500, 500, 500]
    assert _column_plan([O, O, M], [90, 80, 80], prefer_history=True, **args)[0] == \
        [NONE, HISTORICAL, HISTORICAL]
    assert _column_plan([O, O, M], [90, 80, 80], threshold=499, **args)[0] == \
        [NONE, HISTORICAL, HISTORICAL]


def test_history_must_be_worth_it():
    """max - c < size: a lag of 50 over 40 entries is a full copy, over 51 historical."""
    base = {"threshold": 0}
    assert _column_plan([O, M], [100, 50], sizes=[40, 0], history=[0, -1], **base)[0] == [NONE, FULL]
    assert _column_plan([O, M], [100, 50], sizes=[51, 0], history=[0, -1], **base)[0] == [NONE, HISTORICAL]
    # the walk moves on to a larger non-max counter: 60 qualifies, so only copies >= 60 gain
    kinds, _sup, frm = _column_plan([O, M, M], [100, 50, 60], sizes=[41, 0, 0], history=[0, -1, -1], **base)
    assert kinds == [NONE, FULL, HISTORICAL] and frm == [-1, -1, 60]


def test_history_must_reach_back():
    # the WAL from 70 cannot serve a copy at 60
    kinds, sup, frm = _column_plan([O, M, M], [100, 60, 80], history=[70, -1, -1])
    assert kinds == [NONE, FULL, HISTORICAL] and sup == [-1, 0, 0] and frm == [-1, -1, 80]


def test_supplier_choice_is_p_mod_n_in_node_order():
    for p in range(6):
        kinds, sup, _ = _column_plan([O, M, O, O], [9, 0, 9, 9], p=p)
        assert kinds == [NONE, FULL, NONE, NONE] and sup[1] == [0, 2, 3][p % 3]
        kinds, sup, frm = _column_plan([O, M, O, O], [9, 4, 9, 9], history=[1, -1, 2, 5],
                                       p=p)
        assert kinds[1] == HISTORICAL and sup[1] == [0, 2][p % 2] and frm[1] == 4


def test_no_owner_no_rebalance_and_other_states_ignored():
    kinds, sup, _ = _column_plan([M, R, L, E], [0, 5, 5, 5])
    assert kinds == [NONE] * 4 and sup == [-1] * 4
    st = np.array([[M], [R]], np.int8)
    plan = rebalance_plan(st, [[0], [7]])
    assert plan.max_counter.tolist() == [-1] and not plan.max_owner.any()
    # RENTING copies neither own nor count as non-max
    kinds, _, _ = _column_plan([O, R, M], [9, 3, 3], history=[3, -1, -1])
    assert kinds == [NONE, NONE, HISTORICAL]


def test_reset_mask_resets_only_joined_nodes():
    kinds, sup, _ = _column_plan([O, O, O], [9, 5, 5], reset=np.array([False, False, True]))
    assert kinds == [NONE, NONE, FULL] and sup[2] in (0, 1)
    kinds, sup, _ = _column_plan([O, O, O], [9, 5, 5], reset=np.array([False, False, True]),
                                 p=1)
    assert sup[2] == 1          # OWNING nodes 0 and 1 both remain owners


# ---- differential against the reference
def _random_inputs(rng, N, P, *, with_history=True, sizes_kind="2d"):
    st = rng.choice(np.array([M, O, O, O, R, E, L], np.int8), size=(N, P))
    cn = rng.integers(0, 12, (N, P))
    cn[rng.random((N, P)) < 0.2] = 0
    hist = np.where(rng.random((N, P)) < 0.6, rng.integers(0, 12, (N, P)), -1) \
        if with_history else None
    if sizes_kind == "2d":
        sz = rng.integers(0, 14, (N, P))
    elif sizes_kind == "1d":
        sz = rng.integers(0, 14, P)
    else:
        sz = None
    return st, cn, hist, sz


def _check_against_reference(st, cn, hist, sz, threshold, prefer, reset):
    plan = rebalance_plan(st, cn, history=hist, sizes=sz, threshold=threshold,
                          prefer_history=prefer, reset=reset)
    N, P = st.shape
    rs = reset if isinstance(reset, bool) else reset.tolist()
    for p in range(P):
        sizes = None if sz is None else (sz[p:p + 1].repeat(N).tolist() if sz.ndim == 1
                                         else sz[:, p].tolist())
        want = ref.rebalance_decision(p, st[:, p].tolist(), cn[:, p].tolist(),
                                      None if hist is None else hist[:, p].tolist(), sizes,
                                      threshold, prefer, rs)
        assert plan.max_counter[p] == want["max"], p
        assert np.flatnonzero(plan.max_owner[:, p]).tolist() == \
            (want["max_owners"] if want["max"] >= 0 else []), p
        assert plan.rebalance[:, p].tolist() == want["kind"], p
        assert plan.supplier[:, p].tolist() == want["supplier"], p
        assert plan.from_counter[:, p].tolist() == want["from_counter"], p
    return plan


def test_differential_seeded():
    rng = np.random.default_rng(99)
    seen = set()
    for trial in range(60):
        N, P = int(rng.integers(1, 9)), int(rng.integers(1, 200))
        kind = ("2d", "1d", None)[trial % 3]
        st, cn, hist, sz = _random_inputs(rng, N, P, with_history=trial % 5 != 4,
                                          sizes_kind=kind)
        reset = bool(trial % 2) if trial % 4 else rng.random(N) < 0.5
        plan = _check_against_reference(st, cn, hist, sz, int(rng.integers(0, 12)),
                                        bool(trial % 7 == 0), reset)
        seen.update(np.unique(plan.rebalance).tolist())
    assert seen == {NONE, HISTORICAL, FULL}


@settings(max_examples=60, deadline=None)
@given(seed=hst.integers(0, 2**32 - 1), N=hst.integers(1, 20), P=hst.integers(1, 300),
       threshold=hst.integers(-1, 15), prefer=hst.booleans(),
       sizes_kind=hst.sampled_from(["2d", "1d", None]), history=hst.booleans(),
       reset=hst.sampled_from([True, False, "mask"]))
def test_differential_hypothesis(seed, N, P, threshold, prefer, sizes_kind, history, reset):
    rng = np.random.default_rng(seed)
    st, cn, hist, sz = _random_inputs(rng, N, P, with_history=history, sizes_kind=sizes_kind)
    if reset == "mask":
        reset = rng.random(N) < 0.5
    _check_against_reference(st, cn, hist, sz, threshold, prefer, reset)


def test_large_blocks_match_reference():
    """More partitions than one kernel block, 16 nodes, realistic counters."""
    rng = np.random.default_rng(7)
    N, P = 16, 700
    st, cn, hist, sz = _random_inputs(rng, N, P)
    cn = cn * 1000 + rng.integers(0, 3, (N, P))
    hist = np.where(hist >= 0, hist * 1000, -1)
    _check_against_reference(st, cn, hist, sz * 1000, 500, False, True)


# ---- bad input
@pytest.fixture
def good():
    st = np.array([[O, O], [M, O]], np.int8)
    return {"states": st, "counters": np.array([[5, 6], [0, 6]]),
                "history": np.array([[1, -1], [-1, -1]]), "sizes": np.array([[9, 9], [9, 9]])}


@pytest.mark.parametrize("change, error, message", [
    ({"states": np.array([[1, 7], [0, 1]], np.int8)}, ValueError,
     r"states\[0, 1\] = 7 is not a PartitionState code"),
    ({"states": np.array([[1, 1], [0, -1]])}, ValueError, r"states\[1, 1\] = -1"),
    ({"states": np.array([[1, 1], [0, 300]])}, ValueError, r"states\[1, 1\] = 300"),
    ({"states": [1, 1]}, ValueError, "states must be 2-dimensional"),
    ({"states": np.ones((2, 2), float)}, TypeError, "states must hold integers"),
    ({"counters": np.array([[5, 6], [0, -1]])}, ValueError, (r"counters\[1, 1\] = -1 is "
                                                             r"negative")),
    ({"counters": np.zeros((2, 3), np.int64)}, ValueError, (r"counters must have the shape "
                                                             r"of states \(2, 2\)")),
    ({"history": np.array([[1, -2], [-1, -1]])}, ValueError, r"history\[0, 1\] = -2"),
    ({"history": np.zeros((3, 2), np.int64)}, ValueError, "history must have the shape"),
    ({"sizes": np.array([[9, 9], [-4, 9]])}, ValueError, r"sizes\[1, 0\] = -4 is negative"),
    ({"sizes": np.array([9, -4])}, ValueError, r"sizes\[0, 1\] = -4 is negative"),
    ({"sizes": np.array([9, 9, 9])}, ValueError, "sizes must have shape"),
    ({"reset": np.array([True])}, ValueError, "reset must be"),
    ({"threshold": 1.5}, TypeError, "threshold"),
    ({"prefer_history": 1}, TypeError, "prefer_history"),
    ({"counters": "x"}, TypeError, "counters must be a 2-D"),
])
def test_bad_input(good, change, error, message):
    args = {**good, **change}
    kept = {k: v.copy() for k, v in good.items()}
    with pytest.raises(error, match=message):
        rebalance_plan(args.pop("states"), args.pop("counters"), **args)
    for k, v in good.items():
        assert np.array_equal(v, kept[k])


def test_outputs_read_only_inputs_untouched(good):
    kept = {k: v.copy() for k, v in good.items()}
    plan = rebalance_plan(good["states"], good["counters"], history=good["history"],
                          sizes=good["sizes"])
    for k, v in good.items():
        assert np.array_equal(v, kept[k])
    for name in ("max_counter", "max_owner", "rebalance", "supplier", "from_counter"):
        with pytest.raises(ValueError):
            getattr(plan, name)[...] = 0
    assert plan.rebalance.dtype == np.int8 and plan.supplier.dtype == np.int32
    assert plan.max_owner.dtype == bool and plan.from_counter.dtype == np.int64
    assert rebalance_plan(np.empty((0, 3), np.int8), np.empty((0, 3), np.int64)).max_counter.tolist() \
        == [-1, -1, -1]
    assert rebalance_plan(np.empty((2, 0), np.int8), np.empty((2, 0), np.int64)).rebalance.shape == (2, 0)


# ---- exchange
def _scalar_copy(c, p):
    """A reference scalar counter with partition p's state (first flag still set)."""
    s = ref.UpdateCounter(0)
    for start, delta in c.gaps(p):
        s._put(start, delta)
    s._lwm, s._hwm = int(c.lwm[p]), int(c.hwm[p])
    return s


def test_exchange_matches_reference():
    rng = np.random.default_rng(11)
    for trial in range(30):
        N, P = int(rng.integers(1, 6)), int(rng.integers(1, 40))
        nodes = [UpdateCounters(P) for _ in range(N)]
        for c in nodes:                       # some applied ranges, some gaps
            parts = rng.integers(0, P, 60)
            starts = rng.integers(0, 30, 60)
            c.update_batch(parts, starts, rng.integers(1, 4, 60))
            c.reserve_batch(parts[:10], rng.integers(0, 5, 10))
        states = rng.choice(np.array([O, O, M, R, E], np.int8), (N, P))
        finalize = [True, None, rng.random(P) < 0.5][trial % 3]
        refs = [[_scalar_copy(c, p) for p in range(P)] for c in nodes]
        fin_list = None if finalize is None else ([True] * P if finalize is True
                                                  else finalize.tolist())
        try:
            want = ref.exchange(refs, states.tolist(), fin_list)
        except ref.UpdateCounterError:
            before = [(c.lwm.copy(), c.hwm.copy()) for c in nodes]
            with pytest.raises(UpdateCounterError, match="nothing changed"):
                exchange(nodes, states=states, finalize=finalize)
            for c, (lw, hw) in zip(nodes, before):
                assert np.array_equal(c.lwm, lw) and np.array_equal(c.hwm, hw)
            continue
        got = exchange(nodes, states=states, finalize=finalize)
        assert got.max_lwm.tolist() == want
        for c, row in zip(nodes, refs):
            assert c.lwm.tolist() == [r.lwm for r in row]
            assert c.hwm.tolist() == [r.hwm for r in row]
            assert [c.gaps(p) for p in range(P)] == [r.gaps for r in row]


def test_exchange_new_primary_never_reserves_an_applied_counter():
    """The primary (node 0, LWM 10) leaves; node 1 becomes primary with LWM 4 and gaps up
    to 9: after the exchange it reserves from 10 on."""
    old, new, third = UpdateCounters(1), UpdateCounters(1), UpdateCounters(1)
    old.update(0, 0, 10)
    new.update_batch([0, 0], [0, 6], [4, 3])
    third.update(0, 0, 7)
    result = exchange([new, third], finalize=True)
    assert result.finalized == [{0: [(5, 6)]}, {}]
    assert result.max_lwm.tolist() == [9]
    assert new.lwm[0] == third.lwm[0] == 9 and new.reserve(0, 1) == 9
    assert old.lwm[0] == 10                  # the node that left is not touched


def test_exchange_bad_input():
    a, b = UpdateCounters(2), UpdateCounters(3)
    with pytest.raises(ValueError, match=r"counters_by_node\[1\] has 3 partitions"):
        exchange([a, b])
    with pytest.raises(ValueError, match=r"counters_by_node\[1\] is counters_by_node\[0\]"):
        exchange([a, a])
    with pytest.raises(TypeError, match="counters_by_node must be a sequence"):
        exchange(a)
    with pytest.raises(TypeError, match=r"counters_by_node\[0\] must be UpdateCounters"):
        exchange([ref.UpdateCounter()])
    with pytest.raises(ValueError, match=r"states must have shape \(1, 2\)"):
        exchange([a], states=np.ones((2, 2), np.int8))
    with pytest.raises(ValueError, match=r"states\[0, 1\] = 9"):
        exchange([a], states=np.array([[1, 9]]))
    with pytest.raises(ValueError, match=r"finalize\[0\] = 5"):
        exchange([a], finalize=[5])
    assert exchange([]).max_lwm.shape == (0,)
