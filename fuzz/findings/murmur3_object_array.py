"""Finding 1 (class 4, hashing): ``murmur3_*`` hashed object arrays (pointers).

``hzfast.murmur3_x86_32(np.array([1, 2], dtype=object))`` returned a hash of the two
``PyObject*`` pointers - a different answer every run. Expected: TypeError (an object
array holds no bytes to hash). Fixed in 8175a50.
"""
import numpy as np

import hzfast
from fuzz.findings._util import main, report


def run() -> int:
    arr = np.array([1, 2], dtype=object)
    return report(__doc__.splitlines()[0], {
        "murmur3_x86_32(object array)": lambda: hzfast.murmur3_x86_32(arr),
        "murmur3_x64_64(object array)": lambda: hzfast.murmur3_x64_64(arr),
    }, lambda kind, _: kind == "TypeError")


if __name__ == "__main__":
    main(run())
