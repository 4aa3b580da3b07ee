"""Replaying a migration plan on a table (docs/design.md section 5)."""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from hzfast import _check
from hzfast._typing import TableLike, VectorLike
from hzfast.migration import _apply
from hzfast.migration.plan import MigrationPlan

__all__ = ["apply_migrations"]


def apply_migrations(replicas: TableLike, versions: VectorLike | None, plan: MigrationPlan
                     ) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """Apply a plan's decisions in order; return new ``(replicas, versions)``.

    Each decision is applied as Hazelcast's ``applyMigration`` does: ``S[sci] = -1``,
    ``S[dci] = -1``, ``S[dni] = destination``, ``S[sni] = source`` (each when its index is
    not -1) and the partition version rises by ``1 + (sni > -1) + (dci > -1)``.

    Parameters
    ----------
    replicas : ndarray[int32] of shape (P, R), or PartitionTable
    versions : ndarray[int32] of shape (P,), or None
        None: the table's versions when ``replicas`` is a PartitionTable, else zeros.
    plan : MigrationPlan

    Returns
    -------
    (ndarray[int32] of shape (P, R), ndarray[int32] of shape (P,))
        New arrays; the inputs are never modified (not even partially on error).

    Raises
    ------
    TypeError
        Wrong dtype/type, or ``plan`` is not a MigrationPlan.
    ValueError
        Invalid table or versions, a plan for another shape, a decision that does not
        match the table (source/destination not where it says, index out of range) or
        that would put a member twice in a row; the message names the migration and
        the partition.

    Examples
    --------
    >>> import numpy as np, hzfast
    >>> cur = np.array([[0, 1, 2]], dtype=np.int32)
    >>> plan = hzfast.plan_migrations(cur, np.array([[3, 1, 4]], dtype=np.int32))
    >>> reps, vers = hzfast.apply_migrations(cur, np.zeros(1, np.int32), plan)
    >>> reps.tolist(), vers.tolist()
    ([[3, 1, 4]], [2])
    """
    if not isinstance(plan, MigrationPlan):
        raise TypeError(f"plan must be a MigrationPlan, got {type(plan).__name__}")
    table_versions = getattr(replicas, "versions", None) if not isinstance(
        replicas, np.ndarray) else None
    # private, writable snapshots, validated after they were taken: the kernel applies
    # the plan to them and they become the result (no other thread can reach them)
    reps, _ = _check.check_table(replicas, "replicas", writable=True)
    P = reps.shape[0]
    if versions is None:
        versions = table_versions if table_versions is not None else np.zeros(P, np.int32)
    new_vers = _check.as_versions(versions, P, "versions", writable=True)
    if plan.target is not None and plan.target.shape != reps.shape:
        raise ValueError(f"plan is for a table of shape {plan.target.shape}, "
                         f"replicas has shape {reps.shape}")
    # the plan's arrays are immutable (MigrationPlan), checked again decision by decision
    status, bad = _apply.apply(reps, new_vers, plan._columns)
    if status:
        raise ValueError(f"migration {bad} of the plan (partition {plan.partition_id[bad]}, "
                         f"decision {tuple(int(x) for x in plan[bad].decision)}) cannot be "
                         f"applied: {_check.decision_problem(status)}")
    return reps, new_vers
