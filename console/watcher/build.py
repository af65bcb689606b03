"""A snapshot built from what Kafka answered in a metadata cycle (build_snapshot, pure): the state
of what changed is made anew, the rest carried over from the previous snapshot as the same objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from itertools import compress
from operator import attrgetter, not_
from typing import Any, cast

from console.gateway.types import ClusterMetadata, PartitionRow, PartitionTable, Quorum, Topic, partition_rows
from console.snapshots.model import BrokerState, PartitionState, QuorumMember, QuorumState, Snapshot, TopicState

_NAME = attrgetter("name")

def quorum_state_of(quorum: Quorum | None, previous: Snapshot | None) -> QuorumState | None:
    """The quorum as the snapshot keeps it (lag of each replica behind the leader); the previous one when
    this cycle could not read it."""
    quorum_state = None
    if quorum is not None:
        leader_leo = next((v.log_end_offset for v in quorum.voters if v.replica_id == quorum.leader_id), None)

        def member(r: object) -> QuorumMember:
            assert hasattr(r, "replica_id")
            leo = r.log_end_offset  # type: ignore[attr-defined]
            return QuorumMember(
                id=r.replica_id,
                log_end_offset=leo,
                lag=None if leader_leo is None or leo < 0 else max(0, leader_leo - leo),
                last_fetch_ms=r.last_fetch_timestamp,  # type: ignore[attr-defined]
                last_caught_up_ms=r.last_caught_up_timestamp,  # type: ignore[attr-defined]
            )

        quorum_state = QuorumState(
            leader_id=quorum.leader_id,
            leader_epoch=quorum.leader_epoch,
            high_watermark=quorum.high_watermark,
            voters=[member(v) for v in quorum.voters],
            observers=[member(o) for o in quorum.observers],
        )
    elif previous is not None:
        quorum_state = previous.quorum

    return quorum_state


def build_snapshot(
    cluster: str,
    previous: Snapshot | None,
    md: ClusterMetadata,
    quorum: Quorum | None,
    quorum_error: str | None,
    racks: dict[int, str | None],
    min_isr: dict[str, int],
    now: float,
    kept: frozenset[str] = frozenset(),
    unchanged: frozenset[str] = frozenset(),
    built_from: Mapping[str, Topic] | None = None,
    fresh: dict[str, list[int]] | None = None,
    moved: frozenset[int] = frozenset(),
    unreachable: frozenset[int] = frozenset(),
) -> Snapshot:
    """A new snapshot from what Kafka answered, carrying forward what this cycle did not read.

    `kept`: topics of the previous snapshot the answer left out though Kafka still has them (or
    could not say): carried over as they were, never reported deleted. `unchanged`: topics whose
    metadata and min ISR are what the previous snapshot was built from: their state is carried over
    as the same object (the cost of a cycle follows what changed, not the partition count).
    `built_from`: the metadata each topic of the previous snapshot was built from: of a topic that
    changed, the partitions whose metadata did not keep their state object, and `fresh` gets the
    places of the ones built anew. `moved`: the brokers that left or came back since (their
    partitions' offline replicas change): the partitions with a replica on one are built anew.
    `unreachable`: the live brokers whose ports refuse the console's connections (watcher.reachability)."""
    live = {b.id: b for b in md.brokers}
    brokers: dict[int, BrokerState] = {}
    # Brokers once seen stay listed (as down) so a dead broker does not just vanish.
    if previous is not None:
        for bid, seen in previous.brokers.items():
            brokers[bid] = BrokerState(bid, seen.host, seen.port, seen.rack, up=False)
    for bid, b in live.items():
        brokers[bid] = BrokerState(bid, b.host, b.port, racks.get(bid, b.rack), up=True, reachable=bid not in unreachable)
    # Replicas on brokers never seen alive (quorum voters may be dedicated controllers, not brokers)
    # are listed as down. A partition whose state is carried over (its topic unchanged, or its
    # metadata what it was) named only brokers the previous snapshot lists, which stay listed: only
    # the partitions built anew are looked through, so that the cost follows what changed.
    referenced: set[int] = set()

    prior: Mapping[str, TopicState] = previous.topics if previous else {}
    carried = unchanged if unchanged <= prior.keys() else unchanged & prior.keys()
    # Every topic in the answer's order, those carried over as they were (the same objects: taken
    # in C, map and zip, not a step per topic in Python); each of the others' state is put in below.
    names = list(map(_NAME, md.topics))
    topics = cast(dict[str, TopicState], dict(zip(names, map(prior.get, names), strict=True)))
    for t in compress(md.topics, map(not_, map(carried.__contains__, names))):
        old_topic = prior.get(t.name)
        old_list = old_topic.partitions if old_topic is not None else _NO_PARTITIONS
        by_number: dict[int, PartitionState] | None = None  # (only when a place does not match)
        # The metadata this topic was last built from: partitions it gives alike keep their state
        # (the same object, shared with the previous snapshot; `fresh` lists the others).
        was = built_from.get(t.name) if built_from is not None and old_topic is not None else None
        parts: list[PartitionState]
        new_ones: list[int] | None
        # The old state lists the partitions in the order `was` gave them (it was built from it): when
        # the answer lists the same ones, only the places whose metadata changed are looked at.
        table = t.partitions if isinstance(t.partitions, PartitionTable) else None
        places = table.places_changed(was.partitions) \
            if table is not None and was is not None and isinstance(was.partitions, PartitionTable) \
            and len(old_list) == len(was.partitions) else None
        if table is not None and places is not None:
            if moved:
                places = sorted(set(places).union(i for i, p in enumerate(old_list) if not moved.isdisjoint(p.replicas)))
            parts, new_ones = list(old_list), places
            for i in places:
                row = table.row(i)
                referenced.update(row[2])
                parts[i] = _partition_state(row, old_list[i], live)
        else:
            # (each partition's fields as rows: the gateway keeps them as columns, gateway.types.PartitionTable)
            was_rows = list(partition_rows(was.partitions)) if was is not None and len(was.partitions) <= len(t.partitions) else []
            parts, new_ones = [], [] if was_rows else None
            for i, row in enumerate(partition_rows(t.partitions)):
                number = row[0]
                if i < len(old_list) and old_list[i].partition == number:
                    old: PartitionState | None = old_list[i]
                else:
                    if by_number is None:
                        by_number = {p.partition: p for p in old_list}
                    old = by_number.get(number)
                if new_ones is not None and i < len(was_rows) and old is not None and was_rows[i] == row \
                        and (not moved or moved.isdisjoint(row[2])):
                    parts.append(old)
                    continue
                if new_ones is not None:
                    new_ones.append(i)
                referenced.update(row[2])
                parts.append(_partition_state(row, old, live))
        if new_ones is not None and fresh is not None:
            fresh[t.name] = new_ones
        topics[t.name] = TopicState(
            name=t.name,
            internal=t.internal,
            partitions=parts,
            min_isr=min_isr.get(t.name, old_topic.min_isr if old_topic else None),
            produce_rate=old_topic.produce_rate if old_topic else None,
        )

    for bid in referenced - brokers.keys():
        brokers[bid] = BrokerState(bid, "?", 0, None, up=False)

    if kept and previous is not None:
        topics.update({name: replace(t, partitions=[replace(p) for p in t.partitions])
                       for name, t in previous.topics.items() if name in kept})
        topics = dict(sorted(topics.items()))

    quorum_state = quorum_state_of(quorum, previous)

    return Snapshot(
        cluster=cluster,
        version=previous.version if previous else 0,
        taken_at=now,
        checked_at=now,
        reachable=True,
        error=None,
        cluster_id=md.cluster_id,
        # In KRaft the active controller is the quorum leader; brokers' metadata names a random broker.
        controller_id=quorum_state.leader_id if quorum_state else None,
        brokers=brokers,
        quorum=quorum_state,
        quorum_error=quorum_error,
        topics=topics,
        offsets_at=previous.offsets_at if previous else None,
        topic_groups=previous.topic_groups if previous else {},
        groups=previous.groups if previous else {},
        groups_at=previous.groups_at if previous else None,
    )


def _partition_state(row: PartitionRow, old: PartitionState | None, live: Mapping[int, Any]) -> PartitionState:
    """A partition's state built from its metadata `row`, its offsets and sizes carried from `old`."""
    number, leader, replicas_of, isr_of, _error = row
    return PartitionState(
        partition=number,
        leader=leader,
        replicas=(replicas := shared_list(replicas_of)),
        isr=replicas if isr_of == replicas_of else shared_list(isr_of),
        offline_replicas=[r for r in replicas_of if r not in live] or _NO_REPLICAS,
        start_offset=old.start_offset if old else None,
        end_offset=old.end_offset if old else None,
        size=old.size if old else None,
        replica_sizes=old.replica_sizes if old else {},
    )


# What most partitions' offline replicas are: one list for all (a snapshot's lists are values, never
# changed: a partition carried over is shared by two snapshots already). So is the ISR when it is the
# replicas, in their order: one empty list per partition was a large share of a snapshot.
_NO_REPLICAS: list[int] = []
_NO_PARTITIONS: list[PartitionState] = []
LISTS_MAX = 100_000  # distinct broker lists `shared_list` keeps (then it starts afresh)
_lists: dict[tuple[int, ...], list[int]] = {}


def shared_list(ids: tuple[int, ...]) -> list[int]:
    """The one list of these broker ids that snapshots' partitions hold as their replicas or ISR.
    A cluster's partitions share a few thousand replica sets, and the watcher never changes a
    partition's lists once they are in a snapshot (as it never changes the partition), so one
    list per set costs far less than one per partition."""
    found = _lists.get(ids)
    if found is None:
        if len(_lists) >= LISTS_MAX:
            _lists.clear()
        found = _lists.setdefault(ids, list(ids))
    return found

