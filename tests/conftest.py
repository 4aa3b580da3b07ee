import gzip
import json
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
