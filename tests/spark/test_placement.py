"""spark_integration.placement / inputs / session on a real local Spark, classic and Connect.

Oracles: hzfast.partition_ids / hzfast.ignite.partition_ids / PartitionTable.locate (checked
against the vectors in tests/test_hashing.py), and the vectors of hazelcast.json/ignite.json.
"""
import numpy as np
import pyarrow as pa
import pytest

import hzfast
import spark_integration as si
from spark_integration.inputs import same_name
from spark_integration.placement import partition_batch, routing_keys, spark_hash_int

pytestmark = pytest.mark.spark


# --------------------------------------------------------------------------- Spark-free
def test_partition_batch_nulls_and_offsets():
    full = pa.array(["x", None, "a", "", None, "ünïcødé"])
    got = partition_batch(full[1:], "string", 271)      # offset 1: validity must follow
    assert got.type == pa.int32()
    assert got.to_pylist() == [None, 73, 11, None, 112]
    assert partition_batch(pa.array([5, None, 0, -1], pa.int32())[1:], "int", 271).to_pylist() \
        == [None, 11, 164]
    assert partition_batch(pa.array([None, 0, 1], pa.int64()), "long", 271).to_pylist() \
        == [None, 109, 110]
    assert partition_batch(pa.nulls(3, pa.string()), "string", 271).to_pylist() == [None] * 3
    assert partition_batch(pa.array([], pa.int64()), "long", 271).to_pylist() == []
    data = pa.array([bytes.fromhex("00000000fffffff50000000161"), None], pa.binary())
    assert partition_batch(data, "data", 271).to_pylist() == [73, None]
    assert partition_batch(pa.array(["key", None, "Hello"]), "string", 1024, "ignite").to_pylist() \
        == [606, None, 148]
    assert partition_batch(pa.chunked_array([["a"], [None, "a"]]), "string", 271).to_pylist() \
        == [73, None, 73]
    assert full.to_pylist() == ["x", None, "a", "", None, "ünïcødé"]


def test_spark_hash_int_routing_keys_cover_every_bucket():
    for n in (1, 2, 6, 17, 101):
        keys = routing_keys(n)
        assert np.array_equal(np.mod(spark_hash_int(keys).astype(np.int64), n), np.arange(n))


def test_same_name_follows_java_equals_ignore_case():
    assert same_name("Owner", "owner", False) and not same_name("Owner", "owner", True)
    assert same_name("ÜBER", "über", False)
    assert not same_name("straße", "STRASSE", False)       # Java: ß has no one-char upper
    assert not same_name("owner", "owners", False)


def test_local_session_rejects_bad_conf():
    with pytest.raises(ValueError, match="Spark property"):
        si.local_session(shuffle_partitions=4)
    with pytest.raises(TypeError, match="spark.x.y"):
        si.local_session(**{"spark.x.y": [1]})
    with pytest.raises(TypeError, match="connect"):
        si.local_session(connect="yes")


# --------------------------------------------------------------------------- exactness
def test_spark_hash_int_equals_spark(spark):
    from pyspark.sql import functions as F
    vals = np.array([0, 1, -1, 42, 2**31 - 1, -2**31, 123456789, 7, 1000], dtype=np.int32)
    df = spark.createDataFrame([(int(v),) for v in vals], "v int")
    assert [r[0] for r in df.select(F.hash("v")).collect()] == spark_hash_int(vals).tolist()


@pytest.mark.parametrize("col,kind", [("s", "string"), ("i", "int"), ("l", "long")])
def test_with_placement_matches_hzfast(spark, key_frame, table, col, kind):
    pdf, df = key_frame
    res = si.with_placement(df, col, table).select("id", "partition_id", "owner", "backups") \
        .toPandas().sort_values("id")
    assert len(res) == len(pdf)
    keys = pa.array(pdf[col].tolist(), type={"string": pa.string(), "int": pa.int32(),
                                             "long": pa.int64()}[kind])
    expect = hzfast.partition_ids(keys, 271, key_type=kind)
    assert np.array_equal(res["partition_id"].to_numpy(), expect)
    assert np.array_equal(res["owner"].to_numpy(), table.locate(keys, kind))
    assert np.array_equal(np.stack(res["backups"].to_numpy()),
                          np.asarray(table.replicas)[expect, 1:])
    assert (res["owner"] == -1).any()              # partition 7 has no owner


def test_with_placement_ignite_matches_hzfast(spark, key_frame):
    pdf, df = key_frame
    for col, kind, arrow in (("s", "string", pa.string()), ("l", "long", pa.int64())):
        res = si.with_placement(df, col, 1024, system="ignite").select(
            "id", "partition_id").toPandas().sort_values("id")
        expect = hzfast.ignite.partition_ids(pa.array(pdf[col].tolist(), arrow), 1024,
                                             key_type=kind)
        assert np.array_equal(res["partition_id"].to_numpy(), expect)


def _placed_many(df, key, counts, system="hazelcast"):
    for j, count in enumerate(counts):
        df = si.with_placement(df, key, count, system=system, partition_col=f"p{j}")
    return sorted(df.collect(), key=lambda r: r["n"])


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
            assert [r[f"p{j}"] for r in got] == [v["partition"][parts] for v in rows]
            checked += len(rows)
    assert checked >= 150


def test_nulls_get_null_placement(spark, table):
    from pyspark.sql import types as T
    schema = T.StructType([T.StructField("n", T.IntegerType()), T.StructField("s", T.StringType()),
                           T.StructField("i", T.IntegerType()), T.StructField("l", T.LongType()),
                           T.StructField("b", T.BinaryType())])
    data = bytes.fromhex("00000000fffffff50000000161")
    df = spark.createDataFrame([(0, "a", 1, 1, data), (1, None, None, None, None),
                                (2, "", 0, 0, data)], schema)
    for col, expect in (("s", [73, None, 11]), ("i", [31, None, 11]),
                        ("l", [110, None, 109]), ("b", [73, None, 73])):
        got = sorted(si.with_placement(df, col, table).collect(), key=lambda r: r.n)
        assert [r.partition_id for r in got] == expect, col
        assert got[1].owner is None and got[1].backups is None
        assert got[0].owner == int(table.replicas[expect[0], 0])
        assert got[0].backups == np.asarray(table.replicas)[expect[0], 1:].tolist()


def test_key_type_overrides(spark, key_frame):
    _, df = key_frame
    small = df.limit(2000)
    res = si.with_placement(small, "i", 271, key_type="long").select("i", "partition_id").toPandas()
    assert np.array_equal(res["partition_id"].to_numpy(), hzfast.partition_ids(
        res["i"].to_numpy().astype(np.int64), 271, key_type="long"))
    res = si.with_placement(small, "l", 271, key_type="string").select("l", "partition_id").toPandas()
    assert np.array_equal(res["partition_id"].to_numpy(), hzfast.partition_ids(
        [str(v) for v in res["l"]], 271, key_type="string"))


def test_member_addresses(spark):
    members = hzfast.Members(["10.0.0.1:5701", "10.0.0.2:5701", "10.0.0.3:5701"])
    t = hzfast.PartitionTable.round_robin(271, members, 2)
    df = spark.createDataFrame([("key",), ("a",), (None,)], "k string")
    got = si.with_placement(df, "k", t).collect()
    assert got[0].partition_id == 80 and got[0].owner == members.addresses[80 % 3]
    assert got[0].backups == [members.addresses[81 % 3]]
    assert got[2].owner is None
    idx = si.with_placement(df, "k", t, member_ids="index").collect()
    assert idx[0].owner == 80 % 3 and idx[0].backups == [81 % 3]
    forced = si.with_placement(df, "k", hzfast.PartitionTable.round_robin(271, 3, 2),
                               member_ids="address").collect()
    assert forced[0].owner == f"127.0.0.1:{5701 + 80 % 3}"


# --------------------------------------------------------------------------- names
def test_dotted_top_level_and_nested_keys(spark, table):
    df = spark.createDataFrame([("key", ("a",), "x"), ("a", ("key",), "y")],
                               "`user.key` string, s struct<key:string>, `we``ird` string")
    top = si.with_placement(df, "user.key", table).collect()          # a top-level name
    assert [r.partition_id for r in top] == [80, 73]
    assert top[0].owner == int(table.replicas[80, 0])
    assert [r.partition_id for r in si.with_placement(df, "`user.key`", 271).collect()] == [80, 73]
    nested = si.with_placement(df, "s.key", table).collect()          # a struct field
    assert [r.partition_id for r in nested] == [73, 80]
    assert [r.partition_id for r in si.with_placement(df, "we`ird", 271).collect()] == \
        hzfast.partition_ids(["x", "y"], 271).tolist()
    # case-insensitive like Spark (default conf)
    assert [r.partition_id for r in si.with_placement(df, "USER.KEY", 271).collect()] == [80, 73]
    # output names with dots work too
    out = si.with_placement(df, "s.key", table, partition_col="p.id", owner_col="o.w",
                            backups_col="b.k")
    assert out.columns[-3:] == ["p.id", "o.w", "b.k"]
    assert [r["o.w"] for r in out.collect()] == [int(table.replicas[73, 0]),
                                                 int(table.replicas[80, 0])]
    est = si.estimate_movement(df, "user.key", table, table)
    assert est.total_rows == 2 and est.transferred_bytes == 0


def test_output_column_clash_follows_spark_case_rules(spark, table, no_job):
    df, check = no_job                                   # columns id, s, i, l
    named = df.withColumnRenamed("i", "Owner")
    err = check(lambda: si.with_placement(named, "s", table))
    assert isinstance(err, ValueError) and "owner_col='owner'" in str(err) and "'Owner'" in str(err)
    for kwargs in ({"partition_col": "ID"}, {"backups_col": "S"}, {"owner_col": "L"}):
        err = check(lambda kw=kwargs: si.with_placement(df, "s", table, **kw))
        assert isinstance(err, ValueError) and "would replace" in str(err), kwargs
    err = check(lambda: si.with_placement(df, "s", table, owner_col="x", backups_col="X"))
    assert isinstance(err, ValueError) and "must differ" in str(err)
    err = check(lambda: si.partition_by_owner(named, "s", table))
    assert isinstance(err, ValueError) and "Owner" in str(err)
    err = check(lambda: si.with_placement(df, "s", 271, partition_col="S"))
    assert isinstance(err, ValueError)
    # the caller chooses the names: nothing is replaced
    out = si.with_placement(named, "s", table, owner_col="owner_index")
    assert out.columns == ["id", "s", "Owner", "l", "partition_id", "owner_index", "backups"]
    # spark.sql.caseSensitive=true: Spark tells Owner from owner, and so do we
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        out = si.with_placement(named, "s", table)
        assert out.columns == ["id", "s", "Owner", "l", "partition_id", "owner", "backups"]
        err = check(lambda: si.with_placement(named, "s", table, owner_col="Owner"))
        assert isinstance(err, ValueError) and "case-sensitively" in str(err)
    finally:
        spark.conf.set("spark.sql.caseSensitive", "false")


# --------------------------------------------------------------------------- inputs
def test_table_forms_agree(spark, key_frame, table, tmp_path):
    _, df = key_frame
    small = df.limit(3000)
    path = tmp_path / "table.npz"
    table.save(path)
    expect = si.with_placement(small, "s", table).select("id", "partition_id", "owner",
                                                           "backups").collect()
    for form in (np.asarray(table.replicas), str(path), path):
        got = si.with_placement(small, "s", form).select("id", "partition_id", "owner",
                                                           "backups").collect()
        assert got == expect, type(form)
        moved = si.estimate_movement(small, "s", form, table)
        assert moved.transferred_bytes == 0 and moved.total_rows == 3000
    owners = sorted(si.partition_by_owner(small, "s", str(path)).select("id", "owner").collect())
    assert owners == sorted((r.id, r.owner) for r in expect)


def test_pandas_inputs_refused_with_a_way_out(spark, no_job):
    df, check = no_job
    import pandas as pd
    err = check(lambda: si.with_placement(pd.DataFrame({"s": ["a"]}), "s", 271))
    assert isinstance(err, TypeError) and "spark.createDataFrame" in str(err)
    psdf = df.pandas_api()
    for fn in (lambda: si.with_placement(psdf, "s", 271),
               lambda: si.partition_by_owner(psdf, "s", hzfast.PartitionTable.round_robin(271, 3)),
               lambda: si.estimate_movement(psdf, "s", np.zeros((271, 1), np.int32),
                                            np.zeros((271, 1), np.int32))):
        err = check(fn)
        assert isinstance(err, TypeError) and "to_spark()" in str(err), err
    # the way out the message gives works
    back = si.with_placement(psdf.to_spark(), "s", 271).pandas_api()
    assert list(back.columns) == ["id", "s", "i", "l", "partition_id"]


def test_partition_by_owner(spark, key_frame, table):
    from pyspark.sql import functions as F
    _, df = key_frame
    with_null = df.limit(20000).union(spark.createDataFrame([(10**9, None, 0, 0)], df.schema))
    out = si.partition_by_owner(with_null, "s", table)
    M = table.member_count

    def count_partitions(batches):
        import pyarrow as pa
        from pyspark import TaskContext
        yield pa.RecordBatch.from_pydict({"sp": pa.array([TaskContext.get().partitionId()], pa.int32())})
    parts = sorted(r.sp for r in out.mapInArrow(count_partitions, "sp int").collect())
    assert parts == list(range(M + 1))                  # M + 1 Spark partitions
    res = out.select("owner", F.spark_partition_id().alias("sp")).toPandas()
    assert len(res) == 20001
    owned = res[res["owner"] >= 0]
    assert (owned["owner"] == owned["sp"]).all()
    assert set(owned["sp"]) == set(range(M))
    unowned = res[~(res["owner"] >= 0)]                 # null key + partition 7
    assert len(unowned) >= 1 and (unowned["sp"] == M).all()
    assert out.columns == with_null.columns + ["partition_id", "owner", "backups"]


def test_bad_input_raises_before_any_job(spark, table, no_job):
    from pyspark.sql import functions as F
    df, check = no_job
    odd = df.withColumn("f", F.col("i").cast("double")).withColumn("d", F.current_date())
    cases = [
        (lambda: si.with_placement(df, "nope", table), ValueError, "not found"),
        (lambda: si.with_placement(df, "nope.x", table), ValueError, "not found"),
        (lambda: si.with_placement(odd, "f", table), TypeError, "double"),
        (lambda: si.with_placement(odd, "d", table), TypeError, "date"),
        (lambda: si.with_placement(df, "s", table, key_type="int"), ValueError, "key_type"),
        (lambda: si.with_placement(df, "l", table, key_type="int"), ValueError, "Integer"),
        (lambda: si.with_placement(df, "s", table, key_type="float"), ValueError, "key_type"),
        (lambda: si.with_placement(df, "s", table, system="redis"), ValueError, "system"),
        (lambda: si.with_placement(df, "s", 0), ValueError, "partition count"),
        (lambda: si.with_placement(df, "s", 1.5), TypeError, "table"),
        (lambda: si.with_placement(df, "s", "/no/such/table.npz"), ValueError, "no table file"),
        (lambda: si.with_placement(df, "s", table, partition_col=""), TypeError, "partition_col"),
        (lambda: si.with_placement(df, 3, table), TypeError, "key_col"),
        (lambda: si.with_placement(df, "s", table, member_ids="uuid"), ValueError, "member_ids"),
        (lambda: si.with_placement(df, "s", np.full((271, 2), -2, np.int32)), ValueError,
         "table is not a valid replica table"),
        (lambda: si.with_placement("df", "s", table), TypeError, "df must be"),
        (lambda: si.with_placement(df.selectExpr("CAST(s AS BINARY) b"), "b", 1024,
                                   system="ignite"), TypeError, "Ignite"),
        (lambda: si.with_placement(df.selectExpr("CAST(i AS SMALLINT) h"), "h", table),
         TypeError, "Short"),
        (lambda: si.partition_by_owner(df, "s", 271), TypeError, "PartitionTable"),
        (lambda: si.partition_by_owner(df, "nope", table), ValueError, "not found"),
    ]
    for fn, exc_type, msg in cases:
        err = check(fn)
        assert isinstance(err, exc_type), (msg, err)
        assert msg in str(err), (msg, str(err))
    assert df.columns == ["id", "s", "i", "l"]


def test_import_without_pyspark_says_what_to_install(tmp_path):
    import subprocess
    import sys
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text("import sys\nsys.modules['pyspark'] = None\n")
    code = ("import hzfast, sys\nassert 'pyspark' not in sys.modules or sys.modules['pyspark'] is None\n"
            "try:\n    import spark_integration\nexcept ImportError as e:\n    print(e)\n")
    import os
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False,
                         timeout=120)
    assert "pip install 'hzfast[spark]'" in out.stdout, out.stdout + out.stderr
