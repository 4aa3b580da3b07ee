"""Finding 8 (class 4, Ignite counters): gap items at or below the initial counter.

``UpdateCounter(2**63 - 1, gaps)`` with a gap item ``(15, 48)`` (counters 16..63, all
below the LWM) is accepted; ``finalize()`` then reports the missed range
``(2**63, 15)`` - outside Java's long - and lowers the LWM to 63. ``UpdateCounters.init``
with the same blob, then ``finalize()``, reports ``(-2**63, 15)`` (wrapped), so the
array form and the scalar model disagree. Expected: the blob refused with a ValueError
(an item must start at or above the initial counter), or a finalize that stays in int64
and never lowers the LWM, the same in both forms.
Fixed in f3ad7b9.
"""
import struct

from fuzz.findings._util import main, report
from hzfast import ignite

GAPS = struct.pack(">bi", 1, 1) + struct.pack(">qq", 15, 48)
I64 = (-(2**63), 2**63 - 1)


def scalar() -> tuple[list[int], int]:
    c = ignite.UpdateCounter(2**63 - 1, GAPS)
    return c.finalize(), c.lwm


def table() -> tuple[dict[int, list[tuple[int, int]]], int]:
    t = ignite.UpdateCounters(1)
    t.init(0, 2**63 - 1, GAPS)
    return t.finalize(), int(t.lwm[0])


def fine(kind: str, value: object) -> bool:
    if kind == "ValueError":
        return True
    if kind != "ok":
        return False
    ranges, lwm = value
    flat = ranges if isinstance(ranges, list) else [v for r in ranges.get(0, []) for v in r]
    return lwm >= 2**63 - 1 and all(I64[0] <= v <= I64[1] for v in flat)


def run() -> int:
    return report(__doc__.splitlines()[0], {
        "UpdateCounter(2**63-1, gaps).finalize()": scalar,
        "UpdateCounters.init(0, 2**63-1, gaps); finalize()": table,
    }, fine)


if __name__ == "__main__":
    main(run())
