"""The gateway replaces its librdkafka admin client after stale-metadata errors. Freeing the old
client while other threads still waited on its futures hung the process (or crashed it with
"double free or corruption": the watcher died that way under test_read_your_writes). A replaced
client is now kept until its requests have timed out and freed by the drainer thread."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.conftest import unique
from tests.support import BOOTSTRAP, ROOT, Cluster, stack_env

pytestmark = pytest.mark.cluster


def test_replacing_the_admin_client_while_other_threads_use_it_neither_hangs_nor_crashes(kafka_cluster: Cluster) -> None:
    kafka_cluster.tool("kafka-topics", "--create", "--topic", unique("renewal"), "--partitions", "60", "--replication-factor", "2")
    try:
        done = subprocess.run([sys.executable, "-X", "faulthandler", "-m", "tests.integration.renewal_stress", BOOTSTRAP, "25"],
                              cwd=ROOT, env=stack_env(), capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("the process hung while its admin client was being replaced") from exc
    assert done.returncode == 0, f"the process died ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}"
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
