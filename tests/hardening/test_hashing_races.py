"""Race tests: a second thread changes the input while hashing/Ignite kernels run on it.

Each scenario of ``race_hashing.py`` runs in its own subprocess (so a crash fails this test
instead of killing pytest), for a bounded time and number of calls. It must end with every
call giving a well-formed result or a clean ValueError; the driver checks each result, and
exits non-zero on a wrong-looking one. Before the fixes of docs/hardening-hashing.md the
``unicode-*`` scenarios aborted the interpreter (heap corruption) within a second.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DRIVER = Path(__file__).with_name("race_hashing.py")
SCENARIOS = ["unicode-hazelcast", "unicode-ignite", "strlist-hazelcast", "strlist-ignite",
             "arrow-string", "arrow-large-string", "arrow-binary-data", "arrow-ignite",
             "arrow-ignite-large", "ints-stamp-murmur", "ignite-counters", "ignite-rebalance"]
SECONDS = float(os.environ.get("HZFAST_RACE_SECONDS", "1.5"))


def test_every_scenario_is_tested():
    sys.path.insert(0, str(DRIVER.parent))
    try:
        import race_hashing
    finally:
        sys.path.pop(0)
    assert sorted(race_hashing.SCENARIOS) == sorted(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_mutating_the_input_during_calls_never_crashes(scenario):
    proc = subprocess.Popen([sys.executable, str(DRIVER), scenario, "--seconds", str(SECONDS),
                             "--iterations", "3000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()     # this process's own child, by its handle
        proc.communicate()
        pytest.fail(f"{scenario}: no answer within 120 s")
    assert proc.returncode == 0, f"{scenario} ended with {proc.returncode}:\n{err[-3000:]}"
    report = json.loads(out.strip().splitlines()[-1])
    assert report["scenario"] == scenario
    assert report["calls"] >= 1 and report["mutations"] >= 1
    assert report["results"] + report["errors"] == report["calls"]
