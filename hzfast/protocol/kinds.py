"""The protocol's named states and kinds (docs/design.md §7.0).

Every name a node emits or keeps as state is a member of one of these enumerations: the
marks it emits, the effects it asks of its runtime, its timeouts, a migration's stage on
the master and the master's phase. Each member *is* its string value (``MarkName.MASTER_COMMITTED
== "master_committed"``), formats as it, and hashes as it, so traces, transcripts, JSON and
dictionary keys read exactly as the bare strings did.
"""
from __future__ import annotations

import enum

__all__ = ["EffectKind", "MarkName", "Phase", "Stage", "StrEnum", "TimerKind"]


class StrEnum(str, enum.Enum):
    """A string enumeration whose members print, format and compare as their values
    (``enum.StrEnum`` from Python 3.11, here for 3.10 too)."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)

    def __repr__(self) -> str:            # a member reads as its string in reprs of tuples
        return str.__repr__(self)


class MarkName(StrEnum):
    """Every protocol step a node marks (:class:`hzfast.protocol.Mark`)."""

    MIGRATION_STARTED = "migration_started"
    REPLICA_COPIED = "replica_copied"
    DESTINATION_COMMITTED = "destination_committed"
    MASTER_COMMITTED = "master_committed"
    TABLE_PUBLISHED = "table_published"
    SOURCE_FINALIZED = "source_finalized"
    DESTINATION_FINALIZED = "destination_finalized"
    MIGRATION_FAILED = "migration_failed"
    PROMOTION_COMMITTED = "promotion_committed"
    COMPLETED_EVICTED = "completed_evicted"
    TABLES_FETCHED = "tables_fetched"
    RECOVERY_PUBLISHED = "recovery_published"
    DIVERGED_REJECTED = "diverged_rejected"
    PARTIAL_UPDATE_REJECTED = "partial_update_rejected"
    MESSAGE_REJECTED = "message_rejected"


class EffectKind(StrEnum):
    """What an :class:`hzfast.protocol.Effect` asks of the runtime's replica data.

    ``COPY``     send this member's data of the partition to member ``to``, held there
                 provisionally under the migration's id (report ok once it arrived);
    ``INSTALL``  make the data held provisionally for the migration this member's replica
                 data of the partition (a destination's commit); ``Effect.keep`` says
                 whether the member holds it as a data replica afterwards;
    ``DISCARD``  drop the data held provisionally for the migration (a rollback);
    ``CLEAR``    drop this member's replica data of the partition;
    ``PROMOTE``  this member's backup copy becomes the owner's (no data moves);
    ``SYNC``     legacy design: send this member's data of the partition to member ``to``,
                 which takes it as its replica data on arrival.
    """

    COPY = "copy"
    INSTALL = "install"
    DISCARD = "discard"
    CLEAR = "clear"
    PROMOTE = "promote"
    SYNC = "sync"


class TimerKind(StrEnum):
    """A node's timeouts (the first item of a timeout's key)."""

    WAKE = "wake"              #: the one runtime timer: run the timeouts that are due
    CHECK = "check"            #: the master's periodic stamp check
    MIGRATION = "mig"          #: a migration's request or commit unanswered
    FETCH = "fetch"            #: a recovering master's fetch unanswered
    PROMOTION = "promotion"    #: a promotion batch unanswered
    PUBLISH = "publish"        #: a completed-list publication unanswered
    RETRY = "retry"            #: the pause after a failed run is over


class Stage(StrEnum):
    """Where a migration the master runs stands (docs/design.md §7.2)."""

    REQUEST = "request"        #: asked of the owner; waiting for its result
    COMMIT = "commit"          #: the destination is asked to commit
    INSTALLING = "installing"  #: the master is the destination: its install is under way


class Phase(StrEnum):
    """The master's phase (docs/design.md §7.0): exactly one at a time."""

    FOLLOWER = "follower"      #: not the master of its view
    RECOVERING = "recovering"  #: a new master fetching every member's table (§7.8)
    PROMOTING = "promoting"    #: backups promoted where owners left, waiting for answers
    RUNNING = "running"        #: a migration plan in execution
    IDLE = "idle"              #: nothing in flight (a plan may be due, or paused)


# The members as module constants, for the node's hot paths: reading a member from its class
# goes through the enum's metaclass (~150 ns), a module constant is one dictionary lookup.
FOLLOWER, RECOVERING, PROMOTING, RUNNING, IDLE = (
    Phase.FOLLOWER, Phase.RECOVERING, Phase.PROMOTING, Phase.RUNNING, Phase.IDLE)
STAGE_REQUEST, STAGE_COMMIT, STAGE_INSTALLING = Stage.REQUEST, Stage.COMMIT, Stage.INSTALLING
COPY, INSTALL, DISCARD, CLEAR, PROMOTE, SYNC = (
    EffectKind.COPY, EffectKind.INSTALL, EffectKind.DISCARD, EffectKind.CLEAR,
    EffectKind.PROMOTE, EffectKind.SYNC)
CHECK_TIMEOUT, MIGRATION_TIMEOUT, FETCH_TIMEOUT, PROMOTION_TIMEOUT = (
    TimerKind.CHECK, TimerKind.MIGRATION, TimerKind.FETCH, TimerKind.PROMOTION)
