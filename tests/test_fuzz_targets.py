"""The fuzz targets (fuzz/, docs/fuzzing.md) as ordinary tests: every target runs over its
committed seed corpus, and the contract helper they share catches what it must.

Fast (a few seconds in all): no coverage-guided search here, only the seeds. The search
itself runs with ``python -m fuzz.run`` and in CI through ``.ci/fuzz``.
"""
import importlib
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("atheris", reason="atheris is in the test extra for Python 3.11 only")

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:   # the fuzz package lives beside hzfast, not inside it
    sys.path.insert(0, str(ROOT))

from fuzz._common import Finding, checked, dress_ints, rejected
from fuzz.targets import TARGETS

CORPUS = ROOT / "fuzz" / "corpus"


def test_every_target_module_is_registered():
    modules = {p.stem for p in (ROOT / "fuzz" / "targets").glob("*.py")} - {"__init__"}
    assert modules == set(TARGETS)


@pytest.mark.parametrize("name", TARGETS)
def test_target_passes_its_seed_corpus(name):
    module = importlib.import_module(f"fuzz.targets.{name}")
    seeds = sorted(p for p in (CORPUS / name).iterdir() if p.is_file())
    assert len(seeds) >= 5, f"fuzz/corpus/{name} holds {len(seeds)} seeds"
    for path in seeds:
        try:
            module.test_one_input(path.read_bytes())
        except Exception as exc:
            raise AssertionError(f"{name} seed {path.name}: {type(exc).__name__}: "
                                 f"{exc}") from exc


def test_checked_accepts_clean_errors_and_results():
    assert rejected(checked(int, "x"))                 # ValueError
    assert rejected(checked(len, 5))                   # TypeError
    assert checked(sum, [1, 2]) == 3


def test_checked_lets_other_exceptions_through():
    with pytest.raises(KeyError):
        checked(lambda d: d["missing"], {})
    with pytest.raises(ZeroDivisionError):
        checked(lambda x: 1 // x, 0)


@pytest.mark.parametrize("change", ["value", "writeable", "list"])
def test_checked_sees_a_mutated_input(change):
    arr = np.arange(4, dtype=np.int32)

    def mutate(a, items):
        if change == "value":
            a[1] = 9
        elif change == "writeable":
            a.flags.writeable = False
        else:
            items.append(0)

    with pytest.raises(Finding, match="changed its input"):
        checked(mutate, arr, [1])


def test_dressings_report_what_the_object_holds():
    class Provider:   # FuzzedDataProvider stand-in choosing each dressing in turn
        def __init__(self, how):
            self.how = how

        def PickValueInList(self, values):
            return self.how

        def ConsumeIntInRange(self, lo, hi):
            return lo

    values = [1, 2**32 + 5, -1]
    for how in ("int32", "int64", "list", "float_frac", "bool", "big_endian", "noncontig"):
        obj, logical, got_how = dress_ints(Provider(how), values, (3,))
        assert got_how == how
        if logical is None:
            assert how in ("float_frac", "bool")
            continue
        held = obj if isinstance(obj, list) else np.asarray(obj).astype(object).tolist()
        assert [int(v) for v in held] == logical
