"""The fuzz targets, one module per group of public entry points.

Every module defines ``test_one_input(data: bytes) -> None``; :data:`TARGETS` lists them
in the order ``python -m fuzz.run --all`` runs them.
"""
TARGETS = (
    "hashing",          # murmur3, stamp, serialize_key, partition_id(s)/hash, every form
    "ignite_hashing",   # java_hash_code, ignite.partition_id(s), Arrow from_buffers
    "ignite_affinity",  # assign, node_weight, consistent_id_hash
    "ignite_counters",  # UpdateCounter(s), batches, to_bytes/from_bytes, rebalance_plan
    "table",            # PartitionTable, Members (constructors, JSON, replace)
    "table_file",       # PartitionTable.load of fuzzed .npz bytes
    "plan",             # MigrationPlan(...) and MigrationPlan.from_json
    "planner",          # plan_migrations, apply_migrations, schedule, diff, cycles
    "plan_hostile",     # hand-built plans handed to schedule / apply_migrations
    "arrange",          # repair, arrange, arrangement_report
    "node_wire",        # hzfast.node.wire: read_frame, unpack, parse, decode_message
)
