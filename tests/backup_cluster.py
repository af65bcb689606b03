"""The tests' second Kafka cluster, "backup": one combined KRaft node 200 ports above the test cluster's,
MirrorMaker 2's target, started once per session by `manage.py devcluster up --backup` as a user would,
only for the modules that ask for it (fixture `backup_cluster`)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from console.devcluster import DevCluster
from tests.support import BASE_PORT, TEST_VAR, kafka_tool, manage

# tests/settings.py leaves DEVCLUSTER_BACKUP_PORT to its default, the same 200 above.
BACKUP_PORT = BASE_PORT + 200
BACKUP_DIR = TEST_VAR / "backup"
BACKUP_BOOTSTRAP = DevCluster(BACKUP_DIR, BACKUP_PORT, voters=1).bootstrap_servers()


def backup_tool(name: str, *args: str) -> str:
    """One of Kafka's own tools against the backup cluster."""
    return kafka_tool(name, "--bootstrap-server", BACKUP_BOOTSTRAP, *args)


@contextmanager
def running_backup_cluster() -> Iterator[str]:
    manage("devcluster", "down", "--backup", "--now")  # one an earlier session left behind
    shutil.rmtree(BACKUP_DIR, ignore_errors=True)
    manage("devcluster", "up", "--backup", "--timeout", "90")
    try:
        yield BACKUP_BOOTSTRAP
    finally:
        manage("devcluster", "down", "--backup", "--now", timeout=60)
