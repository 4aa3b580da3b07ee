"""The client takes no table from a member list older than one it has seen while the newer
list still answers, and takes the older one once the newer list is gone.

The members here are scripted listeners on 127.0.0.1 that speak the real wire protocol and
handshake (``hzfast.node.auth``, ``hzfast.node.wire``) and answer ``locate`` with a table
from a member list of their choosing: a member on a side that was cut off, or one not told
of the newer list yet; put and get answers likewise name a list of the script's choosing.
The real runtime's answer carries its list's term and version (``tests/node/test_runtime.py``
covers that member side)."""
from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from hzfast.node import auth, wire
from hzfast.node.client import Client, ClientError

P = 7


def _info(member: int, owner: int, term: int, version: int) -> dict[str, Any]:
    replicas = np.full((P, 1), owner, "<i4")
    return {"member": member, "partitions": P, "replicas": replicas.tobytes(),
            "replica_count": 1, "members": [[member, "127.0.0.1", 1]], "version": version,
            "term": term, "stamp": 0}


class _Scripted:
    """A listener that answers every ``locate`` with ``info`` (None: refuses no_quorum)."""

    def __init__(self, info: dict[str, Any] | None) -> None:
        self.info = info
        self.data_key: Any = None           # (term, version) of put/get answers, or "bare"
        self.asked = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> tuple[str, int]:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[:2]

    async def _serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            await auth.accept(r, w, secret=b"", cluster_name="hzfast")
            for _ in range(1000):
                obj = await wire.read_frame(r)
                if obj is None:
                    break
                f = wire.parse(obj)
                self.asked += 1
                if f[0] != "locate" and self.data_key is not None:
                    # a data answer, under the list key of the script's choosing
                    n = len(f[3])
                    got = [None] * n if f[0] == "get" else n
                    ans = got if self.data_key == "bare" else {
                        "result": got, "term": self.data_key[0], "version": self.data_key[1]}
                    w.write(wire.frame("ok", f[1], ans))
                elif self.info is None:
                    w.write(wire.frame("error", f[1], "no_quorum", "cut off", None))
                else:
                    w.write(wire.frame("ok", f[1], self.info))
        except (OSError, asyncio.IncompleteReadError, wire.WireError):
            pass
        finally:
            w.close()

    def close(self) -> None:
        assert self.server is not None
        self.server.close()


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_a_table_from_an_older_list_is_not_taken() -> None:
    async def main() -> None:
        new = _Scripted(_info(1, owner=1, term=3, version=2))
        old = _Scripted(_info(2, owner=2, term=2, version=9))   # a higher version, older term
        a_new, a_old = await new.start(), await old.start()
        c = Client([a_new, a_old], timeout=2.0, deadline=1.0)
        try:
            await c.locate()
            assert c.list_key == (3, 2) and set(c.owners.tolist()) == {1}
            new.info = None                          # the newer side stops serving
            with pytest.raises(ConnectionError, match="stale_list"):
                await c.locate()
            assert old.asked >= 1 and c.stats["stale_answers"] >= 1
            assert c.list_key == (3, 2) and set(c.owners.tolist()) == {1}   # unchanged
            new.info = _info(1, owner=1, term=3, version=3)    # a newer list of that side
            await c.locate()
            assert c.list_key == (3, 3)
        finally:
            c.close()
            new.close()
            old.close()

    _run(main())


def test_the_first_answer_sets_the_key_and_a_newer_term_wins() -> None:
    async def main() -> None:
        old = _Scripted(_info(2, owner=2, term=1, version=5))
        a_old = await old.start()
        c = Client([a_old], timeout=2.0, deadline=1.0)
        try:
            await c.locate()                         # nothing seen yet: any list is newer
            assert c.list_key == (1, 5) and set(c.owners.tolist()) == {2}
            old.info = _info(2, owner=2, term=2, version=1)       # a new term resets versions
            await c.locate()
            assert c.list_key == (2, 1)
        finally:
            c.close()
            old.close()

    _run(main())


def test_an_older_list_is_taken_once_the_newer_one_is_gone() -> None:
    # the side of the newer list was merged away (or the cluster started anew): no member
    # answers from it any more, nor asks to be asked again
    async def main() -> None:
        new = _Scripted(_info(1, owner=1, term=3, version=2))
        old = _Scripted(_info(2, owner=2, term=2, version=9))
        a_new, a_old = await new.start(), await old.start()
        c = Client([a_new, a_old], timeout=2.0, deadline=1.0)
        try:
            await c.locate()
            assert c.list_key == (3, 2)
            c.close()                              # (its connection to the newer member)
            new.close()
            await new.server.wait_closed()         # type: ignore[union-attr]
            await c.locate()
            assert c.list_key == (2, 9) and set(c.owners.tolist()) == {2}
            assert c.stats["list_resets"] == 1 and c.stats["stale_answers"] >= 1
        finally:
            c.close()
            old.close()

    _run(main())


def test_a_data_answer_from_an_older_list_is_not_believed() -> None:
    # put and get answers name the list they were served under: an owner on a list older
    # than one the client has seen (a side cut off that still serves) is not believed
    async def main() -> None:
        m = _Scripted(None)
        host, port = await m.start()
        m.info = _info(1, owner=1, term=3, version=2)
        m.info["members"] = [[1, host, port]]
        c = Client([(host, port)], timeout=2.0, deadline=0.5)
        try:
            await c.locate()
            m.data_key = (2, 7)                      # an older term, a higher version
            with pytest.raises(ClientError, match="stale_list"):
                await c._partition_call("get", 0, ["a"])
            _, failed = await c.put_many({"a": b"1"})
            assert "stale_list" in failed["a"] and c.stats["stale_answers"] >= 2
            assert c.list_key == (3, 2)
            m.data_key = (3, 4)                      # a newer list of the same term
            assert await c.get_many(["a"]) == {"a": None}
            acked, _ = await c.put_many({"a": b"1"})
            assert acked == ["a"] and c.list_key == (3, 4)
            m.data_key = "bare"                      # no list key at all: refused, named
            with pytest.raises(ClientError, match="bad_answer"):
                await c.get_many(["a"])
        finally:
            c.close()
            m.close()

    _run(main())
