"""spark_integration.movement: estimate_movement on real data, Hazelcast and Ignite."""
import numpy as np
import pyarrow as pa
import pytest

import hzfast
import spark_integration as si
from spark_integration.movement import ignite_transfers

pytestmark = pytest.mark.spark


def test_ignite_transfers_are_set_differences():
    cur = np.array([[0, 1], [1, 2], [-1, -1], [2, -1]], np.int32)
    tgt = np.array([[1, 0], [3, 2], [0, 1], [2, 3]], np.int32)
    p, d, s = ignite_transfers(cur, tgt)
    assert sorted(zip(p.tolist(), d.tolist(), s.tolist())) == [
        (1, 3, 1), (2, 0, -1), (2, 1, -1), (3, 3, 2)]


def test_estimate_movement_totals_equal_numpy(spark, key_frame):
    pdf, _ = key_frame
    import pandas as pd
    n = len(pdf)
    rng = np.random.default_rng(3)
    sized = spark.createDataFrame(pd.DataFrame({"s": pdf["s"], "v": rng.integers(0, 5000, n)}))
    current = hzfast.PartitionTable.round_robin(271, 5, 3)
    target = hzfast.PartitionTable.round_robin(271, 7, 3)
    est = si.estimate_movement(sized, "s", current, target, size_col="v", bandwidth=1e8)

    pid = hzfast.partition_ids(pa.array(pdf["s"].tolist()), 271)
    v = sized.toPandas()["v"].to_numpy()
    rows = np.bincount(pid, minlength=271)
    byts = np.zeros(271, np.int64)
    np.add.at(byts, pid, v)
    assert np.array_equal(est.partition_rows, rows)
    assert np.array_equal(est.partition_bytes, byts)
    assert est.total_rows == n and est.total_bytes == int(v.sum())
    plan = hzfast.plan_migrations(current, target)
    dst = np.asarray(plan.destination)
    mask = (dst >= 0) & (np.asarray(plan.destination_current_index) < 0) & ~np.asarray(plan.instant)
    p = np.asarray(plan.partition_id)[mask]
    bin_ = np.zeros(7, np.int64)
    np.add.at(bin_, dst[mask], byts[p])
    assert np.array_equal(est.member_bytes_in, bin_)
    assert est.transferred_bytes == int(byts[p].sum()) == int(est.member_bytes_in.sum())
    assert int(est.member_bytes_out.sum()) == est.transferred_bytes
    cur, tgt = np.asarray(current.replicas), np.asarray(target.replicas)
    new_in_row = np.array([len(set(tgt[q]) - set(cur[q])) for q in range(271)])
    assert est.transferred_bytes > int((new_in_row * byts).sum())   # planner moves more
    # the summary's figures, by their definitions
    summ = est.summary()
    assert "moved_fraction" not in summ
    assert summ["copies_per_byte"] == pytest.approx(est.transferred_bytes / est.total_bytes)
    assert summ["copies_per_byte"] > 1                     # every replica moves: > 1 copy/byte
    moved = np.zeros(271, bool)
    moved[p] = True
    assert summ["data_moved_fraction"] == pytest.approx(byts[moved].sum() / byts.sum())
    assert 0 < summ["data_moved_fraction"] <= 1
    owner_moved = cur[:, 0] != tgt[:, 0]
    assert summ["owner_moved_fraction"] == pytest.approx(byts[owner_moved].sum() / byts.sum())
    assert summ["transferred_bytes"] == est.transferred_bytes
    assert summ["system"] == "hazelcast" and summ["schedule_rounds"] >= 1
    assert est.estimated_seconds == pytest.approx(
        max(est.member_bytes_in.max(), est.member_bytes_out.max()) / 1e8)
    # new members written into slots in place: every new replica is exactly one transfer
    tgt2 = cur.copy()
    for q in range(0, 271, 4):
        tgt2[q, q % 3] = 5 + q % 2
    est2 = si.estimate_movement(sized, "s", current, hzfast.PartitionTable(tgt2, members=7),
                                size_col="v")
    new_in_row = np.array([len(set(tgt2[q]) - set(cur[q])) for q in range(271)])
    assert est2.transferred_bytes == int((new_in_row * byts).sum())
    expect_out = np.zeros(7, np.int64)
    for q in range(0, 271, 4):
        expect_out[cur[q, 0]] += byts[q]
    assert np.array_equal(est2.member_bytes_out, expect_out)
    assert est2.summary()["copies_per_byte"] < 1
    assert len(est.members_frame()) == 7 and len(est.partitions_frame()) == 271


def test_estimate_movement_ignite(spark, key_frame):
    pdf, df = key_frame
    nodes = [f"node-{j}" for j in range(6)]
    current = hzfast.ignite.assign(nodes[:5], partitions=1024, backups=1)
    target = hzfast.ignite.assign(nodes, partitions=1024, backups=1)   # a node joins
    est = si.estimate_movement(df, "s", current, target, system="ignite")
    pid = hzfast.ignite.partition_ids(pa.array(pdf["s"].tolist()), 1024)
    utf8 = np.array([len(x.encode()) for x in pdf["s"]])
    byts = np.zeros(1024, np.int64)
    np.add.at(byts, pid, 5 + utf8)                         # Ignite binary String size
    assert np.array_equal(est.partition_bytes, byts)
    new = np.array([len(set(target[q]) - set(current[q])) for q in range(1024)])
    assert est.transferred_bytes == int((new * byts).sum()) > 0
    assert est.member_bytes_in[5] == est.transferred_bytes     # only the new node receives
    sup = np.zeros(6, np.int64)
    for q in np.flatnonzero(new):
        sup[current[q, 0]] += byts[q] * new[q]
    assert np.array_equal(est.member_bytes_out, sup)
    summ = est.summary()
    assert summ["system"] == "ignite" and summ["schedule_rounds"] is None
    assert est.plan is None and summ["transfers"] == int(new.sum())
    assert 0 < summ["data_moved_fraction"] < 1


def test_estimate_movement_default_sizes_and_nulls(spark, table):
    df = spark.createDataFrame([("a",), ("ключ",), (None,), ("",)], "k string")
    t2 = hzfast.PartitionTable.round_robin(271, 6, 3)
    est = si.estimate_movement(df, "k", table, t2)
    assert est.total_rows == 3 and est.unplaced_rows == 1
    assert est.total_bytes == (12 + 1) + (12 + 8) + 12
    ints = spark.createDataFrame([(1,), (2,)], "k bigint")
    assert si.estimate_movement(ints, "k", table, t2).total_bytes == 32
    assert si.estimate_movement(ints, "k", np.asarray(table.replicas), np.asarray(t2.replicas),
                                system="ignite").total_bytes == 18


def test_estimate_movement_bad_input_before_any_job(spark, table, no_job):
    df, check = no_job
    cases = [
        (lambda: si.estimate_movement(df, "s", table, hzfast.PartitionTable.round_robin(20, 3)),
         ValueError, "partition count"),
        (lambda: si.estimate_movement(df, "s", table, table, size_col="nope"), ValueError, "not found"),
        (lambda: si.estimate_movement(df, "s", table, table, size_col="s"), TypeError, "bytes"),
        (lambda: si.estimate_movement(df, "x", table, table), ValueError, "not found"),
        (lambda: si.estimate_movement(df, "s", table, "t"), ValueError, "target: no table file"),
        (lambda: si.estimate_movement(df, "s", table, 3.0), TypeError, "target"),
        (lambda: si.estimate_movement(df, "s", np.array([[0, 0]] * 271, np.int32), table),
         ValueError, "current is not a valid replica table: replicas: partition 0 holds member 0"),
        (lambda: si.estimate_movement(df, "s", table, table, bandwidth=0), ValueError, "bandwidth"),
        (lambda: si.estimate_movement(df, "s", table, table, system="redis"), ValueError, "system"),
        (lambda: si.estimate_movement(df, "s", table, table, max_parallel_migrations=0),
         ValueError, "max_parallel_migrations"),
    ]
    for fn, exc_type, msg in cases:
        err = check(fn)
        assert isinstance(err, exc_type), (msg, err)
        assert msg in str(err), (msg, str(err))
