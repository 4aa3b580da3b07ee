"""``hzfast._check.owned``: the one way to skip a kernel's private snapshot, for arrays
hzfast made itself and holds alone (the protocol node's working tables)."""
from __future__ import annotations

import threading

import numpy as np

import hzfast
from hzfast import _check
from hzfast.members import Members


def test_private_copies_unless_lent() -> None:
    a = np.zeros((4, 2), np.int32)
    b = np.zeros((4, 2), np.int32)
    assert _check.private(a) is not a
    with _check.owned(a):
        assert _check.private(a) is a
        assert _check.private(b) is not b                    # only the arrays lent
        assert _check.private(a, writable=True) is not a     # a writable copy stays a copy
        assert _check.private(a, freeze=True) is not a       # so does a frozen one
        with _check.owned(b):                                # nests
            assert _check.private(a) is a and _check.private(b) is b
        assert _check.private(b) is not b
    assert _check.private(a) is not a                        # the loan ends with the block


def test_a_loan_ends_on_error_and_is_per_thread() -> None:
    a = np.zeros((4, 2), np.int32)
    try:
        with _check.owned(a):
            raise KeyError("x")
    except KeyError:
        pass
    assert _check.private(a) is not a
    seen: list[bool] = []
    with _check.owned(a):
        t = threading.Thread(target=lambda: seen.append(_check.private(a) is a))
        t.start()
        t.join(10)
    assert seen == [False]


def test_kernels_give_the_same_answer_on_a_lent_table() -> None:
    rng = np.random.default_rng(3)
    cur = hzfast.arrange(np.full((500, 3), -1, np.int32), Members.from_count(5), replica_count=3)
    cur[rng.random(500) < 0.2, 1] = -1
    mem = Members.from_count(6)
    target = hzfast.arrange(cur, mem, replica_count=3)
    plan = hzfast.plan_migrations(cur, target)
    before = cur.copy()
    with _check.owned(cur):
        lent_target = hzfast.arrange(cur, mem, replica_count=3)
    with _check.owned(cur, lent_target):
        lent_plan = hzfast.plan_migrations(cur, lent_target)
    assert np.array_equal(lent_target, target)
    assert np.array_equal(lent_plan._columns, plan._columns)
    assert np.array_equal(cur, before)                       # read, never written
