"""``hzfast simulate --jobs``'s forked workers: order, errors, deaths, and a bounded stop."""
from __future__ import annotations

import os
import time
from typing import Any

import pytest

from hzfast import sim
from hzfast.cli import main
from hzfast.cli._workers import ordered_map


def _gone(pids: list[int]) -> bool:
    """Every pid is reaped (a zombie child would still accept signal 0)."""
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True


def _worker_pids() -> list[int]:
    import multiprocessing

    return [p.pid for p in multiprocessing.active_children() if p.pid is not None]


def _slow_square(x: int) -> int:
    time.sleep(0.02 * (6 - x % 6))       # later tasks tend to finish first
    return x * x


@pytest.mark.parametrize("jobs", [1, 2, 3, 8])
def test_answers_come_in_task_order(jobs: int) -> None:
    assert list(ordered_map(_slow_square, list(range(13)), jobs)) == [x * x for x in range(13)]
    assert list(ordered_map(_slow_square, [], jobs)) == []
    assert not _worker_pids()


def _fail_at(x: int) -> int:
    if x == 5:
        raise ValueError(f"task {x} is bad")
    return x


def test_a_task_error_is_raised_in_the_parent_and_the_workers_stop() -> None:
    got: list[int] = []
    with pytest.raises(ValueError, match="task 5 is bad") as error:
        for v in ordered_map(_fail_at, list(range(20)), 2):
            got.append(v)
    assert got == [0, 1, 2, 3, 4]          # every earlier answer, in order, then the error
    where = str(error.value.__cause__)      # the worker's traceback, for a printed one
    assert "in the worker" in where and "_fail_at" in where and "task 5 is bad" in where
    assert not _worker_pids()


class _Unpicklable(Exception):
    def __reduce__(self) -> Any:
        raise TypeError("not picklable")


def _raise_unpicklable(x: int) -> int:
    raise _Unpicklable(f"odd {x}")


class _TwoArguments(Exception):
    def __init__(self, what: str, where: int) -> None:    # pickles, yet does not unpickle
        super().__init__(f"{what} at {where}")


def _raise_two_arguments(x: int) -> int:
    raise _TwoArguments("broken", x)


def _unpicklable_answer(x: int) -> Any:
    return lambda: x


@pytest.mark.parametrize("fn, message", [
    (_raise_unpicklable, "_Unpicklable: odd 0"),
    (_raise_two_arguments, "_TwoArguments: broken at 0"),
    (_unpicklable_answer, "answer could not be sent back"),
])
def test_what_cannot_travel_comes_back_as_text(fn: Any, message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        list(ordered_map(fn, [0, 1], 2))
    assert not _worker_pids()


def _die_at(x: int) -> int:
    if x == 3:
        os._exit(7)
    return x


def test_a_worker_that_dies_is_an_error_naming_its_exit_code() -> None:
    t = time.monotonic()
    with pytest.raises(RuntimeError, match=r"died \(exit code 7\)"):
        list(ordered_map(_die_at, list(range(8)), 2))
    assert time.monotonic() - t < 30
    assert not _worker_pids()


def _sleep(x: int) -> int:
    if x:
        time.sleep(120)                  # killed long before this ends
    return x


def test_stopping_early_kills_busy_workers_at_once() -> None:
    it = ordered_map(_sleep, [0, 1, 2, 3], 3)
    assert next(it) == 0
    pids = _worker_pids()
    assert len(pids) == 3
    t = time.monotonic()
    it.close()
    assert time.monotonic() - t < 10
    assert _gone(pids) and not _worker_pids()


def test_simulate_jobs_reports_a_worker_error_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = sim.run

    def run(seed: int, **kw: Any) -> Any:       # the forked workers inherit this
        if seed == 37:
            raise RuntimeError("the simulator broke at seed 37")
        return real(seed, **kw)

    monkeypatch.setattr(sim, "run", run)
    t = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        main(["simulate", "--seeds", "60", "-p", "8", "--entries", "20", "--jobs", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 1 and time.monotonic() - t < 120
    assert len(err) == 1 and "seed 37" in err[0] and "Traceback" not in err[0]
    assert not _worker_pids()
