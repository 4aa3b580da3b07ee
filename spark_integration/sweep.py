"""``simulate``: sweeps of :func:`hzfast.sim.run` seeds on Spark, one row per seed.

How it runs
-----------
The seeds are cut into *units*: ranges of ``seeds_per_task`` consecutive seeds of one shape.
``spark.range(units, numPartitions=units)`` makes one task per unit (no shuffle, so adaptive
execution cannot merge them); a ``mapInArrow`` function, shipped with the seed range, the
shapes and the unit size (not a list of units), runs ``hzfast.sim.run(seed, **shape)`` for
each seed of its unit in the executor's Python worker and returns one Arrow batch of rows
per unit. It is the same call with the same
arguments as ``hzfast simulate`` makes, and a run is deterministic in its seed, so every row
is what the local runner computes for that seed (tested: totals equal to ``--jobs`` to the
entry and the event).

The DataFrame is lazy: every action runs the simulations again. Write it (``.write.parquet``)
or ``cache()`` it before asking it several questions.
"""
from __future__ import annotations

import inspect
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

__all__ = ["SEEDS_PER_TASK", "SHAPE_SETTINGS", "SIMULATION_SCHEMA", "SWEEP_CONF", "seed_units",
           "shape_settings", "simulate", "unit_frame"]

#: The settings of a shape: :func:`hzfast.sim.run`'s keywords a sweep may set (``script``
#: and ``trace`` are not: a row's replay line could not express them).
SHAPE_SETTINGS = ("members", "partitions", "backup_count", "entries", "faults", "design",
                  "joins", "max_parallel_migrations", "strict", "membership",
                  "min_cluster_size", "merge_policy", "nemesis")

#: Seeds per task (per unit) unless told: a default-shape seed takes 25-100 ms of CPU on a
#: 2-core machine (by the day and the load), so a unit is 1-3 s: enough to amortise a
#: task's scheduling (milliseconds), short enough that the last tasks of a job leave the
#: cores idle for little.
SEEDS_PER_TASK = 25

#: Spark configuration for a *local* session that runs sweeps (``hzfast simulate --spark``
#: starts its local sessions with it): in a sweep the JVM only schedules tasks and moves
#: small Arrow batches while the Python workers simulate, so its JIT's optimising tier (C2)
#: and G1's concurrent threads cost more CPU than they save - CPU taken from the workers on
#: a machine whose cores they fill. C1 only and the serial collector cut the JVM's CPU per
#: 200 seeds from about 5 s to 1 s (measured, local[2]). On a cluster the same options can
#: be given to the executors (``spark.executor.extraJavaOptions``).
SWEEP_CONF = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}

_LONG, _INT, _STR, _BOOL, _F64 = pa.int64(), pa.int32(), pa.string(), pa.bool_(), pa.float64()
_COUNTS = pa.map_(pa.string(), pa.int64())

#: The rows' columns (Arrow types; the Spark schema is derived from them).
SIMULATION_SCHEMA = pa.schema([
    ("seed", _LONG), ("shape", _INT),
    # the shape's settings (as given to hzfast.sim.run)
    ("members", _INT), ("partitions", _INT), ("backup_count", _INT), ("entries", _INT),
    ("faults", _STR), ("design", _STR), ("joins", _INT), ("max_parallel_migrations", _INT),
    ("strict", _BOOL), ("membership", _STR),
    ("min_cluster_size", _STR),              # ("majority", a count, or null: protection off)
    ("merge_policy", _STR), ("nemesis", _STR),
    # what the run did and found
    ("members_at_start", _INT), ("entries_attempted", _LONG), ("entries_acknowledged", _LONG),
    ("entries_lost", _LONG), ("entries_lost_expected", _LONG), ("entries_unexpected", _LONG),
    ("converged", _BOOL), ("quorum_lost", _BOOL), ("violations", pa.list_(_STR)),
    ("ok", _BOOL), ("lost_by", _COUNTS),
    ("events", _LONG), ("ticks", _LONG),
    ("migrations_committed", _LONG), ("migrations_failed", _LONG),
    ("faults_injected", _COUNTS), ("marks", _COUNTS),
    ("wall_seconds", _F64), ("cpu_seconds", _F64),
    ("replay", _STR), ("summary", _STR), ("last_events", pa.list_(_STR)),
])

_SPARK_DDL = {"int64": "bigint", "int32": "int", "string": "string", "bool": "boolean",
              "double": "double"}


def _spark_schema() -> str:
    """``SIMULATION_SCHEMA`` as a Spark DDL string."""
    cols = []
    for f in SIMULATION_SCHEMA:
        t = f.type
        if pa.types.is_map(t):
            ddl = "map<string,bigint>"
        elif pa.types.is_list(t):
            ddl = "array<string>"
        else:
            ddl = _SPARK_DDL[str(t)]
        cols.append(f"{f.name} {ddl}")
    return ", ".join(cols)


def _run_defaults() -> dict[str, Any]:
    from hzfast import sim
    params = inspect.signature(sim.run).parameters
    return {k: params[k].default for k in SHAPE_SETTINGS}


def shape_settings(shape: Mapping[str, Any], *, where: str = "simulate") -> dict[str, Any]:
    """A shape's full settings: ``shape`` over :func:`hzfast.sim.run`'s defaults, checked.

    Parameters
    ----------
    shape : mapping
        Some of :data:`SHAPE_SETTINGS` and their values.
    where : str
        Named at the start of an error message.

    Returns
    -------
    dict
        Every one of :data:`SHAPE_SETTINGS`, in that order.

    Raises
    ------
    TypeError
        A key that is not a shape setting, or a value of the wrong type.
    ValueError
        A value :func:`hzfast.sim.run` refuses (its own message, naming the setting).
    """
    from hzfast import sim
    if not isinstance(shape, Mapping):
        raise TypeError(f"{where}: a shape must be a mapping of settings, "
                        f"got {type(shape).__name__}")
    unknown = [k for k in shape if k not in SHAPE_SETTINGS]
    if unknown:
        raise TypeError(f"{where}: {unknown[0]!r} is not a shape setting "
                        f"(one of {', '.join(SHAPE_SETTINGS)})")
    settings = _run_defaults()
    settings.update(shape)
    if not isinstance(settings["strict"], bool):
        raise TypeError(f"{where}: strict must be a bool, got {type(settings['strict']).__name__}")
    try:
        # the library's own checks (hzfast simulate --jobs runs them before its workers start)
        sim.check_settings(0, **settings)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{where}: {exc}") from None
    return settings


def _seed_range(seeds: Any) -> range:
    if isinstance(seeds, bool) or not isinstance(seeds, (int, range)):
        raise TypeError(f"simulate: seeds must be an int (a count, from seed 0) or a range, "
                        f"got {type(seeds).__name__}")
    if isinstance(seeds, int):
        if seeds < 0:
            raise ValueError(f"simulate: seeds must be >= 0, got {seeds}")
        return range(seeds)
    if seeds.step != 1:
        raise ValueError(f"simulate: seeds must be a range of step 1, got {seeds!r}")
    if len(seeds) and (seeds.start < 0 or seeds.stop - 1 > 2**63 - 1):
        raise ValueError(f"simulate: seeds must lie in 0..2**63-1, got {seeds!r}")
    return seeds


def seed_units(seeds: range, shapes: int, seeds_per_task: int) -> list[tuple[int, int, int]]:
    """The units of a sweep, in order: ``(shape, lo, hi)``, every shape over ``seeds``.

    Examples
    --------
    >>> seed_units(range(10, 15), 2, 2)
    [(0, 10, 12), (0, 12, 14), (0, 14, 15), (1, 10, 12), (1, 12, 14), (1, 14, 15)]
    """
    return [(s, lo, min(lo + seeds_per_task, seeds.stop))
            for s in range(shapes) for lo in range(seeds.start, seeds.stop, seeds_per_task)]


def _replays(shapes: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per shape, the replay command with ``{seed}`` to fill in."""
    from hzfast.cli.simulate import replay_command
    return [replay_command(-1, s).replace("--seed-start -1 ", "--seed-start {seed} ")
            for s in shapes]


def _rows(shape_index: int, settings: dict[str, Any], replay: str, lo: int,
          hi: int) -> pa.RecordBatch:
    """Run seeds ``lo..hi-1`` of one shape; their rows as one Arrow batch."""
    from hzfast import sim
    cols: dict[str, list[Any]] = {f.name: [] for f in SIMULATION_SCHEMA}
    for seed in range(lo, hi):
        w0, c0 = time.perf_counter(), time.process_time()
        r = sim.run(seed, **settings)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        ok = bool(r.ok and r.entries_lost == r.entries_lost_expected)
        values = dict(settings)
        mcs = r.min_cluster_size            # (what the seed drew, under "drawn")
        values["min_cluster_size"] = None if mcs is None else str(mcs)
        values.update(
            seed=seed, shape=shape_index, members_at_start=r.members,
            entries_attempted=r.entries_attempted, entries_acknowledged=r.entries_acknowledged,
            entries_lost=r.entries_lost, entries_lost_expected=r.entries_lost_expected,
            entries_unexpected=r.entries_unexpected, converged=bool(r.converged),
            quorum_lost=bool(r.quorum_lost), lost_by=sorted(r.lost_by.items()),
            violations=list(r.violations), ok=ok, events=r.events, ticks=r.time,
            migrations_committed=r.migrations_committed,
            migrations_failed=r.migrations_failed,
            faults_injected=sorted(r.faults_injected.items()),
            marks=sorted(r.marks.items()), wall_seconds=wall, cpu_seconds=cpu,
            replay=replay.format(seed=seed),
            summary=None if ok else r.summary(),
            last_events=None if ok else list(r.last_events[-20:]))
        for k, col in cols.items():
            col.append(values[k])
    return pa.RecordBatch.from_pydict(cols, schema=SIMULATION_SCHEMA)


def _unit(seeds: range, seeds_per_task: int, index: int) -> tuple[int, int, int]:
    """Unit ``index`` of :func:`seed_units`'s list, computed (a task is shipped the sweep's
    few numbers, never the list: a million seeds are 40,000 units)."""
    per_shape = -(-len(seeds) // seeds_per_task)
    s, k = divmod(index, per_shape)
    lo = seeds.start + k * seeds_per_task
    return s, lo, min(lo + seeds_per_task, seeds.stop)


def _unit_runner(seeds: range, seeds_per_task: int, first: int,
                 shapes: list[dict[str, Any]], replays: list[str]):
    """The ``mapInArrow`` function: ids in (unit ``first + id``), the units' rows out."""
    def run_units(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                s, lo, hi = _unit(seeds, seeds_per_task, first + i)
                yield _rows(s, shapes[s], replays[s], lo, hi)
    return run_units


def unit_frame(spark, seeds: range, shapes: Sequence[Mapping[str, Any]],
               seeds_per_task: int, units: range | None = None):
    """The DataFrame of some units of a sweep (one task each), in order.

    The building block of :func:`simulate` and of ``hzfast simulate --spark``, which runs a
    long sweep as several such frames (batches), so that it can resume.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    seeds : range
        The sweep's seeds (step 1).
    shapes : sequence of dict
        The sweep's shapes, each complete and checked (:func:`shape_settings`).
    seeds_per_task : int
    units : range, optional
        Which of the sweep's units (indices into :func:`seed_units`'s list); default all.

    Returns
    -------
    pyspark.sql.DataFrame
        As :func:`simulate`'s.
    """
    shapes = [dict(s) for s in shapes]
    total = len(shapes) * -(-len(seeds) // seeds_per_task)
    units = range(total) if units is None else units
    if units.step != 1 or units.start < 0 or units.stop > total:
        raise ValueError(f"unit_frame: units must be a range of step 1 within 0..{total}, "
                         f"got {units!r}")
    schema = _spark_schema()
    if not units:
        return spark.createDataFrame([], schema)
    ids = spark.range(0, len(units), 1, numPartitions=len(units))
    return ids.mapInArrow(
        _unit_runner(seeds, seeds_per_task, units.start, shapes, _replays(shapes)), schema)


def simulate(spark, seeds, *, shapes: Sequence[Mapping[str, Any]] | None = None,
             seeds_per_task: int = SEEDS_PER_TASK, **shape: Any):
    """Run :func:`hzfast.sim.run` for every seed (of every shape) on Spark: one row per run.

    Seeds are spread over tasks as ranges of ``seeds_per_task`` consecutive seeds; each
    task runs its seeds in an executor's Python worker with ``hzfast.sim.run(seed,
    **shape)`` - the same call ``hzfast simulate`` makes, so the same results.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        Classic or Spark Connect. Its executors need hzfast (see the README's "Cluster use").
    seeds : int or range
        ``n`` for seeds ``0 .. n-1``, or a ``range`` of step 1 (``range(1000, 2000)``).
    shapes : sequence of mappings, optional
        A grid: every seed runs with each shape (its settings over ``**shape``); the
        ``shape`` column holds the shape's index in this sequence. Default: one shape.
    seeds_per_task : int, default :data:`SEEDS_PER_TASK`
        Consecutive seeds one task runs.
    **shape
        Settings of :func:`hzfast.sim.run` (:data:`SHAPE_SETTINGS`: ``members``,
        ``partitions``, ``backup_count``, ``entries``, ``faults``, ``design``, ``joins``,
        ``max_parallel_migrations``, ``strict``); the rest keep ``sim.run``'s defaults.

    Returns
    -------
    pyspark.sql.DataFrame
        Lazy (every action runs the simulations again: write or cache it), ordered by shape
        then seed, with the columns of :data:`SIMULATION_SCHEMA`:

        * ``seed``, ``shape``, and the shape's settings (``members`` ... ``strict``);
        * ``members_at_start`` (the swarm draws it from the seed),
          ``entries_attempted``, ``entries_acknowledged``, ``entries_lost``,
          ``entries_lost_expected`` (more holders crashed than backups),
          ``entries_unexpected``;
        * ``converged``, ``quorum_lost`` (stuck by design: the newest list's quorum
          crashed), ``violations`` (array of text), ``ok`` (converged or stuck by design,
          no violation, no loss beyond the expected), ``lost_by`` (map: cause -> lost
          entries), ``events`` (node events), ``ticks``,
          ``migrations_committed``, ``migrations_failed``;
        * ``faults_injected`` and ``marks`` (maps: kind -> count);
        * ``wall_seconds`` and ``cpu_seconds`` of the run in its worker;
        * ``replay``: the ``hzfast simulate`` command that replays the seed locally,
          with ``--trace``;
        * ``summary`` and ``last_events`` (its last 20): only where ``ok`` is false.

    Raises
    ------
    TypeError
        ``seeds`` neither an int nor a range, a setting that is not a shape setting, a
        value of the wrong type.
    ValueError
        A negative count, a range of another step, a setting ``sim.run`` refuses
        (checked before any job runs), ``seeds_per_task`` < 1.

    Examples
    --------
    >>> df = simulate(spark, range(0, 10_000), partitions=271)        # doctest: +SKIP
    >>> df.write.parquet("sweep")                                     # doctest: +SKIP
    >>> df = spark.read.parquet("sweep")                              # doctest: +SKIP
    >>> df.groupBy("members_at_start").sum("entries_lost").show()     # doctest: +SKIP
    >>> df.orderBy(df.cpu_seconds.desc()).select("seed", "replay").show(5)  # doctest: +SKIP
    """
    seeds = _seed_range(seeds)
    if isinstance(seeds_per_task, bool) or not isinstance(seeds_per_task, int):
        raise TypeError(f"simulate: seeds_per_task must be an int, "
                        f"got {type(seeds_per_task).__name__}")
    if seeds_per_task < 1:
        raise ValueError(f"simulate: seeds_per_task must be >= 1, got {seeds_per_task}")
    if shapes is None:
        grid = [shape_settings(shape)]
    else:
        if isinstance(shapes, (str, bytes, Mapping)) or not isinstance(shapes, Sequence):
            raise TypeError(f"simulate: shapes must be a sequence of mappings, "
                            f"got {type(shapes).__name__}")
        if not shapes:
            raise ValueError("simulate: shapes is empty")
        shape_settings(shape)            # the common settings alone are checked too
        grid = [shape_settings({**shape, **dict(s)} if isinstance(s, Mapping) else s,
                               where=f"simulate: shapes[{i}]")
                for i, s in enumerate(shapes)]
    return unit_frame(spark, seeds, grid, seeds_per_task)
