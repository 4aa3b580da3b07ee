"""The ``hzfast`` command line: the library's jobs from a shell, and an offline what-if tool.

Every sub-command prints a human-readable summary (rich tables) or, with ``--json``, one
JSON document on stdout for machines. Every user error (a missing or unwritable file, a
file of the wrong kind, corrupt or truncated, an impossible size, a flag that does not
apply) is one line on stderr, ``hzfast COMMAND: error: FLAG-OR-FILE: what is wrong``, with
exit status 2; ``hzfast --debug ...`` (or ``--debug`` after the command) shows the
traceback instead.

Command groups, one module each, in the order of ``hzfast --help`` (:data:`COMMAND_GROUPS`):

- :mod:`hzfast.cli.demo`: ``demo``, the main job;
- :mod:`hzfast.cli.table`: ``generate``, ``stamp``, ``locate``, ``export``;
- :mod:`hzfast.cli.plan`: ``plan``, ``apply``, ``verify``, ``schedule`` (the workflow);
- :mod:`hzfast.cli.inspect`: ``diff``, ``report``, ``arrange``;
- :mod:`hzfast.cli.restart`: ``restart-decision``, ``restore`` (persisted tables);
- :mod:`hzfast.cli.ignite`: ``ignite assign``, ``ignite rebalance``;
- :mod:`hzfast.cli.simulate`: ``simulate`` (the protocol simulator);
- :mod:`hzfast.cli.simulate_spark`: ``simulate --spark`` (its flags, on ``simulate``);
- :mod:`hzfast.cli.node`: ``node``, ``cluster up|status|down``, ``chaos`` (real members).

**Adding a command group** (e.g. ``hzfast simulate``): write ``hzfast/cli/simulate.py``
with ``register(subparsers)`` adding its parsers, each with ``set_defaults(func=cmd_x)``
where ``cmd_x(args) -> int`` raises :class:`~hzfast.cli._errors.UserError` (or lets the
library's ``ValueError``/``TypeError`` out, ideally inside ``_errors.flag("--the-flag")``),
and add its module name to :data:`COMMAND_GROUPS`. Shared helpers: ``_inputs`` (tables,
members, plans, sizes, all checked), ``_output`` (JSON or rich, progress bars, humanized
numbers), ``_plots`` (charts), ``_errors`` (one-line errors). The command line uses
hzfast's public API; ``import hzfast`` does not import it.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

import hzfast
from hzfast.cli._errors import Parser, UserError, one_line

__all__ = ["COMMAND_GROUPS", "build_parser", "main"]

#: The modules of ``hzfast.cli`` that add sub-commands, in ``--help`` order.
COMMAND_GROUPS: tuple[str, ...] = ("demo", "table", "plan", "inspect", "restart", "ignite",
                                   "simulate", "simulate_spark", "node")


def _leaves(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every parser below ``parser`` that has no sub-commands of its own."""
    out: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                sub = _leaves(child)
                out.extend(sub if sub else [child])
    return out


def build_parser() -> argparse.ArgumentParser:
    """The ``hzfast`` argument parser, with every sub-command.

    Returns
    -------
    argparse.ArgumentParser
        Sub-commands of :data:`COMMAND_GROUPS`. Parsed arguments carry ``command``,
        ``func`` (the command's ``cmd_*`` function), ``prog_name`` (``"hzfast plan"``) and
        ``debug``.

    Examples
    --------
    >>> args = build_parser().parse_args(["stamp", "-p", "271", "--json"])
    >>> args.command, args.partitions, args.members, args.json, args.func.__name__
    ('stamp', 271, 10, True, 'cmd_stamp')
    """
    parser = Parser(
        prog="hzfast",
        description="Fast, bit-exact Hazelcast/Ignite partition tables: placement, stamps, "
                    "arrangement and migration plans.")
    parser.add_argument("--version", action="version", version=f"hzfast {hzfast.__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (also accepted after COMMAND)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_GROUPS:
        importlib.import_module(f"hzfast.cli.{name}").register(sub)
    for leaf in _leaves(parser):
        leaf.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="show the traceback of an error")
        leaf.set_defaults(prog_name=leaf.prog)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, except that an unknown flag after a command is reported
    by that command (``hzfast stamp: error: unrecognized arguments: --tabel``), not by
    ``hzfast``."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        prog = getattr(args, "prog_name", None)
        leaf = next((p for p in _leaves(parser) if p.prog == prog), parser)
        leaf.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the ``hzfast`` console script.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``hzfast``. Default: ``sys.argv[1:]``.

    Returns
    -------
    int
        The command's exit status: 0, or 1 where a command answers "no" (``verify``).

    Raises
    ------
    SystemExit
        Status 2 with one line ``hzfast COMMAND: error: ...`` for a user error: a bad flag
        (argparse), a :class:`~hzfast.cli._errors.UserError`, or a ``ValueError``/``TypeError``
        from the library; status 1 with one line for an unexpected error; 130 on Ctrl-C.
        ``--debug`` re-raises instead. ``--help`` and ``--version`` exit with 0.

    Examples
    --------
    >>> main(["stamp", "-p", "271", "-m", "3", "--json"])  # doctest: +ELLIPSIS
    {
      "partitions": 271,
      "stamp": ...,
      "stamp_hex_u64": "...",
      "version_sum": 0
    }
    0
    """
    parser = build_parser()
    args = _parse(parser, argv)
    prog = getattr(args, "prog_name", f"hzfast {args.command}")
    debug: bool = bool(getattr(args, "debug", False))
    try:
        status: int = args.func(args)   # a command's cmd_* function
        return status
    except BrokenPipeError:   # pragma: no cover - `hzfast ... | head`
        sys.stderr.close()
        return 0
    except (UserError, ValueError, TypeError, OSError) as exc:
        if debug:
            raise
        code = exc.status if isinstance(exc, UserError) else 2
        message = str(exc) if isinstance(exc, UserError) else _library_message(exc)
        parser.exit(code, f"{prog}: error: {one_line(message)}\n")
    except KeyboardInterrupt:
        if debug:
            raise
        parser.exit(130, f"{prog}: interrupted\n")
    except Exception as exc:
        if debug:
            raise
        parser.exit(1, f"{prog}: internal error: {type(exc).__name__}: "
                       f"{one_line(str(exc))} (run with --debug for the traceback)\n")


def _library_message(exc: BaseException) -> str:
    """A library error not wrapped by a command: its message, with the file for OSError."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    text: Any = exc
    return str(text) or type(exc).__name__      # (a bare TimeoutError says nothing)
