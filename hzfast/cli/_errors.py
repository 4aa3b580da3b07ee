"""User errors of the command line: one line naming the flag or file, exit status 2.

:class:`UserError` is what a command raises for anything the person typing can fix (a
missing file, a bad value, a plan for another table). :func:`flag` turns the library's
``ValueError``/``TypeError`` inside a block into a ``UserError`` that names the flag the
value came from. :class:`Parser` makes argparse's own complaints one line too.
:func:`hzfast.cli.main` prints ``hzfast COMMAND: error: MESSAGE`` and exits with 2; only
``--debug`` shows a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

__all__ = ["Formatter", "Parser", "UserError", "check_output_path", "flag"]


class UserError(Exception):
    """A mistake in the command line or its files: printed as one line, exit status 2.

    Parameters
    ----------
    message : str
        What is wrong, starting with the flag or file it concerns (``"--plan: p.json: ..."``).
    status : int, default 2
        Exit status.
    """

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


@contextlib.contextmanager
def flag(name: str, path: str | None = None) -> Iterator[None]:
    """Re-raise the library's ``ValueError``/``TypeError`` as a :class:`UserError` naming
    ``name`` (and ``path`` when the value came from a file).

    Examples
    --------
    >>> try:
    ...     with flag("--max-parallel"):
    ...         raise ValueError("max_parallel_migrations must be >= 1, got 0")
    ... except UserError as e:
    ...     print(e)
    --max-parallel: max_parallel_migrations must be >= 1, got 0
    """
    try:
        yield
    except (ValueError, TypeError) as exc:
        where = f"{name}: {path}: " if path else f"{name}: "
        raise UserError(where + one_line(str(exc))) from exc


def one_line(text: str) -> str:
    """``text`` with its line breaks folded into spaces (messages stay one line)."""
    return " ".join(text.split())


def check_output_path(path: str, name: str) -> str:
    """Check, before any work, that ``path`` can be written; return it.

    Raises
    ------
    UserError
        ``path`` is a directory, its directory does not exist, or it is not writable.
    """
    if not path:
        raise UserError(f"{name}: an empty path")
    if os.path.isdir(path):
        raise UserError(f"{name}: {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UserError(f"{name}: {path}: directory {parent} does not exist")
    if os.path.exists(path) and not os.access(path, os.W_OK) or \
            not os.path.exists(path) and not os.access(parent, os.W_OK):
        raise UserError(f"{name}: {path}: not writable")
    return path


class Formatter(argparse.HelpFormatter):
    """argparse's formatter, adding ``(default: X)`` to every option that has a default and
    does not say it already."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        # (identity, not ==: a default of 0 is shown; 0 == False)
        if ("default" in text or default is None or default is False
                or default is argparse.SUPPRESS
                or isinstance(action, (argparse._HelpAction, argparse._VersionAction))
                or not action.option_strings):
            return text
        shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else default
        return f"{text} (default: {shown})".strip()


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``hzfast CMD: error: ...``), status 2,
    and whose help shows every default. Sub-parsers are of this class too."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)   # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        prog = self.prog
        hint = f" (see {prog} --help)"
        self.exit(2, f"{prog}: error: {one_line(message)}{hint}\n")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise SystemExit(status)


def int_within(low: int, high: int) -> Any:
    """An argparse type: an integer in ``low..high`` (checked by the parser, so that a range
    error names the flag, not the library's argument)."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= v <= high:
            raise argparse.ArgumentTypeError(f"{v} is not in {low}..{high:,}")
        return v
    return parse
