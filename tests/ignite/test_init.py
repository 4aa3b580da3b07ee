"""hzfast.ignite (the package face): the public names of the former flat module, re-exported
from the modules that define them."""
import hzfast
from hzfast.ignite import affinity, counters, hashing, rebalance

PUBLIC = ["DEFAULT_PARTITIONS", "MAX_PARTITIONS", "REPLICATED", "java_hash_code",
          "partition_id", "partition_ids", "node_weight", "assign", "default_node_ids",
          "consistent_id_hash", "UpdateCounter", "VolatileUpdateCounter", "UpdateCounterError",
          "UpdateCounters", "PartitionState", "RebalanceKind", "NONE", "HISTORICAL", "FULL",
          "RebalancePlan", "rebalance_plan", "ExchangeResult", "exchange"]


def test_all_lists_the_public_api():
    assert hzfast.ignite.__all__ == PUBLIC
    assert "ignite" in hzfast.__all__


def test_face_reexports_the_defining_modules():
    homes = {}
    for module in (hashing, affinity, counters, rebalance):
        for name in module.__all__:
            assert name not in homes, f"{name} is defined twice"
            homes[name] = module
    assert sorted(homes) == sorted(PUBLIC)
    for name, module in homes.items():
        assert getattr(hzfast.ignite, name) is getattr(module, name), name


def test_constants():
    assert hzfast.ignite.DEFAULT_PARTITIONS == 1024
    assert hzfast.ignite.MAX_PARTITIONS == 65000
    assert hzfast.ignite.REPLICATED == 2**31 - 1


def test_kernels_live_beside_the_modules():
    from hzfast.ignite import _affinity, _counters, _hash, _rebalance
    assert _hash.__name__ == "hzfast.ignite._hash"
    assert _affinity.__name__ == "hzfast.ignite._affinity"
    assert _counters.__name__ == "hzfast.ignite._counters"
    assert _rebalance.__name__ == "hzfast.ignite._rebalance"
