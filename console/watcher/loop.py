"""The watcher of one cluster (ClusterWatcher): the metadata cycle (poll and build the snapshot:
polling.py, build.py; publish it, then its events: publisher.py) and the sampling pass merged for
it (merging.py), each run by its own thread (runner.py).

Kafka sees the same few requests per cycle however many browsers are watching; what a cycle does
follows what changed since the last one, not the size of the cluster.
"""

from __future__ import annotations

import logging
import resource
import time
from collections import deque
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from itertools import chain
from operator import attrgetter
from typing import cast

from console import gateway
from console.errors import PartUnreadable
from console.gateway.client import ClusterGateway
from console.lifecycle import failure_seen
from console.snapshots import loader, store
from console.snapshots.gc_pause import no_gc
from console.snapshots.model import Snapshot, TopicState
from console.snapshots.part_cache import GroupBytes, TopicBytes, content_parts
from console.snapshots.parts import ContentParts
from console.watcher.diff import Change, diff
from console.watcher.polling import MetadataPolling
from console.watcher.publisher import Publisher
from console.watcher.registry import EventRow
from console.watcher.replica_lag import LagWatch
from console.watcher.sampler import Sampler
from console.watcher.sampling_process import GatewayFactory, RemoteSampler
from console.watcher.turns import CycleFirst

log = logging.getLogger(__name__)

_PARTITIONS = attrgetter("partitions")

SLOW_CYCLE_LOGGED = 5.0  # seconds: a cycle that took longer says where its time went, in the log
GROUPS_ASKED_AGAIN = 30.0  # seconds before every group's part is asked for again (ClusterWatcher._ask_groups_again)


class ClusterWatcher(MetadataPolling):
    """One cluster's watcher: each `cycle` polls (MetadataPolling), takes in what the sampling
    passes merged (SampleMerging), publishes the snapshot, then its events."""

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
        self.replica_lag = LagWatch(cluster)
        self.publisher = Publisher(cluster, background=events_thread)
        # The header and the parts' digests (store.digests_of) of the last content: whether the next
        # one changed is told from these, not from the last content's JSON held through the cycle.
        self._content_key: tuple[bytes, dict[str, int]] | None = None
        # The digests `_content` made from a sampling process's group parts (and those parts), and
        # how they differ from the content's before (None: not known).
        self._digests_made: tuple[dict[str, int], store.GroupParts] | None = None
        self._changes: store.PartChanges | None = None
        self._cycle_times: deque[float] = deque(maxlen=60)
        self._groups_asked_at: float | None = None  # when every group's part was last asked for again
        # The metadata cycle runs before the sampling thread's work in this interpreter (turns.py).
        self.turns = CycleFirst()
        self.remote = RemoteSampler(cluster, incremental, remote_gateway, self.publisher.queue, self._sampler_restarted,
                                    self.turns) if remote else None
        self.sampler = self.remote if self.remote is not None else \
            Sampler(cluster, self.gateway, incremental, self.publisher.emit)
        self.incremental = incremental
        self._topic_bytes = TopicBytes() if incremental else None  # each topic's JSON while it is the same object
        self._group_bytes = GroupBytes() if incremental else None  # each group's, while the same object and evaluation
        self.topics_serialised = self.partitions_serialised = 0  # (by the last cycle: its changed topics, and their changed partitions)
        self.cycles_reused = 0
        self.cycles = 0
        self.published_at: float | None = None  # when the last cycle's snapshot went out (stored and broadcast)
        super().__init__()  # (what the polling and the merged samples keep)

    def load_previous(self) -> None:
        try:
            loaded = loader.load(self.cluster)
            # Every group and every topic's partitions parsed now (one that cannot be read is a
            # store that cannot), in a copy: the store's cached snapshot is shared and never changed.
            # The watcher holds plain TopicStates, as it builds them (a StoredTopic's tally is the store's).
            self.previous = None if loaded is None else replace(
                loaded, groups=dict(loaded.groups),
                topics={name: TopicState(t.name, t.internal, t.partitions, t.min_isr, t.produce_rate)
                        for name, t in loaded.topics.items()})
        except (store.StoreUnavailable, PartUnreadable):
            self.previous = None
        content = content_parts(self.previous, self._topic_bytes, self._group_bytes) if self.previous else None
        self._content_key = (content[0], store.digests_of(content[1])) if content is not None else None
        self.publisher.restart(saved=self.previous is not None)

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
            content = content_parts(snap, self._topic_bytes, self._group_bytes)
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
        content = content_parts(snap, self._topic_bytes, self._group_bytes, unwritten)
        self._count_serialised()
        topics = self._topic_bytes.take_touched() if self._topic_bytes is not None else None
        base = self._content_key[1] if self._content_key is not None else None
        parts = content[1]
        if base is not None and topics is not None and made is not None and made[0] is base and made[1] is groups:
            # The last content's digests with those of the topics serialised since and the groups
            # that arrived since, not a look at every part: the cost follows what changed.
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
        # The snapshot first: pages see a change without waiting for its events to be written (a
        # large cluster's cycle can bring thousands); the events follow in a message of their own.
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
        # the diff.
        changes: list[Change] = [] if reused else diff(self.previous, snap)
        try:  # (growing follower lag: its streaks kept for the pages, and the ISR about to shrink as events)
            changes += self.replica_lag.look(snap, now)
        except Exception:  # noqa: BLE001 - a fault in it must not stop the snapshots
            log.exception("looking at the replica lag of %s failed", self.cluster)
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
