"""A member's completed-migration list (docs/design.md §7.5, §11.2).

The list is the record of what the master decided about migrations: a master appends every
commit and failure and evicts what every member accepted (§7.6); any other member keeps the
entries the master sent it last and, behind them, the entries of its own that are still
its partition's latest state (a destination commit the master has not published yet: a
new master's recovery needs it, §7.8).

:class:`CompletedList` holds it in three parts, so that a member applying a list does not
copy the entries it retains on every message: the *head* (the entries received last, or on
a master all of them), then the retained entries, *front* in reverse order, then *back*.
:meth:`CompletedList.as_dict` joins them into one dict in list order. Its invariants:

- every id appears in at most one part, and the joined order is head, reversed front, back;
- while the index is current (``_index_of`` is the head), ``_index`` maps each partition to
  the ids of its entries in every part, ``_recheck`` holds the ids kept without being their
  partition's latest state, and ``_seen`` the versions of the last :meth:`keep_current`.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast.protocol import _lists
from hzfast.protocol.common import MigrationId
from hzfast.protocol.messages import MigrationInfo

__all__ = ["CompletedList"]

_keep_kernel, _of_partition = _lists.keep_current, _lists.of_partition
_plain_vector, _unchanged = _lists.plain_vector, _lists.unchanged


class CompletedList:
    """One member's completed-migration list, by migration id, in list order.

    Parameters
    ----------
    versions : ndarray of int32, shape (P,)
        The member's versions when the list starts (what :meth:`keep_current` compares
        with first).
    """

    __slots__ = ("_back", "_front", "_head", "_index", "_index_len", "_index_of",
                 "_recheck", "_seen")

    def __init__(self, versions: NDArray[np.int32]) -> None:
        self._head: dict[MigrationId, MigrationInfo] = {}
        self._front: dict[MigrationId, MigrationInfo] = {}
        self._back: dict[MigrationId, MigrationInfo] = {}
        # keep_current's index: the head it was made for (None: none), that head's length
        # then, the versions then, partition -> ids, and ids kept without being current
        self._index_of: dict[MigrationId, MigrationInfo] | None = None
        self._index_len = 0
        self._seen = versions.copy()
        self._index: dict[int, set[MigrationId]] = {}
        self._recheck: set[MigrationId] = set()

    # ------------------------------------------------------------------ reading
    @property
    def head(self) -> dict[MigrationId, MigrationInfo]:
        """The entries received last (the dict itself; on a master, every entry)."""
        return self._head

    def as_dict(self) -> dict[MigrationId, MigrationInfo]:
        """The whole list as one dict in list order (the dict itself: a master changes it
        in place)."""
        if self._front or self._back:
            self._join()
        return self._head

    def entries(self) -> tuple[MigrationInfo, ...]:
        """The whole list, in order."""
        return tuple(self.as_dict().values())

    def of_partition(self, p: int) -> tuple[MigrationInfo, ...]:
        """The entries of partition ``p``, in list order (what a ``MigrationRequest``
        carries, §7.3(a))."""
        return _of_partition(self.as_dict(), p)

    def unchanged(self, versions: NDArray[np.int32]) -> bool:
        """Nothing to recheck and nothing changed since the last :meth:`keep_current`: an
        empty received list would change nothing."""
        return (not self._recheck and self._head is self._index_of
                and len(self._head) == self._index_len
                and _unchanged(versions, self._seen))

    # ------------------------------------------------------------------ changing
    def replace(self, value: dict[MigrationId, MigrationInfo]) -> None:
        """Make ``value`` (the dict itself) the whole list."""
        self._head = value
        self._front, self._back = {}, {}

    def restart_index(self) -> None:
        """Forget the index: the next :meth:`keep_current` reads every entry (the master
        role may have moved)."""
        self._index_of = None

    def add_committed(self, x: MigrationInfo) -> None:
        """Put a destination's own commit ``x`` in the list (replacing an entry of that id
        where it is, else at the end) without joining the parts; the index follows."""
        mid = x.id
        if mid in self._front:
            self._front[mid] = x
        elif mid in self._back or ((self._front or self._back) and mid not in self._head):
            self._back[mid] = x
        else:
            self._head[mid] = x
        if self._index_of is self._head:
            self._index.setdefault(x.partition, set()).add(mid)
            self._recheck.add(mid)
            self._index_len = len(self._head)

    def keep_current(self, keep: dict[MigrationId, MigrationInfo],
                     versions: NDArray[np.int32]) -> dict[MigrationId, MigrationInfo]:
        """Make the list ``keep`` (the received entries) followed by the entries before it
        that are not in it and whose partition is still at their final version, in their
        order; return ``keep``.

        A non-master's list holds up to one such entry per partition, so one kernel pass
        looks only at the entries of partitions whose version changed since the last call,
        and at those kept then without being current; the retained entries stay in the
        parts they are in. A change of the list this call did not see (a new head, another
        length) starts the index over from every entry."""
        old = self._head
        front, back = self._front, self._back
        vers = versions
        if not _plain_vector(vers):            # (the kernel reads it in place)
            vers = np.ascontiguousarray(vers, dtype=np.int32)
        seen = self._seen
        if old is not self._index_of or len(old) != self._index_len or len(seen) != len(vers):
            index: dict[int, set[MigrationId]] = {}
            recheck: set[MigrationId] = set()
            for part in (old, front, back):
                for mid, x in part.items():
                    index.setdefault(x.partition, set()).add(mid)
                recheck.update(part)
            self._index = index
            seen = vers.copy()
        else:
            recheck = self._recheck
        self._recheck = _keep_kernel(keep, old, front, back, recheck, self._index, vers, seen)
        self._head = keep
        self._index_of = keep
        self._index_len = len(keep)
        self._seen = seen
        return keep

    def _join(self) -> None:
        """Join the parts into one dict (same entries, same order)."""
        d = dict(self._head)
        front = self._front
        for mid in reversed(front):
            d[mid] = front[mid]
        d.update(self._back)
        if self._index_of is self._head:       # the same entries: the index still holds
            self._index_of = d
            self._index_len = len(d)
        self._head = d
        self._front, self._back = {}, {}

    # ------------------------------------------------------------------ checking
    def parts(self) -> tuple[dict[MigrationId, MigrationInfo], ...]:
        """The three parts (head, front, back), for tests of the invariants."""
        return self._head, self._front, self._back

    def index_state(self) -> dict[str, Any]:
        """The index's state, for tests of the invariants."""
        return {"current": self._index_of is self._head, "length": self._index_len,
                "index": self._index, "recheck": self._recheck, "seen": self._seen}
