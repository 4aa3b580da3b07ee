"""The node runtime: one member process hosting one :class:`hzfast.protocol.Node`.

Plumbing only (docs/node.md): the runtime moves bytes and performs what the protocol node
asks. It owns the TCP server and one outgoing connection per peer, the frame codec
(:mod:`hzfast.node.wire`), the clock (milliseconds since start, the protocol's time unit
here) and the timers, the replica data (:class:`~hzfast.node.store.Store`) and the
effects on it, the members' addresses, and the client requests (put, get, locate,
status). Every decision about versions, commits, promotions and recovery is the protocol
node's, and every decision about membership (heartbeats, suspicion, who is in the list,
who is master, whether this member may serve) is its :class:`Membership`'s
(docs/design.md §13); the runtime never changes a table or a member list.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import ipaddress
import logging
import os
import ssl
import time
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from hzfast.hashing import partition_ids
from hzfast.node import auth, wire
from hzfast.node.client import Client, ClientError
from hzfast.node.store import Entry, Store
from hzfast.protocol import (
    Config,
    EffectDone,
    Event,
    MembershipChanged,
    MessageReceived,
    Node,
    TimerFired,
)
from hzfast.protocol.membership import (
    MEMBERSHIP_MESSAGES,
    JoinRequest,
    ListChanged,
    MemberList,
    Membership,
    MembershipConfig,
    Removed,
)
from hzfast.protocol.messages import MigrationTransfer
from hzfast.protocol.outputs import Effect, Mark, Output, Send, SetTimer

__all__ = ["MERGE_POLICIES", "Member", "Settings"]

#: What a removed member does with its data before it leaves (``Settings.merge_policy``).
MERGE_POLICIES = ("put_if_absent", "pass_through", "latest_update", "discard")

log = logging.getLogger("hzfast.node")

MemberEntry = tuple[int, str, int]          # (member id, host, port)
_MERGES = {"put": "", "merge": "put_if_absent", "merge_latest": "latest_update"}
_CHUNK_FIELDS = 64                          # a chunk frame's bytes besides its entries
_HEADROOM = 64 << 10                        # a data frame's allowance over a chunk
_STREAM_LIMIT = 64 << 10                    # a connection's read buffer pauses past twice this
_BATCH = 64 << 10                           # frames queued for a peer go out joined up to this


@dataclass(frozen=True)
class Settings:
    """One member's settings. Times are in milliseconds.

    ``partitions``, ``backups``, ``max_parallel_migrations`` and ``design`` must be the
    same on every member (a join with others is refused), and so must ``cluster_name``
    and ``secret`` (a connection with others does not authenticate). ``max_frame`` 0
    means automatic: the chunk size plus 64 KiB, or more where the cluster's partition
    tables need it. A member refuses to listen on anything but loopback with neither a
    secret nor TLS with a CA (protected mode, docs/node.md §8).
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
    #: split-brain protection: a side smaller than this serves no writes; "majority" of
    #: the last committed list, an int, or None (off, Hazelcast's default)
    min_cluster_size: int | str | None = "majority"
    #: what a member the cluster removed does with its data before it leaves:
    #: "put_if_absent" (write each entry the cluster lacks), "pass_through" (write every
    #: entry over the cluster's), "latest_update" (write each entry the cluster lacks or
    #: holds with an older update time), "discard" (drop it)
    merge_policy: str = "put_if_absent"
    timeout_ms: int = 5000                   #: the protocol's request/commit timeout
    write_timeout_ms: int = 3000             #: a backup's answer to a write
    chunk_bytes: int = 1 << 20               #: migration data per frame
    max_frame: int = 0                       #: the largest data frame (0: automatic)
    first_id: int = 1                        #: the founding member's id
    link_delay_ms: int = 0                   #: emulated one-way latency of every peer link
    cluster_name: str = "hzfast"
    secret: bytes = field(default=b"", repr=False)   #: the cluster secret (b"": none)
    tls_cert: str = ""                       #: PEM certificate file (TLS on when given)
    tls_key: str = ""                        #: its private key
    tls_ca: str = ""                         #: CA file: peers and clients must present a cert it signed
    max_connections: int = 256               #: incoming connections at once
    auth_timeout_ms: int = 5000              #: a connection's deadline to authenticate
    idle_timeout_ms: int = 120_000           #: an authenticated connection sending no frame is closed

    def __post_init__(self) -> None:
        for name in ("port", "partitions", "backups", "max_parallel_migrations",
                     "heartbeat_ms", "suspect_ms", "timeout_ms", "write_timeout_ms",
                     "chunk_bytes", "max_frame", "first_id", "link_delay_ms",
                     "max_connections", "auth_timeout_ms", "idle_timeout_ms"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"Settings.{name} must be an int, got {type(v).__name__}")
        for name in ("host", "cluster_name", "tls_cert", "tls_key", "tls_ca"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Settings.{name} must be a str, got "
                                f"{type(getattr(self, name)).__name__}")
        if not isinstance(self.secret, bytes):
            raise TypeError(f"Settings.secret must be bytes, got {type(self.secret).__name__}")
        if not self.cluster_name or len(self.cluster_name) > 255:
            raise ValueError("Settings.cluster_name must have 1..255 characters")
        if self.secret and len(self.secret) < 16:
            raise ValueError("Settings.secret must have at least 16 bytes")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("Settings.tls_cert and tls_key go together (--tls-cert, --tls-key)")
        if self.tls_ca and not self.tls_cert:
            raise ValueError("Settings.tls_ca needs tls_cert and tls_key (--tls-cert, --tls-key)")
        if self.max_connections < 1 or self.auth_timeout_ms < 1 or self.idle_timeout_ms < 1:
            raise ValueError("Settings.max_connections, auth_timeout_ms and idle_timeout_ms "
                             "must be >= 1")
        if not auth.is_loopback(self.host) and not self.secret and not self.tls_ca:
            raise ValueError(f"protected mode: {self.host or 'every interface'} is not a "
                             f"loopback address, and a member listening there needs a secret "
                             f"(--secret-file F or HZFAST_SECRET_FILE) or TLS with a CA "
                             f"(--tls-cert, --tls-key, --tls-ca)")
        if not 0 <= self.link_delay_ms <= 10_000:
            raise ValueError(f"Settings.link_delay_ms must be in 0..10,000, got "
                             f"{self.link_delay_ms}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"Settings.port must be in 0..65535, got {self.port}")
        if self.heartbeat_ms < 1 or self.suspect_ms < 4 * self.heartbeat_ms:
            raise ValueError("Settings.suspect_ms must be at least 4 heartbeat_ms (>= 1)")
        self.membership_config()                # checks min_cluster_size
        if self.merge_policy not in MERGE_POLICIES:
            raise ValueError(f"Settings.merge_policy must be one of {MERGE_POLICIES}, got "
                             f"{self.merge_policy!r}")
        if self.chunk_bytes < 1 or self.timeout_ms < 1:
            raise ValueError("Settings.chunk_bytes, timeout_ms must be >= 1")
        if self.max_frame and self.max_frame < self.chunk_bytes + 1024:
            raise ValueError(f"Settings.max_frame must be 0 (automatic) or at least "
                             f"chunk_bytes + 1024 = {self.chunk_bytes + 1024}")
        cfg = self.protocol_config()            # checks the protocol's settings
        if not self.max_frame:                  # tables, versions and completed lists fit
            tables = 4 * self.partitions * (cfg.replica_count + 1)
            auto = max(self.chunk_bytes + _HEADROOM,
                       2 * tables + 64 * self.partitions * cfg.replica_count + _HEADROOM)
            object.__setattr__(self, "max_frame", auto)

    def protocol_config(self) -> Config:
        """The protocol node's :class:`~hzfast.protocol.Config` (times in ms)."""
        return Config(partition_count=self.partitions, backup_count=self.backups,
                      max_parallel_migrations=self.max_parallel_migrations,
                      design=self.design, timeout=self.timeout_ms,
                      retry_delay=max(1, self.timeout_ms // 25), state_check_interval=1000)

    def membership_config(self) -> MembershipConfig:
        """The membership machine's settings (times in ms)."""
        try:
            return MembershipConfig(heartbeat_interval=self.heartbeat_ms,
                                    heartbeat_timeout=self.suspect_ms,
                                    min_cluster_size=self.min_cluster_size)
        except ValueError as exc:
            raise ValueError(str(exc).replace("MembershipConfig.", "Settings.")) from None

    def cluster_config(self) -> dict[str, Any]:
        """What every member must agree on (sent with a join)."""
        return {"partitions": self.partitions, "backups": self.backups,
                "max_parallel_migrations": self.max_parallel_migrations, "design": self.design,
                "min_cluster_size": self.min_cluster_size}


class _Peer:
    """The outgoing connection to one member: a queue of frames and a writer task.

    Frames queued while the connection is down wait for it; past ``limit`` queued bytes
    new frames are dropped (the protocol treats that as a lost message). With
    ``Settings.link_delay_ms`` each frame leaves that long after it was queued, in order
    (an emulated network latency, for measurements).
    """

    def __init__(self, owner: Member, member: int, host: str, port: int, *,
                 transient: bool = False) -> None:
        self.owner, self.member, self.host, self.port = owner, member, host, port
        #: a one-off connection (an answer to a member out of the list): it closes once
        #: its frames are out, or after a few failed attempts
        self.transient = transient
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

    def _take(self) -> bytes:
        """The frames at the head of the queue that are due, joined up to
        :data:`_BATCH` bytes (one write: with TLS, one record and one encryption call for
        many small frames instead of one each); a larger frame alone."""
        q, now = self.queue, time.monotonic()
        data = q.popleft()[1]
        if len(q) and len(data) < _BATCH and q[0][0] <= now:
            parts, size = [data], len(data)
            while q and q[0][0] <= now and size + len(q[0][1]) <= _BATCH:
                parts.append(q.popleft()[1])
                size += len(parts[-1])
            data = b"".join(parts)
        self.queued -= len(data)
        return data

    async def _run(self) -> None:
        owner = self.owner
        tries = 0
        while not self.closed:                 # ends when the peer leaves or we stop
            writer = None
            tries += 1
            if self.transient and tries > 20:
                self.closed = True
                break
            try:
                reader, writer = await owner._connect(self.host, self.port, 2.0)
                await asyncio.wait_for(owner._offer(reader, writer, "peer"), 5.0)
                while not self.closed:
                    while self.queue:
                        wait = self.queue[0][0] - time.monotonic()
                        if wait > 0:
                            await writer.drain()
                            await asyncio.sleep(wait)
                        writer.write(self._take())
                        if writer.transport.get_write_buffer_size() > 4 << 20:
                            await writer.drain()
                    await writer.drain()
                    self.wake.clear()
                    if self.transient and not self.queue:
                        self.closed = True
                        break
                    if not self.queue:
                        await self.wake.wait()
            except auth.AuthError as exc:
                owner.stats["auth_refused_by_peer"] += 1
                log.warning("member %d: member %d at %s:%d refused the handshake: %s",
                            owner.me, self.member, self.host, self.port, exc)
                await asyncio.sleep(1.0)
            except (OSError, asyncio.TimeoutError, ConnectionError, wire.WireError):
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
        self.ms: Membership | None = None
        self.view: list[MemberEntry] = []
        self.view_version = 0
        self.view_term = 0
        self.next_id = settings.first_id
        self.addresses: dict[int, tuple[str, int]] = {}
        self.peers: dict[int, _Peer] = {}
        self._ms_timer: asyncio.TimerHandle | None = None
        self._leaving = False                   # removed: merging its data out, then exit
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
        self._conns: dict[asyncio.StreamWriter, list[float]] = {}   # [opened, last frame, authed]
        self._transfer_from: dict[tuple[int, int], int] = {}
        self._staged_at: dict[tuple[tuple[int, int], int], float] = {}   # (id, sender) -> first chunk
        # a list of migrations has one array per migration: as many as the tables need
        items = 4 * self.config.partition_count * self.config.replica_count + 256
        self._peer_limits = wire.caps(settings.max_frame, wire.PEER_TAGS, items)
        self._client_limits = wire.caps(settings.max_frame, wire.CLIENT_TAGS, items)
        self._server_ssl: ssl.SSLContext | None = None
        self._client_ssl: ssl.SSLContext | None = None
        self._settings_shown = {k: v for k, v in asdict(settings).items()
                                if k not in ("join", "secret")}

    # ------------------------------------------------------------------ life
    def now(self) -> int:
        """The protocol's clock: milliseconds since this member started."""
        return int((time.monotonic() - self._t0) * 1000)

    @staticmethod
    def mnow() -> int:
        """Membership's clock: the host's monotonic clock in milliseconds, the same in
        every process of the host (heartbeats compare their send times with it)."""
        return int(time.monotonic() * 1000)

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
        if s.tls_cert:
            self._server_ssl = auth.server_ssl(s.tls_cert, s.tls_key, s.tls_ca)
            self._client_ssl = auth.client_ssl(s.tls_cert, s.tls_key, s.tls_ca)
        self._server = await asyncio.start_server(
            self._on_connection, s.host, s.port, limit=_STREAM_LIMIT, ssl=self._server_ssl,
            ssl_handshake_timeout=s.auth_timeout_ms / 1000 if self._server_ssl else None)
        self.port = self._server.sockets[0].getsockname()[1]
        if s.join is None:
            self.me = s.first_id
            self.next_id = s.first_id + 1
            self.node = Node(self.me, self.config)
            self.addresses[self.me] = (s.host, self.port)
            founding = MemberList(1, 1, (self.me,))
            self.ms = Membership(self.me, s.membership_config(), founding=founding)
            self._on_list(founding)
            self._ms_feed(TimerFired(("start",)))
        else:
            await self._join(s.join)
        self._spawn(self._addresses_loop())
        self._spawn(self._watchdog_loop())
        log.info("member %d listening on %s:%d", self.me, s.host, self.port)

    async def _connect(self, host: str, port: int, timeout: float
                       ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to another member (TLS when this member runs TLS). A member on
        a loopback address connects to a loopback peer from that same address, so that a
        member's traffic is one address pair both ways (``hzfast.node.nemesis`` drops
        traffic between two members by address)."""
        own = self.settings.host
        local = (own, 0) if _v4_loopback(own) and _v4_loopback(host) else None
        return await asyncio.wait_for(asyncio.open_connection(
            host, port, limit=_STREAM_LIMIT, ssl=self._client_ssl, local_addr=local), timeout)

    async def _offer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     role: str) -> None:
        s = self.settings
        await auth.offer(reader, writer, secret=s.secret, cluster_name=s.cluster_name,
                         role=role, member=self.me if role == "peer" else -1)

    async def _watchdog_loop(self) -> None:
        """Close connections that did not authenticate in time, or fell silent."""
        s = self.settings
        auth_s, idle_s = s.auth_timeout_ms / 1000, s.idle_timeout_ms / 1000
        while True:                                      # ends with the member
            await asyncio.sleep(min(0.25, auth_s / 4))
            now = time.monotonic()
            for w, (opened, last, authed) in list(self._conns.items()):
                if not authed and now - opened > auth_s:
                    self.stats["auth_timeouts"] += 1
                elif authed and now - last > idle_s:
                    self.stats["idle_timeouts"] += 1
                else:
                    continue
                self._conns.pop(w, None)
                w.transport.abort()
            self._drop_unclaimed(now)

    def _drop_unclaimed(self, now: float) -> None:
        """Drop data staged longer than twice the protocol's timeout for a migration this
        member does not run (a real copy is claimed by its transfer well before)."""
        limit = 2 * self.settings.timeout_ms / 1000
        node = self.node
        for key, t in list(self._staged_at.items()):
            mid, sender = key
            if mid not in self.store.staged:
                del self._staged_at[key]
            elif now - t > limit:
                p = next((q for q, x in (node.active.items() if node else ()) if x.id == mid), -1)
                if p < 0:
                    del self._staged_at[key]
                    q = self.store.drop_staged(mid, sender)
                    self._refuse("chunks", sender, q, f"staged for {mid}, a migration this "
                                                      f"member does not run; dropped")

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
        if self._ms_timer is not None:
            self._ms_timer.cancel()
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
                reply = await self._request(host, port, "join", s.host, self.port,
                                            s.cluster_config(), timeout=5.0)
            except auth.AuthError as exc:
                raise ConnectionError(f"join via {host}:{port}: {exc.code}: {exc}") from None
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
            self.next_id = max(self.next_id, wire._int(info.get("next_id"), "join.next_id"))
            self.node = Node(self.me, self.config)
            self.addresses[self.me] = (s.host, self.port)
            self._learn(members)
            # the master admits this member in its next list change (docs/design.md §13.3)
            self.ms = Membership(self.me, s.membership_config(),
                                 seeds=tuple(m for m, _, _ in members if m != self.me))
            self._ms_feed(TimerFired(("start",)))
            return
        raise ConnectionError(f"could not join the cluster at {address[0]}:{address[1]}")

    async def _request(self, host: str, port: int, tag: str, *fields: Any,
                       timeout: float) -> tuple[Any, ...]:
        """One client request to another member on a fresh, authenticated connection;
        the parsed answer frame."""
        reader, writer = await self._connect(host, port, timeout)
        try:
            await asyncio.wait_for(self._offer(reader, writer, "client"), timeout)
            writer.write(wire.frame(tag, 1, *fields))
            obj = await asyncio.wait_for(wire.read_frame(reader, wire.MAX_FRAME), timeout)
            if obj is None:
                raise ConnectionError(f"{host}:{port} closed the connection")
            return wire.parse(obj)
        finally:
            writer.close()

    def _learn(self, members: list[MemberEntry]) -> None:
        """Take the addresses of members this member does not know yet (an address, once
        known, is never changed) and open a connection to each. The membership machine
        learns of them too (discovery: whom to ask when it hears nobody of its own list,
        docs/design.md §13.3(a))."""
        new = tuple(m for m, _, _ in members if m != self.me and m not in self.addresses)
        if new and self.ms is not None:
            self.ms.discover(new)
        for m, host, port in members:
            if m != self.me and m not in self.addresses:
                self.addresses[m] = (host, port)
            if m != self.me and m not in self.peers:
                h, p = self.addresses[m]
                self.peers[m] = _Peer(self, m, h, p)
        if any(not h for _, h, _ in self.view):      # a list that came before its addresses
            self.view = [(m, *self.addresses.get(m, ("", 0))) for m, _, _ in self.view]

    def _on_list(self, lst: MemberList) -> None:
        """The membership machine committed ``lst``: the view, the connections, the node."""
        ids = list(lst.members)
        old = {m for m, _, _ in self.view}
        self.view = [(m, *self.addresses.get(m, ("", 0))) for m in ids]
        self.view_version = lst.version
        self.view_term = lst.term
        self.next_id = max(self.next_id, max(ids) + 1)
        for m in ids:
            if m != self.me and m not in self.peers and m in self.addresses:
                h, p = self.addresses[m]
                self.peers[m] = _Peer(self, m, h, p)
        for m in old - set(ids):
            peer = self.peers.pop(m, None)
            if peer is not None:
                peer.close()
        self.recent.append(f"{self.now()} ms members {lst.key}: {ids}")
        self._feed(MembershipChanged(tuple(ids), term=lst.term))

    def _broadcast_addresses(self) -> None:
        """The addresses of this member and of every member it has a connection to (its
        list's members and the joiners it admits), to each of them."""
        data = wire.frame("members", self.view_version, self.next_id,
                          [[m, *self.addresses[m]] for m in sorted(self.addresses)
                           if m in self.peers or m == self.me])
        for p in self.peers.values():
            p.send(data)

    @property
    def is_master(self) -> bool:
        return bool(self.view) and self.view[0][0] == self.me

    def _serving(self) -> bool:
        """Whether this member may serve now (its membership's lease, §13.2(e))."""
        return self.ms is not None and self.ms.may_serve(self.mnow())

    async def _addresses_loop(self) -> None:
        """The master repeats the members' addresses (for a member that missed them)."""
        while True:                                      # ends with the member
            await asyncio.sleep(1.0)
            if self.is_master:
                self._broadcast_addresses()

    async def _leave(self) -> None:
        """Out of the cluster: merge this member's data into the cluster that left it out
        by ``Settings.merge_policy`` (docs/node.md §1), then stop (exit status 3)."""
        s, ms = self.settings, self.ms
        lst = ms.newest if ms is not None else None
        entries = [e for p in sorted(self.store.data) for e in self.store.snapshot(p)]
        addrs = [self.addresses[m] for m in (lst.members if lst else ()) if m != self.me
                 and m in self.addresses]
        try:
            if entries and addrs and s.merge_policy != "discard":
                try:
                    async with Client(addrs, secret=s.secret, cluster_name=s.cluster_name,
                                      ssl=self._client_ssl, deadline=20.0) as client:
                        acked, failed = await client.put_many(
                            entries, if_absent=s.merge_policy == "put_if_absent",
                            latest_update=s.merge_policy == "latest_update")
                    self.stats["merged_out"] += len(acked)
                    self.stats["merge_failed"] += len(failed)
                except (OSError, ConnectionError, asyncio.TimeoutError, ClientError,
                        auth.AuthError) as exc:
                    log.warning("member %d could not merge its data: %s", self.me, exc)
                    self.stats["merge_failed"] += len(entries)
        finally:
            self.stop("removed from the cluster")

    def _ms_feed(self, ev: Event) -> None:
        """Hand one event to the membership machine and carry out what it returns."""
        ms = self.ms
        if ms is None:
            return
        # (while it leaves, a removed machine still answers a heartbeat of an older list
        # with the list that removed it, docs/design.md §13.3(b): the simulator's rule too)
        outs = ms.handle(ev, self.mnow())
        if any(isinstance(o, ListChanged) and o.lst.master == self.me for o in outs):
            self._broadcast_addresses()      # before the list itself reaches anyone
        for o in outs:
            if isinstance(o, Send):
                peer = self.peers.get(o.to)
                data = wire.frame("msg", wire.encode_message(o.message), o.term)
                if peer is not None:
                    peer.send(data)
                elif o.to in self.addresses:   # a member out of the list: it is told so
                    h, p = self.addresses[o.to]
                    _Peer(self, o.to, h, p, transient=True).send(data)
                    self.stats["sends_to_former_members"] += 1
                else:
                    self.stats["sends_to_unknown"] += 1
            elif isinstance(o, SetTimer):
                if self._ms_timer is not None:
                    self._ms_timer.cancel()
                delay = max(0.0, (o.at - self.mnow()) / 1000)
                key = o.key
                self._ms_timer = asyncio.get_running_loop().call_later(
                    delay, self._ms_feed, TimerFired(key))
            elif isinstance(o, Mark):
                self.marks[o.name] += 1
                if o.name != "heartbeat_stale":
                    self.recent.append(f"{self.now()} ms {o.name} {o.detail}".rstrip())
            elif isinstance(o, ListChanged):
                self._on_list(o.lst)
            elif isinstance(o, Removed):
                log.warning("member %d is out of the cluster (%s): leaving", self.me, o.reason)
                self._leaving = True             # (the node says nothing more to anyone)
                self._spawn(self._leave())
                return

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
            if self._leaving:
                return
            peer = self.peers.get(o.to)
            if peer is None:
                self.stats["sends_to_unknown"] += 1
                return
            peer.send(wire.frame("msg", wire.encode_message(o.message), o.term))
        elif t is SetTimer:
            assert isinstance(o, SetTimer)
            old = self._timers.pop(o.key, None)
            if old is not None:
                old.cancel()
            loop = asyncio.get_running_loop()
            delay = max(0.0, (o.at - self.now()) / 1000)
            self._timers[o.key] = loop.call_later(delay, self._fire, o.key)
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
            source = self._transfer_from.pop(x.id, -1)
            others = [m for m in st.staged.get(x.id, {}) if m != source]
            if others:           # staged under this id by a member that did not send it
                self._refuse("chunks", others[0], p, f"{len(others)} sender(s) staged "
                             f"{x.id} besides its source {source}; dropped")
            if not st.install(x.id, p, keep=e.keep, source=source):
                self.stats["install_without_data"] += 1
                log.error("member %d installs %s without its data", self.me, x)
        elif e.kind == "discard":
            assert x is not None
            self._transfer_from.pop(x.id, None)
            st.discard(x.id)
        elif e.kind == "clear":
            st.clear(p)
        self._events.append(EffectDone(e.id, True))     # promote: nothing moves

    async def _transfer(self, eid: int, to: int, mode: str, mid: tuple[int, int], p: int,
                        entries: list[Entry]) -> None:
        ok = False
        peer = self.peers.get(to)
        if peer is not None:
            fut = self._wait("chunk", to, eid)
            limit = self.settings.chunk_bytes
            seq, lo, size = 0, 0, 0
            for i, (k, v, _) in enumerate(entries):
                n = 4 * len(k) + len(v) + 24          # an upper bound of the entry's bytes
                if i > lo and (size + n > limit or i - lo == wire.MAX_ITEMS):
                    # (a chunk over the limit holds one entry)
                    peer.send(wire.frame("chunk", eid, mode, mid[0], mid[1], p,
                                         [list(kv) for kv in entries[lo:i]], seq, False))
                    seq, lo, size = seq + 1, i, 0
                size += n
            peer.send(wire.frame("chunk", eid, mode, mid[0], mid[1], p,
                                 [list(kv) for kv in entries[lo:]], seq, True))
            self.stats["bytes_sent"] += sum(len(e[1]) for e in entries)
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
        s = self.settings
        if len(self._conns) >= s.max_connections:
            # make room by closing the oldest connection that has not authenticated (a
            # handshake takes one round trip: an outsider holding connections open loses
            # them first); with every connection authenticated, refuse this one
            self.stats["connections_over_limit"] += 1
            pending = [(st[0], w) for w, st in self._conns.items() if not st[2]]
            if not pending:
                writer.transport.abort()
                return
            old = min(pending, key=lambda x: x[0])[1]
            self._conns.pop(old, None)
            old.transport.abort()
        now = time.monotonic()
        state = self._conns[writer] = [now, now, 0.0]
        sender = -1
        try:
            role, member = await auth.accept(reader, writer, secret=s.secret,
                                             cluster_name=s.cluster_name)
            state[1], state[2] = time.monotonic(), 1.0
            self.stats["connections_authenticated"] += 1
            if role == "peer":
                if member == self.me:
                    raise wire.WireError(f"a peer connection naming this member ({member})")
                sender = member
                await self._peer_loop(sender, reader, state)
            else:
                await self._client_loop(reader, writer, state)
        except auth.AuthError as exc:
            self.stats["auth_failed"] += 1
            self.stats[f"auth_failed_{exc.code}"] += 1
            log.warning("member %d refuses a connection: %s: %s", self.me, exc.code, exc)
            with contextlib.suppress(OSError, RuntimeError):
                writer.write(wire.frame("error", -1, exc.code, str(exc), None))
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
            self._conns.pop(writer, None)
            writer.close()

    async def _read(self, reader: asyncio.StreamReader, limits: wire.Caps,
                    cpu: list[float]) -> tuple[Any, ...] | None:
        """One frame read and checked (:func:`wire.read_frame`, :func:`wire.parse`);
        ``cpu[0]``: the CPU seconds that took (see :meth:`_decoded`)."""
        cpu[0] = 0.0
        obj = await wire.read_frame(reader, self.settings.max_frame, limits, cpu)
        if obj is None:
            return None
        t = time.thread_time()
        try:
            return wire.parse(obj)
        finally:
            cpu[0] += time.thread_time() - t

    def _decoded(self, seconds: float, frame: float = 0.0) -> None:
        """Count ``seconds`` of CPU decoding (``stats["decode_us"]``, the sum) and the
        frame's whole, ``frame`` (default ``seconds``: ``stats["decode_us_max"]``, the
        longest; the event loop does nothing else meanwhile, docs/node.md §8)."""
        self.stats["decode_us"] += int(seconds * 1e6)
        self.stats["decode_us_max"] = max(self.stats["decode_us_max"],
                                          int(max(seconds, frame) * 1e6))

    async def _peer_loop(self, sender: int, reader: asyncio.StreamReader,
                         state: list[float]) -> None:
        P, R = self.config.partition_count, self.config.replica_count
        limits, cpu = self._peer_limits, [0.0]
        for _ in range(2**62):                  # ends with the connection
            try:
                f = await self._read(reader, limits, cpu)
            finally:
                self._decoded(cpu[0])
            if f is None:
                return
            state[1] = time.monotonic()
            tag = f[0]
            known = any(m == sender for m, _, _ in self.view)
            if tag == "hb":             # (an earlier runtime's heartbeat: membership's now)
                if f[1] != sender:
                    raise wire.WireError(f"hb: member id {f[1]} on member {sender}'s connection")
            elif tag == "msg":
                t = time.thread_time()
                try:
                    m = wire.decode_message(f[1], P, R)
                finally:
                    took = time.thread_time() - t
                    self._decoded(took, took + cpu[0])
                self.stats["messages_received"] += 1
                if type(m) in MEMBERSHIP_MESSAGES:
                    self._ms_feed(MessageReceived(sender, m, f[2]))
                    continue
                if type(m) is MigrationTransfer and m.sender == sender:
                    # the member whose staged data a commit of this migration installs
                    while len(self._transfer_from) >= 4096:
                        self._transfer_from.pop(next(iter(self._transfer_from)))
                    self._transfer_from[m.migration.id] = sender
                self._feed(MessageReceived(sender, m, f[2]))  # (the node rejects strangers)
            elif tag == "members":
                self._on_members(sender, f[1], f[2], f[3])
            elif tag == "chunk":
                self._on_chunk(sender, known, *f[1:])
            elif tag == "chunk_ack":
                self._resolve("chunk", sender, f[1], f[2])
            elif tag == "backup":
                self._on_backup(sender, known, f[1], f[2], f[3], f[4])
            elif tag == "backup_ack":
                self._resolve("backup", sender, f[1], f[2])
            else:
                raise wire.WireError(f"{tag}: not a member-to-member frame")

    def _refuse(self, what: str, sender: int, p: int, why: str) -> None:
        """Count (``stats[what + "_refused"]``) and note a data or membership frame that
        fails its check."""
        self.stats[f"{what}_refused"] += 1
        self.recent.append(f"{self.now()} ms {what} from {sender} p{p} refused: {why}")
        log.warning("member %d refuses %s from member %d (partition %d): %s",
                    self.me, what, sender, p, why)

    def _chunk_refusal(self, sender: int, known: bool, mode: str, mid: tuple[int, int],
                       p: int) -> str:
        """Why a chunk from ``sender`` must not be applied ('' when it may).

        Safe design: data arrives staged (``stage``) under a migration id, apart per
        sender; a commit installs only what the member that sent the migration's transfer
        staged (:meth:`_effect`). Legacy design: data is merged on arrival (``merge``),
        from a member this table lists as holding the partition; a replica sync
        (migration id (-1, -1)) only from the owner, to a backup.
        """
        node = self.node
        if not known:
            return "not a member"
        if p >= self.config.partition_count:
            return "no such partition"
        legacy = self.config.design == "legacy"
        if mode == "stage":       # (a newcomer stages its first copies before its table)
            return "" if not legacy and mid != (-1, -1) else "no staged copies in this design"
        if node is None or not node.initialized:
            return "no partition table yet"
        if mode != "merge":
            return f"unknown mode {mode[:20]!r}"
        if not legacy:
            return "the safe design never merges data on arrival"
        row = node.replicas[p].tolist()
        if mid == (-1, -1):
            if row[0] != sender or self.me not in row[1:self.config.backup_count + 1]:
                return "a replica sync comes from the owner to a backup"
        elif sender not in row:
            return "the sender holds no replica of the partition"
        return ""

    def _on_chunk(self, sender: int, known: bool, eid: int, mode: str, id0: int, id1: int,
                  p: int, entries: list[Entry], seq: int, last: bool) -> None:
        why = self._chunk_refusal(sender, known, mode, (id0, id1), p)
        if not why and mode == "stage":
            if not self.store.stage((id0, id1), entries, first=seq == 0, sender=sender,
                                    partition=p):
                why = "the migration was staged for another partition"
            elif seq == 0:
                self._staged_at[((id0, id1), sender)] = time.monotonic()
        elif not why:
            self.store.put(p, entries)
        if why:
            self._refuse("chunks", sender, p, why)
        else:
            self.stats["bytes_received"] += sum(len(e[1]) for e in entries)
        if last or why:
            peer = self.peers.get(sender)
            if peer is not None:
                peer.send(wire.frame("chunk_ack", eid, not why))

    def _on_backup(self, sender: int, known: bool, req: int, p: int, version: int,
                   entries: list[Entry]) -> None:
        """A write's copy: only from the member this table shows as the partition's owner,
        at this table's partition version, to a member at a backup index."""
        node = self.node
        why = ""
        if not known:
            why = "not a member"
        elif node is None or not node.initialized:
            why = "no partition table yet"
        elif p >= self.config.partition_count:
            why = "no such partition"
        elif node.replicas.item(p, 0) != sender:
            why = f"the owner is {node.replicas.item(p, 0)}"
        elif not node.accepts_backup(p, sender):       # (docs/design.md §7.11(b))
            why = "not a backup here"
        elif node.versions.item(p) != version:
            why = f"partition version {version}, here {node.versions.item(p)}"
        elif not self._serving():
            why = "this member cannot confirm it is in the cluster's majority"
        if why:
            self._refuse("backups", sender, p, why)
        else:
            self.store.put(p, entries)
        peer = self.peers.get(sender)
        if peer is not None:
            peer.send(wire.frame("backup_ack", req, not why))

    def _on_members(self, sender: int, version: int, next_id: int,
                    members: list[MemberEntry]) -> None:
        """Members' addresses, from a member of this member's list: only addresses of
        members not known yet are taken (docs/node.md §1). Who is in the cluster is the
        membership machine's, never this frame's."""
        if not any(m == sender for m, _, _ in self.view):
            self._refuse("members", sender, -1, "not a member")
            return
        self.next_id = max(self.next_id, next_id)
        ids = {m for m, _, _ in self.view}
        self._learn([e for e in members if e[0] in ids or e[0] not in self.addresses])

    # ------------------------------------------------------------------ clients
    async def _client_loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           state: list[float]) -> None:
        pending: set[asyncio.Task[None]] = set()
        limits, cpu = self._client_limits, [0.0]
        try:
            for _ in range(2**62):              # ends with the connection
                try:
                    f = await self._read(reader, limits, cpu)
                finally:
                    self._decoded(cpu[0])
                if f is None:
                    return
                state[1] = time.monotonic()
                t = asyncio.get_running_loop().create_task(self._answer(f, writer))
                pending.add(t)
                t.add_done_callback(pending.discard)
        finally:
            for t in pending:
                t.cancel()

    async def _answer(self, f: tuple[Any, ...], writer: asyncio.StreamWriter) -> None:
        tag, req = f[0], f[1]
        out: Any
        try:
            if tag in ("put", "merge", "merge_latest", "get"):
                # a data answer names the member list it was served under (docs/node.md §4)
                if tag == "get":
                    got: Any = self._get(f[2], f[3])
                else:
                    got = await self._put(f[2], f[3], merge=_MERGES[tag])
                out = {"result": got, "term": self.view_term, "version": self.view_version}
            elif tag == "locate":
                out = self._locate()
            elif tag == "status":
                out = self.status()
            elif tag == "join":
                out = await self._on_join(f[2], f[3], f[4])
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
        if not self._serving():
            raise _Refused("no_quorum", f"member {self.me} cannot confirm it is in the "
                                        f"cluster's majority (split-brain protection)")
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

    async def _put(self, p: int, entries: list[Entry], merge: str = "") -> int:
        """A client's write (``merge`` ""): each entry takes this member's clock as its
        update time. A removed member's data (``merge`` "put_if_absent": where this member
        lacks the key; "latest_update": where it lacks the key or holds it with an older
        update time) keeps the times it carries."""
        node = self._owner_check(p)
        self._check_keys(p, [e[0] for e in entries])
        if not merge:
            now = time.time_ns() // 1_000_000
            entries = [(k, v, now) for k, v, _ in entries]
        else:                         # (the cluster's own entry wins unless older)
            held = self.store.updated(p, [e[0] for e in entries])
            entries = [e for e, t in zip(entries, held)
                       if t < 0 or (merge == "latest_update" and e[2] > t)]
            if not entries:
                return 0
        backups = node.backups(p).tolist()
        live = {m for m, _, _ in self.view}
        self._req += 1
        req = self._req
        data = wire.frame("backup", req, p, node.versions.item(p), [list(e) for e in entries])
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
        if not self._serving():           # its table may be a cut-off side's: ask another
            raise _Refused("no_quorum", f"member {self.me} cannot confirm it is in the "
                                        f"cluster's majority (split-brain protection)")
        return {"member": self.me, "partitions": self.config.partition_count,
                "replicas": np.ascontiguousarray(node.replicas, "<i4").tobytes(),
                "replica_count": self.config.replica_count,
                "members": [list(m) for m in self.view], "version": self.view_version,
                "term": self.view_term, "stamp": node.stamp}

    async def _on_join(self, host: str, port: int, config: Any) -> dict[str, Any]:
        if self.node is None:
            raise _Refused("not_ready", f"member {self.me} is not in a cluster yet")
        if self._leaving or not self._serving():
            raise _Refused("not_ready", f"member {self.me} cannot confirm it is in the "
                                        f"cluster's majority")
        if not self.is_master:
            _, mh, mp = self.view[0]
            raise _Refused("redirect", "join through the master", [mh, mp])
        mine = self.settings.cluster_config()
        if config != mine:
            raise _Refused("config_mismatch", f"the cluster runs with {mine}, got {config}")
        if any((h, p) == (host, port) for _, h, p in self.view):
            raise _Refused("not_ready", f"{host}:{port} is a member's address; retry once "
                                        f"that member is gone")
        # the joiner must answer at the address it gives, authenticate, and be outside any
        # cluster: no phantom member is ever listed
        try:
            st = await self._request(host, port, "status", timeout=2.0)
        except (OSError, asyncio.TimeoutError, ConnectionError, wire.WireError) as exc:
            self.stats["joins_refused"] += 1
            raise _Refused("unreachable", f"no joining member answers at {host}:{port}: "
                                          f"{exc or type(exc).__name__}") from None
        if st[0] != "ok" or not isinstance(st[2], dict) or st[2].get("member") != -1 \
                or st[2].get("port") != port:
            self.stats["joins_refused"] += 1
            raise _Refused("bad_join", f"{host}:{port} is not a member waiting to join")
        if not self.is_master or any((h, p) == (host, port) for _, h, p in self.view):
            raise _Refused("not_ready", "the member list changed meanwhile; retry")
        mid = self.next_id
        self.next_id += 1
        self.stats["joins"] += 1
        self.addresses[mid] = (host, port)
        self.peers[mid] = _Peer(self, mid, host, port)
        self._ms_feed(MessageReceived(mid, JoinRequest(mid, mid)))   # admitted next change
        return {"member": mid, "members": [[m, *self.addresses[m]] for m, _, _ in self.view],
                "version": self.view_version, "next_id": self.next_id}

    def status(self) -> dict[str, Any]:
        """What ``hzfast cluster status`` shows of this member (JSON-ready)."""
        node = self.node
        init = node is not None and node.initialized
        return {
            "member": self.me, "pid": os.getpid(), "port": self.port,
            "master": self.view[0][0] if self.view else -1,
            "members": [list(m) for m in self.view], "version": self.view_version,
            "term": self.ms.list.term if self.ms is not None and self.ms.list else 0,
            "serving": self._serving(),
            "initialized": init,
            "stamp": node.stamp if node is not None and init else None,
            "state": node.state() if node is not None else "STARTING",
            "busy": bool(node.busy) if node is not None and self.is_master else False,
            "active": len(node.active) if node is not None else 0,
            # protocol messages dropped for an older term than the node's (§13.1(f))
            "stale_term": int(node.stale_term) if node is not None else 0,
            "owned": int((node.replicas[:, 0] == self.me).sum()) if node is not None else 0,
            "entries": self.store.entries(), "bytes": self.store.nbytes(),
            "migrations_committed": self.marks["master_committed"],
            "migrations_failed": self.marks["migration_failed"],
            "marks": dict(self.marks), "stats": dict(self.stats),
            "settings": self._settings_shown,
            "uptime_ms": self.now(), "cpu_ms": int(time.process_time() * 1000), "recent": list(self.recent)[-20:],
        }


def _v4_loopback(host: str) -> bool:
    """Whether ``host`` is an IPv4 loopback address literal (127.0.0.0/8)."""
    try:
        return ipaddress.ip_address(host) in _LOOPBACK4
    except ValueError:
        return False


_LOOPBACK4 = ipaddress.ip_network("127.0.0.0/8")


class _Refused(Exception):
    """A client request answered with an error frame."""

    def __init__(self, code: str, text: str, detail: Any = None) -> None:
        super().__init__(text)
        self.code, self.text, self.detail = code, text, detail
