"""Pure-Python reference of hzfast.planning: readable, obviously correct, slow.

A line-by-line port of Hazelcast's ``MigrationPlanner`` (``planMigrations``,
``isCyclic``/``fixCycle``) and of ``MigrationManager.prioritizeCopiesAndShiftUps``,
working on plain lists (``-1`` = empty slot / no index). It is the test oracle of the
Cython kernels in ``hzfast._planner`` and the baseline of the benchmarks. Its
:func:`is_cyclic_at` and :func:`fix_cycle` are the reference's only cycle routine
(:mod:`hzfast.reference.arrangement` uses them too; docs/design.md §4).

A *decision* is a 6-tuple ``(source, source_current_index, source_new_index,
destination, destination_current_index, destination_new_index)``.
"""
from __future__ import annotations

# MigrationKind values (kept equal to hzfast.planning.MigrationKind).
REMOVE, COPY, ASSIGN_LOST_OWNER, SHIFT_UP, MOVE, SHIFT_DOWN, SHIFT_UP_SOURCE_DROPPED, \
    SHIFT_UP_SHIFT_DOWN = range(8)


def index_of(row, member):
    """Index of ``member`` in ``row``; -1 if absent or if ``member`` is -1."""
    if member == -1:
        return -1
    for i, m in enumerate(row):
        if m == member:
            return i
    return -1


# ---------------------------------------------------------------------- cycles
def is_cyclic_at(current, target, index):
    """Hazelcast ``MigrationPlanner.isCyclic(oldReplicas, newReplicas, index)``.

    Follows the chain from ``index``: the member at ``current[k]`` is wanted at
    ``target.index(current[k])``; True when the chain reaches the index whose current
    member is ``target[index]`` (the migrations along it would wait on each other),
    False when it leaves the row or stops at a member that keeps its index. Rows hold no
    member twice, so the chain visits each index at most once and the loop ends.
    """
    new_owner = target[index]
    first = index
    while True:
        nxt = index_of(target, current[first])
        if nxt == -1 or nxt == first:
            return False
        if current[nxt] == new_owner:
            return True
        first = nxt


def is_cyclic(current, target):
    """Hazelcast ``MigrationPlanner.isCyclic`` on one partition."""
    for i in range(len(current)):
        c, t = current[i], target[i]
        if c == -1 or t == -1 or c == t:
            continue
        if is_cyclic_at(current, target, i):
            return True
    return False


def fix_cycle(current, target):
    """Hazelcast ``MigrationPlanner.fixCycle``: returns ``(cyclic, fixed_target)``.

    ``target`` is not modified; the returned list is a fixed copy.
    """
    target = list(target)
    cyclic = False
    for i in range(len(current)):
        c, t = current[i], target[i]
        if c == -1 or t == -1 or c == t:
            continue
        if is_cyclic_at(current, target, i):
            index = i
            while True:
                nxt = index_of(target, current[index])
                target[index] = current[index]
                if nxt == -1:
                    break
                index = nxt
            cyclic = True
    return cyclic, target


# -------------------------------------------------------------------- planning
def plan_partition(current, target):
    """Hazelcast ``MigrationPlanner.planMigrations`` on one partition.

    Returns ``(fixed_target, decisions)`` with decisions in emission order.
    """
    _, target = fix_cycle(current, target)
    state = list(current)
    n = len(state)
    out = []
    i = 0
    while i < n:
        t = target[i]
        if t == -1:
            if state[i] != -1:
                out.append((state[i], i, -1, -1, -1, -1))          # REMOVE
                state[i] = -1
            i += 1
            continue
        if state[i] == -1:
            j = index_of(state, t)
            if j == -1:
                out.append((-1, -1, -1, t, -1, i))                # COPY
                state[i] = t
                i += 1
                continue
            if j > i:
                out.append((-1, -1, -1, state[j], j, i))          # SHIFT UP
                state[i] = state[j]
                state[j] = -1
                continue
            raise AssertionError("planner failed during SHIFT UP")
        if state[i] == t:
            i += 1
            continue
        if index_of(target, state[i]) == -1 and index_of(state, t) == -1:
            out.append((state[i], i, -1, t, -1, i))               # MOVE
            state[i] = t
            i += 1
            continue
        if index_of(state, t) == -1:
            k = index_of(target, state[i])
            if state[k] == -1:
                out.append((state[i], i, k, t, -1, i))            # SHIFT DOWN
                state[k] = state[i]
            else:
                out.append((state[i], i, -1, t, -1, i))           # MOVE-3
            state[i] = t
            i += 1
            continue
        _plan_chain(state, target, out, i)
    assert state == list(target), (current, target, state)
    return target, out


def _plan_chain(state, target, out, c):
    while True:
        j = index_of(state, target[c])
        assert j != -1
        if target[j] == -1:
            x = state[c]
            if x == -1:
                out.append((-1, -1, -1, state[j], j, c))
                state[c] = state[j]
            else:
                k = index_of(target, x)
                if k == -1:
                    out.append((x, c, -1, state[j], j, c))        # SHIFT UP, source dropped
                    state[c] = state[j]
                elif state[k] == -1:
                    out.append((x, c, k, state[j], j, c))         # SHIFT UP + SHIFT DOWN
                    state[k] = x
                    state[c] = state[j]
                else:
                    out.append((x, c, -1, state[j], j, c))
                    state[c] = state[j]
            state[j] = -1
            return
        if index_of(state, target[j]) == -1:
            out.append((state[j], j, -1, target[j], -1, j))       # MOVE-2
            state[j] = target[j]
            return
        c = j


# ------------------------------------------------------------ classification
def kind_of(d):
    """MigrationKind value of a decision (derived from the six fields)."""
    src, _sci, sni, dst, dci, dni = d
    if dst == -1:
        return REMOVE
    if src == -1:
        if dci == -1:
            return ASSIGN_LOST_OWNER if dni == 0 else COPY
        return SHIFT_UP
    if dci == -1:
        return MOVE if sni == -1 else SHIFT_DOWN
    return SHIFT_UP_SOURCE_DROPPED if sni == -1 else SHIFT_UP_SHIFT_DOWN


def is_instant(d):
    """REMOVE and lost-owner assignment: applied at once by the master, never queued."""
    src, _sci, _sni, dst, dci, dni = d
    return dst == -1 or (src == -1 and dci == -1 and dni == 0)


def prioritize(queue):
    """``MigrationManager.prioritizeCopiesAndShiftUps`` on one partition's queue.

    Returns a new list (same elements, reordered).
    """
    q = list(queue)
    for index in range(len(q)):
        m = q[index]
        if m[1] != -1:               # only COPY / SHIFT UP (sci == -1) move
            continue
        k = index - 1
        while k >= 0:
            o = q[k]
            if o[1] == -1:
                break
            if o[3] == m[3] or o[0] == m[3]:
                break
            if o[2] != -1 and o[2] < m[5]:
                break
            k -= 1
        if k + 1 != index:
            del q[index]
            q.insert(k + 1, m)
    return q


def prioritize_order(queue):
    """Like :func:`prioritize` but returns the permutation (list of input positions)."""
    tagged = [(*d[:6], pos) for pos, d in enumerate(queue)]
    return [t[6] for t in prioritize(tagged)]


def plan_row(current, target, prioritized=True):
    """Decisions of one partition in the public order contract.

    ``prioritized=False``: emission order. ``prioritized=True``: instant decisions first
    (emission order), then the queued ones prioritized. Returns ``(fixed_target, list)``.
    """
    fixed, raw = plan_partition(current, target)
    if not prioritized:
        return fixed, raw
    return fixed, [d for d in raw if is_instant(d)] + prioritize([d for d in raw if not is_instant(d)])


def plan_table(current, target, prioritized=True):
    """Whole-table straightforward pure-Python planner.

    ``current``/``target``: sequences of rows (lists). Returns ``(fixed_target_rows,
    rows)`` where each row is ``(partition_id, source, sci, sni, destination, dci, dni,
    kind, instant)``.
    """
    fixed_rows = []
    rows = []
    for p in range(len(current)):
        fixed, decisions = plan_row(list(current[p]), list(target[p]), prioritized)
        fixed_rows.append(fixed)
        for d in decisions:
            rows.append((p, *d, kind_of(d), is_instant(d)))
    return fixed_rows, rows


# ------------------------------------------------------------------ applying
def apply_decision(row, d):
    """Apply one decision to ``row`` in place (MigrationManagerImpl.applyMigration).

    Returns the version increment ``1 + (sni > -1) + (dci > -1)``.
    """
    src, sci, sni, dst, dci, dni = d
    if sci > -1:
        row[sci] = -1
    if dci > -1:
        row[dci] = -1
    if dni > -1:
        row[dni] = dst
    if sni > -1:
        row[sni] = src
    return 1 + (sni > -1) + (dci > -1)


def has_duplicate(row):
    seen = [m for m in row if m != -1]
    return len(seen) != len(set(seen))


def java_int(v):
    """``v`` wrapped to a Java int (two's complement, 32 bits): partition versions are
    Java ints in Hazelcast, so ``2**31 - 1`` plus one is ``-2**31``."""
    return (v + 2**31) % 2**32 - 2**31


def apply_rows(replicas, versions, rows):
    """Apply plan rows ``(partition_id, src, sci, sni, dst, dci, dni, ...)`` in order.

    Returns new ``(replicas, versions)`` lists; raises ValueError when a row would hold a
    member twice.
    """
    reps = [list(r) for r in replicas]
    vers = list(versions)
    for n, r in enumerate(rows):
        p = r[0]
        vers[p] = java_int(vers[p] + apply_decision(reps[p], r[1:7]))
        if has_duplicate(reps[p]):
            raise ValueError(f"migration {n} puts a member twice in partition {p}")
    return reps, vers


# ------------------------------------------------------------------ diff
def diff(current, target, member_count):
    """Changed slot mask, changed partitions, per-member (gains, losses) per replica index."""
    R = len(current[0]) if current else 0
    mask = [[current[p][r] != target[p][r] for r in range(R)] for p in range(len(current))]
    changed = [p for p in range(len(current)) if any(mask[p])]
    gains = [[0] * R for _ in range(member_count)]
    losses = [[0] * R for _ in range(member_count)]
    moves = 0
    for p in range(len(current)):
        for r in range(R):
            if mask[p][r]:
                moves += 1
                if target[p][r] != -1:
                    gains[target[p][r]][r] += 1
                if current[p][r] != -1:
                    losses[current[p][r]][r] += 1
    return mask, changed, gains, losses, moves


# ------------------------------------------------------------------ schedule
def schedule_rows(rows, initial, max_parallel):
    """Rounds of parallel execution (docs/design.md §6), one time unit per migration.

    ``rows``: plan rows ``(partition_id, src, sci, sni, dst, dci, dni, kind, instant)``
    grouped by partition; ``initial``: the initial table (list of rows). Returns
    ``(start_round list (-1 for instant decisions), rounds)``.
    """
    state = [list(r) for r in initial]
    start = [-1] * len(rows)
    queues = []                     # per partition run, in plan order: [(k, endpoint)]
    last_p = None
    for k, r in enumerate(rows):
        p = r[0]
        if p != last_p:
            queues.append([])
            last_p = p
        row = state[p]
        d = tuple(r[1:7])
        if not is_instant(d):
            endpoint = d[0] if d[1] == 0 else row[0]
            queues[-1].append((k, endpoint))
        apply_decision(row, d)
    queues = [q for q in queues if q]
    rounds = 0
    while queues:
        inflight = {}
        remaining = []
        for q in queues:
            k, endpoint = q[0]
            dst = rows[k][4]
            if inflight.get(dst, 0) < max_parallel and (
                    endpoint == -1 or inflight.get(endpoint, 0) < max_parallel):
                start[k] = rounds
                inflight[dst] = inflight.get(dst, 0) + 1
                if endpoint != -1 and endpoint != dst:
                    inflight[endpoint] = inflight.get(endpoint, 0) + 1
                q = q[1:]
            if q:
                remaining.append(q)
        queues = remaining
        rounds += 1
    return start, rounds


def schedule_events(rows, initial, max_parallel, durations, ranks=None):
    """The migration manager's loop with real durations (docs/design.md §6): at each
    event time every completion due is absorbed, then every idle queue head is examined
    in order of ``ranks`` (per plan row; None: queue order) and started when its
    destination and source endpoint have fewer than ``max_parallel`` migrations in
    flight. Returns ``(start, finish)`` lists (instant decisions: 0, 0)."""
    state = [list(r) for r in initial]
    start = [0.0] * len(rows)
    finish = [0.0] * len(rows)
    queues = []                     # per partition run: [(k, endpoint)]
    last_p = None
    for k, r in enumerate(rows):
        if r[0] != last_p:
            queues.append([])
            last_p = r[0]
        d = tuple(r[1:7])
        if not is_instant(d):
            queues[-1].append((k, d[0] if d[1] == 0 else state[r[0]][0]))
        apply_decision(state[r[0]], d)
    queues = [q for q in queues if q]
    busy = [False] * len(queues)
    inflight = {}                   # member -> migrations in flight
    running = []                    # (finish, k, queue, members it loads)
    t = 0.0
    while True:
        idle = [i for i, q in enumerate(queues) if q and not busy[i]]
        for i in sorted(idle, key=lambda i: (i if ranks is None else ranks[queues[i][0][0]], i)):
            k, endpoint = queues[i][0]
            members = {rows[k][4], endpoint} - {-1}
            if all(inflight.get(m, 0) < max_parallel for m in members):
                start[k], finish[k] = t, t + durations[k]
                running.append((finish[k], k, i, members))
                busy[i] = True
                for m in members:
                    inflight[m] = inflight.get(m, 0) + 1
        if not running:
            return start, finish
        t = min(x[0] for x in running)
        for item in [x for x in running if x[0] == t]:
            running.remove(item)
            _, _, i, members = item
            busy[i] = False
            queues[i].pop(0)
            for m in members:
                inflight[m] -= 1
