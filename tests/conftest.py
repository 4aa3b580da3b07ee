import gzip
import json
import re
from pathlib import Path

import pytest

VECTORS = Path(__file__).parent / "data" / "vectors"


def load_vectors(name: str):
    """Load a vector file (verbatim copies of ../shared/vectors)."""
    path = VECTORS / name
    if name.endswith(".gz"):
        with gzip.open(path, "rt") as f:
            return json.load(f)
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def hz_vectors():
    return load_vectors("hazelcast.json")


@pytest.fixture(scope="session")
def ignite_vectors():
    return load_vectors("ignite.json")


@pytest.fixture(scope="session")
def planner_random_vectors():
    return load_vectors("planner_random.json.gz")


@pytest.fixture
def user_env():
    """os.environ as a user's shell has it, for a subprocess that starts its own Spark:
    without the variables a Spark Connect session of another test in this worker sets
    while it lives (pyspark would then expect a Connect server in the child)."""
    import os

    spark_connect = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE",
                     "SPARK_TESTING")
    return {k: v for k, v in os.environ.items() if k not in spark_connect}


# --------------------------------------------------------------------------- scheduling
# How `-n auto --dist loadfile` hands out the files (pytest-xdist on the controller). Two
# changes to xdist's loadfile, neither to what runs:
# - the longest work goes first (xdist would start with the files holding the most tests,
#   and the Spark files, few tests of many seconds each, came last and ran alone at the
#   end); the seconds below are rough (one run on this 2-core machine, scaled to an idle
#   one), only their order matters; a file not listed counts 0.2 s a test;
# - the Spark tests of one session mode (classic, connect: tests/spark/conftest.py) are one
#   unit, so a worker starts each session once, not once per file (every Spark file used
#   to start both);
# - each curated protocol mutant (tests/mutants: a pure-Python copy and its layers, up to
#   15 s of CPU each) is a unit of its own, so both workers take them.
LONG_SECONDS = {
    "tests/spark[classic]": 160, "tests/spark[connect]": 110,
    "tests/spark/test_simulate.py": 75,            # the command line, killed and resumed
    "tests/cli/test_first_hour.py": 70, "tests/cli/test_node_cli.py": 70,
    "tests/cli/test_demo.py": 60, "tests/node/test_chaos.py": 55,
    "tests/protocol/test_fast_paths.py": 50, "tests/protocol/test_swarm_shapes.py": 45,
    "tests/cli/test_cli_doc.py": 30, "tests/migration/test_planner.py": 30,
    "tests/cli/test_errors.py": 25, "tests/protocol/test_simulator.py": 25,
    "tests/node/test_runtime.py": 25, "tests/cli/test_plan.py": 22, "tests/test_typing.py": 22,
    "tests/cli/test_ignite.py": 20, "tests/cli/test_table.py": 20, "tests/sim/test_small_scope.py": 18,
}
MUTANT_SECONDS = 8                                 # a curated mutant, on average
_SPARK_MODE = re.compile(r"\[(?:[^\]]*-)?(classic|connect)[-\]]")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            if path.startswith("tests/mutants/") and "[" in nodeid:
                return nodeid
            mode = _SPARK_MODE.search(nodeid) if path.startswith("tests/spark/") else None
            return f"tests/spark[{mode.group(1)}]" if mode else path

        def _assign_work_unit(self, node):
            longest = max(self.workqueue, key=lambda scope: LONG_SECONDS.get(
                scope, MUTANT_SECONDS if scope.startswith("tests/mutants/")
                else 0.2 * len(self.workqueue[scope])))
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)
