"""Slot-by-slot comparison of two replica tables."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from hzfast import _check
from hzfast._typing import TableLike
from hzfast.migration import _diff

__all__ = ["TableDiff", "diff"]


class TableDiff(NamedTuple):
    """Result of :func:`diff`."""

    changed_slots: NDArray[np.bool_]        #: (P, R): current != target
    changed_partitions: NDArray[np.int64]   #: (K,): partitions with a change
    gains: NDArray[np.int64]                #: (M, R): slots member m gains at index r
    losses: NDArray[np.int64]               #: (M, R): slots member m loses at index r
    slot_moves: int                 #: number of changed slots


def diff(current: TableLike, target: TableLike, *,
         member_count: int | None = None) -> TableDiff:
    """Compare two replica tables slot by slot.

    Parameters
    ----------
    current, target : ndarray[int32] of shape (P, R), or PartitionTable
    member_count : int, optional
        Rows of ``gains``/``losses``; default: largest member in either table + 1. At
        most ``MAX_MEMBER_COUNT`` (65,536), as every member index is below it.

    Returns
    -------
    TableDiff
        ``changed_slots`` ndarray[bool] (P, R), ``changed_partitions`` ndarray[int64],
        ``gains``/``losses`` ndarray[int64] (M, R) (per member, per replica index: slots
        where it appears in target but not current / current but not target at that
        index), ``slot_moves`` int (changed slots in total).

    Raises
    ------
    TypeError, ValueError
        As :func:`find_cycles`; ValueError when a member is ``>= member_count``.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> d = hzfast.diff(np.array([[0, 1]], np.int32), np.array([[0, 2]], np.int32))
    >>> d.slot_moves, d.changed_partitions.tolist(), d.gains[2].tolist()
    (1, [0], [0, 1])
    """
    a, b, _, mx = _check.check_pair(current, target)   # private snapshots, validated
    count = _check.check_member_count(member_count, mx, "the tables hold member")
    mask, changed, gains, losses, moves = _diff.diff(a, b, count)
    return TableDiff(mask, changed, gains, losses, int(moves))
