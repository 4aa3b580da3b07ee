"""Faults for real member processes: network partitions and process pauses (docs/node.md §5).

:class:`Partition` drops IPv4 packets between members' own loopback addresses with
``iptables`` rules in a chain of its own (``HZFAST-<pid>-<n>``, jumped to from ``INPUT``,
each rule ``-i lo -s A -d B -j DROP``). A member of a :class:`~hzfast.node.chaos.LocalCluster`
listens on, and connects from, an address of its own (``127.0.0.11``, ``127.0.0.12``, ...),
so a pair of addresses is a pair of members. The shapes are the ones Jepsen's nemeses draw
(:meth:`Partition.halves`, :meth:`~Partition.majority_minority`, :meth:`~Partition.bridge`,
:meth:`~Partition.ring`, :meth:`~Partition.one_way`). Every rule and the chain go when the
``with`` block ends, also when it raises; :func:`remove_stale_chains` removes the chains a
process that died without its ``finally`` left behind.

:class:`Pause` stops processes by PID with SIGSTOP and always sends SIGCONT when its
``with`` block ends.

Only IPv4 loopback addresses other than 127.0.0.1 (which every local client and cluster
shares) can be a target: anything else is refused with a ValueError, before any rule.
"""
from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence

__all__ = ["CHAIN_PREFIX", "SHAPES", "NemesisError", "Partition", "Pause", "check_target",
           "remove_stale_chains"]

#: The prefix of every chain a :class:`Partition` makes.
CHAIN_PREFIX = "HZFAST-"

#: The partition shapes :meth:`Partition.shape` draws.
SHAPES = ("halves", "majority", "bridge", "ring", "one-way")

_LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
_SHARED = ipaddress.ip_address("127.0.0.1")
_CHAIN_RE = re.compile(r"^-N (HZFAST-([0-9]+)-[0-9]+)$", re.MULTILINE)
_count = itertools.count(1)


class NemesisError(RuntimeError):
    """A fault could not be injected or removed (iptables missing or refused a rule, a
    process gone)."""


def check_target(host: str, what: str = "address") -> str:
    """``host`` if it may be the target of a fault: an IPv4 loopback address other than
    127.0.0.1.

    Raises
    ------
    ValueError
        Anything else (a name, IPv6, a non-loopback address, 127.0.0.1).
    """
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"{what} {host!r} is not an IPv4 address: a partition targets "
                         f"only members' own loopback addresses (127.0.0.x)") from None
    if ip.version != 4 or ip not in _LOOPBACK:
        raise ValueError(f"{what} {host} is not a loopback address: a partition targets "
                         f"only members' own loopback addresses (127.0.0.x)")
    if ip == _SHARED:
        raise ValueError(f"{what} 127.0.0.1 is shared by every local client and cluster: "
                         f"give each member its own loopback address (127.0.0.11, ...)")
    return str(ip)


def _iptables() -> str:
    exe = shutil.which("iptables")
    if exe is None:
        raise NemesisError("iptables is not installed: a network partition needs it "
                           "(apt-get install -y iptables)")
    return exe


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_iptables(), "-w", "5", *args], capture_output=True, text=True,
                          timeout=30, check=False)


def _must(*args: str) -> None:
    r = _run(*args)
    if r.returncode != 0:
        raise NemesisError(f"iptables {' '.join(args)} failed: "
                           f"{(r.stderr or r.stdout).strip() or f'exit {r.returncode}'}")


def _chains() -> list[tuple[str, int]]:
    """This machine's HZFAST-<pid>-<n> chains (name, pid)."""
    r = _run("-S")
    if r.returncode != 0:
        raise NemesisError(f"iptables -S failed: {(r.stderr or r.stdout).strip()}")
    return [(m[1], int(m[2])) for m in _CHAIN_RE.finditer(r.stdout)]


def _remove_chain(chain: str) -> None:
    """Unhook ``chain`` from INPUT (every jump), flush and delete it. Each step is tried
    even when an earlier one failed; raises if the chain is still there."""
    for _ in range(64):                         # one jump each; bounded
        if _run("-D", "INPUT", "-j", chain).returncode != 0:
            break
    _run("-F", chain)
    _run("-X", chain)
    if any(name == chain for name, _ in _chains()):
        raise NemesisError(f"iptables chain {chain} could not be removed; remove it with "
                           f"`iptables -D INPUT -j {chain}; iptables -F {chain}; "
                           f"iptables -X {chain}`")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_chains() -> list[str]:
    """Remove the ``HZFAST-<pid>-<n>`` chains whose process is gone (it died without
    removing them: SIGKILL, a power cut); the names removed. Chains of live processes
    are left alone."""
    stale = [name for name, pid in _chains() if not _alive(pid)]
    for name in stale:
        _remove_chain(name)
    return stale


class Partition:
    """Drop packets between members' loopback addresses while a ``with`` block runs.

    Parameters
    ----------
    drops : iterable of (str, str)
        The directed address pairs ``(a, b)``: packets from ``a`` to ``b`` are dropped.
        A one-way pair still stalls TCP both ways (the acknowledgements are lost), as in
        Jepsen; the pair is what the rule matches.
    name : str
        What the shape is called (shown in results).

    Raises
    ------
    ValueError
        An address that is not a member's own loopback address (see :func:`check_target`),
        or a pair from an address to itself.

    Examples
    --------
    >>> with Partition.halves(["127.0.0.11", "127.0.0.12"]):   # doctest: +SKIP
    ...     ...   # 127.0.0.11 and 127.0.0.12 cannot reach each other here
    """

    def __init__(self, drops: Iterable[tuple[str, str]], *, name: str = "custom") -> None:
        pairs: list[tuple[str, str]] = []
        for pair in drops:
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise ValueError(f"drops: {pair!r} is not an (address, address) pair")
            a, b = check_target(pair[0], "drops:"), check_target(pair[1], "drops:")
            if a == b:
                raise ValueError(f"drops: ({a}, {b}) is a pair from an address to itself")
            if (a, b) not in pairs:
                pairs.append((a, b))
        self.drops = pairs
        self.name = name
        self.chain: str | None = None

    # ------------------------------------------------------------------ shapes
    @staticmethod
    def _cut(groups: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
        return [(a, b) for g in groups for h in groups if h is not g
                for a in g for b in h]

    @classmethod
    def groups(cls, groups: Sequence[Sequence[str]], *, name: str = "groups") -> Partition:
        """Each group reaches only its own members (both directions cut)."""
        flat = [a for g in groups for a in g]
        if len(set(flat)) != len(flat):
            raise ValueError("groups: an address is in more than one group")
        return cls(cls._cut(groups), name=name)

    @classmethod
    def halves(cls, hosts: Sequence[str]) -> Partition:
        """The first ``len(hosts) // 2`` addresses against the rest."""
        h = list(hosts)
        return cls.groups([h[:len(h) // 2], h[len(h) // 2:]], name="halves")

    @classmethod
    def majority_minority(cls, hosts: Sequence[str], rng: random.Random | None = None
                          ) -> Partition:
        """A random minority (``len(hosts) // 2`` addresses; the first ones without ``rng``)
        against the majority."""
        h = list(hosts)
        if rng is not None:
            rng.shuffle(h)
        k = len(h) // 2
        return cls.groups([h[:k], h[k:]], name="majority")

    @classmethod
    def bridge(cls, hosts: Sequence[str]) -> Partition:
        """Two halves cut apart, and the middle address reaching both (Jepsen's bridge):
        for five, ``[a, b] | c | [d, e]`` with ``c`` seeing everyone."""
        h = list(hosts)
        if len(h) < 3:
            raise ValueError(f"bridge: needs at least 3 addresses, got {len(h)}")
        mid = len(h) // 2
        left, right = h[:mid], h[mid + 1:]
        return cls(cls._cut([left, right]), name="bridge")

    @classmethod
    def ring(cls, hosts: Sequence[str]) -> Partition:
        """Each address reaches its neighbours on a ring, a majority of all counting
        itself, and no two see the same majority (Jepsen's majorities ring): the pairs
        further apart on the ring are cut."""
        h = list(hosts)
        n = len(h)
        if n < 4:
            raise ValueError(f"ring: needs at least 4 addresses, got {n}")
        reach = (n // 2 + 1) // 2       # neighbours each side: 2 * reach + 1 >= a majority
        drops = [(h[i], h[j]) for i in range(n) for j in range(n)
                 if i != j and min((i - j) % n, (j - i) % n) > reach]
        return cls(drops, name="ring")

    @classmethod
    def one_way(cls, sources: Sequence[str], targets: Sequence[str]) -> Partition:
        """Packets from ``sources`` to ``targets`` dropped; the other way left alone."""
        return cls([(a, b) for a in sources for b in targets], name="one-way")

    @classmethod
    def shape(cls, shape: str, hosts: Sequence[str], rng: random.Random | None = None
              ) -> Partition:
        """One of :data:`SHAPES` over ``hosts`` (shuffled with ``rng`` when given)."""
        h = list(hosts)
        if shape not in SHAPES:
            raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
        if len(h) < 2:
            raise ValueError(f"a partition needs at least 2 addresses, got {len(h)}")
        if rng is not None:
            rng.shuffle(h)
        if shape == "halves":
            return cls.halves(h)
        if shape == "majority":
            return cls.majority_minority(h)
        if shape == "bridge":
            return cls.bridge(h)
        if shape == "ring":
            return cls.ring(h)
        return cls.one_way(h[:len(h) // 2], h[len(h) // 2:])

    # ------------------------------------------------------------------ rules
    def start(self) -> None:
        """Add the chain and its rules (all or none: a failure removes what was added)."""
        if self.chain is not None:
            raise NemesisError(f"partition {self.name} is already in force ({self.chain})")
        _iptables()
        remove_stale_chains()
        chain = f"{CHAIN_PREFIX}{os.getpid()}-{next(_count)}"
        _must("-N", chain)
        self.chain = chain
        try:
            for a, b in self.drops:
                _must("-A", chain, "-i", "lo", "-s", a, "-d", b, "-j", "DROP")
            _must("-I", "INPUT", "1", "-j", chain)
        except BaseException:
            self.heal()
            raise

    def heal(self) -> None:
        """Remove the rules and the chain (nothing when none is in force)."""
        chain, self.chain = self.chain, None
        if chain is not None:
            _remove_chain(chain)

    @property
    def active(self) -> bool:
        return self.chain is not None

    def __enter__(self) -> Partition:  # noqa: PYI034 - Python 3.10 has no typing.Self
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.heal()

    def __repr__(self) -> str:
        return f"Partition({self.name}, {len(self.drops)} directed pairs)"


def _state(pid: int) -> str:
    """The process's state letter from /proc (``""`` when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return ""
    return text[text.rindex(")") + 2:].split(" ", 1)[0]


class Pause:
    """SIGSTOP processes by PID while a ``with`` block runs; SIGCONT when it ends, also
    when it raises.

    Parameters
    ----------
    pids : iterable of int
        The processes (never this process, PID 1 or below).

    Raises
    ------
    ValueError
        A PID that is not a positive int, is 1 or this process.
    """

    def __init__(self, pids: Iterable[int]) -> None:
        self.pids: list[int] = []
        for pid in pids:
            if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
                raise ValueError(f"pids: {pid!r} is not a process id above 1")
            if pid == os.getpid():
                raise ValueError(f"pids: {pid} is this process")
            self.pids.append(pid)
        self.stopped: list[int] = []

    def start(self, wait: float = 5.0) -> None:
        """SIGSTOP every process and wait (up to ``wait`` s) until each shows stopped.

        Raises
        ------
        NemesisError
            A process is gone (the others are resumed).
        """
        try:
            for pid in self.pids:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    raise NemesisError(f"pause: process {pid} is gone") from None
                self.stopped.append(pid)
            end = time.monotonic() + wait
            while time.monotonic() < end and any(_state(p) not in ("T", "t", "Z", "")
                                                 for p in self.stopped):
                time.sleep(0.005)
        except BaseException:
            self.resume()
            raise

    def resume(self) -> None:
        """SIGCONT every process this pause stopped (gone ones are skipped)."""
        stopped, self.stopped = self.stopped, []
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def __enter__(self) -> Pause:  # noqa: PYI034 - Python 3.10 has no typing.Self
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.resume()

