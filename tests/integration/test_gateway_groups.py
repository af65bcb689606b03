"""The gateway describes consumer groups DESCRIBE_CHUNK at a time, each chunk made into ConsumerGroups
before the next is asked for: kafka-python's decoded answers are several KB a group beyond what is
kept of them (180 MB at once at 50,000 groups when all were described together), an answer the
simulated cluster (bench/simulate.py) never decodes."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer

from console.gateway import groups as gateway_groups
from console.gateway.client import ClusterGateway
from console.gateway.config import ClusterConfig
from tests.conftest import unique, wait_for
from tests.support import Cluster

pytestmark = pytest.mark.cluster

GROUPS = 16


@pytest.fixture(scope="module")
def groups(kafka_cluster: Cluster) -> Iterator[tuple[ClusterGateway, list[str], list[Consumer]]]:
    topic = unique("describe-chunks")
    kafka_cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "10", "--replication-factor", "1")
    prefix = unique("chunked")
    ids = [f"{prefix}-{i:02d}/é" for i in range(GROUPS)]
    consumers = []
    for gid in ids:
        c = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": gid, "client.id": f"c-{gid}",
                      "session.timeout.ms": 45000})
        c.subscribe([topic])
        consumers.append(c)
    gw = ClusterGateway(ClusterConfig(name="groups", bootstrap_servers=kafka_cluster.bootstrap), timeout=10.0)

    def stable() -> bool:
        for c in consumers:
            c.poll(0)
        mine = [g for g in gw.consumer_groups() if g.group_id in ids]
        return len(mine) == GROUPS and all(g.state == "Stable" and len(g.members) == 1 and len(g.members[0].assignment) == 10
                                           for g in mine)

    wait_for(stable, 120, interval=1, what="every group stable with its member")
    yield gw, ids, consumers
    for c in consumers:
        c.close()
    gw.close()
    kafka_cluster.tool("kafka-topics", "--delete", "--topic", topic)


def test_groups_described_in_chunks_are_those_described_at_once_and_kafka_lists(
        kafka_cluster: Cluster, groups: tuple[ClusterGateway, list[str], list[Consumer]], monkeypatch: pytest.MonkeyPatch) -> None:
    gw, ids, consumers = groups
    whole = gw.consumer_groups()
    monkeypatch.setattr(gateway_groups, "DESCRIBE_CHUNK", 3)
    chunked = gw.consumer_groups()
    for c in consumers:
        c.poll(0)
    assert [g.group_id for g in chunked] == sorted(g.group_id for g in chunked)
    assert {g.group_id: (g.state, g.members, g.coordinator) for g in chunked if g.group_id in ids} == \
        {g.group_id: (g.state, g.members, g.coordinator) for g in whole if g.group_id in ids}
    # kafka-consumer-groups lists the consumer protocol's groups; the others (a Connect worker's
    # "connect" group) are what kafka-groups lists beside them, with their protocol.
    listed = set(kafka_cluster.tool("kafka-consumer-groups", "--list").split())
    assert {g.group_id for g in chunked if g.protocol_type in ("consumer", "")} == listed
    others = {(g.group_id, g.protocol_type) for g in chunked if g.protocol_type not in ("consumer", "")}
    if others:
        rows = [line.split() for line in kafka_cluster.tool("kafka-groups", "--list").splitlines()]
        assert others <= {(r[0], r[2]) for r in rows if len(r) == 3}, rows
    # The same, one chunk at a time (what the sampler reads): each of at most DESCRIBE_CHUNK groups.
    sizes = []
    for chunk in gw.consumer_group_chunks():
        sizes.append(len(chunk))
        for c in consumers:
            c.poll(0)
        for g in chunk:
            if g.group_id in ids:
                assert (g.state, g.members, g.coordinator) == next((w.state, w.members, w.coordinator) for w in whole
                                                                   if w.group_id == g.group_id)
    assert sum(sizes) == len(chunked) and max(sizes) == 3 and len(sizes) == -(-len(chunked) // 3)


def test_describing_in_chunks_holds_only_a_chunks_answers_at_once(
        groups: tuple[ClusterGateway, list[str], list[Consumer]], monkeypatch: pytest.MonkeyPatch) -> None:
    gw, _ids, consumers = groups

    def beyond_kept(chunk: int) -> float:
        """What the call held at its peak beyond the ConsumerGroups it returned, per group."""
        monkeypatch.setattr(gateway_groups, "DESCRIBE_CHUNK", chunk)
        for c in consumers:
            c.poll(0)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            answer = gw.consumer_groups()
            kept, peak = tracemalloc.get_traced_memory()
            return (peak - kept) / len(answer)
        finally:
            tracemalloc.stop()
            del before

    at_once = min(beyond_kept(10_000) for _ in range(2))
    in_twos = max(beyond_kept(2) for _ in range(2))
    # (a floor stays either way: the listing of every group, held through the call)
    assert in_twos < 0.75 * at_once, (in_twos, at_once)
