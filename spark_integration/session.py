"""``local_session``: the embedded default SparkSession, tuned for a small machine."""
from __future__ import annotations

import os
import sys

__all__ = ["ARROW_BATCH_ROWS", "CONNECT_CONF", "DEFAULT_CONF", "local_session"]

#: Rows per Arrow batch handed to the Python workers
#: (``spark.sql.execution.arrow.maxRecordsPerBatch``; Spark's default is 10,000). Measured as
#: CPU time of the Spark process tree, local[2] (README "Arrow batch size"): 10,000 cost 25-35%
#: more CPU than 50,000 on 2M keys (per-batch JVM<->Python round trips), 200,000 was within
#: 2-5% of 50,000 while holding 4x more rows per batch for every Arrow user of the session.
ARROW_BATCH_ROWS = 50_000

#: Configuration ``local_session`` starts from; every entry can be overridden.
DEFAULT_CONF = {
    "spark.master": "local[2]",
    "spark.app.name": "hzfast",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
}


#: Added by ``local_session(connect=True)`` unless given.
CONNECT_CONF = {
    "spark.connect.grpc.binding.address": "127.0.0.1",
}


def local_session(*, connect: bool = False, **conf):
    """Create (or get) a local SparkSession tuned for a small machine.

    With ``connect=True`` a Spark Connect server is started in this process on the same
    local master (pyspark's ``SparkSession.builder.remote("local[2]")``, needs
    ``pip install 'pyspark[connect]'``) and a Spark Connect session to it is returned:
    every function of ``spark_integration`` works on it. Note that pyspark then switches
    the whole process to Connect mode (``pyspark.sql.functions`` build Connect columns)
    until that session is stopped.

    Arrow on, UI and console progress bar off, 2 shuffle partitions, driver bound to
    127.0.0.1, Arrow batches of :data:`ARROW_BATCH_ROWS` rows, ``local[2]``. Python workers run
    the interpreter running this code: ``PYSPARK_PYTHON`` is set to ``sys.executable`` unless
    it is already set (on a cluster you set it to the packed environment's interpreter, see the
    README's "Cluster use").

    Parameters
    ----------
    connect : bool, default False
        Start a local Spark Connect server and return a Connect session.
    **conf : str, int, float or bool
        Spark configuration overriding the defaults. Keys are Spark property names, passed
        with ``**{...}`` because they contain dots
        (``local_session(**{"spark.sql.shuffle.partitions": 8})``); the shortcuts
        ``master=`` and ``app_name=`` set ``spark.master`` / ``spark.app.name``.

    Returns
    -------
    pyspark.sql.SparkSession
        Note: if a session is already active, Spark returns it and applies only the
        runtime-settable entries (``getOrCreate`` semantics).

    Raises
    ------
    TypeError
        A configuration value that is not a str, int, float or bool.
    ValueError
        A keyword that is neither a Spark property (``spark.*``, containing a dot) nor a
        shortcut.

    Examples
    --------
    >>> spark = local_session(**{"spark.driver.memory": "2g"})  # doctest: +SKIP
    """
    settings = dict(DEFAULT_CONF)
    for key, value in conf.items():
        if key == "master":
            key = "spark.master"
        elif key == "app_name":
            key = "spark.app.name"
        elif "." not in key:
            raise ValueError(f"local_session: {key!r} is not a Spark property name; pass "
                             f"properties as **{{'spark.x.y': value}} (or use master=/app_name=)")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif not isinstance(value, (str, int, float)):
            raise TypeError(f"local_session: value of {key!r} must be a str, int, float or bool, "
                            f"got {type(value).__name__}")
        settings[key] = str(value)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    if not isinstance(connect, bool):
        raise TypeError(f"local_session: connect must be a bool, got {type(connect).__name__}")
    import warnings

    from pyspark.sql import SparkSession

    if connect:
        # the in-process server listens on 127.0.0.1 only (port: Spark Connect's 15002)
        for key, value in CONNECT_CONF.items():
            if key not in conf:
                settings[key] = value
        master = settings.pop("spark.master")
        builder = SparkSession.builder.remote(master)
    else:
        builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        # a Connect session re-applies the start-up conf and warns for the static entries
        # (already given to the in-process server)
        warnings.filterwarnings("ignore", message=".*CANNOT_MODIFY_CONFIG.*")
        warnings.filterwarnings("ignore", message="Failed to set .*")
        return builder.getOrCreate()
