"""SQL functions: ``hz_partition_id(key[, n])``, ``hz_owner(key)``, ``ignite_partition(key[, n])``."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import hzfast
from spark_integration.placement import partition_batch

__all__ = ["register_functions", "arrow_kind"]

_KIND_BY_ARROW = (
    (pa.types.is_string, "string"), (pa.types.is_large_string, "string"),
    (pa.types.is_int32, "int"), (pa.types.is_int16, "int"), (pa.types.is_int8, "int"),
    (pa.types.is_int64, "long"),
    (pa.types.is_binary, "data"), (pa.types.is_large_binary, "data"),
)


def arrow_kind(arrow_type: pa.DataType, func: str, system: str = "hazelcast") -> str:
    """hzfast key type of an Arrow column type (what the SQL functions receive)."""
    for test, kind in _KIND_BY_ARROW:
        if test(arrow_type):
            if kind == "data" and system == "ignite":
                break
            return kind
    raise TypeError(f"{func}: unsupported key type {arrow_type}; use string, int, bigint"
                    + (" or binary (serialized Hazelcast data)" if system == "hazelcast" else ""))


def _as_int(keys: pa.Array, kind: str) -> pa.Array:
    if kind == "int" and not pa.types.is_int32(keys.type):
        return keys.cast(pa.int32())       # smallint/tinyint widen to Java Integer
    return keys


def _partitions_of(keys: pa.Array, counts, system: str, func: str, default: int) -> pa.Array:
    kind = arrow_kind(keys.type, func, system)
    keys = _as_int(keys, kind)
    if counts is None:
        return partition_batch(keys, kind, default, system)
    counts = counts.cast(pa.int64())
    if counts.null_count == 0:
        lo, hi = pc.min_max(counts).values()
        if lo.as_py() == hi.as_py():          # the usual case: a constant n
            return partition_batch(keys, kind, _check_count(lo.as_py(), func), system)
    # per-row n: hash each group of rows sharing an n
    n_np = counts.to_numpy(zero_copy_only=False)
    valid = ~counts.is_null().to_numpy(zero_copy_only=False)
    out = np.zeros(len(keys), dtype=np.int32)
    mask = ~valid | keys.is_null().to_numpy(zero_copy_only=False)
    for n in np.unique(n_np[valid]):
        rows = np.flatnonzero(valid & (n_np == n))
        part = partition_batch(keys.take(pa.array(rows)), kind, _check_count(int(n), func), system)
        out[rows] = part.fill_null(0).to_numpy(zero_copy_only=False)
    return pa.array(out, type=pa.int32(), mask=mask)


def _check_count(n: int, func: str) -> int:
    if not 1 <= n <= 2**31 - 1:
        raise ValueError(f"{func}: partition count n must be in [1, 2147483647], got {n}")
    return int(n)


def _count_udf(system: str, func: str, default: int):
    def partition_fn(batches):  # iterator of key arrays, or of (key, n) tuples
        for item in batches:
            if isinstance(item, tuple):
                if len(item) != 2:
                    raise TypeError(f"{func}(key, n) takes 1 or 2 arguments, got {len(item)}")
                yield _partitions_of(item[0], item[1], system, func, default)
            else:
                yield _partitions_of(item, None, system, func, default)

    partition_fn.__name__ = func
    return _iter_udf(partition_fn)


def _iter_udf(fn):
    """An int-valued iterator-form arrow_udf (the form is given, not inferred: the same
    function takes one or two columns)."""
    import warnings

    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    from pyspark.sql.types import IntegerType
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*type hints for arrow UDF.*")
        return arrow_udf(fn, IntegerType(), ArrowUDFType.SCALAR_ITER)


def _owner_udf(owners: np.ndarray, partitions: int):

    def hz_owner(batches):  # iterator of key arrays
        table = owners          # P int32 values, shipped with the function (see README)
        for keys in batches:
            kind = arrow_kind(keys.type, "hz_owner")
            pids = partition_batch(_as_int(keys, kind), kind, partitions, "hazelcast")
            if pids.null_count:
                yield pc.take(pa.array(table), pids)      # null partition -> null owner
            else:
                yield pa.array(table[pids.to_numpy()], type=pa.int32())

    return _iter_udf(hz_owner)


def register_functions(spark, table=None, *, partition_count=None):
    """Register hzfast's SQL functions in ``spark``.

    * ``hz_partition_id(key[, n])``: Hazelcast partition id of ``key`` with ``n``
      partitions (default 271, or ``partition_count``).
    * ``ignite_partition(key[, n])``: Ignite's partition of ``key`` (default 1024).
    * ``hz_owner(key)``: owner member index of ``key`` in ``table`` (-1 when its partition
      has no owner); registered only when a table is given. The table's owner column (P
      int32) is shipped inside the function, i.e. with the task binary Spark broadcasts once
      per executor and stage.

    The key type follows the SQL type of the argument: string -> Java String, int (and
    smallint/tinyint, widened) -> Integer, bigint -> Long, binary -> serialized Hazelcast data
    (not for Ignite); ``CAST`` in SQL to choose another. A null key or null ``n`` gives
    null. Because SQL functions see their argument types only when they run, an
    unsupported key type fails the query at run time (with_placement checks before).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    table : hzfast.PartitionTable, optional
        The table ``hz_owner`` looks keys up in.
    partition_count : int, optional
        Default ``n`` of ``hz_partition_id`` (default: the table's partition count, else 271).

    Returns
    -------
    list of str
        The names registered.

    Raises
    ------
    TypeError
        ``table`` is not a PartitionTable, ``spark`` has no ``udf`` registry.
    ValueError
        ``partition_count`` out of range.

    Examples
    --------
    >>> register_functions(spark, hzfast.PartitionTable.round_robin(271, 3))  # doctest: +SKIP
    >>> spark.sql("SELECT hz_partition_id('key', 271), hz_owner('key')").show()  # doctest: +SKIP
    """
    if not hasattr(spark, "udf"):
        raise TypeError(f"spark must be a SparkSession, got {type(spark).__name__}")
    if table is not None and not isinstance(table, hzfast.PartitionTable):
        raise TypeError(f"table must be a hzfast.PartitionTable or None, "
                        f"got {type(table).__name__}")
    if partition_count is None:
        partition_count = table.partition_count if table is not None else hzfast.DEFAULT_PARTITION_COUNT
    elif isinstance(partition_count, bool) or not isinstance(partition_count, (int, np.integer)):
        raise TypeError(f"partition_count must be an int, got {type(partition_count).__name__}")
    partition_count = _check_count(int(partition_count), "partition_count")
    spark.udf.register("hz_partition_id", _count_udf("hazelcast", "hz_partition_id", partition_count))
    spark.udf.register("ignite_partition", _count_udf("ignite", "ignite_partition", 1024))
    names = ["hz_partition_id", "ignite_partition"]
    if table is not None:
        owners = np.ascontiguousarray(np.asarray(table.replicas)[:, 0], dtype=np.int32)
        spark.udf.register("hz_owner", _owner_udf(owners, table.partition_count))
        names.append("hz_owner")
    return names
