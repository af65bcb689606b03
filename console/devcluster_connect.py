"""A Kafka Connect distributed worker beside the local cluster, run from the same jars (kafka/lib).

The worker keeps its config, its log and its pid file under its own directory; its config, offset
and status topics live on the local cluster. `make run` adds a demo pipeline: a FileStreamSource
connector reads a file the demo traffic appends lines to into a topic, and a FileStreamSink
connector writes that topic to another file.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import requests

from console.devcluster import KAFKA_DIR, DevClusterError

DEMO_TOPIC = "demo.connect-lines"
DEMO_SOURCE = "demo-file-source"
DEMO_SINK = "demo-file-sink"
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"


@dataclass(frozen=True)
class WorkerStatus:
    pid: int | None
    running: bool
    ready: bool
    url: str


class ConnectWorker:
    def __init__(self, root: Path, bootstrap_servers: str, port: int, replication: int = 3,
                 group_id: str = "console-connect", heap: str = "256m", log_level: str = "WARN",
                 client_properties: str = "", jvm_opts: Sequence[str] = ()) -> None:
        self.root = root
        self.bootstrap_servers = bootstrap_servers
        self.port = port
        self.replication = replication
        self.group_id = group_id
        self.heap = heap
        self.log_level = log_level
        self.client_properties = client_properties  # a secure cluster's login, as Kafka's tools take it
        self.jvm_opts = list(jvm_opts)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / "connect.log"

    def properties(self) -> str:
        lines = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "config.storage.topic": f"{self.group_id}-configs",
            "offset.storage.topic": f"{self.group_id}-offsets",
            "status.storage.topic": f"{self.group_id}-status",
            "config.storage.replication.factor": str(self.replication),
            "offset.storage.replication.factor": str(self.replication),
            "status.storage.replication.factor": str(self.replication),
            # Few partitions: the local cluster runs on a small machine beside the console.
            "offset.storage.partitions": "5",
            "status.storage.partitions": "2",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
            # Plugins come from the classpath (kafka/lib): their service manifests name them, so no scan.
            "plugin.discovery": "service_load",
            # KIP-875's offsets endpoints and per-connector client overrides, as on a real deployment.
            "connector.client.config.override.policy": "All",
            # A worker that left comes back to its tasks at once (the default waits 5 minutes for it),
            # and offsets are flushed every second, so tests that stop and start a worker are quick.
            "scheduled.rebalance.max.delay.ms": "0",
            "offset.flush.interval.ms": "1000",
            "task.shutdown.graceful.timeout.ms": "2000",
            "heartbeat.interval.ms": "1000",
            "session.timeout.ms": "10000",
            "rebalance.timeout.ms": "20000",
            "config.providers": "file,env",
            "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
            "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        }
        # The worker's own connections and its connectors' clients (producer., consumer., admin.) log in alike.
        for line in self.client_properties.splitlines():
            key, _, value = line.partition("=")
            if key.strip() and value:
                for prefix in ("", "producer.", "consumer.", "admin."):
                    lines[prefix + key.strip()] = value.strip()
        return "".join(f"{k}={v}\n" for k, v in lines.items())

    # Processes --------------------------------------------------------------------------------
    def _recorded_pid(self) -> int | None:
        try:
            return int((self.root / "pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def pid(self) -> int | None:
        try:
            pid = int((self.root / "pid").read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, ValueError, IndexError):
            return None
        if MAIN_CLASS.encode() not in cmdline or str(self.root).encode() not in cmdline or state == "Z":
            return None
        return pid

    def start(self) -> int:
        if not (KAFKA_DIR / "lib").is_dir():
            raise DevClusterError("kafka/lib is missing: run 'make kafka-jars' (or 'make run') first")
        pid = self.pid()
        if pid is not None:
            return pid
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "worker.properties"
        config.write_text(self.properties())
        config.chmod(0o600)  # a secure cluster's password is in it
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        cmd = [
            "java", f"-Xmx{self.heap}", "-Xms64m", "-XX:+UseSerialGC", *self.jvm_opts, "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2.properties'}", f"-Dkafka.root.level={self.log_level}",
            "-cp", str(KAFKA_DIR / "lib" / "*"), MAIN_CLASS, str(config),
        ]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        (self.root / "pid").write_text(str(proc.pid))
        return proc.pid

    def ready(self) -> bool:
        """The REST API answers and the worker has joined its group (GET /connectors needs the herder)."""
        try:
            return requests.get(self.url + "/connectors", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        started = self._recorded_pid()
        while time.monotonic() < deadline:
            if self.ready():
                return
            # The process itself, not its command line: the Java launcher may exec itself again as it starts.
            if started is None or not _alive(started):
                raise DevClusterError(f"the Connect worker exited; see {self.log_path}")
            time.sleep(0.5)
        raise DevClusterError(f"the Connect worker did not answer at {self.url} within {timeout:.0f} s; see {self.log_path}")

    def status(self) -> WorkerStatus:
        pid = self.pid()
        return WorkerStatus(pid=pid, running=pid is not None, ready=pid is not None and self.ready(), url=self.url)

    def kill(self) -> bool:
        """SIGKILL the worker, as a crash would."""
        pid = self.pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 10)
        return True

    def stop(self, timeout: float = 20) -> None:
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        if not _wait_gone(pid, timeout):
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, 10)

    # The demo pipeline --------------------------------------------------------------------------
    def demo_source_file(self) -> Path:
        return demo_source_path(self.root)

    def demo_sink_file(self) -> Path:
        return self.root / "demo-sink.txt"

    def install_demo(self) -> None:
        """Create (or update) the demo file source and sink connectors; PUT .../config is idempotent."""
        self.demo_source_file().touch()
        strings = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                   "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
        connectors = {
            DEMO_SOURCE: {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "file": str(self.demo_source_file()), "topic": DEMO_TOPIC, "tasks.max": "1",
                # The brokers do not create topics on first use: the connector creates its own.
                "topic.creation.default.replication.factor": str(self.replication),
                "topic.creation.default.partitions": "1", **strings,
            },
            DEMO_SINK: {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                "file": str(self.demo_sink_file()), "topics": DEMO_TOPIC, "tasks.max": "1", **strings,
            },
        }
        for name, config in connectors.items():
            answer = requests.put(f"{self.url}/connectors/{name}/config", json=config, timeout=10)
            if answer.status_code >= 400:
                raise DevClusterError(f"the Connect worker refused the demo connector {name}: {answer.text}")


def demo_source_path(root: Path) -> Path:
    """The file the demo source connector reads (`manage.py demo` appends lines to it)."""
    return root / "demo-source.txt"


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False
