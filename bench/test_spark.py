"""spark_integration throughput on local[2], classic and Spark Connect, side by side.

Rows come from ``spark.range`` (int64 keys) or ``concat('k', id)`` (short strings, 2-8 chars),
generated in the JVM, and every variant ends in the same ``noop`` sink, so the only difference
between the rows of one group is the key -> partition step. Every group runs twice: on a
classic local session and on a local Spark Connect server (``local_session(connect=True)``).

* ``with_placement``       - hzfast (arrow_udf iterator + Cython kernel; owner/backups in the JVM)
* ``udf_arrow``            - what a user with hzfast would write: a plain ``@udf`` calling
                             ``hzfast.partition_id`` per row, Arrow-batched (pyspark 4.3's default)
* ``udf_pickled``          - the same ``@udf`` with ``useArrow=False``, on ``rows // 5`` rows
                             (compare rows/s: ``extra_info["rows"]``)
* ``identity_arrow_udf``   - an arrow_udf returning its input: the JVM<->Python transfer ceiling
* ``spark_pmod_hash``      - Spark's built-in ``pmod(hash(k), 271)`` (JVM, NOT Hazelcast's rule)

Every measured DataFrame is checked first (partition ids equal hzfast's on a sample; the
``pmod(hash)`` ids in range). Row count: ``HZFAST_BENCH_ROWS`` (default 10,000,000; under
``--benchmark-disable``, as in CI, the default is 200,000 so the file stays fast).
Report rows/s = extra_info["rows"] / mean; extra_info["cpu_s_min"] is the least CPU time (JVM +
Python workers) of one round, the steadier figure on a shared machine.
"""
import os
import sys

import pyarrow as pa
import pytest
from _cpu import tree_cpu

import hzfast
import spark_integration as si

P = 271


@pytest.fixture(scope="module")
def rows(request):
    env = os.environ.get("HZFAST_BENCH_ROWS")
    if env:
        return int(env)
    return 200_000 if request.config.getoption("benchmark_disable") else 10_000_000


@pytest.fixture(scope="module", params=["classic", "connect"])
def spark(request):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = si.local_session(connect=request.param == "connect", **{
        "spark.driver.memory": "1g", "spark.app.name": "hzfast-bench", "spark.log.level": "ERROR"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def mode(spark):
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    return "connect" if isinstance(spark, ConnectSession) else "classic"


@pytest.fixture(scope="module")
def table():
    return hzfast.PartitionTable.round_robin(P, 5, 3)


def _keys(spark, kind, n):
    from pyspark.sql import functions as F
    df = spark.range(n).withColumnRenamed("id", "k")
    if kind == "string":
        df = df.select(F.concat(F.lit("k"), F.col("k").cast("string")).alias("k"))
    return df


def _noop(df):
    df.write.format("noop").mode("overwrite").save()


def _run(benchmark, df, n):
    """Time the noop write; also record the CPU seconds of the Spark process tree per round
    (extra_info["cpu_s"]): on a shared machine CPU time is far steadier than wall time."""
    cpu = []

    def once():
        c0 = tree_cpu()
        _noop(df)
        cpu.append(tree_cpu() - c0)

    benchmark.extra_info["rows"] = n
    benchmark.pedantic(once, rounds=2, iterations=1, warmup_rounds=1)
    measured = cpu[1:] or cpu
    benchmark.extra_info["cpu_s"] = measured
    benchmark.extra_info["cpu_s_min"] = min(measured)


def _identity(df):
    """An arrow_udf (iterator form) returning its input, added as a column like with_placement
    adds its columns (the input row is kept in both cases)."""
    from collections.abc import Iterator

    from pyspark.sql.functions import arrow_udf

    def identity(batches: Iterator[pa.Array]) -> Iterator[pa.Array]:
        yield from batches
    return df.withColumn("x", arrow_udf(identity, df.schema["k"].dataType)("k"))


def _hz_partition_udf(kind, arrow):
    """The per-row @udf a user with hzfast would write."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    key_type = "long" if kind == "long" else "string"

    def part(k):
        import hzfast
        return None if k is None else hzfast.partition_id(k, P, key_type=key_type)
    return F.udf(part, T.IntegerType(), useArrow=arrow)


def _check_placement(df_placed, kind, table=None, sample=2000):
    """The measured DataFrame computes the right thing (checked on a sample)."""
    got = df_placed.limit(sample).collect()
    keys = [r["k"] for r in got]
    arr = pa.array(keys, pa.int64() if kind == "long" else pa.string())
    expect = hzfast.partition_ids(arr, P, key_type=kind)
    assert [r["partition_id"] for r in got] == expect.tolist()
    if table is not None:
        assert [r["owner"] for r in got] == table.locate(arr, kind).tolist()


KINDS = [("long", "int64"), ("string", "string")]


@pytest.mark.parametrize("kind,label", KINDS)
def test_with_placement(benchmark, spark, mode, table, rows, kind, label):
    benchmark.group = f"spark-{label}-{mode}"
    df = si.with_placement(_keys(spark, kind, rows), "k", table)
    _check_placement(df, kind, table)
    _run(benchmark, df, rows)


@pytest.mark.parametrize("arrow", [True, False], ids=["udf_arrow", "udf_pickled"])
@pytest.mark.parametrize("kind,label", KINDS)
def test_udf_partition_id(benchmark, spark, mode, rows, kind, label, arrow):
    """Plain @udf calling hzfast.partition_id per row: Arrow-batched and useArrow=False."""
    benchmark.group = f"spark-{label}-{mode}"
    n = rows if arrow else max(rows // 5, 1000)
    df = _keys(spark, kind, n).withColumn("partition_id", _hz_partition_udf(kind, arrow)("k"))
    _check_placement(df, kind)
    _run(benchmark, df, n)


@pytest.mark.parametrize("kind,label", KINDS)
def test_identity_arrow_udf(benchmark, spark, mode, rows, kind, label):
    benchmark.group = f"spark-{label}-{mode}"
    df = _identity(_keys(spark, kind, rows))
    first = df.limit(3).collect()
    assert [r.x for r in first] == [r.k for r in first]
    _run(benchmark, df, rows)


@pytest.mark.parametrize("kind,label", KINDS)
def test_spark_pmod_hash(benchmark, spark, mode, rows, kind, label):
    from pyspark.sql import functions as F
    benchmark.group = f"spark-{label}-{mode}"
    df = _keys(spark, kind, rows).withColumn("p", F.pmod(F.hash("k"), F.lit(P)))
    got = df.limit(1000).collect()
    assert all(0 <= r.p < P for r in got)
    _run(benchmark, df, rows)
