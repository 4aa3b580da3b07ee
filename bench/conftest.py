"""Benchmark inputs shared by several bench files, built once per session (outside timing)."""
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))     # bench/_cpu.py

N_KEYS = 10_000_000


@pytest.fixture(scope="session")
def int64_keys():
    """10M random int64 keys (Java Longs)."""
    return np.random.default_rng(42).integers(-2**63, 2**63 - 1, N_KEYS, dtype=np.int64)


@pytest.fixture(scope="session")
def string_keys():
    """10M random ASCII strings of 6..16 bytes, as a pyarrow string array (from buffers)."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(6, 17, N_KEYS, dtype=np.int32)
    offsets = np.zeros(N_KEYS + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(97, 123, int(offsets[-1]), dtype=np.uint8)
    return pa.Array.from_buffers(pa.string(), N_KEYS,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])
