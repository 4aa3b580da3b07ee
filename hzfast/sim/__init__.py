"""hzfast.sim: a deterministic, fault-injecting cluster of protocol nodes with real data.

:func:`run` simulates one seeded run and checks it: a Jepsen-style set check of every
acknowledged entry, a ghost model that tells losses the protocol must prevent from losses
caused by more crashes than ``backup_count``, protocol invariants after every event, and
Hazelcast's own correctness checks once the cluster settles. :func:`scenario_5444` replays
the data loss of Hazelcast's issue #5444. :func:`check_settings` checks :func:`run`'s
settings without running (for sweeps that run the seeds elsewhere). See docs/design.md §12.
"""
from __future__ import annotations

import inspect
from collections.abc import Iterable

from hzfast.protocol.membership import MembershipConfig
from hzfast.sim.cluster import (
    FAULT_MODES,
    ROLES,
    Action,
    CrashAt,
    FaultPlan,
    Hooks,
    Simulation,
    SimulationResult,
)
from hzfast.sim.members import nemeses

#: Where :func:`run`'s member lists come from.
MEMBERSHIP_SOURCES = ("nodes", "oracle")
#: What a member out of the cluster does with its data (:func:`run`'s ``merge_policy``).
MERGE_POLICIES = ("put_if_absent", "pass_through", "latest_update", "discard")

__all__ = [
    "FAULT_MODES",
    "ROLES",
    "Action",
    "CrashAt",
    "FaultPlan",
    "Hooks",
    "MEMBERSHIP_SOURCES",
    "MERGE_POLICIES",
    "Simulation",
    "SimulationResult",
    "check_settings",
    "run",
    "scenario_5444",
]


def _int(v: object, name: str, lo: int, hi: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi:,}, got {v}")
    return v


def _check_settings(seed: int, members: int, partitions: int, backup_count: int,
                    entries: int, faults: str, script: Iterable[CrashAt], design: str,
                    joins: int, max_parallel_migrations: int, membership: str = "nodes",
                    min_cluster_size: object = "majority", merge_policy: str = "put_if_absent",
                    nemesis: str = "pause,partition") -> tuple[CrashAt, ...]:
    """:func:`run`'s argument checks (TypeError, ValueError naming the argument); the
    script as a tuple. ``hzfast simulate --jobs`` runs them before it starts workers."""
    _int(seed, "seed", 0, 2**63 - 1)
    _int(members, "members", 1, 64)
    _int(partitions, "partitions", 1, 100_000)
    _int(backup_count, "backup_count", 0, 6)
    _int(entries, "entries", 0, 10_000_000)
    _int(joins, "joins", 0, 64)
    _int(max_parallel_migrations, "max_parallel_migrations", 1, 10_000)
    if faults not in FAULT_MODES:
        raise ValueError(f"faults must be one of {FAULT_MODES}, got {faults!r}")
    if design not in ("safe", "legacy"):
        raise ValueError(f"design must be 'safe' or 'legacy', got {design!r}")
    if membership not in MEMBERSHIP_SOURCES:
        raise ValueError(f"membership must be one of {MEMBERSHIP_SOURCES}, got {membership!r}")
    if merge_policy not in MERGE_POLICIES:
        raise ValueError(f"merge_policy must be one of {MERGE_POLICIES}, got {merge_policy!r}")
    if min_cluster_size == "drawn":
        if faults != "swarm" or membership != "nodes":
            raise ValueError("min_cluster_size 'drawn' needs faults='swarm' and "
                             "membership='nodes'")
    else:
        try:
            MembershipConfig(min_cluster_size=min_cluster_size)   # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"min_cluster_size: {exc}") from None
    if not isinstance(nemesis, str):
        raise TypeError(f"nemesis must be a str, got {type(nemesis).__name__}")
    nemeses(nemesis)
    script = tuple(script)
    for c in script:
        if not isinstance(c, CrashAt):
            raise TypeError(f"script entries must be hzfast.sim.CrashAt, got {type(c).__name__}")
    return script


def check_settings(seed: int = 0, **settings: object) -> None:
    """Raise what ``run(seed, **settings)`` would raise for its arguments, without running.

    For sweeps that run the seeds elsewhere (``hzfast simulate --jobs`` before its workers
    start, ``spark_integration.simulate`` before any Spark job): bad settings fail once, up
    front, with :func:`run`'s own message.

    Parameters
    ----------
    seed : int, default 0
    **settings
        Keywords of :func:`run` (``members``, ``partitions``, ...); the rest take
        :func:`run`'s defaults.

    Raises
    ------
    TypeError
        A keyword :func:`run` does not take, or a value of the wrong type (naming it).
    ValueError
        A value out of range or not one of the choices (naming it).

    Examples
    --------
    >>> check_settings(7, members=8, design="legacy")         # run(7, ...) would run
    >>> check_settings(members=100)
    Traceback (most recent call last):
    ValueError: members must be in 1..64, got 100
    """
    try:
        a = _RUN_SIGNATURE.bind(seed, **settings)
    except TypeError as exc:
        raise TypeError(f"check_settings() {exc}") from None
    a.apply_defaults()
    k = a.arguments
    _check_settings(k["seed"], k["members"], k["partitions"], k["backup_count"], k["entries"],
                    k["faults"], k["script"], k["design"], k["joins"],
                    k["max_parallel_migrations"], k["membership"], k["min_cluster_size"],
                    k["merge_policy"], k["nemesis"])


def run(seed: int, *, members: int = 4, partitions: int = 271, backup_count: int = 1,
        entries: int = 10_000, faults: str = "swarm", script: Iterable[CrashAt] = (),
        design: str = "safe", joins: int = 0, trace: bool = False,
        max_parallel_migrations: int = 10, strict: bool = False, membership: str = "nodes",
        min_cluster_size: int | str | None = "majority", merge_policy: str = "put_if_absent",
        nemesis: str = "pause,partition") -> SimulationResult:
    """Simulate one seeded cluster run and check it.

    Parameters
    ----------
    seed : int
        Everything random in the run derives from it; the same seed replays the run.
    members : int, default 4
        Members at start. ``faults="swarm"`` draws the count from
        ``max(2, backup_count + 1) .. members + 2``.
    partitions : int, default 271
    backup_count : int, default 1
        Synchronous backups; a write is acknowledged once the owner and this many backups
        applied it.
    entries : int, default 10,000
        Keys ``0 .. entries - 1`` (Java ints, placed by :func:`hzfast.partition_ids`),
        written by clients in batches per partition while the faults run.
    faults : {"swarm", "none"}, default "swarm"
        ``"swarm"`` draws every fault rate from the seed (message drops, duplicates,
        delays, clogged links, per-message-type filters, crashes with restarts, joins);
        ``"none"`` runs clean (only ``script`` and ``joins`` act).
    script : iterable of CrashAt
        Crash a migration's ``master``/``source``/``destination``/``owner`` when a mark is
        emitted for the nth time; applies whatever ``faults`` is.
    design : {"safe", "legacy"}, default "safe"
    joins : int, default 0
        Members that join during the run, besides the swarm's.
    trace : bool, default False
        Keep one line per event and output in ``result.trace``.
    max_parallel_migrations : int, default 10
        The master's per-member limit of migrations in flight (as destination or source
        endpoint); the run checks that every master keeps it.
    strict : bool, default False
        Check after every event that the member which handled it and each other member
        list the same replicas for every partition they hold at one version (the safe
        design's agreement). Otherwise every pair of members is checked every 100 ticks.
        Slower; for small shapes, replays and the tests.
    membership : {"nodes", "oracle"}, default "nodes"
        ``"nodes"``: each member runs its own :class:`hzfast.protocol.membership.Membership`
        and its node acts on the lists it commits (docs/design.md §12.6). ``"oracle"``: the
        run publishes the list a drawn delay after each crash or join (replays of seeds
        found before).
    min_cluster_size : int, "majority", None or "drawn", default "majority"
        With ``membership="nodes"``: split-brain protection. A member takes writes only
        while it holds its lease; with it off (``None``, Hazelcast's default) both sides
        of a split serve and the smaller cluster merges into the larger when they meet.
        ``"drawn"`` (swarm): the seed draws ``"majority"`` or ``None`` (even odds).
    merge_policy : str, default "put_if_absent" (also "pass_through", "latest_update", "discard")
        With ``membership="nodes"``: what a member out of the cluster does with its data
        before it stops and a new member starts in its place: merge it (keys written
        once: all three add the keys the cluster lacks), or drop it (``split_brain``).
    nemesis : str, default "pause,partition"
        With ``membership="nodes"`` and ``faults="swarm"``: the faults drawn besides the
        swarm's, comma-separated: ``pause`` (a member handles nothing for a while; what is
        sent to it waits and arrives in one burst, its timers late) and ``partition``
        (links cut in Jepsen's shapes for a while); ``""`` for neither.

    Returns
    -------
    SimulationResult
        ``entries_lost`` counts acknowledged entries missing at the end,
        ``entries_lost_expected`` those lost because at least ``backup_count + 1`` of the
        members holding them crashed (or, without split-brain protection, written on a
        side that was merged away and dropped its data); ``violations`` lists everything
        else that broke.
    """
    script = _check_settings(seed, members, partitions, backup_count, entries, faults,
                             script, design, joins, max_parallel_migrations, membership,
                             min_cluster_size, merge_policy, nemesis)
    return Simulation(seed, members=members, partitions=partitions, backup_count=backup_count,
                      entries=entries, faults=faults, script=script, design=design,
                      joins=joins, trace=bool(trace), strict=bool(strict),
                      max_parallel_migrations=max_parallel_migrations, membership=membership,
                      min_cluster_size=min_cluster_size, merge_policy=merge_policy,
                      nemesis=nemeses(nemesis)).run()


#: run's own signature, read once: check_settings takes its defaults from it, even while a
#: caller (a test) stands something else in for ``hzfast.sim.run``
_RUN_SIGNATURE = inspect.signature(run)


def scenario_5444(seed: int = 0, *, design: str = "safe", entries: int = 100_000,
                  trace: bool = False) -> SimulationResult:
    """Hazelcast issue #5444: 2 members, 271 partitions, 1 backup, ``entries`` entries.

    All entries are written; the second member crashes (leaves) and a new member joins;
    while the re-replication to it is under way (at its 130th committed migration, about
    half of the 271 partitions moved) the new member crashes. The safe design loses
    nothing; the legacy design loses the entries of every moved partition whose old owner
    had already dropped its copy: roughly half of them.
    """
    _int(seed, "seed", 0, 2**63 - 1)
    _int(entries, "entries", 0, 10_000_000)
    if design not in ("safe", "legacy"):
        raise ValueError(f"design must be 'safe' or 'legacy', got {design!r}")
    sim = Simulation(seed, members=2, partitions=271, backup_count=1, entries=entries,
                     faults="none", design=design, trace=trace,
                     script=(CrashAt("destination", "master_committed", 130),),
                     actions=((1000, Action("crash_nth", 1)), (1500, Action("join"))),
                     write_window=(1, 500))
    return sim.run()
