"""SQL functions: ``hz_partition_id(key[, n])``, ``ignite_partition(key[, n])``, ``hz_owner(key)``,
``hz_backups(key)``."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import hzfast
from spark_integration.inputs import resolve_table
from spark_integration.placement import _check_system, member_labels, partition_batch

__all__ = ["USAGE", "arrow_kind", "register_functions"]

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
                    + (" or binary (serialized Hazelcast data)" if system == "hazelcast" else "")
                    + (f". Usage: {USAGE[func]}" if func in USAGE else ""))


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
        raise ValueError(f"{func}: partition count n must be in [1, 2147483647], got {n}"
                         + (f". Usage: {USAGE[func]}" if func in USAGE else ""))
    return int(n)


USAGE = {
    "hz_partition_id": "hz_partition_id(key[, n]) - Hazelcast partition id (int) of key with n "
                       "partitions (default: the registered table's count, else 271). key: "
                       "string (Java String), int/smallint/tinyint (Integer), bigint (Long), "
                       "binary (serialized Hazelcast Data); n: an integer in [1, 2147483647]. "
                       "A null key or n gives null.",
    "ignite_partition": "ignite_partition(key[, n]) - Apache Ignite partition (int) of key "
                        "with n partitions (default 1024). key: string, int, bigint; n: an "
                        "integer in [1, 2147483647]. A null key or n gives null.",
    "hz_owner": "hz_owner(key) - owner of key's partition in the registered table, as "
                "with_placement's owner column: a member index (int, -1 when the partition has "
                "no owner) or a member address (string, null when none).",
    "hz_backups": "hz_backups(key) - backups of key's partition in the registered table, as "
                  "with_placement's backups column: array of member indices (-1 for an empty "
                  "slot) or of member addresses (null for an empty slot).",
}


def _arity(item, func: str, allowed: tuple):
    """The argument arrays of one batch; a clear TypeError for a wrong argument count."""
    args = item if isinstance(item, tuple) else (item,)
    if len(args) not in allowed:
        want = " or ".join(str(a) for a in allowed)
        raise TypeError(f"{func} takes {want} argument{'s' if allowed != (1,) else ''}, got "
                        f"{len(args)}. Usage: {USAGE[func]}")
    return args


def _check_n_type(counts: pa.Array, func: str) -> pa.Array:
    if not (pa.types.is_integer(counts.type) or pa.types.is_null(counts.type)):
        raise TypeError(f"{func}: n must be an integer, got {counts.type}. Usage: {USAGE[func]}")
    return counts


def _count_udf(system: str, func: str, default: int):
    def partition_fn(batches):  # iterator of key arrays, or of (key, n) tuples
        for item in batches:
            args = _arity(item, func, (1, 2))
            counts = _check_n_type(args[1], func) if len(args) == 2 else None
            yield _partitions_of(args[0], counts, system, func, default)

    partition_fn.__name__ = func
    return _iter_udf(partition_fn, _int_type())


def _int_type():
    from pyspark.sql.types import IntegerType
    return IntegerType()


def _iter_udf(fn, return_type):
    """An iterator-form arrow_udf (the form is given, not inferred: the same function takes
    one or two columns)."""
    import warnings

    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*type hints for arrow UDF.*")
        return arrow_udf(fn, return_type, ArrowUDFType.SCALAR_ITER)


def _member_udf(func: str, replicas: np.ndarray, labels, system: str):
    """hz_owner (column 0) or hz_backups (columns 1..R-1) as with_placement names them."""
    from pyspark.sql import types as T

    P, R = replicas.shape
    backups = func == "hz_backups"
    values = np.ascontiguousarray(replicas[:, 1:] if backups else replicas[:, 0], np.int32)
    names = None if labels is None else list(labels)
    elem = T.IntegerType() if names is None else T.StringType()
    rtype = T.ArrayType(elem) if backups else elem

    def member_fn(batches):
        width = R - 1
        look = None if names is None else pa.array(names + [None], pa.string())
        for item in batches:
            (keys,) = _arity(item, func, (1,))
            kind = arrow_kind(keys.type, func, system)
            pids = partition_batch(_as_int(keys, kind), kind, P, system)
            valid = pids.is_valid().to_numpy(zero_copy_only=False)
            idx = pids.fill_null(0).to_numpy(zero_copy_only=False)
            picked = values[idx]                                   # (n,) or (n, R-1)
            if look is not None:                                   # -1 -> None
                flat = np.where(picked < 0, len(names), picked).reshape(-1)
                flat_arr = look.take(pa.array(flat, pa.int32()))
            else:
                flat_arr = pa.array(picked.reshape(-1), pa.int32())
            if not backups:
                yield flat_arr if valid.all() else pc.if_else(pa.array(valid), flat_arr, None)
                continue
            offsets = pa.array(np.arange(len(keys) + 1, dtype=np.int32) * width, pa.int32())
            mask = None if valid.all() else pa.array(~valid)
            yield pa.ListArray.from_arrays(offsets, flat_arr, mask=mask)

    member_fn.__name__ = func
    return _iter_udf(member_fn, rtype)


def register_functions(spark, table=None, *, partition_count=None, system="hazelcast",
                       member_ids="auto"):
    """Register hzfast's SQL functions in ``spark`` (classic or Spark Connect).

    * ``hz_partition_id(key[, n])``: Hazelcast partition id of ``key`` with ``n``
      partitions (default ``partition_count``, else the table's count, else 271).
    * ``ignite_partition(key[, n])``: Ignite's partition of ``key`` (default 1024).
    * ``hz_owner(key)``, ``hz_backups(key)`` (only with a table): the owner and backups of
      ``key`` exactly as ``with_placement(df, key, table, system=system,
      member_ids=member_ids)`` gives them - member indices, or member addresses when the
      table carries a real member registry (``member_ids="auto"``). The table's P x R
      replica array is shipped inside the functions (with the task binary Spark
      broadcasts once per executor and stage).

    The key type follows the SQL type of the argument: string -> Java String, int (and
    smallint/tinyint, widened) -> Integer, bigint -> Long, binary -> serialized Hazelcast data
    (not for Ignite); ``CAST`` in SQL to choose another. A null key or ``n`` gives null.
    Spark gives a Python function its argument types only when it runs, so a wrong
    argument count or type fails the query when it runs, with a message naming the
    function and its usage (:data:`USAGE`); Spark shows no usage text for Python functions
    in ``DESCRIBE FUNCTION`` (``si.USAGE`` has it).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    table : hzfast.PartitionTable, ndarray[int32] (P, R) or str/PathLike, optional
        The table ``hz_owner``/``hz_backups`` look keys up in (a path is read once here).
    partition_count : int, optional
        Default ``n`` of ``hz_partition_id``.
    system : {"hazelcast", "ignite"}, default "hazelcast"
        Key -> partition rule of ``hz_owner``/``hz_backups``.
    member_ids : {"auto", "index", "address"}, default "auto"
        As for ``with_placement``.

    Returns
    -------
    list of str
        The names registered.

    Raises
    ------
    TypeError
        ``table`` is not a table, ``spark`` is not a SparkSession.
    ValueError
        ``partition_count`` out of range, unknown ``system`` or ``member_ids``.

    Examples
    --------
    >>> register_functions(spark, hzfast.PartitionTable.round_robin(271, 3))  # doctest: +SKIP
    >>> spark.sql("SELECT hz_partition_id('key', 271), hz_owner('key')").show()  # doctest: +SKIP
    """
    func = "register_functions"
    if not hasattr(spark, "udf") or not hasattr(spark, "sql"):
        raise TypeError(f"{func}: spark must be a SparkSession, got {type(spark).__name__}")
    system = _check_system(system, func)
    table, _ = resolve_table(table, func, "table", allow_none=True)
    labels = member_labels(table, member_ids) if table is not None else None
    if partition_count is None:
        partition_count = (table.partition_count if table is not None
                           else hzfast.DEFAULT_PARTITION_COUNT)
    elif isinstance(partition_count, bool) or not isinstance(partition_count, (int, np.integer)):
        raise TypeError(f"{func}: partition_count must be an int, "
                        f"got {type(partition_count).__name__}")
    partition_count = _check_count(int(partition_count), "partition_count")
    spark.udf.register("hz_partition_id", _count_udf("hazelcast", "hz_partition_id", partition_count))
    spark.udf.register("ignite_partition", _count_udf("ignite", "ignite_partition", 1024))
    names = ["hz_partition_id", "ignite_partition"]
    if table is not None:
        reps = np.asarray(table.replicas)
        for name in ("hz_owner", "hz_backups"):
            spark.udf.register(name, _member_udf(name, reps, labels, system))
            names.append(name)
    return names
