"""Finding 9 (class 7, files): ``hzfast.persistence.read_table`` does not name the file.

Its ValueErrors describe the content but not the path: an empty file gives ``empty file``,
an unreadable one ``not a persisted partition table (as npz: ...)``, a file over
``max_bytes`` ``635 bytes, larger than the 10 allowed``, a damaged ``.npz``
``table file '<file object>' is corrupt ...``. ``PartitionTable.load`` names the path for
the same problems. Expected: every message names the file.
Fixed in 9c45ee8.
"""
import os
import tempfile

import hzfast
from fuzz.findings._util import main, report
from hzfast import persistence


def run() -> int:
    with tempfile.TemporaryDirectory(prefix="hzfast-finding-") as folder:
        return run_in(folder)


def run_in(folder: str) -> int:
    files = {}
    for name, data in (("empty.bin", b""), ("junk.bin", b"\x00\x01garbage" * 8),
                       ("damaged.npz", b"PK\x03\x04" + b"\xff" * 60)):
        files[name] = os.path.join(folder, name)
        with open(files[name], "wb") as f:
            f.write(data)
    big = os.path.join(folder, "big.npz")
    hzfast.PartitionTable.round_robin(8, 3).save(big)
    calls = {name: (lambda p=path: persistence.read_table(p)) for name, path in files.items()}
    calls["big.npz (max_bytes=10)"] = lambda: persistence.read_table(big, max_bytes=10)
    names = {**{n: n for n in files}, "big.npz (max_bytes=10)": "big.npz"}
    code = 0
    for label, fn in calls.items():
        code |= report(f"{__doc__.splitlines()[0]} [{label}]", {label: fn},
                       lambda kind, value, n=names[label]: kind == "ValueError"
                       and n in str(value))
    return code


if __name__ == "__main__":
    main(run())
