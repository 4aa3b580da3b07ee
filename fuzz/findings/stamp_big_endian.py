"""Finding 2 (class 4, hashing): ``stamp`` of big-endian versions hashed swapped bytes.

``hzfast.stamp(np.array([1, 2, 3], '>i4'))`` differed from ``stamp([1, 2, 3])``: the
kernel read the raw bytes as native ints. Expected: the stamp of the values (or a
TypeError). Fixed in 8175a50.
"""
import numpy as np

import hzfast
from fuzz.findings._util import main, report
from hzfast.reference import hashing as R


def run() -> int:
    want = R.stamp([1, 2, 3])
    return report(__doc__.splitlines()[0], {
        "stamp(>i4 [1, 2, 3])": lambda: hzfast.stamp(np.array([1, 2, 3], ">i4")),
    }, lambda kind, value: kind == "TypeError" or (kind == "ok" and value == want))


if __name__ == "__main__":
    main(run())
