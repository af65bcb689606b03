"""The watcher of one cluster: the metadata cycle (poll, build the snapshot from what changed,
diff) and the sampling pass (offsets, sizes, groups), each in its own thread.

Its parts: `build_snapshot` (pure), the group evaluation and event store the apps register
(registry.py), the publisher (publisher.py: events, Redis, Channels), the runner (runner.py: one
thread per cluster under a lease, so a cluster that times out cannot delay another). Kafka sees
the same few requests per cycle however many browsers are watching.
"""

from __future__ import annotations

import logging
import resource
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import chain
from typing import Any

from django.conf import settings

from console import gateway
from console.gateway.client import ClusterGateway
from console.gateway.errors import GatewayError
from console.gateway.types import ClusterMetadata, Quorum
from console.watcher import registry, store
from console.watcher.diff import Change, diff
from console.watcher.publisher import Publisher
from console.watcher.registry import EventRow
from console.watcher.snapshot import (
    BrokerState,
    ContentParts,
    GroupState,
    MemberState,
    PartitionState,
    QuorumMember,
    QuorumState,
    Snapshot,
    TopicBytes,
    TopicState,
    no_gc,
)

log = logging.getLogger(__name__)


@dataclass
class CycleStats:
    """Kafka requests made by the last cycle, for the benchmarks."""

    requests: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def count(self, name: str) -> None:
        self.requests[name] = self.requests.get(name, 0) + 1


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
) -> Snapshot:
    """A new snapshot from what Kafka answered, carrying forward what this cycle did not read.

    `kept`: topics of the previous snapshot the answer left out though Kafka still has them (or
    could not say): carried over as they were, never reported deleted. `unchanged`: topics whose
    metadata and min ISR are what the previous snapshot was built from: their state is carried over
    as the same object (the cost of a cycle follows what changed, not the partition count)."""
    live = {b.id: b for b in md.brokers}
    brokers: dict[int, BrokerState] = {}
    # Brokers once seen stay listed (as down) so a dead broker does not just vanish.
    if previous is not None:
        for bid, seen in previous.brokers.items():
            brokers[bid] = BrokerState(bid, seen.host, seen.port, seen.rack, up=False)
    for bid, b in live.items():
        brokers[bid] = BrokerState(bid, b.host, b.port, racks.get(bid, b.rack), up=True)
    # Replicas on brokers never seen alive (quorum voters may be dedicated controllers, not brokers).
    referenced = {r for t in md.topics for p in t.partitions for r in p.replicas}
    for bid in referenced - brokers.keys():
        brokers[bid] = BrokerState(bid, "?", 0, None, up=False)

    topics: dict[str, TopicState] = {}
    for t in md.topics:
        old_topic = previous.topics.get(t.name) if previous else None
        if old_topic is not None and t.name in unchanged:
            topics[t.name] = old_topic
            continue
        old_parts = {p.partition: p for p in old_topic.partitions} if old_topic else {}
        parts = []
        for p in t.partitions:
            old = old_parts.get(p.partition)
            parts.append(
                PartitionState(
                    partition=p.partition,
                    leader=p.leader,
                    replicas=list(p.replicas),
                    isr=list(p.isr),
                    offline_replicas=[r for r in p.replicas if r not in live],
                    start_offset=old.start_offset if old else None,
                    end_offset=old.end_offset if old else None,
                    size=old.size if old else None,
                    replica_sizes=old.replica_sizes if old else {},
                )
            )
        topics[t.name] = TopicState(
            name=t.name,
            internal=t.internal,
            partitions=parts,
            min_isr=min_isr.get(t.name, old_topic.min_isr if old_topic else None),
            produce_rate=old_topic.produce_rate if old_topic else None,
        )

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


def produce_rates(before: dict[tuple[str, int], int], after: dict[tuple[str, int], int], seconds: float) -> dict[str, float]:
    """Messages per second per topic between two samples of end offsets (partitions in both)."""
    totals = dict.fromkeys({key[0] for key in after.keys() & before.keys()}, 0)
    # Only the partitions that moved add anything (most of a large cluster's do not).
    for topic, n in [(key[0], end - before[key]) for key, end in after.items() if key in before and before[key] != end]:
        totals[topic] += max(0, n)
    return {topic: round(n / seconds, 2) for topic, n in totals.items()}


def _indices(parts: list[PartitionState], numbers: Iterable[int]) -> list[int]:
    """The places in `parts` of the partitions numbered `numbers` (a partition's number is its place
    but where a topic's list says otherwise)."""
    out = []
    places: dict[int, int] | None = None
    for n in numbers:
        if n < len(parts) and parts[n].partition == n:
            out.append(n)
            continue
        if places is None:
            places = {p.partition: i for i, p in enumerate(parts)}
        if n in places:
            out.append(places[n])
    return out


class ClusterWatcher:
    def __init__(self, cluster: str, owner: str, gw: ClusterGateway | None = None, incremental: bool = True) -> None:
        """`gw`: what to ask Kafka through (default the cluster's gateway; the scale simulator
        passes one that answers for a synthetic cluster). `incremental=False` rebuilds every topic
        every cycle (what the incremental path must equal; the tests compare them)."""
        self.cluster = cluster
        self.owner = owner
        self.gateway: ClusterGateway = gw if gw is not None else gateway.for_cluster(cluster)
        self.samples = registry.sample_writer(cluster, self.gateway)
        self._sampling_times: deque[float] = deque(maxlen=100)
        self.previous: Snapshot | None = None
        self.racks: dict[int, str | None] = {}
        self.next_configs = 0.0
        self.stats = CycleStats()
        self.publisher = Publisher(cluster)
        self._content: ContentParts | None = None
        self._offsets_lock = threading.Lock()
        self._starts: dict[tuple[str, int], int] = {}
        self._ends: dict[tuple[str, int], int] = {}
        self._offsets_at: float | None = None
        self._sizes: dict[tuple[str, int], dict[int, int]] = {}
        self._rates: dict[str, float] = {}
        self._next_sizes = 0.0
        self._min_isr: dict[str, int] = {}
        self._cycle_times: deque[float] = deque(maxlen=60)
        self._groups: dict[str, GroupState] | None = None
        self._group_cache: dict[str, tuple[Any, Any, Any, GroupState]] = {}  # group -> (described, committed, share offsets, state)
        self.groups_evaluation_changed = True
        self._group_topics: dict[str, tuple[GroupState, list[str]]] = {}  # the topics each group state reads
        self._sizes_converted: tuple[Any, dict[tuple[str, int], dict[str, int]]] = (None, {})  # per sizes sample
        self._partitions_of: tuple[dict[str, TopicState] | None, list[tuple[str, int]]] = (None, [])  # what to sample, per topics
        self._topic_partitions: dict[str, tuple[TopicState, list[tuple[str, int]]]] = {}
        self.groups_evaluator = registry.group_evaluator(cluster, incremental, self.publisher.emit)
        self._groups_at: float | None = None
        # Bumped whenever the sampling thread stores something the snapshot shows (offsets, sizes,
        # groups, min ISR): with unchanged metadata and no new sample, a cycle reuses the last snapshot.
        self._sample_gen = 0
        # Topics whose offsets, sizes or rate a sample changed since they were last put in a snapshot.
        self._dirty_topics: set[str] = set()
        self._dirty_partitions: dict[str, set[int]] = {}  # of the dirty topics, the partitions a sample changed
        self.incremental = incremental
        self._topic_bytes = TopicBytes() if incremental else None  # each topic's JSON while it is the same object
        self._built_from: dict[str, tuple[Any, int | None]] = {}  # topic -> (its metadata, min ISR) of the last build
        self._built_live: frozenset[int] = frozenset()  # the live brokers of the last build
        self._last_inputs: tuple[Any, ...] | None = None
        self.unchanged = False  # the last poll reused the previous snapshot's content
        self.topics_reused = 0  # topics the last build carried over from the previous snapshot
        self.cycles_reused = 0
        self.offset_requests = 0
        self.group_stats: dict[str, float | int] = {}
        self.cycles = 0

    def load_previous(self) -> None:
        try:
            self.previous = store.load(self.cluster)
        except store.StoreUnavailable:
            self.previous = None
        self._content = self.previous.content_parts(self._topic_bytes) if self.previous else None
        self.publisher.restart(saved=self.previous is not None)

    def poll(self, now: float) -> Snapshot:
        """Ask Kafka for what changed; an unreachable cluster keeps the last known state."""
        stats = CycleStats()
        previous = self.previous
        self.unchanged = False
        try:
            stats.count("metadata")
            md = self.gateway.metadata()
        except GatewayError as exc:
            self.stats = stats
            cause = exc.cause.kind if exc.cause is not None else None
            if previous is None:
                return Snapshot(cluster=self.cluster, checked_at=now, reachable=False, error=exc.message, cause=cause)
            # Keep the last known state, marked unreachable: the pages say how old it is.
            down = Snapshot.from_json(previous.to_json())
            down.reachable = False
            down.error = exc.message
            down.cause = cause
            down.checked_at = now
            return down

        quorum: Quorum | None = None
        quorum_error: str | None = None
        try:
            stats.count("describe_quorum")
            quorum = self.gateway.quorum()
        except GatewayError as exc:
            quorum_error = exc.message

        live_ids = {b.id for b in md.brokers}
        if not live_ids <= self.racks.keys() or now >= self.next_configs:
            try:
                stats.count("describe_cluster")
                self.racks.update(self.gateway.broker_racks())
            except GatewayError:
                log.info("could not read broker racks of %s", self.cluster)

        # New topics get their min.insync.replicas at once (a few per cycle); the periodic re-read of
        # every topic runs in the sampling thread so it never slows this cycle down.
        with self._offsets_lock:
            known_min_isr = dict(self._min_isr)
        fresh = [t.name for t in md.topics if t.name not in known_min_isr][:200]
        if fresh:
            try:
                stats.count("describe_configs")
                found = self._read_min_isr(fresh)
                known_min_isr.update(found)
                with self._offsets_lock:
                    self._min_isr.update(found)
                    self._sample_gen += 1
            except GatewayError:
                log.info("could not read topic configs of %s", self.cluster)

        self.stats = stats
        with self._offsets_lock:
            inputs = (md, self._sample_gen, tuple(sorted(self.racks.items())))
        last_inputs, self._last_inputs = self._last_inputs, inputs
        quorum_state = quorum_state_of(quorum, previous)
        leader = quorum_state.leader_id if quorum_state else None
        # Steady state at 30,000 partitions: building, diffing and serialising an identical snapshot
        # costs more than reading the metadata, so when nothing it is made of changed (the controller
        # included) only the stamp is new. Comparing the metadata costs a few tens of ms.
        self.unchanged = (previous is not None and previous.reachable and leader == previous.controller_id
                          and inputs == last_inputs)
        if self.unchanged:
            assert previous is not None
            with self._offsets_lock:
                offsets_at, groups_at = self._offsets_at, self._groups_at
            # A sample that changed nothing still says when the offsets were last read (stamp fields).
            return replace(previous, taken_at=now, checked_at=now, quorum=quorum_state, quorum_error=quorum_error,
                           offsets_at=offsets_at if offsets_at is not None else previous.offsets_at,
                           groups_at=groups_at if groups_at is not None else previous.groups_at)
        unchanged = self._unchanged_topics(previous, md, known_min_isr)
        self.topics_reused = len(unchanged)
        snap = build_snapshot(self.cluster, previous, md, quorum, quorum_error, self.racks, known_min_isr, now,
                              self._kept_topics(previous, md, stats), unchanged)
        self._built_from = {t.name: (t, known_min_isr.get(t.name)) for t in md.topics}
        self._built_live = frozenset(b.id for b in md.brokers)
        self._apply_offsets(snap, reused=unchanged)
        return snap

    def _unchanged_topics(self, previous: Snapshot | None, md: ClusterMetadata, min_isr: dict[str, int]) -> frozenset[str]:
        """Topics whose metadata and min ISR equal what the previous snapshot's were built from."""
        # A broker going down or coming back changes every partition's offline replicas it hosts.
        if not self.incremental or previous is None or not previous.reachable \
                or frozenset(b.id for b in md.brokers) != self._built_live:
            return frozenset()
        built = self._built_from
        same = []
        for t in md.topics:
            before = built.get(t.name)
            # The gateway hands back the same object for a topic it saw unchanged, so identity usually decides.
            if before is not None and (before[0] is t or before[0] == t) and before[1] == min_isr.get(t.name) \
                    and t.name in previous.topics:
                same.append(t.name)
        return frozenset(same)

    def _kept_topics(self, previous: Snapshot | None, md: ClusterMetadata, stats: CycleStats) -> frozenset[str]:
        """Topics the metadata answer left out that Kafka still has (or could not say it has not):
        a snapshot never loses a topic to a partial answer, and "deleted" is only said when Kafka says so."""
        if previous is None or not previous.topics:  # (an unreachable snapshot still holds the last known topics)
            return frozenset()
        answered = {t.name for t in md.topics}
        missing = [name for name in previous.topics if name not in answered]
        if not missing:
            return frozenset()
        try:
            stats.count("describe_topics")
            exists = self.gateway.topics_exist(missing)
        except GatewayError as exc:
            log.info("could not tell whether %d topics of %s were deleted: %s", len(missing), self.cluster, exc.message)
            return frozenset(missing)
        return frozenset(name for name in missing if exists.get(name, True))

    def _read_min_isr(self, topics: list[str]) -> dict[str, int]:
        configs = self.gateway.topic_configs(topics, frozenset({"min.insync.replicas"}))
        return {t: int(c["min.insync.replicas"]) for t, c in configs.items() if "min.insync.replicas" in c}

    def refresh_configs(self) -> None:
        """Re-read min.insync.replicas of every topic (it can change without any other sign)."""
        snap = self.previous
        if snap is None or not snap.reachable or time.time() < self.next_configs:
            return
        try:
            self.offset_requests += 1
            found = self._read_min_isr(sorted(snap.topics))
        except GatewayError:
            log.info("could not re-read topic configs of %s", self.cluster)
            return
        with self._offsets_lock:
            if found != self._min_isr:  # the same configs make no new snapshot
                self._min_isr = found
                self._sample_gen += 1
        self.next_configs = time.time() + settings.WATCHER_CONFIGS_INTERVAL

    def _apply_offsets(self, snap: Snapshot, reused: frozenset[str] = frozenset()) -> None:
        """Put the latest offsets, sizes, rates and groups in the snapshot: into every topic built
        anew, and into the `reused` ones (carried over from the previous snapshot) only where a
        sample changed them since."""
        with self._offsets_lock:
            starts, ends, at = self._starts, self._ends, self._offsets_at
            sizes, rates = self._sizes, self._rates
            groups, groups_at = self._groups, self._groups_at
            dirty, self._dirty_topics = self._dirty_topics, set()
            dirty_partitions, self._dirty_partitions = self._dirty_partitions, {}
        if groups is not None:
            snap.groups, snap.groups_at = groups, groups_at
            index: dict[str, list[str]] = {}
            seen, self._group_topics = self._group_topics, {}
            for g in groups.values():
                cached = seen.get(g.group_id)
                topics = cached[1] if cached is not None and cached[0] is g else g.topics()  # once per group state
                self._group_topics[g.group_id] = (g, topics)
                for topic in topics:
                    index.setdefault(topic, []).append(g.group_id)
            snap.topic_groups = {t: sorted(gs) for t, gs in index.items()}
        if at is None:
            return
        converted = self._sizes_converted if self._sizes_converted[0] is sizes else (sizes, {})
        self._sizes_converted = converted
        for name, t in list(snap.topics.items()):
            carried = name in reused  # the previous snapshot's object: changed only as a copy
            if carried and name not in dirty:
                continue
            parts, new_parts = t.partitions, None
            # A topic carried over looks only at the partitions a sample changed since (all of a new one).
            for i in _indices(parts, dirty_partitions.get(name, ())) if carried else range(len(parts)):
                p = parts[i]
                key = (name, p.partition)
                end, start = ends.get(key, p.end_offset), starts.get(key, p.start_offset)
                replica_sizes, size = p.replica_sizes, p.size
                replicas = sizes.get(key)
                if replicas is not None:
                    known = converted[1].get(key)
                    if known is None:
                        known = converted[1][key] = {str(b): n for b, n in sorted(replicas.items())}
                    replica_sizes = known
                    size = replicas.get(p.leader, max(replicas.values()))
                if end == p.end_offset and start == p.start_offset and size == p.size and replica_sizes == p.replica_sizes:
                    continue
                if carried:
                    # Only the partitions that changed are copied: the others stay shared with the
                    # previous snapshot, so the diff and the serialisation can tell them by identity.
                    if new_parts is None:
                        new_parts = list(parts)
                    p = new_parts[i] = replace(p)
                p.end_offset, p.start_offset, p.replica_sizes, p.size = end, start, replica_sizes, size
            rate = rates.get(name, t.produce_rate)
            if carried:
                if new_parts is None and rate == t.produce_rate:
                    continue  # nothing it shows changed: the same object
                t = snap.topics[name] = replace(t, partitions=new_parts if new_parts is not None else list(parts))
            t.produce_rate = rate
        snap.offsets_at = at

    def _poll_groups(self) -> dict[str, GroupState] | None:
        started = time.monotonic()
        sent_before = self.gateway.kafka_python_requests.get("groups", 0)
        try:
            described = self.gateway.consumer_groups()
            shared = [g.group_id for g in described if g.group_type == "share"]
            committed = self.gateway.group_offsets([g.group_id for g in described if g.group_type != "share"])
            share_offsets = self.gateway.share_group_offsets(shared)
            self.offset_requests += 2 + bool(shared)
        except GatewayError as exc:
            log.info("could not read consumer groups of %s: %s", self.cluster, exc.message)
            return None
        for gid, offsets in share_offsets.items():
            committed[gid] = {tp: start for tp, (start, _lag) in offsets.items()}
        brokers = len(self.previous.live_broker_ids()) if self.previous else 0
        coordinators = len({g.coordinator for g in described if g.coordinator is not None})
        kinds = len({g.group_type for g in described} & {"classic", "consumer", "share"})
        self.group_stats = {
            "groups_evaluate_seconds": self.group_stats.get("groups_evaluate_seconds", 0),
            "groups": len(described),
            "group_partitions": sum(len(c) for c in committed.values()),
            "groups_fetch_seconds": round(time.monotonic() - started, 3),
            # ListGroups per broker, FindCoordinator batched, then per coordinator one describe per
            # kind of group (classic, consumer, share) and one offset fetch (two with share groups).
            "group_requests_bound": brokers + 1 + (kinds + 1 + bool(shared)) * coordinators,
            # ... and what was really sent (counted at kafka-python's connection manager).
            "group_requests": self.gateway.kafka_python_requests.get("groups", 0) - sent_before,
            "coordinators": coordinators,
        }
        out: dict[str, GroupState] = {}
        cache: dict[str, tuple[Any, Any, Any, GroupState]] = {}
        for g in described:
            mine, shares = committed.get(g.group_id, {}), share_offsets.get(g.group_id, {})
            last = self._group_cache.get(g.group_id)
            if self.incremental and last is not None and last[0] == g and last[1] == mine and last[2] == shares:
                # Described and committed as the last sample saw it: the same state (its evaluation
                # is renewed in place by _evaluate_groups).
                state = last[3]
            else:
                state = GroupState(
                    group_id=g.group_id,
                    state=g.state,
                    protocol_type=g.protocol_type,
                    group_type=g.group_type,
                    assignor=g.assignor,
                    members=[MemberState(m.member_id, m.client_id, m.host, [list(a) for a in m.assignment], m.instance_id,
                                         m.epoch, None if m.target_assignment is None else [list(a) for a in m.target_assignment])
                             for m in g.members],
                    offsets={f"{t}:{p}": o for (t, p), o in sorted(mine.items())},
                    coordinator=g.coordinator,
                    generation=g.generation,
                    broker_lag={f"{t}:{p}": lag for (t, p), (_start, lag) in shares.items() if lag >= 0},
                    error=g.error,
                )
            out[g.group_id] = state
            cache[g.group_id] = (g, mine, shares, state)
        self._group_cache = cache
        return out

    def _raise_event(self, kind: str, severity: str, message: str) -> None:
        """An event found outside the metadata diff (from the sampling thread)."""
        self.publisher.emit([EventRow(cluster=self.cluster, at=datetime.now(tz=UTC), kind=kind, severity=severity,
                                      message=message)])

    def sample_offsets(self) -> None:
        """Start and end offsets of every partition: two batched calls (librdkafka groups them per
        leader). Runs in its own thread: a partition whose leader just died can hold a call for
        the whole request timeout, and that must not delay the metadata cycle."""
        snap = self.previous
        if snap is None or not snap.reachable:
            return
        # Samples are stamped with the time they were asked for: a change noted before it is in them.
        started = time.time()
        if self._partitions_of[0] is not snap.topics:  # (a cycle that changed nothing keeps the topics dict)
            # Per topic object: a topic carried over from the snapshot before gives the same list.
            per_topic, self._topic_partitions = self._topic_partitions, {}
            for t in snap.topics.values():
                cached = per_topic.get(t.name)
                if cached is None or cached[0] is not t:
                    cached = (t, [(t.name, p.partition) for p in t.partitions if not p.offline])
                self._topic_partitions[t.name] = cached
            self._partitions_of = (snap.topics, list(chain.from_iterable(c[1] for c in self._topic_partitions.values())))
        partitions = self._partitions_of[1]
        results: dict[str, dict[tuple[str, int], int]] = {}
        for which in ("latest", "earliest"):
            try:
                self.offset_requests += 1
                results[which] = self.gateway.list_offsets(partitions, which)
            except GatewayError:
                results[which] = {}
        groups = self._poll_groups()
        now = time.time()
        sizes = None
        if now >= self._next_sizes:
            try:
                self.offset_requests += 1
                sizes = self.gateway.log_dir_sizes(sorted(snap.live_broker_ids()))
                self._next_sizes = now + settings.WATCHER_SIZES_INTERVAL
            except GatewayError:
                log.info("could not read log dir sizes of %s", self.cluster)
        self.groups_evaluation_changed = True  # unless the evaluation below says otherwise
        if groups is not None:
            try:
                evaluated = time.monotonic()
                self.groups_evaluator.evaluate(groups, self._groups, results["latest"] or self._ends, now)
                self.groups_evaluation_changed = self.groups_evaluator.changed
                self.group_stats.update(self.groups_evaluator.stats)
                self.group_stats["groups_evaluate_seconds"] = round(time.monotonic() - evaluated, 3)
            except Exception:
                log.exception("evaluating consumer groups of %s failed", self.cluster)
        try:
            refused = self.samples.write(started, results["latest"], sizes if sizes is not None else self._sizes, groups,
                                         len(snap.live_broker_ids()))
            if refused:
                self._raise_event("analytics", "warning", refused)
        except Exception:  # noqa: BLE001 - analytics must never stop the live console
            log.exception("writing analytics samples of %s failed", self.cluster)
        with self._offsets_lock:
            previous_ends, previous_at = self._ends, self._offsets_at
            ends = {**self._ends, **results["latest"]}
            starts = {**self._starts, **results["earliest"]}
            rates = self._rates
            if previous_at is not None and started > previous_at:
                rates = produce_rates(previous_ends, results["latest"], started - previous_at)
            # Only what changed makes the next metadata cycle rebuild anything: a sample of an idle
            # cluster costs that cycle nothing.
            changed = [tp for tp, v in ends.items() if self._ends.get(tp) != v]
            changed += [tp for tp, v in starts.items() if self._starts.get(tp) != v]
            if sizes is not None:
                changed += [tp for tp, v in sizes.items() if self._sizes.get(tp) != v]
            for topic, partition in changed:
                numbers = self._dirty_partitions.get(topic)
                if numbers is None:
                    numbers = self._dirty_partitions[topic] = set()
                numbers.add(partition)
            dirty = {tp[0] for tp in changed}
            dirty |= {t for t in rates.keys() | self._rates.keys() if rates.get(t) != self._rates.get(t)}
            groups_changed = groups is not None and (
                self._groups is None or self.groups_evaluation_changed
                or any(self._groups.get(gid) is not g for gid, g in groups.items()) or len(groups) != len(self._groups))
            self._ends, self._starts, self._rates = ends, starts, rates
            self._offsets_at = started
            if sizes is not None:
                self._sizes = sizes
            if groups is not None:
                self._groups, self._groups_at = groups, started
            self._dirty_topics |= dirty
            if dirty or groups_changed:
                self._sample_gen += 1
        self._sampling_times.append(time.time() - started)

    def cycle(self) -> tuple[Snapshot, list[Change]]:
        now = time.time()
        started = time.monotonic()
        with no_gc():
            snap = self.poll(now)
        if self.unchanged and self._content is not None:
            changes: list[Change] = []
            content = self._content
        else:
            changes = diff(self.previous, snap)
            content = snap.content_parts(self._topic_bytes)
        changed = content != self._content
        if changed:
            snap.version = (self.previous.version if self.previous else 0) + 1
        self.stats.seconds = time.monotonic() - started
        events = self.publisher.record(snap, changes)
        self.publisher.publish(snap, self.previous, events, changed, content if changed or not self.publisher.saved_once else None)
        self._content = content
        self.previous = snap
        self.cycles += 1
        self.cycles_reused += self.unchanged
        self._cycle_times.append(time.monotonic() - started)
        ordered = sorted(self._cycle_times)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        store.save_stats(self.cluster, {
            "cycles": self.cycles,
            "cycles_reused": self.cycles_reused,  # nothing changed: the last snapshot's content was kept
            "cycle_seconds": round(self.stats.seconds, 4),
            "cycle_p50_seconds": round(ordered[len(ordered) // 2], 4),
            "cycle_max_seconds": round(ordered[-1], 4),
            "partitions": sum(len(t.partitions) for t in snap.topics.values()),
            "requests_last_cycle": self.stats.requests,
            "offset_requests_total": self.offset_requests,
            "cpu_seconds_total": round(usage.ru_utime + usage.ru_stime, 2),
            "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
            # The sampling thread (offsets, sizes, groups, and the analytics samples it writes).
            "sampling_p50_seconds": round(sorted(self._sampling_times)[len(self._sampling_times) // 2], 4) if self._sampling_times else None,
            "samples_records_total": self.samples.records,
            "samples_seconds_total": round(self.samples.seconds, 3),
            "samples_refused": self.samples.refused,
            **self.group_stats,
            "at": time.time(),
        })
        return snap, changes
