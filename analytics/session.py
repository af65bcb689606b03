"""The Spark session the analytics jobs run in; no Django.

The caller names the master (`local[*]` by default, `spark://host:7077` for a standalone cluster),
the session's sizes and the directory of the jobs' archive: the analytics worker passes the
settings SPARK_MASTER, SPARK_DRIVER_MEMORY, SPARK_SHUFFLE_PARTITIONS and var/spark-jobs. The Kafka
connector's jars (`make spark-jars` puts them in analytics/lib) are added when present, so the jobs
that only transform DataFrames run without them.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

LIB = Path(__file__).resolve().parent / "lib"
DEFAULT_MASTER = "local[*]"
DEFAULT_JOBS_DIR = Path(__file__).resolve().parent.parent / "var" / "spark-jobs"


def connector_jars(lib: Path = LIB) -> list[str]:
    """The jars `make spark-jars` fetched (Spark's Kafka connector and what it needs), sorted."""
    return sorted(str(p) for p in lib.glob("*.jar")) if lib.is_dir() else []


def spark_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                  app_name: str = "kafka-console-analytics", *, driver_memory: str = "1g", shuffle_partitions: int = 4,
                  jobs_dir: Path | None = None) -> SparkSession:
    """A small Spark session (or the running one), UTC, no web UI, with the connector jars when fetched.

    `conf` adds or overrides Spark settings. JVM and cluster settings only take effect when this
    call starts the JVM; a session already running in the process is returned with only its SQL
    settings updated (Spark allows one per process).
    """
    master = master or DEFAULT_MASTER
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", shuffle_partitions)
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
    _ship_jobs(session, jobs_dir)
    return session


def _ship_jobs(session: SparkSession, directory: Path | None) -> None:
    """Send the jobs' Python (analytics/records.py and analytics/jobs/, no Django) to the executors,
    which import it to run the decoding and per-topic functions: a real cluster's workers need the
    packages of requirements.txt, not this repository."""
    sc = session.sparkContext
    if getattr(sc, "_console_jobs_shipped", False):
        return
    sc.addPyFile(str(jobs_zip(directory)))
    sc._console_jobs_shipped = True  # type: ignore[attr-defined]


def private_folder(folder: Path) -> Path:
    """`folder`, made 0700 if missing, checked to be a real directory of this user's that no one else
    may write to or read: the executors import the zip found there, so a file planted by another user
    would be code run by the console."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise PermissionError(f"{folder} is not a directory of this user's (uid {os.getuid()}): the Spark jobs' "
                              "archive is kept only in a private directory of the console's.")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


def jobs_zip(directory: Path | None = None) -> Path:
    """The jobs' Python as a zip, named by a digest of its bytes, in a private directory (by default
    var/spark-jobs of this checkout; the analytics worker names the console's VAR_DIR's).

    Spark serves an added file from its path for as long as the session runs, so the file must
    outlive the call; one per content means every session of the same code reuses one file. (Each
    session made a new temporary zip, never removed: one per analytics worker start, 181 of them in
    /tmp after two days of test runs.) Written under a temporary name and moved into place, so a
    session serving the file never reads a half-written one. A file of that name is reused only when
    this user owns it and its bytes are the ones expected."""
    package = Path(__file__).resolve().parent
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for source in [package / "__init__.py", package / "records.py", *sorted((package / "jobs").glob("*.py"))]:
            # (a fixed time in each entry: the same sources make the same bytes, whatever their mtimes)
            entry = zipfile.ZipInfo(f"analytics/{source.relative_to(package)}", date_time=(2020, 1, 1, 0, 0, 0))
            z.writestr(entry, source.read_bytes())
    data = buffer.getvalue()
    folder = private_folder(directory or DEFAULT_JOBS_DIR)
    path = folder / f"kafka-console-analytics-jobs-{os.getuid()}-{hashlib.sha256(data).hexdigest()[:16]}.zip"
    if _own_file(path) and path.read_bytes() == data:
        return path
    fd, partial = tempfile.mkstemp(prefix=".kafka-console-analytics-jobs-", suffix=".zip", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return path


def _own_file(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()

