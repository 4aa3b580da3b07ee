"""hzfast.node's runtime in one process: members on 127.0.0.1, a client, a join.

The processes-and-SIGKILL tests are tests/node/test_chaos.py; here the members share one
event loop, so the test can look inside them (store, protocol node, stats)."""
from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import numpy as np
import pytest

from hzfast.node import Client, Member, Settings, Store, auth, wire
from hzfast.node.chaos import settled


async def _settle(members: list[Member], timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if settled([m.status() for m in members], len(members)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError([m.status()["state"] for m in members])


async def _cluster(n: int, **kw: Any) -> list[Member]:
    first = Member(Settings(partitions=61, **kw))
    await first.start()
    out = [first]
    for _ in range(n - 1):
        m = Member(Settings(partitions=61, join=("127.0.0.1", first.port), **kw))
        await m.start()
        out.append(m)
    await _settle(out)
    return out


@pytest.mark.parametrize("delay", [0, 2])
def test_writes_reads_and_a_join_move_the_data(delay: int) -> None:
    async def main() -> None:
        ms = await _cluster(2, link_delay_ms=delay)
        try:
            assert [m.me for m in ms] == [1, 2] and ms[0].is_master
            items = {f"k{i}": str(i).encode() for i in range(3000)}
            async with Client([("127.0.0.1", ms[1].port)]) as c:
                acked, failed = await c.put_many(items)
                assert sorted(acked) == sorted(items) and not failed
                # every acknowledged entry is on its owner and its backup, nowhere else
                node = ms[0].node
                assert node is not None
                parts = c.route(list(items))
                for k, p in zip(items, parts.tolist()):
                    holders = [m.me for m in ms if m.store.get(p, [k]) == [items[k]]]
                    assert holders == sorted(node.replicas[p, :2].tolist())
                joiner = Member(Settings(partitions=61, link_delay_ms=delay,
                                         join=("127.0.0.1", ms[1].port)))   # via a non-master
                await joiner.start()
                ms.append(joiner)
                await _settle(ms)
                assert joiner.me == 3 and joiner.store.entries() > 0
                assert ms[0].status()["migrations_committed"] > 0
                await c.locate()
                st = ms[0].status()            # the table comes with its member list's key
                assert c.list_key == (st["term"], st["version"]) and st["version"] >= 2
                got = await c.get_many(list(items))
                assert got == items
            # data sits exactly where the table says, counted once per replica
            total = sum(m.store.entries() for m in ms)
            assert total == 2 * len(items)
            tables = [m.node.replicas for m in ms if m.node is not None]
            assert all(np.array_equal(t, tables[0]) for t in tables)
        finally:
            for m in ms:
                m.stop()
    asyncio.run(main())


def test_membership_decides_the_list_and_the_lease_gates_writes() -> None:
    # the membership machine runs inside each member (docs/node.md §1): a member that loses
    # its lease (here: the others stop answering) refuses writes with no_quorum; a merge
    # writes only the keys the owner lacks
    async def main() -> None:
        ms = await _cluster(3)
        try:
            assert [m.status()["term"] for m in ms] == [1, 1, 1]
            assert all(m.status()["serving"] for m in ms)
            async with Client([("127.0.0.1", ms[0].port)]) as c:
                acked, _ = await c.put_many({f"k{i}": b"one" for i in range(50)})
                assert len(acked) == 50
                merged, _ = await c.put_many({f"k{i}": b"two" for i in range(25, 75)},
                                             if_absent=True)
                assert len(merged) == 50
                got = await c.get_many([f"k{i}" for i in range(75)])
                assert [got[f"k{i}"] for i in (0, 49, 50, 74)] == [b"one"] * 2 + [b"two"] * 2
            for m in ms[1:]:
                m.stop()                   # silent now: no echo reaches member 1 any more
            await asyncio.sleep(ms[0].settings.suspect_ms / 2000 + 0.3)
            assert not ms[0].status()["serving"]
            with pytest.raises(Exception, match="cannot confirm it is in the cluster's "
                                                "majority") as refused:
                ms[0]._owner_check(0)
            assert getattr(refused.value, "code", "") == "no_quorum"
        finally:
            for m in ms:
                m.stop()
    asyncio.run(main())


def test_update_times_travel_with_the_entries_and_latest_update_merges_by_them() -> None:
    # an entry's update time is its owner's clock when it took the write; the backup, a
    # joiner's migrated copy and a merge keep it; latest_update writes only newer entries
    async def main() -> None:
        ms = await _cluster(2)
        try:
            async with Client([("127.0.0.1", ms[0].port)]) as c:
                before = time.time_ns() // 1_000_000
                acked, _ = await c.put_many({f"k{i}": b"one" for i in range(60)})
                after = time.time_ns() // 1_000_000
                assert len(acked) == 60
                parts = c.route([f"k{i}" for i in range(60)]).tolist()

                def times(m: Member, keys: range) -> list[int]:
                    return [m.store.updated(parts[i], [f"k{i}"])[0] for i in keys]

                owner_t = times(ms[0], range(60))    # both hold every entry (1 backup)
                assert all(before <= t <= after for t in owner_t)
                assert times(ms[1], range(60)) == owner_t
                old, new = before - 1, after + 10_000
                merged, failed = await c.put_many(
                    [(f"k{i}", b"stale", old) for i in range(20)]
                    + [(f"k{i}", b"newer", new) for i in range(20, 40)]
                    + [(f"k{i}", b"absent", 5) for i in range(60, 70)], latest_update=True)
                assert len(merged) == 50 and not failed
                got = await c.get_many([f"k{i}" for i in range(70)])
                assert [got[f"k{i}"] for i in (0, 19, 20, 39, 40, 59, 60, 69)] == \
                    [b"one"] * 2 + [b"newer"] * 2 + [b"one"] * 2 + [b"absent"] * 2
                assert times(ms[1], range(20, 21)) == [new]
                with pytest.raises(ValueError, match="exclude each other"):
                    await c.put_many({"a": b"1"}, if_absent=True, latest_update=True)
                joiner = Member(Settings(partitions=61, join=("127.0.0.1", ms[0].port)))
                await joiner.start()
                ms.append(joiner)
                await _settle(ms)
                held = [i for i in range(40) if joiner.store.get(parts[i], [f"k{i}"])[0]]
                assert held                    # migrated copies keep their times
                assert times(joiner, held) == [new if 20 <= i < 40 else owner_t[i]
                                               for i in held]
        finally:
            for m in ms:
                m.stop()
    asyncio.run(main())


def test_addresses_learned_reach_the_membership_machine() -> None:
    # discovery (docs/design.md §13.3(a)): a member learns of another from a members frame
    # before any list names it; its membership machine knows whom to ask from then on
    async def main() -> None:
        ms = await _cluster(2)
        try:
            assert ms[1].ms is not None and 7 not in ms[1].ms._known
            ms[1]._on_members(ms[0].me, 1, 8, [(7, "127.0.0.1", 9)])
            assert 7 in ms[1].ms._known and ms[1].addresses[7] == ("127.0.0.1", 9)
            ms[1]._on_members(99, 1, 8, [(6, "127.0.0.1", 9)])      # not a member: refused
            assert 6 not in ms[1].ms._known and 6 not in ms[1].addresses
        finally:
            for m in ms:
                m.stop()
    asyncio.run(main())


def test_a_join_with_other_settings_is_refused() -> None:
    async def main() -> None:
        ms = await _cluster(1)
        try:
            other = Member(Settings(partitions=62, join=("127.0.0.1", ms[0].port)))
            with pytest.raises(ConnectionError, match="config_mismatch"):
                await other.start()
            other.stop()
        finally:
            for m in ms:
                m.stop()
    asyncio.run(main())


@pytest.mark.parametrize(("kw", "err", "text"), [
    ({"port": -1}, ValueError, "port"),
    ({"port": "1"}, TypeError, "Settings.port"),
    ({"heartbeat_ms": 100, "suspect_ms": 50}, ValueError, "suspect_ms"),
    ({"partitions": 0}, ValueError, "partition_count"),
    ({"design": "fast"}, ValueError, "design"),
    ({"link_delay_ms": -1}, ValueError, "link_delay_ms"),
    ({"max_frame": 10}, ValueError, "max_frame"),
    ({"max_frame": 1 << 20}, ValueError, r"chunk_bytes \+ 1024 = 1049600"),
    ({"host": "0.0.0.0"}, ValueError, "protected mode: 0.0.0.0 is not a loopback address"),
    ({"host": ""}, ValueError, "protected mode: every interface"),
    ({"host": "192.168.1.9", "tls_cert": "c", "tls_key": "k"}, ValueError, "protected mode"),
    ({"secret": b"short"}, ValueError, "at least 16 bytes"),
    ({"secret": "a str"}, TypeError, "Settings.secret must be bytes"),
    ({"tls_cert": "c.pem"}, ValueError, "tls_cert and tls_key go together"),
    ({"tls_ca": "ca.pem"}, ValueError, "tls_ca needs tls_cert"),
    ({"cluster_name": ""}, ValueError, "cluster_name"),
    ({"max_connections": 0}, ValueError, "max_connections"),
    ({"min_cluster_size": 0}, ValueError, "Settings.min_cluster_size"),
    ({"merge_policy": "latest"}, ValueError, "Settings.merge_policy"),
    ({"heartbeat_ms": 100, "suspect_ms": 300}, ValueError, "4 heartbeat_ms"),
])
def test_settings_are_checked(kw: dict, err: type, text: str) -> None:
    with pytest.raises(err, match=text):
        Settings(**kw)
    with pytest.raises(TypeError, match="Settings"):
        Member("not settings")        # type: ignore[arg-type]


def test_store_counts_bytes_as_it_changes() -> None:
    s = Store()
    s.put(1, [("a", b"xx", 0), ("b", b"yyy", 0)])
    s.put(1, [("a", b"z", 0)])
    assert (s.entries(), s.nbytes()) == (2, 4)
    s.stage((1, 1), [("c", b"1234", 0)], first=True)
    assert s.install((1, 1), 1, keep=True) and s.nbytes() == 8
    assert not s.install((9, 9), 1, keep=True)           # nothing staged: refused
    s.stage((1, 2), [("d", b"1", 0)], first=True)
    assert s.install((1, 2), 1, keep=False) and (s.entries(), s.nbytes()) == (0, 0)
    s.stage((1, 3), [("e", b"1", 0)], first=True)
    s.discard((1, 3))
    assert s.staged == {}


def test_settings_max_frame_follows_the_chunk_size_and_the_tables() -> None:
    assert Settings().max_frame == (1 << 20) + (64 << 10)
    assert Settings(chunk_bytes=4 << 20).max_frame == (4 << 20) + (64 << 10)
    big = Settings(partitions=100_000)                     # tables of 100,000 rows
    assert big.max_frame > 2 * 4 * 100_000 * 8
    assert Settings(max_frame=(1 << 20) + 1024).max_frame == (1 << 20) + 1024
    assert "secret" not in repr(Settings(secret=b"s" * 16))


def test_store_installs_only_what_the_source_staged() -> None:
    s = Store()
    s.stage((1, 1), [("k", b"real", 0)], first=True, sender=2, partition=5)
    s.stage((1, 1), [("k", b"FORGED", 0), ("x", b"FORGED", 0)], first=True, sender=9,
            partition=5)
    assert not s.stage((1, 1), [("y", b"1", 0)], first=False, sender=2, partition=6)
    assert s.install((1, 1), 5, keep=True, source=2)
    assert s.get(5, ["k", "x", "y"]) == [b"real", None, None] and s.staged == {}
    s.stage((1, 2), [("k", b"FORGED", 0)], first=True, sender=9, partition=5)
    assert not s.install((1, 2), 5, keep=True, source=2)    # the source staged nothing
    assert s.get(5, ["k"]) == [b"real"]
    s.stage((1, 3), [("k", b"x", 0)], first=True, sender=9, partition=5)
    assert s.drop_staged((1, 3), 9) == 5 and s.staged == {}
    assert s.drop_staged((1, 3), 9) == -1


def test_members_and_clients_need_the_secret() -> None:
    async def main() -> None:
        secret = b"s" * 32
        ms = await _cluster(2, secret=secret)          # peers authenticate with it
        try:
            async with Client([("127.0.0.1", ms[0].port)], secret=secret) as c:
                acked, _ = await c.put_many({"a": b"1"})
                assert acked == ["a"]
            for kw, code in (({"secret": b"t" * 32}, "auth_failed"),
                             ({"secret": secret, "cluster_name": "other"}, "cluster_name")):
                other = Member(Settings(partitions=61, join=("127.0.0.1", ms[0].port), **kw))
                with pytest.raises(ConnectionError, match=code):
                    await other.start()
                other.stop()
            assert ms[0].stats["auth_failed"] >= 2
            assert ms[0].stats["auth_refused_by_peer"] == 0
        finally:
            for m in ms:
                m.stop()
    asyncio.run(main())


def test_silent_and_unauthenticated_connections_are_closed() -> None:
    """An authenticated connection that sends no complete frame for idle_timeout_ms, and a
    connection that does not finish the handshake in auth_timeout_ms, are closed."""
    async def main() -> None:
        ms = await _cluster(1, idle_timeout_ms=400, auth_timeout_ms=400)
        m = ms[0]
        try:
            loop = asyncio.get_running_loop()
            authed = await loop.run_in_executor(None, lambda: auth.connect_socket(
                ("127.0.0.1", m.port), timeout=5.0))
            authed.sendall(wire.frame("status", 1)[:5])          # a frame never finished
            bare = await loop.run_in_executor(None, lambda: socket.create_connection(
                ("127.0.0.1", m.port), timeout=5.0))
            for _ in range(100):                                 # at most 5 s
                if m.stats["idle_timeouts"] and m.stats["auth_timeouts"]:
                    break
                await asyncio.sleep(0.05)
            assert m.stats["idle_timeouts"] == 1 and m.stats["auth_timeouts"] == 1
            for s in (authed, bare):
                got = await loop.run_in_executor(None, s.recv, 1)
                assert got == b""                                # closed by the member
                s.close()
            assert not m._conns                                  # nothing held any more
        finally:
            for x in ms:
                x.stop()
    asyncio.run(main())
