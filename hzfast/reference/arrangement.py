"""Pure-Python reference for :mod:`hzfast.arrangement` (test oracle, benchmark baseline).

Readable transliteration of the kernels in ``hzfast/_arrange.pyx``: the same steps in the
same order with the same tie-breaks, so the two must agree slot for slot. Plain lists,
no numpy in the hot loops. Input is assumed already validated/prepared by
:mod:`hzfast.arrangement` (``prepare`` and ``quotas`` there are shared).
"""
from __future__ import annotations

__all__ = ["repair", "arrange", "arrange_core", "keepable_counts", "cycle_rows", "mix"]


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
    event: an emptied slot +1, a promotion +2 (index 0 filled, index i emptied).
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
        vout.append(v)
    return out, vout


def _creates_cycle(cur_row, tgt_row, m, j, r):
    """Would placing member m (now at index j of cur_row) at index r close a cycle?"""
    k = r
    for _ in range(len(cur_row) + 1):
        c = cur_row[k]
        if c < 0:
            return False
        try:
            t = tgt_row.index(c)
        except ValueError:
            return False
        if t == j:
            return True
        if t == k:
            return False
        k = t
    return False


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
        if check_cycle and m in cur[p]:
            j = cur[p].index(m)
            if j != r and _creates_cycle(cur[p], tgt[p], m, j, r):
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
    """Per row: True when the row has a cycle (DESIGN section 4)."""
    out = []
    for c, t in zip(cur, tgt):
        n = max(len(c), len(t))
        c = list(c) + [-1] * (n - len(c))
        t = list(t) + [-1] * (n - len(t))
        found = False
        for i in range(n):
            if c[i] < 0 or t[i] < 0 or c[i] == t[i]:
                continue
            k = i
            for _ in range(n):
                if c[k] < 0 or c[k] not in t:
                    break
                k = t.index(c[k])
                if c[k] == t[i]:
                    found = True
                    break
            if found:
                break
        out.append(found)
    return out


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


def arrange(current, members, *, grouping="per_member", replica_count=None):
    """Reference ``hzfast.arrange``: same validation/quotas (shared), pure-Python core."""
    import numpy as np

    from hzfast import arrangement as A
    prep = A._prepare(current, members, grouping, replica_count)
    cur, gid = prep.cur.tolist(), prep.gid.tolist()
    cnt = np.array(keepable_counts(cur, gid, prep.R_fill), dtype=np.int32).reshape(
        prep.R_fill, len(gid))
    mq = A._quotas(cnt, prep).tolist()
    groups = [prep.gmem[prep.gstart[g]:prep.gstart[g + 1]].tolist() for g in range(prep.G)]
    tgt = arrange_core(cur, gid, prep.G, prep.R_fill, mq, groups)
    out = np.array(tgt, dtype=np.int32).reshape(prep.cur.shape)
    rows = np.flatnonzero(cycle_rows(cur, tgt))
    if rows.size:
        A._revert_cycles(prep.cur, out, rows)
    return out
