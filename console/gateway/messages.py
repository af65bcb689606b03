"""Browsing a topic's messages: bounded scans, a live tail and producing one message.

Scans use a librdkafka consumer with assign() only: it never joins its group and never commits,
so browsing leaves no trace on the cluster. A scan takes the end offsets (high watermarks) when it
starts and stops there, so it never waits for new messages; `tail` is the one that waits.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from confluent_kafka import (
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from console.gateway.client import ClusterGateway
from console.gateway.config import ClusterConfig
from console.gateway.errors import ClusterUnavailable, InvalidRequest, NotFound

log = logging.getLogger(__name__)

TimestampType = Literal["CreateTime", "LogAppendTime", "NoTimestamp"]
Start = Literal["oldest", "newest", "offset", "timestamp"]
Direction = Literal["forward", "backward"]

MAX_LIMIT = 10_000
# librdkafka requires a group id even for assign(); this one is never joined and never committed to.
BROWSER_GROUP = "kafka-console-browser"

_TIMESTAMP_TYPES: dict[int, TimestampType] = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}
_BATCH = 10_000  # messages per consume() call: large batches keep the per-message cost in C
_POLL_S = 0.05  # consume() waits this long for a full batch; transaction markers make the count we ask for an overestimate
_ERRORS_LOGGED = 5  # per scan: the consumer repeats the same error while a broker is away
_TAIL_POLL_S = 0.25
_PROGRESS_EVERY_S = 0.25
_PROGRESS_EVERY_N = 20_000
_FIRST_FILTERED_WINDOW = 1_000  # backward scans with a filter read at least this much per partition at first
_MAX_WINDOW = 500_000
_GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}
_FATAL_READ = _GONE | {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int  # -1 when the message has no timestamp
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    key_size: int
    value_size: int


@dataclass(frozen=True)
class Produced:
    """Where a produced message was written."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int


@dataclass(frozen=True)
class ScanSpec:
    """What to read.

    start: "oldest" (the log start), "newest" (`newest_n` messages before the end of each partition),
    "offset" (`offset` in every chosen partition, or per partition from `offsets`) or "timestamp"
    (the first message at or after `timestamp_ms`).

    Forward scans return the first `limit` matches after the start, merging the partitions by
    timestamp; backward scans return the last `limit` matches before it (the start is exclusive;
    "newest" then means the end of each partition and newest_n is not used), newest first. Either
    way `ScanProgress.positions` is where the next page in the same direction starts: pass it back
    as `offsets` with start="offset" and nothing is skipped or repeated.
    """

    topic: str
    partitions: tuple[int, ...] | None = None  # None: every partition
    start: Start = "oldest"
    offset: int | None = None
    timestamp_ms: int | None = None
    newest_n: int = 0
    limit: int = 100
    max_scanned: int = 5_000_000
    direction: Direction = "forward"
    # Per-partition start offsets for start="offset" (a previous page's positions). Partitions not
    # listed use `offset`; when `offset` is None only the listed partitions are read.
    offsets: tuple[tuple[int, int], ...] | None = None

    def __post_init__(self) -> None:
        if self.start not in ("oldest", "newest", "offset", "timestamp"):
            raise InvalidRequest(f"A scan must start at oldest, newest, offset or timestamp, not '{self.start}'.")
        if self.direction not in ("forward", "backward"):
            raise InvalidRequest(f"A scan reads forward or backward, not '{self.direction}'.")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidRequest(f"A scan returns 1 to {MAX_LIMIT} messages, not {self.limit}.")
        if self.max_scanned < 1:
            raise InvalidRequest(f"The most messages a scan may read must be at least 1, not {self.max_scanned}.")
        if self.newest_n < 0:
            raise InvalidRequest(f"The number of newest messages must be 0 or more, not {self.newest_n}.")
        if self.start == "offset":
            if self.offset is None and not self.offsets:
                raise InvalidRequest("A scan that starts at an offset needs the offset.")
            if any(o < 0 for o in self._given_offsets()):
                raise InvalidRequest("Offsets start at 0; a negative offset cannot be read.")
        if self.start == "timestamp" and (self.timestamp_ms is None or self.timestamp_ms < 0):
            raise InvalidRequest("A scan that starts at a time needs a timestamp in milliseconds since 1970.")
        if self.partitions is not None and not self.partitions:
            raise InvalidRequest("Choose at least one partition to read.")

    def _given_offsets(self) -> list[int]:
        return ([self.offset] if self.offset is not None else []) + [o for _, o in self.offsets or ()]


@dataclass
class ScanProgress:
    scanned: int = 0  # messages read
    matched: int = 0  # matching messages kept for the result
    positions: dict[int, int] = field(default_factory=dict)  # partition -> where the next page starts
    done: bool = False  # the scan is over (see stopped and reason for why)
    stopped: bool = False  # on_progress or the cancel event asked to stop
    budget_exhausted: bool = False  # the time budget ran out; positions is where to resume
    reason: str | None = None  # why the scan ended, as a sentence


def _key(r: Record) -> tuple[int, int, int]:
    return (r.timestamp_ms, r.partition, r.offset)


def _record(m: Any, key: bytes | None, value: bytes | None) -> Record:
    ts_type, ts = m.timestamp()
    headers = m.headers()
    return Record(
        topic=m.topic(),
        partition=m.partition(),
        offset=m.offset(),
        timestamp_ms=ts if ts_type in _TIMESTAMP_TYPES else -1,
        timestamp_type=_TIMESTAMP_TYPES.get(ts_type, "NoTimestamp"),
        key=key,
        value=value,
        headers=tuple(headers) if headers else (),
        key_size=0 if key is None else len(key),
        value_size=0 if value is None else len(value),
    )


# Clients -----------------------------------------------------------------------------------------


def _consumer(gateway: ClusterGateway, partition_eof: bool = True) -> Consumer:
    conf: dict[str, Any] = {
        **gateway.config.librdkafka(),
        "group.id": BROWSER_GROUP,
        "client.id": "kafka-console-browser",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": partition_eof,
        # Retention may delete the start of the range meanwhile: carry on from what is left.
        "auto.offset.reset": "earliest",
        "allow.auto.create.topics": False,
        "fetch.wait.max.ms": 20,  # the end of a partition (EOF) is only known from an empty fetch: keep that short
        "max.partition.fetch.bytes": 4 * 1024 * 1024,
        "queued.max.messages.kbytes": 32 * 1024,  # prefetch bound: memory per scan stays modest
        # librdkafka waits 1 s by default before fetching again once its queue is full, which starves a
        # scan whose Python side is only a little slower than the fetch: retry almost at once instead.
        "fetch.queue.backoff.ms": 10,
        "socket.connection.setup.timeout.ms": int(gateway.timeout * 1000),
        "reconnect.backoff.max.ms": 1000,
        "log_level": 2,
        "error_cb": gateway.on_error,  # a failed connection's cause (causes.py)
    }
    return gateway._call("connect a message browser", lambda: Consumer(conf))


def _close(consumer: Consumer) -> None:
    try:
        consumer.close()
    except (KafkaException, RuntimeError):
        log.debug("closing a browsing consumer failed", exc_info=True)


# A topic the cluster's controller has just created can be unknown to a broker for a moment (KRaft
# brokers learn it from the metadata log): asked again this often, up to this long, when the caller
# knows the topic exists.
_CATCH_UP_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def _topic_partitions(client: Consumer | Producer, gateway: ClusterGateway, topic: str, exists: bool = False) -> list[int]:
    """The topic's partition ids; NotFound with a sentence when the topic does not exist.
    `exists`: the cluster just said it does (its id was read), so a broker that does not know it
    yet is behind: it is asked again for a few seconds before the answer is NotFound."""

    def run() -> list[int]:
        delays = iter(_CATCH_UP_DELAYS if exists else ())
        while True:
            try:
                md = client.list_topics(topic=topic, timeout=gateway.timeout)
            except KafkaException:
                client.poll(0)  # serve its error callbacks: the gateway names the cause from them
                raise
            tm = md.topics.get(topic)
            error = None if tm is None else tm.error
            if tm is None or (error is not None and error.code() in _GONE):
                delay = next(delays, None)
                if delay is None:
                    raise NotFound(f"Topic '{topic}' does not exist on cluster '{gateway.name}'.")
                time.sleep(delay)
                continue
            if error is not None and error.code() != 0:
                raise KafkaException(error)
            return sorted(tm.partitions)

    return gateway._call(f"read the partitions of topic '{topic}'", run)


def _choose(topic: str, available: list[int], wanted: Iterable[int] | None) -> list[int]:
    if wanted is None:
        return available
    chosen = sorted(set(wanted))
    missing = [p for p in chosen if p not in available]
    if missing:
        which = ", ".join(map(str, missing))
        have = f"0-{available[-1]}" if available else "none"
        raise NotFound(f"Topic '{topic}' has no partition {which}: its partitions are {have}.")
    return chosen


def _watermarks(gateway: ClusterGateway, topic: str, parts: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    request = [(topic, p) for p in parts]
    low: dict[tuple[str, int], int] = {}
    high: dict[tuple[str, int], int] = {}
    deadline = time.monotonic() + gateway.timeout
    for attempt in range(3):
        # A partition whose leader just moved (or a topic just re-created) fails until metadata is
        # refreshed; a short retry hides that instead of failing the page.
        ask = [tp for tp in request if tp not in low or tp not in high]
        if attempt:
            if time.monotonic() + 0.5 > deadline:
                break
            time.sleep(0.5)
        try:
            low.update(gateway.list_offsets(ask, "earliest"))
            high.update(gateway.list_offsets(ask, "latest"))
        except ClusterUnavailable:
            if attempt == 2:
                raise
        if all(tp in low and tp in high for tp in request):
            break
    missing = [p for p in parts if (topic, p) not in low or (topic, p) not in high]
    if missing:
        raise ClusterUnavailable(
            f"Partition(s) {', '.join(map(str, missing))} of topic '{topic}' did not answer on cluster '{gateway.name}' "
            "(no leader?); choose other partitions or try again."
        )
    return {p: low[(topic, p)] for p in parts}, {p: high[(topic, p)] for p in parts}


def _check_offset(topic: str, p: int, offset: int, lo: int, hi: int) -> None:
    if offset > hi:
        raise InvalidRequest(
            f"Offset {offset} is beyond the end of partition {p} of topic '{topic}': "
            f"valid offsets are {lo} to {hi} ({hi} is where the next message will be written)."
        )
    if offset < lo:
        raise InvalidRequest(
            f"Offset {offset} is before the start of partition {p} of topic '{topic}' (older messages were deleted): "
            f"valid offsets are {lo} to {hi}."
        )


def _starts(consumer: Consumer, gateway: ClusterGateway, spec: ScanSpec, parts: list[int], lo: dict[int, int],
            hi: dict[int, int]) -> dict[int, int]:
    """Where reading begins in each partition (for backward scans: the exclusive upper bound)."""
    backward = spec.direction == "backward"
    if spec.start == "oldest":
        return dict(lo)
    if spec.start == "newest":
        return dict(hi) if backward else {p: max(lo[p], hi[p] - spec.newest_n) for p in parts}
    if spec.start == "offset":
        given = dict(spec.offsets or ())
        starts = {p: given.get(p, spec.offset) for p in parts}
        result = {p: o for p, o in starts.items() if o is not None}
        for p, o in result.items():
            _check_offset(spec.topic, p, o, lo[p], hi[p])
        return result
    assert spec.timestamp_ms is not None
    ts = spec.timestamp_ms

    def run() -> list[TopicPartition]:
        return consumer.offsets_for_times([TopicPartition(spec.topic, p, ts) for p in parts], timeout=gateway.timeout)

    found = gateway._call(f"find offsets by time in topic '{spec.topic}'", run)
    result = {}
    for tp in found:
        if tp.error is not None:
            raise gateway.translate(KafkaException(tp.error), f"find offsets by time in topic '{spec.topic}'")
        # -1: no message at or after that time, so the scan starts at the end.
        result[tp.partition] = hi[tp.partition] if tp.offset < 0 else min(max(tp.offset, lo[tp.partition]), hi[tp.partition])
    return result


# Scanning ----------------------------------------------------------------------------------------


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
        self.consumer.assign([TopicPartition(topic, p, ranges[p][0]) for p in live_end])
        assigned = set(live_end)
        self.read_to = read_to
        raw, matcher, make = self.raw_matcher, self.matcher, _record
        max_scanned = self.spec.max_scanned
        idle_since = time.monotonic()
        # Small batches first, so that a page found early is not followed by a large batch nobody needs.
        batch_size = min(_BATCH, max(1_000, 2 * self.spec.limit))
        while live_end and not self.halted:
            # Checked between batches (a batch takes well under 0.2 s), so a stop is honoured at once
            # rather than at the next progress tick.
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
                self.consumer.incremental_unassign([TopicPartition(topic, p) for p in finished])
                assigned.difference_update(finished)
            self._tick()
        return read_to, first

    def _event(self, err: KafkaError) -> None:
        if err.code() in _FATAL_READ or err.fatal():
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
        records.sort(key=_key)
        return records

    def _trim_forward(self, last: dict[int, Any], live_end: dict[int, int]) -> None:
        """Keep the first `limit` matches of the partitions merged by time; end partitions that cannot add any."""
        limit = self.spec.limit
        if sum(len(k) for k in self.kept.values()) < limit:
            return
        self.limit_reached = True
        taken: dict[int, int] = dict.fromkeys(self.kept, 0)
        kth: tuple[int, int, int] = (0, 0, 0)
        for r in itertools.islice(heapq.merge(*self.kept.values(), key=_key), limit):
            taken[r.partition] += 1
            kth = _key(r)
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
        records.sort(key=_key, reverse=True)
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
        for r in itertools.islice(heapq.merge(*newest_first, key=_key, reverse=True), limit):
            taken[r.partition] += 1
            kth = _key(r)
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
    consumer = _consumer(gateway)
    try:
        parts = _choose(spec.topic, _topic_partitions(consumer, gateway, spec.topic), spec.partitions)
        lo, hi = _watermarks(gateway, spec.topic, parts)
        starts = _starts(consumer, gateway, spec, parts, lo, hi)
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
        _close(consumer)


# Tail --------------------------------------------------------------------------------------------


def tail(gateway: ClusterGateway, topic: str, partitions: tuple[int, ...] | None, on_records: Callable[[list[Record]], bool],
         stop: threading.Event, matcher: Callable[[Record], bool] | None = None,
         raw_matcher: Callable[[bytes | None, bytes | None], bool] | None = None,
         on_ready: Callable[[], None] | None = None) -> None:
    """Push messages written after the call began to on_records, until `stop` is set or it returns False.

    Each batch is sorted by (timestamp, partition, offset); empty batches are not pushed. on_ready is
    called once the end offsets are taken: every message written after that will be pushed.
    """
    action = f"follow topic '{topic}'"
    consumer = _consumer(gateway, partition_eof=False)
    try:
        parts = _choose(topic, _topic_partitions(consumer, gateway, topic), partitions)
        high = gateway.list_offsets([(topic, p) for p in parts], "latest")
        # A partition whose end could not be read starts wherever its end is once it answers.
        consumer.assign([TopicPartition(topic, p, high.get((topic, p), OFFSET_END)) for p in parts])
        if on_ready is not None:
            on_ready()
        while not stop.is_set():
            try:
                batch: list[Any] = consumer.consume(num_messages=1000, timeout=_TAIL_POLL_S)
            except KafkaException as exc:
                raise gateway.translate(exc, action) from exc
            records = []
            for m in batch:
                err = m.error()
                if err is not None:
                    if err.code() in _FATAL_READ or err.fatal():
                        raise gateway.translate(KafkaException(err), action)
                    log.debug("consumer error while following %s: %s", topic, err)
                    continue
                key, value = m.key(), m.value()
                if raw_matcher is not None and not raw_matcher(key, value):
                    continue
                rec = _record(m, key, value)
                if matcher is None or matcher(rec):
                    records.append(rec)
            if records:
                records.sort(key=_key)
                if on_records(records) is False:
                    return
    finally:
        _close(consumer)


# Producing ---------------------------------------------------------------------------------------

_producers: dict[ClusterConfig, Producer] = {}
_producers_lock = threading.Lock()


def _producer(gateway: ClusterGateway) -> Producer:
    with _producers_lock:
        producer = _producers.get(gateway.config)
        if producer is None:
            timeout_ms = int(gateway.timeout * 1000)
            conf: dict[str, Any] = {
                **gateway.config.librdkafka(),
                "client.id": "kafka-console",
                "linger.ms": 0,  # one message at a time, sent at once
                "acks": "all",
                "message.timeout.ms": timeout_ms,
                "request.timeout.ms": timeout_ms,
                "socket.connection.setup.timeout.ms": timeout_ms,
                "allow.auto.create.topics": False,  # a typo must not create a topic
                "reconnect.backoff.max.ms": 1000,
                "log_level": 2,
                "error_cb": gateway.on_error,  # a failed connection's cause (causes.py)
            }
            producer = _producers[gateway.config] = gateway._call("connect a producer", lambda: Producer(conf))
            gateway.keep_drained(producer)
        return producer


# The id of each topic the cached producer has written to. librdkafka keeps a deleted and re-created
# topic's old partition leaders (the new topic's leader epochs start again at 0, and it ignores
# epochs older than the ones it saw: confluentinc/librdkafka#4898), so its messages time out while
# the new leaders are elsewhere. A topic whose id changed gets a new producer.
_topic_ids: dict[tuple[ClusterConfig, str], str] = {}


def _producer_for(gateway: ClusterGateway, topic: str) -> Producer:
    current = gateway.topic_id(topic)
    key = (gateway.config, topic)
    stale = None
    with _producers_lock:
        seen = _topic_ids.get(key)
        if seen is not None and seen != current:
            log.info("topic '%s' on cluster '%s' was re-created: a new producer", topic, gateway.name)
            stale = _producers.pop(gateway.config, None)
            for other in [k for k in _topic_ids if k[0] == gateway.config]:
                del _topic_ids[other]
        _topic_ids[key] = current
    if stale is not None:
        gateway.forget_client(stale)
        stale.flush(0)
    return _producer(gateway)


def produce(gateway: ClusterGateway, topic: str, value: bytes | None, key: bytes | None = None,
            headers: list[tuple[str, bytes]] | None = None, partition: int | None = None) -> Produced:
    """Write one message and wait for the cluster to confirm it (at most the gateway's timeout)."""
    action = f"produce to topic '{topic}'"
    producer = _producer_for(gateway, topic)  # (NotFound when the cluster does not have the topic)
    available = _topic_partitions(producer, gateway, topic, exists=True)
    if partition is not None:
        _choose(topic, available, [partition])
    outcome: list[tuple[KafkaError | None, Any]] = []
    delivered = threading.Event()

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        outcome.append((err, msg))
        delivered.set()

    extra: dict[str, Any] = {"partition": partition} if partition is not None else {}
    hdrs: list[tuple[str, str | bytes | None]] | None = list(headers) if headers else None
    try:
        producer.produce(topic, value=value, key=key, headers=hdrs, on_delivery=on_delivery, **extra)
    except BufferError:
        raise ClusterUnavailable(f"Cluster '{gateway.name}' is not taking messages fast enough; try again in a moment.") from None
    except KafkaException as exc:
        raise _produce_error(exc, gateway, action, value) from exc
    deadline = time.monotonic() + gateway.timeout + 1
    while not delivered.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            raise ClusterUnavailable(
                f"Cluster '{gateway.name}' did not confirm the message to topic '{topic}' within {gateway.timeout:g} s; "
                "it may still be written."
            )
        producer.poll(min(0.1, left))
    err, msg = outcome[0]
    if err is not None:
        raise _produce_error(KafkaException(err), gateway, action, value)
    _, ts = msg.timestamp()
    return Produced(topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), timestamp_ms=ts)


def _produce_error(exc: KafkaException, gateway: ClusterGateway, action: str, value: bytes | None) -> Exception:
    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    if err is not None and err.code() in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
        size = 0 if value is None else len(value)
        return InvalidRequest(f"Could not {action}: the message ({size:,} bytes of value) is larger than the cluster accepts.")
    return gateway.translate(exc, action)


class RecordSink:
    """A fire-and-forget writer for the console's own records (the analytics samples): batched and
    compressed, never waited on; delivery failures are counted and the last one is kept in words."""

    def __init__(self, gateway: ClusterGateway, topic: str) -> None:
        self.gateway, self.topic = gateway, topic
        self.delivered = 0
        self.failed = 0
        self.last_error: str | None = None
        conf: dict[str, Any] = {
            **gateway.config.librdkafka(),
            "client.id": "kafka-console-samples",
            "linger.ms": 200,
            "compression.type": "lz4",
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": 60_000,
            "queue.buffering.max.kbytes": 65536,
            "allow.auto.create.topics": False,
            "reconnect.backoff.max.ms": 1000,
            "log_level": 2,
        }
        self.producer = gateway._call("connect a producer", lambda: Producer(conf))

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed += 1
            self.last_error = err.str()

    def send(self, records: Iterable[tuple[bytes, bytes]]) -> int:
        """Queue the records; returns how many were refused at once (the local queue is full)."""
        refused = 0
        for key, value in records:
            try:
                self.producer.produce(self.topic, value=value, key=key, on_delivery=self._on_delivery)
            except BufferError:
                refused += 1
                self.producer.poll(0)
            except KafkaException as exc:
                refused += 1
                self.last_error = str(exc)
        self.producer.poll(0)
        return refused

    def close(self, timeout: float = 5.0) -> None:
        self.producer.flush(timeout)
