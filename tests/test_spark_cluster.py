"""Cluster use: executors get hzfast from a wheel inside a packed virtual environment.

What a user does on a real cluster (README "Cluster use"), end to end:
1. build the wheel (``pip wheel . --no-deps``; compiled extensions inside);
2. create a fresh venv, install the wheel and its dependencies;
3. pack it with venv-pack;
4. run Spark with ``spark.archives=env.tar.gz#environment`` and
   ``PYSPARK_PYTHON=./environment/bin/python``.
Step 4 runs in a separate driver process on ``local-cluster[1,1,1024]`` (a real standalone
worker JVM starting its own executor, which unpacks the archive in its work directory); a UDF
reports where the workers imported hzfast from, and placement is checked against hzfast.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.build, pytest.mark.spark]

ROOT = Path(__file__).resolve().parent.parent

DRIVER = textwrap.dedent(r'''
    import json, sys
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import SparkSession, functions as F, types as T
    import hzfast
    import spark_integration as si

    archive, master = sys.argv[1], sys.argv[2]
    spark = (SparkSession.builder.master(master)
             .config("spark.archives", archive + "#environment")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.executor.memory", "512m")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.log.level", "ERROR")
             .getOrCreate())

    @F.udf(T.StringType())
    def where(_):
        import hzfast, spark_integration, sys
        return json.dumps([hzfast.__file__, spark_integration.__file__, sys.executable])

    keys = [f"key-{i}" for i in range(20000)] + ["", "ünïcødé", "日本語", None]
    df = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "n int, k string")
    table = hzfast.PartitionTable.round_robin(271, 3, 2)
    placed = sorted(si.with_placement(df, "k", table).collect(), key=lambda r: r.n)
    expect = hzfast.partition_ids(pa.array(keys[:-1]), 271)
    got = np.array([r.partition_id for r in placed[:-1]])
    origins = sorted({r[0] for r in spark.range(4).select(where("id")).collect()})
    print("RESULT " + json.dumps({
        "rows": len(placed), "equal": bool(np.array_equal(got, expect)),
        "null": placed[-1].partition_id, "owner_ok": bool(np.array_equal(
            np.array([r.owner for r in placed[:-1]]), table.locate(pa.array(keys[:-1])))),
        "origins": [json.loads(o) for o in origins]}))
    spark.stop()
''')


def _run(cmd, timeout, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if proc.returncode != 0:
        raise AssertionError(f"{cmd[:4]} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-5000:]}")
    return proc


def test_wheel_in_packed_venv_on_local_cluster(tmp_path, user_env):
    import pyspark
    spark_home = Path(pyspark.__file__).parent
    work = spark_home / "work"
    work_before = set(os.listdir(work)) if work.exists() else None

    # 1. the wheel (no build isolation: the project's build requirements are installed here)
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
          "-q", "-w", str(wheels)], timeout=600)
    wheel = next(wheels.glob("hzfast-*.whl"))

    # 2. a fresh venv with only the wheel and its dependencies (pip reuses its cache)
    env = tmp_path / "env"
    base_python = getattr(sys, "_base_executable", sys.executable)
    _run([base_python, "-m", "venv", str(env)], timeout=300)
    _run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
          str(wheel)], timeout=600)

    # 3. pack it
    archive = tmp_path / "env.tar.gz"
    _run([sys.executable, "-m", "venv_pack", "-p", str(env), "-o", str(archive),
          "--compress-level", "1", "-q"], timeout=600)
    shutil.rmtree(env)                         # the workers can only use the archive now

    # 4. Spark with the archive; workers run ./environment/bin/python
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    run_env = {k: v for k, v in user_env.items() if k not in ("PYTHONPATH", "PYSPARK_DRIVER_PYTHON")}
    run_env["PYSPARK_PYTHON"] = "./environment/bin/python"
    try:
        proc = _run([sys.executable, str(script), str(archive), "local-cluster[1,1,1024]"],
                    timeout=600, cwd=tmp_path, env=run_env)
    finally:
        archive.unlink(missing_ok=True)
        if work.exists():
            for name in set(os.listdir(work)) - (work_before or set()):
                shutil.rmtree(work / name, ignore_errors=True)
            if work_before is None:
                shutil.rmtree(work, ignore_errors=True)
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["rows"] == 20004
    assert result["equal"] and result["owner_ok"]
    assert result["null"] is None
    assert result["origins"]
    for hz_file, si_file, python in result["origins"]:
        # imported from the unpacked archive, never from the source checkout
        assert "/environment/lib/" in hz_file, hz_file
        assert "/environment/lib/" in si_file, si_file
        assert not hz_file.startswith(str(ROOT) + "/hzfast"), hz_file
        assert python.endswith("environment/bin/python"), python
