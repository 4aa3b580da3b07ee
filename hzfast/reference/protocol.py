"""Pure-Python reference for the protocol's table merge (test oracle and benchmark baseline;
docs/design.md §7.4).

* :func:`merge_table`: the rule on plain lists, one partition at a time, as the text states
  it: received version lower -> ignored, equal -> the replicas must be identical (else the
  partition has diverged), higher -> take the received replicas and version. Any diverged
  partition means nothing is applied.
* :func:`merge_table_numpy`: the same rule with whole-array numpy operations (the
  competitor of the kernel in the benchmarks).

Both return ``(replicas, versions, updated, diverged)`` (``diverged``: the diverged partition
ids, ascending; when it is not empty the first three are the local table unchanged and no
partition is updated). Standard library and numpy only; never imports hzfast.
"""
from __future__ import annotations

import numpy as np


def merge_table(local_replicas, local_versions, received_replicas, received_versions):
    """§7.4 on lists: ``local_replicas`` and ``received_replicas`` are lists of P rows (lists
    of ints), the versions lists of P ints. Returns new lists ``(replicas, versions,
    updated, diverged)``; the arguments are not modified."""
    if len(local_replicas) != len(received_replicas) or \
            len(local_versions) != len(local_replicas) or \
            len(received_versions) != len(local_replicas):
        raise ValueError("tables and versions must all have one entry per partition")
    replicas = [list(row) for row in local_replicas]
    versions = list(local_versions)
    updated = [False] * len(replicas)
    diverged = []
    for p, (mine, theirs) in enumerate(zip(local_replicas, received_replicas)):
        if len(mine) != len(theirs):
            raise ValueError(f"partition {p}: rows of different widths")
        if received_versions[p] < local_versions[p]:
            continue                                     # older: ignored
        if received_versions[p] == local_versions[p]:
            if list(mine) != list(theirs):
                diverged.append(p)                       # equal version, other replicas
            continue
        replicas[p] = list(theirs)                       # newer: taken
        versions[p] = received_versions[p]
        updated[p] = True
    if diverged:
        return ([list(row) for row in local_replicas], list(local_versions),
                [False] * len(replicas), diverged)
    return replicas, versions, updated, diverged


def merge_table_numpy(local_replicas, local_versions, received_replicas, received_versions):
    """:func:`merge_table` with numpy arrays (int32 (P, R) tables, (P,) versions); returns
    new arrays ``(replicas, versions, updated, diverged)`` (``diverged`` int32)."""
    newer = received_versions > local_versions
    equal = received_versions == local_versions
    diverged = np.flatnonzero(equal & (local_replicas != received_replicas).any(axis=1))
    if diverged.size:
        return (local_replicas.copy(), local_versions.copy(),
                np.zeros(len(local_versions), dtype=bool), diverged.astype(np.int32))
    replicas = np.where(newer[:, None], received_replicas, local_replicas).astype(np.int32)
    versions = np.where(newer, received_versions, local_versions).astype(np.int32)
    return replicas, versions, newer, diverged.astype(np.int32)
