"""The last stable offset and a read_committed group's lag on the running console (its watcher keeps
the partitions open transactions hold, tests/support.py's stack), on the SIGKILLed-producer setup of
test_transactions.py: the LSO on the topic API equals the first offset of the open transaction in
`kafka-transactions describe-producers` and the high watermark a read_committed consumer is told
(`kafka-get-offsets` of Kafka 4.3.1 has no isolation option: GetOffsetShell always lists offsets
read_uncommitted); a read_committed group stopped at the LSO has readable lag 0 and is flagged blocked
by the transaction while it hangs; after the console's abort it reads on and its lag returns to 0,
as `kafka-consumer-groups --describe` says."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as RdTopicPartition

from tests.integration.test_transactions import (  # noqa: F401
    CLUSTER,
    api_client,
    hanging,
    listed,
    tool_hw,
    tool_producers,
    write_plain,
)
from tests.support import Cluster, Stack, unique, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]


def read_committed_member(cluster: Cluster, group: str) -> Any:
    return Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "isolation.level": "read_committed",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, "enable.partition.eof": True})


def drain(consumer: Any) -> int:
    """Records read until the consumer reaches the end it may read (partition EOF: the LSO for read_committed)."""
    got = 0
    while True:
        msg = consumer.poll(10)
        assert msg is not None, "no end of partition within 10 s"
        if msg.error() is None:
            got += 1
        elif msg.error().code() == KafkaError._PARTITION_EOF:
            return got
        else:
            raise AssertionError(msg.error())


def commit(consumer: Any, offsets: list[Any] | None = None) -> None:
    """A synchronous commit, again while the group's coordinator is still being found or moves
    (NOT_COORDINATOR on a cluster just started: librdkafka's sync commit does not retry it)."""

    def once() -> bool:
        if offsets is None:
            consumer.commit(asynchronous=False)
        else:
            consumer.commit(offsets=offsets, asynchronous=False)
        return True

    wait_for(once, 30, interval=0.5, what="the group's commit")


def partition_row(stack: Stack, path: str) -> dict[str, Any]:
    r = stack.get(path)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_the_lso_readable_lag_and_blocking_transaction_against_kafka_then_the_abort_frees_the_group(
        stack: Stack, kafka_cluster: Cluster, hanging: tuple[str, str]) -> None:  # noqa: F811
    topic, tid = hanging
    write_plain(kafka_cluster, topic, 10)  # offsets 5-14 behind the open transaction's 0-4
    group = unique("rc-group")
    consumer = read_committed_member(kafka_cluster, group)
    try:
        consumer.assign([RdTopicPartition(topic, 0, 0)])
        assert drain(consumer) == 0  # stopped at the LSO
        _low, told_end = consumer.get_watermark_offsets(RdTopicPartition(topic, 0), timeout=10, cached=False)
        (position,) = consumer.position([RdTopicPartition(topic, 0)])
        stopped = position.offset if position.offset >= 0 else told_end
        commit(consumer, [RdTopicPartition(topic, 0, stopped)])
        starts = [int(p["CurrentTransactionStartOffset"]) for p in tool_producers(kafka_cluster, topic).values()
                  if p["CurrentTransactionStartOffset"] not in ("None", "-1")]
        lso = min(starts)
        hw = tool_hw(kafka_cluster, topic)
        assert (lso, told_end, stopped, hw) == (0, 0, 0, 15)

        topic_path = f"/api/v1/clusters/{CLUSTER}/topics/{topic}/"
        row = wait_for(lambda: (p := partition_row(stack, topic_path)["partitions"][0])["end_offset"] == hw
                       and p["held_by"] == tid and p, 30, interval=0.5, what="the topic's LSO held by the transaction")
        assert row["last_stable_offset"] == lso

        group_path = f"/api/v1/clusters/{CLUSTER}/consumer-groups/{group}/"

        def blocked_at(end: int) -> Any:
            g = partition_row(stack, group_path)
            p = g["partitions"][0]
            return p["end_offset"] == end and p["committed"] == lso and g["blocked_by"] and (g, p)

        g, p = wait_for(lambda: blocked_at(hw), 30, interval=0.5, what="the group blocked at the LSO")
        assert (p["last_stable_offset"], p["lag"], p["lag_readable"], p["blocked_by"]) == (lso, 15, 0, tid)
        assert [(b["topic"], b["partition"], b["transactional_id"]) for b in g["blocked_by"]] == [(topic, 0, tid)]

        write_plain(kafka_cluster, topic, 5)  # the HW moves on; the group, at the LSO, stays blocked
        g, p = wait_for(lambda: blocked_at(20), 30, interval=0.5, what="the group still blocked with the HW at 20")
        assert (p["lag"], p["lag_readable"], p["blocked_by"]) == (20, 0, tid)

        # The abort in this process (its check asks Kafka afresh, with this process's threshold of 3 s), once
        # the watcher's look calls it hanging: on a quiet host the steps above can take less than those 3 s.
        client = api_client()
        wait_for(lambda: (t := listed(client, tid)) and t["hanging"], 30, interval=0.5, what="the transaction hanging")
        r = client.post(f"/api/v1/clusters/{CLUSTER}/transactions/{tid}/abort/", {"confirm": tid}, format="json")
        assert r.status_code == 200, r.content
        assert drain(consumer) == 15  # the plain records; the aborted five are skipped
        commit(consumer)
    finally:
        consumer.close()

    hw = tool_hw(kafka_cluster, topic)
    described = kafka_cluster.tool("kafka-consumer-groups", "--describe", "--group", group)
    lines = [line.split() for line in described.splitlines() if line.strip()]
    header = next(cells for cells in lines if cells[0] == "GROUP")  # (after a note when the group has no members)
    (tool_row,) = [dict(zip(header, cells, strict=False)) for cells in lines if topic in cells]
    assert (tool_row["CURRENT-OFFSET"], tool_row["LOG-END-OFFSET"], tool_row["LAG"]) == (str(hw), str(hw), "0"), described

    def freed() -> Any:
        g = partition_row(stack, group_path)
        p = g["partitions"][0]
        return p["end_offset"] == hw and not g["blocked_by"] and (g, p)

    g, p = wait_for(freed, 30, interval=0.5, what="the group freed and its lag read again")
    assert (p["committed"], p["last_stable_offset"], p["end_offset"], p["lag"], p["lag_readable"], p["blocked_by"]) == (
        hw, hw, hw, 0, 0, None), described
    t = partition_row(stack, topic_path)["partitions"][0]
    assert (t["last_stable_offset"], t["held_by"]) == (hw, None)
