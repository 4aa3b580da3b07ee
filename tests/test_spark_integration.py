"""spark_integration against a real local SparkSession (pyspark + Java 17).

One session-scoped SparkSession (local[2], UI off, 2 shuffle partitions, driver on 127.0.0.1,
Python workers = this interpreter). Oracles: hzfast.partition_ids / hzfast.ignite.partition_ids
/ PartitionTable.locate (themselves checked against the vectors in test_hashing), and the
vectors of hazelcast.json / ignite.json directly.
"""
import os
import sys
import uuid

import numpy as np
import pyarrow as pa
import pytest

import hzfast
import spark_integration as si
from spark_integration.placement import partition_batch, routing_keys, spark_hash_int

pytestmark = pytest.mark.spark

N_ROWS = 120_000


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = si.local_session(**{
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": 2,
        "spark.default.parallelism": 2,
        "spark.app.name": "hzfast-tests",
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def table():
    # 271 partitions, 5 members, 3 replicas, a few partitions without owner / backups
    reps = np.asarray(hzfast.PartitionTable.round_robin(271, 5, 3).replicas).copy()
    reps[7] = [-1, -1, -1]
    reps[8, 2] = -1
    return hzfast.PartitionTable(reps, members=5)


def _strings(n, seed=1):
    rng = np.random.default_rng(seed)
    pools = ["key-{}", "ключ-{}", "日本語キー{}", "emoji😀{}", "ünïcødé-{}", "{}", "The quick brown fox {}"]
    out = []
    for i in range(n):
        r = rng.integers(0, 20)
        if r == 0:
            out.append("")
        else:
            out.append(pools[r % len(pools)].format(int(rng.integers(0, 10**9))))
    return out


@pytest.fixture(scope="module")
def key_frame(spark):
    """N_ROWS rows: id, s (string incl. unicode and ''), i (int), l (bigint), all non-null."""
    import pandas as pd
    rng = np.random.default_rng(7)
    ints = rng.integers(-2**31, 2**31, N_ROWS, dtype=np.int64).astype(np.int32)
    ints[:4] = [0, -1, 2**31 - 1, -2**31]
    longs = rng.integers(-2**63, 2**63 - 1, N_ROWS, dtype=np.int64)
    longs[:4] = [0, -1, 2**63 - 1, -2**63]
    pdf = pd.DataFrame({"id": np.arange(N_ROWS, dtype=np.int64), "s": _strings(N_ROWS),
                        "i": ints, "l": longs})
    return pdf, spark.createDataFrame(pdf)


def _jobs_ran(spark, fn):
    """Run fn under a fresh job group; return (result or exception, number of jobs)."""
    sc = spark.sparkContext
    group = f"hz-{uuid.uuid4()}"
    sc.setJobGroup(group, "bad-input check")
    try:
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - returned for the caller to check
            result = exc
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return result, len(sc.statusTracker().getJobIdsForGroup(group))


# --------------------------------------------------------------------------- Spark-free
def test_partition_batch_nulls_and_offsets():
    full = pa.array(["x", None, "a", "", None, "ünïcødé"])
    sliced = full[1:]                                   # offset 1: validity must follow
    got = partition_batch(sliced, "string", 271)
    assert got.type == pa.int32()
    assert got.to_pylist() == [None, 73, 11, None, 112]
    ints = pa.array([5, None, 0, -1], pa.int32())[1:]
    assert partition_batch(ints, "int", 271).to_pylist() == [None, 11, 164]
    longs = pa.array([None, 0, 1], pa.int64())
    assert partition_batch(longs, "long", 271).to_pylist() == [None, 109, 110]
    assert partition_batch(pa.nulls(3, pa.string()), "string", 271).to_pylist() == [None] * 3
    assert partition_batch(pa.array([], pa.int64()), "long", 271).to_pylist() == []
    data = pa.array([bytes.fromhex("00000000fffffff50000000161"), None], pa.binary())
    assert partition_batch(data, "data", 271).to_pylist() == [73, None]
    ign = pa.array(["key", None, "Hello"])
    assert partition_batch(ign, "string", 1024, "ignite").to_pylist() == [606, None, 148]
    chunked = pa.chunked_array([["a"], [None, "a"]])
    assert partition_batch(chunked, "string", 271).to_pylist() == [73, None, 73]
    # input not modified
    assert full.to_pylist() == ["x", None, "a", "", None, "ünïcødé"]


def test_spark_hash_int_routing_keys_cover_every_bucket():
    for n in (1, 2, 6, 17, 101):
        keys = routing_keys(n)
        assert keys.shape == (n,)
        assert np.array_equal(np.mod(spark_hash_int(keys).astype(np.int64), n), np.arange(n))


def test_local_session_rejects_bad_conf():
    with pytest.raises(ValueError, match="Spark property"):
        si.local_session(shuffle_partitions=4)
    with pytest.raises(TypeError, match="spark.x.y"):
        si.local_session(**{"spark.x.y": [1]})


# --------------------------------------------------------------------------- exactness
def test_spark_hash_int_equals_spark(spark):
    from pyspark.sql import functions as F
    vals = np.array([0, 1, -1, 42, 2**31 - 1, -2**31, 123456789, 7, 1000], dtype=np.int32)
    df = spark.createDataFrame([(int(v),) for v in vals], "v int")
    got = [r[0] for r in df.select(F.hash("v")).collect()]
    assert got == spark_hash_int(vals).tolist()


@pytest.mark.parametrize("col,kind", [("s", "string"), ("i", "int"), ("l", "long")])
def test_with_placement_matches_hzfast(spark, key_frame, table, col, kind):
    pdf, df = key_frame
    out = si.with_placement(df, col, table).select("id", "partition_id", "owner", "backups")
    res = out.toPandas().sort_values("id")
    assert len(res) == N_ROWS
    keys = pa.array(pdf[col].tolist(), type={"string": pa.string(), "int": pa.int32(),
                                             "long": pa.int64()}[kind])
    expect = hzfast.partition_ids(keys, 271, key_type=kind)
    assert np.array_equal(res["partition_id"].to_numpy(), expect)
    assert np.array_equal(res["owner"].to_numpy(), table.locate(keys, kind))
    backups = np.stack(res["backups"].to_numpy())
    assert np.array_equal(backups, np.asarray(table.replicas)[expect, 1:])
    assert (res["owner"] == -1).any()              # partition 7 has no owner


def test_with_placement_ignite_matches_hzfast(spark, key_frame):
    pdf, df = key_frame
    for col, kind, arrow in (("s", "string", pa.string()), ("l", "long", pa.int64())):
        res = si.with_placement(df, col, 1024, system="ignite").select(
            "id", "partition_id").toPandas().sort_values("id")
        expect = hzfast.ignite.partition_ids(pa.array(pdf[col].tolist(), arrow), 1024,
                                             key_type=kind)
        assert np.array_equal(res["partition_id"].to_numpy(), expect)


def test_partition_count_only_adds_partition_column(spark, key_frame):
    _, df = key_frame
    out = si.with_placement(df, "i", 20000)
    assert out.columns == df.columns + ["partition_id"]
    assert out.schema["partition_id"].dataType.simpleString() == "int"


def _placed_many(df, key, counts, system="hazelcast"):
    """One job: partition ids of ``key`` for several partition counts (columns p0, p1, ...)."""
    for j, count in enumerate(counts):
        df = si.with_placement(df, key, count, system=system, partition_col=f"p{j}")
    return sorted(df.collect(), key=lambda r: r["n"])      # no shuffle: sort on the driver


def test_hazelcast_vectors_through_spark(spark, hz_vectors):
    from pyspark.sql import types as T
    vecs = hz_vectors["key_partition_vectors"]["vectors"]
    spark_type = {"string": T.StringType(), "int": T.IntegerType(), "long": T.LongType()}
    for kind in ("string", "int", "long"):
        rows = [v for v in vecs if v["kind"] == kind]
        assert rows
        schema = T.StructType([T.StructField("n", T.IntegerType()),
                               T.StructField("k", spark_type[kind]),
                               T.StructField("b", T.BinaryType())])
        df = spark.createDataFrame(
            [(i, v["key"], bytes.fromhex(v["serialized_hex"])) for i, v in enumerate(rows)], schema)
        # the key column, and its serialized bytes (binary column = Hazelcast Data)
        df = si.with_placement(df, "b", 271, partition_col="d0")
        df = si.with_placement(df, "b", 20000, partition_col="d1")
        got = _placed_many(df, "k", (271, 20000))
        for col, field in (("p0", "partition_id"), ("p1", "partition_id_20000"),
                           ("d0", "partition_id"), ("d1", "partition_id_20000")):
            assert [r[col] for r in got] == [v[field] for v in rows], (kind, col)


def test_ignite_vectors_through_spark(spark, ignite_vectors):
    from pyspark.sql import types as T
    spark_type = {"java.lang.String": T.StringType(), "java.lang.Integer": T.IntegerType(),
                  "java.lang.Long": T.LongType()}
    vecs = ignite_vectors["key_to_partition"]["vectors"]
    checked = 0
    for jtype, stype in spark_type.items():
        rows = [v for v in vecs if v["type"] == jtype]
        df = spark.createDataFrame([(i, v["key"]) for i, v in enumerate(rows)],
                                   T.StructType([T.StructField("n", T.IntegerType()),
                                                 T.StructField("k", stype)]))
        counts = list(rows[0]["partition"])
        got = _placed_many(df, "k", [int(c) for c in counts], system="ignite")
        for j, parts in enumerate(counts):
            assert [r[f"p{j}"] for r in got] == [v["partition"][parts] for v in rows], (jtype, parts)
            checked += len(rows)
    assert checked >= 150


def test_sql_functions_match(spark, key_frame, table):
    pdf, df = key_frame
    pdf = pdf.iloc[:20000]
    df = spark.createDataFrame(pdf)
    names = si.register_functions(spark, table)
    assert set(names) == {"hz_partition_id", "ignite_partition", "hz_owner"}
    df.createOrReplaceTempView("hz_keys")
    res = spark.sql("""
        SELECT id, hz_partition_id(s, 271) AS ps, hz_partition_id(i, 271) AS pi,
               hz_partition_id(l, 20000) AS pl, hz_partition_id(s) AS pdef,
               hz_owner(s) AS os, hz_owner(l) AS ol,
               ignite_partition(s, 1024) AS gs, ignite_partition(i, 1000) AS gi,
               ignite_partition(l) AS gl
        FROM hz_keys""").toPandas().sort_values("id")
    s = pa.array(pdf["s"].tolist())
    i = pa.array(pdf["i"].to_numpy())
    ll = pa.array(pdf["l"].to_numpy())
    assert np.array_equal(res["ps"].to_numpy(), hzfast.partition_ids(s, 271))
    assert np.array_equal(res["pdef"].to_numpy(), hzfast.partition_ids(s, 271))
    assert np.array_equal(res["pi"].to_numpy(), hzfast.partition_ids(i, 271, key_type="int"))
    assert np.array_equal(res["pl"].to_numpy(), hzfast.partition_ids(ll, 20000, key_type="long"))
    assert np.array_equal(res["os"].to_numpy(), table.locate(s, "string"))
    assert np.array_equal(res["ol"].to_numpy(), table.locate(ll, "long"))
    assert np.array_equal(res["gs"].to_numpy(), hzfast.ignite.partition_ids(s, 1024))
    assert np.array_equal(res["gi"].to_numpy(), hzfast.ignite.partition_ids(i, 1000, key_type="int"))
    assert np.array_equal(res["gl"].to_numpy(), hzfast.ignite.partition_ids(ll, 1024, key_type="long"))
    # SQL with the vectors, nulls and a per-row partition count
    got = spark.sql("SELECT hz_partition_id('ünïcødé', 271) a, hz_partition_id(CAST(NULL AS STRING), 271) b,"
                    " hz_partition_id(CAST(-1 AS BIGINT), 271) c, ignite_partition('Кириллица', 1024) d,"
                    " hz_owner(CAST(NULL AS INT)) e").collect()[0]
    assert tuple(got) == (112, None, 231, 192, None)
    per_row = spark.sql("SELECT hz_partition_id(k, n) p FROM VALUES ('key', 271), ('key', 20000),"
                        " ('key', NULL), (NULL, 271) AS t(k, n)").collect()
    assert [r.p for r in per_row] == [80, 17569, None, None]


def test_nulls_get_null_placement(spark, table):
    from pyspark.sql import types as T
    schema = T.StructType([T.StructField("n", T.IntegerType()), T.StructField("s", T.StringType()),
                           T.StructField("i", T.IntegerType()), T.StructField("l", T.LongType()),
                           T.StructField("b", T.BinaryType())])
    data = bytes.fromhex("00000000fffffff50000000161")
    rows = [(0, "a", 1, 1, data), (1, None, None, None, None), (2, "", 0, 0, data)]
    df = spark.createDataFrame(rows, schema)
    for col, expect in (("s", [73, None, 11]), ("i", [31, None, 11]),
                        ("l", [110, None, 109]), ("b", [73, None, 73])):
        got = sorted(si.with_placement(df, col, table).collect(), key=lambda r: r.n)
        assert [r.partition_id for r in got] == expect, col
        assert got[1].owner is None and got[1].backups is None
        assert got[0].owner == int(table.replicas[expect[0], 0])
        assert got[0].backups == np.asarray(table.replicas)[expect[0], 1:].tolist()


def test_key_type_overrides(spark, key_frame):
    pdf, df = key_frame
    small = df.limit(2000)
    res = si.with_placement(small, "i", 271, key_type="long").select("id", "i", "partition_id").toPandas()
    assert np.array_equal(res["partition_id"].to_numpy(),
                          hzfast.partition_ids(res["i"].to_numpy().astype(np.int64), 271, key_type="long"))
    res = si.with_placement(small, "l", 271, key_type="string").select("l", "partition_id").toPandas()
    assert np.array_equal(res["partition_id"].to_numpy(),
                          hzfast.partition_ids([str(v) for v in res["l"]], 271, key_type="string"))
    res = si.with_placement(small.selectExpr("CAST(i % 100 AS SMALLINT) AS h"), "h", 271,
                            key_type="int").toPandas()
    assert np.array_equal(res["partition_id"].to_numpy(),
                          hzfast.partition_ids(res["h"].to_numpy().astype(np.int32), 271, key_type="int"))


def test_member_addresses(spark):
    members = hzfast.Members(["10.0.0.1:5701", "10.0.0.2:5701", "10.0.0.3:5701"])
    t = hzfast.PartitionTable.round_robin(271, members, 2)
    df = spark.createDataFrame([("key",), ("a",), (None,)], "k string")
    got = si.with_placement(df, "k", t).collect()
    assert got[0].partition_id == 80 and got[0].owner == members.addresses[80 % 3]
    assert got[0].backups == [members.addresses[81 % 3]]
    assert got[1].owner == members.addresses[73 % 3]
    assert got[2].owner is None
    idx = si.with_placement(df, "k", t, member_ids="index").collect()
    assert idx[0].owner == 80 % 3 and idx[0].backups == [81 % 3]
    anon = si.with_placement(df, "k", hzfast.PartitionTable.round_robin(271, 3, 2)).collect()
    assert anon[0].owner == 80 % 3                                     # default registry: indices
    forced = si.with_placement(df, "k", hzfast.PartitionTable.round_robin(271, 3, 2),
                               member_ids="address").collect()
    assert forced[0].owner == f"127.0.0.1:{5701 + 80 % 3}"


def test_partition_by_owner(spark, key_frame, table):
    from pyspark.sql import functions as F
    _, df = key_frame
    with_null = df.limit(20000).union(
        spark.createDataFrame([(10**9, None, 0, 0)], df.schema))
    out = si.partition_by_owner(with_null, "s", table)
    M = table.member_count
    assert out.rdd.getNumPartitions() == M + 1
    res = out.select("owner", F.spark_partition_id().alias("sp")).toPandas()
    assert len(res) == 20001
    owned = res[res["owner"] >= 0]
    assert (owned["owner"] == owned["sp"]).all()
    assert set(owned["sp"]) == set(range(M))                           # every member gets rows
    unowned = res[~(res["owner"] >= 0)]                                # null key + partition 7
    assert len(unowned) >= 1 and (unowned["sp"] == M).all()
    assert out.columns == with_null.columns + ["partition_id", "owner", "backups"]


def test_estimate_movement_totals_equal_numpy(spark, key_frame, table):
    pdf, df = key_frame
    import pandas as pd
    rng = np.random.default_rng(3)
    sized = spark.createDataFrame(pd.DataFrame({"s": pdf["s"], "v": rng.integers(0, 5000, N_ROWS)}))
    current = hzfast.PartitionTable.round_robin(271, 5, 3)
    target = hzfast.PartitionTable.round_robin(271, 7, 3)               # "add two members"
    est = si.estimate_movement(sized, "s", current, target, size_col="v", bandwidth=1e8)

    pid = hzfast.partition_ids(pa.array(pdf["s"].tolist()), 271)
    v = sized.toPandas()["v"].to_numpy()
    rows = np.bincount(pid, minlength=271)
    byts = np.zeros(271, np.int64)
    np.add.at(byts, pid, v)
    assert np.array_equal(est.partition_rows, rows)
    assert np.array_equal(est.partition_bytes, byts)
    assert est.total_rows == N_ROWS and est.total_bytes == int(v.sum())
    # direct numpy: a transfer is a non-instant migration into a member holding no replica
    plan = hzfast.plan_migrations(current, target)
    dst = np.asarray(plan.destination)
    mask = (dst >= 0) & (np.asarray(plan.destination_current_index) < 0) & ~np.asarray(plan.instant)
    p = np.asarray(plan.partition_id)[mask]
    bin_ = np.zeros(7, np.int64)
    np.add.at(bin_, dst[mask], byts[p])
    assert np.array_equal(est.member_bytes_in, bin_)
    assert est.transferred_bytes == int(byts[p].sum()) == int(est.member_bytes_in.sum())
    assert est.transferred_rows == int(rows[p].sum())
    assert int(est.member_bytes_out.sum()) == est.transferred_bytes  # every copy has a sender
    assert est.member_bytes_in[5] > 0 and est.member_bytes_in[6] > 0
    # Hazelcast's planner moves more than the set difference here (cur [0,1,2] -> [5,6,0]
    # moves 0 away and back): the estimate follows the planner, not the minimum
    cur, tgt = np.asarray(current.replicas), np.asarray(target.replicas)
    new_in_row = np.array([len(set(tgt[q]) - set(cur[q])) for q in range(271)])
    assert est.transferred_bytes > int((new_in_row * byts).sum())
    # new members written into slots in place: every new replica is exactly one transfer
    tgt2 = cur.copy()
    for q in range(0, 271, 4):
        tgt2[q, q % 3] = 5 + q % 2
    est2 = si.estimate_movement(sized, "s", current, hzfast.PartitionTable(tgt2, members=7),
                                size_col="v")
    new_in_row = np.array([len(set(tgt2[q]) - set(cur[q])) for q in range(271)])
    assert est2.transferred_bytes == int((new_in_row * byts).sum())
    assert est2.transferred_rows == int((new_in_row * rows).sum())
    assert est2.member_bytes_in[5] + est2.member_bytes_in[6] == est2.transferred_bytes
    # senders: the source when the owner moves, else the current owner
    expect_out = np.zeros(7, np.int64)
    for q in range(0, 271, 4):
        expect_out[cur[q, 0]] += byts[q]
    assert np.array_equal(est2.member_bytes_out, expect_out)
    assert est.estimated_seconds == pytest.approx(
        max(est.member_bytes_in.max(), est.member_bytes_out.max()) / 1e8)
    assert est.summary()["transferred_bytes"] == est.transferred_bytes
    assert len(est.members_frame()) == 7 and len(est.partitions_frame()) == 271


def test_estimate_movement_default_sizes_and_nulls(spark, table):
    df = spark.createDataFrame([("a",), ("ключ",), (None,), ("",)], "k string")
    t2 = hzfast.PartitionTable.round_robin(271, 6, 3)
    est = si.estimate_movement(df, "k", table, t2)
    assert est.total_rows == 3 and est.unplaced_rows == 1
    assert est.total_bytes == (12 + 1) + (12 + 8) + 12                 # serialized String sizes
    ints = spark.createDataFrame([(1,), (2,)], "k bigint")
    assert si.estimate_movement(ints, "k", table, t2).total_bytes == 32


# --------------------------------------------------------------------------- bad input
def test_bad_input_raises_before_any_job(spark, key_frame, table):
    from pyspark.sql import functions as F
    _, df = key_frame
    odd = df.withColumn("f", F.col("i").cast("double")).withColumn("d", F.current_date())
    cases = [
        (lambda: si.with_placement(df, "nope", table), ValueError, "not found"),
        (lambda: si.with_placement(odd, "f", table), TypeError, "double"),
        (lambda: si.with_placement(odd, "d", table), TypeError, "date"),
        (lambda: si.with_placement(df, "s", table, key_type="int"), ValueError, "key_type"),
        (lambda: si.with_placement(df, "l", table, key_type="int"), ValueError, "Integer"),
        (lambda: si.with_placement(df, "s", table, key_type="float"), ValueError, "key_type"),
        (lambda: si.with_placement(df, "s", table, system="redis"), ValueError, "system"),
        (lambda: si.with_placement(df, "s", 0), ValueError, "partition count"),
        (lambda: si.with_placement(df, "s", "271"), TypeError, "PartitionTable"),
        (lambda: si.with_placement(df, "s", table, partition_col="id"), ValueError, "already exist"),
        (lambda: si.with_placement(df, "s", table, owner_col="x", backups_col="x"), ValueError, "differ"),
        (lambda: si.with_placement(df, 3, table), TypeError, "key_col"),
        (lambda: si.with_placement(df, "s", table, member_ids="uuid"), ValueError, "member_ids"),
        (lambda: si.with_placement(df.selectExpr("CAST(s AS BINARY) b"), "b", 1024, system="ignite"),
         TypeError, "Ignite"),
        (lambda: si.with_placement(df.selectExpr("CAST(i AS SMALLINT) h"), "h", table),
         TypeError, "Short"),
        (lambda: si.partition_by_owner(df, "s", 271), TypeError, "PartitionTable"),
        (lambda: si.partition_by_owner(df, "nope", table), ValueError, "not found"),
        (lambda: si.estimate_movement(df, "s", table, hzfast.PartitionTable.round_robin(20, 3)),
         ValueError, "partition count"),
        (lambda: si.estimate_movement(df, "s", table, table, size_col="nope"), ValueError, "not found"),
        (lambda: si.estimate_movement(df, "s", table, table, size_col="s"), TypeError, "bytes"),
        (lambda: si.estimate_movement(df, "x", table, table), ValueError, "not found"),
        (lambda: si.estimate_movement(df, "s", table, "t"), TypeError, "target"),
        # hzfast's own validator checks array tables (a member twice, an index < -1)
        (lambda: si.estimate_movement(df, "s", np.array([[0, 0]] * 271, np.int32), table),
         ValueError, "current is not a valid replica table: replicas: partition 0 holds member 0"),
        (lambda: si.estimate_movement(df, "s", table, np.full((271, 2), -2, np.int32)),
         ValueError, "target is not a valid replica table"),
        (lambda: si.estimate_movement(df, "s", table, table, bandwidth=0), ValueError, "bandwidth"),
        (lambda: si.register_functions(spark, table="t"), TypeError, "table"),
        (lambda: si.register_functions(spark, partition_count=0), ValueError, "partition_count"),
        (lambda: si.register_functions(object()), TypeError, "SparkSession"),
    ]
    for fn, exc_type, msg in cases:
        result, jobs = _jobs_ran(spark, fn)
        assert isinstance(result, exc_type), (msg, result)
        assert msg in str(result), (msg, str(result))
        assert jobs == 0, msg
    assert df.columns == ["id", "s", "i", "l"]                          # input untouched


def test_sql_bad_key_type_fails_clearly(spark):
    si.register_functions(spark)
    with pytest.raises(Exception, match="unsupported key type"):
        spark.sql("SELECT hz_partition_id(CAST(1.5 AS DOUBLE), 271)").collect()
    with pytest.raises(Exception, match="partition count"):
        spark.sql("SELECT hz_partition_id('a', 0)").collect()
