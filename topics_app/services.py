"""Use cases of the topic layout and at-risk views; they read the snapshot, not Kafka."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from console.gateway.errors import NotFound
from console.watcher.snapshot import PartitionState, Snapshot, TopicState


@dataclass
class LayoutPage:
    brokers: list[int]
    topics: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    page: int = 1
    pages: int = 1


def cell(p: PartitionState, broker: int, live: set[int]) -> str:
    """How broker `broker` takes part in partition `p`: leader, in-sync, out-of-sync, offline or none."""
    if broker not in p.replicas:
        return ""
    if broker not in live:
        return "offline"
    if broker == p.leader:
        return "leader"
    return "insync" if broker in p.isr else "outofsync"


def layout(snap: Snapshot, query: str = "", page: int = 1, per_page: int = 20, internal: bool = False) -> LayoutPage:
    brokers = sorted(snap.brokers)
    live = snap.live_broker_ids()
    needle = query.lower()
    names = sorted(n for n, t in snap.topics.items() if (internal or not t.internal) and needle in n.lower())
    pages = max(1, math.ceil(len(names) / per_page))
    page = min(max(page, 1), pages)
    result = LayoutPage(brokers=brokers, total=len(names), page=page, pages=pages)
    for name in names[(page - 1) * per_page : page * per_page]:
        t = snap.topics[name]
        result.topics.append(
            {
                "name": name,
                "internal": t.internal,
                "replication_factor": t.replication_factor,
                "min_isr": t.min_isr,
                "partitions": [
                    {
                        "partition": p.partition,
                        "leader": p.leader,
                        "replicas": p.replicas,
                        "isr": p.isr,
                        "offline": p.offline,
                        "under_replicated": p.under_replicated,
                        "under_min_isr": p.under_min_isr(t.min_isr),
                        "cells": [cell(p, b, live) for b in brokers],
                    }
                    for p in t.partitions
                ],
            }
        )
    return result


def topic(snap: Snapshot, name: str) -> TopicState:
    found = snap.topics.get(name)
    if found is None:
        raise NotFound(f"Topic '{name}' does not exist on cluster '{snap.cluster}'.")
    return found


def partitions(snap: Snapshot, name: str) -> list[dict[str, Any]]:
    t = topic(snap, name)
    return [
        {
            "partition": p.partition,
            "leader": None if p.offline else p.leader,
            "replicas": p.replicas,
            "isr": p.isr,
            "offline_replicas": p.offline_replicas,
            "preferred_leader": p.preferred_leader,
            "offline": p.offline,
            "under_replicated": p.under_replicated,
            "under_min_isr": p.under_min_isr(t.min_isr),
            "start_offset": p.start_offset,
            "end_offset": p.end_offset,
        }
        for p in t.partitions
    ]
