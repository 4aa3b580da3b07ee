"""hzfast: a fast, bit-exact partition-table engine for Hazelcast- and Ignite-style grids.

The public API is re-exported here; kernels live in private ``hzfast._*`` extension
modules. See the README for a tour.
"""
try:
    from hzfast import _validate  # noqa: F401  (the smallest extension: proves the build)
except ImportError as exc:  # pragma: no cover - only on a broken checkout
    raise ImportError(
        "hzfast's compiled extensions are not built or do not match this Python. "
        "From the project root run `pip install -e .` (or `python setup.py build_ext --inplace`). "
        f"Original error: {exc}"
    ) from exc

from hzfast._check import DEFAULT_PARTITION_COUNT, MAX_MEMBER_COUNT, MAX_REPLICA_COUNT
from hzfast.members import Member, Members
from hzfast.table import PartitionTable
from hzfast.hashing import *  # noqa: F401,F403
from hzfast.hashing import __all__ as _hashing_all
from hzfast.migration import *  # noqa: F401,F403
from hzfast.migration import __all__ as _migration_all
from hzfast.arrangement import *  # noqa: F401,F403
from hzfast.arrangement import __all__ as _arrangement_all
from hzfast import ignite  # noqa: F401  (hzfast.ignite.assign, ...)
from hzfast import persistence  # noqa: F401  (persisted table layouts, restart decisions)

from hzfast._version import __version__ as __version__

__all__ = [
    "DEFAULT_PARTITION_COUNT", "MAX_MEMBER_COUNT", "MAX_REPLICA_COUNT", "Member", "Members", "PartitionTable",
    "ignite", "persistence", *_hashing_all, *_migration_all, *_arrangement_all,
]
