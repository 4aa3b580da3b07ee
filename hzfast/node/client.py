"""A client of a running cluster: put, get, locate, status (docs/node.md §4).

The client fetches the partition table from a member (``locate``), routes every key with
:func:`hzfast.partition_ids` and the table's owners, and sends each partition's entries to
its owner in one request. An owner answers "not owner" or "migrating" while the table
moves; the client then fetches the table again and retries, until a deadline.
"""
from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast.hashing import partition_ids
from hzfast.node import auth, wire

__all__ = ["Client", "ClientError"]

#: Answers after which a request is retried (with a fresh table).
RETRYABLE = ("not_owner", "migrating", "not_ready", "backup_failed", "unreachable",
             "no_quorum", "stale_list")


class ClientError(Exception):
    """A request the cluster refused for good, or could not answer before the deadline."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(f"{code}: {text}")
        self.code = code


def _list_key(info: dict[str, Any]) -> tuple[int, int]:
    """The member list an answer comes from: (term, version)."""
    return int(info.get("term", 0)), int(info["version"])


class _Connection:
    """One connection to a member, with many requests in flight."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 max_frame: int) -> None:
        self.reader, self.writer = reader, writer
        self.pending: dict[int, asyncio.Future[tuple[Any, ...]]] = {}
        self.seq = 0
        self.max_frame = max_frame
        self.task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        err: BaseException = ConnectionError("connection closed")
        try:
            for _ in range(2**62):              # ends with the connection
                obj = await wire.read_frame(self.reader, self.max_frame)
                if obj is None:
                    break
                f = wire.parse(obj)
                fut = self.pending.pop(f[1], None)
                if fut is not None and not fut.done():
                    fut.set_result(f)
        except (OSError, wire.WireError, asyncio.IncompleteReadError) as exc:
            err = exc if isinstance(exc, OSError) else ConnectionError(str(exc))
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError(str(err)))
        self.pending.clear()

    @property
    def closed(self) -> bool:
        return self.task.done()

    async def call(self, tag: str, *fields: Any, timeout: float) -> tuple[Any, ...]:
        if self.closed:
            raise ConnectionError("connection closed")
        self.seq += 1
        seq = self.seq
        fut: asyncio.Future[tuple[Any, ...]] = asyncio.get_running_loop().create_future()
        self.pending[seq] = fut
        self.writer.write(wire.frame(tag, seq, *fields))
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self.pending.pop(seq, None)

    def close(self) -> None:
        self.task.cancel()
        self.writer.close()


class Client:
    """A cluster client (asyncio).

    Parameters
    ----------
    addresses : iterable of (host, port)
        Members to ask for the table first; the table names the others.
    timeout : float, default 5.0
        Seconds one request may take.
    deadline : float, default 60.0
        Seconds :meth:`put_many` and :meth:`get_many` keep retrying a partition.
    max_frame : int
        The largest answer accepted.
    secret : bytes, default b""
        The cluster secret (``hzfast.node.auth.load_secret`` reads a secret file); every
        connection authenticates with it first (docs/node.md §8).
    cluster_name : str, default "hzfast"
        The cluster's name; a member of another cluster refuses the connection.
    ssl : ssl.SSLContext, optional
        TLS for every connection (``hzfast.node.auth.client_ssl(cert, key, ca)``).

    Examples
    --------
    >>> async def main():                                     # doctest: +SKIP
    ...     async with Client([("127.0.0.1", 5701)]) as c:
    ...         await c.put_many({"k1": b"v1"})
    ...         return await c.get_many(["k1"])
    """

    def __init__(self, addresses: Iterable[tuple[str, int]], *, timeout: float = 5.0,
                 deadline: float = 60.0, max_frame: int = wire.MAX_FRAME, secret: bytes = b"",
                 cluster_name: str = "hzfast", ssl: ssl.SSLContext | None = None) -> None:
        self.seeds = [(str(h), int(p)) for h, p in addresses]
        if not self.seeds:
            raise ValueError("addresses must name at least one member")
        if not isinstance(secret, bytes):
            raise TypeError(f"secret must be bytes, got {type(secret).__name__}")
        self.timeout, self.deadline, self.max_frame = timeout, deadline, max_frame
        self.secret, self.cluster_name, self.ssl = secret, cluster_name, ssl
        self.conns: dict[tuple[str, int], _Connection] = {}
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}
        self.partitions = 0
        self.owners: NDArray[np.int32] = np.zeros(0, np.int32)
        self.addresses: dict[int, tuple[str, int]] = {}
        self.table_version = -1
        # the newest member list an answer came from, (term, version): a member on an older
        # list (a side cut off, or one not told yet) is not believed (docs/node.md §4)
        self.list_key: tuple[int, int] = (-1, -1)
        self.stats: dict[str, int] = {"requests": 0, "retries": 0, "locates": 0}
        self._locate_error: Exception | None = None

    async def __aenter__(self) -> Client:  # noqa: PYI034 - Python 3.10 has no typing.Self
        await self.locate()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection."""
        for c in self.conns.values():
            c.close()
        self.conns.clear()

    async def _conn(self, addr: tuple[str, int]) -> _Connection:
        c = self.conns.get(addr)
        if c is not None and not c.closed:
            return c
        lock = self._locks.setdefault(addr, asyncio.Lock())
        async with lock:                       # one connection per member
            c = self.conns.get(addr)
            if c is None or c.closed:
                r, w = await asyncio.wait_for(
                    asyncio.open_connection(*addr, limit=1 << 16, ssl=self.ssl), self.timeout)
                try:
                    await asyncio.wait_for(auth.offer(r, w, secret=self.secret,
                                                      cluster_name=self.cluster_name,
                                                      role="client"), self.timeout)
                except BaseException:
                    w.close()
                    raise
                c = self.conns[addr] = _Connection(r, w, self.max_frame)
        return c

    async def call(self, addr: tuple[str, int], tag: str, *fields: Any) -> tuple[Any, ...]:
        """One request to the member at ``addr``; the answer frame (``ok`` or ``error``).

        Raises
        ------
        ConnectionError, OSError, asyncio.TimeoutError
            The member could not be reached or did not answer in time;
            :class:`hzfast.node.auth.AuthError` (a ``ConnectionError``) when it refused the
            handshake (another cluster name or secret).
        """
        self.stats["requests"] += 1
        c = await self._conn(addr)
        return await c.call(tag, *fields, timeout=self.timeout)

    async def locate(self) -> dict[str, Any]:
        """Fetch the partition table (from the master where possible); the answer."""
        self.stats["locates"] += 1
        end = time.monotonic() + self.deadline
        delay = 0.02
        for _ in range(10_000):
            info, waiting = await self._locate_once()
            if info is not None:
                return info
            # every member that answered was between lists or cut off (no_quorum,
            # not_ready): ask again, until the deadline
            if not waiting or time.monotonic() + delay > end:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
        raise ConnectionError(f"no member answered locate: {self._locate_error}")

    async def _locate_once(self) -> tuple[dict[str, Any] | None, bool]:
        """One round over the members: the table, or None and whether a member asked to
        be asked again."""
        cands = list(dict.fromkeys([*self.addresses.values(), *self.seeds]))
        last: Exception | None = None
        waiting = False
        stale: dict[str, Any] | None = None         # the newest answer from an older list
        for addr in cands:
            try:
                f = await self.call(addr, "locate")
            except auth.AuthError:
                raise
            except (OSError, asyncio.TimeoutError, ConnectionError) as exc:
                last = exc
                continue
            if f[0] != "ok" or not isinstance(f[2], dict):
                last = ClientError(str(f[2]), str(f[3])) if f[0] == "error" else None
                waiting = waiting or (f[0] == "error" and f[2] in ("no_quorum", "not_ready"))
                continue
            info = f[2]
            key = _list_key(info)
            if key < self.list_key:
                self.stats["stale_answers"] = self.stats.get("stale_answers", 0) + 1
                last = ClientError("stale_list", f"member {info.get('member')} answered "
                                                 f"from member list {key}, older than "
                                                 f"{self.list_key}")
                if stale is None or key > _list_key(stale):
                    stale = info
                continue
            return self._take(info), False
        if stale is not None and not waiting:
            # no member answered from the newer list or asked to be asked again: that list
            # is gone (its side was merged away, or the cluster started anew)
            self.stats["list_resets"] = self.stats.get("list_resets", 0) + 1
            return self._take(stale), False
        self._locate_error = last
        return None, waiting

    def _take(self, info: dict[str, Any]) -> dict[str, Any]:
        """Route by the table of a ``locate`` answer from now on."""
        self.list_key = _list_key(info)
        P, R = int(info["partitions"]), int(info["replica_count"])
        reps = np.frombuffer(info["replicas"], dtype="<i4").reshape(P, R)
        self.partitions = P
        self.owners = reps[:, 0].astype(np.int32)
        self.addresses = {int(m): (str(h), int(p)) for m, h, p in info["members"]}
        self.table_version = int(info["version"])
        return info

    def route(self, keys: list[str]) -> NDArray[np.int32]:
        """The partition of each key (Hazelcast's string-key partitioning)."""
        if not self.partitions:
            raise RuntimeError("call locate() first")
        out: NDArray[np.int32] = partition_ids(keys, self.partitions)
        return out

    async def _partition_call(self, tag: str, p: int, payload: list[Any]) -> Any:
        """Send one partition's request to its owner, retrying until the deadline."""
        end = time.monotonic() + self.deadline
        delay = 0.02
        last = "unreachable"
        for _ in range(10_000):
            owner = int(self.owners[p])
            addr = self.addresses.get(owner)
            if addr is not None:
                try:
                    f = await self.call(addr, tag, p, payload)
                except auth.AuthError as exc:          # not a passing state: do not retry
                    raise ClientError(exc.code, str(exc)) from None
                except (OSError, asyncio.TimeoutError, ConnectionError):
                    f = ("error", 0, "unreachable", f"member {owner}", None)
                if f[0] == "ok":
                    ans = f[2]
                    if (type(ans) is not dict or "result" not in ans
                            or type(ans.get("term")) is not int
                            or type(ans.get("version")) is not int):
                        raise ClientError("bad_answer", f"member {owner} answered {tag} "
                                                        f"without a result and a list key")
                    key = _list_key(ans)
                    if key >= self.list_key:
                        self.list_key = key
                        return ans["result"]
                    # served under an older member list than one seen: not believed
                    self.stats["stale_answers"] = self.stats.get("stale_answers", 0) + 1
                    f = ("error", 0, "stale_list", f"member {owner} answered from member "
                                                   f"list {key}, older than {self.list_key}",
                         None)
                if f[2] not in RETRYABLE:
                    raise ClientError(str(f[2]), str(f[3]))
                last = f"{f[2]}: {f[3]}"
                self.stats[f"error_{f[2]}"] = self.stats.get(f"error_{f[2]}", 0) + 1
            if time.monotonic() + delay > end:
                break
            self.stats["retries"] += 1
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
            try:
                await self.locate()
            except ConnectionError:
                pass
        raise ClientError("deadline", f"partition {p}: {last}")

    async def put_many(self, entries: Mapping[str, bytes] | Iterable[tuple[str, bytes]]
                       | Iterable[tuple[str, bytes, int]], *,
                       concurrency: int = 32, batch_bytes: int = 256 << 10,
                       if_absent: bool = False, latest_update: bool = False
                       ) -> tuple[list[str], dict[str, str]]:
        """Write entries; the keys acknowledged and, for the others, why not.

        An acknowledged key is held by its owner and every synchronous backup, with the
        owner's clock as its update time. With ``if_absent`` an entry is written only where
        the owner does not hold its key (the ``put_if_absent`` merge of a removed member's
        data); with ``latest_update`` also where the owner holds it with an older update
        time than the entry's third field (``(key, value, time)``, ms since the epoch;
        the ``latest_update`` merge). Either way the entry keeps the time it carries, and
        a key the owner keeps counts as acknowledged, with the value it had.
        """
        if if_absent and latest_update:
            raise ValueError("put_many: if_absent and latest_update exclude each other")
        items: list[list[Any]] = ([[k, v] for k, v in entries.items()]
                                  if isinstance(entries, Mapping)
                                  else [list(e) for e in entries])
        if not items:
            return [], {}
        parts = self.route([e[0] for e in items])
        groups: dict[int, list[list[Any]]] = {}
        for e, p in zip(items, parts.tolist()):
            groups.setdefault(p, []).append(e)
        batches: list[tuple[int, list[list[Any]]]] = []
        for p, g in groups.items():
            cur: list[list[Any]] = []
            size = 0
            for e in g:
                cur.append(e)
                size += len(e[0]) + len(e[1])
                if size >= batch_bytes or len(cur) == wire.MAX_ITEMS:
                    batches.append((p, cur))
                    cur, size = [], 0
            if cur:
                batches.append((p, cur))
        tag = "merge" if if_absent else "merge_latest" if latest_update else "put"
        acked: list[str] = []
        failed: dict[str, str] = {}
        sem = asyncio.Semaphore(concurrency)

        async def one(p: int, batch: list[list[Any]]) -> None:
            async with sem:
                try:
                    await self._partition_call(tag, p, batch)
                    acked.extend(e[0] for e in batch)
                except ClientError as exc:
                    failed.update((e[0], str(exc)) for e in batch)

        await asyncio.gather(*(one(p, b) for p, b in batches))
        return acked, failed

    async def get_many(self, keys: Iterable[str], *, concurrency: int = 32,
                       batch_bytes: int = 256 << 10) -> dict[str, bytes | None]:
        """Read keys from their owners; ``None`` for a key the owner does not hold.

        Each request carries one partition's keys, up to ``batch_bytes`` of them (and at
        most ``hzfast.node.wire.MAX_ITEMS``).

        Raises
        ------
        ClientError
            A partition's owner could not be read before the deadline.
        """
        keys = list(keys)
        if not keys:
            return {}
        parts = self.route(keys)
        groups: dict[int, list[str]] = {}
        for k, p in zip(keys, parts.tolist()):
            groups.setdefault(p, []).append(k)
        batches: list[tuple[int, list[str]]] = []
        for p, g in groups.items():
            lo, size = 0, 0
            for i, k in enumerate(g):
                size += len(k)
                if size >= batch_bytes or i + 1 - lo == wire.MAX_ITEMS:
                    batches.append((p, g[lo:i + 1]))
                    lo, size = i + 1, 0
            if lo < len(g):
                batches.append((p, g[lo:]))
        out: dict[str, bytes | None] = {}
        sem = asyncio.Semaphore(concurrency)

        async def one(p: int, ks: list[str]) -> None:
            async with sem:
                vals = await self._partition_call("get", p, ks)
                if not isinstance(vals, list) or len(vals) != len(ks):
                    raise ClientError("bad_answer", f"partition {p}: malformed get answer")
                out.update(zip(ks, vals))

        await asyncio.gather(*(one(p, ks) for p, ks in batches))
        return out

    async def status(self, addr: tuple[str, int]) -> dict[str, Any]:
        """One member's status (see :meth:`hzfast.node.Member.status`)."""
        f = await self.call(addr, "status")
        if f[0] != "ok" or not isinstance(f[2], dict):
            raise ClientError("bad_answer", f"{addr[0]}:{addr[1]}: no status")
        st: dict[str, Any] = f[2]
        return st
