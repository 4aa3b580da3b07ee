"""Every curated protocol mutant of protocol_mutants.py is caught by the fast layer set
(layers.py), or survives exactly as its ``expected_to_survive_today`` field says.

Each mutant runs on its own copy of the package (a temporary directory) in which the
compiled protocol modules and the compiled simulator (``hzfast/protocol/*.so`` and
``hzfast/sim/cluster*.so`` beside a ``.py``) are removed, so that the patched ``.py`` is what
Python imports; the layers run in a subprocess with ``PYTHONPATH`` on that copy, bounded by
``TIMEOUT`` seconds, and stop at the first catch. One test per mutant (pytest-xdist spreads
them over the cores); the survivors, which run every layer to its end, are marked ``slow``::

    python -m pytest tests/mutants -n 2 -q -p no:cacheprovider -m "slow or not slow"

``python tests/mutants/test_mutants.py [NAME ...]`` prints the table (mutant, layer that
caught it, time, detail); under pytest, ``HZFAST_MUTANT_REPORT=FILE`` appends each
mutant's answer to FILE as a JSON line.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from layers import LAYERS, pure_copy  # noqa: E402
from protocol_mutants import MUTANTS, Mutant  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LAYERS_PY = Path(__file__).resolve().parent / "layers.py"
TIMEOUT = 600


def apply(m: Mutant, root: Path) -> None:
    """Patch ``root``/``m.path``; the target text must occur exactly once."""
    f = root / m.path
    text = f.read_text()
    n = text.count(m.old)
    if n != 1:
        raise AssertionError(f"mutant {m.name}: its target occurs {n} times in {m.path} "
                             f"(the source drifted: update tests/mutants/protocol_mutants.py)"
                             f"\n{m.old}")
    f.write_text(text.replace(m.old, m.new))


def run_mutant(m: Mutant, work: Path, layers: tuple[str, ...] = LAYERS) -> dict[str, object]:
    """Apply ``m`` to a pure copy in ``work`` and run the layers: their JSON answer, or
    ``{"caught": "timeout"}``."""
    pure_copy(work)
    apply(m, work)
    env = {"PYTHONPATH": str(work), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": os.environ.get("HOME", "/tmp")}
    t = time.perf_counter()
    cpu = _children_cpu()
    try:
        proc = subprocess.run([sys.executable, str(LAYERS_PY), "--layers", ",".join(layers)],
                              cwd=work, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"caught": "timeout", "detail": f"no answer in {TIMEOUT} s",
                "seconds": round(time.perf_counter() - t, 1)}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"caught": "exception", "detail": (proc.stderr or proc.stdout)[-500:],
                "seconds": round(time.perf_counter() - t, 1)}
    out: dict[str, object] = json.loads(lines[-1])
    out["seconds"] = round(time.perf_counter() - t, 1)
    out["cpu"] = round(_children_cpu() - cpu, 1)
    return out


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def test_the_mutants_are_well_formed() -> None:
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)) and len(MUTANTS) >= 20
    for m in MUTANTS:
        assert bool(m.caught_by) != bool(m.expected_to_survive_today), m.name
        assert not m.caught_by or m.caught_by in LAYERS + ("exception", "timeout"), m.name
        assert m.old != m.new and m.bug, m.name
        assert m.path.startswith("hzfast/protocol/") and m.path.endswith(".py"), m.name
        assert (ROOT / m.path).read_text().count(m.old) == 1, \
            f"{m.name}: target not found exactly once in {m.path} (the source drifted)"


def test_a_patch_runs_the_patched_source(tmp_path: Path) -> None:
    # the copy imports the .py (not a .so), and the patch is what runs: a mutant that
    # breaks the module at import is reported as an exception, not as a pass
    broken = Mutant("broken", "hzfast/protocol/node.py", "class Node(", "class Node(1, ",
                    "a syntax error", caught_by="exception")
    out = run_mutant(broken, tmp_path, ("scenarios",))
    assert out["caught"] in ("scenarios", "exception"), out
    assert "Node" in str(out["detail"]) or "Error" in str(out["detail"]), out


# a survivor runs every layer to the end (the slowest kind): its test is marked slow
@pytest.mark.parametrize("m", [pytest.param(m, marks=pytest.mark.slow)
                               if m.expected_to_survive_today else m for m in MUTANTS],
                         ids=[m.name for m in MUTANTS])
def test_mutant(m: Mutant, tmp_path: Path) -> None:
    out = run_mutant(m, tmp_path)
    report = os.environ.get("HZFAST_MUTANT_REPORT")
    if report:                 # one JSON line per mutant (the table of docs/mutation.md)
        with open(report, "a") as f:
            f.write(json.dumps({"name": m.name, **out}) + "\n")
    caught = out["caught"]
    if m.expected_to_survive_today:
        assert caught is None, (
            f"{m.name} is caught now (by {caught}: {out['detail']}): replace its "
            f"expected_to_survive_today with caught_by={caught!r}")
        return
    assert caught is not None, f"{m.name} survived every layer ({m.bug}): {out}"
    order = LAYERS + ("exception", "timeout")
    assert caught in ("exception", "timeout") or \
        order.index(str(caught)) <= order.index(m.caught_by), (
            f"{m.name}: caught by {caught}, later than {m.caught_by}: {out['detail']}")


def main(names: list[str]) -> None:
    import tempfile
    for m in MUTANTS:
        if names and m.name not in names:
            continue
        with tempfile.TemporaryDirectory(prefix="hzfast-mutant-") as d:
            out = run_mutant(m, Path(d))
        print(f"{m.name:45s} {str(out['caught']):12s} {out['seconds']:7.1f}s "
              f"{out.get('cpu', 0):7.1f}s cpu  "
              f"{str(out['detail'])[:150]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
