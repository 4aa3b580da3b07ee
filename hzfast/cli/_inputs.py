"""What a command reads: tables, members files, plans and sizes, each checked and named.

Every reader turns a problem into one :class:`~hzfast.cli._errors.UserError` naming the flag
and the file (missing, a directory, unreadable, the wrong kind of file, corrupt or
truncated), and every size is checked against the memory available before anything that
large is allocated.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

import hzfast
from hzfast import persistence
from hzfast.cli._errors import UserError, flag, one_line
from hzfast.members import Members
from hzfast.migration.plan import MigrationPlan
from hzfast.table import PartitionTable

__all__ = ["MAX_MEMBERS", "PlanFile", "add_table_args", "available_memory", "balanced_table",
           "check_table_size", "load_members", "load_or_generate", "load_plan", "load_sizes",
           "load_table", "member_ids", "read_bytes"]

#: The most members a command generates or accepts (Hazelcast clusters have hundreds).
MAX_MEMBERS = 65_536   # the validator's MAX_MEMBER_COUNT
_PLAN_FILE_KEYS = ("base", "crashed", "members", "target_stamp")   # beside to_json()'s
_BYTES_PER_SLOT = 48   # arrange, plan and report keep a few (P, R) int32/int64 arrays alive
_TABLE_HELP = ("a table file: .npz (hzfast generate), JSON, or a persisted hz41/hzlegacy "
               "layout, recognised from its content; otherwise a balanced table is generated")


def add_table_args(parser: argparse.ArgumentParser, *, members: int = 10) -> None:
    """Add ``--table``, ``-p``, ``-m``, ``-r`` and ``--members-file``.

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
    {'table': None, 'partitions': 20000, 'members': 10, 'replicas': None, 'members_file': None}
    """
    parser.add_argument("--table", metavar="FILE", help=_TABLE_HELP)
    parser.add_argument("-p", "--partitions", type=int, default=20_000,
                        help="partitions of the generated table (default 20000)")
    parser.add_argument("-m", "--members", type=int, default=members,
                        help=f"members of the generated table (default {members})")
    parser.add_argument("-r", "--replicas", type=int, default=None,
                        help="replicas per partition (default min(members, 7))")
    parser.add_argument("--members-file", metavar="FILE", default=None,
                        help="the members, JSON or CSV (uuid, address, host, zone, lite, "
                             "group): they replace the table's registry, or make the "
                             "generated table's members (then -m is their count) "
                             "(default: none)")


def available_memory() -> int:
    """Bytes of memory available now (physical pages free plus reclaimable), best effort."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):   # pragma: no cover - not on Linux
        return 2**40


def check_table_size(partitions: int, replicas: int | None, members: int, *,
                     partitions_flag: str = "-p/--partitions",
                     members_flag: str = "-m/--members",
                     replicas_flag: str = "-r/--replicas") -> int:
    """Check a table's sizes before anything is allocated; return the replica count.

    Raises
    ------
    UserError
        A count out of range, or a table that would not fit in the memory available,
        naming the flag.

    Examples
    --------
    >>> check_table_size(20_000, None, 10)
    7
    """
    if partitions < 1 or partitions > 2**31 - 1:
        raise UserError(f"{partitions_flag}: must be in 1..2147483647, got {partitions:,}")
    if members < 1:
        raise UserError(f"{members_flag}: must be >= 1, got {members}")
    if members > MAX_MEMBERS:
        raise UserError(f"{members_flag}: at most {MAX_MEMBERS:,} members, got {members:,}")
    R = min(members, hzfast.MAX_REPLICA_COUNT) if replicas is None else replicas
    if not 1 <= R <= hzfast.MAX_REPLICA_COUNT:
        raise UserError(f"{replicas_flag}: must be in 1..{hzfast.MAX_REPLICA_COUNT}, got {R}")
    need = partitions * R * _BYTES_PER_SLOT
    have = available_memory()
    if need > have:
        from hzfast.cli._output import human_bytes
        raise UserError(f"{partitions_flag}: a {partitions:,} x {R} table needs about "
                        f"{human_bytes(need)} of memory; {human_bytes(have)} is available")
    return R


def balanced_table(partitions: int, members: int | Members, replicas: int | None
                   ) -> PartitionTable:
    """A balanced table for ``members``, arranged from empty (sizes checked first).

    Parameters
    ----------
    partitions : int
        Partition count.
    members : int or Members
        Member count (``Members.from_count``) or a registry.
    replicas : int or None
        Replicas per partition; ``None`` means ``min(members, hzfast.MAX_REPLICA_COUNT)``.

    Returns
    -------
    PartitionTable
        ``hzfast.arrange`` of the empty table, with all-zero versions. The same arguments
        give the same table.

    Raises
    ------
    UserError
        Sizes out of range or too large for memory, naming the flag.

    Examples
    --------
    >>> t = balanced_table(271, 9, None)
    >>> t.partition_count, t.replica_count, t.member_count
    (271, 7, 9)
    >>> t == balanced_table(271, 9, 7)
    True
    """
    m = members if isinstance(members, Members) else None
    count = len(m) if m is not None else int(members)   # type: ignore[arg-type]
    R = check_table_size(partitions, replicas, count)
    if m is None:
        m = Members.from_count(count)
    with flag("--members-file"):
        target = hzfast.arrange(PartitionTable.empty(partitions, R, m), m, replica_count=R)
    return PartitionTable(target, None, m)


def read_bytes(path: str, name: str) -> bytes:
    """The content of ``path``; OS errors become a UserError naming ``name`` and the file."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise UserError(f"{name}: {path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{name}: {path}: is a directory, not a file") from None
    except PermissionError:
        raise UserError(f"{name}: {path}: permission denied") from None
    except OSError as exc:
        raise UserError(f"{name}: {path}: {exc.strerror or exc}") from None


class _NamedBytes(io.BytesIO):
    """An in-memory file with the ``name`` of the file it was read from."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name


def load_table(path: str, name: str = "--table") -> PartitionTable:
    """Read a table file of any format hzfast knows (detected from its content).

    Raises
    ------
    UserError
        The file is missing or unreadable, not a table, corrupt or truncated, or holds an
        invalid table; the message names ``name`` and the file.
    """
    if os.path.exists(path) and not os.path.isdir(path):
        size = os.path.getsize(path)
        have = available_memory()
        if size * 8 > have:
            raise UserError(f"{name}: {path}: {size:,} bytes is too large for the memory "
                            f"available")
    data = read_bytes(path, name)
    with flag(name, path):
        fmt = persistence.detect_format(data)
        if fmt == "npz":                    # (named: messages say which file)
            return PartitionTable.load(_NamedBytes(data, path))
        if fmt == "json":
            return persistence.table_from_json(data)
        return persistence.from_bytes(data, fmt)


def load_members(path: str, name: str = "--members-file", first_index: int = 0) -> Members:
    """Read a members file: JSON (a list of member objects, ``{"members": [...]}`` or the
    ``Members.to_dict`` columns) or CSV with a header row naming some of ``uuid``,
    ``address`` (required), ``host``, ``zone``, ``lite``, ``group``.

    ``first_index`` numbers the members for the defaults of missing uuids and groups (the
    members of a ``--join`` file follow the table's).

    Raises
    ------
    UserError
        Unreadable, neither JSON nor CSV, a member without an address, an unknown column,
        duplicate addresses or uuids; naming ``name`` and the file.
    """
    data = read_bytes(path, name)
    with flag(name, path):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ValueError("not a text file (JSON or CSV expected)") from None
        if not text.strip():
            raise ValueError("empty file")
        if text.lstrip()[:1] in "[{":
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not valid JSON: {exc}") from None
            if isinstance(doc, dict) and "members" in doc:
                doc = doc["members"]
            if isinstance(doc, dict):
                if "addresses" not in doc:
                    raise ValueError("a JSON object needs 'members' or 'addresses'")
                return Members.from_dict(doc)
            if not isinstance(doc, list):
                raise ValueError("JSON members must be a list of objects")
            members = persistence.members_from_records(doc, first_index)
        else:
            reader = csv.DictReader(io.StringIO(text))
            if not reader.fieldnames or "address" not in [f.strip() for f in
                                                          reader.fieldnames]:
                raise ValueError("not a members file: a CSV needs a header row with an "
                                 "'address' column")
            rows = [{k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
                    for row in reader]
            members = persistence.members_from_records(rows, first_index)
        if len(members) == 0:
            raise ValueError("no members")
        for i, address in enumerate(members.addresses):
            _check_address(address, i)
        if len(members) > MAX_MEMBERS:
            raise ValueError(f"{len(members):,} members (at most {MAX_MEMBERS:,})")
        return members


def _check_address(address: str, i: int) -> None:
    """A member's address must be ``host:port`` (``[v6]:port`` for IPv6), port 1..65535.

    Examples
    --------
    >>> _check_address("10.0.0.1", 0)
    Traceback (most recent call last):
    ...
    ValueError: member 0: address '10.0.0.1' is not host:port
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or host.endswith(":") or not port.isdigit():
        raise ValueError(f"member {i}: address {address!r} is not host:port")
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"member {i}: address {address!r}: port {port} is not in 1..65535")


def load_or_generate(args: argparse.Namespace) -> PartitionTable:
    """The table named by :func:`add_table_args`' flags.

    ``--table`` if given (with ``--members-file`` replacing its registry), else a balanced
    table of ``-p`` partitions for ``--members-file``'s members or ``-m`` plain members.

    Raises
    ------
    UserError
        As :func:`load_table`, :func:`load_members` and :func:`check_table_size`.

    Examples
    --------
    >>> ns = argparse.Namespace(table=None, partitions=271, members=3, replicas=2)
    >>> load_or_generate(ns).replicas.shape
    (271, 2)
    """
    members_file = getattr(args, "members_file", None)
    members = load_members(members_file) if members_file else None
    if getattr(args, "table", None):
        table = load_table(args.table)
        if members is not None:
            with flag("--members-file", members_file):
                if len(members) <= int(table.replicas.max(initial=-1)):
                    raise ValueError(f"{len(members)} members, but the table uses member "
                                     f"index {int(table.replicas.max())}")
                table = table.replace(members=members)
        return table
    return balanced_table(args.partitions, members if members is not None else args.members,
                          args.replicas)


def member_ids(ids: list[str], members: Members, name: str) -> list[int]:
    """Member indices of ``ids`` (each an index, an address or a uuid), in order.

    Raises
    ------
    UserError
        An id that names no member, or a member named twice.

    Examples
    --------
    >>> member_ids(["0", "127.0.0.1:5703", "00000000-0000-0000-0000-000000000002"],
    ...            Members.from_count(3), "--leave")
    [0, 2, 1]
    """
    out: list[int] = []
    for raw in ids:
        key = raw.strip()
        if key.lstrip("-").isdigit():
            i = int(key)
            if not 0 <= i < len(members):
                raise UserError(f"{name}: member index {i} is outside 0..{len(members) - 1}")
        else:
            try:
                i = members.index_of(key)
            except KeyError:
                raise UserError(f"{name}: no member has address or uuid {key!r} (the table "
                                f"has {len(members)} members)") from None
        if i in out:
            raise UserError(f"{name}: member {raw!r} is named twice")
        out.append(i)
    return out


class PlanFile:
    """A plan file written by ``hzfast plan``: the :class:`MigrationPlan` and what it was
    made from.

    ``MigrationPlan.to_json()``'s document with four more keys, all optional when reading
    (a bare ``MigrationPlan.to_json()`` file is a plan too): ``base`` (``stamp``,
    ``partitions``, ``replicas``, ``members`` of the table the plan was made for),
    ``crashed`` (member indices removed by a repair before migrating), ``members`` (the
    registry after the change) and ``target_stamp`` (the stamp once the plan is applied).
    """

    def __init__(self, plan: MigrationPlan, extra: dict[str, Any]) -> None:
        self.plan = plan
        self.base: dict[str, int] | None = extra.get("base")
        self.crashed: list[int] = list(extra.get("crashed") or [])
        members = extra.get("members")
        self.members = Members.from_dict(members) if isinstance(members, dict) else None
        self.target_stamp: int | None = extra.get("target_stamp")

    @staticmethod
    def dumps(plan: MigrationPlan, base: PartitionTable, crashed: list[int],
              members: Members, target_stamp: int) -> str:
        """The file's text for ``plan`` made from ``base``."""
        doc = json.loads(plan.to_json())
        doc["base"] = {"stamp": base.stamp, "partitions": base.partition_count,
                       "replicas": base.replica_count, "members": base.member_count}
        doc["crashed"] = crashed
        doc["members"] = members.to_dict()
        doc["target_stamp"] = target_stamp
        return json.dumps(doc, separators=(",", ":"))


def load_plan(path: str, name: str = "--plan") -> PlanFile:
    """Read a plan file (see :class:`PlanFile`).

    Raises
    ------
    UserError
        Unreadable, not JSON, not a plan, or inconsistent extra keys; naming the file.
    """
    data = read_bytes(path, name)
    with flag(name, path):
        if data[:4] == b"PK\x03\x04" or data.lstrip()[:1] != b"{":
            raise ValueError("not a plan (a JSON document written by hzfast plan -o)")
        try:
            doc = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"not valid JSON: {exc}") from None
        if not isinstance(doc, dict) or "columns" not in doc:
            kind = "a table" if isinstance(doc, dict) and "replicas" in doc else "not a plan"
            raise ValueError(f"{kind}, not a migration plan (no 'columns')")
        core = {k: v for k, v in doc.items() if k not in _PLAN_FILE_KEYS}
        try:
            plan = MigrationPlan.from_json(json.dumps(core))
        except (KeyError, IndexError, OverflowError) as exc:
            raise ValueError(f"not a MigrationPlan document: {one_line(str(exc))}") from None
        base = doc.get("base")
        if base is not None and not (isinstance(base, dict) and all(
                isinstance(base.get(k), int) for k in ("stamp", "partitions", "replicas"))):
            raise ValueError("'base' must hold integer stamp, partitions and replicas")
        crashed = doc.get("crashed") or []
        if not isinstance(crashed, list) or not all(
                isinstance(c, int) and c >= 0 for c in crashed):
            raise ValueError("'crashed' must be a list of member indices")
        return PlanFile(plan, doc)


def load_sizes(path: str, partitions: int, name: str = "--sizes") -> NDArray[np.float64]:
    """Bytes per partition from ``.npy`` (or a JSON list): one finite value >= 0 each.

    Raises
    ------
    UserError
        Unreadable, not an array of numbers, the wrong length, negative or not finite.
    """
    data = read_bytes(path, name)
    with flag(name, path):
        if data.lstrip()[:1] == b"[":
            try:
                arr = np.asarray(json.loads(data), dtype=np.float64)
            except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
                raise ValueError(f"not a JSON list of numbers: {exc}") from None
        else:
            try:
                arr = np.load(io.BytesIO(data), allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise ValueError(f"not a .npy array or JSON list: {one_line(str(exc))}") \
                    from None
            if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iuf":
                raise ValueError("the array must hold numbers")
            arr = arr.astype(np.float64)
        if arr.shape != (partitions,):
            raise ValueError(f"needs one size per partition ({partitions:,}), got shape "
                             f"{arr.shape}")
        if not np.isfinite(arr).all() or (arr < 0).any():
            raise ValueError("sizes must be finite and >= 0")
        return arr
