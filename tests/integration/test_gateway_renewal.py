"""The gateway replaces its librdkafka admin client after stale-metadata errors. Freeing the old
client while other threads still waited on its futures hung the process (or crashed it with
"double free or corruption": the watcher died that way under test_read_your_writes). A replaced
client is now kept until its requests have timed out and freed by the drainer thread."""

from __future__ import annotations

import ast
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
    done = subprocess.run([gdb, "-batch", "-ex", "thread apply all bt 30", sys.executable, str(cores[0])],
                          capture_output=True, text=True, timeout=120)
    return done.stdout[-12000:]


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
    assert done.returncode == 0, (f"the process died ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}\n"
                                  f"{native_backtrace(tmp_path) if done.returncode < 0 else ''}")
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
    import time

    assert gw.release_retired(now=time.monotonic() + 3 * 2.0 + 6) == 1
    gw.close()
