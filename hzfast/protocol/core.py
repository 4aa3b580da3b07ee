"""The node's fields and the steps every part of it uses (docs/design.md §11): building a
node, its read-only views, its outputs (messages, marks, effects), its timeouts, its phase
changes and the checks of what it receives.

:class:`NodeCore` is the base of :class:`hzfast.protocol.Node`'s parts
(:mod:`~hzfast.protocol.member`, :mod:`~hzfast.protocol.master`); it is not used alone.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from hzfast.hashing import stamp as _stamp
from hzfast.protocol import _merge
from hzfast.protocol import messages as msg
from hzfast.protocol.common import (
    EFFECT,
    MARK,
    SEND,
    SET_TIMER,
    VERSION_LIMIT,
    MigrationId,
    check_migration,
)
from hzfast.protocol.completed import CompletedList
from hzfast.protocol.config import Config
from hzfast.protocol.designs import LegacyDesign, SafeDesign
from hzfast.protocol.kinds import (
    COPY,
    FOLLOWER,
    SYNC,
    EffectKind,
    MarkName,
    Phase,
    TimerKind,
)
from hzfast.protocol.messages import Message, MigrationInfo
from hzfast.protocol.outputs import Output

if TYPE_CHECKING:
    from hzfast.protocol.run import Run

__all__ = ["MOVES", "WAKE", "NodeCore"]

WAKE = (TimerKind.WAKE.value,)       # the one timer key a node asks its runtime for

#: The master's phase changes (docs/design.md §7.0): what each phase may move to.
MOVES: dict[Phase, frozenset[Phase]] = {
    Phase.FOLLOWER: frozenset((Phase.IDLE, Phase.RECOVERING)),
    Phase.RECOVERING: frozenset((Phase.IDLE, Phase.FOLLOWER)),
    Phase.IDLE: frozenset((Phase.PROMOTING, Phase.RUNNING, Phase.FOLLOWER)),
    Phase.PROMOTING: frozenset((Phase.IDLE, Phase.FOLLOWER)),
    Phase.RUNNING: frozenset((Phase.IDLE, Phase.FOLLOWER)),
}


class NodeCore:
    """A node's fields and shared steps (see :class:`hzfast.protocol.Node`)."""

    def __init__(self, member_uuid: int, config: Config | None = None, *,
                 replicas: NDArray[np.int32] | None = None,
                 versions: NDArray[np.int32] | None = None) -> None:
        if not isinstance(member_uuid, int) or isinstance(member_uuid, bool):
            raise TypeError(f"member_uuid must be an int, got {type(member_uuid).__name__}")
        if not 0 <= member_uuid < 2**31 - 1:
            raise ValueError(f"member_uuid must be in [0, 2**31 - 1), got {member_uuid}")
        if config is None:
            config = Config()
        if not isinstance(config, Config):
            raise TypeError(f"config must be a hzfast.protocol.Config, got "
                            f"{type(config).__name__}")
        self.me = member_uuid
        self.config = config
        self._design = LegacyDesign() if config.design == "legacy" else SafeDesign()
        P, R = config.partition_count, config.replica_count
        # the settings read on every message, as fields (the Config is frozen)
        self._P, self._R, self._bc = P, R, config.backup_count
        self._timeout = config.timeout
        self.replicas = np.full((P, R), -1, dtype=np.int32)
        self.versions = np.zeros(P, dtype=np.int32)
        self.initialized = False
        # the newest term of a member list this node took; a message sent under an older
        # one changes nothing here (docs/design.md §13.1)
        self.term = 0
        self.stale_term = 0              # messages dropped for their older term
        self.members: tuple[int, ...] = ()
        self.lite: frozenset[int] = frozenset()
        self._list = CompletedList(np.zeros(P, dtype=np.int32))
        self.active: dict[int, MigrationInfo] = {}
        self._carried: dict[int, tuple[MigrationInfo, ...]] = {}   # a request's list, forwarded
        self._install_eid: dict[MigrationId, int] = {}   # destination: its install effect
        # new owner by a destination commit the master has not confirmed yet: no writes
        self._unconfirmed: dict[int, MigrationId] = {}
        self._waiters: dict[int, list[tuple[int, Message] | MigrationInfo]] = {}
        self._finalized: set[MigrationId] = set()
        self._finalizing: dict[int, int] = {}              # partition -> pending effects
        # copies a source kept past its finalization because its table's data slots for
        # the partition listed no live member (§7.3(i)): partition -> the migration (None:
        # a plain clear) they go with once the row lists one
        self._kept: dict[int, MigrationInfo | None] = {}
        self._effects: dict[int, tuple[EffectKind, MigrationInfo | None, int]] = {}
        self._effect_seq = 0
        self._out: list[Output] = []
        self._inbox: deque[tuple[int, Message]] = deque()
        self._now = 0
        #: the master's phase (docs/design.md §7.0); the fields below it hold its work
        self.phase = FOLLOWER
        self._seq = 0
        self._run: Run | None = None                          # RUNNING: the plan's run
        self._fetching: dict[int, msg.PartitionStateReply | None] | None = None  # RECOVERING
        self._promotions: dict[int, tuple[int, tuple[MigrationInfo, ...], bool | None]] = {}
        self._promotion_seq = 0
        self._dirty = False                                   # a plan is due
        self._paused_until: int | None = None       # after a failed run: no plan before
        self._publish: tuple[tuple[MigrationId, ...], dict[int, bool | None]] | None = None
        self._check_timer = False
        self._design.start(self)
        # the timeouts (key -> time), the one runtime timer asked for (its time, None if
        # none) and whether the node is running the timeouts that timer found due
        self._deadlines: dict[Hashable, int] = {}
        self._wake: int | None = None
        self._waking = False
        self._told: set[int] = set()                          # members sent the full table
        self.diverged = 0                                     # diverged partitions seen
        self.dropped = 0                                      # messages its phase does not take
        if replicas is not None or versions is not None:
            self._start_from(replicas, versions)

    def _start_from(self, replicas: NDArray[np.int32] | None,
                    versions: NDArray[np.int32] | None) -> None:
        P, R = self._P, self._R
        for name, a, shape in (("replicas", replicas, (P, R)), ("versions", versions, (P,))):
            if not isinstance(a, np.ndarray) or a.dtype != np.int32 or a.shape != shape:
                raise ValueError(f"{name} must be an int32 ndarray of shape {shape} "
                                 f"(replicas and versions go together)")
        assert replicas is not None and versions is not None
        reps, vers = np.ascontiguousarray(replicas).copy(), np.ascontiguousarray(versions).copy()
        if self._bad_table(reps, vers, None, "the starting table"):
            self._out = []
            raise ValueError("replicas/versions: a row with a member twice or a slot below "
                             "-1, or a version outside [0, 2**30)")
        self.replicas, self.versions, self.initialized = reps, vers, True

    @property
    def completed(self) -> dict[MigrationId, MigrationInfo]:
        """The completed-migration list this member holds, by id, in list order (the dict
        itself: changes to it are the node's)."""
        return self._list.as_dict()

    @property
    def master(self) -> int:
        """The master of this node's view (the oldest member), -1 before any view."""
        return self.members[0] if self.members else -1

    @property
    def is_master(self) -> bool:
        return bool(self.members) and self.members[0] == self.me

    @property
    def data_members(self) -> tuple[int, ...]:
        return tuple(m for m in self.members if m not in self.lite)

    @property
    def stamp(self) -> int:
        """The stamp of this node's partition versions (docs/design.md §3)."""
        return int(_stamp(self.versions))

    def _enter(self, phase: Phase) -> None:
        """Move the master's phase (docs/design.md §7.0; :data:`MOVES` says where to)."""
        assert phase in MOVES[self.phase], f"{self.phase} -> {phase}"
        self.phase = phase

    def _send(self, to: int, m: Message) -> None:
        if to == self.me:
            self._inbox.append((to, m))
        else:
            self._out.append(SEND(to, m, self.term))

    def _mark(self, name: MarkName, x: MigrationInfo | None = None, partition: int = -1,
              detail: str = "") -> None:
        self._out.append(MARK(name, x.partition if x is not None else partition, x, detail))

    def _effect(self, kind: EffectKind, partition: int, x: MigrationInfo | None = None,
                to: int = -1, keep: bool = True) -> None:
        self._effect_seq += 1
        eid = self._effect_seq
        self._effects[eid] = (kind, x, partition)
        if kind is not COPY and kind is not SYNC:
            self._finalizing[partition] = self._finalizing.get(partition, 0) + 1
        self._out.append(EFFECT(eid, kind, partition, x, to, keep))

    def _timer_set(self, key: Hashable, delay: int) -> None:
        """Run the timeout ``key`` at ``now + delay`` (replacing a pending one of that key).

        The node keeps its own deadlines and asks the runtime for one timer, ``WAKE``,
        at the earliest of them (docs/design.md §11.3): most timeouts are cancelled by the
        answer they wait for, so setting and cancelling them cost the runtime nothing."""
        at = self._now + delay
        d = self._deadlines
        if key in d:
            del d[key]                       # a re-set timeout runs after those set before
        d[key] = at
        w = self._wake
        if not self._waking and (w is None or at < w):   # (waking: the wake-up asks)
            self._wake = at
            self._out.append(SET_TIMER(WAKE, at))

    def _timer_cancel(self, key: Hashable) -> None:
        """Forget the timeout ``key`` (a no-op when none is pending)."""
        self._deadlines.pop(key, None)

    def _reject(self, sender: int, m: Message, why: str) -> None:
        self._mark(MarkName.MESSAGE_REJECTED, detail=f"{type(m).__name__} from {sender}: {why}")

    # ------------------------------------------------------------------ checks
    def _check_migration(self, x: object) -> str:
        """Why ``x`` is not a well-formed migration for this cluster ("" if it is)."""
        return check_migration(x, self._P, self._R)

    def _bad_table(self, replicas: NDArray[np.int32], versions: NDArray[np.int32],
                   updated: NDArray[np.bool_] | None, what: str) -> bool:
        """True, with a ``message_rejected`` mark, when a received table (C-contiguous
        int32 replicas and versions) has, among the rows this member would take from it
        (``updated``, or all), a slot below -1 or a member twice, or a version outside
        ``[0, VERSION_LIMIT)``: no honest member sends one, and taking it would leave this
        member's table invalid (a master could not plan) or let a master's version bumps
        wrap (§7.4)."""
        p = _merge.first_invalid(replicas, versions, updated, VERSION_LIMIT)
        if p < 0:
            return False
        self._mark(MarkName.MESSAGE_REJECTED, partition=p,
                   detail=f"{what} with partition {p} at version {versions[p]}: "
                          f"{replicas[p].tolist()} (a member twice, a slot below -1 or "
                          f"a version out of range)")
        return True

    def _finalize(self, x: MigrationInfo) -> None:
        """§7.3(h)/(i): a participant finalizes ``x`` (:mod:`hzfast.protocol.member`)."""
        raise NotImplementedError

    # the steps the node's other parts implement (member.py, master.py), called from here
    # and from node.py
    def _recheck_kept(self) -> None:
        raise NotImplementedError

    def _master_step(self) -> None:
        raise NotImplementedError

    def _master_view_changed(self, gone: set[int], old_master: int) -> None:
        raise NotImplementedError

    def _drop_master_state(self) -> None:
        raise NotImplementedError

    def _master_commit(self, x: MigrationInfo) -> None:
        raise NotImplementedError
