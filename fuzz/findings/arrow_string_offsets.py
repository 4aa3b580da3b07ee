"""Finding 3 (class 1, hashing): Arrow string arrays with malformed offsets were hashed.

An array built with ``pa.Array.from_buffers`` whose inner offsets decrease (0, 5, 2 over
8 bytes; pyarrow itself checks only the first and last) was accepted by
``hzfast.partition_ids`` and ``hzfast.ignite.java_hash_code``/``partition_ids``, hashing
bytes chosen by the bad offsets (past the buffer in other cases). Expected: ValueError
naming the item. Fixed in 8175a50 (one offsets check for both systems).
"""
import numpy as np
import pyarrow as pa

import hzfast
from fuzz.findings._util import main, report
from hzfast import ignite


def bad_array(large: bool = False) -> pa.Array:
    dtype, t = (np.int64, pa.large_string()) if large else (np.int32, pa.string())
    offsets = pa.py_buffer(np.array([0, 5, 2], dtype).tobytes())
    return pa.Array.from_buffers(t, 2, [None, offsets, pa.py_buffer(b"abcdefgh")],
                                 null_count=0)


def run() -> int:
    calls = {}
    for large in (False, True):
        arr = bad_array(large)
        calls[f"partition_ids({arr.type})"] = lambda a=arr: hzfast.partition_ids(a)
        calls[f"ignite.java_hash_code({arr.type})"] = lambda a=arr: ignite.java_hash_code(a)
        calls[f"ignite.partition_ids({arr.type})"] = lambda a=arr: ignite.partition_ids(a)
    return report(__doc__.splitlines()[0], calls, lambda kind, _: kind == "ValueError")


if __name__ == "__main__":
    main(run())
