"""Pure-Python reference for :mod:`hzfast.arrangement` (test oracle, benchmark baseline).

Readable transliteration of docs/design.md §8 and of the kernels in ``hzfast/_arrange.pyx``:
the same steps in the same order with the same tie-breaks, so the two must agree slot for
slot. Plain lists, no numpy in the hot loops.

A leaf oracle: it imports numpy, the standard library and :mod:`hzfast.reference.planning`
(whose Hazelcast ``isCyclic``/``fixCycle`` port is the reference's one cycle routine), never
hzfast's production modules. Groups (§8.3) and quotas (§8.4) are derived here again from the
design, so a mistake in ``hzfast.arrangement``'s helpers cannot hide in both. A ``members``
argument is a ``Members`` registry (read through its ``lite``, ``hosts``, ``zones`` and
``groups`` attributes) or an int ``n``, meaning what ``Members.from_count(n)`` means.
"""
from __future__ import annotations

import operator

import numpy as np

from hzfast.reference.planning import fix_cycle, is_cyclic, is_cyclic_at

__all__ = [
    "arrange",
    "arrange_core",
    "cycle_rows",
    "group_ids",
    "keepable_counts",
    "mix",
    "quotas",
    "repair",
]

# Duplicated on purpose (hzfast._check.MAX_REPLICA_COUNT): the oracle imports nothing of
# the code it checks.
MAX_REPLICA_COUNT = 7
GROUPINGS = ("per_member", "host", "zone", "custom")


def mix(a: int, b: int, c: int) -> int:
    """Deterministic 32-bit hash of three small ints (same as the kernel).

    Ties between equally good groups (members) for slot (p, r) go to the first in the
    cyclic order starting at ``start(mix(p, r, 0), G)`` (``M`` for members):
    deterministic, well spread.
    """
    h = (a * 0x9E3779B1 + b * 0x85EBCA77 + c * 0xC2B2AE3D + 0x27D4EB2F) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
    h ^= h >> 12
    h = (h * 0x297A2D39) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def start(s: int, n: int) -> int:
    """Tie-break start in 0..n-1 for a 32-bit hash s (multiply-shift, no division)."""
    return (s * n) >> 32


def rot(x: int, s: int, n: int) -> int:
    """Position of x in the cyclic order of 0..n-1 beginning at start(s, n)."""
    return (x - start(s, n)) % n


def repair(replicas, alive, versions):
    """Empty dead slots, promote the first non-empty backup of owner-less partitions.

    ``replicas`` is a list of rows, ``alive`` a list of bools (index = member), versions
    a list of ints. Returns new (rows, versions). Versions rise by one per slot change
    event: an emptied slot +1, a promotion +2 (index 0 filled, index i emptied); they
    wrap as Java ints do.
    """
    out, vout = [], []
    for row, v in zip(replicas, versions):
        row = list(row)
        for i, m in enumerate(row):
            if m >= 0 and not alive[m]:
                row[i] = -1
                v += 1
        if row[0] == -1:
            for i in range(1, len(row)):
                if row[i] != -1:
                    row[0], row[i] = row[i], -1
                    v += 2
                    break
        out.append(row)
        vout.append((v + 2**31) % 2**32 - 2**31)   # a Java int, as Hazelcast's version
    return out, vout


def arrange_core(cur, gid, G, R_fill, mq, groups):
    """The arrangement algorithm on prepared input.

    Parameters: ``cur`` list of rows (width W), ``gid`` group id per member (-1 = holds
    nothing), ``G`` group count, ``R_fill`` indices to fill, ``mq[r][m]`` member quotas,
    ``groups[g]`` ascending member list of group g. Returns the target rows.
    """
    P = len(cur)
    W = len(cur[0]) if P else R_fill
    M = len(gid)
    # 1. keepable slots: data member, group not seen at an earlier index of the row
    keep = [[False] * W for _ in range(P)]
    holes = [0] * P
    for p in range(P):
        seen = set()
        for r in range(R_fill):
            m = cur[p][r]
            if m >= 0 and gid[m] >= 0 and gid[m] not in seen:
                seen.add(gid[m])
                keep[p][r] = True
            else:
                holes[p] += 1
    # 2. free the excess over member quotas: first in rows where the member can move to
    #    a hole at an index where it lacks slots, then in rows with the fewest holes
    cnts = [[0] * M for _ in range(R_fill)]
    for p in range(P):
        for r in range(R_fill):
            if keep[p][r]:
                cnts[r][cur[p][r]] += 1
    lack = [[mq[r][m] - cnts[r][m] for m in range(M)] for r in range(R_fill)]
    for r in range(R_fill):
        excess = [max(0, cnts[r][m] - mq[r][m]) for m in range(M)]
        left = sum(excess)
        for p in range(P):
            if left == 0:
                break
            m = cur[p][r]
            if not keep[p][r] or excess[m] == 0:
                continue
            for r2 in range(R_fill):
                if r2 != r and not keep[p][r2] and lack[r2][m] > 0:
                    lack[r2][m] -= 1
                    excess[m] -= 1
                    left -= 1
                    keep[p][r] = False
                    holes[p] += 1
                    break
        for k in range(R_fill):
            if left == 0:
                break
            for p in range(P):
                if keep[p][r] and holes[p] == k:
                    m = cur[p][r]
                    if excess[m] > 0:
                        excess[m] -= 1
                        left -= 1
                        keep[p][r] = False
                        holes[p] += 1
    # 3. kept slots, capacities
    tgt = [[cur[p][r] if keep[p][r] else -1 for r in range(W)] for p in range(P)]
    mcap = [[mq[r][m] for m in range(M)] for r in range(R_fill)]
    for p in range(P):
        for r in range(R_fill):
            if keep[p][r]:
                mcap[r][cur[p][r]] -= 1
    gcap = [[sum(mcap[r][m] for m in groups[g]) for g in range(G)] for r in range(R_fill)]

    def placeable(p, r, m, check_cycle=True):
        """m may go to slot (p, r): its group is not in the target row and no cycle."""
        g = gid[m]
        for i in range(W):
            if i != r and tgt[p][i] >= 0 and gid[tgt[p][i]] == g:
                return False
        if check_cycle and m in cur[p] and cur[p].index(m) != r:
            # would m at (p, r) close a cycle with the current row? (Hazelcast's isCyclic
            # at r, with m placed there; the slot is empty while it is being filled)
            row, held = tgt[p], tgt[p][r]
            row[r] = m
            cyclic = is_cyclic_at(cur[p], row, r)
            row[r] = held
            if cyclic:
                return False
        return True

    def is_move(p, r, m):
        return m in cur[p] and cur[p].index(m) != r

    def best_member(p, r, g, need_cap, check_cycle=True):
        best, best_key = -1, None
        for m in groups[g]:
            if need_cap and mcap[r][m] <= 0:
                continue
            if not placeable(p, r, m, check_cycle):
                continue
            key = (-mcap[r][m], is_move(p, r, m), rot(m, mix(p, r, 0), M))
            if best_key is None or key < best_key:
                best, best_key = m, key
        return best

    # 4. fill holes index by index
    for r in range(R_fill):
        for p in range(P):
            if tgt[p][r] != -1:
                continue
            row_groups = {gid[x] for x in tgt[p] if x >= 0}
            best, best_key = -1, None
            for g in range(G):
                if gcap[r][g] <= 0 or g in row_groups:
                    continue
                m = best_member(p, r, g, True)
                if m < 0:
                    continue
                key = (-gcap[r][g], is_move(p, r, m), rot(g, mix(p, r, 0), G))
                if best_key is None or key < best_key:
                    best, best_key = m, key
            if best >= 0:
                tgt[p][r] = best
                mcap[r][best] -= 1
                gcap[r][gid[best]] -= 1
                continue
            # stuck: augmenting path through rows filled at r, then through kept slots
            if any(_augment(p, r, tgt, keep, P, G, gid, gcap, mcap, placeable, best_member, k)
                   for k in (False, True)):
                continue
            # fallback: over quota, any group not in the row; as a last resort even a
            # cycle-closing move (the caller reverts cycles, Hazelcast's rule)
            best, best_key = -1, None
            for check_cycle in (True, False):
                for g in range(G):
                    if g in row_groups:
                        continue
                    m = best_member(p, r, g, False, check_cycle)
                    if m < 0:
                        continue
                    key = (-gcap[r][g], rot(g, mix(p, r, 0), G))
                    if best_key is None or key < best_key:
                        best, best_key = m, key
                if best >= 0:
                    break
            if best >= 0:
                tgt[p][r] = best
                mcap[r][best] -= 1
                gcap[r][gid[best]] -= 1
    return tgt


def _augment(p, r, tgt, keep, P, G, gid, gcap, mcap, placeable, best_member, kept_ok):
    """Stuck slot (p, r): breadth-first augmenting path over rows at index r.

    Row x needs a member at r. It takes one of an open group (capacity left) if it can;
    otherwise it takes the member of a row q holding, at r, a group not in row x (each
    group explored once); q then needs a member. When some row can take an open
    group's member, the members shift one step along the path (each row changes only
    at index r, group counts stay, the open group gains one). Holders are the rows
    filled at r in this pass, or (``kept_ok``) also kept slots.
    """
    by_group = [[] for _ in range(G)]
    for q in range(P):
        if q != p and tgt[q][r] >= 0 and (kept_ok or not keep[q][r]):
            by_group[gid[tgt[q][r]]].append(q)
    parent = {p: -1}
    gvisited = [False] * G
    queue, head = [p], 0
    while head < len(queue):
        x = queue[head]
        head += 1
        old = tgt[x][r]
        tgt[x][r] = -1
        for g in range(G):
            if gcap[r][g] <= 0:
                continue
            mg = best_member(x, r, g, True)
            if mg < 0:
                continue
            tgt[x][r] = old
            mcap[r][mg] -= 1
            gcap[r][g] -= 1
            y, incoming = x, mg
            while y != -1:
                out = tgt[y][r]
                tgt[y][r] = incoming
                keep[y][r] = False
                incoming, y = out, parent[y]
            return True
        row_groups = {gid[m] for m in tgt[x] if m >= 0}
        for g in range(G):
            if gvisited[g] or g in row_groups:
                continue
            gvisited[g] = True
            for q in by_group[g]:
                if q not in parent and placeable(x, r, tgt[q][r]):
                    parent[q] = x
                    queue.append(q)
        tgt[x][r] = old
    return False


def cycle_rows(cur, tgt):
    """Per row: True when the row has a migration cycle (docs/design.md §4).

    Rows of different widths are padded with empty slots; the test is Hazelcast's
    ``isCyclic`` (:func:`hzfast.reference.planning.is_cyclic`).
    """
    out = []
    for c, t in zip(cur, tgt):
        n = max(len(c), len(t))
        out.append(is_cyclic(_padded(c, n), _padded(t, n)))
    return out


def _padded(row, n):
    row = list(row)
    return row + [-1] * (n - len(row))


def keepable_counts(cur, gid, R_fill):
    """cnt[r][m]: slots at index r held by data member m whose group is not earlier in
    the row (the slots that could be kept)."""
    M = len(gid)
    cnt = [[0] * M for _ in range(R_fill)]
    for row in cur:
        seen = set()
        for r in range(R_fill):
            m = row[r]
            if m >= 0 and gid[m] >= 0 and gid[m] not in seen:
                seen.add(gid[m])
                cnt[r][m] += 1
    return cnt


# ----------------------------------------------------------------------------- groups
def _labels(members, grouping):
    """``(lite flags, label per member)`` of a registry (or int count) under a grouping."""
    if isinstance(members, (int, np.integer)) and not isinstance(members, (bool, np.bool_)):
        n = int(members)
        if n < 0:
            raise ValueError(f"members must be >= 0, got {n}")
        lite = [False] * n
        columns = {"host": ["127.0.0.1"] * n,            # Members.from_count: one host,
                   "zone": [""] * n,                     # no zone,
                   "custom": [f"member-{i}" for i in range(n)]}   # a group per member
    else:
        try:
            lite = [bool(x) for x in members.lite]
            columns = {"host": list(members.hosts), "zone": list(members.zones),
                       "custom": list(members.groups)}
        except AttributeError:
            raise TypeError("members must be a Members registry or an int member count, "
                            f"got {type(members).__name__}") from None
    n = len(lite)
    columns["per_member"] = list(range(n))
    if isinstance(grouping, str):
        if grouping not in GROUPINGS:
            raise ValueError(f"grouping must be 'per_member', 'host', 'zone', 'custom' or an "
                             f"array of group ids, got {grouping!r}")
        return lite, columns[grouping]
    if not isinstance(grouping, (np.ndarray, list, tuple)):
        raise TypeError("grouping must be 'per_member', 'host', 'zone', 'custom' or an array "
                        f"of group ids per member, got {type(grouping).__name__}")
    labels = np.asarray(grouping)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"grouping array must have one group id per member ({n}), got "
                         f"shape {labels.shape}")
    return lite, labels.tolist()


def group_ids(members, grouping="per_member"):
    """``(gid, G)``: the group of every member (docs/design.md §8.3).

    Data (non-lite) members with equal labels share a group; groups are numbered in the
    order their first member appears (by index); lite members get -1. A single group of
    two or more members is split, as Hazelcast does, so that backups remain possible: the
    first half of its members (by index) becomes group 1.
    """
    lite, labels = _labels(members, grouping)
    data = [m for m in range(len(lite)) if not lite[m]]
    if not data:
        raise ValueError("members has no data (non-lite) members: nothing can hold partitions")
    gid = [-1] * len(lite)
    first_seen = {}
    for m in data:
        gid[m] = first_seen.setdefault(labels[m], len(first_seen))
    G = len(first_seen)
    if G == 1 and len(data) >= 2:
        for m in data[: len(data) // 2]:
            gid[m] = 1
        G = 2
    return gid, G


# ----------------------------------------------------------------------------- quotas
def quotas(cnt, gid, G, R_fill, P):
    """Member quotas ``mq[r][m]`` from keepable counts ``cnt[r][m]`` (docs/design.md §8.4).

    At each index every group gets ``P // G`` slots; the ``P % G`` extra slots go to the
    groups holding the most there (ties: the fewest extras so far, then the lower id).
    When every index is filled by every group (``R_fill == G``) each group must get
    exactly ``P % G`` extras in all: a group that needs one at every index left is served
    first, the others only while they still need one. When fewer extras fit than indices
    (``P - R_fill * (P // G) < R_fill``), groups with the most extras still allowed come
    first. Inside a group the group's quota ``Q`` is split over its ``n`` members:
    ``Q // n`` each, one more for the ``Q % n`` members holding the most (ties: lower
    index). Lite members (``gid == -1``) get 0.
    """
    M = len(gid)
    members_of = [[m for m in range(M) if gid[m] == g] for g in range(G)]
    f, e = divmod(P, G)
    gq = [[f] * G for _ in range(R_fill)]
    if e:
        exact = R_fill == G
        kmax = P - R_fill * f              # most extras one group can take over all indices
        capped = not exact and kmax < R_fill
        extras = [0] * G
        for r in range(R_fill):
            held = [sum(cnt[r][m] for m in members_of[g]) for g in range(G)]
            left = R_fill - r              # indices still to serve, this one included
            if exact:
                need = [e - extras[g] for g in range(G)]
                forced = [g for g in range(G) if need[g] == left]
                rest = sorted((g for g in range(G) if need[g] > 0 and need[g] != left),
                              key=lambda g: (-held[g], -need[g], g))
                picked = forced + rest[: max(0, e - len(forced))]
            elif capped:
                room = [kmax - extras[g] for g in range(G)]
                picked = sorted((g for g in range(G) if room[g] > 0),
                                key=lambda g: (-room[g], -held[g], g))[:e]
            else:
                picked = sorted(range(G), key=lambda g: (-held[g], extras[g], g))[:e]
            for g in picked:
                gq[r][g] += 1
                extras[g] += 1
    mq = [[0] * M for _ in range(R_fill)]
    for r in range(R_fill):
        for g in range(G):
            ranked = sorted(members_of[g], key=lambda m: (-cnt[r][m], m))
            Q, n = gq[r][g], len(ranked)
            for rank, m in enumerate(ranked):
                mq[r][m] = Q // n + (1 if rank < Q % n else 0)
    return mq


# ----------------------------------------------------------------------------- arrange
def _replica_count(replica_count, G):
    if replica_count is None:
        return min(G, MAX_REPLICA_COUNT)
    if isinstance(replica_count, (bool, np.bool_)):
        raise TypeError("replica_count must be an integer, got bool")
    try:
        R = operator.index(replica_count)
    except TypeError:
        raise TypeError("replica_count must be an integer, got "
                        f"{type(replica_count).__name__}") from None
    if not 1 <= R <= MAX_REPLICA_COUNT:
        raise ValueError(f"replica_count must be in 1..{MAX_REPLICA_COUNT}, got {R}")
    return R


def _table_rows(current, M):
    """``current`` (array, list of rows, or anything with ``.replicas``) as a list of rows
    and its width, checked: 1..7 columns, members in [-1, M), none twice in a row."""
    arr = np.asarray(getattr(current, "replicas", current))
    if arr.ndim == 1 and arr.size == 0:
        arr = arr.reshape(0, 1)
    if arr.ndim != 2:
        raise ValueError(f"current must be 2-dimensional, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"current must hold integers, got {arr.dtype}")
    width = arr.shape[1]
    if not 1 <= width <= MAX_REPLICA_COUNT:
        raise ValueError(f"current must have 1..{MAX_REPLICA_COUNT} replica columns, got "
                         f"{width}")
    bad = np.argwhere((arr < -1) | (arr >= M))
    if bad.size:
        p, r = bad[0].tolist()
        raise ValueError(f"current[{p}, {r}] = {arr[p, r]}: not a member index in -1..{M - 1}")
    ordered = np.sort(arr, axis=1)
    twice = np.flatnonzero(((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(1))
    if twice.size:
        raise ValueError(f"current: partition {twice[0]} holds a member twice")
    return arr.tolist(), width


def arrange(current, members, *, grouping="per_member", replica_count=None):
    """Reference ``hzfast.arrange``: the same result, derived in plain Python.

    Groups (:func:`group_ids`), the replica count (default ``min(G, 7)``), the current
    table padded with empty slots to ``max(width, replica_count)``, quotas from the
    keepable counts (:func:`quotas`), :func:`arrange_core`, then Hazelcast's rule on any
    cycle left with the current table: revert it (``fixCycle``, docs/design.md §4).
    Returns ndarray[int32] of shape (P, max(width, replica_count)).
    """
    gid, G = group_ids(members, grouping)
    R = _replica_count(replica_count, G)
    R_fill = min(R, G)
    rows, width = _table_rows(current, len(gid))
    W = max(width, R)
    cur = [_padded(row, W) for row in rows]
    mq = quotas(keepable_counts(cur, gid, R_fill), gid, G, R_fill, len(cur))
    groups = [[m for m in range(len(gid)) if gid[m] == g] for g in range(G)]
    tgt = arrange_core(cur, gid, G, R_fill, mq, groups)
    tgt = [fix_cycle(c, t)[1] for c, t in zip(cur, tgt)]
    return np.array(tgt, dtype=np.int32).reshape(len(cur), W)
