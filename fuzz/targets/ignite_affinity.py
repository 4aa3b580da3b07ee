"""Fuzz target: Ignite rendezvous affinity: ``hzfast.ignite.assign`` (node ids, backups,
REPLICATED, exclude-neighbours), ``node_weight`` and ``consistent_id_hash``
(docs/design.md §9.2). Reference: ``hzfast.reference.ignite``.
"""
from __future__ import annotations

import uuid
from typing import Any

import atheris
import numpy as np

from fuzz._common import (
    Finding,
    checked,
    edgy_int,
    expect_equal,
    expect_rejected,
    fuzzed_str,
    rejected,
)
from hzfast import ignite
from hzfast.reference import ignite as ref


def consistent_id(fdp: Any) -> Any:
    kind = fdp.ConsumeIntInRange(0, 3)
    if kind == 0:
        return fuzzed_str(fdp, 6)
    if kind == 1:
        return edgy_int(fdp, -50, 50)
    if kind == 2:
        return uuid.UUID(int=fdp.ConsumeIntInRange(0, 2**20))
    return f"node-{fdp.ConsumeIntInRange(0, 9)}"


def fuzz_assign(fdp: Any) -> None:
    n = fdp.ConsumeIntInRange(0, 6)
    cids = [consistent_id(fdp) for _ in range(n)]
    node_ids: Any = None
    if fdp.ConsumeBool():
        node_ids = [uuid.UUID(int=fdp.ConsumeIntInRange(0, 40)) for _ in range(n)]
        if fdp.ConsumeIntInRange(0, 5) == 0:
            node_ids = node_ids[:-1] if node_ids else [uuid.uuid4()]  # wrong length
    neighbors: Any = None
    if fdp.ConsumeBool():
        neighbors = [fdp.ConsumeIntInRange(0, 2) for _ in range(n)]
    P = edgy_int(fdp, 1, 40)
    backups = ignite.REPLICATED if fdp.ConsumeIntInRange(0, 6) == 0 else edgy_int(fdp, 0, 4)
    if fdp.ConsumeBool() and cids:
        cids_arg: Any = np.array(cids, dtype=object)
    else:
        cids_arg = cids
    got = checked(ignite.assign, cids_arg, node_ids, partitions=P, backups=backups,
                  neighbors=neighbors)
    what = f"assign({cids!r:.120}, node_ids={node_ids!r:.80}, P={P}, backups={backups}, " \
           f"neighbors={neighbors})"
    bad = (not 1 <= P <= ignite.MAX_PARTITIONS or backups < 0 or backups > 2**31 - 1
           or (node_ids is not None and len(node_ids) != n)
           or any(isinstance(c, int) and not -(2**63) <= c < 2**63 for c in cids))
    if bad:
        expect_rejected(got, what)
        return
    if rejected(got):
        # duplicates (ids or node ids) and empty topologies may be refused
        dup = len({repr(c) for c in cids}) != n or (
            node_ids is not None and len(set(node_ids)) != n)
        if not (dup or n == 0):
            raise Finding(f"{what}: rejected a valid topology: {got!r}")
        return
    want = ref.assign(cids, node_ids, partitions=P, backups=backups, neighbors=neighbors)
    width = n if backups == ignite.REPLICATED else min(backups + 1, n)
    if got.shape != (P, width) or got.dtype != np.int32:
        raise Finding(f"{what}: shape {got.shape} {got.dtype}, expected ({P}, {width})")
    expect_equal(got, want, what)


def fuzz_weight(fdp: Any) -> None:
    n = fdp.ConsumeIntInRange(0, 6)
    hashes = [edgy_int(fdp, -(2**31), 2**31 - 1) for _ in range(n)]
    parts = [edgy_int(fdp, 0, 65000) for _ in range(n)]
    as_array = fdp.ConsumeBool()
    h_arg: Any = np.array(hashes, dtype=object) if as_array else hashes
    got = checked(ignite.node_weight, h_arg, parts)
    ok = all(-(2**31) <= h < 2**31 for h in hashes) and all(0 <= p < 2**31 for p in parts)
    what = f"node_weight({hashes}, {parts})"
    if not rejected(got) and not ok:
        big = any(not -(2**63) <= v < 2**63 for v in hashes + parts)
        if big:
            raise Finding(f"{what}: accepted values outside int64: {got!r}")
        return
    if ok and not (rejected(got) and (as_array or n == 0)):   # object/empty: may refuse
        expect_equal(got, [ref.node_weight(h, p) for h, p in zip(hashes, parts)], what)
    cid = consistent_id(fdp)
    h = checked(ignite.consistent_id_hash, cid)
    if not rejected(h):
        expect_equal(h, ref.hash_code(cid), f"consistent_id_hash({cid!r})")


PIECES = (fuzz_assign, fuzz_weight)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    PIECES[fdp.ConsumeIntInRange(0, len(PIECES) - 1)](fdp)
