"""What changed between two snapshots of a cluster, as events; pure, no I/O."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not
from typing import Any

from console.snapshots.model import PartitionState, Snapshot, TopicState

INFO, WARNING, CRITICAL = "info", "warning", "critical"

# Every kind of event, with a short label for filters.
KINDS = {
    "cluster_unreachable": "Cluster unreachable",
    "cluster_reachable": "Cluster reachable",
    "broker_down": "Broker down",
    "broker_up": "Broker up",
    "broker_unreachable": "Broker unreachable from the console",
    "broker_reachable": "Broker reachable again",
    "broker_added": "Broker added",
    "controller_change": "Controller change",
    "leader_change": "Leader change",
    "isr_shrink": "ISR shrink",
    "isr_expand": "ISR expand",
    "isr_about_to_shrink": "ISR about to shrink (a follower's lag growing)",  # (watcher/replica_lag.py)
    "partition_offline": "Partition offline",
    "partition_online": "Partition online",
    "under_replicated": "Under-replicated",
    "fully_replicated": "Fully replicated",
    "under_min_isr": "Under min ISR",
    "min_isr_restored": "Min ISR restored",
    "topic_created": "Topic created",
    "topic_deleted": "Topic deleted",
    "partitions_added": "Partitions added",
    "rebalance": "Consumer group rebalance",
    "balance": "Balance (replica or leader skew)",
    "analytics": "Analytics samples",
    "watcher": "Watcher restarted",
    "alerts": "Alert channel failing or delivering again",
    "connect_task_restarted": "Connect task auto-restarted",  # (connect_app/restarts.py)
    "connect_task_gave_up": "Connect task auto-restart gave up",
    "transaction_hanging": "Transaction hanging",  # (transactions_app/watch.py)
    "transaction_ended": "Transaction no longer hanging",
}


@dataclass(frozen=True)
class Change:
    kind: str
    severity: str
    message: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    details: dict[str, Any] = field(default_factory=dict)


def diff(old: Snapshot | None, new: Snapshot) -> list[Change]:
    if old is None:
        return []
    changes: list[Change] = []
    if old.reachable and not new.reachable:
        return [Change("cluster_unreachable", CRITICAL, f"Cluster unreachable: {new.error or 'no broker answered'}")]
    if not new.reachable:
        return []
    if not old.reachable and old.taken_at is not None:
        changes.append(Change("cluster_reachable", INFO, "Cluster reachable again"))
    if old.taken_at is None:
        return changes  # nothing known before to compare with
    changes += _brokers(old, new)
    if old.controller_id is not None and new.controller_id is not None and old.controller_id != new.controller_id:
        changes.append(
            Change(
                "controller_change",
                WARNING,
                f"Active controller moved from node {old.controller_id} to node {new.controller_id}",
                broker=new.controller_id,
                details={"old": old.controller_id, "new": new.controller_id},
            )
        )
    for name in sorted(new.topics.keys() - old.topics.keys()):
        t = new.topics[name]
        changes.append(
            Change(
                "topic_created",
                INFO,
                f"Topic {name} created with {len(t.partitions)} partitions, replication factor {t.replication_factor}",
                topic=name,
                details={"partitions": len(t.partitions), "replication_factor": t.replication_factor},
            )
        )
    for name in sorted(old.topics.keys() - new.topics.keys()):
        changes.append(Change("topic_deleted", WARNING, f"Topic {name} deleted", topic=name))
    olds = old.topics
    # The watcher carries a topic whose metadata did not change over as it is: only the others are
    # looked at (and sorted), not every topic of the cluster each cycle.
    names = list(new.topics)  # (the objects compared in C: map, compress; not a step per topic in Python)
    for name in sorted([name for name in compress(names, map(is_not, new.topics.values(), map(olds.get, names))) if name in olds]):
        changes += _topic(olds[name], new.topics[name])
    return changes


def _brokers(old: Snapshot, new: Snapshot) -> list[Change]:
    changes = []
    for bid in sorted(new.brokers):
        b = new.brokers[bid]
        before = old.brokers.get(bid)
        where = f"{b.host}:{b.port}"
        if before is None:
            if b.up:
                changes.append(Change("broker_added", INFO, f"Broker {bid} ({where}) registered", broker=bid))
        elif before.up and not b.up:
            changes.append(Change("broker_down", CRITICAL, f"Broker {bid} ({where}) is down", broker=bid))
        elif not before.up and b.up:
            changes.append(Change("broker_up", INFO, f"Broker {bid} ({where}) is back up", broker=bid))
        # Kafka still lists it, but its port refuses the console (watcher.reachability): the first
        # sign of a dead broker, before the controller fences it; told apart from down and up.
        elif b.up and before.reachable and not b.reachable:
            changes.append(Change("broker_unreachable", CRITICAL,
                                  f"Broker {bid} ({where}) does not accept the console's connections: it is probably down, "
                                  "and Kafka has not fenced it yet", broker=bid))
        elif b.up and not before.reachable and b.reachable:
            changes.append(Change("broker_reachable", INFO, f"Broker {bid} ({where}) accepts the console's connections again",
                                  broker=bid))
    return changes


def _topic(old: TopicState, new: TopicState) -> list[Change]:
    changes = []
    if len(new.partitions) > len(old.partitions):
        changes.append(
            Change(
                "partitions_added",
                INFO,
                f"Topic {new.name}: partitions {len(old.partitions)} -> {len(new.partitions)}",
                topic=new.name,
                details={"old": len(old.partitions), "new": len(new.partitions)},
            )
        )
    olds = old.partitions
    before: dict[int, PartitionState] | None = None  # (by number: only when a place does not match)
    same_min = old.min_isr == new.min_isr
    news = new.partitions
    # A partition carried over is the same object: with the same min ISR and as many partitions,
    # only the places holding another object are looked at.
    places: Iterable[int] = compress(range(len(news)), map(is_not, olds, news)) \
        if same_min and len(olds) == len(news) else range(len(news))
    for i in places:
        p = news[i]
        q: PartitionState | None = olds[i] if i < len(olds) else None
        if q is None or q.partition != p.partition:
            if before is None:
                before = {x.partition: x for x in olds}
            q = before.get(p.partition)
        if q is None or (same_min and (q is p or (q.leader == p.leader and q.isr == p.isr and q.replicas == p.replicas))):
            continue  # nothing an event is made of changed (offsets and sizes make none)
        changes += _partition(new.name, q, p, old.min_isr, new.min_isr)
    return changes


def _partition(topic: str, old: PartitionState, new: PartitionState, old_min: int | None, new_min: int | None) -> list[Change]:
    if old_min == new_min and old.isr == new.isr and old.replicas == new.replicas:
        # A leader moved alone (the most common change, by far): its one event, nothing else looked at.
        if old.leader == new.leader:
            return []
        tp = f"{topic}-{new.partition}"
        if new.offline:
            return [Change("partition_offline", CRITICAL, f"{tp} is offline: no leader (was {old.leader})",
                           topic=topic, partition=new.partition, broker=old.leader, details={"old": old.leader})]
        if old.offline:
            return [Change("partition_online", INFO, f"{tp} is online again, leader {new.leader}",
                           topic=topic, partition=new.partition, broker=new.leader, details={"new": new.leader})]
        return [Change("leader_change", WARNING, f"{tp} leader {old.leader} -> {new.leader}", topic=topic,
                       partition=new.partition, broker=new.leader, details={"old": old.leader, "new": new.leader})]
    return _partition_all(topic, old, new, old_min, new_min)


def _partition_all(topic: str, old: PartitionState, new: PartitionState, old_min: int | None, new_min: int | None) -> list[Change]:
    """`_partition`, every kind of event looked at."""
    tp = f"{topic}-{new.partition}"
    out: list[Change] = []

    def add(kind: str, severity: str, message: str, broker: int | None = None, **details: Any) -> None:
        out.append(Change(kind, severity, message, topic=topic, partition=new.partition, broker=broker, details=details))

    if old.leader != new.leader:
        if new.offline:
            add("partition_offline", CRITICAL, f"{tp} is offline: no leader (was {old.leader})", old.leader, old=old.leader)
        elif old.offline:
            add("partition_online", INFO, f"{tp} is online again, leader {new.leader}", new.leader, new=new.leader)
        else:
            add("leader_change", WARNING, f"{tp} leader {old.leader} -> {new.leader}", new.leader, old=old.leader, new=new.leader)
    removed = [r for r in old.isr if r not in new.isr]
    added = [r for r in new.isr if r not in old.isr]
    if removed:
        add("isr_shrink", WARNING, f"{tp} ISR shrank: {old.isr} -> {new.isr} (lost {removed})",
            removed[0] if len(removed) == 1 else None, old=old.isr, new=new.isr, removed=removed)
    if added:
        add("isr_expand", INFO, f"{tp} ISR expanded: {old.isr} -> {new.isr} (rejoined {added})",
            added[0] if len(added) == 1 else None, old=old.isr, new=new.isr, added=added)
    if new.under_replicated and not old.under_replicated:
        add("under_replicated", WARNING, f"{tp} under-replicated: ISR {new.isr} of replicas {new.replicas}",
            isr=new.isr, replicas=new.replicas)
    elif old.under_replicated and not new.under_replicated:
        add("fully_replicated", INFO, f"{tp} fully replicated again: ISR {new.isr}", isr=new.isr, replicas=new.replicas)
    was_under, is_under = old.under_min_isr(old_min), new.under_min_isr(new_min)
    if is_under and not was_under:
        add("under_min_isr", CRITICAL, f"{tp} under min ISR: {len(new.isr)} in sync, min.insync.replicas={new_min}",
            isr=new.isr, min_isr=new_min)
    elif was_under and not is_under and new_min is not None:
        add("min_isr_restored", INFO, f"{tp} back at or above min ISR ({len(new.isr)} >= {new_min})",
            isr=new.isr, min_isr=new_min)
    return out
