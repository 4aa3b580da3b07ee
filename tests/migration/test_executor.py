"""Tests of hzfast.migration.Executor, the master's step function (docs/design.md §6).

Three oracles: ``hzfast.schedule`` (unit rounds must give its ``start_round`` exactly), the
pure-Python ``schedule_rows`` of the reference, and a small state model of §6 written here
(ready() must equal its scan after every step of a random, event-driven run).
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hzfast
from hzfast import MigrationPlan
from hzfast.migration import Executor, _executor
from hzfast.migration.planner import _plan_with_endpoints
from hzfast.reference import planning as ref

COLUMNS = ("partition_id", "source", "source_current_index", "source_new_index",
           "destination", "destination_current_index", "destination_new_index")


def rows_of(plan):
    return [(*r, int(k), bool(i)) for r, k, i in zip(
        zip(*(getattr(plan, c).tolist() for c in COLUMNS)), plan.kind, plan.instant)]


def drive_rounds(ex):
    """Unit rounds: start all of ready(), then finish them all (ok). Returns start_round
    (-1: never started) and the round count."""
    start = np.full(len(ex), -1, dtype=np.int64)
    rounds = 0
    for _ in range(len(ex) + 1):                     # bounded: >= 1 start per round
        picked = ex.ready()
        if len(picked) == 0:
            break
        assert picked.dtype == np.int64
        for i in picked.tolist():
            ex.started(i)
            start[i] = rounds
        for i in picked.tolist():
            ex.finished(i, True)
        rounds += 1
    return start, rounds


def assert_same_as_schedule(plan, cur, limit):
    ex = Executor(plan, cur, max_parallel_migrations=limit)
    start, rounds = drive_rounds(ex)
    s = hzfast.schedule(plan, current=cur, max_parallel_migrations=limit)
    assert start.tolist() == s.start_round.tolist()
    assert rounds == s.rounds
    assert ex.done and not ex.failed and ex.remaining == 0 and ex.in_flight.size == 0
    assert ex.succeeded.tolist() == np.flatnonzero(~plan.instant).tolist()
    return start, rounds


# ---------------------------------------------------------------- the §6 state model
class Model:
    """§6 written out plainly: queues of (row, endpoint) by partition run, a scan in queue
    order with tentative loads."""

    def __init__(self, plan, cur, limit):
        rows = rows_of(plan)
        state = [list(r) for r in cur.tolist()]
        self.queues, last = [], None
        for k, r in enumerate(rows):
            if r[0] != last:
                self.queues.append([])
                last = r[0]
            d = tuple(r[1:7])
            if not ref.is_instant(d):
                self.queues[-1].append((k, d[0] if d[1] == 0 else state[r[0]][0]))
            ref.apply_decision(state[r[0]], d)
        self.dst = plan.destination.tolist()
        self.limit = limit
        self.busy = set()          # queue indices with a row in flight
        self.queue_of = {}
        for q, queue in enumerate(self.queues):
            for k, _ in queue:
                self.queue_of[k] = q
        self.load = Counter()
        self.stopped = False
        self.endpoint = {k: e for queue in self.queues for k, e in queue}

    def members(self, k):
        return {self.dst[k], self.endpoint[k]} - {-1}

    def ready(self):
        if self.stopped:
            return []
        load, out = Counter(self.load), []
        for q, queue in enumerate(self.queues):
            if queue and q not in self.busy:
                k = queue[0][0]
                if all(load[m] < self.limit for m in self.members(k)):
                    out.append(k)
                    for m in self.members(k):
                        load[m] += 1
        return out

    def eligible(self):
        """Every row that may start now (not only the scan's picks)."""
        if self.stopped:
            return []
        return [q[0][0] for i, q in enumerate(self.queues) if q and i not in self.busy
                and all(self.load[m] < self.limit for m in self.members(q[0][0]))]

    def start(self, k):
        self.busy.add(self.queue_of[k])
        for m in self.members(k):
            self.load[m] += 1

    def finish(self, k, ok):
        q = self.queue_of[k]
        self.busy.discard(q)
        assert self.queues[q][0][0] == k
        self.queues[q].pop(0)
        for m in self.members(k):
            self.load[m] -= 1
        if not ok:
            self.stopped = True


def random_run(plan, cur, limit, seed, fail_p=0.0, stop_at=None, from_final=False):
    """An event-driven run with random starts (a subset of ready(), sometimes another
    eligible row) and random completions; ready(), loads and states are compared with the
    model after every step. ``from_final``: the executor gets no ``current`` (it starts
    from the plan's target with the plan undone); the model always gets ``cur``."""
    rng = np.random.default_rng(seed)
    ex = Executor(plan, None if from_final else cur, limit)
    model = Model(plan, cur, limit)
    in_flight = []
    for step in range(4 * len(plan) + 10):           # bounded
        if stop_at is not None and step == stop_at:
            ex.stop()
            model.stopped = True
        assert ex.ready().tolist() == model.ready()
        eligible = model.eligible()
        assert [k for k in range(len(plan)) if ex.can_start(k)] == sorted(eligible)
        if rng.random() < 0.6:
            choice = ex.ready().tolist()
            if choice and rng.random() < 0.5:
                choice = [int(k) for k in rng.permutation(choice)[:rng.integers(1, len(choice) + 1)]]
        elif eligible:
            choice = [eligible[rng.integers(len(eligible))]]   # skip the scan's order
        else:
            choice = []
        for k in choice:
            assert k in model.eligible()
            ex.started(k)
            model.start(k)
            in_flight.append(k)
        assert sorted(in_flight) == ex.in_flight.tolist()
        for m in set(model.load) | set(range(3)):
            assert ex.load(m) == model.load[m] <= limit
        if in_flight and (not choice or rng.random() < 0.5):
            for _ in range(int(rng.integers(1, len(in_flight) + 1))):
                k = in_flight.pop(int(rng.integers(len(in_flight))))
                ok = bool(rng.random() >= fail_p)
                ex.finished(k, ok)
                model.finish(k, ok)
        if ex.done:
            break
    assert ex.done and not in_flight
    return ex, model


# ---------------------------------------------------------------- unit rounds
@pytest.mark.parametrize("limit", [1, 2, 3, 10])
@pytest.mark.parametrize("prioritized", [True, False])
@pytest.mark.parametrize("P, R, M", [(10, 1, 3), (50, 1, 3), (500, 2, 4), (2_000, 7, 12),
                                     (1_000, 3, 40)])
def test_unit_rounds_equal_schedule_random(random_tables, limit, prioritized, P, R, M):
    cur, tgt = random_tables(P, R, M, seed=P + R + M + limit)
    if R == 1:                                    # the generator keeps owners: move some
        tgt = np.where(np.arange(P)[:, None] % 3 == 0, (cur + 1) % M, tgt).astype(np.int32)
    plan = hzfast.plan_migrations(cur, tgt, prioritize=prioritized)
    assert (~plan.instant).sum() > 0
    start, rounds = assert_same_as_schedule(plan, cur, limit)
    # and the reference's straightforward round loop agrees
    assert (start.tolist(), rounds) == ref.schedule_rows(rows_of(plan), cur.tolist(), limit)


def real_plans():
    """Plans of real topology changes: leave (repair first), join, and both, from balanced
    tables (hzfast.arrange)."""
    out = []
    for P, R, M in [(271, 2, 4), (1_000, 3, 6), (2_000, 7, 10), (500, 7, 3)]:
        full = hzfast.arrange(hzfast.PartitionTable.empty(P, R), M, replica_count=R)
        table = hzfast.PartitionTable(full, members=M)
        alive = np.arange(M) != M // 2                               # one member leaves
        cur, _ = hzfast.repair(table, alive)
        members = hzfast.Members.from_count(M).with_lite(list(~alive))
        out.append((f"leave P={P} R={R} M={M}", cur, hzfast.arrange(cur, members, replica_count=R)))
        out.append((f"join P={P} R={R} M={M}", full, hzfast.arrange(full, M + 2, replica_count=R)))
        cur2, _ = hzfast.repair(table, alive)                         # leave and 2 joins
        grown = hzfast.Members.from_count(M + 2).with_lite(list(~alive) + [False, False])
        out.append((f"leave+join P={P} R={R} M={M}", cur2, hzfast.arrange(cur2, grown, replica_count=R)))
    return out


@pytest.mark.parametrize("limit", [1, 4, 10])
@pytest.mark.parametrize("case", real_plans(), ids=lambda c: c[0])
def test_unit_rounds_equal_schedule_real(case, limit):
    _, cur, tgt = case
    plan = hzfast.plan_migrations(cur, tgt)
    assert (~plan.instant).sum() > 0
    assert_same_as_schedule(plan, cur, limit)
    # the default current (the target with the plan undone) gives the same run
    a = drive_rounds(Executor(plan, None, limit))
    assert a[0].tolist() == drive_rounds(Executor(plan, cur, limit))[0].tolist()


def test_unit_rounds_on_every_planner_vector(planner_random_vectors):
    cases = planner_random_vectors["cases"]
    cur = np.array([c["current"] for c in cases], dtype=np.int32)
    tgt = np.array([c["target"] for c in cases], dtype=np.int32)
    for prioritized in (True, False):
        plan = hzfast.plan_migrations(cur, tgt, prioritize=prioritized)
        for limit in (1, 3, 10):
            assert_same_as_schedule(plan, cur, limit)


def test_unit_rounds_on_300_small_random_plans():
    rng = np.random.default_rng(77)
    for _ in range(300):
        P, R = int(rng.integers(1, 12)), int(rng.integers(1, 8))
        M = R + int(rng.integers(0, 5))
        cur = np.array([rng.permutation(M)[:R] for _ in range(P)], dtype=np.int32)
        tgt = np.array([rng.permutation(M)[:R] for _ in range(P)], dtype=np.int32)
        cur[rng.random((P, R)) < 0.2] = -1
        tgt[rng.random((P, R)) < 0.2] = -1
        plan = hzfast.plan_migrations(cur, tgt, prioritize=bool(rng.integers(2)))
        assert_same_as_schedule(plan, cur, int(rng.integers(1, 4)))


@st.composite
def tables(draw):
    R = draw(st.integers(1, 7))
    M = draw(st.integers(R, R + 4))
    P = draw(st.integers(1, 8))

    def row():
        members = draw(st.permutations(range(M)))[:R]
        holes = draw(st.lists(st.booleans(), min_size=R, max_size=R))
        return [-1 if h else m for m, h in zip(members, holes)]

    return (np.array([row() for _ in range(P)], dtype=np.int32),
            np.array([row() for _ in range(P)], dtype=np.int32))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4), st.booleans())
def test_unit_rounds_property(ct, limit, prioritized):
    cur, tgt = ct
    plan = hzfast.plan_migrations(cur, tgt, prioritize=prioritized)
    assert_same_as_schedule(plan, cur, limit)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 3), st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.1]))
def test_random_runs_follow_the_model_property(ct, limit, seed, fail_p):
    cur, tgt = ct
    plan = hzfast.plan_migrations(cur, tgt)
    random_run(plan, cur, limit, seed, fail_p)


# ---------------------------------------------------------------- event-driven runs
@pytest.mark.parametrize("seed", range(8))
def test_random_runs_follow_the_model(random_tables, seed):
    cur, tgt = random_tables(150, 1 + seed % 7, 9, seed=500 + seed)
    plan = hzfast.plan_migrations(cur, tgt, prioritize=seed % 2 == 0)
    limit = 1 + seed % 3
    ex, _model = random_run(plan, cur, limit, seed)
    assert not ex.failed and ex.remaining == 0
    assert ex.succeeded.tolist() == np.flatnonzero(~plan.instant).tolist()


def test_endpoints_follow_the_masters_table(random_tables):
    cur, tgt = random_tables(400, 7, 12, seed=3)
    plan = hzfast.plan_migrations(cur, tgt, prioritize=False)
    ex = Executor(plan, cur, 2)
    table = cur.tolist()
    applied = 0                                   # plan rows applied to `table` so far
    rows = rows_of(plan)

    def catch_up(upto):
        # the master's table: every row of a partition before `upto` is applied by then
        nonlocal applied
        for k in range(len(rows)):
            if not done_rows[k] and (plan.instant[k] or finished[k]) and all(
                    done_rows[j] for j in range(k) if rows[j][0] == rows[k][0]):
                ref.apply_decision(table[rows[k][0]], tuple(rows[k][1:7]))
                done_rows[k] = True
                applied += 1

    done_rows = [False] * len(rows)
    finished = [False] * len(rows)
    for _ in range(len(plan) + 1):
        catch_up(len(rows))
        picked = ex.ready().tolist()
        if not picked:
            break
        for k in picked:
            r = rows[k]
            expect = r[1] if r[2] == 0 else table[r[0]][0]
            assert ex.endpoint(k) == expect
            ex.started(k)
            assert ex.endpoint(k) == expect               # fixed at start
        for k in picked:
            ex.finished(k, True)
            finished[k] = True
    catch_up(len(rows))
    assert applied == len(rows) and table == plan.target.tolist()
    assert ex.done and ex.remaining == 0


def test_joint_limit_and_any_start_order():
    # four copies into members 2..5, each from owner 0, limit 2: two per round
    cur = np.array([[0, -1]] * 4, dtype=np.int32)
    tgt = np.array([[0, 2], [0, 3], [0, 4], [0, 5]], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, tgt)
    ex = Executor(plan, cur, 2)
    assert ex.ready().tolist() == [0, 1]
    ex.started(1)                     # out of scan order: allowed
    assert ex.ready().tolist() == [0]
    ex.started(0)
    assert ex.ready().tolist() == [] and ex.load(0) == 2
    with pytest.raises(ValueError, match="source endpoint is at max_parallel_migrations"):
        ex.started(2)
    ex.finished(0, True)
    assert ex.ready().tolist() == [2] and ex.load(0) == 1
    assert ex.endpoint(2) == 0


# ---------------------------------------------------------------- failure and stop
def test_failure_stops_new_starts(random_tables):
    cur, tgt = random_tables(300, 3, 8, seed=5)
    plan = hzfast.plan_migrations(cur, tgt)
    ex = Executor(plan, cur, 3)
    first = ex.ready().tolist()
    assert len(first) >= 3
    for k in first:
        ex.started(k)
    ex.finished(first[0], False)
    assert ex.failed and ex.stopped and not ex.done
    assert ex.ready().size == 0
    assert ex.failures.tolist() == [first[0]]
    for k in ex.waiting.tolist():
        assert not ex.can_start(k)
    waiting = ex.waiting.tolist()
    with pytest.raises(ValueError, match="run has stopped"):
        ex.started(waiting[0])
    for k in first[1:]:                            # in flight: they still finish
        assert not ex.done
        ex.finished(k, True)
    assert ex.done and ex.failed and ex.in_flight.size == 0
    assert ex.succeeded.tolist() == sorted(first[1:])
    assert ex.remaining == len(waiting) > 0
    assert ex.ready().size == 0


def test_stop_is_an_abort_not_a_failure():
    cur = np.array([[0, 1], [0, 1]], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, np.array([[2, 1], [3, 1]], dtype=np.int32))
    ex = Executor(plan, cur, 1)
    ex.started(0)
    ex.stop()
    assert ex.stopped and not ex.failed and not ex.done and ex.ready().size == 0
    ex.finished(0, True)
    assert ex.done and not ex.failed and ex.remaining == 1
    with pytest.raises(ValueError, match="run has stopped"):
        ex.started(1)


@pytest.mark.parametrize("seed", range(4))
def test_random_runs_with_failures_and_stops(random_tables, seed):
    cur, tgt = random_tables(120, 4, 9, seed=900 + seed)
    plan = hzfast.plan_migrations(cur, tgt)
    ex, _model = random_run(plan, cur, 2, seed, fail_p=0.05 if seed % 2 else 0.0,
                           stop_at=None if seed % 2 else 7)
    assert ex.stopped
    assert ex.failed == (len(ex.failures) > 0)
    assert ex.remaining > 0


# ---------------------------------------------------------------- bad calls
def small():
    cur = np.array([[0, 1], [0, 1], [2, -1]], dtype=np.int32)
    tgt = np.array([[2, 3], [3, 1], [2, 0]], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, tgt)
    return cur, tgt, plan


def test_bad_calls_raise_and_change_nothing():
    cur, _, plan = small()
    ex = Executor(plan, cur, 1)
    rows = len(plan)

    def snapshot():
        return (ex.ready().tolist(), ex.in_flight.tolist(), ex.succeeded.tolist(),
                ex.remaining, [ex.load(m) for m in range(4)])

    first = ex.ready().tolist()[0]
    before = snapshot()
    for bad in (-1, rows, rows + 10, 2**40):
        with pytest.raises(ValueError, match="outside the plan"):
            ex.started(bad)
        with pytest.raises(ValueError, match="outside the plan"):
            ex.finished(bad, True)
        with pytest.raises(ValueError, match="outside the plan"):
            ex.endpoint(bad)
    for bad in (1.0, "0", None, True):
        with pytest.raises(TypeError, match="integer"):
            ex.started(bad)
    with pytest.raises(ValueError, match="has not started"):
        ex.finished(first, True)
    queue_rows = [k for k in range(rows) if plan.partition_id[k] == plan.partition_id[first]
                  and not plan.instant[k]]
    if len(queue_rows) > 1:
        with pytest.raises(ValueError, match="earlier migration of its partition"):
            ex.started(queue_rows[1])
    assert snapshot() == before
    ex.started(np.int64(first))                    # numpy integers are fine
    with pytest.raises(ValueError, match="already started"):
        ex.started(first)
    with pytest.raises(TypeError, match="ok must be a bool"):
        ex.finished(first, 1)
    ex.finished(first, np.True_)
    with pytest.raises(ValueError, match="already finished"):
        ex.finished(first, True)
    with pytest.raises(ValueError, match="already finished"):
        ex.started(first)


def test_instant_rows_never_enter_the_queues():
    # partition 0: member 1 is dropped (REMOVE); partition 1 lost its owner (assignment)
    cur = np.array([[0, 1], [-1, -1]], dtype=np.int32)
    tgt = np.array([[0, -1], [2, -1]], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, tgt)
    assert plan.instant.all() and len(plan) == 2
    ex = Executor(plan, cur, 1)
    assert ex.ready().size == 0 and ex.done and ex.remaining == 0
    for k in range(2):
        with pytest.raises(ValueError, match="instant decision"):
            ex.started(k)
        with pytest.raises(ValueError, match="instant decision"):
            ex.finished(k, True)
        with pytest.raises(ValueError, match="instant decision"):
            ex.endpoint(k)
        assert not ex.can_start(k)


def test_member_at_the_limit_refused():
    cur = np.array([[0, -1], [1, -1]], dtype=np.int32)
    tgt = np.array([[0, 2], [1, 2]], dtype=np.int32)        # both copy into member 2
    plan = hzfast.plan_migrations(cur, tgt)
    ex = Executor(plan, cur, 1)
    assert ex.ready().tolist() == [0]
    ex.started(0)
    with pytest.raises(ValueError, match="destination is at max_parallel_migrations"):
        ex.started(1)
    ex.finished(0, True)
    ex.started(1)


def test_constructor_errors():
    cur, _, plan = small()
    with pytest.raises(TypeError, match="plan must be a MigrationPlan"):
        Executor([1, 2], cur)
    with pytest.raises(ValueError, match="max_parallel_migrations"):
        Executor(plan, cur, 0)
    with pytest.raises(TypeError, match="max_parallel_migrations"):
        Executor(plan, cur, 1.5)
    with pytest.raises(TypeError, match="current"):
        Executor(plan, cur.astype(np.int64))
    with pytest.raises(ValueError, match="shape"):
        Executor(plan, np.full((2, 2), -1, np.int32))
    bare = MigrationPlan([0], [0], [0], [-1], [2], [-1], [0])
    with pytest.raises(ValueError, match="current="):
        Executor(bare)
    far = MigrationPlan([5], [0], [0], [-1], [2], [-1], [0])
    with pytest.raises(ValueError, match="does not fit"):
        Executor(far, cur)
    wrong = MigrationPlan([0], [1], [0], [-1], [2], [-1], [0])    # member 1 is not at 0
    with pytest.raises(ValueError, match="does not fit"):
        Executor(wrong, cur)
    # a partition in two runs would be two queues: refused (newer MigrationPlans refuse
    # such columns themselves)
    block = np.array([[0, 1, 0], [0, 2, 2], [0, 0, 0], [-1, -1, -1], [2, 3, 3],
                      [-1, -1, -1], [0, 0, 0]], dtype=np.int32)
    twice = MigrationPlan._from_kernel(block, np.full(3, 4, np.int8), np.zeros(3, bool),
                                       None, True)
    with pytest.raises(ValueError, match="ascending order"):
        Executor(twice, np.array([[0, 1], [2, 1]], dtype=np.int32))
    ex = Executor(bare, np.array([[0, 1]], dtype=np.int32))
    assert ex.ready().tolist() == [0] and ex.endpoint(0) == 0


def test_empty_plan():
    cur = np.array([[0, 1]], dtype=np.int32)
    ex = Executor(hzfast.plan_migrations(cur, cur), cur)
    assert len(ex) == 0 and ex.done and ex.ready().shape == (0,) and ex.remaining == 0
    with pytest.raises(ValueError, match="outside the plan"):
        ex.started(0)


def test_inputs_are_never_mutated(random_tables):
    cur, tgt = random_tables(300, 4, 9, seed=8)
    plan = hzfast.plan_migrations(cur, tgt, prioritize=False)
    cur_copy, target_copy, cols = cur.copy(), plan.target.copy(), plan._columns.copy()
    ex = Executor(plan, cur, 2)
    expected = hzfast.schedule(plan, current=cur, max_parallel_migrations=2).start_round
    cur[:] = -1                                    # the executor kept its own copy
    start, _ = drive_rounds(ex)
    assert start.tolist() == expected.tolist()
    cur[:] = cur_copy
    assert (plan.target == target_copy).all() and (plan._columns == cols).all()
    ro = cur_copy.copy()
    ro.setflags(write=False)                       # read-only input is accepted
    start2, _ = drive_rounds(Executor(plan, ro, 2))
    assert start2.tolist() == expected.tolist()
    # returned arrays are the caller's to keep: changing them changes nothing inside
    ex = Executor(plan, cur, 2)
    picked = ex.ready()
    picked[:] = 0
    assert ex.ready().tolist() != picked.tolist() or len(picked) <= 1


def test_partition_table_input_and_repr():
    cur, _tgt, plan = small()
    table = hzfast.PartitionTable(cur, members=4)
    ex = Executor(plan, table, 2)
    assert drive_rounds(ex)[0].tolist() == \
        hzfast.schedule(plan, current=cur, max_parallel_migrations=2).start_round.tolist()
    assert "Executor(" in repr(ex) and len(ex) == len(plan)


@pytest.mark.parametrize("limit", [1, 3])
def test_many_members(random_tables, limit):
    # 1,500 members: many (destination, endpoint) pairs, one parking list per member
    cur, tgt = random_tables(600, 3, 1_500, seed=21)
    plan = hzfast.plan_migrations(cur, tgt)
    assert plan.max_member() > 1_024
    assert_same_as_schedule(plan, cur, limit)


# ---------------------------------------------------------------- the fast build and scan
# The executor derives endpoints from the owner slot alone (backwards from the target when
# no current is given), numbers pairs by table or hash, makes only each pair's first head a
# candidate and stops a scan once every member in a queued row is full. These tests hold
# it to the plain §6 model and to the offline schedule's own replay.
@pytest.mark.parametrize("limit", [1, 2, 10, 100_000])
@pytest.mark.parametrize("from_final", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_ready_sequences_follow_the_model(random_tables, limit, from_final, seed):
    cur, tgt = random_tables(250, 2 + 2 * seed, 9, seed=700 + seed)
    plan = hzfast.plan_migrations(cur, tgt, prioritize=seed != 1)
    assert (~plan.instant).sum() > 0
    ex, _model = random_run(plan, cur, limit, seed, from_final=from_final)
    assert not ex.failed and ex.remaining == 0
    first = Executor(plan, None if from_final else cur, limit).ready().tolist()
    heads = [q[0][0] for q in Model(plan, cur, limit).queues if q]
    if limit == 100_000:                     # larger than any load: every head starts
        assert first == heads
    else:
        assert set(first) < set(heads)


def _rounds_of_ready(ex):
    """Every ready() answer of a unit-round run (started and finished in order)."""
    seq = []
    for _ in range(len(ex) + 1):
        picked = ex.ready().tolist()
        assert ex.ready().tolist() == picked          # asking again changes nothing
        if not picked:
            break
        seq.append(picked)
        for i in picked:
            ex.started(i)
        for i in picked:
            ex.finished(i, True)
    return seq


def _model_rounds(plan, cur, limit):
    model, seq = Model(plan, cur, limit), []
    while True:
        picked = model.ready()
        if not picked:
            return seq
        seq.append(picked)
        for k in picked:
            model.start(k)
        for k in picked:
            model.finish(k, True)


@pytest.mark.parametrize("limit", [1, 3, 10, 1_000_000])
@pytest.mark.parametrize("P, R, M, join", [(600, 7, 10, 1), (400, 3, 6, 2), (300, 2, 40, 5)])
def test_ready_rounds_of_a_join_equal_the_model(limit, P, R, M, join):
    # the master's case (members join a balanced table): few pairs, one busy destination
    full = hzfast.arrange(hzfast.PartitionTable.empty(P, R), M, replica_count=R)
    plan = hzfast.plan_migrations(full, hzfast.arrange(full, M + join, replica_count=R))
    want = _model_rounds(plan, full, limit)
    assert len(want) > 0
    for start_from in (full, None):
        assert _rounds_of_ready(Executor(plan, start_from, limit)) == want
    s = hzfast.schedule(plan, max_parallel_migrations=limit)
    assert len(want) == s.rounds
    if limit == 1_000_000:                   # every queue head starts in round 0
        assert want[0] == [int(plan.partition_id.searchsorted(p)) + int(np.flatnonzero(
            ~plan.instant[plan.partition_id == p])[0]) for p in np.unique(
            plan.partition_id[~plan.instant])]


def test_nothing_ready_while_every_member_is_full():
    # members 0 and 1 exchange owners of many partitions: with limit 2 both are full after
    # two starts, and ready() has nothing until one finishes
    P = 40
    cur = np.array([[p % 2, -1] for p in range(P)], dtype=np.int32)
    tgt = np.array([[1 - p % 2, -1] for p in range(P)], dtype=np.int32)
    plan = hzfast.plan_migrations(cur, tgt)
    ex = Executor(plan, cur, 2)
    first = ex.ready().tolist()
    assert first == [0, 1]
    for k in first:
        ex.started(k)
    assert ex.load(0) == ex.load(1) == 2
    for _ in range(3):
        assert ex.ready().size == 0
    ex.finished(1, True)
    assert ex.ready().tolist() == [2]
    assert _rounds_of_ready(Executor(plan, cur, 2)) == _model_rounds(plan, cur, 2)


@pytest.mark.parametrize("seed", range(6))
def test_endpoints_equal_the_schedule_replay(random_tables, seed):
    # the owner-slot walk gives exactly the endpoints of the offline schedule's full replay
    # (from current, and from the target undone), also for a target the plan does not lead
    # to (a hand-made MigrationPlan: the walk and the replay agree slot by slot)
    from hzfast.migration import _schedule
    cur, tgt = random_tables(200, 1 + seed, 8, seed=40 + seed)
    plan = hzfast.plan_migrations(cur, tgt, prioritize=seed % 2 == 0)
    other = random_tables(200, 1 + seed, 8, seed=90 + seed)[1]
    odd = MigrationPlan(*(getattr(plan, c) for c in COLUMNS), target=other)
    queued = np.flatnonzero(~plan.instant)
    for p, start_from, table, from_final in ((plan, cur, cur, False),
                                             (plan, None, plan.target, True),
                                             (odd, None, other, True)):
        top = max(p.max_member(), int(table.max()))
        ok, want, _, _ = _schedule.prepare(np.array(table, copy=True), p._columns,
                                           p.instant.view(np.uint8), top + 1, from_final)
        assert ok
        ex = Executor(p, start_from, 3)
        assert [ex.endpoint(int(k)) for k in queued] == want[queued].tolist()


@pytest.mark.parametrize("limit", [1, 2, 10**6])
def test_many_members_from_the_target(random_tables, limit):
    # 2,000 members: pairs numbered through the hash, not the direct table
    cur, tgt = random_tables(500, 4, 2_000, seed=22)
    plan = hzfast.plan_migrations(cur, tgt)
    assert plan.max_member() > 1_500
    a = drive_rounds(Executor(plan, None, limit))
    s = hzfast.schedule(plan, max_parallel_migrations=limit)
    assert a[0].tolist() == s.start_round.tolist() and a[1] == s.rounds
    assert _rounds_of_ready(Executor(plan, cur, limit)) == _model_rounds(plan, cur, limit)


@pytest.mark.parametrize("limit", [1, 3, 10**6])
@pytest.mark.parametrize("seed", range(4))
def test_planned_equals_the_checked_constructor(random_tables, limit, seed):
    # the master's planning step plans and builds its executor in one call, from the
    # endpoints the planner made with the plan, without checking the plan again: the same
    # decisions, the same endpoints, the same rounds
    cur, tgt = random_tables(300, 1 + 2 * seed, 9 + 500 * (seed == 3), seed=160 + seed)
    prioritize = seed % 2 == 0
    before = (cur.copy(), tgt.copy())
    fast = Executor._planned(cur, tgt, limit, prioritize=prioritize)
    assert np.array_equal(cur, before[0]) and np.array_equal(tgt, before[1])
    plan = fast.plan
    assert plan.target is None                   # the step reads only the decisions
    assert np.array_equal(plan._columns,
                          hzfast.plan_migrations(cur, tgt, prioritize=prioritize)._columns)
    assert fast.max_parallel_migrations == limit
    checked = Executor(plan, cur, limit)
    queued = np.flatnonzero(~plan.instant)
    assert [fast.endpoint(int(k)) for k in queued] == \
        [checked.endpoint(int(k)) for k in queued]
    assert _rounds_of_ready(fast) == _rounds_of_ready(checked) == \
        _model_rounds(plan, cur, limit)


def test_planned_refuses_bad_arguments(random_tables):
    cur, tgt = random_tables(50, 2, 5, seed=3)
    for limit, exc in ((0, ValueError), (2**31, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(exc, match="max_parallel_migrations"):
            Executor._planned(cur, tgt, limit)
    with pytest.raises(ValueError, match="target"):
        Executor._planned(cur, tgt[:-1], 2)
    bad = cur.copy()
    bad[3, 1] = -2
    with pytest.raises(ValueError, match=r"current\[3, 1\]"):
        Executor._planned(bad, tgt, 2)


def test_planner_keeps_the_target_only_when_asked(random_tables):
    cur, tgt = random_tables(200, 3, 7, seed=8)
    full, ep_full = _plan_with_endpoints(cur, tgt)
    bare, ep_bare = _plan_with_endpoints(cur, tgt, keep_target=False)
    assert np.array_equal(full.target, hzfast.plan_migrations(cur, tgt).target)
    assert bare.target is None
    assert np.array_equal(full._columns, bare._columns)
    assert np.array_equal(full.kind, bare.kind) and np.array_equal(full.instant, bare.instant)
    assert np.array_equal(ep_full, ep_bare)


def test_prepare_refuses_wrong_endpoints(random_tables):
    cur, tgt = random_tables(50, 2, 5, seed=3)
    plan, endpoints = _plan_with_endpoints(cur, tgt)
    args = (plan._columns, plan.instant.view(np.uint8), cur[:, 0], 2, False, True)
    for given in (endpoints[:-1], endpoints.astype(np.int64), endpoints[:, None],
                  endpoints.tolist(), endpoints.repeat(2)[::2]):
        with pytest.raises(ValueError, match="endpoints must be a C-contiguous int32 array"):
            _executor.prepare(*args, given)


def test_prepare_refuses_an_endpoint_below_minus_one(random_tables):
    cur, tgt = random_tables(50, 2, 5, seed=4)
    plan, endpoints = _plan_with_endpoints(cur, tgt)
    bad = endpoints.copy()
    bad[int(np.flatnonzero(~plan.instant)[0])] = -2
    ok, *_ = _executor.prepare(plan._columns, plan.instant.view(np.uint8), cur[:, 0], 2,
                               False, True, bad)
    assert ok is False


@pytest.mark.parametrize("R", range(1, 8))
@pytest.mark.parametrize("prioritize", [True, False])
def test_planner_endpoints_equal_the_executors_own(random_tables, R, prioritize):
    # the endpoints the planner makes in its pass (cached row patterns and the one-slot
    # fast path alike) are those the executor derives from the current owner slots
    kinds: set[bool] = set()
    for seed, members, hole_p, keep in ((R, R + 1, 0.4, 1.5), (10 + R, 12, 0.2, 0.3),
                                        (20 + R, 2_000, 0.1, 1.5)):
        cur, tgt = random_tables(400, R, members, seed=seed, hole_p=hole_p, keep_bias=keep)
        plan, endpoints = _plan_with_endpoints(cur, tgt, prioritize=prioritize)
        assert endpoints.dtype == np.int32 and endpoints.shape == (len(plan),)
        assert np.array_equal(
            plan._columns, hzfast.plan_migrations(cur, tgt, prioritize=prioritize)._columns)
        ok, derived, *_ = _executor.prepare(plan._columns, plan.instant.view(np.uint8),
                                            np.ascontiguousarray(cur[:, 0]), R, False, True)
        assert ok
        assert np.array_equal(endpoints, derived)
        kinds.update(plan.instant.tolist())
    assert kinds == {True, False}                # instant and queued decisions both seen


def test_prepare_takes_given_endpoints_only_for_a_checked_plan(random_tables):
    cur, tgt = random_tables(50, 3, 6, seed=5)
    plan, endpoints = _plan_with_endpoints(cur, tgt)
    with pytest.raises(ValueError, match="checked"):
        _executor.prepare(plan._columns, plan.instant.view(np.uint8), cur[:, 0], 3, False,
                          False, endpoints)
