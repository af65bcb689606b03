"""The producers of a topic: each partition's active producers as its leader keeps them (DescribeProducers,
as `kafka-transactions describe-producers` shows them): producer id and epoch, the last sequence and
timestamp it wrote, its coordinator epoch and the first offset of its open transaction there.

Brokers keep these in memory per partition, not in any snapshot, so the page asks the leaders when it
is opened: one DescribeProducers per leader, for one topic only.
"""

from __future__ import annotations

from typing import Any

from console import gateway, snapshots
from console.errors import BadParameter
from console.gateway.errors import NotFound
from console.gateway.transactions import ActiveProducer
from topics_app.validation import check_topic_name


def _partitions(cluster: str, topic: str) -> list[int]:
    """The topic's partitions from the watcher's snapshot, or from Kafka for a topic it does not show yet."""
    snap = snapshots.watched(cluster).snapshot
    found = snap.topics.get(topic) if snap is not None else None
    if found is not None:
        return sorted(p.partition for p in found.partitions)
    try:
        check_topic_name(topic)
    except BadParameter:  # (a name Kafka could not have: no need to ask)
        raise NotFound(f"Topic '{topic}' does not exist on cluster '{cluster}'.") from None
    return sorted(p.partition for p in gateway.for_cluster(cluster).topic_metadata(topic).partitions)


def _row(p: ActiveProducer) -> dict[str, Any]:
    return {"producer_id": p.producer_id, "producer_epoch": p.producer_epoch, "last_sequence": p.last_sequence,
            "last_timestamp": p.last_timestamp if p.last_timestamp >= 0 else None, "coordinator_epoch": p.coordinator_epoch,
            "current_txn_start_offset": p.txn_start_offset if p.txn_start_offset >= 0 else None}


def topic_producers(cluster: str, topic: str) -> dict[str, Any]:
    """Each partition of `topic` with its active producers (by producer id) and their count."""
    numbers = _partitions(cluster, topic)
    answer = gateway.for_cluster(cluster).producers([(topic, n) for n in numbers]) if numbers else {}
    got = {n: answer.get((topic, n), []) for n in numbers}
    rows = {n: [_row(p) for p in sorted(a or [], key=lambda p: p.producer_id)] for n, a in got.items()}
    return {"topic": topic,
            "partitions": [{"partition": n, "producers": r, "answered": got[n] is not None} for n, r in rows.items()],
            "unanswered": [n for n, a in got.items() if a is None],
            "producers": sum(len(r) for r in rows.values()),
            "in_transaction": sum(1 for r in rows.values() for p in r if p["current_txn_start_offset"] is not None)}
