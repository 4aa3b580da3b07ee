"""The protocol's and the simulator's modules are compiled from their ``.py`` (setup.py
``COMPILED_PY``, docs/design.md §11): the compiled build and the pure-Python source run the
same, trace line for trace line."""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import hzfast
import hzfast.protocol.node
import hzfast.sim.cluster

PKG = Path(hzfast.__file__).resolve().parent
RUNS = [dict(seed=1), dict(seed=2, design="legacy"),
        dict(seed=3, members=3, partitions=16, entries=300),
        dict(seed=4, members=5, backup_count=2, partitions=64, entries=1_000, joins=1)]

SCRIPT = """
import hashlib, json, sys
from hzfast import sim
import hzfast.protocol.node as node
out = {"node": node.__file__, "digests": []}
for kw in json.loads(sys.argv[1]):
    r = sim.run(trace=True, **kw)
    h = hashlib.sha256("\\n".join(r.trace).encode() + r.summary().encode())
    out["digests"].append(h.hexdigest())
print(json.dumps(out))
"""


def _run(pythonpath: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(RUNS)],
                          env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"},
                          cwd=pythonpath, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout)
    return out


def test_compiled_modules_run_as_their_python_source(tmp_path: Path) -> None:
    compiled = [p for p in PKG.rglob("*.so") if p.with_name(p.name.split(".")[0] + ".py").exists()]
    names = {p.name.split(".")[0] for p in compiled}
    assert {"node", "member", "master", "cluster"} <= names          # this build compiles them
    # the same tree without those modules' compiled form: Python imports their .py
    shutil.copytree(PKG, tmp_path / "hzfast", ignore=lambda d, fs: [
        f for f in fs if f.endswith((".c", ".html")) or (
            f.endswith(".so") and (Path(d) / (f.split(".")[0] + ".py")).exists())])
    pure = _run(tmp_path)
    built = _run(PKG.parent)
    assert str(pure["node"]).endswith("node.py") and str(built["node"]).endswith(".so")
    assert pure["digests"] == built["digests"]
    assert len(set(pure["digests"])) == len(RUNS)                   # (the runs differ)
