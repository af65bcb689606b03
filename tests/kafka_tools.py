"""Apache Kafka's own command-line tools (the tests' oracle), run from the jars kafka/pom.xml pins.

The admin tools can run in one long-lived JVM per test process (tests/KafkaToolServer.java): a JVM
started per call costs about a CPU-second, and the suite makes hundreds of calls. They are the same
classes given the same arguments, and their exit status, output and error output come back as a
process's would. Tools that read standard input or start servers run as processes of their own, and
so does any call when that JVM cannot be reached.
"""

from __future__ import annotations

import io
import os
import socket
import struct
import subprocess
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "kafka" / "bin"
# Tools that read no standard input and return when done.
SERVED = frozenset({
    "kafka-acls", "kafka-broker-api-versions", "kafka-cluster", "kafka-configs", "kafka-consumer-groups",
    "kafka-delete-records", "kafka-features", "kafka-get-offsets", "kafka-groups", "kafka-leader-election",
    "kafka-log-dirs", "kafka-metadata-quorum", "kafka-reassign-partitions", "kafka-share-groups",
    "kafka-streams-groups", "kafka-topics", "kafka-transactions",
})
JVM_OPTS = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

_lock = threading.Lock()
_server: subprocess.Popen[str] | None = None
_port = 0
_mains: dict[str, str] = {}


def run(name: str, *args: str, timeout: float = 90, served: bool | None = None) -> subprocess.CompletedProcess[str]:
    """Run Kafka's tool `name` (kafka-topics, ...) with `args`, as `kafka/bin/NAME ARGS` would; in the
    long-lived JVM when `served`, by default when TEST_KAFKA_TOOLS_SERVED=1 (not yet the suite's
    default: in a whole `make test` two tests of the main integration chain, the LSO and the preferred
    election, failed waiting for the watcher with served tools and passed alone)."""
    if served is None:
        served = os.environ.get("TEST_KAFKA_TOOLS_SERVED") == "1"
    if served and name in SERVED:
        try:
            return _call(name, args, timeout)
        except TimeoutError:
            raise subprocess.TimeoutExpired([name, *args], timeout) from None
        except (OSError, struct.error):
            _stop()  # gone or broken: this call runs as a process, the next starts a new JVM
    return subprocess.run([str(BIN / name), *args], capture_output=True, text=True, timeout=timeout)


def _call(name: str, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess[str]:
    request = [_main(name), *args]
    frame = struct.pack(">i", len(request)) + b"".join(struct.pack(">i", len(b)) + b for b in (a.encode() for a in request))
    with socket.create_connection(("127.0.0.1", _started()), timeout=timeout) as conn:
        conn.sendall(frame)
        reader = conn.makefile("rb")
        status = _int(reader)
        out = _bytes(reader).decode(errors="replace")
        err = _bytes(reader).decode(errors="replace")
    return subprocess.CompletedProcess([str(BIN / name), *args], status, out, err)


def _main(name: str) -> str:
    if name not in _mains:
        done = subprocess.run([str(BIN / "kafka-tool"), name], capture_output=True, text=True, check=True,
                              env={**os.environ, "KAFKA_TOOL_PRINT_MAIN": "1"})
        _mains[name] = done.stdout.strip()
    return _mains[name]


def _started() -> int:
    global _server, _port
    with _lock:
        if _server is None or _server.poll() is not None:
            # Its stdin stays open while this process lives: the JVM ends when this process does.
            _server = subprocess.Popen(
                ["java", *JVM_OPTS, f"-Dlog4j2.configurationFile={ROOT / 'kafka' / 'log4j2.properties'}",
                 "-cp", str(ROOT / "kafka" / "lib" / "*"), str(ROOT / "tests" / "KafkaToolServer.java")],
                stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True, start_new_session=True,
            )
            assert _server.stdout is not None
            line = _server.stdout.readline()
            if not line.startswith("port "):
                _server.kill()
                _server = None
                raise OSError(f"Kafka's tools' JVM did not start (said {line!r})")
            _port = int(line.split()[1])
        return _port


def _stop() -> None:
    global _server
    with _lock:
        if _server is not None:
            _server.kill()
            _server.wait()
            _server = None


def _int(reader: io.BufferedReader) -> int:
    data = reader.read(4)
    if len(data) < 4:
        raise OSError("Kafka's tools' JVM closed the call")
    value: int = struct.unpack(">i", data)[0]
    return value


def _bytes(reader: io.BufferedReader) -> bytes:
    size = _int(reader)
    data = reader.read(size)
    if len(data) < size:
        raise OSError("Kafka's tools' JVM closed the call")
    return data
