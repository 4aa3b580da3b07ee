"""hzfast.node's runtime in one process: members on 127.0.0.1, a client, a join.

The processes-and-SIGKILL tests are tests/node/test_chaos.py; here the members share one
event loop, so the test can look inside them (store, protocol node, stats)."""
from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from hzfast.node import Client, Member, Settings, Store
from hzfast.node.chaos import settled


async def _settle(members: list[Member], timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if settled([m.status() for m in members], len(members)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError([m.status()["state"] for m in members])


async def _cluster(n: int, **kw: int) -> list[Member]:
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
])
def test_settings_are_checked(kw: dict, err: type, text: str) -> None:
    with pytest.raises(err, match=text):
        Settings(**kw)
    with pytest.raises(TypeError, match="Settings"):
        Member("not settings")        # type: ignore[arg-type]


def test_store_counts_bytes_as_it_changes() -> None:
    s = Store()
    s.put(1, [("a", b"xx"), ("b", b"yyy")])
    s.put(1, [("a", b"z")])
    assert (s.entries(), s.nbytes()) == (2, 4)
    s.stage((1, 1), [("c", b"1234")], first=True)
    assert s.install((1, 1), 1, keep=True) and s.nbytes() == 8
    assert not s.install((9, 9), 1, keep=True)           # nothing staged: refused
    s.stage((1, 2), [("d", b"1")], first=True)
    assert s.install((1, 2), 1, keep=False) and (s.entries(), s.nbytes()) == (0, 0)
    s.stage((1, 3), [("e", b"1")], first=True)
    s.discard((1, 3))
    assert s.staged == {}
