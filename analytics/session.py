"""The Spark session the analytics jobs run in; no Django.

`SPARK_MASTER` picks the cluster (`local[*]` by default, `spark://host:7077` for a standalone
cluster); `SPARK_DRIVER_MEMORY` and `SPARK_SHUFFLE_PARTITIONS` size it. The Kafka connector's jars
(`make spark-jars` puts them in analytics/lib) are added when present, so the jobs that only
transform DataFrames run without them.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

LIB = Path(__file__).resolve().parent / "lib"
DEFAULT_MASTER = "local[*]"


def connector_jars(lib: Path = LIB) -> list[str]:
    """The jars `make spark-jars` fetched (Spark's Kafka connector and what it needs), sorted."""
    return sorted(str(p) for p in lib.glob("*.jar")) if lib.is_dir() else []


def spark_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                  app_name: str = "kafka-console-analytics") -> SparkSession:
    """A small Spark session (or the running one), UTC, no web UI, with the connector jars when fetched.

    `conf` adds or overrides Spark settings. JVM and cluster settings only take effect when this
    call starts the JVM; a session already running in the process is returned with only its SQL
    settings updated (Spark allows one per process).
    """
    master = master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "1g"))
        .config("spark.sql.shuffle.partitions", _positive_int("SPARK_SHUFFLE_PARTITIONS", 4))
        .config("spark.sql.session.timeZone", "UTC")
    )
    if master.startswith("local"):
        # Everything on loopback: nothing to reach from outside, and no DNS lookup of the host name.
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    # The jobs run Python on the executors (decoding records, each topic's pass): the same
    # interpreter as the driver unless PYSPARK_PYTHON names another (one with requirements.txt's
    # numpy, pandas, pyarrow and orjson at the same path on every worker of a real cluster).
    # (pyspark reads the variable when it starts the context.)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    jars = connector_jars()
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    _ship_jobs(session)
    return session


def _ship_jobs(session: SparkSession) -> None:
    """Send the jobs' Python (analytics/records.py and analytics/jobs/, no Django) to the executors,
    which import it to run the decoding and per-topic functions: a real cluster's workers need the
    packages of requirements.txt, not this repository."""
    sc = session.sparkContext
    if getattr(sc, "_console_jobs_shipped", False):
        return
    package = Path(__file__).resolve().parent
    fd, path = tempfile.mkstemp(prefix="analytics-jobs-", suffix=".zip")
    with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w") as z:
        for source in [package / "__init__.py", package / "records.py", *sorted((package / "jobs").glob("*.py"))]:
            z.write(source, f"analytics/{source.relative_to(package)}")
    sc.addPyFile(path)
    sc._console_jobs_shipped = True  # type: ignore[attr-defined]


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value
