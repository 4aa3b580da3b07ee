"""``estimate_movement``: what a topology change costs on *this* data, member by member."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

import hzfast
from spark_integration.placement import partition_udf, resolve_key

__all__ = ["estimate_movement", "MovementEstimate", "transfers_of"]

_HEADER = 8  # serialized Data: partition hash + type id


@dataclass(frozen=True)
class MovementEstimate:
    """Result of :func:`estimate_movement` (numpy arrays; P partitions, M members).

    Attributes
    ----------
    partition_rows, partition_bytes : ndarray[int64] of shape (P,)
        Rows and bytes of the data in each partition.
    partition_transfer_bytes : ndarray[int64] of shape (P,)
        Bytes sent over the network for each partition (its bytes times the number of
        its migrations that copy data to a member not yet holding it).
    member_bytes_in, member_bytes_out, member_rows_in, member_rows_out : ndarray[int64] (M,)
        What each member receives / sends. The sender of a migration is its source when
        it moves the owner replica (``source_current_index == 0``), else the partition's
        owner at that point of the plan (backups are copied from the owner), as in Hazelcast.
    migrations : int
        Queued (non-instant) migrations of the plan.
    transfers : int
        Migrations that copy a partition's data to a member (destination holds no replica).
    total_rows, total_bytes, transferred_rows, transferred_bytes : int
    unplaced_rows, unplaced_bytes : int
        Rows with a null key (no partition): not counted anywhere else.
    plan : hzfast.MigrationPlan
        ``hzfast.plan_migrations(current, target)``.
    schedule : object or None
        ``hzfast.schedule(plan, max_parallel_migrations)`` when hzfast provides it.
    estimated_seconds : float or None
        With a ``bandwidth``: the busiest member's ``max(bytes_in, bytes_out) / bandwidth``,
        a lower bound on the migration time when every member link carries ``bandwidth``
        bytes/s in each direction.
    """

    partition_rows: np.ndarray
    partition_bytes: np.ndarray
    partition_transfer_bytes: np.ndarray
    member_bytes_in: np.ndarray
    member_bytes_out: np.ndarray
    member_rows_in: np.ndarray
    member_rows_out: np.ndarray
    migrations: int
    transfers: int
    total_rows: int
    total_bytes: int
    transferred_rows: int
    transferred_bytes: int
    unplaced_rows: int
    unplaced_bytes: int
    plan: Any = field(repr=False)
    schedule: Any = field(default=None, repr=False)
    estimated_seconds: Optional[float] = None

    def summary(self) -> dict:
        """Totals as a plain dict (for printing / JSON)."""
        return {
            "total_rows": self.total_rows, "total_bytes": self.total_bytes,
            "transferred_rows": self.transferred_rows,
            "transferred_bytes": self.transferred_bytes,
            "moved_fraction": (self.transferred_bytes / self.total_bytes) if self.total_bytes else 0.0,
            "migrations": self.migrations, "transfers": self.transfers,
            "unplaced_rows": self.unplaced_rows,
            "busiest_member_bytes": int(max(self.member_bytes_in.max(initial=0),
                                            self.member_bytes_out.max(initial=0))),
            "estimated_seconds": self.estimated_seconds,
            "schedule_rounds": None if self.schedule is None else int(self.schedule.rounds),
        }

    def members_frame(self):
        """pandas DataFrame, one row per member: bytes/rows in and out."""
        import pandas as pd
        return pd.DataFrame({"member": np.arange(self.member_bytes_in.shape[0]),
                             "bytes_in": self.member_bytes_in, "bytes_out": self.member_bytes_out,
                             "rows_in": self.member_rows_in, "rows_out": self.member_rows_out})

    def partitions_frame(self):
        """pandas DataFrame, one row per partition: rows, bytes, transferred bytes."""
        import pandas as pd
        return pd.DataFrame({"partition_id": np.arange(self.partition_rows.shape[0]),
                             "rows": self.partition_rows, "bytes": self.partition_bytes,
                             "transfer_bytes": self.partition_transfer_bytes})


def _table(value, name: str) -> "hzfast.PartitionTable":
    """A validated table (hzfast's own validator, through the public PartitionTable)."""
    if isinstance(value, hzfast.PartitionTable):
        return value
    if not isinstance(value, np.ndarray):
        raise TypeError(f"estimate_movement: {name} must be a hzfast.PartitionTable or an int32 "
                        f"replica array (P, R), got {type(value).__name__}")
    try:
        return hzfast.PartitionTable(value)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"estimate_movement: {name} is not a valid replica table: {exc}") from None


def _pad(reps: np.ndarray, R: int) -> np.ndarray:
    if reps.shape[1] == R:
        return np.ascontiguousarray(reps)
    out = np.full((reps.shape[0], R), -1, dtype=np.int32)
    out[:, :reps.shape[1]] = reps
    return out


def _sum_by(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, index, values)
    return out


def transfers_of(plan, current_owners: np.ndarray):
    """Data transfers of a plan: ``(mask, sender)`` arrays aligned with the plan.

    ``mask[i]``: migration ``i`` copies its partition's data to its destination (it has a
    destination that held no replica, and it is not an instant decision). ``sender[i]``:
    the member sending it: the source when ``source_current_index == 0``, else the owner
    of the partition just before migration ``i`` (``current_owners[p]`` updated by every
    earlier migration of ``p`` into index 0); -1 if none.
    """
    pid = np.asarray(plan.partition_id)
    dst = np.asarray(plan.destination)
    dci = np.asarray(plan.destination_current_index)
    dni = np.asarray(plan.destination_new_index)
    src = np.asarray(plan.source)
    sci = np.asarray(plan.source_current_index)
    instant = np.asarray(plan.instant, dtype=bool)
    n = pid.shape[0]
    mask = (dst >= 0) & (dci < 0) & ~instant
    idx = np.arange(n)
    mark = np.where(dni == 0, idx, -1)
    last = np.maximum.accumulate(mark) if n else mark
    prev = np.concatenate(([-1], last[:-1])) if n else last
    same = prev >= 0
    same[same] = pid[prev[same]] == pid[same]
    owner_before = np.where(same, dst[np.maximum(prev, 0)],
                            current_owners[pid] if n else np.empty(0, np.int32))
    sender = np.where(sci == 0, src, owner_before).astype(np.int32)
    return mask, sender


def estimate_movement(df, key_col, current, target, *, size_col=None, key_type=None,
                      max_parallel_migrations=10, bandwidth=None):
    """Rows and bytes that move, per partition and per member, if ``current`` becomes ``target``.

    One Spark job: the key's partition id is computed by hzfast's kernel in an Arrow UDF,
    rows and bytes are summed per partition in Spark, and the P-row result is joined on the
    driver with ``hzfast.plan_migrations(current, target)`` (Hazelcast's own migration
    decisions, cycles reverted), and ``hzfast.schedule`` when hzfast has one.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    key_col : str or Column
        The key (string, int, bigint or binary; see ``with_placement``).
    current, target : hzfast.PartitionTable or ndarray[int32] of shape (P, R)
        Same P. Different R are allowed (the narrower table is padded with empty slots):
        "add a backup" is a valid what-if. Member indices refer to one member space.
    size_col : str, optional
        Numeric column: bytes of each row (e.g. its serialized value size). Default: the
        size of the serialized key (String ``12 + UTF-8 bytes``, Integer 12, Long 16, Data
        its length).
    key_type : {None, "string", "int", "long", "data"}, optional
        As for ``with_placement``.
    max_parallel_migrations : int, default 10
        Passed to ``hzfast.schedule`` when present.
    bandwidth : float, optional
        Bytes/s per member link, for :attr:`MovementEstimate.estimated_seconds`.

    Returns
    -------
    MovementEstimate

    Raises
    ------
    ValueError
        Missing key/size column, partition counts differ, bad key_type, non-positive
        bandwidth (all before any job).
    TypeError
        Unsupported key or size column type, tables of the wrong type.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    current, target = _table(current, "current"), _table(target, "target")
    cur, tgt = current.replicas, target.replicas
    if cur.shape[0] != tgt.shape[0]:
        raise ValueError(f"estimate_movement: current has {cur.shape[0]} partitions, target "
                         f"{tgt.shape[0]}: a partition count cannot change")
    P = cur.shape[0]
    R = max(cur.shape[1], tgt.shape[1])
    cur, tgt = _pad(cur, R), _pad(tgt, R)
    M = max(current.member_count, target.member_count)
    if bandwidth is not None and not (isinstance(bandwidth, (int, float)) and bandwidth > 0):
        raise ValueError(f"estimate_movement: bandwidth must be a positive number of bytes/s, "
                         f"got {bandwidth!r}")

    col, kind = resolve_key(df, key_col, key_type, "hazelcast", "estimate_movement")
    if size_col is None:
        if kind == "string":
            size = F.octet_length(col) + F.lit(_HEADER + 4)
        elif kind == "data":
            size = F.length(col)
        else:
            size = F.lit(_HEADER + (4 if kind == "int" else 8))
        size = size.cast("bigint")
    else:
        if not isinstance(size_col, str):
            raise TypeError(f"estimate_movement: size_col must be a column name, "
                            f"got {type(size_col).__name__}")
        if size_col not in df.columns:
            raise ValueError(f"estimate_movement: size column {size_col!r} not found; the "
                             f"DataFrame has columns {df.columns}")
        st = df.schema[size_col].dataType
        if not isinstance(st, T.NumericType):
            raise TypeError(f"estimate_movement: size column {size_col!r} has type "
                            f"{st.simpleString()}, expected a number of bytes")
        size = F.col(size_col)
        size = (size if isinstance(st, T.IntegralType) else F.round(size)).cast("bigint")

    plan = hzfast.plan_migrations(cur, tgt)   # validates both tables before the job

    pid = partition_udf(kind, P, "hazelcast")(col)
    rows_out = (df.select(pid.alias("p"), size.alias("s"))
                .groupBy("p").agg(F.count(F.lit(1)).alias("rows"),
                                  F.coalesce(F.sum("s"), F.lit(0)).alias("bytes"))
                .collect())
    prow = np.zeros(P, dtype=np.int64)
    pbytes = np.zeros(P, dtype=np.int64)
    unplaced_rows = unplaced_bytes = 0
    for r in rows_out:
        if r["p"] is None:
            unplaced_rows, unplaced_bytes = int(r["rows"]), int(r["bytes"])
        else:
            prow[r["p"]] = r["rows"]
            pbytes[r["p"]] = r["bytes"]

    mask, sender = transfers_of(plan, cur[:, 0])
    p_t = np.asarray(plan.partition_id)[mask]
    d_t = np.asarray(plan.destination)[mask]
    s_t = sender[mask]
    b_t, r_t = pbytes[p_t], prow[p_t]
    bin_ = _sum_by(d_t, b_t, M)
    rin = _sum_by(d_t, r_t, M)
    has = s_t >= 0
    bout = _sum_by(s_t[has], b_t[has], M)
    rout = _sum_by(s_t[has], r_t[has], M)
    ptrans = _sum_by(p_t, b_t, P)

    schedule_fn = getattr(hzfast, "schedule", None)
    sched = None
    if schedule_fn is not None:
        sched = schedule_fn(plan, max_parallel_migrations=max_parallel_migrations)
    seconds = None
    if bandwidth is not None:
        busiest = max(bin_.max(initial=0), bout.max(initial=0))
        seconds = float(busiest) / float(bandwidth)

    return MovementEstimate(
        partition_rows=prow, partition_bytes=pbytes, partition_transfer_bytes=ptrans,
        member_bytes_in=bin_, member_bytes_out=bout, member_rows_in=rin, member_rows_out=rout,
        migrations=int((~np.asarray(plan.instant, dtype=bool)).sum()), transfers=int(mask.sum()),
        total_rows=int(prow.sum()), total_bytes=int(pbytes.sum()),
        transferred_rows=int(r_t.sum()), transferred_bytes=int(b_t.sum()),
        unplaced_rows=unplaced_rows, unplaced_bytes=unplaced_bytes,
        plan=plan, schedule=sched, estimated_seconds=seconds)
