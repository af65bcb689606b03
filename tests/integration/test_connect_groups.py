"""A Connect worker's group ("connect" protocol) beside consumer groups: the groups read, the groups
page and a group's state keep working, with the worker's members shown, as kafka-groups lists it."""

from __future__ import annotations

import pytest

from console import gateway
from tests.conftest import Stack, kafka_tool, wait_for
from tests.support import BOOTSTRAP

pytestmark = pytest.mark.cluster

WORKER_GROUP = "console-connect"  # console/devcluster_connect.py's group.id


def test_a_connect_workers_group_is_read_with_its_members_beside_consumer_groups(stack: Stack, connect_worker: str) -> None:
    gw = gateway.for_cluster("local")

    def worker_group():  # noqa: ANN202
        return next((g for g in gw.consumer_groups() if g.group_id == WORKER_GROUP and g.members), None)

    group = wait_for(worker_group, 60, what="the worker's group with its member")
    assert group.protocol_type == "connect" and group.state == "Stable" and group.error is None
    assert group.members[0].client_id and group.members[0].assignment == ()
    assert gw.group_state(WORKER_GROUP) == ("Stable", 1, "classic")
    # Kafka's own view: kafka-groups lists it as a classic group of the connect protocol.
    rows = [line.split() for line in kafka_tool("kafka-groups", "--bootstrap-server", BOOTSTRAP, "--list").splitlines()]
    assert [WORKER_GROUP, "Classic", "connect"] in rows, rows
    # The console's own read (the watcher's sampling process) shows it too, members and all.
    detail = wait_for(lambda: (r := stack.get(f"/api/v1/clusters/local/consumer-groups/{WORKER_GROUP}/")).status_code == 200
                      and r.json(), 60, what="the worker's group in the console's API")
    assert detail["protocol_type"] == "connect" and detail["members"] == 1, detail
    assert stack.get("/api/v1/clusters/local/consumer-groups/").status_code == 200
