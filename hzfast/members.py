"""The member registry: who the member indices of a replica table are."""
from __future__ import annotations

import functools
import itertools
import json
import math
import uuid as _uuid
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hzfast._check import check_int

__all__ = ["Member", "Members"]

#: The most members a registry may have. Every member costs a few hundred bytes of Python
#: objects; a count beyond this (say ``Members.from_count(10**12)``, or a table whose largest
#: member index is ``2**31 - 1``) is refused before anything is built, instead of exhausting
#: memory. Member indices of tables are int32; real clusters have at most a few thousand.
MAX_MEMBERS = 1 << 20

_T = TypeVar("_T")
_V = TypeVar("_V")


@dataclass(frozen=True)
class Member:
    """One cluster member (a value object; see :class:`Members`)."""

    index: int
    uuid: str
    address: str
    host: str
    zone: str
    lite: bool
    group: str


@functools.lru_cache(maxsize=32)
def _plain_members(n: int) -> Members:
    """``Members.from_count(n)``, cached (Members is immutable): a plain int member count
    is coerced on every hot call (arrange, arrangement_report)."""
    return Members.from_count(n)


def _default_uuid(i: int) -> str:
    return str(_uuid.UUID(int=i + 1))


def _lite_flag(value: object, name: str) -> bool:
    """A lite flag: a bool (Python or numpy), or the integer 0 or 1. Anything else,
    the string ``"false"`` above all (truthy!), is refused rather than guessed."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and int(value) in (0, 1):
        return bool(value)
    raise TypeError(f"{name} must be a bool (or 0/1), got {type(value).__name__} "
                    f"{value!r}")


def _utf8(value: str, name: str) -> str:
    """``value`` if UTF-8 can encode it. A lone surrogate (``"\\udc80"``, as from
    ``os.fsdecode`` of bad bytes) cannot be written to JSON, Arrow or a file and read back
    as the same text (``json.loads`` joins an escaped high + low pair into one character),
    so it is refused here, where the name of the field is known."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{name} holds an unpaired surrogate {value[exc.start]!r} at "
                             f"position {exc.start}: member text must be valid Unicode "
                             f"(UTF-8 cannot encode it)") from None
    return value


def _group_label(value: object, name: str) -> str:
    """A custom group label: a str, or an int (stored as its decimal string)."""
    if isinstance(value, str):
        return _utf8(value, name)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return str(int(value))
    raise TypeError(f"{name} must be a str or an int, got {type(value).__name__} {value!r}")


def _text(value: object, name: str) -> str:
    """A text column's value as str (a uuid.UUID, an int port, ...); None is refused: it
    would silently become the label "None", shared by every member that lacks one."""
    if value is None:
        raise ValueError(f"{name} is None")
    return _utf8(str(value), name)


def _check_count(n: int, name: str) -> int:
    if n > MAX_MEMBERS:
        raise ValueError(f"{name} = {n} members is more than MAX_MEMBERS = {MAX_MEMBERS}")
    return n


class Members:
    """An immutable registry mapping member indices ``0..M-1`` to identities.

    Parameters
    ----------
    addresses : sequence of str
        One ``"host:port"`` address per member; its length is the member count.
    uuids : sequence of str, optional
        Member UUIDs (must be unique). Default: ``UUID(int=index + 1)``.
    hosts : sequence of str, optional
        Host of each member. Default: the host part of its address.
    zones : sequence of str, optional
        Availability zone of each member. Default: ``""`` (unknown).
    lite : sequence of bool, optional
        Lite members hold no partitions. Default: all False. Each flag must be a bool
        (Python or numpy) or the integer 0/1: a string such as ``"false"`` is refused.
    groups : sequence of str or int, optional
        Custom member-group label of each member (used by ``grouping="custom"``); an int
        is stored as its decimal string. Default: one group per member.

    Raises
    ------
    ValueError
        If a sequence has the wrong length, uuids/addresses repeat, a text holds an
        unpaired surrogate (UTF-8 cannot encode it), or there are more than
        :data:`MAX_MEMBERS` members.
    TypeError
        A lite flag that is not a bool or 0/1; a group label that is not a str or int.

    Examples
    --------
    >>> m = Members.from_count(3)
    >>> len(m), m[0].address
    (3, '127.0.0.1:5701')
    """

    __slots__ = ("_addresses", "_cache", "_groups", "_hosts", "_lite", "_uuids", "_zones")

    def __init__(self, addresses: Sequence[str], *, uuids: Sequence[str] | None = None,
                 hosts: Sequence[str] | None = None, zones: Sequence[str] | None = None,
                 lite: Sequence[bool] | None = None,
                 groups: Sequence[str | int] | None = None) -> None:
        if isinstance(addresses, (str, bytes)) or not isinstance(addresses, Iterable):
            raise TypeError("addresses must be a sequence of 'host:port' strings")
        # at most MAX_MEMBERS + 1 items are read, so a huge iterable fails before it fills
        # memory
        given = list(itertools.islice(addresses, MAX_MEMBERS + 1))
        n = len(given)
        if n > MAX_MEMBERS:
            raise ValueError(f"addresses holds more than MAX_MEMBERS = {MAX_MEMBERS} members")
        addrs = [_text(a, f"addresses[{i}]") for i, a in enumerate(given)]

        def column(values: Sequence[_V] | None, name: str, default: Callable[[int], _T],
                   conv: Callable[[_V, str], _T]) -> list[_T]:
            if values is None:
                return [default(i) for i in range(n)]
            if isinstance(values, (str, bytes)):
                raise TypeError(f"{name} must be a sequence, not a string")
            items = list(values)
            if len(items) != n:
                raise ValueError(f"{name} must have one entry per member ({n}), got {len(items)}")
            return [conv(v, f"{name}[{i}]") for i, v in enumerate(items)]

        text = _text
        self._addresses = tuple(addrs)
        self._uuids = tuple(column(uuids, "uuids", _default_uuid, text))
        self._hosts = tuple(column(hosts, "hosts", lambda i: addrs[i].rsplit(":", 1)[0], text))
        self._zones = tuple(column(zones, "zones", lambda i: "", text))
        self._lite = tuple(column(lite, "lite", lambda i: False, _lite_flag))
        self._groups = tuple(column(groups, "groups", lambda i: f"member-{i}", _group_label))
        self._cache: dict[Hashable, Any] = {}    # derived values (Members is immutable), see cached()
        if len(set(self._uuids)) != n:
            raise ValueError("uuids must be unique")
        if len(set(self._addresses)) != n:
            raise ValueError("addresses must be unique")

    # -- construction ------------------------------------------------------
    @classmethod
    def from_count(cls, n: int, *, lite: Sequence[bool] | None = None,
                   members_per_host: int = 1, zones: int = 0) -> Members:
        """Make ``n`` ordinary data members (for tests and demos).

        Member i gets address ``127.0.0.1:{5701+i}`` when ``members_per_host == 1``,
        else ``10.0.{h//256}.{h%256}:{5701 + i % members_per_host}`` with
        ``h = i // members_per_host``; with ``zones > 0``, member i is in zone
        ``f"zone-{i % zones}"``.

        Parameters
        ----------
        n : int
            Member count, ``0 <= n <=`` :data:`MAX_MEMBERS`.
        lite : sequence of bool, optional
            Lite flags, one per member.
        members_per_host : int, default 1
            Members sharing one host.
        zones : int, default 0
            Number of zones to spread members over round-robin (0 = none).

        Returns
        -------
        Members
        """
        n = check_int(n, "n", minimum=0, maximum=MAX_MEMBERS)
        per = check_int(members_per_host, "members_per_host", minimum=1)
        zones = check_int(zones, "zones", minimum=0)
        if per == 1:
            addrs = [f"127.0.0.1:{5701 + i}" for i in range(n)]
        else:
            addrs = [f"10.0.{(i // per) // 256}.{(i // per) % 256}:{5701 + i % per}" for i in range(n)]
        zs = [f"zone-{i % zones}" for i in range(n)] if zones else None
        return cls(addrs, zones=zs, lite=lite)

    @classmethod
    def coerce(cls, members: MembersLike, name: str = "members") -> Members:
        """Accept a :class:`Members` or an int n (n ordinary data members)."""
        if isinstance(members, Members):
            return members
        if isinstance(members, (int, np.integer)) and not isinstance(members, bool):
            if members < 0:
                raise ValueError(f"{name} must be >= 0 members, got {int(members)}")
            _check_count(int(members), name)
            if cls is Members and int(members) <= 4096:
                return _plain_members(int(members))   # immutable: safe to share
            return cls.from_count(int(members))
        raise TypeError(f"{name} must be a Members registry or an int member count, "
                        f"got {type(members).__name__}")

    def with_groups(self, groups: Sequence[str | int]) -> Members:
        """Return a copy whose custom group labels are ``groups`` (one per member)."""
        return Members(self._addresses, uuids=self._uuids, hosts=self._hosts,
                       zones=self._zones, lite=self._lite, groups=groups)

    def with_lite(self, lite: Sequence[bool]) -> Members:
        """Return a copy with new lite flags (one per member)."""
        return Members(self._addresses, uuids=self._uuids, hosts=self._hosts,
                       zones=self._zones, lite=lite, groups=self._groups)

    # -- access ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._addresses)

    @property
    def count(self) -> int:
        """Number of members (data and lite)."""
        return len(self._addresses)

    def __getitem__(self, i: int) -> Member:
        i = check_int(i, "index", minimum=-len(self), maximum=len(self) - 1) % max(len(self), 1)
        return Member(i, self._uuids[i], self._addresses[i], self._hosts[i], self._zones[i],
                      self._lite[i], self._groups[i])

    def __iter__(self) -> Iterator[Member]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Members):
            return NotImplemented
        return self._state() == other._state()

    def __hash__(self) -> int:
        return hash(self._state())

    def __repr__(self) -> str:
        lite = sum(self._lite)
        return f"Members(count={len(self)}, lite={lite})"

    def _state(self) -> tuple[tuple[object, ...], ...]:
        return (self._addresses, self._uuids, self._hosts, self._zones, self._lite, self._groups)

    @property
    def uuids(self) -> tuple[str, ...]:
        return self._uuids

    @property
    def addresses(self) -> tuple[str, ...]:
        return self._addresses

    @property
    def hosts(self) -> tuple[str, ...]:
        return self._hosts

    @property
    def zones(self) -> tuple[str, ...]:
        return self._zones

    @property
    def groups(self) -> tuple[str, ...]:
        return self._groups

    @property
    def lite(self) -> NDArray[np.bool_]:
        """ndarray[bool] of shape (M,): lite flags."""
        return np.array(self._lite, dtype=bool)

    def data_members(self) -> NDArray[np.int32]:
        """ndarray[int32]: indices of the non-lite members, ascending."""
        return np.flatnonzero(~self.lite).astype(np.int32)

    def cached(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()``, computed once per registry and ``key`` (a registry is immutable,
        so anything derived from it can be kept). Callers must not mutate the result."""
        try:
            cached: _T = self._cache[key]   # what compute() returned for this key
            return cached
        except KeyError:
            value = self._cache[key] = compute()
            return value

    def index_of(self, key: str) -> int:
        """Index of the member with this uuid or address; KeyError if none."""
        for seq in (self._uuids, self._addresses):
            try:
                return seq.index(key)
            except ValueError:
                pass
        raise KeyError(f"no member with uuid or address {key!r}")

    def group_ids(self, grouping: str | ArrayLike = "per_member") -> NDArray[np.int32]:
        """Group label of every member as dense ids ``0..G-1`` (first-seen order).

        Parameters
        ----------
        grouping : {"per_member", "host", "zone", "custom"} or array-like of int
            What forms a member group. An array gives the group id of each member.

        Returns
        -------
        ndarray[int32] of shape (M,)

        Raises
        ------
        ValueError
            Unknown grouping name, or an array of the wrong length.
        """
        labels: Sequence[Hashable] | None
        if isinstance(grouping, str):
            labels = {"per_member": range(len(self)), "host": self._hosts,
                      "zone": self._zones, "custom": self._groups}.get(grouping)
            if labels is None:
                raise ValueError(f"grouping must be 'per_member', 'host', 'zone', 'custom' or an "
                                 f"array of group ids, got {grouping!r}")
        else:
            ids = np.asarray(grouping)
            if ids.ndim != 1 or ids.shape[0] != len(self):
                raise ValueError(f"grouping array must have one group id per member "
                                 f"({len(self)}), got shape {ids.shape}")
            labels = ids.tolist()
            for i, x in enumerate(labels):
                if isinstance(x, float) and math.isnan(x):   # NaN != NaN: each its own group
                    raise ValueError(f"grouping[{i}] is NaN: a group id must equal itself")
        seen: dict[Hashable, int] = {}
        return np.array([seen.setdefault(x, len(seen)) for x in labels], dtype=np.int32)

    # -- serialisation -----------------------------------------------------
    def to_dict(self) -> dict[str, list[str] | list[bool]]:
        return {"addresses": list(self._addresses), "uuids": list(self._uuids),
                "hosts": list(self._hosts), "zones": list(self._zones),
                "lite": list(self._lite), "groups": list(self._groups)}

    _FIELDS = ("addresses", "uuids", "hosts", "zones", "lite", "groups")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Members:
        """The registry of :meth:`to_dict`'s form; columns other than ``addresses`` may be
        missing or null (defaults). A document of another form raises ValueError (not
        KeyError/AttributeError), naming what is wrong."""
        if not isinstance(d, dict):
            raise ValueError(  # noqa: TRY004 - a document of another form: ValueError
                f"members: expected a JSON object, got {type(d).__name__}")
        unknown = sorted(set(map(str, d)) - set(cls._FIELDS))
        if unknown:
            raise ValueError(f"members: unknown field(s) {', '.join(unknown)} (expected "
                             f"{', '.join(cls._FIELDS)})")
        if "addresses" not in d:
            raise ValueError("members: the 'addresses' field is missing")
        for field in cls._FIELDS:
            value = d.get(field)
            if value is not None and not isinstance(value, list):
                raise ValueError(f"members: {field} must be a list, got "
                                 f"{type(value).__name__}")
        return cls(d["addresses"], uuids=d.get("uuids"), hosts=d.get("hosts"),
                   zones=d.get("zones"), lite=d.get("lite"), groups=d.get("groups"))

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, s: str) -> Members:
        """The registry of :meth:`to_json`'s form; ValueError for anything else."""
        try:
            d = json.loads(s)
        except RecursionError:
            raise ValueError("members: the JSON document is nested too deeply") from None
        return cls.from_dict(d)


#: What a ``members`` argument accepts: a registry, or a count of plain data members.
MembersLike = Members | int | np.integer[Any]
