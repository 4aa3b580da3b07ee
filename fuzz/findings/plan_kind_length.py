"""Finding 7 (class 2, plans): ``MigrationPlan(kind=...)`` of the wrong length.

A ``kind`` column of another length than the plan is compared by numpy broadcasting
instead of refused: ``kind=[REMOVE]`` for a (REMOVE, COPY) plan finds the disagreement
at decision 1 and ``_agree`` reads ``kind[1]``: IndexError; ``kind=[]`` for a
1-decision plan is accepted; a longer column gives numpy's "operands could not be
broadcast" instead of naming ``kind``.
Expected: ``ValueError: kind has length ..., expected N`` (as ``instant`` already does).
Fixed in 573f7e4.
"""
import numpy as np

import hzfast
from fuzz.findings._util import main, report

# partition 0: REMOVE member 1 from slot 0, then COPY member 3 into slot 1
COLS = ([0, 0], [1, -1], [0, -1], [-1, -1], [-1, 3], [-1, -1], [-1, 1])
REMOVE = int(hzfast.MigrationKind.REMOVE)


def plan(kind: list[int], n: int = 2) -> hzfast.MigrationPlan:
    cols = [np.array(c[:n], np.int32) for c in COLS]
    return hzfast.MigrationPlan(*cols, kind=np.array(kind, np.int8))


def run() -> int:
    return report(__doc__.splitlines()[0], {
        "kind=[REMOVE] for (REMOVE, COPY)": lambda: plan([REMOVE]),
        "kind=[] for (REMOVE,)": lambda: plan([], 1),
        "kind of length 3 for 2 decisions": lambda: plan([REMOVE] * 3),
    }, lambda kind, value: kind == "ValueError" and "kind" in str(value))


if __name__ == "__main__":
    main(run())
