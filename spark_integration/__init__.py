"""spark_integration: hzfast's bulk placement and what-if movement on PySpark.

Inside Spark, the exact partition and owner Hazelcast (or Ignite) computes for every key,
from the same Cython kernels as hzfast, fed whole Arrow batches:

* :func:`local_session` - a local SparkSession tuned for a small machine;
* :func:`with_placement` - add partition id, owner and backups columns;
* :func:`partition_by_owner` - one Spark partition per member, for bulk loaders;
* :func:`register_functions` - SQL ``hz_partition_id``, ``hz_owner``, ``ignite_partition``;
* :func:`estimate_movement` - rows/bytes per partition and per member a topology change moves.

Only hzfast's public API is used; pyspark is imported lazily (``import spark_integration``
works without a JVM).
"""
from spark_integration.movement import MovementEstimate, estimate_movement
from spark_integration.placement import partition_batch, partition_by_owner, with_placement
from spark_integration.session import ARROW_BATCH_ROWS, local_session
from spark_integration.sql import register_functions

__all__ = [
    "ARROW_BATCH_ROWS", "MovementEstimate", "estimate_movement", "local_session",
    "partition_batch", "partition_by_owner", "register_functions", "with_placement",
]
