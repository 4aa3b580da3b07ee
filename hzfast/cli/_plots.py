"""The command line's charts (matplotlib, imported only when one is drawn).

- :func:`plot_plan`: each member's migrations in (as destination) and out (as the member
  that actually sends the data: a COPY or SHIFT UP, which have no source, and a backup's
  move are sent by the partition's owner at that moment; docs/design.md §6);
- :func:`plot_schedule`: a Gantt chart of a schedule, one row per member, one bar per
  migration on its destination's row.
"""
from __future__ import annotations

import heapq
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hzfast.members import Members
from hzfast.migration.plan import MigrationKind, MigrationPlan
from hzfast.migration.schedule import Schedule

__all__ = ["member_flows", "plot_plan", "plot_schedule", "senders"]

_KIND_COLORS = {MigrationKind.COPY: "#4c72b0", MigrationKind.SHIFT_UP: "#55a868",
                MigrationKind.MOVE: "#dd8452", MigrationKind.SHIFT_DOWN: "#c44e52",
                MigrationKind.SHIFT_UP_SOURCE_DROPPED: "#937860",
                MigrationKind.SHIFT_UP_SHIFT_DOWN: "#8172b3"}


def senders(plan: MigrationPlan, current: NDArray[np.int32]) -> NDArray[np.int32]:
    """The member that sends each migration's data (``-1``: nobody holds it).

    The source when it is the owner (``source_current_index == 0``); otherwise the
    partition's owner just before the migration (Hazelcast replicates backups, COPY and
    SHIFT UP from the owner), following every earlier decision of the partition.

    Parameters
    ----------
    plan : MigrationPlan
        Partitions in ascending order, each partition's decisions in execution order.
    current : ndarray[int32] of shape (P, R)
        The table the plan starts from.

    Examples
    --------
    >>> import hzfast
    >>> cur = np.array([[0, 1]], dtype=np.int32)
    >>> plan = hzfast.plan_migrations(cur, np.array([[0, 2]], dtype=np.int32))
    >>> plan.source.tolist(), senders(plan, cur).tolist()   # member 1 leaves, 0 sends
    ([1], [0])
    """
    n = len(plan)
    pid, src, sci = plan.partition_id, plan.source, plan.source_current_index
    sni, dst = plan.source_new_index, plan.destination
    dci, dni = plan.destination_current_index, plan.destination_new_index
    # owner (index 0) after each decision, where the decision touches index 0
    sets = (sni == 0) | (dni == 0) | (sci == 0) | (dci == 0)
    value = np.where(sni == 0, src, np.where(dni == 0, dst, -1)).astype(np.int32)
    idx = np.arange(n)
    last = np.maximum.accumulate(np.where(sets, idx, -1)) if n else idx
    prev = np.concatenate(([-1], last[:-1])) if n else last
    same = prev >= 0
    same[same] = pid[prev[same]] == pid[same]
    start_owner = current[pid, 0] if n else np.empty(0, np.int32)
    before = np.where(same, value[np.maximum(prev, 0)], start_owner)
    out: NDArray[np.int32] = np.where(sci == 0, src, before).astype(np.int32)
    return out


def member_flows(plan: MigrationPlan, current: NDArray[np.int32], member_count: int
                 ) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Queued migrations per member: ``(incoming, outgoing, unsent)``.

    ``incoming[m]`` counts queued migrations whose destination is ``m``, ``outgoing[m]``
    those ``m`` sends (see :func:`senders`); ``unsent`` those nobody can send (data lost).
    Instant decisions (REMOVE, lost-owner assignment) send nothing and are not counted.
    """
    queued = ~plan.instant & (plan.destination >= 0)
    dst = plan.destination[queued]
    snd = senders(plan, current)[queued]
    inc = np.bincount(dst, minlength=member_count).astype(np.int64)
    out = np.bincount(snd[snd >= 0], minlength=member_count).astype(np.int64)
    return inc, out, int((snd < 0).sum())


def _pyplot() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _member_labels(members: Members, shown: NDArray[np.intp]) -> list[str]:
    many = len(shown) > 24
    return [str(i) if many else f"{i}  {members.addresses[i]}" for i in shown.tolist()]


def plot_plan(plan: MigrationPlan, current: NDArray[np.int32], members: Members, path: str,
              *, title: str = "") -> dict[str, Any]:
    """Write a bar chart of each member's queued migrations in and out (PNG).

    Parameters
    ----------
    plan : MigrationPlan
        The plan.
    current : ndarray[int32] of shape (P, R)
        The table it starts from (to know who sends).
    members : Members
        Every member, named on the x axis (index, and address for up to 24 members).
    path : str
        Where to write the PNG.
    title : str, optional
        Prefix of the title (e.g. ``"10 -> 11 members"``).

    Returns
    -------
    dict
        ``incoming``, ``outgoing`` (per member) and ``unsent``: what was drawn.
    """
    plt = _pyplot()
    M = len(members)
    inc, out, unsent = member_flows(plan, current, M)
    total = int(inc.sum())
    x = np.arange(M)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.45 * M + 3), 5.2))
    ax.bar(x - 0.2, inc, 0.4, label=f"in: received as destination ({total:,})",
           color="#4c72b0")
    ax.bar(x + 0.2, out, 0.4, label=f"out: sent as the data's sender ({int(out.sum()):,})",
           color="#dd8452")
    ax.set_xticks(x, _member_labels(members, x), fontsize=8 if M <= 24 else 7,
                  rotation=0 if M > 24 else 35, ha="center" if M > 24 else "right",
                  rotation_mode="anchor")
    ax.set_xlabel("member (index, address)" if M <= 24 else "member index")
    ax.set_ylabel("queued migrations")
    head = f"{title}: " if title else ""
    extra = f", {unsent:,} with no sender (data lost)" if unsent else ""
    ax.set_title(f"{head}{total:,} queued migrations, in and out per member{extra}")
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0, max(1, int(max(inc.max(initial=0), out.max(initial=0)))) * 1.25)
    ax.legend(loc="upper center", ncol=2, frameon=False, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"incoming": inc.tolist(), "outgoing": out.tolist(), "unsent": unsent}


def _lanes(starts: NDArray[np.float64], finishes: NDArray[np.float64]) -> NDArray[np.int64]:
    """Greedy interval partitioning: the lowest free lane for each interval (by start)."""
    order = np.argsort(starts, kind="stable")
    lane = np.zeros(starts.shape[0], dtype=np.int64)
    free: list[int] = []
    busy: list[tuple[float, int]] = []
    count = 0
    for i in order.tolist():
        while busy and busy[0][0] <= starts[i]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            k = heapq.heappop(free)
        else:
            k, count = count, count + 1
        lane[i] = k
        heapq.heappush(busy, (float(finishes[i]), k))
    return lane


def plot_schedule(plan: MigrationPlan, sched: Schedule, members: Members, path: str,
                  *, unit: str = "round") -> dict[str, Any]:
    """Write a Gantt chart of a schedule (PNG): one row per destination member (members
    that receive nothing are left out, and counted in the axis label), a bar per queued
    migration on its destination's row (stacked in lanes when several run at once; a row's
    height grows with its lanes), coloured by kind.

    Parameters
    ----------
    plan : MigrationPlan
        The scheduled plan.
    sched : Schedule
        ``hzfast.schedule(plan, ...)``.
    members : Members
        Every member, named on the y axis.
    path : str
        Where to write the PNG.
    unit : str, default "round"
        The x axis' unit (``"round"`` or ``"s"``).

    Returns
    -------
    dict
        ``bars`` (migrations drawn), ``lanes`` (per member, the most drawn at once),
        ``rows`` (the members drawn, in order: those that receive a migration).
    """
    from matplotlib.patches import Patch
    plt = _pyplot()
    M = len(members)
    queued = np.flatnonzero(~plan.instant & (plan.destination >= 0))
    start, finish = sched.start[queued], sched.finish[queued]
    dst = plan.destination[queued]
    kinds = plan.kind[queued]
    lanes_per_member = np.zeros(M, dtype=np.int64)
    lane = np.zeros(len(queued), dtype=np.int64)
    for m in np.unique(dst).tolist():
        mine = np.flatnonzero(dst == m)
        lane[mine] = _lanes(start[mine], finish[mine])
        lanes_per_member[m] = int(lane[mine].max()) + 1
    shown = np.flatnonzero(lanes_per_member)            # the destinations, in member order
    # each row as tall as its lanes need (0.12 in per lane, at least 0.45 in); rows end to end
    heights = np.maximum(0.45, 0.12 * lanes_per_member[shown]) if shown.size else np.ones(1)
    tops = np.concatenate([[0.0], np.cumsum(heights)])
    fig, ax = plt.subplots(figsize=(10, max(3.0, float(tops[-1]) + 1.8)))
    edge = 0.3 if len(queued) <= 2_000 else 0.0   # thin gaps between few bars, none when dense
    seen_kinds: set[int] = set()
    for row, m in enumerate(shown.tolist()):
        mine = np.flatnonzero(dst == m)
        n_lanes = int(lanes_per_member[m])
        h = heights[row] * 0.9 / n_lanes
        for k in range(n_lanes):
            sel = mine[lane[mine] == k]
            colors = [_KIND_COLORS.get(MigrationKind(int(c)), "grey") for c in kinds[sel]]
            seen_kinds.update(int(c) for c in kinds[sel])
            ax.broken_barh(list(zip(start[sel].tolist(), (finish[sel] - start[sel]).tolist())),
                           (tops[row] + heights[row] * 0.05 + k * h, h * 0.9),
                           facecolors=colors, edgecolor="white", linewidth=edge)
    ax.set_yticks((tops[:-1] + tops[1:]) / 2 if shown.size else [],
                  _member_labels(members, shown) if len(shown) <= 40
                  else [str(i) for i in shown.tolist()], fontsize=8)
    ax.set_ylim(float(tops[-1]), 0.0)
    idle = M - len(shown)
    ax.set_ylabel("destination member")
    ax.set_xlabel("round" if unit == "round" else "time (s)")
    span = float(sched.makespan)
    ax.set_xlim(0, max(span, 1e-9) * 1.02)
    bound = float(sched.lower_bound)
    span_text = (f"{span:,.0f} rounds (lower bound {bound:,.1f})" if unit == "round"
                 else f"{span:.4g} s (lower bound {bound:.4g} s)")
    ax.set_title(f"{len(queued):,} queued migrations, at most "
                 f"{sched.max_parallel_migrations} in flight per member: makespan "
                 f"{span_text}" + (f"\n({idle:,} members receiving nothing are not drawn)"
                                   if idle else ""), fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=_KIND_COLORS.get(MigrationKind(k), "grey"),
                     label=MigrationKind(k).name) for k in sorted(seen_kinds)]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  frameon=False, fontsize=8, title="kind", title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"bars": len(queued), "lanes": lanes_per_member.tolist(), "rows": shown.tolist()}
