"""What the protocol node's modules share: limits, the row rules, and the builders of the
dataclasses a step makes most (docs/design.md §7.2, §7.5, §11.1).

A row rule is written once, in Python, and where it runs for every migration its loop is a
kernel of :mod:`hzfast.protocol._lists` that reads the same fields and falls back to the
Python rule for anything it cannot read in place (a subclass, another dtype).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast.protocol import _lists
from hzfast.protocol import messages as msg
from hzfast.protocol._build import Builder
from hzfast.protocol.events import MessageReceived
from hzfast.protocol.messages import MigrationInfo, MigrationStatus
from hzfast.protocol.outputs import Effect, Mark, Send, SetTimer

__all__ = ["VERSION_LIMIT", "apply_to_row", "migration_fits_row"]

SUCCESS, FAILED, ACTIVE = MigrationStatus.SUCCESS, MigrationStatus.FAILED, MigrationStatus.ACTIVE
MigrationId = tuple[int, int]
INT32_END = 2**31                  # versions and member ids travel as int32
#: versions a member accepts from others are below this: the bumps a master adds on
#: failures then never wrap an int32 (an honest partition needs a billion changes)
VERSION_LIMIT = 2**30

# The frozen dataclasses a step makes most, built straight into their slots (every field,
# in field order; docs/design.md §11.1): the same objects their constructors make.
SEND = Builder(Send)
RECEIVED = Builder(MessageReceived)
MARK = Builder(Mark)
EFFECT = Builder(Effect)
SET_TIMER = Builder(SetTimer)
INFO = Builder(MigrationInfo)
REQUEST = Builder(msg.MigrationRequest)
TRANSFER = Builder(msg.MigrationTransfer)
TRANSFER_ACK = Builder(msg.MigrationTransferAck)
RESULT = Builder(msg.MigrationResult)
COMMIT = Builder(msg.MigrationCommit)
COMMIT_RESPONSE = Builder(msg.MigrationCommitResponse)
PUBLISH = Builder(msg.PublishCompletedMigrations)
PUBLISH_ACK = Builder(msg.PublishCompletedAck)

_apply_to, _apply_fitting, _settled_copy = _lists.apply_to, _lists.apply_fitting, _lists.settled


def apply_to_row(row: NDArray[np.int32], x: MigrationInfo) -> None:
    """Apply migration ``x`` to one table row in place (Hazelcast's slot updates)."""
    if x.source_current_index >= 0:
        row[x.source_current_index] = -1
    if x.destination_current_index >= 0:
        row[x.destination_current_index] = -1
    if x.source_new_index >= 0:
        row[x.source_new_index] = x.source
    if x.destination_new_index >= 0:
        row[x.destination_new_index] = x.destination


def migration_fits_row(row: NDArray[np.int32], x: MigrationInfo) -> bool:
    """Whether ``x`` was made from this row and writes a valid one: its source at
    ``source_current_index`` and its destination at ``destination_current_index`` (where
    those are slots), and each member it writes (-1 or a member id) held nowhere else in
    the row once applied. A member's row at the entry's initial version is the master's
    row then, so an honest entry always fits; one that does not is rejected like a
    version that does not line up (docs/design.md §7.5)."""
    R = len(row)
    sci, dci = x.source_current_index, x.destination_current_index
    sni, dni = x.source_new_index, x.destination_new_index
    if sci >= 0 and int(row[sci]) != x.source or dci >= 0 and int(row[dci]) != x.destination:
        return False
    after = [int(v) for v in row]
    for j, v in ((sci, -1), (dci, -1), (sni, x.source), (dni, x.destination)):
        if 0 <= j < R:
            after[j] = v
    for j in {j for j in (sni, dni) if 0 <= j < R}:
        v = after[j]
        if v < -1 or v >= 0 and any(after[k] == v for k in range(R) if k != j):
            return False
    return True


def apply_fitting_row(table: NDArray[np.int32], p: int, x: MigrationInfo) -> bool:
    """``apply_row(table, p, x)`` when ``migration_fits_row(table[p], x)``, and whether
    it did (the kernel where it reads ``table`` and ``x`` in place)."""
    done = _apply_fitting(table, p, x, MigrationInfo)
    if done >= 0:
        return done > 0
    if not migration_fits_row(table[p], x):
        return False
    apply_to_row(table[p], x)
    return True


def apply_row(table: NDArray[np.int32], p: int, x: MigrationInfo) -> None:
    """``apply_to_row(table[p], x)`` (the kernel where it reads ``table`` and ``x`` in
    place)."""
    if not _apply_to(table, p, x, MigrationInfo):
        apply_to_row(table[p], x)


def settled(x: MigrationInfo, status: MigrationStatus, final: int | None = None
            ) -> MigrationInfo:
    """``x`` with another status (and, given, final version): ``dataclasses.replace``
    without its per-call field introspection (a slot copy in C for a plain
    MigrationInfo)."""
    y: MigrationInfo | None = _settled_copy(x, status, final, MigrationInfo)
    if y is not None:
        return y
    return INFO(x.id, x.partition, x.source, x.source_current_index,
                x.source_new_index, x.destination, x.destination_current_index,
                x.destination_new_index, x.master, x.initial,
                x.final if final is None else final, status, x.promotion)


def is_table(a: NDArray[Any]) -> bool:
    """A C-contiguous int32 (P, R) array, as the _scan kernels take it."""
    return a.dtype == np.int32 and a.ndim == 2 and a.flags.c_contiguous


def ids_of(dense: NDArray[np.int32], ids: NDArray[np.int64]) -> NDArray[np.int32]:
    """A table in view positions (as the arranger and planner see it) back in member ids."""
    return np.where(dense >= 0, ids[np.maximum(dense, 0)], -1).astype(np.int32)


def check_migration(x: object, partition_count: int, replica_count: int) -> str:
    """Why ``x`` is not a well-formed migration for this cluster ("" if it is)."""
    if _lists.well_formed(x, MigrationInfo, partition_count, replica_count):
        return ""                                # (the usual case, read in C)
    if not isinstance(x, MigrationInfo):
        return "not a migration"
    if not 0 <= x.partition < partition_count:
        return f"unknown partition {x.partition}"
    R = replica_count
    if not 0 <= x.destination_new_index < R or not -1 <= x.source_current_index < R \
            or not -1 <= x.source_new_index < R or not -1 <= x.destination_current_index < R:
        return "replica index out of range"
    if not 0 <= x.initial <= x.final < VERSION_LIMIT:    # tables hold int32 versions
        return "version out of range"
    if not (-1 <= x.source < INT32_END and -1 <= x.destination < INT32_END
            and 0 <= x.master < INT32_END):
        return "member id out of range"
    return ""


def held_by(table: NDArray[np.int32], members: NDArray[np.int32]) -> NDArray[np.bool_]:
    """``np.isin(table, members)`` through a lookup table (member ids are small)."""
    top = max(int(table.max(initial=-1)), int(members.max(initial=-1)))
    if top >= 1 << 22:
        return np.isin(table, members)
    lut = np.zeros(top + 2, dtype=bool)
    lut[members] = True
    return lut[table]              # -1 reads lut[-1], which is False
