"""What a scan reads (ScanSpec), how it went (ScanProgress) and where in each partition it begins."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition

from console.gateway.client import ClusterGateway
from console.gateway.errors import InvalidRequest

Start = Literal["oldest", "newest", "offset", "timestamp"]
Direction = Literal["forward", "backward"]

MAX_LIMIT = 10_000


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


def check_offset(topic: str, p: int, offset: int, lo: int, hi: int) -> None:
    """InvalidRequest with the valid range when `offset` is outside partition `p`'s [lo, hi]."""
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


def start_positions(consumer: Consumer, gateway: ClusterGateway, spec: ScanSpec, parts: list[int], lo: dict[int, int],
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
            check_offset(spec.topic, p, o, lo[p], hi[p])
        return result
    assert spec.timestamp_ms is not None
    ts = spec.timestamp_ms

    def run() -> list[RdTopicPartition]:
        return consumer.offsets_for_times([RdTopicPartition(spec.topic, p, ts) for p in parts], timeout=gateway.timeout)

    found = gateway._call(f"find offsets by time in topic '{spec.topic}'", run)
    result = {}
    for tp in found:
        if tp.error is not None:
            raise gateway.translate(KafkaException(tp.error), f"find offsets by time in topic '{spec.topic}'")
        # -1: no message at or after that time, so the scan starts at the end.
        result[tp.partition] = hi[tp.partition] if tp.offset < 0 else min(max(tp.offset, lo[tp.partition]), hi[tp.partition])
    return result
