"""What the topic pages and API show, read from the watcher's snapshot (Kafka is asked only about a
topic the snapshot does not show yet)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from console import gateway
from console.errors import BadParameter
from console.gateway.errors import ClusterUnavailable, NotFound
from console.listing import ordered, paginate, search
from console.snapshots import PartitionState, Snapshot, TopicState, TopicTally, replica_lag
from topics_app.validation import check_topic_name
from transactions_app import stable


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


def lag_grid(p: PartitionState, brokers: list[int], live: set[int]) -> list[dict[str, Any]]:
    """The layout grid's cells of `p` with each replica's lag (bytes behind its leader) and its colour."""
    lags = replica_lag.replica_lags(p)
    leader_size = p.replica_sizes.get(str(p.leader)) if p.leader >= 0 else None
    return [{"cell": cell(p, b, live), "behind": lags.get(b),
             "level": replica_lag.lag_level(lags.get(b), leader_size) if b in lags and b != p.leader else ""} for b in brokers]


def layout(snap: Snapshot, query: str = "", page: int = 1, per_page: int = 20, internal: bool = False,
           visible: Callable[[str], bool] | None = None) -> LayoutPage:
    """`visible`: the topic names the user may see (None: all of them)."""
    brokers = sorted(snap.brokers)
    live = snap.live_broker_ids()
    needle = query.lower()
    names = sorted(n for n, t in snap.topics.items() if (internal or not t.internal) and needle in n.lower()
                   and (visible is None or visible(n)))
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
                        "grid": lag_grid(p, brokers, live),
                    }
                    for p in t.partitions
                ],
            }
        )
    return result


_absent: dict[tuple[str, str], float] = {}  # (cluster, topic) -> until when Kafka said "no such topic"


def topic(snap: Snapshot, name: str) -> TopicState:
    """A topic from the snapshot or, when the snapshot does not show it yet (created a moment ago,
    by the console or anyone else), from Kafka: a topic Kafka has is never a 404. A name Kafka does
    not have either is remembered for two seconds, so live pages of a deleted topic cost Kafka little."""
    found = snap.topics.get(name)
    if found is not None:
        return found
    key = (snap.cluster, name)
    if _absent.get(key, 0.0) < time.monotonic() and snap.reachable and _could_exist(name):
        try:
            meta = gateway.for_cluster(snap.cluster).topic_metadata(name)
        except NotFound:
            _absent[key] = time.monotonic() + 2.0
        except ClusterUnavailable:
            pass
        else:
            live = snap.live_broker_ids()
            return TopicState(name, meta.internal, [
                PartitionState(p.partition, p.leader, list(p.replicas), list(p.isr), [r for r in p.replicas if r not in live])
                for p in meta.partitions
            ])
    raise NotFound(f"Topic '{name}' does not exist on cluster '{snap.cluster}'.")


def _could_exist(name: str) -> bool:
    """A name Kafka would refuse to create cannot name a topic: no need to ask."""
    try:
        check_topic_name(name)
    except BadParameter:
        return False
    return True


def partitions(snap: Snapshot, name: str) -> list[dict[str, Any]]:
    t = topic(snap, name)
    held = {p: h for (topic_name, p), h in stable.held(snap.cluster).items() if topic_name == name}
    kept, silent = replica_lag.streaks(snap.cluster), replica_lag.silent_brokers(snap.cluster)
    futures = replica_lag.future_lags(snap.cluster)
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
            "last_stable_offset": stable.stable_offset(held.get(p.partition), p.end_offset),
            "held_by": held[p.partition].transactional_id if p.partition in held else None,
            "messages": p.messages,
            "size": p.size,
            "replica_sizes": p.replica_sizes,
            "replica_lag": replica_lag.partition_lags(p, kept, silent, name, futures),
        }
        for p in t.partitions
    ]


# Topics list --------------------------------------------------------------------------------------

SORTS = {
    "name": "name",
    "partitions": "partitions",
    "replication_factor": "replication factor",
    "size": "size",
    "messages": "messages",
    "produce_rate": "produce rate",
    "under_replicated": "under-replicated",
}


@dataclass
class TopicsPage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    per_page: int


# Per cluster: the version's key, its rows, per topic what its row was made from (the topic, its
# groups) with the row, and the version's topics.
_rows_cache: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]], dict[str, tuple[TopicState, list[str], dict[str, Any]]],
                             Mapping[str, TopicState]]] = {}


def topic_rows(snap: Snapshot) -> list[dict[str, Any]]:
    """One summary row per topic, computed once per snapshot version and reused by every request.
    A topic's row is made from its TopicState's tally and the groups reading it only: one whose
    TopicState is the object of the version before (the store keeps what did not change) and whose
    groups are the same keeps its row. What a version changed is found by comparing the two
    versions' topics by identity (a pass in C), not a step per topic in Python."""
    key = (snap.version, snap.offsets_at)
    held = _rows_cache.get(snap.cluster)
    if held is not None and held[0] == key:
        return held[1]
    topics, topic_groups = snap.topics, snap.topic_groups
    before, topics_before = (held[2], held[3]) if held is not None else ({}, {})
    changed = [name for name, t in topics.items() if topics_before.get(name) is not t]
    # (the groups of a topic come with the header, new lists each version: compared by value)
    changed.extend(name for name, seen in before.items() if seen[1] != topic_groups.get(name, []) and name in topics)
    made = dict(before)
    for name in before.keys() - topics.keys():
        del made[name]
    for name in changed:
        t = topics[name]
        made[name] = (t, topic_groups.get(name, []), _row(snap, t))
    rows = [made[name][2] for name in topics]
    _rows_cache[snap.cluster] = (key, rows, made, topics)
    return rows


class _NameIndex:
    """A cluster's topic names in order and lowercased (what a search by name compares), kept while
    the set of names is the same: a search then scans a prepared list instead of lowering and
    sorting every name on each request."""

    __slots__ = ("lowered", "names", "of")

    def __init__(self, topics: Mapping[str, TopicState]) -> None:
        self.of = set(topics)
        self.names = sorted(self.of)
        self.lowered = [name.lower() for name in self.names]

    def matching(self, query: str) -> list[str]:
        """The names holding `query` (any case), in order."""
        needle = query.lower()
        if not needle:
            return self.names
        return [name for name, low in zip(self.names, self.lowered, strict=True) if needle in low]


_name_index: dict[str, _NameIndex] = {}


def name_index(snap: Snapshot) -> _NameIndex:
    held = _name_index.get(snap.cluster)
    if held is None or len(held.of) != len(snap.topics) or held.of != snap.topics.keys():
        held = _name_index[snap.cluster] = _NameIndex(snap.topics)
    return held


def _row(snap: Snapshot, t: TopicState, tally: TopicTally | None = None) -> dict[str, Any]:
    tally = tally if tally is not None else TopicTally.of(t)
    return {
        "name": t.name,
        "internal": t.internal,
        "partitions": tally.partitions,
        "replication_factor": tally.replication_factor,
        "min_isr": t.min_isr,
        "under_replicated": tally.under_replicated,
        "offline": tally.offline,
        "under_min_isr": tally.under_min_isr,
        "size": tally.size,
        "messages": tally.messages,
        "produce_rate": t.produce_rate,
        "groups": snap.topic_groups.get(t.name, []),
    }


def topic_summary(snap: Snapshot, name: str) -> dict[str, Any]:
    """A topic's row of the topics list, also for a topic only Kafka knows yet (see `topic`)."""
    t = topic(snap, name)
    held = _rows_cache.get(snap.cluster)
    seen = held[2].get(name) if held is not None else None
    # (the list's row while the topic and its groups are what it was made from: one topic's answer
    # never makes the whole list's rows)
    if seen is not None and seen[0] is t and seen[1] == snap.topic_groups.get(name, []):
        return seen[2]
    return _row(snap, t)


def topics_page(snap: Snapshot, *, query: str = "", regex: bool = False, sort: str = "name", descending: bool = False,
                page: int = 1, per_page: int = 50, internal: bool = False,
                visible: Callable[[str], bool] | None = None) -> TopicsPage:
    """`visible`: the topic names the user may see (None: all of them), cut before the count and the pages."""
    if sort not in SORTS:
        raise BadParameter(f"'sort' must be one of {', '.join(SORTS)}, not '{sort[:50]}'.")
    every = topic_rows(snap)

    def build() -> list[dict[str, Any]]:
        if sort == "name" and not regex:  # (from the names in order: nothing to sort)
            made = _rows_cache[snap.cluster][2]
            rows = [made[name][2] for name in name_index(snap).matching(query)]
            rows = [r for r in rows if (internal or not r["internal"]) and (visible is None or visible(r["name"]))]
            return rows[::-1] if descending else rows
        rows = every if internal else [r for r in every if not r["internal"]]
        if visible is not None:
            rows = [r for r in rows if visible(r["name"])]
        rows = search(rows, "name", query, regex)
        if sort == "name":
            return sorted(rows, key=lambda r: r["name"], reverse=descending)
        known = [r for r in rows if r[sort] is not None]
        unknown = [r for r in rows if r[sort] is None]
        known.sort(key=lambda r: (r[sort], r["name"]), reverse=descending)
        return known + sorted(unknown, key=lambda r: r["name"])  # unknown values last either way

    rows = ordered("topics", snap.cluster, every, (query, regex, internal, sort, descending, getattr(visible, "key", None)), build)
    shown, page, pages = paginate(rows, page, per_page)
    return TopicsPage(rows=shown, total=len(rows), page=page, pages=pages, per_page=per_page)


def topic_group_lags(snap: Snapshot, name: str, visible: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
    """The consumer groups of a topic with their lag on it: max(0, end offset - committed) summed
    over the partitions they committed; a partition assigned but never committed is 'unknown'.
    `visible`: the group ids the user may see (None: all)."""
    t = topic(snap, name)
    ends = t.end_offsets()
    rows = []
    for gid in snap.topic_groups.get(name, []):
        g = snap.groups.get(gid)
        if g is None or (visible is not None and not visible(gid)):
            continue
        lag, committed, unknown = 0, 0, 0
        for key, offset in g.offsets.items():
            topic_name, _, part = key.rpartition(":")
            end = ends.get(int(part))
            if topic_name != name:
                continue
            committed += 1
            if end is None:
                unknown += 1
            else:
                lag += max(0, end - offset)
        assigned = {a[1] for m in g.members for a in m.assignment if a[0] == name}
        unknown += len(assigned - {int(k.rpartition(":")[2]) for k in g.offsets if k.rpartition(":")[0] == name})
        rows.append({"group": gid, "state": g.state, "members": len(g.members), "lag": lag,
                     "partitions": committed, "unknown_partitions": unknown})
    return rows
