"""Key -> partition -> member placement of Spark DataFrame rows, with hzfast's kernels.

How it runs
-----------
* The key -> partition step is one ``arrow_udf`` in its iterator form: each Arrow batch the
  JVM sends is handed, buffers and all, to ``hzfast.partition_ids`` (or
  ``hzfast.ignite.partition_ids``); the UDF returns one ``int32`` column, the cheapest thing
  to send back to the JVM.
* The partition -> owner/backups step runs in the JVM: the table's owner and backup columns
  become constant arrays (a constant-folded literal in the plan) indexed by the partition id
  with ``get``. The plan, literal included, is part of the task binary that Spark broadcasts
  once per executor per stage, so the table travels once per executor, not per batch or row,
  and no bytes of owner/backups cross the JVM<->Python boundary (measured: returning
  owner+backups from Python as a struct took 1.6-1.9x the time of the JVM lookup).

Null keys get a null partition, a null owner and null backups.
"""
from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import hzfast
from spark_integration.inputs import (
    check_dataframe,
    check_output_names,
    quote_name,
    resolve_column,
    resolve_table,
)

__all__ = [
    "KEY_TYPES",
    "SYSTEMS",
    "partition_batch",
    "partition_by_owner",
    "spark_hash_int",
    "with_placement",
]

SYSTEMS = ("hazelcast", "ignite")
MEMBER_IDS = ("auto", "index", "address")
#: key_type names accepted (hzfast's names plus Spark SQL spellings).
KEY_TYPES = {"string": "string", "int": "int", "integer": "int", "long": "long",
             "bigint": "long", "data": "data", "binary": "data"}
_DEFAULT_PARTITIONS = {"hazelcast": hzfast.DEFAULT_PARTITION_COUNT, "ignite": 1024}
_INT32_MAX = 2**31 - 1


# --------------------------------------------------------------------------- Arrow level
def _placeholder(kind: str, arrow_type: pa.DataType) -> pa.Scalar:
    if kind == "data":
        return pa.scalar(b"\x00" * 8, type=arrow_type)   # smallest valid serialized Data
    if kind == "string":
        return pa.scalar("", type=arrow_type)
    return pa.scalar(0, type=arrow_type)


def partition_batch(keys, kind: str, partitions: int, system: str = "hazelcast") -> pa.Array:
    """Partition id of every key of one Arrow array, nulls preserved.

    ``hzfast.partition_ids`` rejects null keys, so null slots are filled with a placeholder,
    hashed with the rest, and masked out again: the result carries the input's validity.

    Parameters
    ----------
    keys : pyarrow.Array or pyarrow.ChunkedArray
        string/large_string (``kind="string"``), int32 (``"int"``), int64 (``"long"``) or
        binary/large_binary holding serialized Hazelcast data (``"data"``).
    kind : {"string", "int", "long", "data"}
    partitions : int
        Partition count, >= 1.
    system : {"hazelcast", "ignite"}
        Hazelcast (murmur3 of the serialized key, ``abs(h) % n``) or Ignite
        (Java ``hashCode``, Ignite's rendezvous key rule).

    Returns
    -------
    pyarrow.Int32Array of the same length; null where the key is null.

    Raises
    ------
    ValueError, TypeError
        From hzfast, for keys its kernels reject (e.g. ``"data"`` items shorter than 8 bytes).
    """
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    n = len(keys)
    nulls = keys.null_count
    if n == 0 or nulls == n:
        return pa.nulls(n, pa.int32())
    filled = pc.fill_null(keys, _placeholder(kind, keys.type)) if nulls else keys
    if system == "ignite":
        pids = hzfast.ignite.partition_ids(filled, partitions, key_type=kind)
    else:
        pids = hzfast.partition_ids(filled, partitions, key_type=kind)
    pids = np.ascontiguousarray(pids, dtype=np.int32)
    if nulls:
        return pa.array(pids, type=pa.int32(), mask=keys.is_null().to_numpy(zero_copy_only=False))
    return pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(pids)])


def partition_udf(kind: str, partitions: int, system: str):
    """An ``arrow_udf`` (iterator form) mapping a key column to its int partition id."""
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    def hz_place(batches: Iterator[pa.Array]) -> Iterator[pa.Array]:
        # Per task set-up happens here once (module imports are cached by the worker).
        for batch in batches:
            yield partition_batch(batch, kind, partitions, system)

    hz_place.__name__ = f"{system}_partition_id"
    return arrow_udf(hz_place, IntegerType())


# --------------------------------------------------------------------------- validation
def _check_system(system, func: str = "with_placement") -> str:
    if system not in SYSTEMS:
        raise ValueError(f"{func}: system must be one of {SYSTEMS}, got {system!r}")
    return system


def resolve_key(df, key_col, key_type=None, system: str = "hazelcast", func: str = "with_placement"):
    """Check the key column and key type on the driver (analysis only, no job).

    Returns ``(column, kind)``: the Spark column to feed the UDF (cast when ``key_type``
    asks for a widening) and the hzfast key type. ``key_col`` follows
    :func:`spark_integration.inputs.resolve_column` (a top-level name with a dot, or a
    nested field ``struct.field``, or a Column).

    Raises
    ------
    ValueError
        Missing column, unknown key_type or system, a key_type the column cannot be.
    TypeError
        A key column type hzfast cannot hash (float, decimal, date, struct, ...), or a
        key_col that is not a str/Column.
    """
    from pyspark.sql import types as T

    _check_system(system, func)
    col, label, dtype = resolve_column(df, key_col, func, "key_col")

    if key_type is not None:
        if not isinstance(key_type, str) or key_type.lower() not in KEY_TYPES:
            raise ValueError(f"{func}: key_type must be None or one of {sorted(KEY_TYPES)}, "
                             f"got {key_type!r}")
        key_type = KEY_TYPES[key_type.lower()]
    if system == "ignite" and key_type == "data":
        raise ValueError(f"{func}: key_type='data' (serialized Hazelcast data) has no meaning "
                         f"for system='ignite'")

    small_int = isinstance(dtype, (T.ByteType, T.ShortType))
    if isinstance(dtype, T.StringType):
        natural = "string"
    elif isinstance(dtype, T.IntegerType):
        natural = "int"
    elif isinstance(dtype, T.LongType):
        natural = "long"
    elif isinstance(dtype, T.BinaryType):
        natural = "data"
    elif small_int:
        natural = None  # Java Short/Byte keys: only when the caller widens them
    else:
        raise TypeError(f"{func}: key column {label} has type {dtype.simpleString()}, which "
                        f"hzfast cannot hash; supported: string (Java String), int (Integer), "
                        f"bigint (Long), binary (serialized Hazelcast data)"
                        + ("" if system == "hazelcast" else " except binary for Ignite"))

    kind = key_type or natural
    if kind is None:
        raise TypeError(f"{func}: key column {label} has type {dtype.simpleString()}; Java "
                        f"Short/Byte keys are not supported - pass key_type='int' or 'long' to "
                        f"hash the values as Integer/Long (or cast the column)")
    if system == "ignite" and kind == "data":
        raise TypeError(f"{func}: key column {label} is binary; Ignite keys must be string, "
                        f"int or bigint")
    allowed = {
        "string": (natural in ("string", "int", "long") or small_int),
        "int": natural == "int" or small_int,
        "long": natural in ("int", "long") or small_int,
        "data": natural == "data",
    }[kind]
    if not allowed:
        raise ValueError(f"{func}: key column {label} of type {dtype.simpleString()} cannot be "
                         f"hashed as key_type={kind!r}"
                         + (" (a bigint may not fit a Java Integer: cast it yourself if it does)"
                            if kind == "int" and natural == "long" else ""))
    if kind != natural:
        col = col.cast({"string": "string", "int": "int", "long": "bigint"}[kind])
    return col, kind


# --------------------------------------------------------------------------- JVM lookups
def _literal_array(values, element_type):
    """A constant array column (constant-folded by Spark into one literal)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    return F.from_json(F.lit(json.dumps(values)), T.ArrayType(element_type))


def _check_member_ids(member_ids, func: str) -> str:
    if member_ids not in MEMBER_IDS:
        raise ValueError(f"{func}: member_ids must be one of {MEMBER_IDS}, got {member_ids!r}")
    return member_ids


def member_labels(table, member_ids: str = "auto"):
    """None when members are named by index, else the address of every member index.

    ``"auto"``: addresses when the table carries a real member registry, indices for the
    anonymous default ``Members.from_count(M)``. Shared by ``with_placement`` and the SQL
    functions, so both faces name members alike.
    """
    _check_member_ids(member_ids, "member_ids")
    members = table.members
    if member_ids == "index":
        return None
    if member_ids == "auto" and members == hzfast.Members.from_count(len(members)):
        return None  # anonymous default registry: indices say more than made-up addresses
    return list(members.addresses)


def placement_columns(pid, table, member_ids: str = "auto"):
    """(owner, backups) Spark columns computed in the JVM from a partition-id column."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    reps = np.asarray(table.replicas)
    labels = member_labels(table, member_ids)
    if labels is None:
        elem = T.IntegerType()
        owners = reps[:, 0].tolist()
        backups = reps[:, 1:].tolist()
    else:
        elem = T.StringType()
        look = labels + [None]                       # index -1 -> None
        owners = [look[m] for m in reps[:, 0].tolist()]
        backups = [[look[m] for m in row] for row in reps[:, 1:].tolist()]
    owner = F.get(_literal_array(owners, elem), pid)
    backup = F.get(_literal_array(backups, T.ArrayType(elem)), pid)
    return owner, backup


# --------------------------------------------------------------------------- public API
def with_placement(df, key_col, table, *, key_type=None, system="hazelcast",
                   partition_col="partition_id", owner_col="owner", backups_col="backups",
                   member_ids="auto"):
    """Add the partition id, owner and backups of every row's key, as the grid computes them.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Classic or Spark Connect. A pandas-on-Spark DataFrame is refused with the
        conversion to use (``psdf.to_spark()``).
    key_col : str or Column
        The key. Its Spark type picks the Java key type: string -> String, int -> Integer,
        bigint -> Long, binary -> already-serialized Hazelcast data (``key_type="data"``).
        A name equal to a top-level column (Spark's case rules) is that column even if it
        contains a dot (``"user.key"``); otherwise ``"s.key"`` is field ``key`` of struct
        ``s``, as with ``F.col``; backticks quote.
    table : hzfast.PartitionTable, ndarray[int32] (P, R), str/PathLike or int
        A table (object, replica array, or the path of a file written by
        ``PartitionTable.save``, read once on the driver) adds partition, owner and
        backups; a partition count adds only the partition id; None: the system's default
        partition count, partition id only.
    key_type : {None, "string", "int", "long", "data"}, optional
        Override the column-type rule: ``"string"`` hashes int/bigint values as their
        decimal text, ``"long"`` widens int/smallint/tinyint, ``"int"`` widens
        smallint/tinyint (Spark SQL spellings ``integer``, ``bigint``, ``binary`` work too).
    system : {"hazelcast", "ignite"}, default "hazelcast"
        ``"ignite"`` uses Ignite's key -> partition rule (``hashCode``-based; the partition
        count defaults to 1024 when ``table`` is None).
    partition_col, owner_col, backups_col : str
        Names of the added columns (``int``, ``int`` or ``string``, ``array<int>`` or
        ``array<string>``). They must differ from each other and from every column of
        ``df`` by Spark's rules (ignoring case unless ``spark.sql.caseSensitive`` is true):
        an existing column is never silently replaced.
    member_ids : {"auto", "index", "address"}, default "auto"
        How members are named in owner/backups: member indices (int) or addresses
        (string). ``"auto"``: addresses when the table carries a real member registry,
        indices when it has the anonymous default ``Members.from_count(M)``.

    Returns
    -------
    pyspark.sql.DataFrame
        ``df`` plus ``partition_col`` (int), and with a table ``owner_col`` (replica 0;
        -1/null for a partition without owner) and ``backups_col`` (replicas 1..R-1 of the
        partition, -1/null for an empty slot). A null key gives null in every added column.

    Raises
    ------
    ValueError
        Missing key column, a key_type the column cannot be, unknown system, a partition
        count out of range, an added column name that already exists. Raised on the driver
        before any Spark job runs.
    TypeError
        An unsupported key column type (float, decimal, date, struct, ...), a table of the
        wrong type.

    Examples
    --------
    >>> t = hzfast.PartitionTable.round_robin(271, 3)           # doctest: +SKIP
    >>> with_placement(df, "key", t).show()                      # doctest: +SKIP
    """
    func = "with_placement"
    df = check_dataframe(df, func)
    system = _check_system(system, func)
    tab, count = resolve_table(table, func, "table", allow_count=True, allow_none=True)
    if count is None:
        count = _DEFAULT_PARTITIONS[system]
    if tab is not None:
        _check_member_ids(member_ids, func)
    col, kind = resolve_key(df, key_col, key_type, system, func)
    names = {"partition_col": partition_col}
    if tab is not None:
        names.update(owner_col=owner_col, backups_col=backups_col)
    check_output_names(df, names, func)

    from pyspark.sql import functions as F

    pid = partition_udf(kind, count, system)(col)
    if tab is None:
        return df.withColumn(partition_col, pid)
    out = df.withColumn(partition_col, pid)
    owner, backups = placement_columns(F.col(quote_name(partition_col)), tab, member_ids)
    return out.withColumns({owner_col: owner, backups_col: backups})


# --------------------------------------------------------------------------- Spark's hash
_C1, _C2, _M32 = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF


def spark_hash_int(values, seed: int = 42) -> np.ndarray:
    """Spark's ``hash(int_column)`` (Murmur3_x86_32 of the int, seed 42), vectorised.

    Used to pick, for each member, an int routing key that Spark's hash partitioning
    (``pmod(hash(k), n)``, what ``repartition(n, col)`` does) sends to partition ``i``.

    Returns
    -------
    ndarray[int32]
    """
    k = np.asarray(values, dtype=np.int64) & _M32
    k = (k * _C1) & _M32
    k = ((k << 15) | (k >> 17)) & _M32
    k = (k * _C2) & _M32
    h = (seed & _M32) ^ k
    h = ((h << 13) | (h >> 19)) & _M32
    h = (h * 5 + 0xE6546B64) & _M32
    h ^= 4
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h.astype(np.uint32).view(np.int32)


def routing_keys(n: int) -> np.ndarray:
    """``keys[i]`` = smallest int k >= 0 with ``pmod(hash(k), n) == i`` (Spark's hash)."""
    keys = np.full(n, -1, dtype=np.int64)
    start, width = 0, max(64, 8 * n)
    while (keys < 0).any():
        cand = np.arange(start, start + width, dtype=np.int64)
        bucket = np.mod(spark_hash_int(cand).astype(np.int64), n)
        missing = keys < 0
        # first candidate for every bucket (np.unique returns first indices)
        uniq, first = np.unique(bucket, return_index=True)
        take = missing[uniq]
        keys[uniq[take]] = cand[first[take]]
        start += width
    return keys.astype(np.int32)


def partition_by_owner(df, key_col, table, *, key_type=None, system="hazelcast",
                       partition_col="partition_id", owner_col="owner", backups_col="backups",
                       member_ids="auto"):
    """Repartition so that Spark partition ``i`` holds exactly member ``i``'s rows.

    The placement columns of :func:`with_placement` are added; the result has ``M + 1``
    Spark partitions (M = ``table.member_count``): partition ``i < M`` holds the rows owned
    by member ``i`` (possibly none), partition ``M`` the rows without an owner (null key,
    or a partition whose owner slot is empty; empty for a complete table). A bulk loader
    can then ``foreachPartition`` and write each partition to one member, using
    ``pyspark.TaskContext.get().partitionId()`` as the member index.

    Parameters
    ----------
    df, key_col, key_type, system, partition_col, owner_col, backups_col, member_ids
        As for :func:`with_placement`.
    table : hzfast.PartitionTable, ndarray[int32] (P, R) or str/PathLike
        A table is required (a partition count has no owners).

    Returns
    -------
    pyspark.sql.DataFrame
        With ``M + 1`` partitions, routed by Spark's hash partitioning on an internal key
        chosen so that ``pmod(hash(key), M + 1)`` equals the member index.

    Raises
    ------
    TypeError
        ``table`` is not a table; as :func:`with_placement`.
    ValueError
        As :func:`with_placement`.
    """
    func = "partition_by_owner"
    df = check_dataframe(df, func)
    table, _ = resolve_table(table, func, "table")
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    placed = with_placement(df, key_col, table, key_type=key_type, system=system,
                            partition_col=partition_col, owner_col=owner_col,
                            backups_col=backups_col, member_ids=member_ids)
    M = table.member_count
    owners = np.asarray(table.replicas)[:, 0]
    route = routing_keys(M + 1)
    # partition id -> routing key of its owner (M = "no owner")
    per_partition = route[np.where(owners >= 0, owners, M)].tolist()
    tmp = "__hz_route"
    while any(c.lower() == tmp.lower() for c in placed.columns):
        tmp += "_"
    key = F.coalesce(F.get(_literal_array(per_partition, T.IntegerType()),
                           F.col(quote_name(partition_col))),
                     F.lit(int(route[M])))
    return (placed.withColumn(tmp, key).repartition(M + 1, F.col(quote_name(tmp)))
            .drop(tmp))
