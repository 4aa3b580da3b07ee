"""Repartitioning: repair a table after members leave, and compute a balanced target.

:func:`repair` does what Hazelcast's master does when members leave (empty their slots,
promote a backup where the owner is gone). :func:`arrange` computes the new target table:
deterministic, balanced per replica index and per member group, keeping every slot it can
and never forming a migration cycle with the current table. :func:`arrangement_report`
measures a target against the current table and a proven lower bound on slot changes.
See docs/design.md §8.

Algorithm of :func:`arrange` (kernel ``hzfast._arrange``, reference
``hzfast.reference.arrangement``):

1. Groups: ``members.group_ids(grouping)`` over the data (non-lite) members; a single
   group with several members is split in two (its first half by index forms the second
   group), as Hazelcast does, so backups remain possible. ``G`` groups; ``R`` replicas
   (default ``min(G, 7)``); ``R_fill = min(R, G)`` indices are filled.
2. Quotas per replica index ``r``: every group gets ``floor(P/G)``; the ``P mod G`` extra
   slots go to the groups that already hold the most at ``r`` (ties: lower group id),
   subject to each group appearing at most once per row overall (when ``R_fill == G``
   every group must get exactly ``P mod G`` extras over all indices: groups that must
   take an extra at every remaining index are served first). Inside a group, the group's
   quota is split the same way over its members (extras to those holding the most).
   Ties go to the groups with the fewest extras so far (spreads the extras, which keeps
   rows fillable), then to the lower group id.
3. Keep every current slot whose member is within its quota at that index (a data member
   whose group is not already earlier in the row); where a member holds more than its
   quota, free the excess in the rows that have the fewest empty slots so far (so the
   holes of a join land in distinct rows).
4. Fill the holes index by index, row by row, among the groups with capacity that are
   not yet in the row: the largest remaining capacity first, then members that would not
   move within the row (a member that stays in a row keeps its index), then the cyclic
   order starting at a fixed hash of (partition, index) - deterministic and well spread
   (docs/design.md §8.5). A member may move to another index of its row only if
   that does not close a cycle. When no group fits, a breadth-first augmenting path
   shifts members between rows at the same index (rows filled in this pass first, then
   kept slots, each of which costs one extra change); as a last resort fill over quota
   (never happens in the tested scenarios; ``arrangement_report`` would say so).
5. Safety net: any cycle left with the current table is reverted (Hazelcast's rule,
   :func:`hzfast.fix_cycles`).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast._check import (
    MAX_MEMBER_COUNT,
    MAX_REPLICA_COUNT,
    as_bool_column,
    as_int_column,
    as_replicas,
    as_versions,
    check_int,
    check_member_total,
    check_members_arg,
    check_table,
    frozen,
)
from hzfast._typing import TableLike, VectorLike
from hzfast.members import Members, MembersLike
from hzfast.migration.planner import fix_cycles


@contextmanager
def _passive_openmp() -> Iterator[None]:
    """Within: GNU OpenMP, if loaded now, makes its idle threads wait passively.

    GNU OpenMP reads ``OMP_WAIT_POLICY`` once, when it is loaded (with the kernel's
    import): by default an idle worker spins for milliseconds after each parallel region,
    taking a core from the sequential fill that follows (and from other processes:
    measured here, 2 threads then ran slower than 1 on a busy 2-core machine). hzfast's
    parallel regions are few and long, so waking sleeping workers costs nothing
    measurable. The variable is set only within, and only when the user set neither it
    nor ``GOMP_SPINCOUNT`` (docs/design.md §8.8)."""
    mine = not ({"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} & os.environ.keys())
    if mine:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        yield
    finally:
        if mine:
            del os.environ["OMP_WAIT_POLICY"]


with _passive_openmp():
    from hzfast import _arrange  # loads OpenMP (see _passive_openmp)

__all__ = ["ArrangementReport", "arrange", "arrangement_report", "repair"]

#: A grouping: a name ("per_member", "host", "zone", "custom") or one group id per member.
Grouping = str | ArrayLike


# ----------------------------------------------------------------------------- repair
def _alive_mask(alive: object, member_count: int | None, top: int,
                lite: NDArray[np.bool_] | None) -> NDArray[np.uint8]:
    """A fresh uint8 flag per member (at least one entry) from a bool mask or alive
    indices (``top``: the table's largest member + 1); every index is a member index
    (``< MAX_MEMBER_COUNT``), so the mask stays small whatever ``alive`` claims."""
    if isinstance(alive, (set, frozenset)):
        alive = list(alive)
    if isinstance(alive, (str, bytes, Mapping)) or \
            not isinstance(alive, (Iterable, np.ndarray)):
        raise TypeError("alive must be a bool mask (one flag per member) or a collection of "
                        f"alive member indices, got {type(alive).__name__}")
    if not isinstance(alive, (np.ndarray, list, tuple)):
        alive = list(alive)
    is_mask = (alive.dtype == np.bool_ if isinstance(alive, np.ndarray)
               else len(alive) > 0 and all(isinstance(v, (bool, np.bool_)) for v in alive))
    if is_mask:
        mask = _check_bool_mask(alive)
        if member_count is not None and mask.shape[0] != member_count:
            raise ValueError(f"alive mask must have one flag per member ({member_count}), "
                             f"got {mask.shape[0]}")
        if mask.shape[0] < top:
            raise ValueError(f"alive mask has {mask.shape[0]} flags but the table uses member "
                             f"index {top - 1}")
        if mask.shape[0] > MAX_MEMBER_COUNT:
            raise ValueError(f"alive mask has {mask.shape[0]} flags; hzfast supports at most "
                             f"{MAX_MEMBER_COUNT} members")
    else:
        n = member_count if member_count is not None else MAX_MEMBER_COUNT
        arr = _check_index_column(alive, n)
        if member_count is None:
            n = max(top, int(arr.max()) + 1 if arr.size else 0)
        mask = np.zeros(n, dtype=bool)
        mask[arr] = True
    if lite is not None:
        mask &= ~lite
    return np.ascontiguousarray(mask.view(np.uint8) if mask.size else np.zeros(1, np.uint8))


def _check_bool_mask(alive: object) -> NDArray[np.bool_]:
    return as_bool_column(alive, "alive")


def _check_index_column(alive: object, n: int) -> NDArray[np.int32]:
    """Alive member indices, each in ``[0, n)`` (the validator names ``alive``)."""
    return as_int_column(alive, "alive", minimum=0, maximum=n - 1)


def repair(table_or_replicas: TableLike, alive: ArrayLike | Iterable[int],
           versions: VectorLike | None = None, *, threads: int | None = None
           ) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """Remove departed (and lite) members from a table and promote backups to owners.

    Exactly Hazelcast's repair after members leave: every slot whose member is not alive
    is emptied; then, in every partition whose owner slot (index 0) is empty, the first
    non-empty backup moves up to index 0 and its old slot becomes empty. Versions rise as
    in Hazelcast's ``InternalPartitionImpl`` (+1 per slot-change event): +1 per emptied
    slot, +2 per promotion (index 0 filled and index ``i`` emptied). Nothing else moves.

    Parameters
    ----------
    table_or_replicas : PartitionTable or ndarray[int32] of shape (P, R)
        The current table. With a :class:`PartitionTable`, its lite members count as not
        alive and its versions are the default ``versions``.
    alive : ndarray[bool] of shape (M,), or collection of int
        A mask with one flag per member (with a PartitionTable, ``M`` is its member count;
        with an array, the mask must cover every index used), or the indices of the
        members still alive (every other member is gone).
    versions : ndarray[int32] of shape (P,), optional
        Per-partition versions. Default: the table's, or zeros for an array.
    threads : int, optional
        Threads for the pass over the rows, as in :func:`arrange` (the result is the
        same for every thread count).

    Returns
    -------
    replicas : ndarray[int32] of shape (P, R)
        A new repaired table (the input is not modified).
    versions : ndarray[int32] of shape (P,)
        New versions.

    Raises
    ------
    TypeError
        Wrong dtype/type of the table, ``alive``, ``versions`` or ``threads``.
    ValueError
        Malformed table, mask of the wrong length, index out of range, versions of the
        wrong length, ``threads`` < 1 (or ``HZFAST_THREADS`` not an int >= 1).

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> reps = np.array([[2, 0, 1], [0, 2, 1]], dtype=np.int32)
    >>> new, vers = hzfast.repair(reps, [0, 1])           # member 2 left
    >>> new.tolist(), vers.tolist()
    ([[0, -1, 1], [0, -1, 1]], [3, 1])
    """
    nthreads = _thread_count(threads)
    members = getattr(table_or_replicas, "members", None)
    if members is not None and hasattr(table_or_replicas, "versions"):   # a PartitionTable
        reps, largest = check_table(table_or_replicas, "table_or_replicas",
                                    member_count=len(members))
        mask = _alive_mask(alive, len(members), largest + 1, members.lite)
        vers = table_or_replicas.versions if versions is None else versions
    else:
        reps, largest = check_table(table_or_replicas, "table_or_replicas")
        mask = _alive_mask(alive, None, largest + 1, None)
        vers = np.zeros(reps.shape[0], dtype=np.int32) if versions is None else versions
    vers = as_versions(vers, reps.shape[0], "versions")
    return _arrange.repair(reps, mask, vers, _chunks(nthreads, reps.shape[0]))


# ----------------------------------------------------------------------------- groups
@dataclass(frozen=True, eq=False)
class _Prepared:
    cur: NDArray[np.int32]   # (P, W) int32, padded with -1
    gid: NDArray[np.int32]   # (M,) int32 group id per member, -1 for lite members
    G: int
    R: int                   # requested replica count
    R_fill: int              # indices filled: min(R, G)
    gstart: NDArray[np.int32]  # (G + 1,) CSR offsets
    gmem: NDArray[np.int32]  # members grouped by group, ascending inside each group


def _groups(members: Members, grouping: Grouping) -> tuple[NDArray[np.int32], int]:
    """Dense group ids over data members (-1 for lite), with Hazelcast's split rule."""
    if not isinstance(grouping, (str, np.ndarray, list, tuple)):
        raise TypeError("grouping must be 'per_member', 'host', 'zone', 'custom' or an array "
                        f"of group ids per member, got {type(grouping).__name__}")
    return _groups_uncached(members, grouping)


def _groups_uncached(members: Members, grouping: Grouping) -> tuple[NDArray[np.int32], int]:
    raw = members.group_ids(grouping)
    lite = members.lite
    data = np.flatnonzero(~lite)
    if data.size == 0:
        raise ValueError("members has no data (non-lite) members: nothing can hold partitions")
    gid = np.full(len(members), -1, dtype=np.int32)
    _, dense = np.unique(raw[data], return_inverse=True)
    # first-seen order among data members (stable, independent of label values)
    first: dict[int, int] = {}
    for d in dense.tolist():
        first.setdefault(d, len(first))
    gid[data] = np.array([first[d] for d in dense.tolist()], dtype=np.int32)
    G = len(first)
    if G == 1 and data.size >= 2:
        gid[data[: data.size // 2]] = 1
        G = 2
    return gid, G


def _csr(gid: NDArray[np.int32], G: int) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    order = np.argsort(gid, kind="stable").astype(np.int32)
    order = order[gid[order] >= 0]
    counts = np.bincount(gid[gid >= 0], minlength=G)
    gstart = np.zeros(G + 1, dtype=np.int32)
    np.cumsum(counts, out=gstart[1:])
    return gstart, np.ascontiguousarray(order, dtype=np.int32)


def _replica_count(replica_count: int | None, G: int) -> int:
    if replica_count is None:
        return min(G, MAX_REPLICA_COUNT)
    return check_int(replica_count, "replica_count", minimum=1, maximum=MAX_REPLICA_COUNT)


def _pad(arr: NDArray[np.int32], W: int) -> NDArray[np.int32]:
    if arr.shape[1] == W:
        return arr
    out = np.full((arr.shape[0], W), -1, dtype=np.int32)
    out[:, : arr.shape[1]] = arr
    return out


_Layout = tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int32], int, bool]


def _group_layout(members: Members, grouping: Grouping
                  ) -> tuple[NDArray[np.int32], int, NDArray[np.int32], NDArray[np.int32], bool]:
    """``(gid, G, gstart, gmem, singletons)`` for a grouping: computed once per registry
    and grouping name (cached on the immutable Members; the arrays are immutable - the
    kernels index with them - :func:`hzfast._check.frozen`), computed afresh for an
    array of group ids. ``singletons``: every group has one member."""
    def compute() -> _Layout:
        gid, G = _groups(members, grouping)
        gstart, gmem = _csr(gid, G)
        return frozen(gid), frozen(gstart), frozen(gmem), G, bool(gmem.shape[0] == G)

    if isinstance(grouping, str):
        gid, gstart, gmem, G, single = members.cached(("arrangement.groups", grouping), compute)
    else:
        gid, gstart, gmem, G, single = compute()
    return gid, G, gstart, gmem, single


def _prepare(current: TableLike, members: MembersLike, grouping: Grouping,
             replica_count: int | None, name: str = "current") -> _Prepared:
    registry = Members.coerce(check_members_arg(members))
    check_member_total(len(registry))
    gid, G, gstart, gmem, _ = _group_layout(registry, grouping)
    R = _replica_count(replica_count, G)
    cur = as_replicas(current, name, member_count=len(registry))   # a private snapshot
    W = max(cur.shape[1], R)
    return _Prepared(_pad(cur, W), gid, G, R, min(R, G), gstart, gmem)


#: Group counts up to which the extras (the ``P % G`` partitions above the even share)
#: are handed out with Python lists rather than a numpy sort per replica index: for a
#: handful of groups, numpy's per-call cost is most of an arrangement of a small table.
_SMALL_G = 32


def _extras_small(gc: list[list[int]], P: int, G: int, R_fill: int, f: int, e: int
                  ) -> list[list[int]]:
    """Which groups get one partition more than ``f`` at each replica index: the loop of
    :func:`_quotas` for ``e = P % G > 0``, with each ``np.lexsort`` as a ``sorted`` on the
    same keys (ties by group id, as the lexsort's last key), so the same picks."""
    exact = R_fill == G
    kmax = P - R_fill * f
    capped = not exact and kmax < R_fill
    k = [0] * G
    extra = [[0] * G for _ in range(R_fill)]
    for r in range(R_fill):
        s = R_fill - r
        row = gc[r]
        if exact:
            need = [e - x for x in k]
            forced = [g for g in range(G) if need[g] == s]
            order = sorted(range(G), key=lambda g: (-row[g], -need[g], g))
            rest = [g for g in order if need[g] > 0 and need[g] != s]
            picked = forced + rest[: e - len(forced)]
        elif capped:
            c = [kmax - x for x in k]
            order = sorted(range(G), key=lambda g: (-c[g], -row[g], g))
            picked = [g for g in order if c[g] > 0][:e]
        else:
            picked = sorted(range(G), key=lambda g: (-row[g], k[g], g))[:e]
        for g in set(picked):          # (numpy's gq[r, picked] += 1: once per group)
            extra[r][g] += 1
            k[g] += 1
    return extra


def _quotas(cnt: NDArray[np.int32], prep: _Prepared) -> NDArray[np.int32]:
    """Member quotas (R_fill, M) from keepable counts ``cnt`` (R_fill, M)."""
    P = prep.cur.shape[0]
    G, R_fill, gid = prep.G, prep.R_fill, prep.gid
    M = gid.shape[0]
    data = gid >= 0
    members_idx = np.flatnonzero(data)
    g_of = gid[members_idx]
    singletons = prep.gmem.shape[0] == G          # every group has exactly one member
    cm = cnt[:, members_idx].astype(np.int64)
    if singletons:
        gc = np.zeros((R_fill, G), dtype=np.int64)
        gc[:, g_of] = cm
    else:
        gc = _by_group(cm.T, g_of, G).T
    f, e = divmod(P, G)
    gq = np.full((R_fill, G), f, dtype=np.int64)
    ids = np.arange(G)
    if e and G <= _SMALL_G:
        gq += _extras_small(gc.tolist(), P, G, R_fill, f, e)
    elif e:
        exact = R_fill == G
        kmax = P - R_fill * f
        capped = not exact and kmax < R_fill
        k = np.zeros(G, dtype=np.int64)
        for r in range(R_fill):
            s = R_fill - r
            if exact:
                need = e - k
                forced = np.flatnonzero(need == s)
                order = np.lexsort((ids, -need, -gc[r]))
                rest = order[(need[order] > 0) & (need[order] != s)]
                picked = np.concatenate([forced, rest[: e - forced.size]])
            elif capped:
                c = kmax - k
                order = np.lexsort((ids, -gc[r], -c))
                picked = order[c[order] > 0][:e]
            else:
                picked = np.lexsort((ids, k, -gc[r]))[:e]      # ties: fewest extras so far
            gq[r, picked] += 1
            k[picked] += 1
    sizes = np.diff(prep.gstart).astype(np.int64)
    mq = np.zeros((R_fill, M), dtype=np.int32)
    if not data.any():
        return mq
    if singletons:             # rank 0 in a group of one: the member's quota is the group's
        mq[:, members_idx] = gq[:, g_of]
        return mq
    for r in range(R_fill):
        order = np.lexsort((members_idx, -cnt[r][members_idx], g_of))
        sorted_members = members_idx[order]
        sorted_groups = g_of[order]
        rank = np.arange(order.size) - prep.gstart[sorted_groups]
        Q = gq[r, sorted_groups]
        n = sizes[sorted_groups]
        mq[r, sorted_members] = Q // n + (rank < Q % n)
    return mq


# ----------------------------------------------------------------------------- threads
#: The environment variable read when ``threads`` is not given (an int >= 1).
THREADS_ENV = "HZFAST_THREADS"
#: Rows per thread below which the per-row passes are not split (a pass over that many
#: rows takes a fraction of a millisecond: too little to share).
_MIN_ROWS_PER_THREAD = 16_384
#: The most row chunks (threads) a pass is split into, however many are asked for.
_MAX_CHUNKS = 64
#: The process that started OpenMP threads (a forked child must not: docs/design.md §8.8).
_openmp_pid: int | None = None


_core_count: int | None = None


def _cores() -> int:
    """``os.cpu_count()``, read once: it reads a file under ``/sys`` on every call, and
    the simulator's masters call :func:`arrange` a dozen times a run (docs/design.md §12)."""
    global _core_count
    if _core_count is None:
        _core_count = os.cpu_count() or 1
    return _core_count


def _thread_count(threads: object) -> int:
    """``threads`` checked (an int >= 1); None: ``$HZFAST_THREADS``, else every core."""
    if threads is not None:
        return check_int(threads, "threads", minimum=1)
    env = os.environ.get(THREADS_ENV, "").strip()
    if not env:
        return _cores()
    try:
        n = int(env)
    except ValueError:
        raise ValueError(f"{THREADS_ENV} must be an integer >= 1, got {env!r}") from None
    if n < 1:
        raise ValueError(f"{THREADS_ENV} must be an integer >= 1, got {env!r}")
    return n


def _chunks(threads: int, rows: int) -> int:
    """Row chunks for the kernel's per-row passes (one thread each): at most ``threads``,
    at least ``_MIN_ROWS_PER_THREAD`` rows each; 1 without OpenMP, and in a child forked
    from the process that started the threads (they do not survive ``fork``). The target
    never depends on the chunk count."""
    global _openmp_pid
    n = min(threads, _MAX_CHUNKS, rows // _MIN_ROWS_PER_THREAD)
    if n <= 1 or not _arrange.OPENMP:
        return 1
    pid = os.getpid()
    if _openmp_pid is None:
        _openmp_pid = pid
    elif _openmp_pid != pid:
        return 1
    return n


# ----------------------------------------------------------------------------- arrange
def arrange(current: TableLike, members: MembersLike, *, grouping: Grouping = "per_member",
            replica_count: int | None = None, threads: int | None = None
            ) -> NDArray[np.int32]:
    """A balanced, minimal-move, cycle-free target table for the given members.

    Hazelcast's rules: every partition gets ``min(G, replica_count)`` replicas on
    distinct member groups (at most one replica per group), lite members hold nothing,
    and each replica index is balanced over the groups (``floor(P/G)`` or ``ceil(P/G)``
    partitions per group) and over the members inside each group. Unlike Hazelcast's
    generator the result is deterministic, keeps every slot it can (re-arranging a
    balanced valid table changes nothing; one member joining changes only the slots it
    must take), and never forms a migration cycle with ``current``. See the module
    docstring for the algorithm.

    Parameters
    ----------
    current : ndarray[int32] of shape (P, Rc), or PartitionTable
        The current (usually repaired) table; ``-1`` = empty slot. Slots held by lite
        members are treated as empty.
    members : Members or int
        The member registry (an int n means n ordinary data members).
    grouping : {"per_member", "host", "zone", "custom"} or array-like of int, default "per_member"
        What forms a member group: each member, each host, each zone, the custom
        ``Members.groups`` labels, or an array with one group id per member (lite
        members' ids are ignored).
    replica_count : int, optional
        Replicas per partition, 1..7. Default ``min(G, 7)`` with ``G`` the number of
        groups (after the split of a single multi-member group). Only ``min(replica_count,
        G)`` indices can be filled; the others stay empty.
    threads : int, optional
        Threads for the per-row passes (>= 1; used only where hzfast was built with
        OpenMP and the table has at least 16,384 rows per thread). Default: the
        ``HZFAST_THREADS`` environment variable, else every core (``os.cpu_count()``).
        The result is the same for every thread count (docs/design.md §8.8).

    Returns
    -------
    ndarray[int32] of shape (P, max(Rc, replica_count))
        The target table. Columns at index ``>= min(replica_count, G)`` are ``-1``, so the
        target has the current table's width whenever possible (ready for the planner).

    Raises
    ------
    TypeError
        ``current`` not an int32 array/PartitionTable, ``members`` not Members/int, a
        grouping of the wrong type, ``threads`` not an int.
    ValueError
        Malformed ``current`` (shape, contiguity, member index out of range, member twice
        in a row), unknown grouping name, group ids of the wrong length, ``replica_count``
        outside 1..7, no data members, ``threads`` < 1 (or ``HZFAST_THREADS`` not an
        int >= 1 when ``threads`` is not given).

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> empty = np.full((6, 2), -1, dtype=np.int32)
    >>> t = hzfast.arrange(empty, 3)
    >>> t.shape, sorted(np.bincount(t[:, 0]).tolist())
    ((6, 3), [2, 2, 2])
    >>> bool((hzfast.arrange(t, 3) == t).all())       # balanced input: nothing moves
    True
    """
    nthreads = _thread_count(threads)
    prep = _prepare(current, members, grouping, replica_count)
    cur = prep.cur
    chunks = _chunks(nthreads, cur.shape[0])
    arranger = _arrange.Arranger(cur, prep.gid, prep.G, prep.R_fill, prep.gstart, prep.gmem,
                                 chunks)
    out, maybe_cycles = arranger.finish(_quotas(arranger.counts, prep))
    if maybe_cycles:  # only when a row could be completed by a cycle-closing move alone
        out = fix_cycles(cur, out)
    return out


# ----------------------------------------------------------------------------- report
def _jsonable(v: object) -> object:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


@dataclass(frozen=True, eq=False)
class ArrangementReport:
    """What a target changes, measured against a proven lower bound (see
    :func:`arrangement_report`). ``to_dict()`` gives a JSON-ready dict."""

    partition_count: int
    replica_count: int
    filled_replica_count: int
    group_count: int
    slot_changes: int
    lower_bound: int
    member_counts: NDArray[np.int64] = field(repr=False)   # (M, W)
    group_counts: NDArray[np.int64] = field(repr=False)    # (G, W)
    group_ids: NDArray[np.int32] = field(repr=False)       # (M,), -1 = lite
    max_deviation: float
    member_max_deviation: float
    balanced: bool
    valid: bool
    cyclic_partitions: NDArray[np.intp] = field(repr=False)  # (K,) int64

    @property
    def cycle_count(self) -> int:
        return int(self.cyclic_partitions.size)

    @property
    def excess_ratio(self) -> float:
        """slot_changes / lower_bound (1.0 when both are 0)."""
        if self.lower_bound == 0:
            return 1.0 if self.slot_changes == 0 else float("inf")
        return self.slot_changes / self.lower_bound

    def to_dict(self) -> dict[str, Any]:
        d = {k: _jsonable(getattr(self, k)) for k in self.__dataclass_fields__}
        d["cycle_count"] = self.cycle_count
        d["excess_ratio"] = self.excess_ratio
        return d


def _by_group(rows: NDArray[np.int64], g: NDArray[np.int32], G: int) -> NDArray[np.int64]:
    """(G, k): the sum of the (D, k) ``rows`` of the members of each group (``g``: each
    member's group). Linear in D: no (members x groups) matrix, whatever D and G are."""
    out = np.zeros((G, rows.shape[1]), dtype=np.int64)
    np.add.at(out, g, rows)
    return out


def _kept_bound(cm: NDArray[np.int64], g: NDArray[np.int32], G: int, n_m: NDArray[np.int64],
                sizes: NDArray[np.int64], Q: int) -> NDArray[np.int64]:
    """(R_fill, G): max slots kept per group and index when the group's count there is Q.

    cm: (R_fill, D) current counts of the D data members; g: (D,) each one's group;
    n_m: (D,) size of each member's group; sizes: (G,) group sizes.
    """
    fl = Q // n_m
    base = _by_group(np.minimum(cm, fl).T, g, G).T
    over = _by_group((cm > fl).astype(np.int64).T, g, G).T
    kept: NDArray[np.int64] = base + np.minimum(Q % sizes, over)
    return kept


def arrangement_report(current: TableLike, target: TableLike, members: MembersLike, *,
                       grouping: Grouping = "per_member",
                       replica_count: int | None = None) -> ArrangementReport:
    """Measure a target table against the current one.

    Reports the number of slot changes (slots whose member differs), a lower bound on
    that number for every balanced valid target, the counts per member and per group at
    each replica index, the largest deviation from the per-index average, whether the
    target is balanced and valid, and the partitions that form a migration cycle (the
    definition of ``hzfast.find_cycles``, docs/design.md §4, computed in the same single
    pass as the counts; the tests check both agree).

    **Lower bound, and why it holds.** Let ``G``, ``R_fill`` be as in :func:`arrange`,
    ``f, e = divmod(P, G)``, and ``c[m, r]`` the number of partitions whose current
    replica at index ``r`` is data member ``m``. In any balanced valid target ``T``:
    (a) at an index ``r >= R_fill`` every slot of ``T`` is empty, so every non-empty
    current slot there changes; (b) at an index ``r < R_fill`` every group's count is
    ``f`` or ``f+1`` with exactly ``e`` groups at ``f+1``, and inside a group of ``n``
    members whose count is ``Q`` every member holds ``Q // n`` or ``Q // n + 1``, exactly
    ``Q % n`` of them the latter. A slot ``(p, r)`` is unchanged only if the same member
    ``m`` holds it in both tables, so the unchanged slots of ``m`` at ``r`` number at
    most ``min(c[m, r], t[m, r])`` where ``t`` is ``m``'s count in ``T``. Summing and
    maximising over the count vectors (b) allows gives, for a group ``g`` at count
    ``Q``, ``A_g(Q) = sum_m min(c[m, r], Q // n) + min(Q % n, #{m : c[m, r] > Q // n})``
    (the ``Q % n`` larger quotas are best spent on members that can use them, each adds
    at most one), and for the index ``K_r = sum_g A_g(f) + min(e, #{g : A_g(f+1) >
    A_g(f)})`` (``A_g(f+1) - A_g(f)`` is 0 or 1). Every target keeps at most ``K_r`` slots
    at index ``r``, hence changes at least ``P - K_r`` of them; summed over the indices,
    ``lower_bound = sum_r (P - K_r)`` (slots of lite or departed members always count as
    changes). Row constraints are ignored, so the bound may not be reachable; it is a
    bound for balanced targets only (``balanced=False`` targets may beat it).

    Parameters
    ----------
    current, target : ndarray[int32] of shape (P, R1) / (P, R2), or PartitionTable
        Tables over the same partitions (the narrower is padded with empty slots).
    members : Members or int
        The member registry used for ``target``.
    grouping : str or array-like of int, default "per_member"
        As in :func:`arrange`.
    replica_count : int, optional
        As in :func:`arrange` (default ``min(G, 7)``).

    Returns
    -------
    ArrangementReport
        ``slot_changes``, ``lower_bound``, ``member_counts`` (M, W), ``group_counts``
        (G, W), ``max_deviation`` (largest ``|group count - P/G|`` over the filled
        indices), ``member_max_deviation`` (largest ``|member count - group count / n|``),
        ``balanced`` (every such count within floor/ceil), ``valid`` (filled indices full,
        no group twice in a row, no lite member), ``cyclic_partitions`` (partition ids).

    Raises
    ------
    TypeError, ValueError
        As for :func:`arrange`; also tables with different partition counts.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.full((10, 2), -1, dtype=np.int32)
    >>> rep = hzfast.arrangement_report(cur, hzfast.arrange(cur, 2), 2)
    >>> rep.slot_changes, rep.lower_bound, rep.balanced, rep.cycle_count
    (20, 20, True, 0)
    """
    registry = Members.coerce(check_members_arg(members))
    prep = _prepare(current, registry, grouping, replica_count)
    tgt = as_replicas(target, "target", member_count=len(registry))   # a private snapshot
    P = prep.cur.shape[0]
    if tgt.shape[0] != P:
        raise ValueError(f"current and target must have the same partition count, got "
                         f"{P} and {tgt.shape[0]}")
    W = max(prep.cur.shape[1], tgt.shape[1])
    cur, tgt = _pad(prep.cur, W), _pad(tgt, W)
    G, R_fill, gid = prep.G, prep.R_fill, prep.gid
    changes, cc, tc, unfilled, dups, lite_slots, cyc = _arrange.report_scan(cur, tgt, gid, G,
                                                                            R_fill)
    sizes = np.diff(prep.gstart).astype(np.int64)
    data = gid >= 0
    f, e = divmod(P, G)
    g = gid[data]
    n_m = sizes[g]
    cm = cc[:R_fill][:, data].astype(np.int64)
    a0 = _kept_bound(cm, g, G, n_m, sizes, f)
    a1 = _kept_bound(cm, g, G, n_m, sizes, f + 1)
    kept = a0.sum(axis=1) + np.minimum(e, (a1 > a0).sum(axis=1))
    lower = int(P * R_fill - kept.sum())
    lower += int(cc[R_fill:].sum())          # indices >= R_fill: only empty slots stay
    member_counts = tc.T.astype(np.int64)
    group_counts = _by_group(member_counts[data], g, G)
    gc = group_counts[:, :R_fill]
    max_dev = float(np.abs(gc - P / G).max()) if R_fill else 0.0
    mc = member_counts[data][:, :R_fill]
    gcm = gc[gid[data]]
    nm = sizes[gid[data]][:, None]
    member_dev = float(np.abs(mc - gcm / nm).max()) if R_fill else 0.0
    balanced = bool(((gc == f) | (gc == f + 1)).all()
                    and ((mc == gcm // nm) | (mc == -(-gcm // nm))).all())
    valid = unfilled == 0 and dups == 0 and lite_slots == 0
    return ArrangementReport(
        partition_count=P, replica_count=prep.R, filled_replica_count=R_fill, group_count=G,
        slot_changes=int(changes), lower_bound=int(lower), member_counts=member_counts,
        group_counts=group_counts, group_ids=gid.copy(), max_deviation=max_dev,
        member_max_deviation=member_dev, balanced=balanced, valid=valid,
        cyclic_partitions=np.flatnonzero(cyc))
