"""Shared by the simulator tests: what a failing seed prints."""
from __future__ import annotations

from collections.abc import Callable

import pytest

from hzfast import sim


def _explain(r: sim.SimulationResult, **shape: object) -> str:
    """The replay call (``shape``: the arguments the run had besides its seed), the
    summary, the fault plan, the violations and the last events of a run."""
    args = "".join(f", {k}={v!r}" for k, v in shape.items())
    return (f"\nreplay: hzfast.sim.run({r.seed}{args})\n{r.summary()}\n"
            f"faults: {r.faults}\nviolations:\n  " + "\n  ".join(r.violations)
            + "\nlast events:\n  " + "\n  ".join(r.last_events[-25:]))


@pytest.fixture
def explain() -> Callable[..., str]:
    """``explain(result, **shape)``: the failure message of a simulator run."""
    return _explain
