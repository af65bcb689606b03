"""The sampling pass in a process of its own (WATCHER_SAMPLER_PROCESS, on by default).

A sampling pass (offsets, sizes, groups and their evaluation: lag status, time lag, rebalances, lag
history, analytics samples) costs seconds of CPU on a large cluster; in the watcher's process it
held the interpreter lock the metadata cycle needs, so a leader move waited for the groups to be
judged. Here the pass runs in a child process with its own lock (and core), and sends the watcher
only what changed since its last pass (`SampleDelta`): the offsets and sizes that moved, the group
states whose description, commits or evaluation changed (as the JSON the store keeps), the events
it saved. The watcher turns
each delta back into a whole `Sample` (`DeltaMerger`) and merges it as it merges one taken in its
own thread, so everything after (snapshot, store, pages) is the same either way.

The watcher tells the child what to sample (the online partitions and live brokers of its last
snapshot) when that changes, or to pause (lease lost, cluster unreachable). A child that dies is
started again by the next call; its first delta is whole. The child dies with the watcher.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import os
import queue
import resource
import sys
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from django.conf import settings

from console.lifecycle import die_with_parent, exit_reason, tune_malloc
from console.snapshots import store
from console.snapshots.model import GROUP_PART, GroupState, group_part
from console.watcher.columns import ListColumns, OffsetColumns, PackedOffsets, pack
from console.watcher.sampler import Sample, TopicPartition
from console.watcher.size_columns import PackedSizes, SizeColumns, unpack_sizes
from console.watcher.turns import CycleFirst

log = logging.getLogger(__name__)

SAMPLER_NICENESS = 10
ALIVE_EVERY_MAX = 10.0  # seconds between a pass's "alive" messages (at most a quarter of the stall limit)
# Groups per message: a pass that changed 50,000 groups (150 MB of JSON) went as one pickle, held
# whole in both processes next to what it carried; ahead of the delta, the changed groups go in
# pieces of this many, and the delta carries the last one. The watcher puts each in place as it
# arrives (DeltaMerger.apply_piece), letting go of the JSON it replaces.
GROUP_PIECE = 2000
# Partitions per message of a pass's changed offsets and sizes (ahead of the delta, as the groups'
# pieces are): a first pass sends every partition's, and pickled whole (24 MB at 300,000 partitions)
# the delta made the sampling process peak 81 MB above what it held (a pickle keeps its whole output,
# grown by doubling, and a copy of it), the watcher's unpickling it likewise.
OFFSETS_PIECE = 20_000
TOPIC_LISTS_MAX = 100_000  # distinct lists of topics the merger shares (DeltaMerger._topics): forgotten all at once beyond
RESTART_STABLE_SECONDS = 30.0  # a process that ran this long is started again at once when it ends
# A first pass that outlasts WATCHER_SAMPLER_STALL_SECONDS has the next process allowed twice as long,
# up to this many times the setting (RemoteSampler.stall_limit).
STALL_LIMIT_MAX_FACTOR = 8
GatewayFactory = Callable[[], Any]  # picklable; called in the child (None: the cluster's own gateway)


@dataclass(frozen=True)
class SampleDelta:
    """One pass, as what changed since the pass before (or everything, when `full`)."""

    full: bool
    started: float
    # What changed, packed by topic (columns.pack, SizeColumns.changed_packed): a few arrays per
    # topic, not an object per partition to pickle.
    ends: PackedOffsets
    starts: PackedOffsets
    sizes: PackedSizes | None  # None: not read this pass
    rates: Mapping[str, float]
    groups: dict[str, tuple[bytes, list[str]]] | None  # of each group that changed: its JSON, the topics it reads;
    # None: the groups could not be read
    group_ids: list[str] | None  # every group, in order, when the set of groups changed (else None)
    groups_changed: bool
    events: list[dict[str, Any]] = field(default_factory=list)  # saved by the child, for the next broadcast
    stats: dict[str, Any] = field(default_factory=dict)


def _marks(g: GroupState) -> tuple[GroupState, int]:
    """What tells whether a group is as it was last sent: its state object (a state is never
    changed once made, but for its evaluation), and one digest of the evaluation's figures, which
    the evaluation renews in place (new lists or arrays when it judges the group). Holding the
    figures themselves kept every group's from the pass before alive through the next pass (15 MB
    of time lags at 50,000 groups); a tuple of the five figures, two of them as (type, digest)
    pairs, was 220 bytes a group (11 MB), one digest is 32."""
    return (g, store.digest((g.status, g.time_lag, tuple(g.lag_keys), _figure(g.lag_status), _figure(g.lag_seconds))))


def _figure(value: Any) -> Any:
    """A per-partition figure as a hashable value: its type and bytes when it is packed (an array,
    or bytes of its own), else its items."""
    if isinstance(value, array):
        return (type(value), value.tobytes())
    if isinstance(value, bytes):
        return (type(value), bytes(value))
    return tuple(value)


def _same(a: tuple[GroupState, int], b: tuple[GroupState, int]) -> bool:
    return a[0] is b[0] and a[1] == b[1]


def _offset_pieces(which: str, packed: dict[str, Any], per_message: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """("offsets", which, {topic: packed values}) messages of whole topics, about `per_message`
    partitions each, taken out of `packed` (what stays goes with the delta) while more than that is
    left in it."""
    left = sum(len(parts[0]) for parts in packed.values())
    while left > per_message:
        piece: dict[str, Any] = {}
        count = 0
        for name in list(itertools.islice(packed, per_message)):
            if count >= per_message:
                break
            piece[name] = parts = packed.pop(name)
            count += len(parts[0])
        left -= count
        yield ("offsets", which, piece)
        del piece


class DeltaMaker:
    """In the child: each pass's Sample as a SampleDelta against the pass before. Groups go as
    their stored JSON (serialised here, where they are evaluated, and only when they changed), so
    the watcher never builds their objects."""

    def __init__(self) -> None:
        self._last: Sample | None = None
        self._sent: dict[str, tuple[GroupState, int]] = {}  # what each group was when last sent (`_marks`)

    def make(self, sample: Sample, events: list[dict[str, Any]], stats: dict[str, Any]) -> SampleDelta:
        """The pass as one delta, every changed group, offset and size in it."""
        [delta] = self.messages(sample, events, stats, piece=0, offsets_piece=0)
        return cast(SampleDelta, delta)

    def messages(self, sample: Sample, events: list[dict[str, Any]], stats: dict[str, Any],
                 piece: int | None = None, offsets_piece: int | None = None) -> Iterator[Any]:
        """The pass as the messages that carry it: ("offsets", "ends" | "starts" | "sizes", {...})
        pieces of whole topics' changed values, about `offsets_piece` partitions each
        (OFFSETS_PIECE; 0: none), and ("groups", {...}) pieces of `piece` changed groups
        (GROUP_PIECE; 0: none), then the delta with the rest (the watcher puts them together again:
        `RemoteSampler.receive`). Each piece's JSON is made as it is taken: a pass that changed
        50,000 groups held 150 MB of it at once; each offsets piece is let go once sent."""
        size = GROUP_PIECE if piece is None else piece
        per_message = OFFSETS_PIECE if offsets_piece is None else offsets_piece
        last = self._last
        full = last is None
        ends = pack(sample.ends, last.ends if last else None)
        starts = pack(sample.starts, last.starts if last else None)
        sizes = None
        if sample.sizes is not None and (last is None or sample.sizes is not last.sizes):
            assert isinstance(sample.sizes, SizeColumns)  # (what Sampler.take reads)
            sizes = sample.sizes.changed_packed(last.sizes if last else None)
        changed: list[str] | None = None
        group_ids = None
        states = sample.groups
        if (states is not None and last is not None and not sample.groups_changed and sample.groups_since
                and sample.groups_since == last.number and self._sent.keys() == states.keys()):
            # Every state the last pass's (the one sent last) and its evaluation as it was
            # (Sampler.take's groups_changed): nothing to digest and compare, as on an idle cluster.
            changed = []
        elif states is not None:
            sent = self._sent
            marks = {gid: _marks(g) for gid, g in states.items()}
            changed = [gid for gid in states if gid not in sent or not _same(sent[gid], marks[gid])]
            if full or marks.keys() != sent.keys():
                group_ids = list(marks)
            self._sent = marks
        self._last = sample
        gids = changed or []
        rest = (len(gids) - 1) // size * size if gids and size else 0  # (where the delta's own groups start)
        pieces = [gids[i:i + size] for i in range(0, rest, size)] if rest else []

        def serialised(part: list[str]) -> dict[str, tuple[bytes, list[str]]]:
            assert states is not None
            return {gid: (group_part(states[gid]), states[gid].topics()) for gid in part}

        def each() -> Iterator[Any]:
            if per_message:
                for which, packed in (("ends", ends), ("starts", starts), ("sizes", sizes)):
                    if packed:
                        yield from _offset_pieces(which, packed, per_message)
            # (taken before the next pass: the evaluation renews the states' figures in place)
            for part in pieces:
                yield ("groups", serialised(part))
            yield SampleDelta(full=full, started=sample.started, ends=ends, starts=starts, sizes=sizes, rates=sample.rates,
                              groups=serialised(gids[rest:]) if changed is not None else None, group_ids=group_ids,
                              groups_changed=sample.groups_changed, events=events, stats=stats)

        return each()

    def every_group(self, piece: int | None = None) -> Iterator[tuple[str, dict[str, tuple[bytes, list[str]]]]]:
        """Every group as last sent, again, in ("groups", {...}) pieces of `piece` groups
        (GROUP_PIECE): what the watcher asks for when it must write every group's part and holds
        only their digests (store.GroupParts). Between passes the states are as last sent (the
        evaluation renews their figures in place only within a pass)."""
        size = GROUP_PIECE if piece is None else piece
        gids = list(self._sent)
        for start in range(0, len(gids), size):
            part = {gid: self._sent[gid][0] for gid in gids[start:start + size]}
            yield ("groups", {gid: (group_part(g), g.topics()) for gid, g in part.items()})


# Topics a step of DeltaMerger.apply takes (a size pass of 300,000 partitions is 10,000 topics:
# 0.3 CPU-seconds in all, so about 30 ms a step).
MERGE_STEP_TOPICS = 1_000


def _chunks(packed: Mapping[str, Any], size: int) -> Iterator[dict[str, Any]]:
    items = iter(packed.items())
    while chunk := dict(itertools.islice(items, size)):
        yield chunk


class DeltaMerger:
    """In the watcher: each delta back into a whole Sample (new mappings; the ones handed out
    before are never changed, but for `group_parts`: see `apply_piece`)."""

    def __init__(self, give_way: Callable[[], None] | None = None) -> None:
        # Called between the steps of `apply` (turns.CycleFirst.give_way): the watcher's metadata
        # cycle, sharing this interpreter, runs first.
        self.give_way = give_way or (lambda: None)
        # (by topic: columns.py)
        self.ends = OffsetColumns()
        self.starts = OffsetColumns()
        self.sizes: ListColumns[Mapping[str, int]] | None = None
        # Each group's digest, and its JSON until a save wrote it, keyed as stored ("g:<id>"): what
        # the snapshot's content takes (store.GroupParts). None until the first groups came.
        self.group_parts: store.GroupParts | None = None
        self.group_topics: dict[str, list[str]] = {}
        self.rates: Mapping[str, float] = {}
        # One list of topic names for the groups that read the same topics (each delta brings new
        # lists and strings: 50,000 of each at 50,000 groups, 7 MB); never changed once handed out.
        self._topic_lists: dict[tuple[str, ...], list[str]] = {}
        # The groups of the pass on its way (its pieces, `apply_piece`): the topics each reads, put in
        # `group_topics` with the delta.
        self._arrived: dict[str, list[str]] = {}
        # The offsets and sizes of the pass on its way (its pieces, `apply_offsets`), by which.
        self._pending: dict[str, dict[str, Any]] = {}

    def _topics(self, names: list[str]) -> list[str]:
        key = tuple(names)
        found = self._topic_lists.get(key)
        if found is None:
            if len(self._topic_lists) >= TOPIC_LISTS_MAX:
                self._topic_lists = {}
            found = self._topic_lists[key] = [sys.intern(n) for n in names]
        return found

    def apply_piece(self, groups: Mapping[str, tuple[bytes, list[str]]]) -> None:
        """A piece of the next delta's changed groups (or of every group, sent again when asked:
        `DeltaMaker.every_group`): each group's JSON replaces its last one in `group_parts` at once,
        in the object handed out. Gathered until their delta came, a pass's
        changed groups (35 MB at 50,000 groups) were held next to the ones they replace, and made
        the watcher's process peak with each pass (70 MB above its cycles at 300,000 partitions).
        A snapshot made meanwhile stores each group as one pass or the next saw it, every group
        there: the set of groups, and the topics each reads, change only with the delta."""
        parts = self.group_parts
        if parts is None:
            parts = self.group_parts = store.GroupParts()
        parts.put((GROUP_PART + gid, raw) for gid, (raw, _topics) in groups.items())
        for gid, (_raw, topics) in groups.items():
            self._arrived[gid] = self._topics(topics)

    def apply_offsets(self, which: str, piece: Mapping[str, Any]) -> None:
        """A piece of the next delta's changed offsets or sizes ("ends", "starts" or "sizes"),
        packed by topic: kept until the delta comes (which brings the rest)."""
        self._pending.setdefault(which, {}).update(piece)

    def apply(self, d: SampleDelta) -> Sample:
        pending, self._pending = self._pending, {}
        if pending:  # (the pass's pieces first, then the delta's own: each topic is in one of them)
            d = replace(d, ends={**pending.get("ends", {}), **d.ends}, starts={**pending.get("starts", {}), **d.starts},
                        sizes={**pending["sizes"], **(d.sizes or {})} if "sizes" in pending else d.sizes)
            del pending
        if d.groups is not None:
            self.apply_piece(d.groups)  # (the delta's own groups: the pass's last piece)
        arrived, self._arrived = self._arrived, {}  # (every group the pass brought)
        if d.full:
            self.ends, self.starts, self.sizes, self.group_topics = OffsetColumns(), OffsetColumns(), None, {}
            if self.group_parts is not None:  # (a new process's first pass: only what it brought)
                self.group_parts.keep(map(GROUP_PART.__add__, arrived))
        give_way = self.give_way
        for chunk in _chunks(d.ends, MERGE_STEP_TOPICS):
            self.ends = self.ends.updated_packed(chunk)
            give_way()
        for chunk in _chunks(d.starts, MERGE_STEP_TOPICS):
            self.starts = self.starts.updated_packed(chunk)
            give_way()
        if d.sizes is not None:
            self.sizes = self.sizes or ListColumns()
            for chunk in _chunks(d.sizes, MERGE_STEP_TOPICS):
                self.sizes = self.sizes.updated(unpack_sizes(chunk))
                give_way()
        if d.groups is not None:
            parts, topics = cast(store.GroupParts, self.group_parts), self.group_topics
            if d.group_ids is not None:
                parts.keep(map(GROUP_PART.__add__, d.group_ids))  # (groups gone are left out)
                self.group_topics = {gid: arrived[gid] if gid in arrived else topics[gid] for gid in d.group_ids}
            elif arrived:
                self.group_topics = {**topics, **arrived}
        self.rates = d.rates
        changed = {(name, n) for packed in (d.ends, d.starts, d.sizes or {}) for name, parts in packed.items()
                   for n in parts[0].tolist()}
        give_way()
        return Sample(started=d.started, ends=self.ends, starts=self.starts, sizes=self.sizes, rates=d.rates,
                      groups=None, groups_changed=d.groups_changed and d.groups is not None, changed=tuple(changed),
                      group_parts=self.group_parts if d.groups is not None else None,
                      group_topics=self.group_topics if d.groups is not None else None)


class _WriterStats:
    records = 0
    seconds = 0.0
    refused = 0


class _Outbox:
    """What the watcher tells one sampling process (targets, "pause", "groups", the last None),
    sent in order by a thread of its own. The sampling thread that takes the passes in never waits
    on a send: the pipe holds a few hundred KB each way, and a pass's pieces fill it while the child
    waits for them to be read; a new target of 300,000 partitions (a broker gone or back changes
    it) sent from that thread then waited for the child to read it, the child for the thread: both
    for ever, offsets and lag frozen and the watcher unable to close (seen at 300,000 partitions)."""

    def __init__(self, conn: Any, cluster: str) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._cluster = cluster
        self._thread = threading.Thread(target=self._run, args=(conn,), name=f"sampler-outbox-{cluster}", daemon=True)
        self._thread.start()

    def put(self, message: Any) -> None:
        self._queue.put(message)

    def _run(self, conn: Any) -> None:
        while True:
            message = self._queue.get()
            if message is _Outbox:  # (the process is let go of)
                return
            try:
                conn.send(message)
            except (OSError, ValueError):  # (the process ended, or its pipe was closed)
                log.info("could not reach the sampling process of %s", self._cluster)
                return
            del message

    def stop(self) -> None:
        """Send nothing more (what is queued is dropped once a send fails or the stop is reached)."""
        self._queue.put(_Outbox)


class RemoteSampler:
    """The watcher's side: starts the child, tells it what to sample, takes its deltas as Samples."""

    def __init__(self, cluster: str, incremental: bool, factory: GatewayFactory | None,
                 on_events: Callable[[list[dict[str, Any]]], None], on_restart: Callable[[str], None] | None = None,
                 turns: CycleFirst | None = None) -> None:
        self.cluster = cluster
        self.incremental = incremental
        self.factory = factory
        self.on_events = on_events
        self.on_restart = on_restart  # told why the last one ended, when a new sampling process is started
        # What Sampler offers the watcher's stats, as the child last reported it.
        self.requests = 0
        self.times: deque[float] = deque(maxlen=100)
        self.group_stats: dict[str, float | int] = {}
        self.writer = _WriterStats()
        self.child_rss_mb = 0.0
        self.child_cpu_seconds = 0.0
        self.restarts = 0
        self._process: Any = None
        self._conn: Any = None
        self._outbox: _Outbox | None = None
        self._turns = turns or CycleFirst()
        self._merger = DeltaMerger(self._turns.give_way)
        self._sent: tuple[Collection[TopicPartition], list[int]] | None = None
        self._heard_at = time.monotonic()  # the last sign of work from the child (a pass, its "alive" as one goes on, or being given work)
        self._stalled = False
        self._started_at = 0.0
        self._passes = 0  # passes taken from the process running now
        # How long a process's first pass may take before it is taken for hung (`stall_limit`).
        self._first_limit: float | None = None  # (None: WATCHER_SAMPLER_STALL_SECONDS)
        self._pause = 0.0  # before starting again a process that ended soon after its start
        self._not_before = 0.0
        self._groups_wanted = False  # every group's part to be sent again (`ask_groups_again`)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        mine, theirs = ctx.Pipe()
        overrides = {k: getattr(settings, k) for k in dir(settings) if k.startswith(("WATCHER_", "ANALYTICS_"))}
        overrides["DATABASES"] = settings.DATABASES
        self._process = ctx.Process(target=child_main, name=f"sampler-{self.cluster}", daemon=True,
                                    args=(self.cluster, self.incremental, self.factory, overrides, theirs))
        self._process.start()
        theirs.close()
        self._conn, self._sent, self._merger = mine, None, DeltaMerger()
        self._outbox = _Outbox(mine, self.cluster)
        self._groups_wanted = False
        self._heard_at = self._started_at = time.monotonic()
        self._stalled = False
        self._passes = 0

    def _ensure(self) -> bool:
        """A sampling process is running (started again if it ended, unless it ended soon after its
        last start: then not before a pause that doubles up to a minute, so one that cannot start
        does not fill the timeline). False while there is none."""
        limit = self.stall_limit()
        if self._process is not None and self._process.is_alive():
            if self._sent is None or time.monotonic() - self._heard_at < limit:
                return True
            # Given work and silent for that long: hung (a native client library can deadlock); a
            # new process is better than offsets and lag frozen without a word.
            log.warning("the sampling process of %s sent nothing for %.0f s; stopping it", self.cluster,
                        time.monotonic() - self._heard_at)
            self._stalled = True
            if not self._passes:  # (its first pass may just be long: the next process's may take twice as long)
                self._first_limit = min(STALL_LIMIT_MAX_FACTOR * settings.WATCHER_SAMPLER_STALL_SECONDS, 2 * limit)
            self._process.kill()
            self._process.join(5)
        now = time.monotonic()
        if now < self._not_before:
            return False
        ended = None
        if self._process is not None:
            lived = now - self._started_at
            self._pause = 0.0 if lived >= RESTART_STABLE_SECONDS else min(60.0, max(1.0, self._pause * 2))
            self.restarts += 1
            ended = exit_reason(self._process.exitcode if self._process.exitcode is not None else 0)
            if self._stalled:
                ended = f"it sent nothing for {limit:.0f} s and was stopped"
                if not self._passes:
                    ended += f"; the next one's first pass may take {self.stall_limit():.0f} s"
            log.warning("the sampling process of %s ended (%s); starting it again%s", self.cluster, ended,
                        f" in {self._pause:.0f} s" if self._pause else "")
            self._let_go()
            self._not_before = now + self._pause
            if self.on_restart is not None:
                self.on_restart(ended)
            if self._pause:
                return False
        self._start()
        return True

    def stall_limit(self) -> float:
        """How long the running process may stay silent with work given: a first pass (it reads
        every offset, size and group: at 300,000 partitions and 50,000 groups on two loaded cores,
        about two minutes) as long as the last process's was allowed, doubled if that one was
        stopped before its first pass; after it, WATCHER_SAMPLER_STALL_SECONDS. (A first pass
        longer than the setting once made every new process stopped in its first pass, for ever.)"""
        base: float = settings.WATCHER_SAMPLER_STALL_SECONDS
        return max(base, self._first_limit or base) if not self._passes else base

    def target(self, partitions: Collection[TopicPartition], brokers: list[int]) -> None:
        """Sample these from now on (sent only when it differs from what the child has)."""
        if not self._ensure():
            return
        if self._sent is not None and (self._sent[0] is partitions or self._sent[0] == partitions) and self._sent[1] == brokers:
            return
        self._send(("target", partitions, brokers))
        if self._sent is None:
            self._heard_at = time.monotonic()  # (a paused child owes nothing)
        self._sent = (partitions, brokers)

    def _send(self, message: Any) -> None:
        if self._outbox is None:  # (a pipe given without `_start`: tests)
            self._outbox = _Outbox(self._conn, self.cluster)
        self._outbox.put(message)

    def _let_go(self) -> None:
        """The ended process's pipe closed, and its outbox stopped."""
        if self._outbox is not None:
            self._outbox.stop()
            self._outbox = None
        self._conn.close()
        self._process = None

    def pause(self) -> None:
        if self._process is None or self._sent is None:
            return
        self._send(("pause",))
        self._sent = None

    def ask_groups_again(self) -> None:
        """Have the child send every group's part again (any thread: the sampling thread sends the
        request with its next `receive`). The pieces come as a pass's do (DeltaMerger.apply_piece)."""
        self._groups_wanted = True

    def receive(self, wait: float) -> list[Sample]:
        """The passes the child finished, waiting up to `wait` seconds for one."""
        if not self._ensure():
            time.sleep(min(wait, 1.0))
            return []
        out: list[Sample] = []
        try:
            if self._groups_wanted:
                self._groups_wanted = False
                self._send(("groups",))
            ready = self._conn.poll(wait)
            while ready:
                message = self._conn.recv()
                self._heard_at = time.monotonic()
                if isinstance(message, tuple) and message[0] in ("groups_sent", "alive"):  # (no delta follows)
                    ready = self._conn.poll(0)
                    continue
                if isinstance(message, tuple):  # a piece of the next delta: the rest follows
                    if message[0] == "offsets":
                        self._merger.apply_offsets(message[1], message[2])
                    else:
                        self._merger.apply_piece(message[1])
                    del message
                    ready = self._conn.poll(max(wait, 5.0))
                    continue
                delta: SampleDelta = message
                with self._turns.merge():
                    out.append(self._merger.apply(delta))
                self._passes += 1
                self._took(delta)
                ready = self._conn.poll(0)
        except (EOFError, OSError):
            log.info("the sampling process of %s went away", self.cluster)
        return out

    def _took(self, d: SampleDelta) -> None:
        s = d.stats
        self.requests = s.get("requests", self.requests)
        if "seconds" in s:
            self.times.append(s["seconds"])
        self.group_stats = s.get("group_stats", self.group_stats)
        self.writer.records, self.writer.seconds, self.writer.refused = s.get("writer", (0, 0.0, 0))
        self.child_rss_mb = s.get("rss_mb", self.child_rss_mb)
        self.child_cpu_seconds = s.get("cpu_seconds", self.child_cpu_seconds)
        if d.events:
            self.on_events(d.events)

    def close(self) -> None:
        if self._process is None:
            return
        self._send(None)
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._let_go()


def start_django() -> None:
    """Django, as a watcher's process loads it: it serves no page, so no web server (see settings)."""
    os.environ["CONSOLE_PROCESS"] = "watcher"
    import django

    django.setup()


def child_main(cluster: str, incremental: bool, factory: GatewayFactory | None, overrides: dict[str, Any], conn: Any) -> None:
    """The child: sample what the watcher last asked for, every WATCHER_OFFSETS_INTERVAL (at once
    when a change made through the console nudges it), and send each pass as a delta."""
    die_with_parent()
    tune_malloc()
    # Below the watcher's priority: when both want the CPU, a leader move reaching the pages goes
    # before the next lag evaluation (which comes every few seconds anyway).
    with contextlib.suppress(OSError):
        os.nice(SAMPLER_NICENESS)
    parent = os.getppid()
    start_django()

    def step_done() -> None:
        # (each step of starting said to the watcher as it ends: Django, then the gateway take
        # seconds each on a loaded machine, and the stall limit is for one step, not for all)
        with contextlib.suppress(OSError):
            conn.send(("alive",))

    step_done()
    for name, value in overrides.items():
        setattr(settings, name, value)
    from console import gateway
    from console.watcher import registry
    from console.watcher.memory import settle_gc, tune_gc
    from console.watcher.registry import EventRow
    from console.watcher.sampler import Sampler

    gw = factory() if factory is not None else gateway.for_cluster(cluster)
    events: list[dict[str, Any]] = []

    def emit(rows: list[EventRow]) -> None:
        try:
            events.extend(registry.events().save(rows))
        except Exception:  # noqa: BLE001 - an event that cannot be saved must not stop the sampling
            log.exception("saving events of %s failed", cluster)

    sampler = Sampler(cluster, gw, incremental, emit)
    # A long pass says it goes on, so that only a process stuck in one call is taken for hung.
    every = min(ALIVE_EVERY_MAX, settings.WATCHER_SAMPLER_STALL_SECONDS / 4)
    said = [time.monotonic()]

    def alive() -> None:
        now = time.monotonic()
        if now - said[0] >= every:
            said[0] = now
            with contextlib.suppress(OSError):
                conn.send(("alive",))

    sampler.progress = alive
    step_done()  # (a process that hangs while starting is still stopped: one step)
    maker = DeltaMaker()
    target: tuple[list[TopicPartition], list[int]] | None = None
    tuned = False
    while True:
        try:
            while conn.poll(0 if target is not None else 1.0):
                message = conn.recv()
                if message is None:
                    return
                if message[0] == "groups":  # every group's part again, now (not a pass: paused too)
                    for piece in maker.every_group():
                        conn.send(piece)
                    conn.send(("groups_sent",))
                    continue
                # (the watcher's layout as the sampler's shared tuples, once per target)
                target = ([sampler.names.shared(tp) for tp in message[1]], message[2]) if message[0] == "target" else None
        except (EOFError, OSError):
            return
        if target is None:
            if os.getppid() != parent:
                return
            continue
        started = time.monotonic()
        sample = sampler.take(*target)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        stats = {"requests": sampler.requests, "seconds": round(time.monotonic() - started, 4),
                 "group_stats": dict(sampler.group_stats),
                 "writer": (sampler.writer.records, sampler.writer.seconds, sampler.writer.refused),
                 "rss_mb": round(usage.ru_maxrss / 1024, 1), "cpu_seconds": usage.ru_utime + usage.ru_stime}
        messages = maker.messages(sample, events, stats)
        events = []
        try:
            for message in messages:
                conn.send(message)
        except OSError:
            return
        del messages, message, sample
        # As the watcher's process does with its cycles: what survives a pass is frozen out of the
        # collector's sight (its defaults walked millions of objects many times a pass).
        if not tuned:
            tune_gc()
            tuned = True
        settle_gc()
        delay = max(0.1, settings.WATCHER_OFFSETS_INTERVAL - (time.monotonic() - started))
        store.wait_for_nudge(cluster, "samples", delay)
