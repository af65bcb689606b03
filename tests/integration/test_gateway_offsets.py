"""The gateway's ListOffsets against a real cluster: sent in requests of OFFSETS_CHUNK partitions,
each answered by one future, keyed by the objects asked for. AdminClient.list_offsets makes a
concurrent.futures.Future per partition (1.6 KB each): at 300,000 partitions that was 490 MB held
at once by every pass of the sampling process, an answer the simulated cluster (bench/simulate.py)
never makes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from bench.offsets_memory import peak_per_partition
from console.gateway import offsets
from console.gateway.client import ClusterGateway
from console.gateway.config import ClusterConfig
from tests.conftest import kafka_tool, unique, wait_for
from tests.support import Cluster

pytestmark = pytest.mark.cluster


@pytest.fixture()
def gateway(kafka_cluster: Cluster) -> Iterator[ClusterGateway]:
    gw = ClusterGateway(ClusterConfig(name="offsets", bootstrap_servers=kafka_cluster.bootstrap), timeout=10.0)
    yield gw
    gw.close()


def _tool_offsets(cluster: Cluster, topic: str, time: str) -> dict[int, int]:
    out = cluster.tool("kafka-get-offsets", "--topic", topic, "--time", time)
    return {int(line.split(":")[1]): int(line.split(":")[2]) for line in out.split() if line.startswith(topic + ":")}


def test_offsets_asked_in_many_requests_equal_kafka_get_offsets_keyed_by_the_objects_asked_for(
        kafka_cluster: Cluster, gateway: ClusterGateway, monkeypatch: pytest.MonkeyPatch) -> None:
    topic = unique("offsets-chunks")
    kafka_cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "12", "--replication-factor", "2")
    try:
        kafka_tool("kafka-producer-perf-test", "--topic", topic, "--num-records", "600", "--record-size", "50",
                   "--throughput", "-1", "--producer-props", f"bootstrap.servers={kafka_cluster.bootstrap}", "acks=all")
        monkeypatch.setattr(offsets, "OFFSETS_CHUNK", 5)  # three requests, the last of two partitions
        asked = [(topic, p) for p in range(12)]
        asked.append((topic, 3))  # (asked twice: answered once)
        ends = gateway.list_offsets(asked, "latest")
        expected = _tool_offsets(kafka_cluster, topic, "-1")
        assert sum(expected.values()) == 600 and len(expected) == 12
        assert {p: o for (_t, p), o in ends.items()} == expected
        assert all(any(key is tp for tp in asked) for key in ends), "keyed by the tuples asked for, not copies"
        starts = gateway.list_offsets(iter(asked[:12]), "earliest")  # (any iterable)
        assert {p: o for (_t, p), o in starts.items()} == _tool_offsets(kafka_cluster, topic, "-2") == dict.fromkeys(range(12), 0)
    finally:
        kafka_cluster.tool("kafka-topics", "--delete", "--topic", topic)


def test_an_offsets_answer_holds_no_future_per_partition(kafka_cluster: Cluster, gateway: ClusterGateway) -> None:
    topic = unique("offsets-memory")
    partitions = 400
    kafka_cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", str(partitions), "--replication-factor", "1")
    try:
        asked = [(topic, p) for p in range(partitions)]
        # (every partition led, and the client warm: its metadata known)
        wait_for(lambda: len(gateway.list_offsets(asked, "latest")) == partitions, 60, interval=1, what="every partition's offset")
        admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})

        def public() -> dict[tuple[str, int], int]:
            futures = admin.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in asked}, request_timeout=10)
            return {(tp.topic, tp.partition): f.result(11).offset for tp, f in futures.items()}

        assert len(public()) == partitions

        by_future = min(peak_per_partition(public, partitions)[0] for _ in range(2))
        ours = max(peak_per_partition(lambda: gateway.list_offsets(asked, "latest"), partitions)[0] for _ in range(2))
        # A future per partition is 1.6 KB of the public call's peak; the gateway's whole answer,
        # request and result, less than half of the public call's.
        print(f"peak per partition: AdminClient.list_offsets {by_future:.0f} B, the gateway's {ours:.0f} B")
        assert by_future > 1500, by_future
        assert ours < by_future / 2, (ours, by_future)
    finally:
        kafka_cluster.tool("kafka-topics", "--delete", "--topic", topic)


def test_offsets_are_read_again_once_a_partition_this_client_saw_leaderless_has_its_leader_back(
        kafka_cluster: Cluster, gateway: ClusterGateway) -> None:
    """librdkafka's ListOffsets fails at once with _NOENT ("no leaders found", no request sent) for
    a partition its cached metadata says has no leader, and keeps failing so until that cache is
    refreshed (by default every five minutes), long after the leader is back. Killing and
    restarting a broker or the controller did that to the web process's browsing (503 for as long
    as the test waited). A _NOENT answer is stale metadata: the gateway asks a fresh client."""
    from console.gateway.errors import ClusterUnavailable

    victim = next(b for b in (3, 2, 1) if b != gateway.quorum().leader_id)  # (not the active controller)
    topic = unique("offsets-leader-back")
    kafka_cluster.tool("kafka-topics", "--create", "--topic", topic, "--replica-assignment", str(victim))
    wait_for(lambda: gateway.list_offsets([(topic, 0)], "latest") == {(topic, 0): 0}, 30, what="the new topic's offsets")

    def leader() -> int:
        md = gateway.metadata()  # (this client's cache renewed with what the cluster says now)
        return next(p.leader for t in md.topics if t.name == topic for p in t.partitions)

    kafka_cluster.kill(victim)
    try:
        wait_for(lambda: leader() == -1, 60, interval=1, what="the partition without its leader")
        with pytest.raises(ClusterUnavailable, match="returned no offsets"):
            gateway.list_offsets([(topic, 0)], "latest")
    finally:
        kafka_cluster.start(victim)
    wait_for(lambda: f"Leader: {victim}\t" in kafka_cluster.tool("kafka-topics", "--describe", "--topic", topic),
             90, interval=1, what="the partition's leader back (kafka-topics --describe)")
    assert gateway.list_offsets([(topic, 0)], "latest") == {(topic, 0): 0}
    kafka_cluster.tool("kafka-topics", "--delete", "--topic", topic)
