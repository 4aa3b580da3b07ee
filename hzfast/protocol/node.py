"""The protocol node: one per member, the same code on every member (docs/design.md §7).

A :class:`Node` owns one member's view of the partition table (replicas and versions),
its completed-migration list and its active migrations, and — while it is the oldest
member of its view — the master's work. It performs no I/O: :meth:`Node.handle` takes one
event and the current time and returns the outputs (messages to send, timers, effects on
replica data, marks). The same events give the same outputs.

The node is assembled from one module per concern: this one (construction, the public
queries, the event loop, dispatch by the master's phase, timeouts and effects),
:mod:`~hzfast.protocol.member` (what every member does: requests, transfers, commits,
promotions, tables and completed lists), :mod:`~hzfast.protocol.master` (the master's
work: recovery, repair, planning, running the plan, publication) and
:mod:`~hzfast.protocol.completed` (the completed-migration list). Two designs exist
(:mod:`~hzfast.protocol.designs`): ``"safe"`` (docs/design.md §7.1–§7.9) and ``"legacy"``
(§7.10), the earlier design that lost data in Hazelcast's issue #5444, kept so that the
simulator can show its checker sees loss. A node is built with one of them and asks it at
the few steps where the two differ.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast.protocol import messages as msg
from hzfast.protocol.common import (
    RESULT,
    SET_TIMER,
    VERSION_LIMIT,
    apply_to_row,
    held_by,
    migration_fits_row,
)
from hzfast.protocol.config import Config, MemberState
from hzfast.protocol.core import MOVES, WAKE, NodeCore
from hzfast.protocol.designs import DESIGNS
from hzfast.protocol.events import (
    EffectDone,
    Event,
    MembershipChanged,
    MessageReceived,
    TimerFired,
)
from hzfast.protocol.kinds import (
    CHECK_TIMEOUT,
    COPY,
    FOLLOWER,
    IDLE,
    INSTALL,
    RECOVERING,
    SYNC,
    EffectKind,
    MarkName,
    Phase,
    TimerKind,
)
from hzfast.protocol.master import MasterSide
from hzfast.protocol.member import MemberSide
from hzfast.protocol.messages import Message, MigrationInfo
from hzfast.protocol.outputs import Output

__all__ = ["ACCEPTS", "DESIGNS", "MOVES", "VERSION_LIMIT", "Config", "MemberState", "Node",
           "apply_to_row", "migration_fits_row"]

_MASTER = frozenset((Phase.RECOVERING, Phase.PROMOTING, Phase.RUNNING, Phase.IDLE))
_ANY = _MASTER | {FOLLOWER}

#: Which messages each phase of a node takes (docs/design.md §7.0): every member's
#: messages in any phase (a master is a member too); an answer to the master's work only
#: in the phase that waits for it. Any other message is dropped here, unread, and counted
#: in :attr:`Node.dropped` (a late answer: the work it answers is over).
ACCEPTS: dict[type[Message], frozenset[Phase]] = {
    msg.PartitionTableUpdate: _ANY,
    msg.PublishCompletedMigrations: _ANY,
    msg.PartitionStateCheck: _ANY,
    msg.MigrationRequest: _ANY,
    msg.MigrationTransfer: _ANY,
    msg.MigrationTransferAck: _ANY,
    msg.MigrationCommit: _ANY,
    msg.FetchPartitionState: _ANY,
    msg.PromotionCommit: _ANY,
    msg.ReplicaSyncRequest: _ANY,
    msg.PartitionTableAck: frozenset(),
    msg.PartitionStateReply: frozenset((Phase.RECOVERING,)),
    msg.PromotionCommitResponse: frozenset((Phase.PROMOTING,)),
    msg.MigrationResult: frozenset((Phase.RUNNING,)),
    msg.MigrationCommitResponse: frozenset((Phase.RUNNING,)),
    msg.PublishCompletedAck: _MASTER,
    msg.PartitionStateCheckReply: _MASTER,
}


class NodeEvents(NodeCore):
    """The part of :class:`Node` in this module: its public queries and its event loop."""

    # ------------------------------------------------------------------ views
    @property
    def busy(self) -> bool:
        """The master has work queued or in flight (a run, promotions, a recovery, a plan due)."""
        return self.phase is not IDLE and self.phase is not FOLLOWER \
            or self._dirty

    def state(self, master_busy: bool = False) -> str:
        """This member's :class:`MemberState`; ``master_busy``: the master's :attr:`busy`."""
        if self.phase is RECOVERING:
            return MemberState.FETCHING_PARTITION_TABLE
        if not self.initialized:
            return MemberState.MIGRATION_LOCAL
        need = min(len(self.data_members), self._R)
        members = np.asarray(self.data_members, dtype=np.int32)
        head = self.replicas[:, :need]
        if need and not held_by(head, members).all():
            return MemberState.REPLICA_NOT_OWNED
        if self.active or self._finalizing or (self.is_master and self.busy):
            return MemberState.MIGRATION_LOCAL
        if not self.is_master and master_busy:
            return MemberState.MIGRATION_ON_MASTER
        return MemberState.SAFE

    def accepts_write(self, partition: int) -> bool:
        """Whether this member takes client writes to ``partition`` now: it owns it and
        nothing migrates it here (docs/design.md §7.11(a))."""
        return (self.initialized and self.phase is not RECOVERING
                and self.replicas.item(partition, 0) == self.me
                and partition not in self.active and partition not in self._finalizing
                and partition not in self._unconfirmed)

    def accepts_backup(self, partition: int, sender: int) -> bool:
        """Whether this member applies a backup write of ``partition`` from ``sender``: it
        lists itself at one of the partition's backup slots (``1..backup_count``) and
        ``sender`` at its slot 0 (docs/design.md §7.11(b))."""
        if not self.initialized or sender == self.me:
            return False
        row = self.replicas
        if row.item(partition, 0) != sender:
            return False
        for j in range(1, self._bc + 1):
            if row.item(partition, j) == self.me:
                return True
        return False

    def backups(self, partition: int) -> NDArray[np.int32]:
        """The members this node lists at backup indices ``1..backup_count``."""
        return self.replicas[partition, 1:self._bc + 1]

    # ------------------------------------------------------------------ input
    def handle(self, event: Event, now: int) -> list[Output]:
        """Process one event at time ``now``; return the outputs it causes.

        Raises
        ------
        TypeError
            ``event`` is not an event, ``now`` not an int. Nothing a faulty network can
            deliver raises: bad messages are rejected with a mark and, where the sender
            waits for one, a negative reply.
        """
        if type(now) is not int and (not isinstance(now, int) or isinstance(now, bool)):
            raise TypeError(f"now must be an int, got {type(now).__name__}")
        self._now = now
        self._out = []
        waking = False
        t = type(event)
        if t is MessageReceived or isinstance(event, MessageReceived):
            m = event.message                        # type: ignore[attr-defined]
            if not isinstance(m, Message):
                raise TypeError(f"message must be a hzfast.protocol message, got "
                                f"{type(m).__name__}")
            term = event.term                        # type: ignore[attr-defined]
            if type(term) is not int:
                raise TypeError(f"term must be an int, got {type(term).__name__}")
            if term < self.term:
                self.stale_term += 1                 # sent under an older list's term
            else:
                self._receive(event.sender, m)       # type: ignore[attr-defined]
        elif t is EffectDone or isinstance(event, EffectDone):
            self._effect_done(event.effect_id, bool(event.ok))  # type: ignore[attr-defined]
        elif isinstance(event, MembershipChanged):
            self._membership(event)
        elif isinstance(event, TimerFired):
            key = event.key
            if key is WAKE or (type(key) is tuple and len(key) == 1 and type(key[0]) is str
                                and key[0] == "wake"):
                waking = True
            else:
                self._timer(key)
        else:
            raise TypeError(f"event must be a hzfast.protocol event, got {type(event).__name__}")
        if waking:
            self._wake_up()
        else:
            self._settle()
        self._design.after_event(self)
        if self._kept:
            self._recheck_kept()
        out, self._out = self._out, []
        return out

    def _settle(self) -> None:
        """After an input: the messages sent to itself, then the master's step, until
        neither has anything left to do."""
        inbox = self._inbox
        me = self.me
        for _ in range(10_000):
            if inbox:
                self._drain()
            members = self.members
            if members and members[0] == me:
                self._master_step()
            if not inbox:
                break

    def _drain(self) -> None:
        inbox = self._inbox
        for _ in range(100_000):
            if not inbox:
                return
            sender, m = inbox.popleft()
            self._receive(sender, m)

    # ------------------------------------------------------------------ timeouts
    def _wake_up(self) -> None:
        """The runtime's timer fired: run the timeouts that are due, earliest first (in
        the order they were set among equal times), each followed by the node's usual
        settling, as if each had been its own event; then ask for the next wake-up."""
        self._wake = None
        self._waking = True
        d = self._deadlines
        now = self._now
        try:
            due = [k for k, at in d.items() if at <= now]
            if len(due) > 1:
                due.sort(key=d.__getitem__)          # (stable: set order among equals)
            ran = False
            for k in due:
                at = d.get(k)
                if at is None or at > now:       # cancelled or re-set by an earlier one
                    continue
                del d[k]
                self._timer(k)
                self._settle()
                ran = True
            if not ran:
                self._settle()
        finally:
            self._waking = False
        if d:
            w = min(d.values())
            self._wake = w
            self._out.append(SET_TIMER(WAKE, w))

    def _timer(self, key: Hashable) -> None:
        if not isinstance(key, tuple) or not key:
            return
        try:
            self._deadlines.pop(key, None)      # (fired from outside: not again at its time)
        except TypeError:                       # unhashable: not one of the node's keys
            return
        try:
            step = _TIMERS.get(key[0])
        except TypeError:
            return
        if step is not None and (key[0] == CHECK_TIMEOUT or self.is_master):
            step(self, key)

    # ------------------------------------------------------------------ dispatch
    def _receive(self, sender: int, m: Message) -> None:
        if sender != m.sender:
            self._reject(sender, m, "sender does not match the connection")
            return
        if sender != self.me and sender not in self.members:
            self._reject(sender, m, "unknown member")
            return
        t = type(m)
        handler = _HANDLERS.get(t)
        if handler is None:
            self._reject(sender, m, "unknown message")
            return
        if self.phase not in ACCEPTS[t]:
            self.dropped += 1
            return
        handler(self, m)

    # ------------------------------------------------------------------ membership
    def _membership(self, ev: MembershipChanged) -> None:
        if ev.term < self.term:
            self.stale_term += 1             # a list of an older term: changes nothing
            return
        self.term = ev.term
        old = set(self.members)
        old_master = self.master
        self._list.restart_index()       # the master role may move: the index starts over
        lite = ev.lite or (False,) * len(ev.members)
        self.members = ev.members
        self.lite = frozenset(m for m, f in zip(ev.members, lite) if f)
        gone = old - set(ev.members)
        if gone and self.initialized:
            self._design.members_left(self, gone)
        if not self.is_master:
            self._drop_master_state()
            return
        self._master_view_changed(gone, old_master)

    # ------------------------------------------------------------------ effects
    def _effect_done(self, eid: int, ok: bool) -> None:
        ent = self._effects.pop(eid, None)
        if ent is None:
            return
        kind, x, p = ent
        if kind is SYNC and x is None:
            return                                   # a legacy replica sync: nothing waits
        if kind is not COPY and kind is not SYNC:
            self._data_settled(eid, kind, x, p)
            return
        assert x is not None
        if self.active.get(p) is not x:
            return                                  # rolled back meanwhile
        if not ok:
            self._send(x.master, RESULT(self.me, x, False, "copy failed"))
            return
        self._mark(MarkName.REPLICA_COPIED, x)
        self._design.copied(self, x, p)

    def _data_settled(self, eid: int, kind: EffectKind, x: MigrationInfo | None,
                      p: int) -> None:
        """An effect on this member's own data is done: the answers waiting for it go."""
        n = self._finalizing.get(p, 0) - 1
        if n > 0:
            self._finalizing[p] = n
        else:
            self._finalizing.pop(p, None)
        if x is not None and kind is INSTALL:
            self._install_eid.pop(x.id, None)
        for w in self._waiters.pop(eid, ()):   # answers that wait for the data
            if isinstance(w, MigrationInfo):
                run = self._run
                if run is not None and w.id in run.inflight and self.is_master:
                    self._master_commit(w)
            else:
                self._send(w[0], w[1])


class Node(NodeEvents, MemberSide, MasterSide):
    """One member's protocol state machine (sans-I/O).

    Parameters
    ----------
    member_uuid : int
        This member's id: an int in ``[0, 2**31 - 1)``, unique over the cluster's life.
    config : Config
        The cluster's settings (the same on every member).
    replicas, versions : ndarray of int32, optional
        Start from this table (shape ``(partition_count, replica_count)`` and
        ``(partition_count,)``, validated and copied) as an initialized member: a member
        restarted from persisted state, or a scripted case's starting point. Without
        them the member starts empty and takes its first table from its master.

    Notes
    -----
    :meth:`handle` is the only mutator. Outputs are returned in the order the node made
    them; messages a node sends to itself are handled inside the same call.
    """


_TIMERS: dict[str, Callable[[Any, tuple[Any, ...]], None]] = {
    TimerKind.CHECK: Node._on_check_timer,
    TimerKind.MIGRATION: Node._on_migration_timeout,
    TimerKind.FETCH: Node._on_fetch_timeout,
    TimerKind.PROMOTION: Node._on_promotion_timeout,
    TimerKind.PUBLISH: Node._on_publish_timeout,
    TimerKind.RETRY: Node._on_retry,
}

_HANDLERS: dict[type, Callable[[Any, Any], None]] = {
    msg.PartitionTableUpdate: Node._on_table,
    msg.PublishCompletedMigrations: Node._on_publish,
    msg.PartitionStateCheck: Node._on_state_check,
    msg.MigrationRequest: Node._on_request,
    msg.MigrationTransfer: Node._on_transfer,
    msg.MigrationTransferAck: Node._on_transfer_ack,
    msg.MigrationCommit: Node._on_commit,
    msg.FetchPartitionState: Node._on_fetch,
    msg.PromotionCommit: Node._on_promotion,
    msg.ReplicaSyncRequest: Node._on_sync,
    msg.MigrationResult: Node._on_result,
    msg.MigrationCommitResponse: Node._on_commit_response,
    msg.PublishCompletedAck: Node._on_publish_ack,
    msg.PartitionTableAck: Node._on_table_ack,
    msg.PartitionStateCheckReply: Node._on_state_reply,
    msg.PromotionCommitResponse: Node._on_promotion_response,
    msg.PartitionStateReply: Node._on_state,
}
assert set(_HANDLERS) == set(ACCEPTS)
