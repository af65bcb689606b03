"""How many carried topics' sampled changes (offsets, sizes, rate) each metadata cycle puts in its
snapshot (SampledShare): a pass's changes spread over the cycles until the next pass.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

SPREAD_SHARE = 0.5  # a pass's sampled changes go in within this share of the time to the next pass
SPREAD_FLOOR = 500  # carried topics' sampled changes a cycle always takes at once (within WATCHER_CYCLE_SAMPLED_TOPICS)


class SampledShare:
    """How many carried topics' sampled changes (offsets, sizes, rate) a cycle puts in its snapshot.

    A pass can change most topics at once; taken in by the next cycle or two, they made those
    cycles the slowest and pushed the leader moves they carried later. So a pass's changes are
    spread over SPREAD_SHARE of the time between passes (told from when the last passes were
    merged), counting the cycles in that time at the time between the last cycles that asked (never
    longer than the metadata interval), so that a busy cluster's faster cycles each take less.
    Before two passes were merged, and for up to SPREAD_FLOOR topics, a cycle takes them all."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._merged: deque[float] = deque(maxlen=8)  # when the last samples that changed something were merged
        self._share: int | None = None  # what each cycle takes of the backlog being spread
        self._backlog = 0  # what the last cycle left
        self._asked: deque[float] = deque(maxlen=8)  # when the last cycles asked for their share (`take`)

    @staticmethod
    def floor(limit: int) -> int:
        """How many topics' changes a cycle takes at once, whatever the spread (`limit`:
        WATCHER_CYCLE_SAMPLED_TOPICS)."""
        return min(SPREAD_FLOOR, limit)

    def merged(self) -> None:
        """A sample that changed topics was merged now."""
        self._merged.append(self._clock())

    def period(self) -> float | None:
        """The median time between the last merges, or None before two."""
        return _median_gap(self._merged)

    def take(self, due: int, limit: int, interval: float) -> int:
        """Of `due` topics waiting, how many this cycle takes (the rest wait for the next cycles).
        `interval`: the metadata interval, the longest time between cycles counted."""
        self._asked.append(self._clock())
        floor = self.floor(limit)
        if due <= floor:
            self._share, self._backlog = None, 0
            return due
        if self._share is None or due > self._backlog:  # (a new pass's changes: spread them again)
            period = self.period()
            # (the median time between the last cycles that asked; none before two, or when they
            # came at once: a frozen clock)
            gap = min(interval, _median_gap(self._asked) or interval)
            cycles = max(1, int(SPREAD_SHARE * period / gap)) if period is not None and gap > 0 else 1
            self._share = min(limit, max(floor, math.ceil(due / cycles)))
        taken = min(due, self._share, limit)
        self._backlog = due - taken
        return taken


def _median_gap(times: deque[float]) -> float | None:
    """The median time between consecutive `times`, or None before two."""
    stamps = list(times)
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:], strict=False))
    return gaps[len(gaps) // 2] if gaps else None

