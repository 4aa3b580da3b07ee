"""The table a command works on: the flags that name it, and loading or generating it."""
from __future__ import annotations

import argparse

import hzfast
from hzfast.members import Members
from hzfast.table import PartitionTable

__all__ = ["add_table_args", "balanced_table", "load_or_generate"]


def add_table_args(parser: argparse.ArgumentParser, *, members: int = 10) -> None:
    """Add ``--table``, ``-p``, ``-m`` and ``-r``: a saved table, or the one to generate.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The sub-command's parser.
    members : int, default 10
        Default of ``-m/--members``, also shown in its help.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_table_args(p)
    >>> vars(p.parse_args([]))
    {'table': None, 'partitions': 20000, 'members': 10, 'replicas': None}
    """
    parser.add_argument("--table", help="a table saved by `hzfast generate` (.npz); "
                        "otherwise a balanced table is generated")
    parser.add_argument("-p", "--partitions", type=int, default=20_000,
                        help="partitions of the generated table (default 20000)")
    parser.add_argument("-m", "--members", type=int, default=members,
                        help=f"members of the generated table (default {members})")
    parser.add_argument("-r", "--replicas", type=int, default=None,
                        help="replicas per partition (default min(members, 7))")


def balanced_table(partitions: int, members: int, replicas: int | None) -> PartitionTable:
    """A balanced table for ``members`` ordinary members, arranged from empty.

    Parameters
    ----------
    partitions : int
        Partition count.
    members : int
        Member count; the members are ``Members.from_count(members)``.
    replicas : int or None
        Replicas per partition; ``None`` means ``min(members, hzfast.MAX_REPLICA_COUNT)``.

    Returns
    -------
    PartitionTable
        ``hzfast.arrange`` of the empty table, with all-zero versions. The same arguments
        give the same table.

    Raises
    ------
    ValueError
        From the library, naming the argument (no partitions, no members, ...).

    Examples
    --------
    >>> t = balanced_table(271, 9, None)
    >>> t.partition_count, t.replica_count, t.member_count
    (271, 7, 9)
    >>> t == balanced_table(271, 9, 7)
    True
    """
    m = Members.from_count(members)
    R = min(members, hzfast.MAX_REPLICA_COUNT) if replicas is None else replicas
    target = hzfast.arrange(PartitionTable.empty(partitions, R, m), m, replica_count=R)
    return PartitionTable(target, None, m)


def load_or_generate(args: argparse.Namespace) -> PartitionTable:
    """The table named by :func:`add_table_args`' flags.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed flags: ``args.table`` (a path saved by ``hzfast generate``) if given and
        non-empty, else ``args.partitions``, ``args.members``, ``args.replicas``.

    Returns
    -------
    PartitionTable
        The loaded table, or :func:`balanced_table` of the flags.

    Examples
    --------
    >>> ns = argparse.Namespace(table=None, partitions=271, members=3, replicas=2)
    >>> load_or_generate(ns).replicas.shape
    (271, 2)
    """
    if getattr(args, "table", None):
        return PartitionTable.load(args.table)
    return balanced_table(args.partitions, args.members, args.replicas)
