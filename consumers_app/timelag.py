"""Time lag in seconds, interpolated as kafka-lag-exporter does (ALGORITHMS.md section 3); pure, no I/O.

Per partition an `OffsetTimeTable` holds (end offset, time) points taken at each refresh (the
watcher keeps its tables as columns, lagcolumns.TimeColumns, which must do exactly what these do). To tell how far behind a consumer is in time, look up when its committed offset was the
end of the log, and subtract that from now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

DEFAULT_POINTS = 60

AddResult = Literal["inserted", "updated", "out_of_order", "non_monotonic"]
INSERTED: Final = "inserted"
UPDATED: Final = "updated"  # the newest point of a flat run moved forward in time
OUT_OF_ORDER: Final = "out_of_order"  # rejected: not newer than the newest point
NON_MONOTONIC: Final = "non_monotonic"  # rejected: offset below the newest point's
Never = Literal["never"]
NEVER: Never = "never"


@dataclass(frozen=True)
class Point:
    offset: int
    at: float  # seconds since the epoch


@dataclass
class OffsetTimeTable:
    """End offsets of one partition over time, oldest first, at most `limit` points."""

    limit: int = DEFAULT_POINTS
    points: list[Point] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.limit < 2:
            raise ValueError(f"a table needs room for at least 2 points, got {self.limit}")

    def add(self, offset: int, at: float) -> AddResult:
        points = self.points
        if points:
            newest = points[-1]
            if at <= newest.at:
                return OUT_OF_ORDER
            if offset < newest.offset:
                return NON_MONOTONIC
            # A flat run keeps only its first and last point, so it cannot crowd the table out.
            if len(points) > 1 and points[-2].offset == offset == newest.offset:
                points[-1] = Point(offset, at)
                return UPDATED
        points.append(Point(offset, at))
        del points[: -self.limit]
        return INSERTED

    def rate(self) -> float | None:
        """Messages per second written over the table (oldest to newest point); None with fewer than 2 points."""
        if len(self.points) < 2:
            return None
        oldest, newest = self.points[0], self.points[-1]
        return (newest.offset - oldest.offset) / (newest.at - oldest.at)

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "points": [[p.offset, p.at] for p in self.points]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OffsetTimeTable:
        return cls(
            limit=int(data.get("limit", DEFAULT_POINTS)),
            points=[Point(int(o), float(t)) for o, t in data.get("points", [])],
        )


def predicted_time(table: OffsetTimeTable, offset: int) -> float | None:
    """When `offset` was (or will be) the end of the log; None when it cannot be told.

    The exact newest offset is the newest point's time. Otherwise the two neighbouring points are
    found scanning from newest to oldest, or, when the offset is outside the table, the oldest and
    newest points are used to extrapolate.
    """
    points = table.points
    if not points:
        return None
    if offset == points[-1].offset:
        return points[-1].at
    if len(points) < 2:
        return None
    left, right = points[0], points[-1]
    for i in range(len(points) - 1, 0, -1):
        if points[i - 1].offset <= offset <= points[i].offset:
            left, right = points[i - 1], points[i]
            break
    if right.offset == left.offset:
        # Only reachable when the whole table is one flat run and the offset lies outside it (a
        # neighbouring pair is never flat: the newer pair sharing that offset matches first). The
        # log did not move while we watched, so the rate gives no answer: an offset below the run
        # was the end before the oldest point, whose time is then the latest it can have been (the
        # time lag is at least that); an offset above it was never the end (no time lag).
        return left.at if offset < left.offset else float("inf")
    return right.at - (right.offset - offset) * (right.at - left.at) / (right.offset - left.offset)


def time_lag(table: OffsetTimeTable, committed_offset: int, now: float) -> float | None:
    """Seconds since the committed offset was the end of the log, never negative; None when unknown."""
    points = table.points
    if points and committed_offset == points[-1].offset:
        return 0.0
    predicted = predicted_time(table, committed_offset)
    if predicted is None:
        return None
    return max(0.0, now - predicted)


def group_time_lag(lags: Iterable[float | None]) -> float | None:
    """The worst partition's time lag; unknown partitions are left out, and all unknown is unknown."""
    known = [lag for lag in lags if lag is not None]
    return max(known) if known else None


def catch_up_forecast(lag: int, consume_rate: float, produce_rate: float) -> float | Never:
    """Seconds until the group reaches the end of the log at the current rates (messages per second).

    "never" when the group consumes no faster than the log grows.
    """
    if lag <= 0:
        return 0.0
    if consume_rate <= produce_rate:
        return NEVER
    return lag / (consume_rate - produce_rate)
