"""Builders of cluster layouts and counts over assignments, shared by the placement tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from brokers_app.placement.model import Broker, ClusterLayout, PartitionInfo
from brokers_app.placement.result import Plan


def cluster(brokers: Mapping[int, str | None] | Iterable[int], *partitions: tuple[Any, ...]) -> ClusterLayout:
    """partitions: (topic, partition, replicas, size[, leader]); leader defaults to the first replica."""
    racks = dict(brokers) if isinstance(brokers, Mapping) else {b: None for b in brokers}
    infos = []
    for t, n, replicas, size, *leader in partitions:
        infos.append(PartitionInfo(t, n, tuple(replicas), leader[0] if leader else replicas[0], size))
    return ClusterLayout(tuple(Broker(b, r) for b, r in sorted(racks.items())), tuple(infos))


def round_robin(topic_name: str, partitions: int, rf: int, brokers: Sequence[int], size: int = 100, start: int = 0) -> list[tuple[Any, ...]]:
    """A balanced layout: leaders round-robin, followers on the next brokers."""
    n = len(brokers)
    return [
        (topic_name, p, [brokers[(p + start + i) % n] for i in range(rf)], size + p)
        for p in range(partitions)
    ]


def replica_counts(assignment: Mapping[tuple[str, int], Sequence[int]]) -> Counter[int]:
    return Counter(b for replicas in assignment.values() for b in replicas)


def leader_counts(assignment: Mapping[tuple[str, int], Sequence[int]]) -> Counter[int]:
    return Counter(replicas[0] for replicas in assignment.values())


def after_all(layout: ClusterLayout, p: Plan) -> dict[tuple[str, int], tuple[int, ...]]:
    result = layout.assignment()
    result.update(p.assignment())
    return result
