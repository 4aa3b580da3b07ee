"""The ``hzfast`` command line: the library's jobs from a shell.

Every sub-command prints a human-readable summary (rich tables) or, with ``--json``, one
JSON document on stdout for machines. One module per command group, each adding its
sub-commands with ``register``:

- :mod:`hzfast.cli.demo`: ``demo``, the main job (a table, keys placed on Spark, a what-if
  movement estimate);
- :mod:`hzfast.cli.table`: ``generate``, ``stamp`` and ``locate``, on one table;
- :mod:`hzfast.cli.plan`: ``plan``, arrangement + migration plan + schedule (``--plot``).

Shared helpers live in ``_output`` (printing) and ``_inputs`` (the table a command works
on). The command line uses hzfast's public API only; ``import hzfast`` does not import it.
"""
from __future__ import annotations

import argparse

import hzfast
from hzfast.cli import demo, ignite, plan, table

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``hzfast`` argument parser, with every sub-command.

    Returns
    -------
    argparse.ArgumentParser
        Sub-commands in the order of ``hzfast --help``: ``demo``, ``generate``, ``stamp``,
        ``locate``, ``plan``. Parsed arguments carry ``command`` and ``func`` (the command's
        ``cmd_*`` function).

    Examples
    --------
    >>> args = build_parser().parse_args(["stamp", "-p", "271", "--json"])
    >>> args.command, args.partitions, args.members, args.json, args.func.__name__
    ('stamp', 271, 10, True, 'cmd_stamp')
    """
    parser = argparse.ArgumentParser(
        prog="hzfast",
        description="Fast, bit-exact Hazelcast/Ignite partition tables: placement, stamps, "
                    "arrangement and migration plans.")
    parser.add_argument("--version", action="version", version=f"hzfast {hzfast.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (demo, table, plan, ignite):
        group.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``hzfast`` console script.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``hzfast``. Default: ``sys.argv[1:]``.

    Returns
    -------
    int
        The command's exit status (0).

    Raises
    ------
    SystemExit
        Status 2 with argparse's usage message for bad flags, and status 2 with
        ``hzfast COMMAND: error: ...`` when the library rejects a value (``ValueError``
        or ``TypeError``); ``--help`` and ``--version`` exit with 0.

    Examples
    --------
    >>> main(["stamp", "-p", "271", "-m", "3", "--json"])  # doctest: +ELLIPSIS
    {
      "partitions": 271,
      "stamp": ...,
      "stamp_hex_u64": "..."
    }
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)   # a command's cmd_* function
        return status
    except (ValueError, TypeError) as exc:
        parser.exit(2, f"hzfast {args.command}: error: {exc}\n")
