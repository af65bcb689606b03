"""The sampling side of a cluster's watcher (SampleMerging): each sampling pass merged for the
metadata cycle, which puts what it changed into the next snapshot (and nothing when nothing
changed), a share of the carried topics at a time (sampled_share.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from django.conf import settings

from console.snapshots import changes, store
from console.snapshots.encoding import broker_key
from console.snapshots.model import GroupState, PartitionState, Snapshot, TopicState
from console.watcher.sample import Layout, Sample
from console.watcher.sampled_share import SampledShare
from console.watcher.sampler import Sampler
from console.watcher.sampling_process import RemoteSampler
from console.watcher.turns import CycleFirst


class SampleMerging:
    """What a cluster's watcher keeps of the sampling passes (under `_offsets_lock`: the sampling
    thread writes it, the metadata cycle takes it), and how it goes into a snapshot."""

    # (the watcher's own, set by ClusterWatcher)
    cluster: str
    previous: Snapshot | None
    remote: RemoteSampler | None
    sampler: Sampler | RemoteSampler
    turns: CycleFirst
    cycles: int

    def __init__(self) -> None:
        self._offsets_lock = threading.Lock()
        self._starts: Mapping[tuple[str, int], int] = {}
        self._ends: Mapping[tuple[str, int], int] = {}
        self._offsets_at: float | None = None
        self._sizes: Mapping[tuple[str, int], Mapping[str, int]] = {}  # as the snapshot keeps them (snapshot.replica_sizes)
        self._rates: Mapping[str, float] = {}
        self._min_isr: dict[str, int] = {}
        self._groups: dict[str, GroupState] | None = None
        self._groups_at: float | None = None
        # From a sampling process: each group's part (store.GroupParts) and the topics it reads
        # (instead of `_groups`), and the parts the last snapshot was made with.
        self._group_parts: store.GroupParts | None = None
        self._remote_group_topics: Mapping[str, list[str]] = {}
        self._snapshot_group_parts: store.GroupParts | None = None
        self._topic_groups_of: tuple[Any, dict[str, list[str]]] = (None, {})
        self._group_topics: dict[str, tuple[GroupState, list[str]]] = {}  # the topics each group state reads
        self._partitions_of: tuple[dict[str, TopicState] | None, Layout] = (None, Layout([]))  # what to sample, per topics
        self._topic_partitions: dict[str, tuple[TopicState, tuple[int, ...]]] = {}
        # Bumped whenever the sampling thread stores something the snapshot shows (offsets, sizes,
        # groups, min ISR): with unchanged metadata and no new sample, a cycle reuses the last snapshot.
        self._sample_gen = 0
        # Topics whose offsets, sizes or rate a sample changed since they were last put in a snapshot.
        self._dirty_topics: set[str] = set()
        self._dirty_partitions: dict[str, set[int]] = {}  # of the dirty topics, the partitions a sample changed
        self._waiting_topics: dict[str, int] = {}  # dirty topics left for later cycles -> the cycle that first left them
        self.sampled_share = SampledShare()  # how many of those a cycle takes
        self._own_topic_at = 0.0  # when a sample last made a snapshot (see _worth_a_snapshot)

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
        WATCHER_CYCLE_SAMPLED_TOPICS), those waiting longest first, so that no cycle takes a whole
        pass's changes at once. A topic whose metadata changed is built with its latest offsets in
        any case."""
        limit = settings.WATCHER_CYCLE_SAMPLED_TOPICS
        waiting = self._waiting_topics
        due = [name for name in dirty if name in reused] if len(dirty) > self.sampled_share.floor(limit) else []
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
        (read-your-writes: `changes.note_change` "offsets:<topic>"), which the snapshot shows only
        once every topic's sampled changes are in."""
        return any(what.startswith("offsets:") for what in changes.pending_changes(self.cluster, settings.READ_YOUR_WRITES_WAIT))

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

