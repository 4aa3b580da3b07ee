"""The master's running plan (docs/design.md §6, §7.3): the executor that decides which
migrations start, and the migrations in flight."""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from hzfast.migration._executor import ANSWER_ACCEPTED as _ACCEPTED
from hzfast.migration.executor import Executor
from hzfast.migration.plan import MigrationPlan
from hzfast.protocol.common import MigrationId
from hzfast.protocol.kinds import Stage
from hzfast.protocol.messages import MigrationInfo

__all__ = ["Run"]


class Run:
    """The master's running plan: the executor and the migrations in flight, each as
    ``(plan row, migration, stage, owner asked)``."""

    __slots__ = ("aborted", "changes", "core", "executor", "idle_at", "ids", "inflight",
                 "plan")

    def __init__(self, plan: MigrationPlan, executor: Executor, ids: NDArray[np.int64]) -> None:
        self.plan = plan
        self.executor = executor
        # the executor's kernel, called directly on the hot path (the wrapper's checks are
        # for callers outside hzfast; a refusal goes back through the wrapper to raise)
        self.core = executor._core
        self.ids = ids                                  # dense index -> member id
        self.inflight: dict[MigrationId, tuple[int, MigrationInfo, Stage, int]] = {}
        self.aborted = False
        self.changes = 0            # executor calls that change its state (started/finished)
        self.idle_at = -1           # ``changes`` when ready() last had nothing to start

    def finished(self, i: int, ok: bool) -> None:
        """``executor.finished(i, ok)`` through its kernel (``i``: a row in flight)."""
        if not 0 <= i < self.core.n or self.core.finish(i, ok) != _ACCEPTED:
            self.executor.finished(i, ok)          # raises the refusal (or the bad row)
        self.changes += 1
