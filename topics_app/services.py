"""Use cases of the topic layout and at-risk views; they read the snapshot, not Kafka."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console import gateway
from console.auth import may, require
from console.errors import BadParameter, Forbidden
from console.gateway.errors import ClusterUnavailable, NotFound
from console.gateway.types import ConfigValue
from console.listing import ordered, paginate, search
from console.snapshots import store
from console.snapshots.model import PartitionState, Snapshot, TopicState, TopicTally, tallied
from topics_app import data_loss
from topics_app.validation import check_counts, check_topic_name


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
            "messages": p.messages,
            "size": p.size,
            "replica_sizes": p.replica_sizes,
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


# Per cluster: the version's key, its rows, and per topic what its row was made from (the topic, its groups) with the row.
_rows_cache: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]], dict[str, tuple[TopicState, list[str], dict[str, Any]]]]] = {}


def topic_rows(snap: Snapshot) -> list[dict[str, Any]]:
    """One summary row per topic, computed once per snapshot version and reused by every request.
    A topic's row is made from its TopicState's tally (`tallied`, shared with the overview) and the
    groups reading it only: one whose TopicState is the object of the version before (the store keeps
    what did not change) and whose groups are the same keeps its row (at 300,000 partitions every
    row made again took 0.3 s a version)."""
    key = (snap.version, snap.offsets_at)
    held = _rows_cache.get(snap.cluster)
    if held is not None and held[0] == key:
        return held[1]
    before = held[2] if held is not None else {}
    tallies: dict[str, tuple[TopicState, TopicTally]] | None = None
    rows = []
    made = {}
    for name, t in snap.topics.items():
        groups = snap.topic_groups.get(name, [])
        seen = before.get(name)
        if seen is None or seen[0] is not t or seen[1] != groups:
            if tallies is None:
                tallies = tallied(snap)[0]
            seen = (t, groups, _row(snap, t, tallies[name][1]))
        made[name] = seen
        rows.append(seen[2])
    _rows_cache[snap.cluster] = (key, rows, made)
    return rows


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
    if snap.topics.get(name) is t:
        return next(r for r in topic_rows(snap) if r["name"] == name)
    return _row(snap, t)


def topics_page(snap: Snapshot, *, query: str = "", regex: bool = False, sort: str = "name", descending: bool = False,
                page: int = 1, per_page: int = 50, internal: bool = False,
                visible: Callable[[str], bool] | None = None) -> TopicsPage:
    """`visible`: the topic names the user may see (None: all of them), cut before the count and the pages."""
    if sort not in SORTS:
        raise BadParameter(f"'sort' must be one of {', '.join(SORTS)}, not '{sort[:50]}'.")
    every = topic_rows(snap)

    def build() -> list[dict[str, Any]]:
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


# Changes (operator or admin; every one audited) ---------------------------------------------------


@dataclass
class Outcome:
    dry_run: bool
    message: str
    details: dict[str, Any] = field(default_factory=dict)


def _snapshot(cluster: str) -> Snapshot:
    from console.snapshots import live

    snap = live(cluster).snapshot
    if snap is None or not snap.reachable:
        raise ClusterUnavailable(f"Cluster '{cluster}' is not reachable right now; nothing was changed.")
    return snap


def create_topic(user: Any, cluster: str, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
                 dry_run: bool) -> Outcome:
    require(user, "topic.create", cluster, topic=name)  # (a scoped user creates only names in their scope)
    snap = _snapshot(cluster)
    check_topic_name(name, snap.topics)
    check_counts(partitions, replication_factor, len(snap.live_broker_ids()))

    def run() -> Outcome:
        gateway.for_cluster(cluster).create_topic(name, partitions, replication_factor, configs, validate_only=dry_run)
        if not dry_run:
            store.note_change(cluster, {f"topic:{name}": partitions})
        verb = "Kafka accepts" if dry_run else "Created"
        return Outcome(dry_run, f"{verb} topic '{name}' with {partitions} partition{'s' if partitions != 1 else ''}, "
                                f"replication factor {replication_factor}.")

    return run()  # audited by the caller (console.audit.audited)


def topic_configs(cluster: str, name: str) -> list[ConfigValue]:
    return gateway.for_cluster(cluster).describe_topic_configs(name)


def config_diff(current: list[ConfigValue], set_values: dict[str, str], delete: list[str]) -> list[dict[str, Any]]:
    by_name = {c.name: c for c in current}
    both = sorted(set(set_values) & set(delete))
    if both:
        raise BadParameter(f"Config {both[0]} is both set and removed; name it in one of the two; nothing was changed.")
    unknown = sorted((set(set_values) | set(delete)) - by_name.keys())
    if unknown:
        raise BadParameter(f"Unknown topic config{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}.")
    read_only = sorted(k for k in set_values if by_name[k].is_read_only)
    if read_only:
        raise BadParameter(f"Read-only config{'s' if len(read_only) > 1 else ''}: {', '.join(read_only)}.")
    diff = []
    for key, value in sorted(set_values.items()):
        old = by_name[key]
        if old.value != value or not old.overridden:
            diff.append({"name": key, "old": old.value, "new": value, "old_source": old.source})
    for key in sorted(delete):
        old = by_name[key]
        if old.overridden:
            diff.append({"name": key, "old": old.value, "new": None, "old_source": old.source})
    return diff


def alter_configs(user: Any, cluster: str, name: str, set_values: dict[str, str], delete: list[str], dry_run: bool) -> Outcome:
    """Change only the keys named: `set_values` set, `delete` returned to their default. A key whose
    value is already the one asked for is not sent, so Kafka changes exactly what the diff shows.
    A change that deletes records the topic holds now (`data_loss`) needs the delete role."""
    t = topic(_snapshot(cluster), name)
    gw = gateway.for_cluster(cluster)
    current = gw.describe_topic_configs(name)
    diff = config_diff(current, set_values, delete)
    changed = {d["name"] for d in diff}
    set_values = {k: v for k, v in set_values.items() if k in changed}
    delete = [k for k in delete if k in changed]
    deleting = data_loss.deleting_changes(
        current, set_values, delete, holds_older_than=lambda ms: _holds_older_than(cluster, t, ms),
        holds_more_than=lambda size: any(p.size is None or p.size > size for p in t.partitions))
    # Whoever may delete the topic may delete its records this way too; nobody else.
    if deleting and not may(user, "topic.delete", cluster, topic=name):
        raise Forbidden(f"This change deletes records topic '{name}' holds now ({'; '.join(deleting)}), so it needs the "
                        "right to delete the topic (the topic.delete action, which admins have); nothing was changed.")

    def run() -> Outcome:
        if not diff:
            return Outcome(dry_run, "Nothing to change: the configs already have these values.", {"diff": []})
        # Kafka validates first (dry run) either way, so a bad value never half-applies.
        gw.alter_topic_configs(name, set_values, delete, validate_only=True)
        if not dry_run:
            gw.alter_topic_configs(name, set_values, delete, validate_only=False)
        verb = "Kafka accepts" if dry_run else "Applied"
        warning = f" It deletes records the topic holds now: {'; '.join(deleting)}." if deleting else ""
        details: dict[str, Any] = {"diff": diff, **({"deletes_records": deleting} if deleting else {})}
        return Outcome(dry_run, f"{verb} {len(diff)} config change{'s' if len(diff) != 1 else ''} to topic '{name}'.{warning}",
                       details)

    return run()  # audited by the caller (console.audit.audited)


def _holds_older_than(cluster: str, t: TopicState, ms: int) -> bool:
    """Some partition holds a record older than `ms`: Kafka's first offset at the cutoff time lies past its start."""
    gw = gateway.for_cluster(cluster)
    scope = [(t.name, p.partition) for p in t.partitions]
    starts = gw.list_offsets(scope, "earliest")
    cutoff = gw.offsets_for_time(scope, int(time.time() * 1000) - ms)
    return any(cutoff.get(tp, 0) > starts.get(tp, 0) for tp in scope)


def add_partitions(user: Any, cluster: str, name: str, total: int, dry_run: bool) -> Outcome:
    current = len(topic(_snapshot(cluster), name).partitions)
    if total <= current:
        raise BadParameter(f"Topic '{name}' has {current} partitions; the new count must be more than that, not {total}.")

    def run() -> Outcome:
        gateway.for_cluster(cluster).add_partitions(name, total, validate_only=dry_run)
        if not dry_run:
            store.note_change(cluster, {f"topic:{name}": total})
        verb = "Kafka accepts going" if dry_run else "Went"
        return Outcome(dry_run, f"{verb} from {current} to {total} partitions on topic '{name}'. Keys now map to "
                                "different partitions: per-key ordering holds only for messages written from now on.",
                       {"old": current, "new": total})

    return run()  # audited by the caller (console.audit.audited)


def purge_records(user: Any, cluster: str, name: str, before: dict[int, int], everything: bool, dry_run: bool) -> Outcome:
    """Delete records below an offset per partition named in `before` (-1: all of that partition), or
    every record of every partition with `everything`. One of the two must be asked for explicitly:
    a purge that names nothing deletes nothing (it used to mean everything)."""
    if everything and before:
        raise BadParameter("Give either the partitions and offsets to delete below ('offsets') or every record ('all'), "
                           "not both; nothing was deleted.")
    if not everything and not before:
        raise BadParameter("Name the partitions and the offsets to delete below ('offsets'), or ask for every record of "
                           "every partition explicitly ('all'); nothing was deleted.")
    t = topic(_snapshot(cluster), name)
    numbers = [p.partition for p in t.partitions]
    if everything:
        before = dict.fromkeys(numbers, -1)
    for n in before:
        if n not in numbers:
            raise BadParameter(f"Topic '{name}' has no partition {n}; it has 0-{len(numbers) - 1}.")
    # An action may ask Kafka: the offsets must be the current ones, not the last sample's.
    gw = gateway.for_cluster(cluster)
    ends = gw.list_offsets([(name, n) for n in before], "latest")
    starts = gw.list_offsets([(name, n) for n in before], "earliest")
    for n, offset in before.items():
        end, start = ends.get((name, n), 0), starts.get((name, n), 0)
        if offset < -1 or offset > end:
            raise BadParameter(f"Offset {offset} is outside partition {n} (offsets {start} to {end}); use -1 for all.")

    def run() -> Outcome:
        if dry_run:
            count = sum(
                max(0, ends.get((name, n), 0) - starts.get((name, n), 0)) if o == -1 else max(0, o - starts.get((name, n), 0))
                for n, o in before.items()
            )
            return Outcome(True, f"About {count} records of topic '{name}' would be deleted from "
                                 f"{len(before)} partition{'s' if len(before) != 1 else ''}.", {"records": count})
        low = gateway.for_cluster(cluster).delete_records(name, before)
        store.note_change(cluster, {f"offsets:{name}": 1})
        return Outcome(False, f"Deleted records of topic '{name}'; partitions now start at "
                              + ", ".join(f"{p}: {o}" for p, o in sorted(low.items())) + ".",
                       {"start_offsets": {str(p): o for p, o in low.items()}})

    return run()  # audited by the caller (console.audit.audited)


def delete_topic(user: Any, cluster: str, name: str, confirmation: str) -> Outcome:
    topic(_snapshot(cluster), name)
    if confirmation != name:
        raise BadParameter(f"To delete topic '{name}', type its name exactly; nothing was deleted.")

    def run() -> Outcome:
        gateway.for_cluster(cluster).delete_topic(name)
        store.note_change(cluster, {f"topic:{name}": 0})
        return Outcome(False, f"Deleted topic '{name}'.")

    return run()  # audited by the caller (console.audit.audited)


def topic_group_lags(snap: Snapshot, name: str, visible: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
    """The consumer groups of a topic with their lag on it: max(0, end offset - committed) summed
    over the partitions they committed; a partition assigned but never committed is 'unknown'.
    `visible`: the group ids the user may see (None: all)."""
    t = topic(snap, name)
    ends = {p.partition: p.end_offset for p in t.partitions}
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
