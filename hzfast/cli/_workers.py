"""Forked worker processes with a bounded shutdown, for ``hzfast simulate --jobs``.

``multiprocessing.Pool`` can hang in ``terminate()`` (CPython issues #78178 and #96995):
its task and result handler threads share queues and locks with the workers it kills. A
CI run of ``simulate --jobs`` hung there once. Here each worker has a pipe of its own and
nothing else: the parent hands out one task at a time, reads answers with
``multiprocessing.connection.wait``, and at the end asks idle workers to exit and kills
(SIGKILL) any that do not within a second; when it stops early, the busy workers are
killed at once. Every wait is bounded; no lock is shared, so killing a worker cannot
leave one held.

A task that raises sends its exception back (or, when it would not survive a pickle
round trip, a ``RuntimeError`` with its type and text), and the parent raises it; a
worker that dies is a ``RuntimeError`` naming its exit code.
"""
from __future__ import annotations

import multiprocessing
import pickle
import signal
import traceback
from collections.abc import Callable, Generator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, cast

_JOIN_SECONDS = 1.0     # how long an asked-to-exit worker gets before it is killed


def _serve(conn: Connection, fn: Callable[[Any], Any]) -> None:
    """A worker: answer ``(True, fn(task))`` or ``(False, exception)`` until told to stop
    (``None``) or the parent goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's to handle
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            answer: tuple[bool, Any] = (True, fn(task))
        except Exception as exc:                       # sent back; the parent raises it
            answer = (False, (_portable(exc), traceback.format_exc()))
        try:
            conn.send(answer)
        except (BrokenPipeError, ConnectionError):
            return
        except Exception as exc:                       # an answer that cannot be pickled
            conn.send((False, (RuntimeError(f"a task's answer could not be sent back: "
                                            f"{type(exc).__name__}: {exc}"), "")))


class WorkerTraceback(Exception):
    """The traceback of a task's exception in its worker: the ``__cause__`` of the
    exception :func:`ordered_map` raises, so a traceback printed in the parent shows
    where in the worker it happened."""

    def __str__(self) -> str:
        return f"\n\nin the worker:\n{self.args[0]}" if self.args else ""


def _portable(exc: Exception) -> Exception:
    """``exc`` when it survives a pickle round trip (as the parent will unpickle it), else
    a RuntimeError with its type and text."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def ordered_map(fn: Callable[[Any], Any], tasks: Sequence[Any],
                jobs: int) -> Generator[Any, None, None]:
    """``fn(task)`` for each task, computed in ``jobs`` forked workers, yielded in task
    order. Closing the iterator early (``break``) kills the workers still busy.

    Raises
    ------
    Exception
        What ``fn`` raised in a worker, for the earliest such task reached in order; its
        ``__cause__`` is a :class:`WorkerTraceback` with the worker's traceback.
    RuntimeError
        A worker died (its exit code is in the message).
    """
    ctx = multiprocessing.get_context("fork")     # workers run the code this process loaded
    workers: list[tuple[Any, Connection]] = []
    busy: dict[Connection, tuple[int, Any]] = {}         # conn -> (task index, process)
    try:
        for _ in range(max(1, min(jobs, len(tasks)))):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(child, fn), daemon=True)
            p.start()
            child.close()
            workers.append((p, parent))
        done: dict[int, tuple[bool, Any]] = {}
        given = 0
        for p, conn in workers:
            if given < len(tasks):
                _give(conn, p, tasks[given])
                busy[conn] = (given, p)
                given += 1
        for want in range(len(tasks)):
            while want not in done:
                for ready in wait(list(busy)):
                    conn = cast(Connection, ready)
                    i, p = busy.pop(conn)
                    try:
                        done[i] = conn.recv()
                    except (EOFError, OSError):
                        raise _died(p) from None
                    if given < len(tasks):
                        _give(conn, p, tasks[given])
                        busy[conn] = (given, p)
                        given += 1
            ok, value = done.pop(want)
            if not ok:
                error, where = value
                raise error from (WorkerTraceback(where) if where else None)
            yield value
    finally:
        _stop(workers, [p for _, p in busy.values()])


def _give(conn: Connection, p: Any, task: Any) -> None:
    try:
        conn.send(task)
    except (BrokenPipeError, OSError):
        raise _died(p) from None


def _died(p: Any) -> RuntimeError:
    p.join(_JOIN_SECONDS)
    return RuntimeError(f"a simulation worker (pid {p.pid}) died (exit code {p.exitcode})")


def _stop(workers: list[tuple[Any, Connection]], busy: list[Any]) -> None:
    """Kill the ``busy`` workers (their answers are not wanted), ask the idle ones to
    exit, wait at most about a second each, and kill (by PID) any still running."""
    for p in busy:
        p.kill()
    for p, conn in workers:
        if p not in busy:
            try:
                conn.send(None)    # an idle worker reads it at once and returns
            except (BrokenPipeError, OSError):
                pass
    for p, _ in workers:
        p.join(_JOIN_SECONDS)
        if p.exitcode is None:
            p.kill()
            p.join(_JOIN_SECONDS)
    for _, conn in workers:
        conn.close()
