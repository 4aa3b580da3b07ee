"""Bad input against real member processes (hzfast.node): the node keeps running, loses
nothing, and says what was wrong.

Two members (31 partitions, 1 backup) run as ``python -m hzfast node`` processes for the
whole module; entries are written through :class:`hzfast.node.Client` first. Raw sockets,
authenticated with the cluster's secret (hzfast.node.auth.connect_socket: what an insider
can do; tests/node/test_security.py has the outsiders), then send garbage, truncated
frames, oversized length prefixes, msgpack that is not a frame, frames from a member id
the cluster does not know, and client writes to the wrong member or partition. The last test checks that both processes are alive, the cluster is
still settled, and every entry written first reads back with its value. Tests run in file
order (the last one relies on that).
"""
from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import numpy as np
import pytest

from hzfast.hashing import partition_ids
from hzfast.node import auth, wire
from hzfast.node.chaos import LocalCluster, Process, settled
from hzfast.protocol import messages as msg

P = 31
IO_TIMEOUT = 10.0             # seconds any socket operation may take
SECRETS: dict[int, bytes] = {}   # port -> its cluster's secret


class Cluster:
    def __init__(self, lc: LocalCluster, procs: list[Process], entries: dict[str, bytes]):
        self.lc, self.procs, self.entries = lc, procs, entries

    def by_id(self, member: int) -> Process:
        return next(p for p in self.procs if p.member == member)


# ---------------------------------------------------------------------------- raw I/O
def _recv_exactly(s: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:           # bounded: each recv has the socket's timeout
        chunk = s.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_answer(s: socket.socket) -> list[Any] | None:
    """One frame from the member, or None when it closed the connection."""
    try:
        head = _recv_exactly(s, 4)
        if head is None:
            return None
        body = _recv_exactly(s, struct.unpack(">I", head)[0])
    except ConnectionResetError:
        return None
    return None if body is None else msgpack.unpackb(body, raw=False)


def connect(proc: Process, member: int = -1) -> socket.socket:
    """An authenticated connection: a client's, or with ``member`` a peer's."""
    s = auth.connect_socket(proc.address, secret=SECRETS[proc.port], timeout=IO_TIMEOUT,
                            role="peer" if member >= 0 else "client", member=member)
    s.settimeout(IO_TIMEOUT)
    return s


def max_frame(proc: Process) -> int:
    return int(status(proc)["settings"]["max_frame"])


def request(proc: Process, tag: str, *fields: Any) -> list[Any]:
    """One client request on a fresh connection; the answer frame."""
    with connect(proc) as s:
        s.sendall(wire.frame(tag, 1, *fields))
        got = read_answer(s)
    assert got is not None, f"member {proc.member} closed the connection on {tag}"
    return got


def status(proc: Process) -> dict[str, Any]:
    f = request(proc, "status")
    assert f[0] == "ok", f
    st: dict[str, Any] = f[2]
    return st


def counter(proc: Process, group: str, name: str) -> int:
    return int(status(proc)[group].get(name, 0))


def wait_for(what: str, cond: Callable[[], bool], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


def closed_with_bad_frame(s: socket.socket, needle: str) -> None:
    """The member answers with a ``bad_frame`` error naming the problem, then closes."""
    got = read_answer(s)
    if got is not None:               # the error frame (unless the reset overtook it)
        assert got[0] == "error" and got[2] == "bad_frame", got
        assert needle in got[3], got
        got = read_answer(s)
    assert got is None, f"the connection stayed open: {got}"


def replicas(proc: Process) -> np.ndarray:
    f = request(proc, "locate")
    assert f[0] == "ok", f
    info = f[2]
    return np.frombuffer(info["replicas"], "<i4").reshape(info["partitions"],
                                                          info["replica_count"])


def key_of(p: int, prefix: str = "bad") -> str:
    """A key of partition ``p``."""
    cands = [f"{prefix}-{p}-{i}" for i in range(2000)]
    ids = partition_ids(cands, P)
    hits = np.flatnonzero(ids == p)
    assert hits.size, f"no key of partition {p} among 2000 candidates"
    return cands[int(hits[0])]


# ---------------------------------------------------------------------------- the cluster
def _settled(procs: list[Process]) -> bool:
    try:
        return settled([status(p) for p in procs], len(procs))
    except OSError:
        return False


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    lc = LocalCluster(partitions=P, backups=1, suspect_ms=3000, log_level="WARNING",
                      log_dir=str(tmp_path_factory.mktemp("members")))
    try:
        a = lc.start_member()
        b = lc.start_member(a.address)
        procs = [a, b]
        SECRETS.update({a.port: lc.secret, b.port: lc.secret})
        wait_for("the two members settle", lambda: _settled(procs), 30.0)
        entries = {f"entry-{i}": f"value-{i}-".encode() * (1 + i % 7) for i in range(300)}

        async def write() -> None:
            async with lc.client([a.address, b.address], deadline=20.0) as c:
                acked, failed = await c.put_many(entries)
            assert failed == {} and sorted(acked) == sorted(entries)

        asyncio.run(asyncio.wait_for(write(), 60.0))
        yield Cluster(lc, procs, entries)
    finally:
        lc.stop_all()


# ---------------------------------------------------------------------------- connections
def test_garbage_bytes_close_the_connection(cluster):
    a = cluster.procs[0]
    before = counter(a, "stats", "connections_rejected")
    with connect(a) as s:                         # "GET " read as a length: oversized
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        closed_with_bad_frame(s, "outside 1..")
    with connect(a) as s:                         # a small length, bytes that are no msgpack
        s.sendall(b"\x00\x00\x00\x06\xc1\xc1\xc1\xc1\xc1\xc1")
        closed_with_bad_frame(s, "not msgpack")
    assert counter(a, "stats", "connections_rejected") == before + 2


def test_truncated_frame_then_close(cluster):
    b = cluster.procs[1]
    before = counter(b, "stats", "connections_rejected")
    data = wire.frame("put", 1, 0, [["k", b"v" * 100]])
    with connect(b) as s:
        s.sendall(data[:-10])
        s.shutdown(socket.SHUT_WR)                # the stream ends inside the frame
        closed_with_bad_frame(s, f"truncated ({len(data) - 14} of {len(data) - 4} bytes)")
    with connect(b) as s:                         # inside the length prefix
        s.sendall(data[:2])
        s.shutdown(socket.SHUT_WR)
        closed_with_bad_frame(s, "truncated length prefix")
    assert counter(b, "stats", "connections_rejected") == before + 2


def test_oversized_length_prefix(cluster):
    a = cluster.procs[0]
    before = counter(a, "stats", "connections_rejected")
    with connect(a) as s:
        s.sendall(struct.pack(">I", 2**32 - 1) + b"\x93" * 64)
        closed_with_bad_frame(s, f"length {2**32 - 1} outside 1..{max_frame(a)}")
    with connect(a) as s:
        s.sendall(b"\x00\x00\x00\x00")
        closed_with_bad_frame(s, "length 0 outside")
    assert counter(a, "stats", "connections_rejected") == before + 2


@pytest.mark.parametrize("body", [msgpack.packb({"put": 1}), msgpack.packb([1, 2, 3]),
                                  msgpack.packb(["nope", 1]), msgpack.packb(["put", 1, 0]),
                                  msgpack.packb(["put", 1, 0, [[5, b"v"]]])],
                         ids=["map", "untagged", "unknown-tag", "short", "int-key"])
def test_valid_msgpack_that_is_not_a_frame(cluster, body):
    b = cluster.procs[1]
    before = counter(b, "stats", "connections_rejected")
    with connect(b) as s:
        s.sendall(struct.pack(">I", len(body)) + body)
        closed_with_bad_frame(s, "")
    assert counter(b, "stats", "connections_rejected") == before + 1


# ---------------------------------------------------------------------------- unknown member
def test_frames_from_an_unknown_member_are_refused(cluster):
    a, b = cluster.procs
    reps = replicas(a)
    # a partition b backs up: only the sender's identity makes the backup wrong
    p = int(np.flatnonzero(reps[:, 1] == b.member)[0])
    stranger = 999
    assert stranger not in (a.member, b.member)
    before = status(b)
    rejected0 = before["marks"].get("message_rejected", 0)
    refused0 = before["stats"].get("backups_refused", 0)
    received0 = before["stats"].get("messages_received", 0)
    key = key_of(p, "stranger")
    with connect(b, member=stranger) as s:
        # (under b's own term: the one below is dropped unread for its older term)
        fetch = wire.encode_message(msg.FetchPartitionState(stranger))
        s.sendall(wire.frame("msg", fetch, before["term"] - 1))
        wait_for("b drops the message of an older term",
                 lambda: status(b)["stale_term"] == before["stale_term"] + 1)
        s.sendall(wire.frame("msg", fetch, before["term"]))
        s.sendall(wire.frame("backup", 77, p, 0, [[key, b"forged"]]))
        wait_for("b counts the refused backup",
                 lambda: counter(b, "stats", "backups_refused") == refused0 + 1)
        wait_for("b rejects the message",
                 lambda: counter(b, "marks", "message_rejected") == rejected0 + 1)
        s.settimeout(0.3)
        with pytest.raises(TimeoutError):       # no backup_ack to a stranger
            s.recv(1)
    after = status(b)
    # the member's own peers send it messages meanwhile (state checks): at least ours
    assert after["stats"]["messages_received"] >= received0 + 1
    assert any(f"FetchPartitionState from {stranger}: unknown member" in r
               for r in after["recent"]), after["recent"]
    assert after["entries"] == before["entries"]  # nothing forged was stored
    owner = cluster.by_id(int(reps[p, 0]))
    got = request(owner, "get", p, [key])
    assert got[:2] == ["ok", 1] and got[2]["result"] == [None]


@pytest.fixture
def lone_member(tmp_path: Any) -> Iterator[Process]:
    """A one-member cluster of its own (a test here may take it down)."""
    lc = LocalCluster(partitions=P, backups=1, log_level="WARNING", log_dir=str(tmp_path))
    try:
        m = lc.start_member()
        SECRETS[m.port] = lc.secret
        yield m
    finally:
        lc.stop_all()


def test_a_member_list_from_an_unknown_member_is_ignored(lone_member):
    m = lone_member
    assert status(m)["members"] == [[m.member, m.host, m.port]]
    stranger = 999
    with connect(m, member=stranger) as s:
        s.sendall(wire.frame("members", 10**6, 1000, [[stranger, "127.0.0.1", 1]]))
        s.settimeout(1.0)                 # give the member a second to act on it
        try:
            closed = s.recv(1) == b""
        except TimeoutError:
            closed = False
    assert not closed, "the member closed the stranger's connection (it stopped)"
    assert m.popen.poll() is None, f"member {m.member} exited ({m.popen.returncode})"
    st = status(m)
    assert st["members"] == [[m.member, m.host, m.port]]
    assert st["version"] == 1
    assert st["stats"]["members_refused"] == 1
    assert any(f"members from {stranger} p-1 refused: not a member" in r for r in st["recent"])


# ---------------------------------------------------------------------------- client writes
def test_put_to_a_non_owner(cluster):
    a, b = cluster.procs
    reps = replicas(a)
    for owner, other in ((a, b), (b, a)):
        p = int(np.flatnonzero(reps[:, 0] == owner.member)[0])
        f = request(other, "put", p, [[key_of(p), b"x"]])
        assert f[0] == "error" and f[2] == "not_owner", f
        assert f[4] == owner.member
        assert f"does not own partition {p}" in f[3]


def test_put_with_a_key_of_another_partition(cluster):
    a = cluster.procs[0]
    reps = replicas(a)
    p = int(np.flatnonzero(reps[:, 0] == a.member)[0])
    q = (p + 1) % P
    entries = [[key_of(p), b"fine"], [key_of(q), b"misplaced"]]
    before = counter(a, "stats", "puts")
    f = request(a, "put", p, entries)
    assert f[0] == "error" and f[2] == "wrong_partition", f
    assert f"partition {p}" in f[3]
    assert counter(a, "stats", "puts") == before       # nothing of the batch was written
    assert request(a, "get", p, [key_of(p)])[2]["result"] == [None]


@pytest.mark.parametrize("p", [P, P + 1, 10_000_000])
def test_put_to_a_partition_beyond_the_table(cluster, p):
    a = cluster.procs[0]
    f = request(a, "put", p, [["k", b"v"]])
    assert f[0] == "error" and f[2] == "bad_partition", f
    assert f"partition {p} is not below {P}" in f[3]


def test_put_to_a_partition_the_wire_refuses(cluster):
    a = cluster.procs[0]
    before = counter(a, "stats", "connections_rejected")
    for p in (-1, 10_000_001):
        with connect(a) as s:
            s.sendall(wire.frame("put", 1, p, [["k", b"v"]]))
            closed_with_bad_frame(s, f"put.1: {p} outside 0..10000000")
    assert counter(a, "stats", "connections_rejected") == before + 2


# ---------------------------------------------------------------------------- frame size
def _put_of_size(p: int, key: str, size: int) -> bytes:
    """A put frame for ``key`` whose body is exactly ``size`` bytes."""
    base = len(wire.frame("put", 1, p, [[key, b""]])) - 4 - 2   # less an empty bin 8
    n = size - base - 5                            # a bin 32 header: 1 byte + 4 of length
    data = wire.frame("put", 1, p, [[key, b"z" * n]])
    assert len(data) - 4 == size, (len(data) - 4, size)
    return data


def test_a_frame_just_under_the_max_is_accepted(cluster):
    a = cluster.procs[0]
    p = int(np.flatnonzero(replicas(a)[:, 0] == a.member)[0])
    key = key_of(p, "big")
    size = max_frame(a) - 128      # room for the backup frame and a migration chunk's fields
    with connect(a) as s:
        s.sendall(_put_of_size(p, key, size))
        got = read_answer(s)
    assert got[:2] == ["ok", 1] and got[2]["result"] == 1, got
    sent = msgpack.unpackb(_put_of_size(p, key, size)[4:])[3][0][1]
    got = request(a, "get", p, [key])
    assert got[0] == "ok" and got[2]["result"] == [sent]


def test_a_put_of_exactly_the_max_is_backed_up(cluster):
    a = cluster.procs[0]
    p = int(np.flatnonzero(replicas(a)[:, 0] == a.member)[0])
    key = key_of(p, "edge")
    with connect(a) as s:
        s.sendall(_put_of_size(p, key, max_frame(a)))
        got = read_answer(s)
    assert got is not None and got[:3] != ["error", 1, "backup_failed"], "the finding"
    # fixed either way: acknowledged (owner and backup hold it), or refused up front as too
    # large for the members' frames, and then not written at all
    if got[0] == "error":
        assert got[2] == "too_large", got[:4]
        assert request(a, "get", p, [key])[2]["result"] == [None]
    else:
        assert got[:2] == ["ok", 1] and got[2]["result"] == 1, got[:4]


def test_a_frame_over_the_max_closes_the_connection(cluster):
    b = cluster.procs[1]
    before = counter(b, "stats", "connections_rejected")
    with open(b.log, "rb") as f:
        log_before = f.read().count(b"closes a connection")
    p = int(np.flatnonzero(replicas(b)[:, 0] == b.member)[0])
    limit = max_frame(b)
    data = _put_of_size(p, key_of(p, "huge"), limit + 1)
    with connect(b) as s:
        try:
            s.sendall(data)       # the member may close before it has read it all
        except (BrokenPipeError, ConnectionResetError):
            pass
        closed_with_bad_frame(s, f"length {limit + 1} outside 1..{limit}")
    assert counter(b, "stats", "connections_rejected") == before + 1

    def logged() -> bool:
        with open(b.log, "rb") as f:
            text = f.read()
        return (text.count(b"closes a connection") == log_before + 1
                and f"length {limit + 1} outside".encode() in text)
    wait_for("the member logs the closed connection", logged, 5.0)


# ---------------------------------------------------------------------------- afterwards
def test_nothing_was_lost(cluster):
    """Last: both processes alive, the cluster settled, every entry reads back."""
    for p in cluster.procs:
        assert p.popen.poll() is None, f"member {p.member} exited"
    wait_for("the cluster is settled", lambda: _settled(cluster.procs), 10.0)

    async def read() -> dict[str, bytes | None]:
        async with cluster.lc.client([p.address for p in cluster.procs], deadline=10.0) as c:
            return await c.get_many(list(cluster.entries))

    got = asyncio.run(asyncio.wait_for(read(), 30.0))
    assert got == cluster.entries
    assert sum(status(p)["entries"] for p in cluster.procs) >= 2 * len(cluster.entries)
