"""``estimate_movement``: what a topology change costs on *this* data, member by member."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import hzfast
from spark_integration.inputs import check_dataframe, resolve_column, resolve_table
from spark_integration.placement import _check_system, partition_udf, resolve_key

__all__ = ["MovementEstimate", "estimate_movement", "transfers_of"]

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
    total_rows, total_bytes : int
        The data set: every placed row once (see :meth:`summary`).
    transferred_rows, transferred_bytes : int
        Replica copies sent: a partition's rows/bytes once per transfer of it.
    moved_rows, moved_bytes : int
        The part of the data set in partitions with at least one transfer.
    owner_moved_rows, owner_moved_bytes : int
        The part of the data set whose owner (replica 0) differs between the tables.
    unplaced_rows, unplaced_bytes : int
        Rows with a null key (no partition): not counted anywhere else.
    system : str
        ``"hazelcast"`` or ``"ignite"``.
    plan : hzfast.MigrationPlan or None
        ``hzfast.plan_migrations(current, target)`` (Hazelcast); None for Ignite.
    schedule : object or None
        ``hzfast.schedule(plan, max_parallel_migrations)`` (Hazelcast).
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
    moved_rows: int = 0
    moved_bytes: int = 0
    owner_moved_rows: int = 0
    owner_moved_bytes: int = 0
    system: str = "hazelcast"
    plan: Any = field(default=None, repr=False)
    schedule: Any = field(default=None, repr=False)
    estimated_seconds: float | None = None

    def summary(self) -> dict:
        """The totals as a plain dict (for printing / JSON), every figure defined here.

        Two kinds of quantity, never mixed: the **data set** (each placed row once, whatever
        its replica count) and **replica copies** sent over the network (a row counts once per
        copy: one partition moving three replicas counts three times).

        * ``total_rows``, ``total_bytes``: the data set (rows with a non-null key).
        * ``transferred_rows``, ``transferred_bytes``: replica copies sent (sum over the
          transfers of their partition's rows/bytes); equal to the sum of
          ``member_rows_in``/``member_bytes_in``.
        * ``copies_per_byte``: ``transferred_bytes / total_bytes``, replica copies sent per
          byte of data; 0 when nothing moves, can exceed 1 (every replica of every partition
          moving gives about R, more when the planner moves a replica away and back).
        * ``data_moved_fraction``: fraction of the data set (bytes) in partitions that get at
          least one copy, in [0, 1].
        * ``owner_moved_fraction``: fraction of the data set (bytes) whose owner (replica 0)
          changes, in [0, 1].
        * ``migrations``: queued migrations of the plan (Hazelcast); ``transfers``: those that
          copy data (for Ignite both count (partition, node) copies).
        * ``unplaced_rows``, ``unplaced_bytes``: rows with a null key, in no other figure.
        * ``busiest_member_bytes``: the largest ``bytes_in`` or ``bytes_out`` of one member.
        * ``estimated_seconds``: ``busiest_member_bytes / bandwidth`` or None;
          ``schedule_rounds``: rounds of ``hzfast.schedule`` (Hazelcast) or None.

        (``moved_fraction`` of earlier versions was ``copies_per_byte`` under a misleading
        name and is gone.)
        """
        total = self.total_bytes
        return {
            "system": self.system,
            "total_rows": self.total_rows, "total_bytes": total,
            "transferred_rows": self.transferred_rows,
            "transferred_bytes": self.transferred_bytes,
            "copies_per_byte": (self.transferred_bytes / total) if total else 0.0,
            "data_moved_fraction": (self.moved_bytes / total) if total else 0.0,
            "owner_moved_fraction": (self.owner_moved_bytes / total) if total else 0.0,
            "migrations": self.migrations, "transfers": self.transfers,
            "unplaced_rows": self.unplaced_rows, "unplaced_bytes": self.unplaced_bytes,
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


def ignite_transfers(current: np.ndarray, target: np.ndarray):
    """Ignite rebalancing copies: ``(partition, destination, sender)`` int32 arrays.

    Every node in a partition's target row that is not in its current row pulls one copy
    (Ignite's demander/supplier rebalancing has no intermediate steps); the supplier is the
    current primary, else the first current backup, else -1 (the partition's data is lost).
    """
    P, R = current.shape
    p_idx = np.repeat(np.arange(P, dtype=np.int32), R)
    dst = target.reshape(-1)
    held = (target[:, :, None] == current[:, None, :]).any(axis=2).reshape(-1)
    new = (dst >= 0) & ~held
    present = current >= 0
    first = np.where(present.any(axis=1), np.argmax(present, axis=1), -1)
    supplier = np.where(first >= 0, current[np.arange(P), np.maximum(first, 0)], -1)
    return p_idx[new], dst[new].astype(np.int32), supplier[p_idx[new]].astype(np.int32)


def _default_size(kind: str, system: str, col):
    """Serialized key size: Hazelcast Data (8-byte header + payload), Ignite's binary
    marshaller (1 type byte + payload)."""
    from pyspark.sql import functions as F
    header = _HEADER if system == "hazelcast" else 1
    if kind == "string":
        size = F.octet_length(col) + F.lit(header + 4)
    elif kind == "data":
        size = F.length(col)
    else:
        size = F.lit(header + (4 if kind == "int" else 8))
    return size.cast("bigint")


def estimate_movement(df, key_col, current, target, *, size_col=None, key_type=None,
                      system="hazelcast", max_parallel_migrations=10, bandwidth=None):
    """Rows and bytes that move, per partition and per member, if ``current`` becomes ``target``.

    One Spark job: the key's partition id is computed by hzfast's kernel in an Arrow UDF,
    rows and bytes are summed per partition in Spark, and the P-row result is combined on
    the driver with the transfers the change needs: for Hazelcast the migrations of
    ``hzfast.plan_migrations(current, target)`` (Hazelcast's own decisions, cycles reverted)
    that copy data, scheduled by ``hzfast.schedule``; for Ignite one copy per node that
    gains a partition (see :func:`ignite_transfers`).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Classic or Spark Connect (pandas-on-Spark: pass ``psdf.to_spark()``).
    key_col : str or Column
        The key (string, int, bigint or binary; see ``with_placement``).
    current, target : hzfast.PartitionTable, ndarray[int32] of shape (P, R), or str/PathLike
        A table, a replica array or the path of a table file (read once on the driver).
        Same P. Different R are allowed (the narrower table is padded with empty slots):
        "add a backup" is a valid what-if. Member indices refer to one member space. For
        Ignite, e.g. ``hzfast.ignite.assign(...)`` before and after a topology change.
    size_col : str or Column, optional
        Numeric column: bytes of each row (e.g. its serialized value size). Default: the
        size of the serialized key (Hazelcast: String ``12 + UTF-8 bytes``, Integer 12,
        Long 16, Data its length; Ignite: ``5 + UTF-8 bytes``, 5, 9).
    key_type : {None, "string", "int", "long", "data"}, optional
        As for ``with_placement``.
    system : {"hazelcast", "ignite"}, default "hazelcast"
        Key -> partition rule and movement model, as for ``with_placement``.
    max_parallel_migrations : int, default 10
        Passed to ``hzfast.schedule`` (Hazelcast).
    bandwidth : float, optional
        Bytes/s per member link, for :attr:`MovementEstimate.estimated_seconds`.

    Returns
    -------
    MovementEstimate

    Raises
    ------
    ValueError
        Missing key/size column, partition counts differ, bad key_type or system,
        non-positive bandwidth (all before any job).
    TypeError
        Unsupported key or size column type, tables or df of the wrong type.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    func = "estimate_movement"
    df = check_dataframe(df, func)
    system = _check_system(system, func)
    current, _ = resolve_table(current, func, "current")
    target, _ = resolve_table(target, func, "target")
    cur, tgt = np.asarray(current.replicas), np.asarray(target.replicas)
    if cur.shape[0] != tgt.shape[0]:
        raise ValueError(f"{func}: current has {cur.shape[0]} partitions, target "
                         f"{tgt.shape[0]}: a partition count cannot change")
    P = cur.shape[0]
    R = max(cur.shape[1], tgt.shape[1])
    cur, tgt = _pad(cur, R), _pad(tgt, R)
    M = max(current.member_count, target.member_count)
    if bandwidth is not None and (isinstance(bandwidth, bool) or not isinstance(
            bandwidth, (int, float, np.integer, np.floating)) or not bandwidth > 0):
        raise ValueError(f"{func}: bandwidth must be a positive number of bytes/s, "
                         f"got {bandwidth!r}")
    if isinstance(max_parallel_migrations, bool) or not isinstance(
            max_parallel_migrations, (int, np.integer)) or max_parallel_migrations < 1:
        raise ValueError(f"{func}: max_parallel_migrations must be an int >= 1, "
                         f"got {max_parallel_migrations!r}")

    col, kind = resolve_key(df, key_col, key_type, system, func)
    if size_col is None:
        size = _default_size(kind, system, col)
    else:
        size, label, st = resolve_column(df, size_col, func, "size_col")
        if not isinstance(st, T.NumericType):
            raise TypeError(f"{func}: size column {label!r} has type "
                            f"{st.simpleString()}, expected a number of bytes")
        size = (size if isinstance(st, T.IntegralType) else F.round(size)).cast("bigint")

    plan = sched = None
    if system == "hazelcast":
        plan = hzfast.plan_migrations(cur, tgt)   # validates both tables before the job

    pid = partition_udf(kind, P, system)(col)
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

    if system == "hazelcast":
        mask, sender = transfers_of(plan, cur[:, 0])
        p_t = np.asarray(plan.partition_id)[mask]
        d_t = np.asarray(plan.destination)[mask]
        s_t = sender[mask]
        migrations = int((~np.asarray(plan.instant, dtype=bool)).sum())
        sched = hzfast.schedule(plan, max_parallel_migrations=int(max_parallel_migrations))
    else:
        p_t, d_t, s_t = ignite_transfers(cur, tgt)
        migrations = int(p_t.shape[0])
    b_t, r_t = pbytes[p_t], prow[p_t]
    bin_ = _sum_by(d_t, b_t, M)
    rin = _sum_by(d_t, r_t, M)
    has = s_t >= 0
    bout = _sum_by(s_t[has], b_t[has], M)
    rout = _sum_by(s_t[has], r_t[has], M)
    ptrans = _sum_by(p_t, b_t, P)
    moved = np.zeros(P, dtype=bool)
    moved[p_t] = True
    owner_moved = cur[:, 0] != tgt[:, 0]

    seconds = None
    if bandwidth is not None:
        busiest = max(bin_.max(initial=0), bout.max(initial=0))
        seconds = float(busiest) / float(bandwidth)

    return MovementEstimate(
        partition_rows=prow, partition_bytes=pbytes, partition_transfer_bytes=ptrans,
        member_bytes_in=bin_, member_bytes_out=bout, member_rows_in=rin, member_rows_out=rout,
        migrations=migrations, transfers=int(p_t.shape[0]),
        total_rows=int(prow.sum()), total_bytes=int(pbytes.sum()),
        transferred_rows=int(r_t.sum()), transferred_bytes=int(b_t.sum()),
        unplaced_rows=unplaced_rows, unplaced_bytes=unplaced_bytes,
        moved_rows=int(prow[moved].sum()), moved_bytes=int(pbytes[moved].sum()),
        owner_moved_rows=int(prow[owner_moved].sum()),
        owner_moved_bytes=int(pbytes[owner_moved].sum()),
        system=system, plan=plan, schedule=sched, estimated_seconds=seconds)
