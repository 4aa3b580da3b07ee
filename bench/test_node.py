"""Migration throughput of the real runtime on loopback (hzfast.node, member processes).

4 members, 271 partitions, 1 backup, 100,000 entries of 1 KiB; a 5th member joins and
the figure runs from its ready line (it has joined) to the settled cluster (every member SAFE, equal stamps,
master idle). Compared: ``max_parallel_migrations`` 1 and 10, on the bare loopback (where
5 member processes on 2 cores make the run CPU-bound) and with every member-to-member link
delayed 1 ms each way (``link_delay_ms=1``: a LAN's round trip, where a migration's time
is its round trips, as on a real cluster), and on the bare loopback with TLS between every
member and client (certificates made with ``trustme``). ``extra_info`` carries the
migrations committed, partitions/s and MB/s of replica data moved. Every run checks that
the join settled and that every entry reads back.

``test_steady_writes``: what the membership layer's traffic costs a running cluster. 4
members, heartbeats every 100 ms (the default) or every 2 s (20 times fewer); a client writes
``ENTRIES`` entries of 1 KiB with ``put_many`` (every one acknowledged, and read back);
``extra_info`` has the entries/s and the CPU the 4 idle members (and the idle client) used
per second of a 10 s quiet spell before the writes (docs/node.md).

Run: ``pytest bench/test_node.py -p no:xdist --benchmark-json=/tmp/node.json``.
"""
from __future__ import annotations

import asyncio
import os
import tempfile
import time

import pytest
from _cpu import tree_cpu

from hzfast.node import Client
from hzfast.node.chaos import LocalCluster, Process, _describe, cluster_status, settled

TLS_DIR = tempfile.mkdtemp(prefix="hzfast-bench-tls-")

ENTRIES = int(os.environ.get("HZFAST_BENCH_NODE_ENTRIES", "100000"))
VALUE = 1024


async def _settle(client: Client, addrs: list[tuple[str, int]], timeout: float
                  ) -> list[dict]:
    end = time.monotonic() + timeout
    st: list = []
    while time.monotonic() < end:
        st = list((await cluster_status(client, addrs)).values())
        if settled(st, len(addrs)):
            return st
        await asyncio.sleep(0.02)
    raise AssertionError(f"no settle within {timeout} s: {_describe(st)}")


async def _four_members(cluster: LocalCluster) -> tuple[Process, list[tuple[str, int]], Client]:
    """Start 4 members (the first founds the cluster) and a client of them; return the
    first, the addresses and the client once the cluster has settled."""
    first = cluster.start_member()
    for _ in range(3):
        cluster.start_member(first.address)
    addrs = [p.address for p in cluster.procs]
    client = cluster.client(addrs, deadline=60.0)
    try:
        await _settle(client, addrs, 60)
    except BaseException:
        client.close()
        raise
    return first, addrs, client


async def _join_run(cluster: LocalCluster) -> dict:
    first, addrs, client = await _four_members(cluster)
    try:
        await client.locate()
        keys = [f"key-{i}" for i in range(ENTRIES)]
        value = bytes(range(256)) * (VALUE // 256)
        acked, failed = await client.put_many([(k, value) for k in keys])
        assert not failed and len(acked) == ENTRIES
        before = await _settle(client, addrs, 60)
        t0 = time.perf_counter()
        joiner = cluster.start_member(first.address)     # it joins, then says it is ready
        t1 = time.perf_counter()
        addrs.append(joiner.address)
        after = await _settle(client, addrs, 300)
        seconds = time.perf_counter() - t1
        await client.locate()
        got = await client.get_many(keys)
        assert sum(v == value for v in got.values()) == ENTRIES
        committed = (sum(s["migrations_committed"] for s in after)
                     - sum(s["migrations_committed"] for s in before))
        moved = (sum(s["stats"].get("bytes_sent", 0) for s in after)
                 - sum(s["stats"].get("bytes_sent", 0) for s in before))
        return {"seconds": seconds, "startup": t1 - t0, "migrations": committed, "bytes": moved}
    finally:
        client.close()


def _tls() -> tuple[str, str, str]:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    paths = tuple(os.path.join(TLS_DIR, n) for n in ("cert.pem", "key.pem", "ca.pem"))
    leaf.cert_chain_pems[0].write_to_path(paths[0])
    leaf.private_key_pem.write_to_path(paths[1])
    ca.cert_pem.write_to_path(paths[2])
    return paths  # type: ignore[return-value]


@pytest.mark.parametrize(("parallel", "delay_ms", "tls"), [
    (1, 0, False), (10, 0, False), (1, 1, False), (10, 1, False), (10, 0, True)])
def test_join_throughput(benchmark, parallel: int, delay_ms: int, tls: bool) -> None:
    benchmark.group = (f"join: 4 -> 5 members, 271 partitions, 100k x 1 KiB, link delay "
                       f"{delay_ms} ms")
    certs = _tls() if tls else None

    def run() -> dict:
        with LocalCluster(partitions=271, backups=1, max_parallel_migrations=parallel,
                          suspect_ms=5000, timeout_ms=20_000,
                          link_delay_ms=delay_ms, tls=certs) as cluster:
            return asyncio.run(_join_run(cluster))

    r = benchmark.pedantic(run, rounds=1, iterations=1)
    assert r["migrations"] > 0 and r["bytes"] > 0
    benchmark.extra_info.update(
        migrations=r["migrations"], megabytes=round(r["bytes"] / 1e6, 1),
        join_seconds=round(r["seconds"], 3), process_start_seconds=round(r["startup"], 3),
        partitions_per_second=round(r["migrations"] / r["seconds"], 1),
        megabytes_per_second=round(r["bytes"] / 1e6 / r["seconds"], 1))


async def _steady_run(cluster: LocalCluster) -> dict:
    _, _, client = await _four_members(cluster)
    try:
        cpu0, t0 = tree_cpu(), time.monotonic()        # (the members are our children)
        await asyncio.sleep(10)
        idle = (tree_cpu() - cpu0) / (time.monotonic() - t0)
        await client.locate()
        keys = [f"key-{i}" for i in range(ENTRIES)]
        value = bytes(range(256)) * (VALUE // 256)
        t1 = time.perf_counter()
        acked, failed = await client.put_many([(k, value) for k in keys])
        seconds = time.perf_counter() - t1
        assert not failed and len(acked) == ENTRIES
        got = await client.get_many(keys)
        assert sum(v == value for v in got.values()) == ENTRIES
        return {"rate": ENTRIES / seconds, "idle_cores": idle}
    finally:
        client.close()


@pytest.mark.parametrize("heartbeat_ms", [100, 2000])
def test_steady_writes(benchmark, heartbeat_ms: int) -> None:
    benchmark.group = f"steady state: 4 members, {ENTRIES} x 1 KiB put_many"

    def run() -> dict:
        with LocalCluster(partitions=271, backups=1, heartbeat_ms=heartbeat_ms,
                          suspect_ms=25 * heartbeat_ms) as cluster:
            return asyncio.run(_steady_run(cluster))

    r = benchmark.pedantic(run, rounds=1, iterations=1)
    assert r["rate"] > 0 and r["idle_cores"] >= 0
    benchmark.extra_info.update(entries_per_second=round(r["rate"]),
                                idle_member_cores=round(r["idle_cores"], 4))
