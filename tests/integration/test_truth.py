"""What the console says about layout and quorum equals what Kafka's own tools say."""

from __future__ import annotations

import pytest

from tests.conftest import Stack, kafka_tool, unique, wait_for
from tests.integration.oracle import api_layout, quorum_status, topic_layout
from tests.support import BASE_PORT

pytestmark = pytest.mark.cluster


def api_partitions(stack: Stack, topic: str) -> dict[int, dict]:
    r = stack.get(f"/api/v1/clusters/local/topics/{topic}/partitions/")
    return api_layout(r.json()["partitions"]) if r.status_code == 200 else {}


def test_topic_layout_in_the_api_equals_kafka_topics_describe(stack: Stack) -> None:
    topic = unique("truth-layout")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "6", "--replication-factor", "3")
    wait_for(lambda: len(api_partitions(stack, topic)) == 6, 15, what=f"{topic} in the API")

    def matches() -> bool:
        expected = topic_layout(stack.cluster.tool("kafka-topics", "--describe", "--topic", topic))
        return len(expected) == 6 and wait_for(lambda: api_partitions(stack, topic) == expected, 5, what="equal layout")

    assert wait_for(matches, 30, interval=1, what="API layout equal to kafka-topics --describe")


def test_topic_with_replication_factor_two_shows_the_same_replicas_as_kafka(stack: Stack) -> None:
    topic = unique("truth-rf2")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "5", "--replication-factor", "2")
    expected = topic_layout(stack.cluster.tool("kafka-topics", "--describe", "--topic", topic))
    assert len(expected) == 5
    wait_for(lambda: api_partitions(stack, topic) == expected, 15, what="API layout equal to kafka-topics --describe")
    body = stack.get(f"/api/v1/clusters/local/topics/{topic}/partitions/").json()
    assert body["replication_factor"] == 2
    assert all(p["preferred_leader"] == p["replicas"][0] for p in body["partitions"])


def test_partition_offsets_in_the_api_equal_kafka_get_offsets(stack: Stack) -> None:
    topic = unique("truth-offsets")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "3")
    kafka_tool("kafka-producer-perf-test", "--topic", topic, "--num-records", "500", "--record-size", "100",
               "--throughput", "-1", "--producer-props", f"bootstrap.servers={stack.cluster.bootstrap}", "acks=all")
    out = stack.cluster.tool("kafka-get-offsets", "--topic", topic, "--time", "-1")
    expected = {int(line.split(":")[1]): int(line.split(":")[2]) for line in out.split() if line.startswith(topic + ":")}
    assert sum(expected.values()) == 500

    def api_ends() -> dict[int, int | None]:
        parts = stack.get(f"/api/v1/clusters/local/topics/{topic}/partitions/").json()["partitions"]
        return {p["partition"]: p["end_offset"] for p in parts}

    wait_for(lambda: api_ends() == expected, 20, what="end offsets equal to kafka-get-offsets")
    parts = stack.get(f"/api/v1/clusters/local/topics/{topic}/partitions/").json()["partitions"]
    assert all(p["start_offset"] == 0 for p in parts)


def test_quorum_in_the_api_equals_kafka_metadata_quorum(stack: Stack) -> None:
    expected = quorum_status(stack.cluster.tool("kafka-metadata-quorum", "describe", "--status"))

    def api_quorum() -> dict:
        q = stack.get("/api/v1/clusters/local/").json()["quorum"]
        return {
            "leader_id": q["leader_id"],
            "leader_epoch": q["leader_epoch"],
            "voters": sorted(v["id"] for v in q["voters"]),
            "observers": sorted(o["id"] for o in q["observers"]),
        }

    wait_for(lambda: api_quorum() == expected, 10, what="API quorum equal to kafka-metadata-quorum")
    overview = stack.get("/api/v1/clusters/local/").json()
    assert overview["controller_id"] == expected["leader_id"]
    assert [b["id"] for b in overview["brokers"] if b["controller"]] == [expected["leader_id"]]


def test_broker_racks_and_addresses_come_from_the_cluster(stack: Stack) -> None:
    brokers = stack.get("/api/v1/clusters/local/brokers/").json()["brokers"]
    assert [(b["id"], b["rack"], b["port"], b["up"]) for b in brokers] == [
        (1, "r1", BASE_PORT, True), (2, "r2", BASE_PORT + 2, True), (3, "r3", BASE_PORT + 4, True)
    ]
