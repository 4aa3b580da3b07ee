"""What every command prints: a rich summary for people, or one JSON document with ``--json``.

rich is imported inside the functions that draw, never when the module is imported.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:   # rich is imported when a command prints, not with hzfast.cli
    from rich.console import Console
    from rich.table import Table

__all__ = ["add_json_flag", "busy", "console", "emit", "human_bytes", "human_count",
           "human_seconds", "json_default", "kv_table", "ratio"]


def add_json_flag(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give a sub-command the ``--json`` flag every command has.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The sub-command's parser; ``--json`` becomes its first option after ``-h``.

    Returns
    -------
    argparse.ArgumentParser
        ``parser`` itself, so that the call can wrap ``add_parser``.

    Examples
    --------
    >>> p = add_json_flag(argparse.ArgumentParser())
    >>> p.parse_args(["--json"]).json, p.parse_args([]).json
    (True, False)
    """
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document on stdout instead of tables")
    return parser


def console() -> Console:
    """A rich console on standard output.

    Returns
    -------
    rich.console.Console
        A new console writing to ``sys.stdout`` (as it is when printing).
    """
    from rich.console import Console
    return Console(stderr=False)


def emit(args: argparse.Namespace, payload: dict[str, Any],
         render: Callable[[Console, dict[str, Any]], None]) -> None:
    """Print a command's result: ``payload`` as JSON with ``--json``, else ``render`` it.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line; only ``args.json`` is read.
    payload : dict
        The result. With ``--json`` it is written to stdout as one indented JSON document
        (numpy scalars and arrays converted by :func:`json_default`) and a newline.
    render : callable
        ``render(console, payload)`` prints the human-readable summary otherwise.

    Examples
    --------
    >>> emit(argparse.Namespace(json=True), {"partitions": np.int64(271)}, None)
    {
      "partitions": 271
    }
    """
    if args.json:
        json.dump(payload, sys.stdout, indent=2, default=json_default)
        sys.stdout.write("\n")
    else:
        render(console(), payload)


def json_default(o: Any) -> Any:
    """Convert the numpy values a payload may hold into JSON's types (``json.dump(default=)``).

    Parameters
    ----------
    o : object
        A value ``json`` cannot serialise by itself.

    Returns
    -------
    int, float or list
        ``int`` for numpy integers, ``float`` for numpy floats, nested lists for arrays.

    Raises
    ------
    TypeError
        For any other type, naming it.

    Examples
    --------
    >>> json.dumps({"n": np.int32(7), "x": np.float64(0.5), "a": np.arange(3)},
    ...            default=json_default)
    '{"n": 7, "x": 0.5, "a": [0, 1, 2]}'
    >>> json_default(object())
    Traceback (most recent call last):
    ...
    TypeError: not JSON serialisable: object
    """
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def kv_table(title: str, rows: Iterable[tuple[Any, Any]]) -> Table:
    """A two-column rich table of ``(what, value)`` rows, without a header.

    Integers are printed with thousands separators, except booleans and rows whose name
    contains ``stamp`` (a stamp is an identifier, printed plainly); other values by ``str``.

    Parameters
    ----------
    title : str
        The table's title.
    rows : iterable of (key, value)
        The rows, in order; keys are printed with ``str``.

    Returns
    -------
    rich.table.Table
        The table, ready for ``console.print``.

    Examples
    --------
    >>> from rich.console import Console
    >>> c = Console(width=40, color_system=None)
    >>> rows = [("partitions", 20000), ("stamp", -12345), ("ok", True)]
    >>> c.print(kv_table("t", rows))  # doctest: +NORMALIZE_WHITESPACE
                  t
    ┌────────────┬────────┐
    │ partitions │ 20,000 │
    │ stamp      │ -12345 │
    │ ok         │   True │
    └────────────┴────────┘
    """
    from rich.table import Table
    t = Table(title=title, show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value", justify="right")
    for k, v in rows:
        plain = "stamp" in str(k) or isinstance(v, bool)
        t.add_row(str(k), f"{v:,}" if isinstance(v, (int, np.integer)) and not plain else str(v))
    return t


def human_bytes(n: float) -> str:
    """Bytes in decimal units, three significant figures at most.

    Examples
    --------
    >>> human_bytes(0), human_bytes(999), human_bytes(1e9), human_bytes(20_480_000)
    ('0 B', '999 B', '1.0 GB', '20.5 MB')
    """
    n = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 999.5 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}" if abs(n) >= 10 \
                else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")   # pragma: no cover


def human_seconds(s: float) -> str:
    """A duration: ``1.86 s``, ``45 ms``, ``3 min 12 s``, ``2 h 05 min``.

    Examples
    --------
    >>> human_seconds(1.857), human_seconds(0.045), human_seconds(192.4), human_seconds(7500)
    ('1.86 s', '45 ms', '3 min 12 s', '2 h 05 min')
    """
    s = float(s)
    if not math.isfinite(s):
        return str(s)
    if s < 1:
        return f"{s * 1e3:.3g} ms" if s >= 0.001 else f"{s * 1e6:.3g} µs" if s > 0 else "0 s"
    if s < 60:
        return f"{s:.3g} s"
    if s < 3600:
        m, sec = divmod(round(s), 60)
        return f"{m} min {sec} s"
    h, rest = divmod(round(s), 3600)
    return f"{h} h {rest // 60:02d} min"


def human_count(n: int) -> str:
    """An integer with thousands separators: ``20,000``."""
    return f"{int(n):,}"


def ratio(x: float, digits: int = 3) -> float:
    """A ratio rounded for people (``inf`` and ``nan`` kept)."""
    return round(float(x), digits) if math.isfinite(x) else float(x)


@contextlib.contextmanager
def busy(description: str, *, total: float | None = None) -> Iterator[Callable[..., None]]:
    """A transient progress bar on standard error while a long step runs.

    It is drawn only when standard error is a terminal, so ``--json`` output and pipes stay
    clean. The block receives ``advance(n=1, description=None)``; without ``total`` the bar
    pulses.

    Examples
    --------
    >>> with busy("arranging", total=2) as advance:
    ...     advance()
    ...     advance(description="planning")
    """
    if not sys.stderr.isatty():
        yield lambda *a, **k: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: float = 1, description: str | None = None) -> None:
            if description is not None:
                bar.update(task, description=description)
            if total is not None:
                bar.update(task, advance=n)
        yield advance
