"""hzfast.node.nemesis on real sockets and real processes: iptables partitions between
loopback addresses, and SIGSTOP pauses.

Every test uses addresses of its own process (``127.a.b.x`` from
:func:`hzfast.node.chaos.host_prefix`), so no rule it adds touches another test's or
another user's local cluster; every rule is checked gone afterwards.
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from hzfast.node.chaos import LocalCluster, host_prefix
from hzfast.node.nemesis import (
    SHAPES,
    NemesisError,
    Partition,
    Pause,
    check_target,
    remove_stale_chains,
)

PREFIX = host_prefix(private=True)
A, B, C = PREFIX + "21", PREFIX + "22", PREFIX + "23"


def _chains() -> list[str]:
    out = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True,
                         check=True).stdout
    return [line.split()[1] for line in out.splitlines() if line.startswith("-N HZFAST-")]


def _own_chains() -> list[str]:
    return [c for c in _chains() if c.startswith(f"HZFAST-{os.getpid()}-")]


@contextlib.contextmanager
def _listener(host: str) -> Iterator[int]:
    srv = socket.socket()
    srv.bind((host, 0))
    srv.listen(16)
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()


def _connects(src: str, dst: str, port: int, timeout: float = 0.6) -> bool:
    c = socket.socket()
    c.settimeout(timeout)
    c.bind((src, 0))
    try:
        c.connect((dst, port))
        return True
    except OSError:
        return False
    finally:
        c.close()


def _udp_arrives(src: str, dst: str, timeout: float = 0.4) -> bool:
    """A datagram from ``src`` to ``dst`` arrives (UDP needs no answer: one direction)."""
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind((dst, 0))
        rx.settimeout(timeout)
        tx.bind((src, 0))
        tx.sendto(b"ping", rx.getsockname())
        try:
            return rx.recvfrom(16)[0] == b"ping"
        except OSError:
            return False
    finally:
        rx.close()
        tx.close()


# ------------------------------------------------------------------ partitions, for real
def test_partition_blocks_a_connection_and_it_works_again_after() -> None:
    with _listener(B) as port:
        assert _connects(A, B, port)
        established = socket.create_connection((B, port), timeout=2, source_address=(A, 0))
        try:
            with Partition.groups([[A], [B]]) as part:
                assert part.active and _own_chains() == [part.chain]
                assert not _connects(A, B, port)          # the SYN is dropped
                established.settimeout(0.5)               # an open connection stalls too:
                established.sendall(b"x")                 # no answer ever comes back
                with pytest.raises(TimeoutError):
                    established.recv(1)
            assert not part.active
            assert _own_chains() == []
            assert _connects(A, B, port)
        finally:
            established.close()


def test_one_way_drops_one_direction_only() -> None:
    assert _udp_arrives(A, B) and _udp_arrives(B, A)
    with Partition.one_way([A], [B]):
        assert not _udp_arrives(A, B)
        assert _udp_arrives(B, A)
        assert _udp_arrives(A, C)                         # only the pair is cut
    assert _udp_arrives(A, B)
    assert _own_chains() == []


def test_rules_are_removed_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError, match="boom"), Partition.halves([A, B, C]) as part:
        chain = part.chain
        assert chain in _chains()
        raise RuntimeError("boom")
    assert chain not in _chains() and _own_chains() == []
    assert _udp_arrives(A, C)


def test_a_chain_left_by_a_dead_process_is_removed() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = f"HZFAST-{dead.pid}-1"
    subprocess.run(["iptables", "-w", "5", "-N", stale], check=True)
    subprocess.run(["iptables", "-w", "5", "-A", stale, "-i", "lo", "-s", A, "-d", B, "-j",
                    "DROP"], check=True)
    subprocess.run(["iptables", "-w", "5", "-I", "INPUT", "1", "-j", stale], check=True)
    try:
        assert not _udp_arrives(A, B)
        with Partition.groups([[A], [C]]) as part:        # starting one cleans up first
            assert stale not in _chains() and part.chain in _chains()
        assert _udp_arrives(A, B)
        assert remove_stale_chains() == []
    finally:                                              # (whatever happened above)
        subprocess.run(["iptables", "-w", "5", "-D", "INPUT", "-j", stale], check=False,
                       capture_output=True)
        subprocess.run(["iptables", "-w", "5", "-F", stale], check=False, capture_output=True)
        subprocess.run(["iptables", "-w", "5", "-X", stale], check=False, capture_output=True)


@pytest.mark.parametrize("bad", ["10.1.2.3", "127.0.0.1", "::1", "localhost", "0.0.0.0",
                                 "192.168.0.1", "fe80::1", "127.0.0.256"])
def test_only_members_loopback_addresses_can_be_a_target(bad: str) -> None:
    before = _chains()
    with pytest.raises(ValueError, match="drops:"):
        Partition([(A, bad)])
    with pytest.raises(ValueError, match="drops:"):
        Partition.groups([[bad], [B]])
    with pytest.raises(ValueError):
        check_target(bad)
    assert _chains() == before                            # refused before any rule


def test_bad_partitions_are_refused() -> None:
    with pytest.raises(ValueError, match="itself"):
        Partition([(A, A)])
    with pytest.raises(ValueError, match="pair"):
        Partition([(A, B, C)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="more than one group"):
        Partition.groups([[A, B], [B]])
    with pytest.raises(ValueError, match="shape"):
        Partition.shape("star", [A, B, C])
    with pytest.raises(ValueError, match="ring"):
        Partition.ring([A, B, C])
    with pytest.raises(ValueError, match="bridge"):
        Partition.bridge([A, B])
    part = Partition.groups([[A], [B]])
    with part, pytest.raises(NemesisError, match="already"):
        part.start()
    assert _own_chains() == []


def test_missing_iptables_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(NemesisError, match=r"iptables is not installed.*apt-get install"):
        Partition.groups([[A], [B]]).start()


# ------------------------------------------------------------------ shapes (Jepsen's)
H5 = [PREFIX + str(11 + i) for i in range(5)]


def _reach(part: Partition, hosts: list[str]) -> dict[str, set[str]]:
    """Whom each address still reaches, both ways (itself included)."""
    cut = set(part.drops)
    return {a: {b for b in hosts if a == b or ((a, b) not in cut and (b, a) not in cut)}
            for a in hosts}


def test_shapes_cut_what_jepsen_cuts() -> None:
    r = _reach(Partition.halves(H5), H5)
    assert r[H5[0]] == set(H5[:2]) and r[H5[4]] == set(H5[2:])
    part = Partition.majority_minority(H5, random.Random(3))
    sides = {frozenset(v) for v in _reach(part, H5).values()}
    assert sorted(map(len, sides)) == [2, 3] and frozenset(H5) not in sides
    r = _reach(Partition.bridge(H5), H5)
    assert r[H5[2]] == set(H5)                            # the bridge sees everyone
    assert r[H5[0]] == {H5[0], H5[1], H5[2]} and r[H5[4]] == {H5[2], H5[3], H5[4]}
    r = _reach(Partition.ring(H5), H5)
    assert all(len(v) == 3 for v in r.values())           # each sees a majority ...
    assert len({frozenset(v) for v in r.values()}) == 5   # ... and no two the same one
    assert r[H5[0]] == {H5[4], H5[0], H5[1]}
    six = [PREFIX + str(11 + i) for i in range(6)]
    assert all(len(v) >= 4 for v in _reach(Partition.ring(six), six).values())
    one = Partition.one_way(H5[:2], H5[2:])
    assert set(one.drops) == {(a, b) for a in H5[:2] for b in H5[2:]}
    for shape in SHAPES:
        part = Partition.shape(shape, H5, random.Random(0))
        assert part.name == shape and part.drops


# ------------------------------------------------------------------ pauses, for real
def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])              # utime + stime


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_pause_stops_a_process_and_always_resumes_it() -> None:
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        with Pause([spin.pid]) as pause:
            assert pause.stopped == [spin.pid] and _state(spin.pid) == "T"
            before = _cpu_ticks(spin.pid)
            time.sleep(0.5)
            assert _cpu_ticks(spin.pid) == before         # its CPU time stands still
        assert _state(spin.pid) != "T"
        before = _cpu_ticks(spin.pid)
        end = time.monotonic() + 5
        while _cpu_ticks(spin.pid) == before and time.monotonic() < end:
            time.sleep(0.05)
        assert _cpu_ticks(spin.pid) > before              # running again
        with pytest.raises(RuntimeError, match="boom"), Pause([spin.pid]):
            assert _state(spin.pid) == "T"
            raise RuntimeError("boom")
        assert _state(spin.pid) != "T"                    # SIGCONT also on failure
    finally:
        spin.send_signal(signal.SIGCONT)
        spin.kill()
        spin.wait(timeout=10)


def test_pause_refuses_bad_pids_and_reports_a_gone_process() -> None:
    for bad in (0, 1, -5, os.getpid(), True, "12"):
        with pytest.raises(ValueError, match="pids"):
            Pause([bad])  # type: ignore[list-item]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with pytest.raises(NemesisError, match="gone"):
        Pause([gone.pid]).start()


# ------------------------------------------------------------------ members' own addresses
def test_members_listen_and_connect_from_their_own_address() -> None:
    """Each member has an address of its own; a partition between two members' addresses
    cuts them apart (which it could not if their connections came from 127.0.0.1)."""
    import asyncio

    from hzfast.node.chaos import cluster_status

    async def views(lc: LocalCluster) -> dict[int, list[int]]:
        client = lc.client(timeout=1.0, deadline=2.0)
        try:
            got = await cluster_status(client, [p.address for p in lc.procs])
        finally:
            client.close()
        return {s["member"]: sorted(m[0] for m in s["members"]) for s in got.values()
                if s is not None}

    # split-brain protection off: each side of two keeps itself (with "majority", neither
    # would change its list; both would stop serving)
    with LocalCluster(partitions=7, suspect_ms=600, heartbeat_ms=50, min_cluster_size=None,
                      host_prefix=PREFIX) as lc:
        a = lc.start_member()
        b = lc.start_member(a.address)
        assert (a.host, b.host) == (PREFIX + "11", PREFIX + "12")
        end = time.monotonic() + 20
        while asyncio.run(views(lc)) != {1: [1, 2], 2: [1, 2]} and time.monotonic() < end:
            time.sleep(0.1)
        assert asyncio.run(views(lc)) == {1: [1, 2], 2: [1, 2]}
        links = _tcp_links()           # member 2's connection to member 1 comes from .12
        assert any(src == b.host and dst == a.address for src, dst in links), links
        with Partition.groups([[a.host], [b.host]]):
            end = time.monotonic() + 20
            while asyncio.run(views(lc)) != {1: [1], 2: [2]} and time.monotonic() < end:
                time.sleep(0.1)
            assert asyncio.run(views(lc)) == {1: [1], 2: [2]}
        pids = [p.pid for p in lc.procs]
    assert _own_chains() == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _tcp_links() -> list[tuple[str, tuple[str, int]]]:
    """The established IPv4 connections on this machine: (local address, (remote, port))."""
    def addr(text: str) -> tuple[str, int]:
        ip, port = text.split(":")
        return socket.inet_ntoa(bytes.fromhex(ip)[::-1]), int(port, 16)
    out = []
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[3] == "01":
                out.append((addr(cols[1])[0], addr(cols[2])))
    return out


def test_local_cluster_addresses() -> None:
    with pytest.raises(ValueError, match="host_prefix"):
        LocalCluster(host_prefix="10.0.0.")
    with pytest.raises(ValueError, match="host_prefix"):
        LocalCluster(host_prefix="127.0.300.")
    with LocalCluster(partitions=7) as lc, LocalCluster(partitions=7, host_prefix="") as one:
        assert lc.host(1) == "127.0.0.11" and lc.host(3) == "127.0.0.13"
        assert one.host(1) == one.host(2) == "127.0.0.1"
        with pytest.raises(ValueError, match="244"):
            lc.host(245)
    own = host_prefix(private=True)
    assert own.startswith("127.") and own != "127.0.0." and own == host_prefix(True)
