"""The watcher of one cluster: the metadata cycle (poll, build the snapshot from what changed,
diff) and the sampling pass (offsets, sizes, groups), each in its own thread.

Its parts: `build_snapshot` (pure), the group evaluation and event store the apps register
(registry.py), the publisher (publisher.py: events, Redis, Channels), the runner (runner.py: one
thread per cluster under a lease, so a cluster that times out cannot delay another). Kafka sees
the same few requests per cycle however many browsers are watching.
"""

from __future__ import annotations

import logging
import math
import resource
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from itertools import chain, compress, filterfalse, islice
from operator import attrgetter, eq, is_, not_
from typing import Any, cast

from django.conf import settings

from console import gateway
from console.errors import PartUnreadable
from console.gateway.client import ClusterGateway
from console.gateway.errors import GatewayError
from console.gateway.types import ClusterMetadata, PartitionRow, PartitionTable, Quorum, Topic, partition_rows
from console.lifecycle import failure_seen
from console.snapshots import store
from console.snapshots.model import (
    BrokerState,
    ContentParts,
    GroupBytes,
    GroupState,
    PartitionState,
    QuorumMember,
    QuorumState,
    Snapshot,
    TopicBytes,
    TopicState,
    broker_key,
    no_gc,
)
from console.watcher.diff import Change, diff
from console.watcher.publisher import Publisher
from console.watcher.registry import EventRow
from console.watcher.sampler import Layout, Sample, Sampler
from console.watcher.sampling_process import GatewayFactory, RemoteSampler
from console.watcher.turns import CycleFirst

log = logging.getLogger(__name__)

_NAME = attrgetter("name")
_PARTITIONS = attrgetter("partitions")
_REPLICAS = attrgetter("replicas")


@dataclass
class CycleStats:
    """Kafka requests made by the last cycle, for the benchmarks."""

    requests: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    metadata_seconds: float = 0.0  # of which reading the metadata

    def count(self, name: str) -> None:
        self.requests[name] = self.requests.get(name, 0) + 1


SPREAD_SHARE = 0.5  # a pass's sampled changes go in within this share of the time to the next pass
SPREAD_FLOOR = 500  # carried topics' sampled changes a cycle always takes at once (within WATCHER_CYCLE_SAMPLED_TOPICS)


class SampledShare:
    """How many carried topics' sampled changes (offsets, sizes, rate) a cycle puts in its snapshot.

    At 300,000 partitions a sampling pass changes 6,000 to 10,000 topics every 12 to 15 s. Taken
    WATCHER_CYCLE_SAMPLED_TOPICS (3,000) a cycle, they went in over the two or three cycles after
    each pass, and those cycles took 0.78 s of CPU where the others took 0.46 (the cycles over 1 s,
    and the leader moves they carried pushed later); the dozen cycles after them took none. Spread
    over SPREAD_SHARE of the time between passes, each cycle takes a few hundred. The time between
    passes is told from when the last passes were merged; before two were, and for up to
    SPREAD_FLOOR topics, the cycle takes them as before. The cycles in that time are counted at
    the time between the last cycles that took a share (never longer than the metadata interval):
    a busy cluster is polled every WATCHER_BUSY_INTERVAL, and counted at one a second, the spread
    was over in a quarter of the time between passes, each cycle taking twice the share it needed
    (at 300,000 partitions, 1,300-1,400 topics on top of the metadata's in the slowest cycles)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._merged: deque[float] = deque(maxlen=8)  # when the last samples that changed something were merged
        self._share: int | None = None  # what each cycle takes of the backlog being spread
        self._backlog = 0  # what the last cycle left
        self._asked: deque[float] = deque(maxlen=8)  # when the last cycles asked for their share (`take`)

    def merged(self) -> None:
        """A sample that changed topics was merged now."""
        self._merged.append(self._clock())

    def period(self) -> float | None:
        """The median time between the last merges, or None before two."""
        return _median_gap(self._merged)

    def take(self, due: int, limit: int, interval: float) -> int:
        """Of `due` topics waiting, how many this cycle takes (the rest wait for the next cycles).
        `interval`: the metadata interval, the longest time between cycles counted."""
        self._asked.append(self._clock())
        floor = min(SPREAD_FLOOR, limit)
        if due <= floor:
            self._share, self._backlog = None, 0
            return due
        if self._share is None or due > self._backlog:  # (a new pass's changes: spread them again)
            period = self.period()
            # (the median time between the last cycles that asked; none before two, or when they
            # came at once: a frozen clock)
            gap = min(interval, _median_gap(self._asked) or interval)
            cycles = max(1, int(SPREAD_SHARE * period / gap)) if period is not None and gap > 0 else 1
            self._share = min(limit, max(floor, math.ceil(due / cycles)))
        taken = min(due, self._share, limit)
        self._backlog = due - taken
        return taken


def _median_gap(times: deque[float]) -> float | None:
    """The median time between consecutive `times`, or None before two."""
    stamps = list(times)
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:], strict=False))
    return gaps[len(gaps) // 2] if gaps else None


SLOW_CYCLE_LOGGED = 5.0  # seconds: a cycle that took longer says where its time went, in the log
SIDE_READ_WAIT = 0.5  # seconds a cycle waits, past its metadata, for a side read (SideRead) before going on without it
SIDE_READ_RETRY = 5.0  # seconds before a failed racks or new topics' min ISR read is started again (not every cycle)


class SideRead:
    """A read a cycle uses but must not be held up by: the KRaft quorum, the brokers' racks. It runs
    in a thread of its own, started by the cycle (the quorum's beside the metadata read); the cycle
    takes its answer if it has come when the cycle needs it, after at most `wait` seconds more, and
    otherwise goes on with what it knew and takes the answer in a later cycle. One read at a time:
    starting one while another is out, or while an answer waits to be taken, does nothing.

    Measured on the test cluster: after the active controller's SIGKILL the quorum's read took 1.6
    to 2.1 s, and after a broker's restart describe-cluster waited its whole 5 s timeout (a
    connection to the broker's last incarnation). Made inside the cycle, each held back what that
    cycle had read: a broker back up was shown down for as long."""

    def __init__(self, name: str, read: Callable[..., Any]) -> None:
        self.name = name
        self._read = read
        self._cond = threading.Condition()
        self._out = False  # a read is running
        self._answer: tuple[Any, GatewayError | None] | None = None  # (value, error), not taken yet

    def start(self, *args: Any) -> bool:
        """Start a read (of `args`) unless one is out or its answer waits; whether one was started."""
        with self._cond:
            if self._out or self._answer is not None:
                return False
            self._out = True
        threading.Thread(target=self._run, args=args, name=f"side-read-{self.name}", daemon=True).start()
        return True

    def _run(self, *args: Any) -> None:
        answer: tuple[Any, GatewayError | None]
        try:
            answer = (self._read(*args), None)
        except GatewayError as exc:
            answer = (None, exc)
        except Exception as exc:  # noqa: BLE001 - a bug must not leave the read out for ever
            log.exception("side read %s failed", self.name)
            answer = (None, GatewayError(f"Reading {self.name} failed ({type(exc).__name__})."))
        with self._cond:
            self._answer, self._out = answer, False
            self._cond.notify_all()

    def take(self, wait: float = 0.0) -> tuple[Any, GatewayError | None] | None:
        """The answer of the last read started, (value, error), waiting for it at most `wait`
        seconds; None when it has not come (or none was started)."""
        with self._cond:
            if wait > 0:
                self._cond.wait_for(lambda: self._answer is not None or not self._out, wait)
            answer, self._answer = self._answer, None
            return answer


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
) -> Snapshot:
    """A new snapshot from what Kafka answered, carrying forward what this cycle did not read.

    `kept`: topics of the previous snapshot the answer left out though Kafka still has them (or
    could not say): carried over as they were, never reported deleted. `unchanged`: topics whose
    metadata and min ISR are what the previous snapshot was built from: their state is carried over
    as the same object (the cost of a cycle follows what changed, not the partition count).
    `built_from`: the metadata each topic of the previous snapshot was built from: of a topic that
    changed, the partitions whose metadata did not keep their state object, and `fresh` gets the
    places of the ones built anew. `moved`: the brokers that left or came back since (their
    partitions' offline replicas change): the partitions with a replica on one are built anew."""
    live = {b.id: b for b in md.brokers}
    brokers: dict[int, BrokerState] = {}
    # Brokers once seen stay listed (as down) so a dead broker does not just vanish.
    if previous is not None:
        for bid, seen in previous.brokers.items():
            brokers[bid] = BrokerState(bid, seen.host, seen.port, seen.rack, up=False)
    for bid, b in live.items():
        brokers[bid] = BrokerState(bid, b.host, b.port, racks.get(bid, b.rack), up=True)
    # Replicas on brokers never seen alive (quorum voters may be dedicated controllers, not brokers)
    # are listed as down. A partition whose state is carried over (its topic unchanged, or its
    # metadata what it was) named only brokers the previous snapshot lists, which stay listed: only
    # the partitions built anew are looked through (all of them was 900,000 replicas a cycle at
    # 300,000 partitions, whatever changed; the changed topics' were 400,000).
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
# replicas, in their order. 40 MB of lists at 300,000 partitions.
_NO_REPLICAS: list[int] = []
_NO_PARTITIONS: list[PartitionState] = []
GROUPS_ASKED_AGAIN = 30.0  # seconds before every group's part is asked for again (ClusterWatcher._ask_groups_again)
LISTS_MAX = 100_000  # distinct broker lists `shared_list` keeps (then it starts afresh)
_lists: dict[tuple[int, ...], list[int]] = {}


def shared_list(ids: tuple[int, ...]) -> list[int]:
    """The one list of these broker ids that snapshots' partitions hold as their replicas or ISR.
    A cluster's partitions share a few thousand replica sets, and the watcher never changes a
    partition's lists once they are in a snapshot (as it never changes the partition): one list
    per partition was 300,000 lists (29 MB) at 300,000 partitions."""
    found = _lists.get(ids)
    if found is None:
        if len(_lists) >= LISTS_MAX:
            _lists.clear()
        found = _lists.setdefault(ids, list(ids))
    return found


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


def _same_online(before: list[PartitionState], after: list[PartitionState]) -> bool:
    """Whether two states of a topic have the same partitions, online the same ones (a partition
    carried over is the same object)."""
    return len(before) == len(after) and all(
        a is b or (a.partition == b.partition and (a.leader < 0) == (b.leader < 0)) for a, b in zip(before, after, strict=True))


class ClusterWatcher:
    def __init__(self, cluster: str, owner: str, gw: ClusterGateway | None = None, incremental: bool = True,
                 remote: bool = False, remote_gateway: GatewayFactory | None = None, events_thread: bool = False) -> None:
        """`gw`: what to ask Kafka through (default the cluster's gateway; the scale simulator
        passes one that answers for a synthetic cluster). `incremental=False` rebuilds every topic
        every cycle (what the incremental path must equal; the tests compare them). `remote`: the
        sampling passes run in a process of their own (sampling_process.py), asking Kafka through
        what `remote_gateway` makes there (default the cluster's gateway). `events_thread`: each
        cycle's events are written by a thread of their own (publisher.EventWriter), not in the cycle."""
        self.cluster = cluster
        self.owner = owner
        self.gateway: ClusterGateway = gw if gw is not None else gateway.for_cluster(cluster)
        self.previous: Snapshot | None = None
        self.racks: dict[int, str | None] = {}
        self.next_racks = 0.0  # when the racks are read again (and whenever a broker not known appears)
        self.next_configs = 0.0
        self._quorum_read = SideRead("the KRaft quorum", lambda: self.gateway.quorum())
        self._racks_read = SideRead("the broker racks", lambda: self.gateway.broker_racks())
        self._racks_retry = 0.0  # after a failed racks read, a broker not known starts one no sooner than this
        self._min_isr_read = SideRead("new topics' min.insync.replicas", self._read_min_isr)
        self._min_isr_retry = 0.0  # after a failed read, new topics' min ISR is asked again from then on
        self.stats = CycleStats()
        self.publisher = Publisher(cluster, background=events_thread)
        # The header and the parts' digests (store.digests_of) of the last content: whether the next
        # one changed is told from these, not from the last content's JSON held through the cycle.
        self._content_key: tuple[bytes, dict[str, int]] | None = None
        # The digests `_content` made from a sampling process's group parts (and those parts), and
        # how they differ from the content's before (None: not known).
        self._digests_made: tuple[dict[str, int], store.GroupParts] | None = None
        self._changes: store.PartChanges | None = None
        self._offsets_lock = threading.Lock()
        self._starts: Mapping[tuple[str, int], int] = {}
        self._ends: Mapping[tuple[str, int], int] = {}
        self._offsets_at: float | None = None
        self._sizes: Mapping[tuple[str, int], Mapping[str, int]] = {}  # as the snapshot keeps them (snapshot.replica_sizes)
        self._rates: Mapping[str, float] = {}
        self._min_isr: dict[str, int] = {}
        self._cycle_times: deque[float] = deque(maxlen=60)
        self._groups: dict[str, GroupState] | None = None
        # From a sampling process: each group's part (store.GroupParts) and the topics it reads
        # (instead of `_groups`), and the parts the last snapshot was made with.
        self._group_parts: store.GroupParts | None = None
        self._remote_group_topics: Mapping[str, list[str]] = {}
        self._snapshot_group_parts: store.GroupParts | None = None
        self._groups_asked_at: float | None = None  # when every group's part was last asked for again
        self._topic_groups_of: tuple[Any, dict[str, list[str]]] = (None, {})
        self._group_topics: dict[str, tuple[GroupState, list[str]]] = {}  # the topics each group state reads
        self._partitions_of: tuple[dict[str, TopicState] | None, Layout] = (None, Layout([]))  # what to sample, per topics
        self._topic_partitions: dict[str, tuple[TopicState, tuple[int, ...]]] = {}
        # The metadata cycle runs before the sampling thread's work in this interpreter (turns.py).
        self.turns = CycleFirst()
        self.remote = RemoteSampler(cluster, incremental, remote_gateway, self.publisher.queue, self._sampler_restarted,
                                    self.turns) if remote else None
        self.sampler: Sampler | RemoteSampler = self.remote if self.remote is not None else \
            Sampler(cluster, self.gateway, incremental, self.publisher.emit)
        self._groups_at: float | None = None
        # Bumped whenever the sampling thread stores something the snapshot shows (offsets, sizes,
        # groups, min ISR): with unchanged metadata and no new sample, a cycle reuses the last snapshot.
        self._sample_gen = 0
        # Topics whose offsets, sizes or rate a sample changed since they were last put in a snapshot.
        self._dirty_topics: set[str] = set()
        self._dirty_partitions: dict[str, set[int]] = {}  # of the dirty topics, the partitions a sample changed
        self._waiting_topics: dict[str, int] = {}  # dirty topics left for later cycles -> the cycle that first left them
        self.sampled_share = SampledShare()  # how many of those a cycle takes
        self._own_topic_at = 0.0  # when a sample last made a snapshot (see _worth_a_snapshot)
        self.incremental = incremental
        self._topic_bytes = TopicBytes() if incremental else None  # each topic's JSON while it is the same object
        self._group_bytes = GroupBytes() if incremental else None  # each group's, while the same object and evaluation
        self._built_from: dict[str, Any] = {}  # topic -> its metadata, of the last build
        self._built_min_isr: dict[str, int] = {}  # the min ISR of the last build (that cycle's own dict, not changed since)
        self._built_live: frozenset[int] = frozenset()  # the live brokers of the last build
        self._last_inputs: tuple[Any, ...] | None = None
        self.unchanged = False  # the last poll reused the previous snapshot's content
        self.metadata_moved = False  # the last poll's metadata differed from the one before (runner.cycle_delay)
        self.topics_reused = 0  # topics the last build carried over from the previous snapshot
        self.topics_serialised = self.partitions_serialised = 0  # (by the last cycle: its changed topics, and their changed partitions)
        self.cycles_reused = 0
        self.offset_requests = 0  # (the configs re-read; the sampler counts its own)
        self.cycles = 0
        self.published_at: float | None = None  # when the last cycle's snapshot went out (stored and broadcast)

    def load_previous(self) -> None:
        try:
            loaded = store.load(self.cluster)
            # Every group and every topic's partitions parsed now (one that cannot be read is a
            # store that cannot), in a copy: the store's cached snapshot is shared and never changed.
            # The watcher holds plain TopicStates, as it builds them (a StoredTopic's tally is the store's).
            self.previous = None if loaded is None else replace(
                loaded, groups=dict(loaded.groups),
                topics={name: TopicState(t.name, t.internal, t.partitions, t.min_isr, t.produce_rate)
                        for name, t in loaded.topics.items()})
        except (store.StoreUnavailable, PartUnreadable):
            self.previous = None
        content = self.previous.content_parts(self._topic_bytes, self._group_bytes) if self.previous else None
        self._content_key = (content[0], store.digests_of(content[1])) if content is not None else None
        self.publisher.restart(saved=self.previous is not None)

    def poll(self, now: float) -> Snapshot:
        """Ask Kafka for what changed; an unreachable cluster keeps the last known state."""
        stats = CycleStats()
        previous = self.previous
        self.unchanged = self.metadata_moved = False
        if self._quorum_read.start():  # (beside the metadata read; taken once that is in)
            stats.count("describe_quorum")
        asked = time.monotonic()
        try:
            stats.count("metadata")
            md = self.gateway.metadata()
        except GatewayError as exc:
            self._quorum_read.take()  # (an answer from before an outage is not the quorum after it)
            stats.metadata_seconds = time.monotonic() - asked
            self.stats = stats
            cause = exc.cause.kind if exc.cause is not None else None
            if previous is None:
                return Snapshot(cluster=self.cluster, checked_at=now, reachable=False, error=exc.message, cause=cause)
            # Keep the last known state, marked unreachable: the pages say how old it is. Its
            # topics, brokers and groups are the previous snapshot's objects (a snapshot's are never
            # changed once it is out): a copy through JSON cost 3.6 s a cycle at 300,000
            # partitions, all of it serialised again and walked by the collector, and it held a
            # second set of states (the watcher's process went from 380 MB to 1.1 GB in a 30 s
            # outage and stayed there).
            return replace(previous, reachable=False, error=exc.message, cause=cause, checked_at=now)

        # The quorum and the racks as far as they have come: a slow answer is taken by a later
        # cycle, this one goes on with the last known (SideRead).
        stats.metadata_seconds = time.monotonic() - asked
        quorum: Quorum | None = None
        quorum_error = previous.quorum_error if previous is not None else None
        answer = self._quorum_read.take(SIDE_READ_WAIT)
        if answer is not None:
            quorum, failed = answer
            quorum_error = failed.message if failed is not None else None

        live_ids = {b.id for b in md.brokers}
        new_broker = not live_ids <= self.racks.keys()
        if (now >= self.next_racks or (new_broker and now >= self._racks_retry)) and self._racks_read.start():
            stats.count("describe_cluster")
        answer = self._racks_read.take(SIDE_READ_WAIT if new_broker else 0.0)
        if answer is not None:
            racks, failed = answer
            if failed is None:
                self.racks.update(racks)
                self.next_racks = now + settings.WATCHER_CONFIGS_INTERVAL
            else:  # (started again after SIDE_READ_RETRY, not by every cycle)
                self.next_racks = self._racks_retry = now + SIDE_READ_RETRY
                log.info("could not read broker racks of %s: %s", self.cluster, failed.message)

        # New topics get their min.insync.replicas as soon as it comes (a few hundred at a time, a
        # side read: describe-configs waits its whole timeout when a broker it asks is down); the
        # periodic re-read of every topic runs in the sampling thread so it never slows this cycle down.
        with self._offsets_lock:
            known_min_isr = dict(self._min_isr)
        fresh = list(islice(filterfalse(known_min_isr.__contains__, map(_NAME, md.topics)), 200))
        if fresh and now >= self._min_isr_retry and self._min_isr_read.start(fresh):
            stats.count("describe_configs")
        answer = self._min_isr_read.take(SIDE_READ_WAIT if fresh else 0.0)
        if answer is not None:
            found, failed = answer
            if failed is None:
                known_min_isr.update(found)
                with self._offsets_lock:
                    self._min_isr.update(found)
                    self._sample_gen += 1
            else:
                self._min_isr_retry = now + SIDE_READ_RETRY
                log.info("could not read topic configs of %s: %s", self.cluster, failed.message)

        self.stats = stats
        with self._offsets_lock:
            inputs = (md, self._sample_gen, tuple(sorted(self.racks.items())))
        last_inputs, self._last_inputs = self._last_inputs, inputs
        quorum_state = quorum_state_of(quorum, previous)
        leader = quorum_state.leader_id if quorum_state else None
        # Steady state at 30,000 partitions: building, diffing and serialising an identical snapshot
        # costs more than reading the metadata, so when nothing it is made of changed (the controller
        # included) only the stamp is new. Comparing the metadata costs a few tens of ms.
        same_metadata = last_inputs is not None and inputs[0] == last_inputs[0]
        self.metadata_moved = last_inputs is not None and not same_metadata
        self.unchanged = (previous is not None and previous.reachable and leader == previous.controller_id
                          and same_metadata and last_inputs is not None and inputs[1:] == last_inputs[1:])
        if self.unchanged:
            assert previous is not None
            with self._offsets_lock:
                offsets_at, groups_at = self._offsets_at, self._groups_at
            # A sample that changed nothing still says when the offsets were last read (stamp fields).
            return replace(previous, taken_at=now, checked_at=now, quorum=quorum_state, quorum_error=quorum_error,
                           offsets_at=offsets_at if offsets_at is not None else previous.offsets_at,
                           groups_at=groups_at if groups_at is not None else previous.groups_at)
        live = frozenset(b.id for b in md.brokers)
        unchanged = self._unchanged_topics(previous, md, known_min_isr, live ^ self._built_live)
        self.topics_reused = len(unchanged)
        built_anew: dict[str, list[int]] = {}
        snap = build_snapshot(self.cluster, previous, md, quorum, quorum_error, self.racks, known_min_isr, now,
                              self._kept_topics(previous, md, stats), unchanged,
                              self._built_from if self.incremental and previous is not None else None, built_anew,
                              live ^ self._built_live)
        self._built_from, self._built_min_isr = dict(zip(map(_NAME, md.topics), md.topics, strict=True)), known_min_isr
        self._built_live = live
        self._apply_offsets(snap, reused=unchanged, partly=built_anew)
        return snap

    def _unchanged_topics(self, previous: Snapshot | None, md: ClusterMetadata, min_isr: dict[str, int],
                          moved: frozenset[int]) -> frozenset[str]:
        """Topics whose metadata and min ISR equal what the previous snapshot's were built from, and
        with no replica on a broker that `moved` (left or came back since the last build).
        After an outage too: an unreachable snapshot holds the last reachable one's topics (`poll`),
        which `_built_from` built, so the first cycle after it rebuilds what changed meanwhile, not
        every topic (3.2 s at 300,000 partitions, and a second set of states held while it ran)."""
        if not self.incremental or previous is None:
            return frozenset()
        built, built_min, shown = self._built_from, self._built_min_isr, previous.topics
        # The gateway hands back the same object for a topic it saw unchanged, so identity decides
        # (a gateway handing back equal copies costs rebuilding them, which is still right). Each
        # test over every topic in C (map, compress), not a step per topic in Python.
        names = list(compress(map(_NAME, md.topics), map(is_, map(built.get, map(_NAME, md.topics)), md.topics)))
        if built_min != min_isr:
            names = list(compress(names, map(eq, map(built_min.get, names), map(min_isr.get, names))))
        names = list(compress(names, map(shown.__contains__, names)))
        if moved:
            # A broker gone or back changes the offline replicas of the partitions it hosts: the
            # topics with a replica on one are built anew, the others carried over (every topic was
            # rebuilt: 3.5 s at 300,000 partitions on 100 brokers, where one broker hosts a replica
            # of a third of the topics).
            names = [name for name in names if moved.isdisjoint(chain.from_iterable(map(_REPLICAS, shown[name].partitions)))]
        return frozenset(names)

    def _kept_topics(self, previous: Snapshot | None, md: ClusterMetadata, stats: CycleStats) -> frozenset[str]:
        """Topics the metadata answer left out that Kafka still has (or could not say it has not):
        a snapshot never loses a topic to a partial answer, and "deleted" is only said when Kafka says so."""
        if previous is None or not previous.topics:  # (an unreachable snapshot still holds the last known topics)
            return frozenset()
        answered = set(map(_NAME, md.topics))
        if previous.topics.keys() <= answered:  # (every topic answered for: the usual case, looked at in C)
            return frozenset()
        missing = [name for name in previous.topics if name not in answered]
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

    def _apply_offsets(self, snap: Snapshot, reused: frozenset[str] = frozenset(),
                       partly: Mapping[str, list[int]] | None = None) -> None:
        """Put the latest offsets, sizes, rates and groups in the snapshot: into every topic built
        anew, and into the `reused` ones (carried over from the previous snapshot) only where a
        sample changed them since. `partly`: topics built anew that kept some partitions' state
        objects, with the places of the partitions built anew (the kept ones are treated as a
        reused topic's)."""
        partly = partly or {}
        with self._offsets_lock:
            starts, ends, at = self._starts, self._ends, self._offsets_at
            sizes, rates = self._sizes, self._rates
            groups, groups_at = self._groups, self._groups_at
            group_parts, group_topics = self._group_parts, self._remote_group_topics
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
        elif group_parts is not None:
            # The groups as the sampling process serialised them: the snapshot object holds none.
            snap.groups, snap.groups_at = {}, groups_at
            self._snapshot_group_parts = group_parts
            if self._topic_groups_of[0] is not group_topics:
                by_topic: dict[str, list[str]] = {}
                for gid, names in group_topics.items():
                    for topic in names:
                        by_topic.setdefault(topic, []).append(gid)
                self._topic_groups_of = (group_topics, {t: sorted(gs) for t, gs in by_topic.items()})
            snap.topic_groups = self._topic_groups_of[1]
        if at is None:
            return
        later = self._later_topics(dirty, reused)
        # The topics built this cycle, and those carried over that a sample changed and this cycle
        # takes: not a look at every topic of the cluster.
        shown = snap.topics
        for name in (shown.keys() - reused) | ((dirty & reused) - later):
            t = shown[name]
            carried = name in reused  # the previous snapshot's object: changed only as a copy
            parts, new_parts = t.partitions, None
            built = partly.get(name)  # a topic built anew whose unchanged partitions are shared
            if carried:
                # A topic carried over looks only at the partitions a sample changed since.
                places: Iterable[int] = _indices(parts, dirty_partitions.get(name, ()))
                shared: set[int] | None = None
            elif built is not None:
                changed = set(_indices(parts, dirty_partitions.get(name, ()))) if name in dirty else set()
                places, shared = sorted(changed.union(built)), changed.difference(built)
            else:
                places, shared = range(len(parts)), None
            for i in places:
                p = parts[i]
                key = (name, p.partition)
                end, start = ends.get(key, p.end_offset), starts.get(key, p.start_offset)
                replica_sizes, size = p.replica_sizes, p.size
                replicas = sizes.get(key)
                if replicas is not None:  # (the sample's own mapping, kept by the partition: one per partition)
                    replica_sizes = replicas
                    leader_size = replicas.get(broker_key(p.leader))  # (the largest replica's without one)
                    size = leader_size if leader_size is not None else max(replicas.values())
                if end == p.end_offset and start == p.start_offset and size == p.size and replica_sizes == p.replica_sizes:
                    continue
                if carried:
                    # Only the partitions that changed are copied: the others stay shared with the
                    # previous snapshot, so the diff and the serialisation can tell them by identity.
                    if new_parts is None:
                        new_parts = list(parts)
                    new_parts[i] = p.with_offsets(start, end, size, replica_sizes)
                elif shared is not None and i in shared:
                    parts[i] = p.with_offsets(start, end, size, replica_sizes)  # (the list is this snapshot's own)
                else:
                    p.end_offset, p.start_offset, p.replica_sizes, p.size = end, start, replica_sizes, size
            rate = rates.get(name, t.produce_rate)
            if carried:
                if new_parts is None and rate == t.produce_rate:
                    continue  # nothing it shows changed: the same object
                t = snap.topics[name] = replace(t, partitions=new_parts if new_parts is not None else list(parts))
            t.produce_rate = rate
        if later:
            # Left for the next cycles, marked again (with what a sample marked meanwhile): this
            # snapshot keeps its offsets as of the last sample applied whole, so a page waiting for
            # offsets read after a change (read-your-writes) waits for these too.
            with self._offsets_lock:
                self._dirty_topics |= later
                for name in later:
                    numbers = dirty_partitions.get(name)
                    if numbers:
                        self._dirty_partitions.setdefault(name, set()).update(numbers)
                self._sample_gen += 1  # (the next cycle is not one that changed nothing)
            return
        snap.offsets_at = at

    def _later_topics(self, dirty: set[str], reused: frozenset[str]) -> set[str]:
        """Of the topics carried over whose offsets, sizes or rate a sample changed, those left for
        the next cycles: beyond what `sampled_share` gives this cycle (at most
        WATCHER_CYCLE_SAMPLED_TOPICS), those waiting longest first. Each
        sampling pass at 300,000 partitions changes the rate of every topic producing, and the cycle
        that took all 10,000 in at once took twice the usual cycle (over 1 s, and the leader moves
        it carried were pushed that much later); its share, spread over the next cycles, is shown
        a second or two later. A topic whose metadata changed is built with its latest offsets in
        any case."""
        limit = settings.WATCHER_CYCLE_SAMPLED_TOPICS
        waiting = self._waiting_topics
        due = [name for name in dirty if name in reused] if len(dirty) > min(SPREAD_FLOOR, limit) else []
        taken = self.sampled_share.take(len(due), limit, settings.WATCHER_METADATA_INTERVAL)
        if taken < min(len(due), limit) and self._offsets_awaited():
            taken = min(len(due), limit)  # (a page waits for them: as many as a cycle takes)
        if taken >= len(due):
            self._waiting_topics = {}
            return set()
        due.sort(key=lambda name: waiting.get(name, self.cycles))  # (those left last time first, then the rest)
        later = due[taken:]
        self._waiting_topics = {name: waiting.get(name, self.cycles) for name in later}
        return set(later)

    def _offsets_awaited(self) -> bool:
        """Whether a request waits for offsets read after a change made through the console
        (read-your-writes: `store.note_change` "offsets:<topic>"), which the snapshot shows only
        once every topic's sampled changes are in."""
        return any(what.startswith("offsets:") for what in store.pending_changes(self.cluster, settings.READ_YOUR_WRITES_WAIT))

    def sample_offsets(self, wait: float = 0.0) -> None:
        """One sampling pass (console/watcher/sampler.py) over the online partitions of the last
        snapshot, merged for the next metadata cycle. Runs in the watcher's second thread.
        With the sampling in its own process: tell it what to sample when that changed, and merge
        the passes it finished (waiting up to `wait` seconds for one)."""
        snap = self.previous
        if self.remote is not None:
            if snap is None or not snap.reachable:
                self.remote.pause()
                time.sleep(min(wait, 1.0))
                return
            self.remote.target(self._partitions(snap), sorted(snap.live_broker_ids()))
            for sample in self.remote.receive(wait):
                with self.turns.merge():
                    self.merge(sample)
            return
        if snap is None or not snap.reachable:
            return
        assert isinstance(self.sampler, Sampler)
        sample = self.sampler.take(self._partitions(snap), sorted(snap.live_broker_ids()))
        with self.turns.merge():
            self.merge(sample)

    def _sampler_restarted(self, reason: str) -> None:
        """An event on the timeline: lag and offsets paused while the sampling process was down."""
        try:
            self.publisher.emit([EventRow(cluster=self.cluster, at=datetime.now(tz=UTC), kind="watcher", severity="warning",
                                          message=f"The watcher's sampling process ended ({reason}) and was started again: "
                                                  "offsets and lag resume with its first pass.",
                                          details={"reason": reason, "process": "sampling"})])
        except Exception:  # noqa: BLE001 - the restart matters more than its record
            log.warning("could not record the sampling process's restart", exc_info=True)

    def pause_sampling(self) -> None:
        """Stop the sampling process's passes (this watcher lost its lease) until the next `sample_offsets`."""
        if self.remote is not None:
            self.remote.pause()

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()
        self.publisher.close()

    def merge(self, sample: Sample) -> None:
        """Hand a sample to the metadata cycle: what it changed is marked, so the next cycle
        rebuilds only that (and nothing when nothing changed)."""
        with self._offsets_lock:
            for topic, partition in sample.changed:
                numbers = self._dirty_partitions.get(topic)
                if numbers is None:
                    numbers = self._dirty_partitions[topic] = set()
                numbers.add(partition)
            dirty = {tp[0] for tp in sample.changed}
            rates = sample.rates
            dirty |= {t for t in rates.keys() | self._rates.keys() if rates.get(t) != self._rates.get(t)}
            self._ends, self._starts, self._rates = sample.ends, sample.starts, rates
            self._offsets_at = sample.started
            if sample.sizes is not None:
                self._sizes = sample.sizes
            if sample.groups is not None and sample.groups is not self._groups:
                self._groups, self._groups_at = sample.groups, sample.started
            if sample.group_parts is not None:
                self._groups_at = sample.started
                # (the same JSON mapping, renewed in place, comes with new topics when those changed)
                self._group_parts, self._remote_group_topics = sample.group_parts, sample.group_topics or {}
            self._dirty_topics |= dirty
            if dirty:
                self.sampled_share.merged()
            if sample.groups_changed or self._worth_a_snapshot(dirty, sample.started):
                self._sample_gen += 1

    def _worth_a_snapshot(self, dirty: set[str], at: float) -> bool:
        """Whether topics a sample changed make a new snapshot. The console's own samples topic alone
        does so only every WATCHER_OWN_TOPIC_INTERVAL seconds (its changes wait, marked, and go
        into the next snapshot made for any reason)."""
        own = settings.ANALYTICS_SAMPLES_TOPIC if settings.ANALYTICS_SAMPLES else None
        if not dirty:
            return False
        if own is None or dirty != {own} or at - self._own_topic_at >= settings.WATCHER_OWN_TOPIC_INTERVAL:
            self._own_topic_at = at
            return True
        return False

    def _partitions(self, snap: Snapshot) -> Layout:
        """The online partitions of a snapshot (each topic's partition numbers: no tuple per
        partition), listed once per topics dict (a cycle that changed nothing keeps it) and per
        topic (a topic carried over, or changed with the same partitions online, gives the same
        numbers)."""
        if self._partitions_of[0] is not snap.topics:
            per_topic, self._topic_partitions = self._topic_partitions, {}
            same = True
            for t in snap.topics.values():
                cached = per_topic.get(t.name)
                if cached is None or (cached[0] is not t and not _same_online(cached[0].partitions, t.partitions)):
                    cached = (t, tuple([p.partition for p in t.partitions if not p.offline]))
                    same = False
                elif cached[0] is not t:
                    cached = (t, cached[1])
                self._topic_partitions[t.name] = cached
            if same and len(per_topic) == len(self._topic_partitions):
                self._partitions_of = (snap.topics, self._partitions_of[1])  # (the same list: nothing to send)
            else:
                self._partitions_of = (snap.topics, Layout([(name, c[1]) for name, c in self._topic_partitions.items()]))
        return self._partitions_of[1]

    def _stored_group_parts(self, snap: Snapshot) -> store.GroupParts | None:
        """The groups' parts to store with `snap` when they come from a sampling process (an
        unreachable cluster's snapshot keeps the last ones), else None: its own groups are serialised.
        Keyed as stored ("g:<id>") by the merger (DeltaMerger.group_parts)."""
        parts = self._snapshot_group_parts
        if parts is None or snap.groups:
            return None
        return parts

    def _content(self, snap: Snapshot) -> tuple[ContentParts, dict[str, int], dict[str, bytes] | None, set[str], bool]:
        """The content to store with `snap` and every part's digest; of the groups' parts from a
        sampling process, those carried (the ones not written yet: the rest are in Redis, only
        their digests here), else None, and those written ahead (store.GroupParts); and whether the
        content holds every part, as a save that writes everything needs. With a sampling process,
        how the digests differ from the last content's is kept in `_changes` (store.PartChanges)."""
        groups = self._stored_group_parts(snap)
        self._changes = None
        if groups is None:
            content = snap.content_parts(self._topic_bytes, self._group_bytes)
            self._count_serialised()
            for cache in (self._topic_bytes, self._group_bytes):  # (digests made whole: their lists let go of)
                if cache is not None:
                    cache.take_touched()
            self._digests_made = None
            return content, store.digests_of(content[1]), None, set(), True
        # Parts arriving are written ahead while the store holds the last snapshot whole; held
        # while the next save must write everything.
        groups.direct(None if self.publisher.writes_all else partial(store.put_parts, self.cluster))
        # (None until this content's digests are made: a failure on the way, the groups named as
        # changed taken, makes the next content's whole)
        made, self._digests_made = self._digests_made, None
        digests, unwritten, ahead, touched = groups.changes_taken()
        content = snap.content_parts(self._topic_bytes, self._group_bytes, unwritten)
        self._count_serialised()
        topics = self._topic_bytes.take_touched() if self._topic_bytes is not None else None
        base = self._content_key[1] if self._content_key is not None else None
        parts = content[1]
        if base is not None and topics is not None and made is not None and made[0] is base and made[1] is groups:
            # The last content's digests with those of the topics serialised since and the groups
            # that arrived since: not a look at every part (10,000 topics and 50,000 groups).
            every, self._changes = store.digests_moved(base, chain(
                ((name, store.digest(parts[name]) if name in parts else None) for name in topics),
                ((key, digests.get(key)) for key in touched)))
        else:
            every = store.digests_of(parts)  # (a part's digest is cached in its bytes: the groups' cost nothing)
            every.update(digests)
        self._digests_made = (every, groups)
        return content, every, unwritten, ahead, store.GroupParts.complete(digests, unwritten)

    def _count_serialised(self) -> None:
        if self._topic_bytes is not None:
            self.topics_serialised, self.partitions_serialised = self._topic_bytes.serialised, self._topic_bytes.partitions_serialised

    def _ask_groups_again(self) -> None:
        """A save must write every part and this process holds only the digests of most groups'
        (Redis lost them, or never had them from this watcher): the sampling process sends every
        group again, its pieces put in as a pass's are; asked again if none came within
        GROUPS_ASKED_AGAIN seconds (a process started anew sends them all anyway)."""
        now = time.monotonic()
        if self.remote is not None and (self._groups_asked_at is None or now - self._groups_asked_at >= GROUPS_ASKED_AGAIN):
            log.info("asking the sampling process of %s for every group's part again", self.cluster)
            self.remote.ask_groups_again()
            self._groups_asked_at = now

    def cycle(self) -> tuple[Snapshot, list[Change]]:
        with self.turns.cycle():
            try:
                return self._cycle()
            except Exception:
                failure_seen()
                # What this cycle read is taken (its metadata as what topics are built from, the
                # offsets it took in) but its snapshot is not the last one: the next cycle builds
                # every topic anew and makes every digest, not just what changed after this one.
                self._built_from, self._last_inputs, self._digests_made = {}, None, None
                raise

    def _cycle(self) -> tuple[Snapshot, list[Change]]:
        now = time.time()
        started = time.monotonic()
        self.topics_serialised = self.partitions_serialised = 0
        with no_gc():
            snap = self.poll(now)
        content: ContentParts | None = None
        carried: dict[str, bytes] | None = None  # (the groups' parts in `content`, from the sampling process)
        ahead: set[str] = set()
        whole = True
        reused = False  # (the last snapshot's content, unchanged: no events either)
        moved: store.PartChanges | None = None  # (how the content's digests differ from the last's, when known)
        if self.unchanged and self._content_key is not None:
            reused, changed, key = True, False, self._content_key
            if not self.publisher.saved_once:  # (Redis lost it: the same content again, from the caches)
                content, digests, carried, ahead, whole = self._content(snap)
                key = (content[0], digests)  # (what is written, exactly)
        else:
            content, digests, carried, ahead, whole = self._content(snap)
            key = (content[0], digests)
            moved = self._changes
            if moved is not None and self._content_key is not None and moved.base is self._content_key[1]:
                changed = bool(moved) or content[0] != self._content_key[0]
                if not changed:  # (the same digests: the dict before stays the base, as stored)
                    key, moved = self._content_key, None
                    self._digests_made = (key[1], self._digests_made[1]) if self._digests_made is not None else None
            else:
                moved = None
                changed = key != self._content_key
        if changed:
            snap.version = (self.previous.version if self.previous else 0) + 1
        self.stats.seconds = time.monotonic() - started
        # The snapshot first: pages see a change without waiting for its events to be written (at
        # 300,000 partitions a cycle can bring thousands, 0.4 s of database work); the events follow
        # in a message of their own.
        to_save = content if changed or not self.publisher.saved_once else None
        if to_save is not None and self.publisher.writes_all and not whole:
            # Nothing is stored this cycle (as when Redis refuses it): a snapshot without some
            # groups is never written; the next cycle writes everything once their parts are here.
            self._ask_groups_again()
        else:
            if self.publisher.publish(snap, self.previous, [], changed, to_save, key[1], ahead if to_save is not None else (),
                                      moved if to_save is not None else None) \
                    and to_save is not None and carried is not None:
                cast(store.GroupParts, self._snapshot_group_parts).written(carried, ahead)  # (in Redis now: let go of)
            self.published_at = time.time()
        self._content_key = key  # (what is published is the base of the next cycle, whatever the events do)
        del content, to_save, carried
        # The events after the snapshot is out: a leader move reaches the pages without waiting for
        # the diff (0.06 s of a cycle at 300,000 partitions).
        changes: list[Change] = [] if reused else diff(self.previous, snap)
        self.previous = snap
        self.publisher.record_later(snap, changes)
        self.cycles += 1
        self.cycles_reused += self.unchanged
        took = time.monotonic() - started
        self._cycle_times.append(took)
        if took > SLOW_CYCLE_LOGGED and snap.reachable:  # (an unreachable cluster's cycles wait out the timeout: said once, as its event)
            log.warning("a cycle of %s took %.1f s (reading the metadata %.1f s, before its snapshot was out %.1f s; "
                        "requests %s)", self.cluster, took, self.stats.metadata_seconds, self.stats.seconds, self.stats.requests)
        ordered = sorted(self._cycle_times)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        store.save_stats(self.cluster, {
            "cycles": self.cycles,
            "cycles_reused": self.cycles_reused,  # nothing changed: the last snapshot's content was kept
            "cycle_seconds": round(self.stats.seconds, 4),
            "cycle_p50_seconds": round(ordered[len(ordered) // 2], 4),
            "cycle_max_seconds": round(ordered[-1], 4),
            "partitions": sum(map(len, map(_PARTITIONS, snap.topics.values()))),
            "requests_last_cycle": self.stats.requests,
            "offset_requests_total": self.offset_requests + self.sampler.requests,
            "cpu_seconds_total": round(usage.ru_utime + usage.ru_stime, 2),
            "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
            # The sampling process, when it has one (its figures as of its last pass).
            **({"sampler_rss_mb": self.remote.child_rss_mb, "sampler_cpu_seconds_total": round(self.remote.child_cpu_seconds, 2),
                "sampler_restarts": self.remote.restarts} if self.remote is not None else {}),
            # The sampling thread (offsets, sizes, groups, and the analytics samples it writes).
            "sampling_p50_seconds": round(sorted(self.sampler.times)[len(self.sampler.times) // 2], 4) if self.sampler.times else None,
            "samples_records_total": self.sampler.writer.records,
            "samples_seconds_total": round(self.sampler.writer.seconds, 3),
            "samples_refused": self.sampler.writer.refused,
            **self.sampler.group_stats,
            "at": time.time(),
        })
        return snap, changes
