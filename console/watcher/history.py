"""Which points of each group's lag history the watcher stores (pure, no I/O).

Every sample gives each group a point (time, total lag, time lag). Most groups of a steady cluster
give the same values sample after sample; storing each would cost one Redis write per group per
sample. A flat run is stored as its first point, a point every `keepalive` seconds, and its last
point when the values change (so the chart draws the same line: flat, then the change where it
happened, never a ramp across skipped samples).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

Point = tuple[float, int, float | None]  # (time, total lag, time lag)


@dataclass(slots=True)  # (one per group)
class _Run:
    written: Point  # the last point stored
    skipped: Point | None = None  # the newest point of the run not stored
    count: int = 0  # points stored since the history was last trimmed


@dataclass
class LagHistoryFilter:
    keepalive: float = 30.0
    trim_every: int = 40
    runs: dict[str, _Run] = field(default_factory=dict)

    def select(self, points: dict[str, Point]) -> tuple[dict[str, list[Point]], set[str]]:
        """The points to store now per group, oldest first, and the groups whose history to trim.
        Call `stored` once they are: until then the last stored point stays what it was."""
        out: dict[str, list[Point]] = {}
        trim: set[str] = set()
        for gid, point in points.items():
            run = self.runs.get(gid)
            if run is None:
                out[gid] = [point]
                trim.add(gid)
                continue
            if point[0] <= run.written[0]:
                continue  # not newer than what is stored
            same = point[1:] == run.written[1:]
            if same and point[0] - run.written[0] < self.keepalive:
                run.skipped = point
                continue
            out[gid] = [point] if same or run.skipped is None else [run.skipped, point]
            run.skipped = None
            if run.count + len(out[gid]) >= self.trim_every:
                trim.add(gid)
        return out, trim

    def stored(self, written: dict[str, list[Point]], trimmed: set[str]) -> None:
        for gid, pts in written.items():
            run = self.runs.get(gid)
            if run is None:
                run = self.runs[gid] = _Run(pts[-1])
            run.written = pts[-1]
            run.count = 0 if gid in trimmed else run.count + len(pts)

    def retain(self, groups: Collection[str]) -> None:
        for gid in self.runs.keys() - set(groups):
            del self.runs[gid]
