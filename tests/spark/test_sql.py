"""spark_integration.sql: the SQL face gives with_placement's answers, classic and Connect."""
import numpy as np
import pyarrow as pa
import pytest

import hzfast
import spark_integration as si

pytestmark = pytest.mark.spark


def test_sql_functions_match_hzfast(spark, key_frame, table):
    pdf, df = key_frame
    pdf = pdf.iloc[:20000]
    df = spark.createDataFrame(pdf)
    names = si.register_functions(spark, table)
    assert names == ["hz_partition_id", "ignite_partition", "hz_owner", "hz_backups"]
    df.createOrReplaceTempView("hz_keys")
    res = spark.sql("""
        SELECT id, hz_partition_id(s, 271) AS ps, hz_partition_id(i, 271) AS pi,
               hz_partition_id(l, 20000) AS pl, hz_partition_id(s) AS pdef,
               hz_owner(s) AS os, hz_owner(l) AS ol, hz_backups(s) AS bs,
               ignite_partition(s, 1024) AS gs, ignite_partition(i, 1000) AS gi,
               ignite_partition(l) AS gl
        FROM hz_keys""").toPandas().sort_values("id")
    s = pa.array(pdf["s"].tolist())
    i = pa.array(pdf["i"].to_numpy())
    ll = pa.array(pdf["l"].to_numpy())
    ps = hzfast.partition_ids(s, 271)
    assert np.array_equal(res["ps"].to_numpy(), ps)
    assert np.array_equal(res["pdef"].to_numpy(), ps)
    assert np.array_equal(res["pi"].to_numpy(), hzfast.partition_ids(i, 271, key_type="int"))
    assert np.array_equal(res["pl"].to_numpy(), hzfast.partition_ids(ll, 20000, key_type="long"))
    assert np.array_equal(res["os"].to_numpy(), table.locate(s, "string"))
    assert np.array_equal(res["ol"].to_numpy(), table.locate(ll, "long"))
    assert np.array_equal(np.stack(res["bs"].to_numpy()), np.asarray(table.replicas)[ps, 1:])
    assert np.array_equal(res["gs"].to_numpy(), hzfast.ignite.partition_ids(s, 1024))
    assert np.array_equal(res["gi"].to_numpy(), hzfast.ignite.partition_ids(i, 1000, key_type="int"))
    assert np.array_equal(res["gl"].to_numpy(), hzfast.ignite.partition_ids(ll, 1024, key_type="long"))
    got = spark.sql("SELECT hz_partition_id('ünïcødé', 271) a, hz_partition_id(CAST(NULL AS STRING), 271) b,"
                    " hz_partition_id(CAST(-1 AS BIGINT), 271) c, ignite_partition('Кириллица', 1024) d,"
                    " hz_owner(CAST(NULL AS INT)) e, hz_backups(CAST(NULL AS STRING)) f").collect()[0]
    assert tuple(got) == (112, None, 231, 192, None, None)
    per_row = spark.sql("SELECT hz_partition_id(k, n) p FROM VALUES ('key', 271), ('key', 20000),"
                        " ('key', NULL), (NULL, 271) AS t(k, n)").collect()
    assert [r.p for r in per_row] == [80, 17569, None, None]


@pytest.mark.parametrize("registry", ["addresses", "indices"])
@pytest.mark.parametrize("system", ["hazelcast", "ignite"])
def test_sql_and_dataframe_faces_agree(spark, system, registry, tmp_path):
    """Same table, same options: hz_owner/hz_backups == with_placement's owner/backups."""
    if registry == "addresses":
        members = hzfast.Members([f"10.0.0.{m}:5701" for m in range(1, 5)])
    else:
        members = 4
    reps = np.asarray(hzfast.PartitionTable.round_robin(271, members, 3).replicas).copy()
    reps[80, 1] = -1                                      # an empty backup slot
    table = hzfast.PartitionTable(reps, members=members)
    path = tmp_path / "t.npz"
    table.save(path)
    keys = ["key", "a", "ünïcødé", None] + [f"k{j}" for j in range(300)]
    df = spark.createDataFrame([(j, k) for j, k in enumerate(keys)], "n int, k string")
    si.register_functions(spark, str(path), system=system)  # a table file, read once here
    df.createOrReplaceTempView("faces")
    sql = spark.sql("SELECT n, hz_owner(k) AS owner, hz_backups(k) AS backups FROM faces")
    frame = si.with_placement(df, "k", table, system=system, partition_col="p")
    assert sql.schema["owner"].dataType == frame.schema["owner"].dataType
    assert sql.schema["backups"].dataType == frame.schema["backups"].dataType
    a = sorted((r.n, r.owner, r.backups) for r in sql.collect())
    b = sorted((r.n, r.owner, r.backups) for r in frame.collect())
    assert a == b
    if registry == "addresses":
        assert isinstance(a[0][1], str) and a[0][1].startswith("10.0.0.")
        if system == "hazelcast":
            assert a[0][2][0] is None                     # "key" -> partition 80, emptied slot
    else:
        assert isinstance(a[0][1], int)
    assert a[3][1:] == (None, None)                       # null key


def test_sql_misuse_fails_clearly(spark, table):
    si.register_functions(spark, table)
    cases = [
        ("SELECT hz_owner('a', 271)", "hz_owner takes 1 argument, got 2"),
        ("SELECT hz_backups('a', 1, 2)", "hz_backups takes 1 argument, got 3"),
        ("SELECT hz_partition_id('a', 271, 3)", "hz_partition_id takes 1 or 2 arguments, got 3"),
        ("SELECT hz_partition_id(CAST(1.5 AS DOUBLE), 271)", "unsupported key type double"),
        ("SELECT hz_owner(CAST(1.5 AS DOUBLE))", "Usage: hz_owner(key)"),
        ("SELECT hz_partition_id('a', 0)", "partition count n must be in [1, 2147483647], got 0"),
        ("SELECT hz_partition_id('a', 'x')", "n must be an integer"),
        ("SELECT ignite_partition(X'00', 10)", "unsupported key type binary"),
    ]
    for query, message in cases:
        with pytest.raises(Exception) as info:
            spark.sql(query).collect()
        assert message in str(info.value), (query, str(info.value)[:2000])
        assert "AttributeError" not in str(info.value)


def test_register_functions_bad_input(spark, table):
    with pytest.raises(TypeError, match="table"):
        si.register_functions(spark, table=3.5)
    with pytest.raises(ValueError, match="partition_count"):
        si.register_functions(spark, partition_count=0)
    with pytest.raises(TypeError, match="SparkSession"):
        si.register_functions(object())
    with pytest.raises(ValueError, match="member_ids"):
        si.register_functions(spark, table, member_ids="uuid")
    with pytest.raises(ValueError, match="system"):
        si.register_functions(spark, table, system="redis")
    assert set(si.USAGE) == {"hz_partition_id", "ignite_partition", "hz_owner", "hz_backups"}
