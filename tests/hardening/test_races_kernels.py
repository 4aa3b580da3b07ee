"""Race tests of the table/plan kernels: each scenario of ``race_kernels.py`` runs in its
own subprocess (a crash fails the test instead of killing the run), a second thread
rewriting the input while thousands of calls run on it. Every call must end with a
correct result or a clean ValueError (docs/hardening.md, class 3)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SCENARIOS = ("plan", "cycles", "apply", "diff", "schedule", "arrange", "repair", "report",
             "table", "plan_columns")


def _run(scenario: str, seconds: float = 2.0, iterations: int = 2_000) -> dict[str, int]:
    proc = subprocess.Popen([sys.executable, str(HERE / "race_kernels.py"), scenario,
                             "--seconds", str(seconds), "--iterations", str(iterations)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=HERE.parents[1])
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()                       # this process only, by its handle
        proc.communicate()
        raise AssertionError(f"{scenario}: no answer within 120 s") from None
    assert proc.returncode == 0, f"{scenario}: exit status {proc.returncode}\n{err[-3000:]}"
    # a kernel built with HZFAST_DEBUG reports an out-of-bounds access this way (its
    # noexcept functions cannot raise): that is a failure too
    assert "Exception ignored" not in err and "Out of bounds" not in err, err[-3000:]
    result: dict[str, int] = json.loads(out.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_kernel_survives_a_changing_input(scenario):
    res = _run(scenario)
    assert res["calls"] >= 100, res                 # the loop really ran
    assert res["results"] + res["errors"] == res["calls"], res
    assert res["mutations"] > 0, res                # the input really changed meanwhile


def test_driver_knows_every_scenario():
    sys.path.insert(0, str(HERE))
    try:
        import race_kernels
    finally:
        sys.path.remove(str(HERE))
    assert sorted(race_kernels.SCENARIOS) == sorted(SCENARIOS)
