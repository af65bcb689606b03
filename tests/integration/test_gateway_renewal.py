"""The gateway replaces its librdkafka admin client after stale-metadata errors. Freeing the old
client while other threads still waited on its futures hung the process (or crashed it with
"double free or corruption": the watcher died that way under test_read_your_writes). A replaced
client is now kept until its requests have timed out and freed by the drainer thread.

A fresh client's first ListOffsets crashed it too, rarely (SIGSEGV in librdkafka's leader lookup
when its metadata cache changed under it): the gateway now fills a client's cache before asking."""

from __future__ import annotations

import ast
import logging
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.gateway.client import ClusterGateway
from console.gateway.config import ClusterConfig
from tests.conftest import unique
from tests.support import BOOTSTRAP, ROOT, Cluster, stack_env

pytestmark = pytest.mark.cluster


def _allow_core_dumps() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def native_backtrace(where: Path) -> str:
    """Every thread's native stack from a core file the crashed process left in `where` (when the
    machine writes core files there and gdb is installed; else why not): faulthandler names only
    the Python frames, and this test's rare SIGSEGV (inside librdkafka's ListOffsets, once in
    several `make test` runs, never in 16 runs on their own) needs the C ones."""
    cores = sorted(where.glob("core*"))
    gdb = shutil.which("gdb")
    if not cores or gdb is None:
        return f"(no native backtrace: {'no core file' if not cores else 'gdb not installed'})"
    # The thread the signal hit first (a core file's current thread), whole; then the others, short:
    # CI shows the head and the tail of a long failure, and the first crash's frames were cut out.
    done = subprocess.run([gdb, "-batch", "-ex", "bt 40", "-ex", "thread apply all bt 8", sys.executable, str(cores[0])],
                          capture_output=True, text=True, timeout=120)
    return done.stdout[:12000]


def test_replacing_the_admin_client_while_other_threads_use_it_neither_hangs_nor_crashes(kafka_cluster: Cluster,
                                                                                         tmp_path: Path) -> None:
    kafka_cluster.tool("kafka-topics", "--create", "--topic", unique("renewal"), "--partitions", "60", "--replication-factor", "2")
    try:
        # (run in a directory of its own, where a crash leaves its core file)
        done = subprocess.run([sys.executable, "-X", "faulthandler", "-m", "tests.integration.renewal_stress", BOOTSTRAP, "25"],
                              cwd=tmp_path, env=stack_env(PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120,
                              preexec_fn=_allow_core_dumps)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("the process hung while its admin client was being replaced") from exc
    assert done.returncode == 0, (f"the process died ({done.returncode}):\n"
                                  f"{native_backtrace(tmp_path) if done.returncode < 0 else ''}\n"
                                  f"{done.stdout}\n{done.stderr[-3000:]}")
    assert "survived" in done.stdout
    counts = ast.literal_eval(done.stdout.split("survived", 1)[1].strip())  # the dict it printed
    assert counts["renewals"] >= 10 and counts["offsets"] >= 10 and counts["configs"] >= 10, counts


def test_a_replaced_admin_client_is_freed_only_after_its_requests_have_timed_out() -> None:
    from console.gateway.client import ClusterGateway
    from console.gateway.config import ClusterConfig

    gw = ClusterGateway(ClusterConfig(name="c", bootstrap_servers="127.0.0.1:9"), timeout=2.0)
    first = gw._admin_client()
    gw._admin_born = 0.0
    assert gw.renew_admin()
    assert gw._admin_client() is not first
    assert gw.release_retired() == 0, "kept while its requests may still be in flight"

    assert gw.release_retired(now=time.monotonic() + 3 * 2.0 + 6) == 1
    gw.close()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class _LoggedGateway(ClusterGateway):
    """The gateway, its admin clients logging their metadata requests (librdkafka's debug log)."""

    def __init__(self) -> None:
        super().__init__(ClusterConfig(name="logged", bootstrap_servers=BOOTSTRAP), timeout=10.0)
        self.log = _Lines()
        self.logger = logging.getLogger(f"rdkafka.{id(self)}")
        self.logger.addHandler(self.log)
        self.logger.setLevel(logging.DEBUG)
        self.logger.propagate = False

    def _admin_conf(self) -> dict[str, object]:
        return {"debug": "metadata", "logger": self.logger}

    def lookups(self) -> list[str]:
        """The Metadata requests librdkafka's ListOffsets sent to find leaders it did not know:
        the path that crashed (its log is served by the next call's poll)."""
        self.metadata()
        return [line for line in self.log.lines if "query partition leaders" in line]


def test_offsets_are_asked_only_of_a_client_whose_cache_knows_every_leader(kafka_cluster: Cluster) -> None:
    first, later = unique("warm"), unique("warm-later")
    kafka_cluster.tool("kafka-topics", "--create", "--topic", first, "--partitions", "3", "--replication-factor", "2")
    gw = _LoggedGateway()
    try:
        # A client never used: filled before it asks.
        offsets = gw.list_offsets([(first, p) for p in range(3)], "latest")
        assert offsets == {(first, 0): 0, (first, 1): 0, (first, 2): 0}
        assert gw.lookups() == []
        assert any("Request metadata" in line for line in gw.log.lines), "the debug log was read"
        # A topic created after the client last read every topic, and one that does not exist:
        # the first asked for, the second left out (never waited for).
        kafka_cluster.tool("kafka-topics", "--create", "--topic", later, "--partitions", "2", "--replication-factor", "2")
        offsets = gw.list_offsets([(first, 0), (later, 0), (later, 1), (unique("absent"), 0)], "earliest")
        assert offsets == {(first, 0): 0, (later, 0): 0, (later, 1): 0}
        assert gw.lookups() == []
        # A client replaced (as after a stale leader): the new one is filled too, before each call
        # that looks leaders up.
        calls = [lambda: gw.list_offsets([(later, 1)], "latest") == {(later, 1): 0},
                 lambda: gw.delete_records(later, {0: -1}) == {0: 0},
                 lambda: gw.offsets_for_time([(later, 0), (later, 1)], 0) == {(later, 0): 0, (later, 1): 0}]
        for call in calls:
            deadline = time.monotonic() + 5
            while not gw.renew_admin():
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert call()
            assert gw.lookups() == []
    finally:
        gw.close()
