"""Hanging transactions on the test cluster, checked with Kafka's own `kafka-transactions` and
`kafka-get-offsets`: a transactional producer begins a transaction, writes and is SIGKILLed while
another producer keeps writing to the same partition. The console lists the transaction as
`kafka-transactions list/describe` does, its producers as `describe-producers`, its LSO as
`kafka-get-offsets --isolation read_committed`; it flags it hanging once the LSO has been held past
the threshold while the high watermark moves; its abort lets a read_committed consumer read on.

The console runs in this process (the API through Django's test client)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as RdTopicPartition
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from alerts_app.transactions import transaction_matches
from brokers_app.models import Event
from console.models import AuditEntry
from tests.support import Cluster, unique, wait_for
from transactions_app import listing, watch

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]

CLUSTER = "local"
TIMEOUT_MS = 180_000  # the producer's transaction.timeout.ms: its coordinator aborts it after this, within the test's reach
PRODUCER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2], "transaction.timeout.ms": int(sys.argv[4])})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(sys.argv[3], value=b"in-transaction-%d" % i, partition=0)
    p.flush(30)
    print("open", flush=True)
    time.sleep(600)
""")


def api_client() -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("txn-admin", password="pw-admin-123"))
    return client


def listed(client: APIClient, tid: str) -> dict[str, Any] | None:
    r = client.get(f"/api/v1/clusters/{CLUSTER}/transactions/")
    assert r.status_code == 200, r.content
    return next((t for t in r.json()["transactions"] if t["transactional_id"] == tid), None)


def tool_describe(cluster: Cluster, tid: str) -> dict[str, str]:
    out = cluster.tool("kafka-transactions", "describe", "--transactional-id", tid).strip().splitlines()
    header, row = re.split(r"\s{2,}|\t", out[0].strip()), re.split(r"\s{2,}|\t", out[1].strip())
    return dict(zip(header, row, strict=False))


def tool_producers(cluster: Cluster, topic: str) -> dict[int, dict[str, str]]:
    out = cluster.tool("kafka-transactions", "describe-producers", "--topic", topic, "--partition", "0").strip().splitlines()
    header = re.split(r"\s{2,}|\t", out[0].strip())
    rows = [dict(zip(header, re.split(r"\s{2,}|\t", line.strip()), strict=False)) for line in out[1:]]
    return {int(r["ProducerId"]): r for r in rows}


def tool_hw(cluster: Cluster, topic: str) -> int:
    return int(cluster.tool("kafka-get-offsets", "--topic", topic, "--partitions", "0").strip().split(":")[-1])


@pytest.fixture
def hanging(kafka_cluster: Cluster, redis_server: str, settings: Any) -> Iterator[tuple[str, str]]:
    """A topic whose partition 0 holds an open transaction of a SIGKILLed producer, and its id."""
    settings.TRANSACTION_HANGING_SECONDS = 3
    topic, tid = unique("txn"), unique("txn-id")
    kafka_cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    proc = subprocess.Popen([sys.executable, "-c", PRODUCER, kafka_cluster.bootstrap, tid, topic, str(TIMEOUT_MS)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"open", proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        yield topic, tid
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        kafka_cluster.tool("kafka-topics", "--delete", "--topic", topic)


def write_plain(cluster: Cluster, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(n):
        p.produce(topic, value=b"plain-%d" % i, partition=0)
    assert p.flush(30) == 0


def read_committed(cluster: Cluster, topic: str, group: str) -> int:
    """Records a read_committed consumer reads from the start of partition 0 (until it gets no more)."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([RdTopicPartition(topic, 0, 0)])
        got, empty = 0, 0
        while empty < 3:
            batch = c.consume(100, 1.0)
            got += sum(1 for m in batch if m.error() is None)
            empty = 0 if batch else empty + 1
        return got
    finally:
        c.close()


def test_a_killed_transactional_producer_hangs_and_its_abort_from_the_console_frees_the_lso(
        kafka_cluster: Cluster, hanging: tuple[str, str]) -> None:
    topic, tid = hanging
    client = api_client()
    write_plain(kafka_cluster, topic, 10)  # behind the open transaction: the HW moves, the LSO cannot

    txn = wait_for(lambda: (t := listed(client, tid)) and t["hanging"] and t, 30, interval=1, what="the transaction hanging")
    described = tool_describe(kafka_cluster, tid)
    assert txn["state"] == described["TransactionState"] == "Ongoing"
    assert str(txn["producer_id"]) == described["ProducerId"] and str(txn["producer_epoch"]) == described["ProducerEpoch"]
    assert str(txn["timeout_ms"]) == described["TransactionTimeoutMs"] == str(TIMEOUT_MS)
    assert [f"{p['topic']}-{p['partition']}" for p in txn["partitions"]] == described["TopicPartitions"].split(",")
    listed_by_tool = kafka_cluster.tool("kafka-transactions", "list")
    assert re.search(rf"^{re.escape(tid)}\s+\d+\s+{txn['producer_id']}\s+Ongoing", listed_by_tool, re.M), listed_by_tool

    (row,) = txn["partitions"]
    producers = tool_producers(kafka_cluster, topic)
    # The LSO is the open transaction's first offset (kafka-get-offsets of this release has no isolation option)
    lso = int(producers[txn["producer_id"]]["CurrentTransactionStartOffset"])
    assert (row["lso"], row["high_watermark"]) == (lso, tool_hw(kafka_cluster, topic)) == (0, 15)
    assert row["stuck"] and row["txn_start_offset"] == 0
    ours = {p["producer_id"]: p for p in row["producers"]}
    assert set(ours) == set(producers)
    for pid, p in ours.items():
        assert str(p["producer_epoch"]) == producers[pid]["ProducerEpoch"]
        assert str(p["last_sequence"]) == producers[pid]["LastSequence"]
        assert str(p["last_timestamp"]) == producers[pid]["LastTimestamp"]
        start = producers[pid]["CurrentTransactionStartOffset"]
        assert p["current_txn_start_offset"] == (int(start) if start not in ("None", "-1") else -1)

    # The watcher's look: an event, and the alert condition's match on the stuck partition
    seen = watch.look(CLUSTER, {})
    listing.forget(CLUSTER)  # (this process's look is no watcher's: the answers below ask Kafka, or the session's watcher)
    assert tid in seen
    event = Event.objects.filter(kind="transaction_hanging", details__transactional_id=tid).get()
    assert (event.topic, event.partition, event.details["partitions"]) == (topic, 0, [f"{topic}:0"]), event.details
    (match,) = transaction_matches(CLUSTER)[topic]
    assert match.key == f"transaction:{tid}:{topic}:0" and f"'{tid}'" in match.message

    write_plain(kafka_cluster, topic, 5)  # the HW moves on, the LSO stays
    assert read_committed(kafka_cluster, topic, unique("rc")) == 0
    (row,) = wait_for(lambda: (t := listed(client, tid)) and t["partitions"][0]["high_watermark"] == 20 and t["partitions"], 10,
                      what="the HW at 20")
    assert row["lso"] == 0 and txn["hanging"]

    r = client.post(f"/api/v1/clusters/{CLUSTER}/transactions/{tid}/abort/", {"confirm": tid + "x"}, format="json")
    assert r.status_code == 400 and f"'{tid}'" in r.json()["detail"], r.content
    r = client.post(f"/api/v1/clusters/{CLUSTER}/transactions/no-such-{tid}/abort/", {"confirm": f"no-such-{tid}"}, format="json")
    assert r.status_code == 404 and "not known" in r.json()["detail"], r.content
    r = client.post(f"/api/v1/clusters/{CLUSTER}/transactions/{tid}/abort/", {"confirm": tid}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["aborted"] == [{"topic": topic, "partition": 0}]
    assert read_committed(kafka_cluster, topic, unique("rc")) == 15  # the plain records; the aborted five are skipped
    # The coordinator still thinks it open (until its own timeout), but it no longer holds the LSO: not hanging.
    after = wait_for(lambda: (t := listed(client, tid)) and not t["hanging"] and t, 10, what="the transaction no longer hanging")
    assert after["partitions"][0]["lso"] == after["partitions"][0]["high_watermark"] == tool_hw(kafka_cluster, topic) == 21
    assert tool_producers(kafka_cluster, topic)[txn["producer_id"]]["CurrentTransactionStartOffset"] == "None"
    r = client.post(f"/api/v1/clusters/{CLUSTER}/transactions/{tid}/abort/", {"confirm": tid}, format="json")
    assert r.status_code == 400 and "not hanging" in r.json()["detail"], r.content
    assert watch.look(CLUSTER, seen) == {} and transaction_matches(CLUSTER) == {}
    listing.forget(CLUSTER)
    assert Event.objects.filter(kind="transaction_ended", details__transactional_id=tid).count() == 1
    entry = AuditEntry.objects.get(action="transaction_abort", target=tid, outcome="ok")
    assert entry.details["partitions"] == [f"{topic}:0"], entry.details
