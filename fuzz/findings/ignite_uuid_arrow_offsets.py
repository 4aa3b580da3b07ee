"""Finding 5 (class 1, Ignite): ``key_type="uuid"`` reads malformed Arrow strings unchecked.

``hzfast.ignite.java_hash_code`` / ``partition_ids`` with ``key_type="uuid"`` on a string
array built with ``pa.Array.from_buffers`` whose offsets decrease (0, 5, 2) convert it
with ``to_pylist()`` before the shared offsets check: pyarrow raises ``SystemError:
Negative size passed to PyUnicode_New`` (other offsets read outside the buffer). The
string path rejects the same array with a ValueError. Expected: that ValueError.
Fixed in f5a4105.
"""
import numpy as np
import pyarrow as pa

from fuzz.findings._util import main, report
from hzfast import ignite


def bad_array() -> pa.Array:
    offsets = pa.py_buffer(np.array([0, 5, 2], np.int32).tobytes())
    return pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"abcdefgh")],
                                 null_count=0)


def run() -> int:
    arr = bad_array()
    return report(__doc__.splitlines()[0], {
        "java_hash_code(arr, key_type='uuid')": lambda: ignite.java_hash_code(arr, "uuid"),
        "partition_ids(arr, key_type='uuid')": lambda: ignite.partition_ids(arr, 1024, "uuid"),
    }, lambda kind, _: kind == "ValueError")


if __name__ == "__main__":
    main(run())
