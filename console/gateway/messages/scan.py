"""Bounded scans: the matching records of a range of a topic, forward or backward, page by page."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition

from console.gateway.client import ClusterGateway
from console.gateway.messages.reading import FATAL_READ, browsing_consumer, choose, close_quietly, topic_partitions, watermarks
from console.gateway.messages.records import Record, by_time, to_record
from console.gateway.messages.scan_spec import ScanProgress, ScanSpec, start_positions

log = logging.getLogger(__name__)

_BATCH = 10_000  # messages per consume() call: large batches keep the per-message cost in C
_POLL_S = 0.05  # consume() waits this long for a full batch; transaction markers make the count we ask for an overestimate
_ERRORS_LOGGED = 5  # per scan: the consumer repeats the same error while a broker is away
_PROGRESS_EVERY_S = 0.25
# Within a batch the cancel event is looked at every this many messages: a batch of 10,000 with a
# filter can take most of a second on a loaded machine, and a closed page must free its worker sooner.
_CANCEL_EVERY = 1_024
_PROGRESS_EVERY_N = 20_000
_FIRST_FILTERED_WINDOW = 1_000  # backward scans with a filter read at least this much per partition at first
_MAX_WINDOW = 500_000


class _Scan:
    """The state of one scan. `_pump` is the hot loop; the direction methods decide what to read."""

    def __init__(self, consumer: Consumer, gateway: ClusterGateway, spec: ScanSpec, matcher: Callable[[Record], bool] | None,
                 raw_matcher: Callable[[bytes | None, bytes | None], bool] | None,
                 on_progress: Callable[[ScanProgress], bool] | None, cancel: threading.Event | None = None,
                 time_budget: float | None = None, started: float | None = None) -> None:
        self.consumer = consumer
        self.gateway = gateway
        self.spec = spec
        self.matcher = matcher
        self.raw_matcher = raw_matcher
        self.on_progress = on_progress
        self.progress = ScanProgress()
        self.kept: dict[int, list[Record]] = {}  # per partition, in offset order
        self.positions: dict[int, int] = {}
        self.halted = False  # max_scanned, the caller or a silent partition ended the scan early
        self.limit_reached = False
        self.cut: dict[int, int] = {}  # forward: partition -> offset of its first match left for the next page
        self.read_to: dict[int, int] = {}  # the current pass: partition -> next offset to read
        self._ticked_at = time.monotonic()
        self._ticked_scanned = 0
        self.cancel = cancel
        self.time_budget = time_budget
        self.deadline = None if time_budget is None else (started or time.monotonic()) + time_budget
        self.rounds = 0  # backward: windows completed (the budget waits for one, so every request moves on)
        self.errors = 0  # consumer errors met (the first few are logged)

    # The hot loop ------------------------------------------------------------------------------
    def _pump(self, ranges: dict[int, tuple[int, int]], sink: dict[int, list[Record]],
              after_batch: Callable[[dict[int, Any], dict[int, int]], None] | None = None) -> tuple[dict[int, int], dict[int, Any]]:
        """Read each partition's [start, end) into `sink` (matches only).

        Returns the read positions and the first message read in each partition. after_batch(last,
        live_end) sees the last message read per partition in the batch and may end partitions early
        by deleting them from live_end.
        """
        topic = self.spec.topic
        read_to = {p: s for p, (s, _) in ranges.items()}
        live_end = {p: e for p, (s, e) in ranges.items() if s < e}
        first: dict[int, Any] = {}
        if not live_end:
            return read_to, first
        self.consumer.assign([RdTopicPartition(topic, p, ranges[p][0]) for p in live_end])
        assigned = set(live_end)
        self.read_to = read_to
        raw, matcher, make = self.raw_matcher, self.matcher, to_record
        max_scanned = self.spec.max_scanned
        cancel = self.cancel
        idle_since = time.monotonic()
        # Small batches first, so that a page found early is not followed by a large batch nobody needs.
        batch_size = min(_BATCH, max(1_000, 2 * self.spec.limit))
        while live_end and not self.halted:
            # Checked between batches (and within one, every _CANCEL_EVERY messages), so a stop is
            # honoured at once rather than at the next progress tick.
            if self._interrupted():
                break
            live_before = len(live_end)
            remaining = sum(e - read_to[p] for p, e in live_end.items())
            # Asking for no more than what is left lets consume() return as soon as it has arrived.
            batch: list[Any] = self.consumer.consume(num_messages=max(1, min(batch_size, remaining)), timeout=_POLL_S)
            batch_size = min(_BATCH, batch_size * 2)
            last: dict[int, Any] = {}
            scanned = self.progress.scanned
            for m in batch:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        # The end came before the watermark (transaction markers, compaction).
                        p = m.partition()
                        end = live_end.pop(p, None)
                        if end is not None:
                            read_to[p] = max(read_to[p], min(m.offset(), end))
                    else:
                        self._event(err)
                    continue
                p = m.partition()
                end = live_end.get(p)
                if end is None:
                    continue
                off = m.offset()
                if off >= end:
                    del live_end[p]
                    continue
                if scanned >= max_scanned:
                    self._halt(f"Stopped after reading {scanned:,} messages, the most one scan may read; "
                               "continue from the positions to read further.")
                    break
                if scanned % _CANCEL_EVERY == 0 and cancel is not None and cancel.is_set():
                    self._halt("Stopped before the end, as asked.", stopped=True)
                    break
                scanned += 1
                read_to[p] = off + 1
                last[p] = m
                if p not in first:
                    first[p] = m
                if off + 1 >= end:
                    del live_end[p]
                if raw is None:
                    rec = make(m, m.key(), m.value())
                else:
                    key, value = m.key(), m.value()
                    if not raw(key, value):
                        continue
                    rec = make(m, key, value)
                if matcher is None or matcher(rec):
                    sink[p].append(rec)
            if scanned > self.progress.scanned or len(live_end) < live_before:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > self.gateway.timeout:
                silent = ", ".join(map(str, sorted(live_end)))
                log.info("scan of topic '%s' on cluster '%s': partition(s) %s sent nothing for %g s (reading %s, %d consumer errors)",
                         topic, self.gateway.name, silent, self.gateway.timeout,
                         {p: (read_to[p], e) for p, e in live_end.items()}, self.errors)
                self._halt(f"Partition(s) {silent} sent nothing for {self.gateway.timeout:g} s; the results are partial.")
            self.progress.scanned = scanned
            if after_batch is not None and last:
                after_batch(last, live_end)
            finished = assigned.difference(live_end)
            if finished and live_end:
                # Stop fetching what is no longer needed (a cut partition could otherwise be read to its end).
                # Not pause(): librdkafka delays the next fetch of a partition paused at its end by a second.
                self.consumer.incremental_unassign([RdTopicPartition(topic, p) for p in finished])
                assigned.difference_update(finished)
            self._tick()
        return read_to, first

    def _event(self, err: KafkaError) -> None:
        if err.code() in FATAL_READ or err.fatal():
            raise self.gateway.translate(KafkaException(err), f"read topic '{self.spec.topic}'")
        else:
            # Seen by nobody else: a scan that ends with "sent nothing" is explained only by these.
            self.errors += 1
            if self.errors <= _ERRORS_LOGGED:
                log.info("consumer error while scanning topic '%s' on cluster '%s': %s", self.spec.topic, self.gateway.name, err)

    def _halt(self, reason: str, stopped: bool = False) -> None:
        self.halted = True
        self.progress.reason = reason
        self.progress.stopped = stopped

    def _interrupted(self) -> bool:
        if self.cancel is not None and self.cancel.is_set():
            self._halt("Stopped before the end, as asked.", stopped=True)
            return True
        if self.deadline is None or time.monotonic() < self.deadline:
            return False
        # Only once something was read (forward) or a whole window was (backward): a resumed scan
        # always gets further than the one before it, however small the budget.
        if self.spec.direction == "forward":
            if self.progress.scanned == 0:
                return False
        elif self.rounds == 0:
            return False
        self._halt(f"Stopped after {self.time_budget:g} s, the time one request may take; "
                   "continue from the positions to read further.")
        self.progress.budget_exhausted = True
        return True

    def _tick(self) -> None:
        if self.on_progress is None:
            return
        now = time.monotonic()
        if now - self._ticked_at < _PROGRESS_EVERY_S and self.progress.scanned - self._ticked_scanned < _PROGRESS_EVERY_N:
            return
        self._ticked_at, self._ticked_scanned = now, self.progress.scanned
        self.progress.matched = sum(len(k) for k in self.kept.values())
        # Forward: where reading got to; backward: the bounds of the rounds completed so far.
        self.progress.positions = {**self.read_to, **self.cut} if self.spec.direction == "forward" else dict(self.positions)
        if self.on_progress(replace(self.progress, positions=dict(self.progress.positions))) is False:
            self._halt("Stopped before the end, as asked.", stopped=True)

    # Forward -----------------------------------------------------------------------------------
    def forward(self, parts: list[int], starts: dict[int, int], hi: dict[int, int]) -> list[Record]:
        self.kept = {p: [] for p in parts}
        self.positions = dict(starts)
        read_to, _ = self._pump({p: (starts[p], hi[p]) for p in starts}, self.kept, self._trim_forward)
        self.positions = {**read_to, **self.cut}
        records = [r for k in self.kept.values() for r in k]
        records.sort(key=by_time)
        return records

    def _trim_forward(self, last: dict[int, Any], live_end: dict[int, int]) -> None:
        """Keep the first `limit` matches of the partitions merged by time; end partitions that cannot add any."""
        limit = self.spec.limit
        if sum(len(k) for k in self.kept.values()) < limit:
            return
        self.limit_reached = True
        taken: dict[int, int] = dict.fromkeys(self.kept, 0)
        kth: tuple[int, int, int] = (0, 0, 0)
        for r in itertools.islice(heapq.merge(*self.kept.values(), key=by_time), limit):
            taken[r.partition] += 1
            kth = by_time(r)
        for p, k in self.kept.items():
            if k and taken[p] < len(k):
                # The rest of this partition comes after the page: the next page starts at its first cut match.
                self.cut[p] = k[taken[p]].offset
                del k[taken[p]:]
                live_end.pop(p, None)
        for p in list(live_end):
            m = last.get(p)
            if m is not None and (m.timestamp()[1], p, m.offset()) > kth:
                live_end.pop(p)  # its later messages are newer than the whole page

    # Backward ----------------------------------------------------------------------------------
    def backward(self, parts: list[int], uppers: dict[int, int], lo: dict[int, int]) -> list[Record]:
        limit = self.spec.limit
        self.kept = {p: [] for p in parts}
        self.positions = dict(uppers)
        active = [p for p in uppers if uppers[p] > lo[p]]
        filtered = self.matcher is not None or self.raw_matcher is not None
        window = max(limit, _FIRST_FILTERED_WINDOW) if filtered else limit
        while active and not self.halted:
            ranges = {p: (max(lo[p], self.positions[p] - window), self.positions[p]) for p in active}
            found: dict[int, list[Record]] = {p: [] for p in active}
            read_to, firsts = self._pump(ranges, found)
            still = []
            for p in active:
                start, end = ranges[p]
                if self.halted and read_to[p] < end:
                    continue  # a window read only in part would leave a gap: keep the old position
                merged = found[p] + self.kept[p]
                if len(merged) > limit:
                    self.limit_reached = True
                    merged = merged[-limit:]
                    self.positions[p] = merged[0].offset
                else:
                    self.positions[p] = start
                    if start > lo[p]:
                        still.append(p)
                self.kept[p] = merged
            active = self._trim_backward(still, firsts)
            window = min(window * 4, _MAX_WINDOW)
            self.rounds += 1
        records = [r for k in self.kept.values() for r in k]
        records.sort(key=by_time, reverse=True)
        return records

    def _trim_backward(self, active: list[int], firsts: dict[int, Any]) -> list[int]:
        """Keep the last `limit` matches of the partitions merged by time; drop partitions that cannot add any."""
        limit = self.spec.limit
        if sum(len(k) for k in self.kept.values()) < limit:
            return active
        self.limit_reached = True
        taken: dict[int, int] = dict.fromkeys(self.kept, 0)
        kth: tuple[int, int, int] = (0, 0, 0)
        newest_first = [reversed(k) for k in self.kept.values()]
        for r in itertools.islice(heapq.merge(*newest_first, key=by_time, reverse=True), limit):
            taken[r.partition] += 1
            kth = by_time(r)
        for p, k in self.kept.items():
            drop = len(k) - taken[p]
            if drop > 0:
                self.positions[p] = k[drop - 1].offset + 1  # the next page ends with the dropped matches
                del k[:drop]
                if p in active:
                    active.remove(p)
        still = []
        for p in active:
            m = firsts.get(p)
            if m is None or (m.timestamp()[1], p, m.offset()) >= kth:
                still.append(p)  # its earlier messages may still be newer than the oldest kept
        return still

    # Ending ------------------------------------------------------------------------------------
    def finish(self, records: list[Record]) -> ScanProgress:
        self.progress.matched = len(records)
        self.progress.positions = dict(self.positions)
        self.progress.done = True
        if self.progress.reason is None:
            if self.limit_reached:
                self.progress.reason = f"Found {self.spec.limit} matching messages, the limit of one page."
            elif self.spec.direction == "forward":
                self.progress.reason = "Read every message up to the end offsets taken when the scan started."
            else:
                self.progress.reason = "Read every message back to the start of the chosen partitions."
        if self.on_progress is not None:
            self.on_progress(replace(self.progress, positions=dict(self.positions)))
        return self.progress


def scan(gateway: ClusterGateway, spec: ScanSpec, matcher: Callable[[Record], bool] | None,
         on_progress: Callable[[ScanProgress], bool] | None = None,
         raw_matcher: Callable[[bytes | None, bytes | None], bool] | None = None,
         cancel: threading.Event | None = None, time_budget: float | None = None) -> tuple[list[Record], ScanProgress]:
    """Read a bounded range of a topic and return the matching records and how the scan ended.

    raw_matcher(key, value) is a cheap pre-filter on the raw bytes, applied before a Record is built;
    matcher(record) then decides. on_progress is called about every 0.25 s or 20,000 messages and once
    at the end; returning False stops the scan (progress.stopped). Setting `cancel` stops it within
    one batch (progress.stopped). After `time_budget` seconds of reading the scan ends with what it
    has (progress.budget_exhausted); progress.positions is where the next call resumes, with no gap
    and no duplicate. Forward results are sorted by (timestamp, partition, offset), backward results
    in the reverse order.
    """
    action = f"read topic '{spec.topic}'"
    started = time.monotonic()
    consumer = browsing_consumer(gateway)
    try:
        parts = choose(spec.topic, topic_partitions(consumer, gateway, spec.topic), spec.partitions)
        lo, hi = watermarks(gateway, spec.topic, parts)
        starts = start_positions(consumer, gateway, spec, parts, lo, hi)
        state = _Scan(consumer, gateway, spec, matcher, raw_matcher, on_progress, cancel, time_budget, started)
        try:
            if spec.direction == "forward":
                records = state.forward(sorted(starts), starts, hi)
            else:
                records = state.backward(sorted(starts), starts, lo)
        except KafkaException as exc:
            raise gateway.translate(exc, action) from exc
        return records, state.finish(records)
    finally:
        close_quietly(consumer)
