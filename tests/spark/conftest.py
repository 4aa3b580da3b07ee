"""Spark fixtures: every Spark test runs twice, on a classic local session and on a local
Spark Connect server (``local_session(connect=True)``: pyspark's ``remote("local[2]")``,
the server in this process's JVM).

Nothing here uses ``sparkContext`` or the JVM gateway (Connect has neither): "no job ran"
is observed through a Python data source whose reader leaves a mark in a file whenever a
task reads it.
"""
import os
import sys
import uuid

import numpy as np
import pytest

import hzfast

pytestmark = pytest.mark.spark

MODES = ["classic", "connect"]


def _conf():
    return {
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": 2,
        "spark.default.parallelism": 2,
        "spark.app.name": "hzfast-tests",
        "spark.log.level": "ERROR",
    }


@pytest.fixture(scope="session", params=MODES)
def spark(request):
    """One session per mode; pytest runs every test of one mode before the other."""
    pytest.importorskip("pyspark")
    if request.param == "connect":
        pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    import spark_integration as si
    os.environ["PYSPARK_PYTHON"] = sys.executable
    if request.param == "connect":
        # two pytest workers may each run a local Connect server: with SPARK_TESTING pyspark
        # binds it to an ephemeral port and asks the server for it (port 15002 otherwise)
        os.environ["SPARK_TESTING"] = "1"
    session = si.local_session(connect=request.param == "connect", **_conf())
    _register_marker_source(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def mode(spark):
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    return "connect" if isinstance(spark, ConnectSession) else "classic"


@pytest.fixture(scope="session")
def table():
    # 271 partitions, 5 members, 3 replicas, a few partitions without owner / backups
    reps = np.asarray(hzfast.PartitionTable.round_robin(271, 5, 3).replicas).copy()
    reps[7] = [-1, -1, -1]
    reps[8, 2] = -1
    return hzfast.PartitionTable(reps, members=5)


# --------------------------------------------------------------------------- "no job ran"
def _register_marker_source(spark):
    from pyspark.sql.datasource import DataSource, DataSourceReader

    class MarkerReader(DataSourceReader):
        def __init__(self, options):
            self.path = options["path"]

        def read(self, partition):
            with open(self.path, "a") as f:           # a task ran over this data
                f.write("read\n")
            yield (1, "a", 1, 1)

    class MarkerSource(DataSource):
        @classmethod
        def name(cls):
            return "hzmarker"

        def schema(self):
            return "id bigint, s string, i int, l bigint"

        def reader(self, schema):
            return MarkerReader(self.options)

    spark.dataSource.register(MarkerSource)


@pytest.fixture
def watched(spark, tmp_path):
    """``(df, reads)``: a DataFrame (id, s, i, l) and a function returning how many tasks
    have read it so far - any Spark job over ``df`` reads it."""
    path = tmp_path / f"reads-{uuid.uuid4().hex}"
    df = spark.read.format("hzmarker").option("path", str(path)).load()

    def reads():
        return len(path.read_text().splitlines()) if path.exists() else 0
    return df, reads


# --------------------------------------------------------------------------- data

N_ROWS = 60_000


def strings(n, seed=1):
    rng = np.random.default_rng(seed)
    pools = ["key-{}", "ключ-{}", "日本語キー{}", "emoji😀{}", "ünïcødé-{}", "{}", "The quick brown fox {}"]
    out = []
    for _ in range(n):
        r = rng.integers(0, 20)
        out.append("" if r == 0 else pools[r % len(pools)].format(int(rng.integers(0, 10**9))))
    return out


def key_pandas(n=N_ROWS):
    """n rows: id, s (string incl. unicode and ''), i (int), l (bigint), all non-null."""
    import pandas as pd
    rng = np.random.default_rng(7)
    ints = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    ints[:4] = [0, -1, 2**31 - 1, -2**31]
    longs = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    longs[:4] = [0, -1, 2**63 - 1, -2**63]
    return pd.DataFrame({"id": np.arange(n, dtype=np.int64), "s": strings(n), "i": ints,
                         "l": longs})


def _raised_before_job(fn, reads):
    """Run fn; return the exception it raised (None if none), asserting no task read data."""
    before = reads()
    try:
        fn()
        result = None
    except Exception as exc:  # noqa: BLE001 - returned for the caller to check
        result = exc
    assert reads() == before, f"a Spark job ran before the error: {result!r}"
    return result


@pytest.fixture(scope="session")
def key_frame(spark):
    """(pandas, Spark) frames of N_ROWS keys: id, s, i, l."""
    pdf = key_pandas()
    return pdf, spark.createDataFrame(pdf)


@pytest.fixture
def no_job(watched):
    """``(df, check)``: ``check(fn)`` runs fn on the driver and returns the exception it
    raised, asserting no task read ``df``."""
    df, reads = watched
    return df, lambda fn: _raised_before_job(fn, reads)
