"""Fixtures of the migration tests."""
import numpy as np
import pytest

import hzfast


def random_tables(n, R, members, seed, hole_p=0.2, keep_bias=1.5):
    """Valid random (current, target) pairs: distinct members per row, holes, targets
    that reuse current members in other slots (shifts, cycles) or bring new ones."""
    rng = np.random.default_rng(seed)
    cur = np.argsort(rng.random((n, members)), axis=1)[:, :R].astype(np.int32)
    cur[rng.random((n, R)) < hole_p] = -1
    score = rng.random((n, members))
    rows = np.arange(n)[:, None]
    present = np.zeros((n, members), dtype=bool)
    valid = cur >= 0
    present[np.broadcast_to(rows, cur.shape)[valid], cur[valid]] = True
    score += keep_bias * present
    tgt = np.argsort(-score, axis=1)[:, :R].astype(np.int32)
    # shuffle target slots per row, then punch holes
    perm = np.argsort(rng.random((n, R)), axis=1)
    tgt = np.take_along_axis(tgt, perm, axis=1)
    tgt[rng.random((n, R)) < hole_p / 2] = -1
    # some rows unchanged, some with a compacted owner
    same = rng.random(n) < 0.1
    tgt[same] = cur[same]
    return np.ascontiguousarray(cur), np.ascontiguousarray(tgt)


@pytest.fixture(scope="session", name="random_tables")
def random_tables_fixture():
    """The random (current, target) generator (a function)."""
    return random_tables


@pytest.fixture(scope="session")
def sample():
    cur, tgt = random_tables(2_000, 7, 12, seed=11)
    return cur, tgt, hzfast.plan_migrations(cur, tgt)
