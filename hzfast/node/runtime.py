"""The node runtime: one member process hosting one :class:`hzfast.protocol.Node`.

Plumbing only (docs/node.md): the runtime moves bytes and performs what the protocol node
asks. It owns the TCP server and one outgoing connection per peer, the frame codec
(:mod:`hzfast.node.wire`), the clock (milliseconds since start, the protocol's time unit
here) and the timers, the replica data (:class:`~hzfast.node.store.Store`) and the
effects on it, a heartbeat failure detector, the member list (joins go through the
master, the oldest member, which publishes the list), and the client requests (put, get,
locate, status). Every decision about versions, commits, promotions and recovery is the
protocol node's; the runtime never changes a table.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import time
from collections.abc import Hashable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hzfast.hashing import partition_ids
from hzfast.node import wire
from hzfast.node.store import Store
from hzfast.protocol import (
    Config,
    EffectDone,
    Event,
    MembershipChanged,
    MessageReceived,
    Node,
    TimerFired,
)
from hzfast.protocol.outputs import CancelTimer, Effect, Mark, Output, Send, SetTimer

__all__ = ["Member", "Settings"]

log = logging.getLogger("hzfast.node")

MemberEntry = tuple[int, str, int]          # (member id, host, port)
_CHUNK_FIELDS = 64                          # a chunk frame's bytes besides its entries


@dataclass(frozen=True)
class Settings:
    """One member's settings. Times are in milliseconds.

    ``partitions``, ``backups``, ``max_parallel_migrations`` and ``design`` must be the
    same on every member (a join with others is refused).
    """

    host: str = "127.0.0.1"
    port: int = 0                            #: 0: any free port
    join: tuple[str, int] | None = None      #: a member's address; None: start a cluster
    partitions: int = 271
    backups: int = 1
    max_parallel_migrations: int = 10
    design: str = "safe"
    heartbeat_ms: int = 100
    suspect_ms: int = 2000                   #: silence after which a member is suspected
    timeout_ms: int = 5000                   #: the protocol's request/commit timeout
    write_timeout_ms: int = 3000             #: a backup's answer to a write
    chunk_bytes: int = 1 << 20               #: migration data per frame
    max_frame: int = wire.MAX_FRAME
    first_id: int = 1                        #: the founding member's id
    link_delay_ms: int = 0                   #: emulated one-way latency of every peer link

    def __post_init__(self) -> None:
        for name in ("port", "partitions", "backups", "max_parallel_migrations",
                     "heartbeat_ms", "suspect_ms", "timeout_ms", "write_timeout_ms",
                     "chunk_bytes", "max_frame", "first_id", "link_delay_ms"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"Settings.{name} must be an int, got {type(v).__name__}")
        if not 0 <= self.link_delay_ms <= 10_000:
            raise ValueError(f"Settings.link_delay_ms must be in 0..10,000, got "
                             f"{self.link_delay_ms}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"Settings.port must be in 0..65535, got {self.port}")
        if self.heartbeat_ms < 1 or self.suspect_ms <= self.heartbeat_ms:
            raise ValueError("Settings.suspect_ms must exceed heartbeat_ms (>= 1)")
        if self.chunk_bytes < 1 or self.max_frame < 1024 or self.timeout_ms < 1:
            raise ValueError("Settings.chunk_bytes, timeout_ms must be >= 1 and max_frame >= 1024")
        self.protocol_config()                  # checks the protocol's settings

    def protocol_config(self) -> Config:
        """The protocol node's :class:`~hzfast.protocol.Config` (times in ms)."""
        return Config(partition_count=self.partitions, backup_count=self.backups,
                      max_parallel_migrations=self.max_parallel_migrations,
                      design=self.design, timeout=self.timeout_ms,
                      retry_delay=max(1, self.timeout_ms // 25), state_check_interval=1000)

    def cluster_config(self) -> dict[str, Any]:
        """What every member must agree on (sent with a join)."""
        return {"partitions": self.partitions, "backups": self.backups,
                "max_parallel_migrations": self.max_parallel_migrations, "design": self.design}


class _Peer:
    """The outgoing connection to one member: a queue of frames and a writer task.

    Frames queued while the connection is down wait for it; past ``limit`` queued bytes
    new frames are dropped (the protocol treats that as a lost message). With
    ``Settings.link_delay_ms`` each frame leaves that long after it was queued, in order
    (an emulated network latency, for measurements).
    """

    def __init__(self, owner: Member, member: int, host: str, port: int) -> None:
        self.owner, self.member, self.host, self.port = owner, member, host, port
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.queued = 0
        self.limit = 256 << 20
        self.delay = owner.settings.link_delay_ms / 1000
        self.wake = asyncio.Event()
        self.closed = False
        self.task = asyncio.get_running_loop().create_task(self._run())

    def send(self, data: bytes) -> None:
        if self.closed or self.queued + len(data) > self.limit:
            self.owner.stats["frames_dropped"] += 1
            return
        self.queue.append((time.monotonic() + self.delay, data))
        self.queued += len(data)
        self.wake.set()

    def close(self) -> None:
        self.closed = True
        self.task.cancel()

    async def _run(self) -> None:
        hello = wire.frame("hello", self.owner.me)
        while not self.closed:                 # ends when the peer leaves or we stop
            writer = None
            try:
                _, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), 2.0)
                writer.write(hello)
                while not self.closed:
                    while self.queue:
                        due, data = self.queue[0]
                        wait = due - time.monotonic()
                        if wait > 0:
                            await writer.drain()
                            await asyncio.sleep(wait)
                        self.queue.popleft()
                        self.queued -= len(data)
                        writer.write(data)
                        if writer.transport.get_write_buffer_size() > 4 << 20:
                            await writer.drain()
                    await writer.drain()
                    self.wake.clear()
                    if not self.queue:
                        await self.wake.wait()
            except (OSError, asyncio.TimeoutError, ConnectionError):
                await asyncio.sleep(0.05)
            finally:
                if writer is not None:
                    writer.close()


class Member:
    """One cluster member: a protocol node, its replica data and its connections.

    Use :meth:`start` then :meth:`wait_stopped` (or ``hzfast node``). Only the event
    loop's thread touches a member.
    """

    def __init__(self, settings: Settings) -> None:
        if not isinstance(settings, Settings):
            raise TypeError(f"settings must be a hzfast.node.Settings, got "
                            f"{type(settings).__name__}")
        self.settings = settings
        self.config = settings.protocol_config()
        self.store = Store()
        self.me = -1
        self.node: Node | None = None
        self.view: list[MemberEntry] = []
        self.view_version = 0
        self.next_id = settings.first_id
        self.peers: dict[int, _Peer] = {}
        self.last_heard: dict[int, float] = {}
        self.stats: collections.Counter[str] = collections.Counter()
        self.marks: collections.Counter[str] = collections.Counter()
        self.recent: collections.deque[str] = collections.deque(maxlen=50)
        self.port = -1
        self._events: collections.deque[Event] = collections.deque()
        self._pumping = False
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}
        self._waits: dict[tuple[str, int, int], asyncio.Future[bool]] = {}
        self._req = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.base_events.Server | None = None
        self._stopped: asyncio.Event | None = None
        self._t0 = 0.0
        self.exit_reason = ""

    # ------------------------------------------------------------------ life
    def now(self) -> int:
        """The protocol's clock: milliseconds since this member started."""
        return int((time.monotonic() - self._t0) * 1000)

    async def start(self) -> None:
        """Listen, then found a cluster or join the one at ``settings.join``.

        Raises
        ------
        OSError
            The port cannot be bound.
        ConnectionError
            No member at the join address answered, or the cluster refused the join.
        """
        s = self.settings
        self._t0 = time.monotonic()
        self._stopped = asyncio.Event()
        self._server = await asyncio.start_server(self._on_connection, s.host, s.port,
                                                  limit=1 << 16)
        self.port = self._server.sockets[0].getsockname()[1]
        if s.join is None:
            self.me = s.first_id
            self.next_id = s.first_id + 1
            self.node = Node(self.me, self.config)
            self._apply_view(1, self.next_id, [(self.me, s.host, self.port)])
        else:
            await self._join(s.join)
        self._spawn(self._heartbeat_loop())
        log.info("member %d listening on %s:%d", self.me, s.host, self.port)

    async def wait_stopped(self) -> str:
        """Wait until the member stops; the reason."""
        assert self._stopped is not None
        await self._stopped.wait()
        return self.exit_reason

    def stop(self, reason: str = "stopped") -> None:
        """Stop serving: close the server, the connections and the timers."""
        if self._stopped is None or self._stopped.is_set():
            return
        self.exit_reason = reason
        if self._server is not None:
            self._server.close()
        for p in self.peers.values():
            p.close()
        for h in self._timers.values():
            h.cancel()
        for t in list(self._tasks):
            t.cancel()
        self._stopped.set()

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    # ------------------------------------------------------------------ membership
    async def _join(self, address: tuple[str, int]) -> None:
        s = self.settings
        host, port = address
        for _ in range(20):                             # bounded redirects and retries
            try:
                reply = await _request(host, port, "join", s.host, self.port,
                                       s.cluster_config(), timeout=5.0,
                                       max_frame=s.max_frame)
            except (OSError, asyncio.TimeoutError, wire.WireError) as exc:
                log.info("join via %s:%d failed: %s", host, port, exc)
                await asyncio.sleep(0.3)
                continue
            if reply[0] == "error":
                code, text, detail = reply[2], reply[3], reply[4]
                if code == "redirect" and isinstance(detail, list) and len(detail) == 2:
                    host, port = str(detail[0]), int(detail[1])
                    continue
                if code in ("not_ready", "busy"):
                    await asyncio.sleep(0.3)
                    continue
                raise ConnectionError(f"join refused: {code}: {text}")
            info = reply[2]
            if not isinstance(info, dict):
                raise ConnectionError("join: malformed answer")
            self.me = wire._FIELD["id"](info.get("member"), "join.member")
            members = wire._members(info.get("members"), "join.members")
            self.node = Node(self.me, self.config)
            self._apply_view(wire._int(info.get("version"), "join.version"),
                             wire._int(info.get("next_id"), "join.next_id"), members)
            return
        raise ConnectionError(f"could not join the cluster at {address[0]}:{address[1]}")

    def _apply_view(self, version: int, next_id: int, members: list[MemberEntry],
                    publish: bool = False) -> None:
        if version <= self.view_version:
            return
        ids = [m for m, _, _ in members]
        if self.me not in ids:
            log.warning("member %d is not in member list v%d: leaving", self.me, version)
            self.stop("removed from the cluster")
            return
        self.view, self.view_version = list(members), version
        self.next_id = max(self.next_id, next_id)
        now = time.monotonic()
        for m, host, port in members:
            if m != self.me and m not in self.peers:
                self.peers[m] = _Peer(self, m, host, port)
                self.last_heard[m] = now
        for m in [m for m in self.peers if m not in ids]:
            self.peers.pop(m).close()
            self.last_heard.pop(m, None)
        self.recent.append(f"{self.now()} ms members v{version}: {ids}")
        if publish:       # the list goes out before anything the node sends about it
            self._broadcast_view()
        self._feed(MembershipChanged(tuple(ids)))

    def _publish_view(self, members: list[MemberEntry]) -> None:
        self._apply_view(self.view_version + 1, self.next_id, members, publish=True)

    def _broadcast_view(self) -> None:
        data = wire.frame("members", self.view_version, self.next_id,
                          [list(m) for m in self.view])
        for p in self.peers.values():
            p.send(data)

    @property
    def is_master(self) -> bool:
        return bool(self.view) and self.view[0][0] == self.me

    async def _heartbeat_loop(self) -> None:
        s = self.settings
        last_publish = 0.0
        while True:                                      # ends with the member
            await asyncio.sleep(s.heartbeat_ms / 1000)
            hb = wire.frame("hb", self.me, self.view_version)
            for p in self.peers.values():
                p.send(hb)
            now = time.monotonic()
            suspects = {m for m, _, _ in self.view if m != self.me
                        and now - self.last_heard.get(m, now) > s.suspect_ms / 1000}
            ids = [m for m, _, _ in self.view]
            if self.me not in ids:
                continue
            older = ids[:ids.index(self.me)]
            if suspects and all(o in suspects for o in older):
                # the master (or, with every older member gone, this member) drops them
                self.stats["members_removed"] += len(suspects)
                log.info("member %d removes %s", self.me, sorted(suspects))
                self._publish_view([e for e in self.view if e[0] not in suspects])
                last_publish = now
            elif self.is_master and now - last_publish > 1.0:
                self._broadcast_view()                   # repeats for lost frames
                last_publish = now

    # ------------------------------------------------------------------ protocol driving
    def _feed(self, ev: Event) -> None:
        self._events.append(ev)
        if self._pumping or self.node is None:
            return
        self._pumping = True
        try:
            for _ in range(1_000_000):
                if not self._events:
                    break
                t = time.perf_counter()
                outs = self.node.handle(self._events.popleft(), self.now())
                self.stats["protocol_us"] += int((time.perf_counter() - t) * 1e6)
                self.stats["protocol_events"] += 1
                for o in outs:
                    self._perform(o)
        finally:
            self._pumping = False

    def _perform(self, o: Output) -> None:
        t = type(o)
        if t is Send:
            assert isinstance(o, Send)
            peer = self.peers.get(o.to)
            if peer is None:
                self.stats["sends_to_unknown"] += 1
                return
            peer.send(wire.frame("msg", wire.encode_message(o.message)))
        elif t is SetTimer:
            assert isinstance(o, SetTimer)
            old = self._timers.pop(o.key, None)
            if old is not None:
                old.cancel()
            loop = asyncio.get_running_loop()
            delay = max(0.0, (o.at - self.now()) / 1000)
            self._timers[o.key] = loop.call_later(delay, self._fire, o.key)
        elif t is CancelTimer:
            assert isinstance(o, CancelTimer)
            old = self._timers.pop(o.key, None)
            if old is not None:
                old.cancel()
        elif t is Effect:
            assert isinstance(o, Effect)
            self._effect(o)
        elif t is Mark:
            assert isinstance(o, Mark)
            self.marks[o.name] += 1
            if o.name != "table_published":
                self.recent.append(f"{self.now()} ms {o.name} p{o.partition} "
                                   f"{o.migration or ''} {o.detail}".rstrip())

    def _fire(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self._feed(TimerFired(key))

    def _effect(self, e: Effect) -> None:
        """Perform one effect, in the order the node returned it (docs/node.md §3)."""
        st, x, p = self.store, e.migration, e.partition
        self.stats[f"effect_{e.kind}"] += 1
        if e.kind in ("copy", "sync"):
            mode = "stage" if e.kind == "copy" else "merge"
            mid = x.id if x is not None else (-1, -1)
            self._spawn(self._transfer(e.id, e.to, mode, mid, p, st.snapshot(p)))
            return
        if e.kind == "install":
            assert x is not None
            if not st.install(x.id, p, keep=e.keep):
                self.stats["install_without_data"] += 1
                log.error("member %d installs %s without its data", self.me, x)
        elif e.kind == "discard":
            assert x is not None
            st.discard(x.id)
        elif e.kind == "clear":
            st.clear(p)
        self._events.append(EffectDone(e.id, True))     # promote: nothing moves

    async def _transfer(self, eid: int, to: int, mode: str, mid: tuple[int, int], p: int,
                        entries: list[tuple[str, bytes]]) -> None:
        ok = False
        peer = self.peers.get(to)
        if peer is not None:
            fut = self._wait("chunk", to, eid)
            limit = self.settings.chunk_bytes
            seq, lo, size = 0, 0, 0
            for i, (k, v) in enumerate(entries):
                n = 4 * len(k) + len(v) + 16          # an upper bound of the entry's bytes
                if i > lo and size + n > limit:       # a chunk over the limit holds one entry
                    peer.send(wire.frame("chunk", eid, mode, mid[0], mid[1], p,
                                         [list(kv) for kv in entries[lo:i]], seq, False))
                    seq, lo, size = seq + 1, i, 0
                size += n
            peer.send(wire.frame("chunk", eid, mode, mid[0], mid[1], p,
                                 [list(kv) for kv in entries[lo:]], seq, True))
            self.stats["bytes_sent"] += sum(len(v) for _, v in entries)
            try:
                ok = await asyncio.wait_for(fut, self.settings.timeout_ms / 1000)
            except asyncio.TimeoutError:
                ok = False
            finally:
                self._waits.pop(("chunk", to, eid), None)
        self._feed(EffectDone(eid, ok))

    def _wait(self, kind: str, member: int, n: int) -> asyncio.Future[bool]:
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waits[(kind, member, n)] = fut
        return fut

    def _resolve(self, kind: str, member: int, n: int, ok: bool) -> None:
        fut = self._waits.get((kind, member, n))
        if fut is not None and not fut.done():
            fut.set_result(ok)

    # ------------------------------------------------------------------ connections
    async def _on_connection(self, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
        sender = -1
        try:
            first = await wire.read_frame(reader, self.settings.max_frame)
            if first is None:
                return
            f = wire.parse(first)
            if f[0] == "hello":
                sender = f[1]
                await self._peer_loop(sender, reader)
            else:
                await self._client_loop(f, reader, writer)
        except wire.WireError as exc:
            self.stats["connections_rejected"] += 1
            log.warning("member %d closes a connection%s: %s", self.me,
                        f" from member {sender}" if sender >= 0 else "", exc)
            with contextlib.suppress(OSError, RuntimeError):     # the peer may be gone
                writer.write(wire.frame("error", -1, "bad_frame", str(exc), None))
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:      # the member stops: end the handler quietly
            pass
        finally:
            writer.close()

    async def _peer_loop(self, sender: int, reader: asyncio.StreamReader) -> None:
        P, R = self.config.partition_count, self.config.replica_count
        for _ in range(2**62):                  # ends with the connection
            obj = await wire.read_frame(reader, self.settings.max_frame)
            if obj is None:
                return
            f = wire.parse(obj)
            tag = f[0]
            known = any(m == sender for m, _, _ in self.view)
            if tag == "hb":
                if known:
                    self.last_heard[sender] = time.monotonic()
            elif tag == "msg":
                m = wire.decode_message(f[1], P, R)
                if known:
                    self.last_heard[sender] = time.monotonic()
                self.stats["messages_received"] += 1
                self._feed(MessageReceived(sender, m))   # the node rejects unknown senders
            elif tag == "members":
                version, next_id, members = f[1], f[2], f[3]
                if known and members and members[0][0] == sender:   # a known master's
                    self._apply_view(version, next_id, members)
            elif tag == "chunk":
                self._on_chunk(sender, known, *f[1:])
            elif tag == "chunk_ack":
                self._resolve("chunk", sender, f[1], f[2])
            elif tag == "backup":
                self._on_backup(sender, known, f[1], f[2], f[3])
            elif tag == "backup_ack":
                self._resolve("backup", sender, f[1], f[2])
            else:
                raise wire.WireError(f"{tag}: not a member-to-member frame")

    def _on_chunk(self, sender: int, known: bool, eid: int, mode: str, id0: int, id1: int,
                  p: int, entries: list[tuple[str, bytes]], seq: int, last: bool) -> None:
        ok = known and p < self.config.partition_count and mode in ("stage", "merge")
        if ok:
            if mode == "stage":
                self.store.stage((id0, id1), entries, first=seq == 0)
            else:
                self.store.put(p, entries)
            self.stats["bytes_received"] += sum(len(v) for _, v in entries)
        if last or not ok:
            peer = self.peers.get(sender)
            if peer is not None:
                peer.send(wire.frame("chunk_ack", eid, ok))

    def _on_backup(self, sender: int, known: bool, req: int, p: int,
                   entries: list[tuple[str, bytes]]) -> None:
        node = self.node
        ok = (known and node is not None and p < self.config.partition_count
              and node.accepts_backup(p, sender))
        if ok:
            self.store.put(p, entries)
        else:
            self.stats["backups_refused"] += 1
        peer = self.peers.get(sender)
        if peer is not None:
            peer.send(wire.frame("backup_ack", req, ok))

    # ------------------------------------------------------------------ clients
    async def _client_loop(self, first: tuple[Any, ...], reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
        f: tuple[Any, ...] | None = first
        pending: set[asyncio.Task[None]] = set()
        try:
            for _ in range(2**62):              # ends with the connection
                if f is None:
                    obj = await wire.read_frame(reader, self.settings.max_frame)
                    if obj is None:
                        return
                    f = wire.parse(obj)
                t = asyncio.get_running_loop().create_task(self._answer(f, writer))
                pending.add(t)
                t.add_done_callback(pending.discard)
                f = None
        finally:
            for t in pending:
                t.cancel()

    async def _answer(self, f: tuple[Any, ...], writer: asyncio.StreamWriter) -> None:
        tag, req = f[0], f[1]
        out: Any
        try:
            if tag == "put":
                out = await self._put(f[2], f[3])
            elif tag == "get":
                out = self._get(f[2], f[3])
            elif tag == "locate":
                out = self._locate()
            elif tag == "status":
                out = self.status()
            elif tag == "join":
                out = self._on_join(f[2], f[3], f[4])
            else:
                raise _Refused("bad_request", f"{tag} is not a client request")
            writer.write(wire.frame("ok", req, out))
        except _Refused as r:
            writer.write(wire.frame("error", req, r.code, r.text, r.detail))
        await writer.drain()

    def _owner_check(self, p: int) -> Node:
        node = self.node
        if node is None or not node.initialized:
            raise _Refused("not_ready", f"member {self.me} has no partition table yet")
        if p >= self.config.partition_count:
            raise _Refused("bad_partition", f"partition {p} is not below "
                                            f"{self.config.partition_count}")
        if not node.accepts_write(p):
            owner = int(node.replicas[p, 0])
            if owner != self.me:
                raise _Refused("not_owner", f"member {self.me} does not own partition {p}",
                               owner)
            raise _Refused("migrating", f"partition {p} is migrating", owner)
        return node

    def _check_keys(self, p: int, keys: list[str]) -> None:
        if keys and (partition_ids(keys, self.config.partition_count) != p).any():
            raise _Refused("wrong_partition", f"a key does not belong to partition {p}")

    async def _put(self, p: int, entries: list[tuple[str, bytes]]) -> int:
        node = self._owner_check(p)
        self._check_keys(p, [k for k, _ in entries])
        backups = node.backups(p).tolist()
        live = {m for m, _, _ in self.view}
        self._req += 1
        req = self._req
        data = wire.frame("backup", req, p, [list(e) for e in entries])
        if len(data) - 4 + _CHUNK_FIELDS > self.settings.max_frame:
            # the backup frame, and later a migration's chunk, must fit a member's frame
            raise _Refused("too_large", f"partition {p}: {len(data) - 4} bytes of entries do "
                                        f"not fit a member's frame ({self.settings.max_frame} "
                                        f"less {_CHUNK_FIELDS} for a migration chunk's fields)")
        self.store.put(p, entries)
        self.stats["puts"] += len(entries)
        if any(b < 0 or b not in live for b in backups):
            raise _Refused("backup_failed", f"partition {p} lacks a live backup", None)
        futs = []
        for b in backups:
            futs.append(self._wait("backup", b, req))
            self.peers[b].send(data)
        try:
            done = await asyncio.wait_for(asyncio.gather(*futs),
                                          self.settings.write_timeout_ms / 1000)
        except asyncio.TimeoutError:
            done = [False]
        finally:
            for b in backups:
                self._waits.pop(("backup", b, req), None)
        if not all(done):
            raise _Refused("backup_failed", f"a backup of partition {p} did not apply", None)
        self.stats["puts_acknowledged"] += len(entries)
        return len(entries)

    def _get(self, p: int, keys: list[str]) -> list[bytes | None]:
        self._owner_check(p)
        self._check_keys(p, keys)
        return self.store.get(p, keys)

    def _locate(self) -> dict[str, Any]:
        node = self.node
        if node is None or not node.initialized:
            raise _Refused("not_ready", f"member {self.me} has no partition table yet")
        return {"member": self.me, "partitions": self.config.partition_count,
                "replicas": np.ascontiguousarray(node.replicas, "<i4").tobytes(),
                "replica_count": self.config.replica_count,
                "members": [list(m) for m in self.view], "version": self.view_version,
                "stamp": node.stamp}

    def _on_join(self, host: str, port: int, config: Any) -> dict[str, Any]:
        if self.node is None:
            raise _Refused("not_ready", f"member {self.me} is not in a cluster yet")
        if not self.is_master:
            _, mh, mp = self.view[0]
            raise _Refused("redirect", "join through the master", [mh, mp])
        mine = self.settings.cluster_config()
        if config != mine:
            raise _Refused("config_mismatch", f"the cluster runs with {mine}, got {config}")
        mid = self.next_id
        self.next_id += 1
        self.stats["joins"] += 1
        self._publish_view([*self.view, (mid, host, port)])
        return {"member": mid, "members": [list(m) for m in self.view],
                "version": self.view_version, "next_id": self.next_id}

    def status(self) -> dict[str, Any]:
        """What ``hzfast cluster status`` shows of this member (JSON-ready)."""
        node = self.node
        init = node is not None and node.initialized
        return {
            "member": self.me, "pid": os.getpid(), "port": self.port,
            "master": self.view[0][0] if self.view else -1,
            "members": [list(m) for m in self.view], "version": self.view_version,
            "initialized": init,
            "stamp": node.stamp if node is not None and init else None,
            "state": node.state() if node is not None else "STARTING",
            "busy": bool(node.busy) if node is not None and self.is_master else False,
            "active": len(node.active) if node is not None else 0,
            "owned": int((node.replicas[:, 0] == self.me).sum()) if node is not None else 0,
            "entries": self.store.entries(), "bytes": self.store.nbytes(),
            "migrations_committed": self.marks["master_committed"],
            "migrations_failed": self.marks["migration_failed"],
            "marks": dict(self.marks), "stats": dict(self.stats),
            "settings": {k: v for k, v in asdict(self.settings).items() if k != "join"},
            "uptime_ms": self.now(), "cpu_ms": int(time.process_time() * 1000), "recent": list(self.recent)[-20:],
        }


class _Refused(Exception):
    """A client request answered with an error frame."""

    def __init__(self, code: str, text: str, detail: Any = None) -> None:
        super().__init__(text)
        self.code, self.text, self.detail = code, text, detail


async def _request(host: str, port: int, tag: str, *fields: Any, timeout: float,
                   max_frame: int = wire.MAX_FRAME) -> tuple[Any, ...]:
    """One request on a fresh connection; the parsed answer frame."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        writer.write(wire.frame(tag, 1, *fields))
        obj = await asyncio.wait_for(wire.read_frame(reader, max_frame), timeout)
        if obj is None:
            raise ConnectionError(f"{host}:{port} closed the connection")
        return wire.parse(obj)
    finally:
        writer.close()
