"""Finding 4 (hashing): ``ignite.java_hash_code`` of a numpy unicode array raised
``ValueError: too many values to unpack (expected 3)``.

A ``'U'`` array (``np.array(["ab", ""])``) reached an encoder whose return value had
changed shape: every valid unicode batch was refused with a message about unpacking.
Expected: Java's ``String.hashCode`` per item. Fixed in 8175a50.
"""
import numpy as np

from fuzz.findings._util import main, report
from hzfast import ignite
from hzfast.reference import ignite as ref


def run() -> int:
    keys = ["ab", "", "\U0001F600x"]
    want = [ref.string_hash(k) for k in keys]
    return report(__doc__.splitlines()[0], {
        "java_hash_code(np.array(keys))": lambda: ignite.java_hash_code(np.array(keys)).tolist(),
    }, lambda kind, value: kind == "ok" and value == want)


if __name__ == "__main__":
    main(run())
