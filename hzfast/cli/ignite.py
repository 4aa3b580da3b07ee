"""``hzfast ignite``: Apache Ignite's view of a cluster (docs/design.md §9).

- ``hzfast ignite assign``: ``RendezvousAffinityFunction``'s node order for every partition
  (:func:`hzfast.ignite.assign`), with primaries and copies per node;
- ``hzfast ignite rebalance``: the coordinator's rebalance decision
  (:func:`hzfast.ignite.rebalance_plan`) for node x partition states and counters read from a
  ``.json`` or ``.npz`` file.

Errors are one line naming the flag, with exit status 2.
"""
from __future__ import annotations

import argparse
import io
import json
import zipfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypedDict, TypeVar

import numpy as np

import hzfast
from hzfast.cli._errors import one_line
from hzfast.cli._output import add_json_flag, emit, kv_table

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cmd_assign", "cmd_rebalance", "register"]

_ARRAYS = ("states", "counters", "history", "sizes")

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Move(TypedDict):
    """One rebalancing copy, as ``hzfast ignite rebalance`` prints it."""

    node: int
    partition: int
    kind: str
    supplier: int
    from_counter: int


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``ignite`` (with ``assign`` and ``rebalance``) to the ``hzfast`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned.

    Examples
    --------
    >>> parser = argparse.ArgumentParser(prog="hzfast")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["ignite", "assign", "-n", "3", "--json"])
    >>> args.nodes, args.partitions, args.backups, args.func.__name__
    (3, 1024, 1, 'cmd_assign')
    """
    group = subparsers.add_parser(
        "ignite", help="Apache Ignite: rendezvous assignment and rebalance decisions")
    sub = group.add_subparsers(dest="ignite_command", required=True, metavar="IGNITE_COMMAND")

    p = add_json_flag(sub.add_parser(
        "assign", help="RendezvousAffinityFunction: the node order of every partition"))
    p.add_argument("-n", "--nodes", type=int, default=None,
                   help="node count; consistent ids node-0 .. node-<n-1> (default 4)")
    p.add_argument("--consistent-ids", nargs="+", default=None, metavar="ID",
                   help="the nodes' consistent ids (strings), in topology order")
    p.add_argument("-p", "--partitions", type=int, default=hzfast.ignite.DEFAULT_PARTITIONS,
                   help="partitions (1..65000, default 1024)")
    p.add_argument("-b", "--backups", type=int, default=1, help="backups (default 1)")
    p.add_argument("--replicated", action="store_true", help="a REPLICATED cache")
    p.add_argument("--show", type=int, nargs="+", default=None, metavar="PARTITION",
                   help="partitions whose node order the summary prints (default 0..4)")
    p.set_defaults(func=cmd_assign)

    p = add_json_flag(sub.add_parser(
        "rebalance", help="the coordinator's rebalance decision (historical or full)"))
    p.add_argument("--input", required=True, metavar="FILE",
                   help=".json or .npz with states and counters (nodes x partitions), and "
                        "optionally history and sizes; states as codes or names")
    p.add_argument("--threshold", type=int, default=500,
                   help="walRebalanceThreshold: copies of at most this many entries reserve "
                        "no history (default 500)")
    p.add_argument("--prefer-history", action="store_true", help="preferWalRebalance")
    p.add_argument("--no-reset", action="store_true",
                   help="a server left: OWNING copies behind the maximum stay OWNING")
    p.add_argument("--limit", type=int, default=20,
                   help="rebalancing copies listed in the summary (default 20)")
    p.set_defaults(func=cmd_rebalance)


def _flag(flag: str, call: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """Run a library call; its ValueError/TypeError becomes one naming ``flag``."""
    try:
        return call(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{flag}: {exc}") from None


def cmd_assign(args: argparse.Namespace) -> int:
    """``hzfast ignite assign``: Ignite's rendezvous assignment.

    Parameters
    ----------
    args : argparse.Namespace
        ``nodes`` or ``consistent_ids``, ``partitions``, ``backups``, ``replicated``,
        ``show`` and ``json``.

    Returns
    -------
    int
        0. Prints ``partitions``, ``backups`` (``"REPLICATED"`` for a replicated cache),
        ``nodes`` (consistent ids), ``primaries`` and ``copies`` (per node), and
        ``assignment`` (per partition, node indices, the primary first; JSON only) or the
        ``--show`` rows.

    Raises
    ------
    ValueError
        A bad value, naming its flag (exit status 2 from :func:`hzfast.cli.main`).

    Examples
    --------
    >>> cmd_assign(argparse.Namespace(nodes=2, consistent_ids=None, partitions=4, backups=0,
    ...                               replicated=False, show=None, json=True))
    ... # doctest: +ELLIPSIS
    {
      "partitions": 4,
      "backups": 0,
      "nodes": [
        "node-0",
        "node-1"
      ],
      "primaries": [
        2,
        2
      ],
    ...
    0
    """
    if args.consistent_ids is not None and args.nodes is not None \
            and args.nodes != len(args.consistent_ids):
        raise ValueError(f"--nodes: {args.nodes} but --consistent-ids lists "
                         f"{len(args.consistent_ids)} ids")
    if args.consistent_ids is not None:
        ids = list(args.consistent_ids)
    else:
        n = 4 if args.nodes is None else args.nodes
        if n < 1:
            raise ValueError(f"--nodes: must be >= 1, got {n}")
        ids = [f"node-{i}" for i in range(n)]
    if args.backups < 0:
        raise ValueError(f"--backups: must be >= 0, got {args.backups}")
    backups = hzfast.ignite.REPLICATED if args.replicated else args.backups
    flag = "--consistent-ids" if args.consistent_ids is not None else "--nodes"
    _flag(flag, hzfast.ignite.assign, ids, partitions=1, backups=0)
    table = _flag("--partitions", hzfast.ignite.assign, ids, partitions=args.partitions,
                  backups=backups)
    show = list(range(min(5, args.partitions))) if args.show is None else args.show
    for p in show:
        if not 0 <= p < args.partitions:
            raise ValueError(f"--show: partition {p} is outside [0, {args.partitions})")
    primaries = np.bincount(table[:, 0], minlength=len(ids))
    copies = np.bincount(table.reshape(-1), minlength=len(ids))
    payload: dict[str, Any] = {"partitions": args.partitions,
                               "backups": "REPLICATED" if args.replicated else args.backups,
                               "nodes": ids, "primaries": primaries.tolist(),
                               "copies": copies.tolist()}

    def render(c: Console, pl: dict[str, Any]) -> None:
        from rich.table import Table
        c.print(kv_table("Ignite rendezvous assignment",
                         [("partitions", pl["partitions"]), ("backups", pl["backups"]),
                          ("nodes", len(ids)), ("row width", table.shape[1])]))
        t = Table(title="per node")
        for col in ("node", "consistent id", "primaries", "copies"):
            t.add_column(col)
        for i, cid in enumerate(ids):
            t.add_row(str(i), cid, f"{pl['primaries'][i]:,}", f"{pl['copies'][i]:,}")
        c.print(t)
        rows = Table(title="node order (primary first)")
        rows.add_column("partition")
        rows.add_column("nodes")
        for p in show:
            rows.add_row(str(p), " ".join(map(str, table[p].tolist())))
        c.print(rows)

    if args.json:
        payload["assignment"] = table.tolist()
    emit(args, payload, render)
    return 0


def _load(path: str | None) -> dict[str, Any]:
    """The arrays of ``--input``: a dict with states, counters and optional history, sizes."""
    if path is None:
        raise ValueError("--input: required (a .json or .npz file with states and counters)")
    data: Any
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ValueError(f"--input: {path}: {exc.strerror or exc}") from None
    try:
        if raw[:4] == b"PK\x03\x04":          # an .npz (zip) archive, whatever its name
            with np.load(io.BytesIO(raw), allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        else:
            data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ValueError(f"--input: {path}: not a .json or .npz file") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"--input: {path}: not a valid .json or .npz file "
                         f"({one_line(str(exc))})") from None
    if not isinstance(data, dict) or "states" not in data or "counters" not in data:
        raise ValueError(f"--input: {path} must hold 'states' and 'counters'")
    unknown = sorted(set(data) - set(_ARRAYS))
    if unknown:
        raise ValueError(f"--input: unknown entries {unknown} (expected {list(_ARRAYS)})")
    states = data["states"]
    if isinstance(states, list):            # names ("OWNING") allowed in JSON
        try:
            states = [[hzfast.ignite.PartitionState[s] if isinstance(s, str) else s
                       for s in row] if isinstance(row, list) else row for row in states]
        except KeyError as exc:
            raise ValueError(f"--input: unknown state name {exc}") from None
    data["states"] = np.asarray(states)
    return data


def cmd_rebalance(args: argparse.Namespace) -> int:
    """``hzfast ignite rebalance``: the coordinator's rebalance decision.

    Parameters
    ----------
    args : argparse.Namespace
        ``input`` (path), ``threshold``, ``prefer_history``, ``no_reset``, ``limit``, ``json``.

    Returns
    -------
    int
        0. Prints ``nodes``, ``partitions``, ``counts`` (copies per kind), ``max_counter``
        (per partition; JSON only) and ``rebalance``: every copy that rebalances, as
        ``node``, ``partition``, ``kind``, ``supplier``, ``from_counter``.

    Raises
    ------
    ValueError
        A missing or unreadable ``--input`` or bad arrays in it, naming the flag.
    """
    data = _load(args.input)
    if args.limit < 0:
        raise ValueError(f"--limit: must be >= 0, got {args.limit}")
    plan = _flag("--input", hzfast.ignite.rebalance_plan, data["states"], data["counters"],
                 history=data.get("history"), sizes=data.get("sizes"),
                 threshold=args.threshold, prefer_history=args.prefer_history,
                 reset=not args.no_reset)
    nodes, parts = np.nonzero(plan.rebalance.T)      # partition-major order
    nodes, parts = parts, nodes
    kinds = [hzfast.ignite.RebalanceKind(k).name for k in plan.rebalance[nodes, parts]]
    moves: list[_Move] = [{"node": int(n), "partition": int(p), "kind": k,
              "supplier": int(plan.supplier[n, p]), "from_counter": int(plan.from_counter[n, p])}
             for n, p, k in zip(nodes.tolist(), parts.tolist(), kinds)]
    payload: dict[str, Any] = {"nodes": int(plan.rebalance.shape[0]),
                               "partitions": int(plan.rebalance.shape[1]),
                               "counts": plan.counts()}

    def render(c: Console, pl: dict[str, Any]) -> None:
        from rich.table import Table
        c.print(kv_table("Ignite rebalance decision",
                         [("nodes", pl["nodes"]), ("partitions", pl["partitions"])]
                         + [(f"{k.lower()} copies", v) for k, v in pl["counts"].items()]))
        t = Table(title=f"rebalancing copies (first {min(args.limit, len(moves))} of "
                        f"{len(moves)})")
        for col in ("node", "partition", "kind", "supplier", "from counter"):
            t.add_column(col)
        for m in moves[:args.limit]:
            t.add_row(str(m["node"]), str(m["partition"]), m["kind"], str(m["supplier"]),
                      str(m["from_counter"]))
        c.print(t)

    if args.json:
        payload["max_counter"] = plan.max_counter.tolist()
        payload["rebalance"] = moves
    emit(args, payload, render)
    return 0
