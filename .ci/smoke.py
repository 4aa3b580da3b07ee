"""Smoke test of an installed hzfast (run from outside the source tree): hashing, a stamp,
planning, scheduling, arrangement, Ignite, the console script; only core dependencies.

It also prints the digest of two simulated runs' traces (seed 7, safe and legacy). Given
``HZFAST_REPLAY_DIGEST`` (``.ci/wheels`` passes the first Python's), it requires the same:
a seed replays the same run on every supported Python."""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import hzfast

here = Path(hzfast.__file__).resolve()
assert "site-packages" in here.parts, f"hzfast imported from the source tree: {here}"
for optional in ("pyspark", "pandas", "matplotlib"):
    assert optional not in sys.modules, f"import hzfast imported {optional}"
# values from the vectors produced by Hazelcast's own classes
assert hzfast.partition_id("hello") == 270
assert hzfast.partition_ids(np.array([0, 1, 2], dtype=np.int64)).dtype == np.int32
assert hzfast.stamp(np.zeros(271, np.int32)) == hzfast.PartitionTable.empty(271, 1).stamp
table = hzfast.arrange(hzfast.PartitionTable.empty(2_000, 3), 5)
current, _ = hzfast.repair(table, np.arange(5) < 4)
target = hzfast.arrange(current, hzfast.Members.from_count(5).with_lite([False] * 4 + [True]))
plan = hzfast.plan_migrations(current, target)
replicas, _ = hzfast.apply_migrations(current, None, plan)
assert (replicas == plan.target).all() and hzfast.schedule(plan).rounds > 0
assert hzfast.ignite.assign(["a", "b", "c"], partitions=8, backups=1).shape == (8, 2)
script = Path(sys.executable).with_name("hzfast")
out = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True,
                     timeout=60, env={**os.environ, "CC": "false"})
assert "usage: hzfast" in out.stdout
from hzfast import sim  # noqa: E402 (after the optional-import check above)

digest = hashlib.sha256()
for design in ("safe", "legacy"):
    run = sim.run(7, design=design, joins=1, trace=True)
    assert run.converged and len(run.trace) > 1_000
    digest.update("\n".join(run.trace).encode() + b"\0")
want = os.environ.get("HZFAST_REPLAY_DIGEST")
assert want is None or digest.hexdigest() == want, \
    f"seed 7 ran differently on Python {sys.version.split()[0]}: {digest.hexdigest()} != {want}"
print(f"replay digest {digest.hexdigest()}")
print(f"smoke ok: hzfast {hzfast.__version__} on Python {sys.version.split()[0]}")
