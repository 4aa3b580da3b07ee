"""Driver-side checks shared by every function: DataFrames, tables, column names.

Everything here runs on the driver and at most asks Spark to *analyse* a plan (a schema
look-up, which is a gRPC ``AnalyzePlan`` call under Spark Connect): no job ever runs, so bad
input fails before any data is read. Nothing uses ``sparkContext`` or the JVM gateway, which
Spark Connect does not have.
"""
from __future__ import annotations

import os

import numpy as np

import hzfast

__all__ = [
    "case_sensitive",
    "check_dataframe",
    "check_output_names",
    "quote_name",
    "resolve_column",
    "resolve_table",
    "same_name",
]

_INT32_MAX = 2**31 - 1


# --------------------------------------------------------------------------- DataFrames
def check_dataframe(df, func: str, name: str = "df"):
    """``df`` if it is a Spark DataFrame (classic or Spark Connect), else a TypeError.

    A pandas-on-Spark DataFrame is refused with the conversion to use (its index has no
    counterpart in a Spark DataFrame, so the caller decides whether to keep it); a pandas
    DataFrame with ``spark.createDataFrame``.
    """
    from pyspark.sql import DataFrame
    if isinstance(df, DataFrame):               # pyspark.sql.classic and .connect subclass it
        return df
    module = type(df).__module__ or ""
    if module.startswith("pyspark.pandas"):
        raise TypeError(f"{func}: {name} is a pandas-on-Spark DataFrame; pass "
                        f"{name}.to_spark() (or {name}.to_spark(index_col='index') to keep its "
                        f"index as a column) and turn the result back with "
                        f"result.pandas_api() (or .pandas_api(index_col='index'))")
    if module.startswith("pandas"):
        raise TypeError(f"{func}: {name} is a pandas DataFrame; pass "
                        f"spark.createDataFrame({name}), or use hzfast.partition_ids / "
                        f"PartitionTable.locate without Spark")
    raise TypeError(f"{func}: {name} must be a pyspark.sql.DataFrame, got {type(df).__name__}")


# --------------------------------------------------------------------------- tables
def resolve_table(value, func: str, name: str = "table", *, allow_count: bool = False,
                  allow_none: bool = False) -> tuple[hzfast.PartitionTable | None, int | None]:
    """``(table, partition_count)`` from any accepted form of a table.

    A ``hzfast.PartitionTable``; an ``int32`` replica array of shape (P, R) (validated by
    ``hzfast.PartitionTable``); a path (``str``/``os.PathLike``) to a table file written by
    ``PartitionTable.save`` (read here, once, on the driver); with ``allow_count`` a partition
    count (int), which gives ``(None, n)``; with ``allow_none`` None, which gives
    ``(None, None)``.
    """
    if isinstance(value, hzfast.PartitionTable):
        return value, value.partition_count
    if isinstance(value, np.ndarray):
        try:
            table = hzfast.PartitionTable(value)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{func}: {name} is not a valid replica table: {exc}") from None
        return table, table.partition_count
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if not os.path.isfile(path):
            raise ValueError(f"{func}: {name}: no table file at {path!r}")
        try:
            table = hzfast.PartitionTable.load(path)
        except (TypeError, ValueError, OSError, KeyError) as exc:
            raise ValueError(f"{func}: {name}: {path!r} is not a table file written by "
                             f"PartitionTable.save: {exc}") from None
        return table, table.partition_count
    if allow_count and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        n = int(value)
        if not 1 <= n <= _INT32_MAX:
            raise ValueError(f"{func}: {name}: a partition count must be in "
                             f"[1, {_INT32_MAX}], got {n}")
        return None, n
    if allow_none and value is None:
        return None, None
    forms = "a hzfast.PartitionTable, an int32 replica array (P, R), a path to a table file"
    if allow_count:
        forms += " or a partition count (int)"
    raise TypeError(f"{func}: {name} must be {forms}, got {type(value).__name__}")


# --------------------------------------------------------------------------- names
def case_sensitive(df) -> bool:
    """``spark.sql.caseSensitive`` of the DataFrame's session (a conf read, no job)."""
    value = df.sparkSession.conf.get("spark.sql.caseSensitive", "false")
    return str(value).strip().lower() == "true"


def _fold(name: str) -> str:
    # Spark compares names with Java's String.equalsIgnoreCase: char by char, equal when the
    # upper-cased (or lower-cased) chars are equal. A char whose Python upper() is longer
    # (German sharp s) is its own Java upper case.
    out = []
    for ch in name:
        up = ch.upper()
        up = up if len(up) == 1 else ch
        low = up.lower()
        out.append(low if len(low) == 1 else up)
    return "".join(out)


def same_name(a: str, b: str, sensitive: bool) -> bool:
    """Spark's resolver: exact when case-sensitive, else ``equalsIgnoreCase``."""
    return a == b if sensitive else _fold(a) == _fold(b)


def quote_name(name: str) -> str:
    """A top-level column name as one identifier for ``F.col`` (backticks, doubled inside)."""
    return "`" + name.replace("`", "``") + "`"


def check_output_names(df, names: dict, func: str) -> None:
    """Added columns must differ from each other and from ``df``'s columns, by Spark's rules.

    ``names`` maps the argument (``"partition_col"``) to the column name it asks for.
    """
    sensitive = case_sensitive(df)
    items = list(names.items())
    for arg, value in items:
        if not isinstance(value, str) or not value:
            raise TypeError(f"{func}: {arg} must be a non-empty column name (str), got {value!r}")
    rule = "case-sensitively" if sensitive else "ignoring case (spark.sql.caseSensitive=false)"
    for i, (arg, value) in enumerate(items):
        for arg2, value2 in items[i + 1:]:
            if same_name(value, value2, sensitive):
                raise ValueError(f"{func}: output column names must differ {rule}: "
                                 f"{arg}={value!r} and {arg2}={value2!r}")
        for existing in df.columns:
            if same_name(value, existing, sensitive):
                raise ValueError(f"{func}: {arg}={value!r} would replace the existing column "
                                 f"{existing!r} (Spark compares names {rule}); choose another "
                                 f"{arg}, or rename/drop the column first")


def resolve_column(df, col, func: str, name: str = "key_col"):
    """``(Column, label, DataType)`` for a column given by name or as a Column.

    A name that is exactly a top-level column (by Spark's case rules) is that column, dots
    and all (``"user.key"``); otherwise it is read as Spark's ``F.col`` reads it (``"s.key"``
    is field ``key`` of struct ``s``, backticks quote a name). Resolving is analysis only.
    """
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(col, str):
        if not col:
            raise ValueError(f"{func}: {name} must be a non-empty column name")
        sensitive = case_sensitive(df)
        top = [c for c in df.columns if same_name(c, col, sensitive)]
        if len(top) > 1:
            raise ValueError(f"{func}: {name} {col!r} is ambiguous: the DataFrame has columns "
                             f"{top}")
        if top:
            column = F.col(quote_name(top[0]))
            return column, top[0], df.schema[top[0]].dataType
        column, label = F.col(col), col
    elif isinstance(col, Column):
        column, label = col, str(col)
    else:
        raise TypeError(f"{func}: {name} must be a column name (str) or a Column, "
                        f"got {type(col).__name__}")
    try:
        dtype = df.select(column).schema[0].dataType
    except Exception as exc:  # noqa: BLE001 - AnalysisException, classic or Connect flavour
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{func}: {name} {label!r} not found; the DataFrame has columns "
                         f"{df.columns} (a dot reaches into a struct; quote a name with "
                         f"backticks). Spark said: {first[:300]}") from None
    return column, label, dtype
