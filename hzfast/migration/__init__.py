"""The migration domain: plans, the planner, schedules, applying plans and table diffs.

``hzfast`` re-exports every public name; data flows one way: ``plan`` (the plan value
and its kinds) <- ``planner`` (tables -> plan) and ``apply`` / ``schedule`` (plan ->
tables, rounds); ``diff`` compares tables. Kernels (``_*.pyx``) sit beside their module.
See docs/design.md sections 4 to 6.
"""
from hzfast.migration.apply import apply_migrations
from hzfast.migration.diff import TableDiff, diff
from hzfast.migration.executor import Executor
from hzfast.migration.plan import Migration, MigrationKind, MigrationPlan
from hzfast.migration.planner import find_cycles, fix_cycles, plan_migrations, prioritize
from hzfast.migration.schedule import SCHEDULE_POLICIES, Schedule, schedule

__all__ = [
    "Executor", "Migration", "MigrationKind", "MigrationPlan", "SCHEDULE_POLICIES", "Schedule",
    "TableDiff", "apply_migrations", "diff", "find_cycles", "fix_cycles", "plan_migrations",
    "prioritize", "schedule",
]
