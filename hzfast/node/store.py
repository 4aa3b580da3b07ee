"""A member's replica data: an in-memory key-value map per partition it holds.

The store knows nothing of the protocol: it holds what the runtime writes into it, stages
what a migration copies in until the destination commits, and answers what it holds
(docs/node.md §3).
"""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Entry", "Store"]

Key = str
MigrationId = tuple[int, int]
#: (key, value, update time): the time, in ms of the owner's wall clock, is when the owner
#: took the write (0: unknown); it travels with the entry to backups, migrations and merges
Entry = tuple[Key, bytes, int]


class Store:
    """Replica data by partition, and data staged by migration id and sender.

    What each member sent for a migration is staged apart: a commit installs only what
    the migration's real source sent (:meth:`install`), never what another member
    staged under the same id.
    """

    __slots__ = ("_bytes", "data", "staged")

    def __init__(self) -> None:
        #: partition -> key -> (value, update time)
        self.data: dict[int, dict[Key, tuple[bytes, int]]] = {}
        #: migration id -> sender -> (partition, entries)
        self.staged: dict[MigrationId, dict[int, tuple[int, dict[Key, tuple[bytes, int]]]]] = {}
        self._bytes: dict[int, int] = {}       # value bytes per partition, kept as it changes

    def put(self, partition: int, entries: Iterable[Entry]) -> None:
        """Write ``entries`` into ``partition``'s replica data."""
        d = self.data.setdefault(partition, {})
        delta = 0
        for k, v, t in entries:
            old = d.get(k)
            delta += len(v) - (len(old[0]) if old is not None else 0)
            d[k] = (v, t)
        self._bytes[partition] = self._bytes.get(partition, 0) + delta

    def get(self, partition: int, keys: Iterable[Key]) -> list[bytes | None]:
        """The values of ``keys`` in ``partition`` (``None`` where absent)."""
        d = self.data.get(partition, {})
        return [e[0] if (e := d.get(k)) is not None else None for k in keys]

    def updated(self, partition: int, keys: Iterable[Key]) -> list[int]:
        """The update times of ``keys`` in ``partition`` (-1 where absent)."""
        d = self.data.get(partition, {})
        return [e[1] if (e := d.get(k)) is not None else -1 for k in keys]

    def snapshot(self, partition: int) -> list[Entry]:
        """A copy of ``partition``'s entries (what a migration sends)."""
        return [(k, v, t) for k, (v, t) in self.data.get(partition, {}).items()]

    def stage(self, migration: MigrationId, entries: Iterable[Entry],
              first: bool, sender: int = -1, partition: int = -1) -> bool:
        """Hold data ``sender`` copied for ``migration`` (of ``partition``) until it
        commits (``first``: start over). False, and nothing staged, when ``sender``
        staged this migration for another partition."""
        by = self.staged.setdefault(migration, {})
        cur = by.get(sender)
        if first or cur is None:
            cur = by[sender] = (partition, {})
        elif cur[0] != partition:
            return False
        cur[1].update((k, (v, t)) for k, v, t in entries)
        return True

    def install(self, migration: MigrationId, partition: int, keep: bool,
                source: int = -1) -> bool:
        """A destination's commit: what ``source`` staged for ``migration`` becomes
        ``partition``'s data (``keep``) or, where the destination ends up holding no data
        replica, the partition is dropped. What other senders staged is dropped. False if
        ``source`` staged nothing for this partition and data was to be kept."""
        by = self.staged.pop(migration, None) or {}
        if not keep:
            self.clear(partition)
            return True
        got = by.get(source)
        if got is None or got[0] not in (-1, partition):
            return False
        self.put(partition, [(k, v, t) for k, (v, t) in got[1].items()])
        return True

    def drop_staged(self, migration: MigrationId, sender: int) -> int:
        """Drop what ``sender`` staged for ``migration``; its partition (-1: nothing)."""
        by = self.staged.get(migration)
        got = by.pop(sender, None) if by is not None else None
        if by is not None and not by:
            del self.staged[migration]
        return got[0] if got is not None else -1

    def discard(self, migration: MigrationId) -> None:
        """A destination's rollback: drop what was staged."""
        self.staged.pop(migration, None)

    def clear(self, partition: int) -> None:
        """Drop ``partition``'s replica data."""
        self.data.pop(partition, None)
        self._bytes.pop(partition, None)

    def entries(self) -> int:
        """Entries held over every partition (staged data not counted)."""
        return sum(len(d) for d in self.data.values())

    def nbytes(self) -> int:
        """Value bytes held over every partition."""
        return sum(self._bytes.values())
