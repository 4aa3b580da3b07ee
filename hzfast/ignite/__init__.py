"""Apache Ignite compatibility: Java ``hashCode``, key -> partition, rendezvous affinity,
partition update counters.

Bit-exact with Ignite 2.x ``RendezvousAffinityFunction`` (no backup filters) and the JDK's
``String``/``Integer``/``Long``/``UUID.hashCode``; checked against the vectors in
``tests/data/vectors/ignite.json``. This package is the face; the work is done in:

* :mod:`hzfast.ignite.hashing` - :func:`java_hash_code`, :func:`partition_id`,
  :func:`partition_ids` (kernels in ``hzfast.ignite._hash``);
* :mod:`hzfast.ignite.affinity` - :func:`assign`, :func:`node_weight`,
  :func:`consistent_id_hash`, :func:`default_node_ids`, :data:`REPLICATED` (kernels in
  ``hzfast.ignite._affinity``);
* :mod:`hzfast.ignite.counters` - :class:`UpdateCounters` (every partition of a node, as
  arrays; kernels in ``hzfast.ignite._counters``), :class:`UpdateCounter`,
  :class:`VolatileUpdateCounter`, :class:`UpdateCounterError` (docs/design.md §9.3, §9.4);
* :mod:`hzfast.ignite.rebalance` - :func:`rebalance_plan`, :class:`RebalancePlan`,
  :class:`PartitionState`, :class:`RebalanceKind` (:data:`NONE`, :data:`HISTORICAL`,
  :data:`FULL`), :func:`exchange`, :class:`ExchangeResult` (docs/design.md §9.5, §9.6;
  kernels in ``hzfast.ignite._rebalance``).

Data flows one way: ``counters`` stands alone, ``rebalance`` uses ``counters``, ``affinity``
uses ``hashing`` (consistent ids are hashed like keys), and all validate every argument
before a kernel sees it.

Examples
--------
>>> from hzfast import ignite
>>> ignite.partition_id("key"), ignite.java_hash_code("key")
(606, 106079)
>>> ignite.assign(["node-0", "node-1", "node-2"], partitions=4, backups=1).tolist()
[[1, 0], [0, 1], [0, 1], [1, 0]]
"""
from __future__ import annotations

from hzfast.ignite.affinity import (REPLICATED, assign, consistent_id_hash, default_node_ids,
                                    node_weight)
from hzfast.ignite.counters import (UpdateCounter, UpdateCounterError, UpdateCounters,
                                    VolatileUpdateCounter)
from hzfast.ignite.rebalance import (FULL, HISTORICAL, NONE, ExchangeResult, PartitionState,
                                    RebalanceKind, RebalancePlan, exchange, rebalance_plan)
from hzfast.ignite.hashing import (DEFAULT_PARTITIONS, MAX_PARTITIONS, java_hash_code,
                                   partition_id, partition_ids)

__all__ = [
    "DEFAULT_PARTITIONS", "MAX_PARTITIONS", "REPLICATED",
    "java_hash_code", "partition_id", "partition_ids", "node_weight", "assign",
    "default_node_ids", "consistent_id_hash",
    "UpdateCounter", "VolatileUpdateCounter", "UpdateCounterError",
    "UpdateCounters", "PartitionState", "RebalanceKind", "NONE", "HISTORICAL", "FULL",
    "RebalancePlan", "rebalance_plan", "ExchangeResult", "exchange",
]
