"""A cluster's protocol settings and a member's partition-service states (docs/design.md
§7.9, §11)."""
from __future__ import annotations

from dataclasses import dataclass

from hzfast.protocol.designs import DESIGNS

__all__ = ["Config", "MemberState"]


@dataclass(frozen=True, slots=True)
class Config:
    """A cluster's protocol settings (the same on every member).

    Times are in the runtime's abstract units (the simulator's ticks).
    """

    partition_count: int = 271
    backup_count: int = 1
    max_parallel_migrations: int = 10
    design: str = "safe"
    replica_count: int = 7             #: table width (Hazelcast: 7)
    timeout: int = 200                 #: a request, commit, fetch or promotion unanswered
    retry_delay: int = 60              #: the master's pause after a failed migration run
    state_check_interval: int = 500    #: the master's stamp check period (0: off)
    publish_threshold: int = 10        #: publish the completed list at this many entries

    def __post_init__(self) -> None:
        for name in ("partition_count", "backup_count", "max_parallel_migrations",
                     "replica_count", "timeout", "retry_delay", "state_check_interval",
                     "publish_threshold"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"Config.{name} must be an int, got {type(v).__name__}")
        if not 1 <= self.partition_count <= 10_000_000:
            raise ValueError(f"Config.partition_count must be in 1..10,000,000, got "
                             f"{self.partition_count}")
        if not 1 <= self.replica_count <= 7:
            raise ValueError(f"Config.replica_count must be in 1..7, got {self.replica_count}")
        if not 0 <= self.backup_count < self.replica_count:
            raise ValueError(f"Config.backup_count must be in 0..replica_count - 1 "
                             f"({self.replica_count - 1}), got {self.backup_count}")
        if self.max_parallel_migrations < 1:
            raise ValueError("Config.max_parallel_migrations must be >= 1")
        if self.timeout < 1 or self.retry_delay < 0 or self.state_check_interval < 0:
            raise ValueError("Config.timeout must be >= 1 and the other periods >= 0")
        if self.publish_threshold < 1:
            raise ValueError("Config.publish_threshold must be >= 1")
        if self.design not in DESIGNS:
            raise ValueError(f"Config.design must be one of {DESIGNS}, got {self.design!r}")


class MemberState:
    """A member's partition-service state (docs/design.md §7.9), first match wins."""

    FETCHING_PARTITION_TABLE = "FETCHING_PARTITION_TABLE"
    MIGRATION_LOCAL = "MIGRATION_LOCAL"
    REPLICA_NOT_OWNED = "REPLICA_NOT_OWNED"
    MIGRATION_ON_MASTER = "MIGRATION_ON_MASTER"
    REPLICA_NOT_SYNC = "REPLICA_NOT_SYNC"
    SAFE = "SAFE"
