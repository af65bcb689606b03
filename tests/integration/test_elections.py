"""Preferred leader elections through the API, checked against kafka-topics --describe."""

from __future__ import annotations

import json
import tempfile

import pytest

from tests.conftest import Stack, unique, wait_for
from tests.integration.oracle import topic_layout

pytestmark = pytest.mark.cluster
API = "/api/v1/clusters/local/leader-elections/"
PARTITIONS = 6


def layout(stack: Stack, topic: str) -> dict[int, dict]:
    return topic_layout(stack.cluster.tool("kafka-topics", "--describe", "--topic", topic))


def test_a_preferred_election_puts_each_first_replica_back_in_the_lead(stack: Stack) -> None:
    topic = unique("elect")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", str(PARTITIONS), "--replication-factor", "3")
    wait_for(lambda: len(layout(stack, topic)) == PARTITIONS and all(len(p["isr"]) == 3 for p in layout(stack, topic).values()),
             60, what="the topic fully replicated")
    off_preferred: list[int] = []
    for _attempt in range(3):
        before = layout(stack, topic)
        # Rotate every replica list: the leaders stay where they are, no longer first in their lists.
        wanted = {p: before[p]["replicas"][1:] + before[p]["replicas"][:1] for p in range(PARTITIONS)}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": wanted[p]} for p in wanted]}, f)
        stack.cluster.tool("kafka-reassign-partitions", "--reassignment-json-file", f.name, "--execute")
        order = dict(wanted)

        def rotated(order: dict[int, list[int]] = order) -> bool:
            return {p: v["replicas"] for p, v in layout(stack, topic).items()} == order

        wait_for(rotated, 60, what="the new replica order")
        off_preferred = [p for p, v in layout(stack, topic).items() if v["leader"] != v["replicas"][0]]
        if off_preferred:
            break
        # (Kafka's own leader balancing, every leader.imbalance.check.interval.seconds, moved them first: again)
    assert off_preferred, "the rotation left every leader first: nothing to elect"

    # The rotation was Kafka's tool's, not the console's: wait for the watcher to show it.
    wait_for(lambda: (lambda r: r.status_code == 200 and {p["partition"]: p["replicas"] for p in r.json()["partitions"]} == wanted)(
        stack.get(f"/api/v1/clusters/local/topics/{topic}/")), 60, what="the rotated replicas in the snapshot")
    r = stack.api("operator").post(stack.base_url + API, json={"topics": [topic]}, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["type"] == "preferred" and body["failed"] == 0, body
    assert body["elected"] == len(off_preferred), (body, off_preferred)
    assert sorted(row["partition"] for row in body["partitions"] if row["result"] == "elected") == sorted(off_preferred)

    # The operator's next request shows the leaders they elected (read-your-writes), not the last cycle's.
    shown = stack.api("operator").get(stack.base_url + f"/api/v1/clusters/local/topics/{topic}/", timeout=30).json()
    assert all(p["leader"] == p["replicas"][0] for p in shown["partitions"]), shown["partitions"]

    after = layout(stack, topic)  # Kafka's own tool is the oracle
    assert all(v["leader"] == v["replicas"][0] for v in after.values()), after
    assert {p["partition"]: p["leader"] for p in shown["partitions"]} == {n: v["leader"] for n, v in after.items()}

    again = stack.api("operator").post(stack.base_url + API, json={"partitions": [{"topic": topic, "partition": 0}]}, timeout=30)
    assert again.status_code == 200 and again.json()["partitions"][0]["result"] == "not needed", again.text

    audit = stack.get("/api/v1/audit/").json()
    entries = audit["entries"]
    assert any(e["action"] == "elect_leaders" and e["details"].get("topics") == [topic] for e in entries), entries[:3]


def test_a_viewer_cannot_elect_leaders(stack: Stack) -> None:
    r = stack.api("viewer").post(stack.base_url + API, json={}, timeout=10)
    assert r.status_code == 403
