"""The tests' Kafka Streams application: Apache Kafka's WordCountDemo (kafka-streams-examples, in
kafka/lib) run with the streams rebalance protocol (KIP-1071, `group.protocol=streams`), so that its
application id is a streams group on the test cluster. It reads `INPUT`, counts words in a store
(its changelog and a repartition topic are created by the broker) and writes `OUTPUT`."""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support import ROOT, TEST_VAR, Cluster

INPUT, OUTPUT = "streams-plaintext-input", "streams-wordcount-output"  # WordCountDemo's own topic names
MAIN = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"


class StreamsApp:
    """One WordCountDemo instance; `stop` ends it as an operator would (SIGTERM: it leaves the group)."""

    def __init__(self, cluster: Cluster, app_id: str) -> None:
        self.app_id = app_id
        self.dir = TEST_VAR / "streams-app" / app_id
        self.proc: subprocess.Popen[bytes] | None = None
        settings = {
            "application.id": app_id,
            "bootstrap.servers": cluster.bootstrap,
            "group.protocol": "streams",
            "state.dir": str(self.dir / "state"),
            "commit.interval.ms": "200",
            "num.stream.threads": "1",
            # In-memory stores: no RocksDB native library to load for a test's few words.
            "dsl.store.suppliers.class": "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers",
        }
        self.dir.mkdir(parents=True, exist_ok=True)
        self.properties = self.dir / "streams.properties"
        self.properties.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

    def start(self) -> None:
        log = open(self.dir / "app.log", "ab")  # noqa: SIM115 - the process keeps it
        self.proc = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             f"-Dlog4j2.configurationFile={ROOT / 'kafka' / 'log4j2.properties'}",
             "-cp", str(ROOT / "kafka" / "lib" / "*"), MAIN, str(self.properties)],
            cwd=self.dir, stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@contextmanager
def running_wordcount(cluster: Cluster, app_id: str) -> Iterator[StreamsApp]:
    """WordCountDemo under `app_id`, its topics made first; stopped and its state removed at the end."""
    for topic in (INPUT, OUTPUT):
        out = cluster.tool("kafka-topics", "--create", "--if-not-exists", "--topic", topic, "--partitions", "2",
                           "--replication-factor", "2")
        assert "Error" not in out, out
    app = StreamsApp(cluster, app_id)
    app.start()
    try:
        yield app
    finally:
        app.stop()
        shutil.rmtree(app.dir, ignore_errors=True)
