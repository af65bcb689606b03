"""Consumer lag status with Burrow's rules (ALGORITHMS.md section 2); pure, no I/O.

Per (group, topic, partition) a `PartitionWindow` holds the last W commits seen. Each entry holds
the committed offset, the time it was seen and the lag at that time; the end offsets seen at the
same refreshes are kept alongside, in a window of the same size. (The watcher keeps its windows as
columns, lagcolumns.py, which must do exactly what these do: tests/unit/test_lagcolumns.py.)

When a new entry is stored: Burrow stores one entry per offset commit, and consumers commit on a
timer even when the offset has not moved, which is what lets a stalled consumer be told from an
idle one. The watcher only sees committed offsets when it polls (OffsetFetch has no commit time),
so each poll of a group with members counts as a commit: an observation at least `min_distance`
seconds after the last stored entry is stored as a new entry whether or not the offset changed; one
that arrives sooner replaces the last entry (offset, lag and end offset) but keeps that entry's
time, as Burrow does for commits that come too fast. A group with no members cannot commit, so
there an unchanged offset is not a commit (only the end offset is noted) and the time since the last
commit grows until STOP fires; a changed offset still is one. An observation older than the last
stored entry is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

OK, WARN, STOP, STALL, REWIND = "OK", "WARN", "STOP", "STALL", "REWIND"
NOTFOUND, ERR = "NOTFOUND", "ERR"
PARTITION_STATUSES = (OK, WARN, STOP, STALL, REWIND)

# The group reports the worst of its partitions on this scale; STOP, STALL and REWIND are all ERR.
GROUP_ORDER = {NOTFOUND: 0, OK: 1, WARN: 2, ERR: 3}
_GROUP_STATUS_OF = {NOTFOUND: NOTFOUND, OK: OK, WARN: WARN, STOP: ERR, STALL: ERR, REWIND: ERR}

DEFAULT_WINDOW = 10
DEFAULT_MIN_DISTANCE = 1.0
# A status computed from a part-filled window is noise (a STOP from two commits 5 s apart, say),
# so by default only a full window is evaluated, as Burrow originally did.
DEFAULT_MIN_FULLNESS = 1.0

Key = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class Commit:
    offset: int
    at: float  # seconds since the epoch
    lag: int  # end offset - committed at the time it was recorded, floored at 0


@dataclass
class PartitionWindow:
    """The last `size` commits of one partition for one group, oldest first."""

    size: int = DEFAULT_WINDOW
    min_distance: float = DEFAULT_MIN_DISTANCE
    commits: list[Commit] = field(default_factory=list)
    end_offsets: list[int] = field(default_factory=list)  # end offset seen with each commit, same order
    latest_end: int | None = None  # end offset at the latest refresh, whether or not it stored a commit

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"window size must be at least 1, got {self.size}")
        if len(self.commits) != len(self.end_offsets):
            raise ValueError("a window needs one end offset per commit")

    def record(self, committed: int, end_offset: int, at: float, committing: bool = True) -> bool:
        """Store what one refresh saw; False when the observation was older than the last one and dropped.

        `committing` is False when nobody can have committed since the last refresh (the group has no
        members): an unchanged offset is then not a commit, only the end offset is noted, so the time
        since the last commit grows and STOP can fire. A changed offset is a commit either way (a
        reset, or a consumer that commits without joining the group)."""
        lag = max(0, end_offset - committed)
        if self.commits:
            last = self.commits[-1]
            if at < last.at:
                return False
            self.latest_end = end_offset
            if not committing and committed == last.offset:
                return True
            if at - last.at < self.min_distance:
                self.commits[-1] = Commit(committed, last.at, lag)
                self.end_offsets[-1] = end_offset
                return True
        self.latest_end = end_offset
        self.commits.append(Commit(committed, at, lag))
        self.end_offsets.append(end_offset)
        del self.commits[: -self.size]
        del self.end_offsets[: -self.size]
        return True

    @property
    def fullness(self) -> float:
        """Fraction of the window filled, 0.0 to 1.0."""
        return len(self.commits) / self.size

    @property
    def current_lag(self) -> int | None:
        """Latest end offset - latest commit, floored at 0; None before the first commit."""
        if not self.commits:
            return None
        end = self.end_offsets[-1] if self.latest_end is None else self.latest_end
        return max(0, end - self.commits[-1].offset)

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "min_distance": self.min_distance,
            "commits": [[c.offset, c.at, c.lag] for c in self.commits],
            "end_offsets": list(self.end_offsets),
            "latest_end": self.latest_end,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartitionWindow:
        return cls(
            size=int(data.get("size", DEFAULT_WINDOW)),
            min_distance=float(data.get("min_distance", DEFAULT_MIN_DISTANCE)),
            commits=[Commit(int(o), float(t), int(lag)) for o, t, lag in data.get("commits", [])],
            end_offsets=[int(e) for e in data.get("end_offsets", [])],
            latest_end=None if data.get("latest_end") is None else int(data["latest_end"]),
        )


def evaluate_partition(
    window: PartitionWindow, now: float, allowed_lag: int = 0, min_fullness: float = DEFAULT_MIN_FULLNESS
) -> str:
    """The status of one partition: OK, WARN, STOP, STALL or REWIND, by the rules in order."""
    commits = window.commits
    # 1. Nothing, or too little, to judge by.
    if not commits or window.fullness < min_fullness:
        return OK
    # 2. Caught up now.
    current = window.current_lag
    if current is not None and current <= allowed_lag:
        return OK
    first, last = commits[0], commits[-1]
    # 3. No commit for longer than the window spans, unless the consumer reached the end recently.
    if now - last.at > last.at - first.at and not any(end <= last.offset for end in window.end_offsets):
        return STOP
    # 4. An offset went back and never returned to where it had been.
    if _rewound(commits):
        return REWIND
    # 5. Behind all along: not moving at all, or moving without ever gaining.
    if all(c.lag > allowed_lag for c in commits):
        if all(c.offset == first.offset for c in commits):
            return STALL
        if all(later.lag >= earlier.lag for earlier, later in pairwise(commits)):
            return WARN
    # 6.
    return OK


def _rewound(commits: list[Commit]) -> bool:
    for i in range(1, len(commits)):
        before = commits[i - 1].offset
        if commits[i].offset < before and not any(c.offset >= before for c in commits[i + 1 :]):
            return True
    return False


@dataclass(frozen=True)
class PartitionResult:
    """What `evaluate_group` needs to know of one partition."""

    status: str
    lag: int | None  # current lag; None when unknown (no committed offset)
    fullness: float  # PartitionWindow.fullness


@dataclass(frozen=True)
class GroupResult:
    status: str  # NOTFOUND, OK, WARN or ERR
    max_lag_partition: Key | None  # the partition with the largest known lag; ties go to the first in (topic, partition) order
    max_lag: int | None
    total_lag: int  # sum of the known lags
    complete: float  # fraction of partitions whose window is full, 0.0 with no partitions


def group_status_of(partition_status: str) -> str:
    """The group-level name of a partition status (STOP, STALL and REWIND are ERR)."""
    try:
        return _GROUP_STATUS_OF[partition_status]
    except KeyError:
        raise ValueError(f"unknown partition status {partition_status!r}") from None


def evaluate_group(partitions: Mapping[Key, PartitionResult]) -> GroupResult:
    """The worst partition status on the group scale; a group with no partitions is NOTFOUND."""
    status = NOTFOUND
    max_key: Key | None = None
    max_lag: int | None = None
    total = 0
    full = 0
    for key in sorted(partitions):
        result = partitions[key]
        mapped = group_status_of(result.status)
        if GROUP_ORDER[mapped] > GROUP_ORDER[status]:
            status = mapped
        if result.lag is not None:
            total += result.lag
            if max_lag is None or result.lag > max_lag:
                max_key, max_lag = key, result.lag
        if result.fullness >= 1.0:
            full += 1
    return GroupResult(
        status=status,
        max_lag_partition=max_key,
        max_lag=max_lag,
        total_lag=total,
        complete=full / len(partitions) if partitions else 0.0,
    )
