"""Kafka's reassignment JSON, as `kafka-reassign-partitions` reads and writes it: written for the
partitions a plan changes, and read back from an operator's file with every hard rule checked."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from brokers_app.placement.model import Assignment, ClusterLayout, PlanError, is_int
from console.gateway.types import TopicPartition


def reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> dict[str, Any]:
    """`{"version": 1, "partitions": [{"topic", "partition", "replicas"}]}`, by topic and partition."""
    return {
        "version": 1,
        "partitions": [
            {"topic": t, "partition": p, "replicas": list(assignment[(t, p)])} for t, p in sorted(assignment)
        ],
    }


def parse_reassignment(
    layout: ClusterLayout, data: str | bytes | Mapping[str, Any], *, allow_rf_change: bool = False
) -> Assignment:
    """Read Kafka's reassignment JSON and check it against the cluster and the hard rules.

    Refuses, with one sentence: text that is not JSON or not the format, an unknown topic, partition or
    broker, a partition listed twice or a broker listed twice in one partition, a replica count other
    than the partition's (unless `allow_rf_change`), replicas in fewer racks than possible."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise PlanError(f"The plan is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}).") from None
    if not isinstance(data, Mapping):
        raise PlanError('The plan must be a JSON object with "version" and "partitions".')
    if "version" not in data:
        raise PlanError('The plan has no "version"; Kafka\'s reassignment JSON has "version": 1.')
    if not is_int(data["version"]) or data["version"] != 1:
        raise PlanError(f'The plan has version {json.dumps(data["version"])}, but only version 1 is understood.')
    entries = data.get("partitions")
    if not isinstance(entries, list):
        raise PlanError('The plan has no "partitions" list.')
    known = {b.id for b in layout.brokers}
    result: Assignment = {}
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping):
            raise PlanError(f'Entry {n} of "partitions" is not an object.')
        topic = entry.get("topic")
        if not isinstance(topic, str) or not topic:
            raise PlanError(f'Entry {n} of "partitions" has no topic name.')
        number = entry.get("partition")
        if not isinstance(number, int) or isinstance(number, bool):
            raise PlanError(f'Entry {n} of "partitions" (topic {topic}) has no partition number.')
        name = f"{topic}-{number}"
        replicas = entry.get("replicas")
        if not isinstance(replicas, list) or not all(is_int(b) for b in replicas):
            raise PlanError(f"Partition {name} has no replica list of broker ids.")
        if not replicas:
            raise PlanError(f"Partition {name} has an empty replica list.")
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None and (not isinstance(log_dirs, list) or any(d != "any" for d in log_dirs)):
            raise PlanError(f'Partition {name} names log directories; only "any" is supported.')
        if topic not in layout.topics:
            raise PlanError(f"Topic {topic} does not exist in the cluster.")
        info = layout.by_key.get((topic, number))
        if info is None:
            numbers = [p.partition for p in layout.topics[topic]]
            raise PlanError(f"Partition {name} does not exist; topic {topic} has partitions {min(numbers)} to {max(numbers)}.")
        if (topic, number) in result:
            raise PlanError(f"Partition {name} appears twice in the plan.")
        seen: set[int] = set()
        for b in replicas:
            if b in seen:
                raise PlanError(f"Partition {name} lists broker {b} twice.")
            seen.add(b)
            if b not in known:
                raise PlanError(f"Partition {name} names broker {b}, which is not in the cluster.")
        current = len(set(info.replicas))
        if len(replicas) != current and not allow_rf_change:
            raise PlanError(
                f"Partition {name} has {len(replicas)} replicas instead of its replication factor {current}; "
                "change the replication factor with a replication factor request."
            )
        result[(topic, number)] = tuple(replicas)
    _check_racks(layout, result)
    return result


def _check_racks(layout: ClusterLayout, assignment: Mapping[TopicPartition, Sequence[int]]) -> None:
    racks = layout.racks
    if not racks or any(r is None for r in racks.values()):
        return
    # Racks of the brokers that hold replicas once the plan is applied: a plan that empties brokers
    # (a decommission) is judged on the racks left, not on those of the brokers it retires.
    after = {**layout.assignment(), **assignment}
    available = len({racks[b] for replicas in after.values() for b in replicas if b in racks})
    for (topic, number), replicas in sorted(assignment.items()):
        used = len({racks[b] for b in replicas})
        need = min(len(replicas), available)
        if used < need:
            raise PlanError(
                f"Partition {topic}-{number} puts its {len(replicas)} replicas in {used} rack{'s' if used != 1 else ''} "
                f"although {need} racks are available."
            )
