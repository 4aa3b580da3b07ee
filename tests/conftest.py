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
