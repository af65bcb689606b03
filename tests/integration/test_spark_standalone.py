"""The same analytics jobs on a real Spark standalone cluster (a master and one worker on loopback,
started from the pyspark package's own launcher) give the same tables as local[*]."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from tests.spark_conf import SMALL_SPARK_JVM
from tests.support import ROOT, free_port, wait_for
from tests.unit.test_analytics_jobs import (
    Samples,
    forecast_groups,
    hand_example,
    idle_and_orphans,
    junk,
    keyed_producers,
    stalled_consumer,
    steady_producer,
)

pytestmark = [pytest.mark.spark]

SPARK_HOME = Path(pyspark.__file__).parent


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("spark-standalone")
    port, ui, worker_ui = free_port(), free_port(), free_port()
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(work),
           "SPARK_WORKER_DIR": str(work / "worker"), "SPARK_NO_DAEMONIZE": "1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_DAEMON_JAVA_OPTS": SMALL_SPARK_JVM}
    launcher = str(SPARK_HOME / "bin" / "spark-class")
    url = f"spark://127.0.0.1:{port}"
    with open(work / "master.log", "wb") as mlog, open(work / "worker.log", "wb") as wlog:
        master = subprocess.Popen([launcher, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                                   "--webui-port", str(ui)], env=env, stdout=mlog, stderr=subprocess.STDOUT)
        worker = None
        try:
            wait_for(lambda: b"I have been elected leader" in (work / "master.log").read_bytes(), 60, what="the Spark master")
            worker = subprocess.Popen([launcher, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                                       "--memory", "1g", "--webui-port", str(worker_ui)], env=env, stdout=wlog, stderr=subprocess.STDOUT)
            wait_for(lambda: b"Successfully registered with master" in (work / "worker.log").read_bytes(), 60, what="the Spark worker")
            yield url
        finally:
            for proc in (worker, master):
                if proc is not None:
                    proc.terminate()
                    try:
                        proc.wait(20)
                    except subprocess.TimeoutExpired:
                        proc.kill()


def tables(master: str, samples: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.integration.spark_tables", master, str(samples)], cwd=ROOT,
                         env={**os.environ, "PYSPARK_PYTHON": sys.executable}, capture_output=True, timeout=600)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def test_a_standalone_cluster_computes_the_same_tables_as_local(standalone: str, tmp_path: Path) -> None:
    s = Samples()
    for build in (steady_producer, keyed_producers, stalled_consumer, idle_and_orphans, forecast_groups, hand_example):
        build(s)
    path = tmp_path / "samples.jsonl"
    path.write_bytes(b"\n".join([value for _key, value in s.records] + junk()) + b"\n")
    on_cluster = tables(standalone, path)
    local = tables("local[2]", path)
    assert on_cluster.pop("_master") == standalone and local.pop("_master") == "local[2]"
    assert set(on_cluster) == set(local)
    for name in local:
        assert on_cluster[name] == local[name], name
    assert local["topic_throughput"], "the comparison compared something"
