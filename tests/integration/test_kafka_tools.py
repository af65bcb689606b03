"""Kafka's tools run in the tests' long-lived JVM answer as the same tools run as processes."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests import kafka_tools
from tests.support import BOOTSTRAP, unique

pytestmark = pytest.mark.cluster


def as_process(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(kafka_tools.BIN / name), *args], capture_output=True, text=True, timeout=90)


def first_error_line(stderr: str) -> str:
    """The message, without the log line's time and without the stack frames (the JVM's own frames differ)."""
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("\tat ")]
    return re.sub(r"^\[[^\]]*\] ", "", lines[0]) if lines else ""


def test_the_served_tools_give_the_status_output_and_error_of_the_processes(kafka_cluster: object) -> None:
    topic = unique("tools-served")
    created = kafka_tools.run("kafka-topics", "--bootstrap-server", BOOTSTRAP, "--create", "--topic", topic,
                              "--partitions", "3", "--replication-factor", "2", served=True)
    assert (created.returncode, created.stdout) == (0, f"Created topic {topic}.\n")
    calls = [
        ("kafka-topics", "--bootstrap-server", BOOTSTRAP, "--describe", "--topic", topic),
        ("kafka-topics", "--bootstrap-server", BOOTSTRAP, "--create", "--topic", topic),  # exists: status 1
        ("kafka-topics", "--bootstrap-server", BOOTSTRAP, "--describe", "--topic", unique("tools-missing")),
        ("kafka-topics", "--bootstrap-server", BOOTSTRAP, "--no-such-option"),
        ("kafka-get-offsets", "--bootstrap-server", BOOTSTRAP, "--topic", topic),
        ("kafka-configs", "--bootstrap-server", BOOTSTRAP, "--describe", "--entity-type", "topics", "--entity-name", topic),
        ("kafka-consumer-groups", "--bootstrap-server", BOOTSTRAP, "--describe", "--group", unique("tools-no-group")),
    ]
    for call in calls:
        served, process = kafka_tools.run(*call, served=True), as_process(*call)
        assert (served.returncode, served.stdout) == (process.returncode, process.stdout), call
        assert first_error_line(served.stderr) == first_error_line(process.stderr), call
    assert kafka_tools._server is not None and kafka_tools._server.poll() is None  # served, not run as processes

