"""spark_integration: hzfast's bulk placement and what-if movement on PySpark.

Inside Spark (classic or Spark Connect), the exact partition and owner Hazelcast (or Ignite)
computes for every key, from the same Cython kernels as hzfast, fed whole Arrow batches:

* :func:`local_session` - a local SparkSession tuned for a small machine (``connect=True``:
  a local Spark Connect server and a Connect session);
* :func:`with_placement` - add partition id, owner and backups columns;
* :func:`partition_by_owner` - one Spark partition per member, for bulk loaders;
* :func:`register_functions` - SQL ``hz_partition_id``, ``ignite_partition``, ``hz_owner``,
  ``hz_backups``;
* :func:`estimate_movement` - rows/bytes per partition and per member a topology change moves;
* :func:`simulate` - sweeps of ``hzfast.sim.run`` seeds (and shapes) as Spark tasks, one row
  per seed (``hzfast simulate --spark`` runs on it).

Only hzfast's public API is used; nothing touches ``sparkContext`` or the JVM gateway.
"""
try:
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "spark_integration needs pyspark (>= 4.1) and pandas < 3: "
        "pip install 'hzfast[spark]' (add pyspark's 'connect' extra for Spark Connect: "
        "pip install 'pyspark[connect]')") from exc

from spark_integration.movement import MovementEstimate, estimate_movement
from spark_integration.placement import (
    partition_batch,
    partition_by_owner,
    with_placement,
)
from spark_integration.session import ARROW_BATCH_ROWS, local_session
from spark_integration.sql import USAGE, register_functions
from spark_integration.sweep import (
    SEEDS_PER_TASK,
    SHAPE_SETTINGS,
    SIMULATION_SCHEMA,
    SWEEP_CONF,
    seed_units,
    shape_settings,
    simulate,
    unit_frame,
)

__all__ = [
    "ARROW_BATCH_ROWS",
    "SEEDS_PER_TASK",
    "SHAPE_SETTINGS",
    "SIMULATION_SCHEMA",
    "SWEEP_CONF",
    "USAGE",
    "MovementEstimate",
    "estimate_movement",
    "local_session",
    "partition_batch",
    "partition_by_owner",
    "register_functions",
    "seed_units",
    "shape_settings",
    "simulate",
    "unit_frame",
    "with_placement",
]
