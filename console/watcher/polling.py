"""The metadata side of a cluster's watcher (MetadataPolling): what a cycle asks Kafka (the
metadata, with the quorum, racks and new topics' min ISR as side reads) and the snapshot it builds
from the answer, carrying over what did not change.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from itertools import chain, compress, filterfalse, islice
from operator import attrgetter, eq, is_
from typing import Any

from django.conf import settings

from console.gateway.client import ClusterGateway
from console.gateway.errors import GatewayError
from console.gateway.types import ClusterMetadata, Quorum
from console.snapshots.model import Snapshot
from console.watcher.build import build_snapshot, quorum_state_of
from console.watcher.merging import SampleMerging
from console.watcher.reachability import BrokerReachability
from console.watcher.side_read import SIDE_READ_RETRY, SIDE_READ_WAIT, SideRead

log = logging.getLogger(__name__)

_NAME = attrgetter("name")
_REPLICAS = attrgetter("replicas")


@dataclass
class CycleStats:
    """Kafka requests made by the last cycle and where its time went (the watcher's stats)."""

    requests: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    metadata_seconds: float = 0.0  # of which reading the metadata

    def count(self, name: str) -> None:
        self.requests[name] = self.requests.get(name, 0) + 1



class MetadataPolling(SampleMerging):
    """What a cluster's watcher keeps between metadata cycles, and the poll that makes each
    cycle's snapshot."""

    # (the watcher's own, set by ClusterWatcher)
    gateway: ClusterGateway
    incremental: bool

    def __init__(self) -> None:
        super().__init__()
        self.racks: dict[int, str | None] = {}
        self.next_racks = 0.0  # when the racks are read again (and whenever a broker not known appears)
        self.next_configs = 0.0
        self._quorum_read = SideRead("the KRaft quorum", lambda: self.gateway.quorum())
        self._racks_read = SideRead("the broker racks", lambda: self.gateway.broker_racks())
        self._racks_retry = 0.0  # after a failed racks read, a broker not known starts one no sooner than this
        self._min_isr_read = SideRead("new topics' min.insync.replicas", self._read_min_isr)
        self._min_isr_retry = 0.0  # after a failed read, new topics' min ISR is asked again from then on
        self.reachability = BrokerReachability(lambda addresses: self.gateway.probe_brokers(addresses))
        self.stats = CycleStats()
        self._built_from: dict[str, Any] = {}  # topic -> its metadata, of the last build
        self._built_min_isr: dict[str, int] = {}  # the min ISR of the last build (that cycle's own dict, not changed since)
        self._built_live: frozenset[int] = frozenset()  # the live brokers of the last build
        self._last_inputs: tuple[Any, ...] | None = None
        self.unchanged = False  # the last poll reused the previous snapshot's content
        self.metadata_moved = False  # the last poll's metadata differed from the one before (runner.cycle_delay)
        self.topics_reused = 0  # topics the last build carried over from the previous snapshot
        self.offset_requests = 0  # (the configs re-read; the sampler counts its own)

    def poll(self, now: float) -> Snapshot:
        """Ask Kafka for what changed; an unreachable cluster keeps the last known state."""
        stats = CycleStats()
        previous = self.previous
        self.unchanged = self.metadata_moved = False
        if self._quorum_read.start():  # (beside the metadata read; taken once that is in)
            stats.count("describe_quorum")
        self.reachability.start()  # (the ports of the last metadata's brokers, beside the metadata read too)
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
            # changed once it is out): a copy would be serialised again, walked by the collector,
            # and held as a second set of states for as long as the outage lasts.
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

        # (taken last: the probe, started with the metadata read, has had the longest to answer)
        unreachable = self.reachability.take(md.brokers)
        self.stats = stats
        with self._offsets_lock:
            inputs = (md, self._sample_gen, tuple(sorted(self.racks.items())), unreachable)
        last_inputs, self._last_inputs = self._last_inputs, inputs
        quorum_state = quorum_state_of(quorum, previous)
        leader = quorum_state.leader_id if quorum_state else None
        # Building, diffing and serialising an identical snapshot costs more than reading the
        # metadata, so when nothing it is made of changed (the controller included) only the stamp
        # is new; comparing the metadata is cheap.
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
                              live ^ self._built_live, unreachable)
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
        every topic."""
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
            # topics with a replica on one are built anew, the others carried over (one broker can
            # host a replica of a large share of the topics, but rarely of all).
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

