"""`manage.py watch` starts the watcher again when its process dies of something no Python code
can catch (a native crash in a client library aborts it: SIGABRT, SIGSEGV): pages go on being
updated, and the timeline says what happened."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.conftest import Stack, unique, wait_for
from tests.support import TEST_VAR

pytestmark = pytest.mark.cluster


def watcher_child(supervisor: int) -> int | None:
    """The pid of the watcher process `manage.py watch` (pid `supervisor`) runs, if one runs."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == supervisor and b"--child" in cmdline and stat.rsplit(")", 1)[1].split()[0] != "Z":
            return int(proc.name)
    return None


def listed(stack: Stack, topic: str) -> bool:
    rows = stack.get("/api/v1/clusters/local/topics/", params={"q": topic}).json()["results"]
    return topic in [r["name"] for r in rows]


def test_a_watcher_that_crashes_is_started_again_and_says_so_on_the_timeline(stack: Stack) -> None:
    supervisor = stack.procs["watcher"].pid
    first = wait_for(lambda: watcher_child(supervisor), 30, what="the watcher's child process")
    os.kill(first, signal.SIGABRT)  # as "double free or corruption" in a C library ends it
    second = wait_for(lambda: (c := watcher_child(supervisor)) is not None and c != first and c, 20,
                      what="a new watcher process")
    assert stack.procs["watcher"].poll() is None, "the supervising process lives on"
    # The new watcher takes the lease back at once and its snapshots show what changes after the crash.
    topic = unique("after-crash")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    wait_for(lambda: listed(stack, topic), 30, what="a topic made after the crash in the watcher's snapshot")
    events = stack.get("/api/v1/clusters/local/events/", params={"kind": "watcher"}).json()["events"]
    assert events and "The watcher process ended (signal SIGABRT)" in events[0]["message"], events[:1]
    assert watcher_child(supervisor) == second
    # (the crash this test made is not one to report after it: tests/conftest.py's _report_watcher_restarts)
    stack.watcher_log_read = (TEST_VAR / "logs" / "watcher.log").stat().st_size
