"""Race driver: a second thread changes a hashing/Ignite input while calls run on it.

Run as ``python race_hashing.py SCENARIO [--seconds S] [--iterations N]``; it prints one
JSON line ``{"scenario", "calls", "results", "errors"}`` and exits 0 when every call ended
with a correct-looking result or a clean ``ValueError`` (``TypeError`` too for inputs
whose type can change). A crash (segfault, abort) kills the process, which is the point:
``tests/hardening/test_hashing_races.py`` runs each scenario in a subprocess so a crash
fails that test instead of the whole run.

Every kernel that releases the GIL over memory the caller can still change has a
scenario (docs/hardening-hashing.md lists them). The checks on a result are the ones
that hold whatever the interleaving: the length of the batch, every partition inside
``[0, P)``. Loops are bounded by both a time budget and an iteration count.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import hzfast
from hzfast import ignite

P_HZ, P_IG = 271, 1000   # 1000: Ignite's non-power-of-two rule


def _check_ids(out: Any, n: int, parts: int) -> None:
    assert isinstance(out, np.ndarray) and out.dtype == np.int32, type(out)
    assert out.shape == (n,), (out.shape, n)
    assert ((out >= 0) & (out < parts)).all(), "a partition id outside [0, P)"


class Scenario:
    """``setup()`` builds the shared input, ``mutate(i)`` is the second thread's step,
    ``call()`` one checked call (raising AssertionError on a wrong-looking result)."""

    errors: tuple[type[BaseException], ...] = (ValueError,)

    def mutate(self, i: int) -> None:
        raise NotImplementedError

    def call(self) -> None:
        raise NotImplementedError


class UnicodeArray(Scenario):
    """numpy 'U' keys: sized in one pass, written in a second (both nogil)."""

    def __init__(self, ignite_path: bool) -> None:
        n = 4_000
        self.short = np.array([f"k{i}" for i in range(n)], dtype="U12")
        self.wide = np.array(["\U0001F600" * 12] * n, dtype="U12")   # 48 UTF-8 bytes each
        self.keys = self.short.copy()
        self.ignite_path = ignite_path

    def mutate(self, i: int) -> None:
        np.copyto(self.keys, self.wide if i % 2 else self.short)

    def call(self) -> None:
        if self.ignite_path:
            _check_ids(ignite.partition_ids(self.keys, P_IG), self.keys.shape[0], P_IG)
        else:
            _check_ids(hzfast.partition_ids(self.keys, P_HZ), self.keys.shape[0], P_HZ)


class StrList(Scenario):
    """list of str: sized in one pass, copied in a second."""

    errors = (ValueError, TypeError)

    def __init__(self, ignite_path: bool) -> None:
        self.base = [f"user:{i}" for i in range(5_000)]
        self.long = ["\u00e9" * 200 + str(i) for i in range(5_000)]
        self.keys = list(self.base)
        self.ignite_path = ignite_path

    def mutate(self, i: int) -> None:
        k = self.keys
        if i % 3 == 0:
            k[:] = self.long          # every item longer
        elif i % 3 == 1:
            del k[len(k) // 2:]       # shorter list
        else:
            k[:] = self.base

    def call(self) -> None:
        fn = ignite.partition_ids if self.ignite_path else hzfast.partition_ids
        parts = P_IG if self.ignite_path else P_HZ
        out = fn(self.keys, parts)
        assert out.dtype == np.int32 and out.ndim == 1
        assert out.shape[0] in (2_500, 5_000), out.shape
        assert ((out >= 0) & (out < parts)).all()


class ArrowOffsets(Scenario):
    """Arrow string/binary arrays whose offsets buffer is the caller's numpy array: the
    kernels read it with the GIL released while it is overwritten with hostile values."""

    def __init__(self, path: str, large: bool) -> None:
        import pyarrow as pa
        n = 50_000
        self.path = path
        words = [f"key-{i}" for i in range(n)] if path != "data" else \
            [hzfast.serialize_key(f"key-{i}") for i in range(n)]
        valid = pa.array(words, type=(pa.large_binary() if large else pa.binary())
                         if path == "data" else (pa.large_string() if large else pa.string()))
        bufs = valid.buffers()
        dt = np.int64 if large else np.int32
        self.good = np.frombuffer(bufs[1], dtype=dt).copy()
        self.offsets = self.good.copy()                       # the mutable, shared buffer
        size = len(bufs[2])
        rng = np.random.default_rng(7)
        self.bad = [self.good[::-1].copy(),                        # decreasing
                    np.full_like(self.good, -(2**31) + 5),        # negative
                    rng.integers(0, 2**31 - 1, self.good.shape[0]).astype(dt),  # far past
                    np.minimum(self.good + size // 2, size + 64).astype(dt)]   # just past
        self.array = pa.Array.from_buffers(valid.type, n, [None, pa.py_buffer(self.offsets),
                                                           bufs[2]])
        self.n = n

    def mutate(self, i: int) -> None:
        np.copyto(self.offsets, self.good if i % 2 else self.bad[(i // 2) % len(self.bad)])

    def call(self) -> None:
        if self.path == "ignite":
            _check_ids(ignite.partition_ids(self.array, P_IG), self.n, P_IG)
            out = ignite.java_hash_code(self.array)
            assert isinstance(out, np.ndarray) and out.shape == (self.n,)
        else:
            _check_ids(hzfast.partition_ids(self.array, P_HZ), self.n, P_HZ)


class IntArray(Scenario):
    """int32/int64 keys, stamps, murmur3 and node weights read caller arrays nogil."""

    def __init__(self) -> None:
        self.i64 = np.arange(200_000, dtype=np.int64)
        self.i32 = np.arange(200_000, dtype=np.int32)
        self.raw = np.zeros(1 << 20, dtype=np.uint8)
        self.rng = np.random.default_rng(3)

    def mutate(self, i: int) -> None:
        v = int(self.rng.integers(-2**31, 2**31 - 1))
        self.i64.fill(v * 2**32 + i)
        self.i32.fill(v)
        self.raw.fill(i & 0xFF)

    def call(self) -> None:
        _check_ids(hzfast.partition_ids(self.i64, P_HZ), self.i64.shape[0], P_HZ)
        _check_ids(hzfast.partition_ids(self.i32, P_HZ), self.i32.shape[0], P_HZ)
        _check_ids(ignite.partition_ids(self.i64, P_IG), self.i64.shape[0], P_IG)
        assert isinstance(hzfast.stamp(self.i32), int)
        assert isinstance(hzfast.murmur3_x86_32(self.raw), int)
        assert isinstance(hzfast.murmur3_x64_64(self.raw), int)
        w = ignite.node_weight(self.i32[:1000], self.i32[1000:2000])
        assert w.shape == (1000,)


class Counters(Scenario):
    """UpdateCounters batches: checked, then applied by a nogil kernel."""

    def __init__(self) -> None:
        self.P = 64
        self.parts = np.zeros(10_000, dtype=np.int32)
        self.starts = np.arange(10_000, dtype=np.int64)
        self.deltas = np.ones(10_000, dtype=np.int64)

    def mutate(self, i: int) -> None:
        # out-of-range partitions and negative values the check would have refused
        self.parts.fill(2**31 - 1 if i % 2 else i % self.P)
        self.deltas.fill(-5 if i % 3 == 0 else 1)

    def call(self) -> None:
        c = ignite.UpdateCounters(self.P)
        out = c.update_batch(self.parts, self.starts, self.deltas)
        assert out.shape == (10_000,)
        r = c.reserve_batch(self.parts, self.deltas)
        assert r.shape == (10_000,) and (r >= 0).all()
        assert (c.lwm >= 0).all() and (c.hwm >= 0).all()


class Rebalance(Scenario):
    """rebalance_plan over node x partition arrays the caller keeps changing."""

    def __init__(self) -> None:
        N, P = 6, 4_000
        self.states = np.ones((N, P), dtype=np.int8)
        self.counters = np.full((N, P), 100, dtype=np.int64)
        self.history = np.full((N, P), 50, dtype=np.int64)

    def mutate(self, i: int) -> None:
        self.states.fill(99 if i % 2 else (i % 2))     # 99: not a state code
        self.counters.fill(-7 if i % 3 == 0 else 100 + i)

    def call(self) -> None:
        plan = ignite.rebalance_plan(self.states, self.counters, history=self.history)
        assert plan.max_counter.shape == (self.states.shape[1],)


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "unicode-hazelcast": lambda: UnicodeArray(False),
    "unicode-ignite": lambda: UnicodeArray(True),
    "strlist-hazelcast": lambda: StrList(False),
    "strlist-ignite": lambda: StrList(True),
    "arrow-string": lambda: ArrowOffsets("hazelcast", False),
    "arrow-large-string": lambda: ArrowOffsets("hazelcast", True),
    "arrow-binary-data": lambda: ArrowOffsets("data", False),
    "arrow-ignite": lambda: ArrowOffsets("ignite", False),
    "arrow-ignite-large": lambda: ArrowOffsets("ignite", True),
    "ints-stamp-murmur": IntArray,
    "ignite-counters": Counters,
    "ignite-rebalance": Rebalance,
}


def run(name: str, seconds: float, iterations: int) -> dict[str, Any]:
    sc = SCENARIOS[name]()
    stop = threading.Event()
    mutations = [0]

    def mutator() -> None:
        i = 0
        while not stop.is_set() and i < 1_000 * iterations and time.monotonic() < deadline:
            sc.mutate(i)
            i += 1
        mutations[0] = i

    t = threading.Thread(target=mutator, daemon=True)
    deadline = time.monotonic() + seconds
    calls = results = errors = 0
    t.start()
    try:
        while calls < iterations and time.monotonic() < deadline:
            calls += 1
            try:
                sc.call()
                results += 1
            except sc.errors:
                errors += 1
    finally:
        stop.set()
        t.join(timeout=30)
    return {"scenario": name, "calls": calls, "results": results, "errors": errors,
            "mutations": mutations[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--iterations", type=int, default=5_000)
    args = ap.parse_args(argv)
    print(json.dumps(run(args.scenario, args.seconds, args.iterations)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
