"""Lag windows as columns (numpy): what `lagstatus.PartitionWindow` and `evaluate_partition` do, for
many windows at once; pure, no I/O.

A large cluster's watcher keeps millions of windows, and a sample changes most of them: as Python
objects (a window, two lists, ten `Commit`s) they cost kilobytes each and seconds of a core a
sample. Here a window is one row of a few (rows x size) `Narrow` columns (column_rows.py keeps
their entries), and a sample records and judges every changed window in a few array operations.
An entry's end offset is kept as its distance from the entry's offset; its lag is not stored (it
is always `max(0, end - offset)` of the same entry, as `PartitionWindow.record` computes it).

The rows of a group are a block handed out once per set of partitions (`rows_of`): the group's
(topic, partition) tuple is the key, so no per-partition key is kept.

`PartitionWindow`/`evaluate_partition` stay the reference: a property test replays random
sequences through both and compares every window and status (tests/unit/test_lagcolumns.py).
Only a full window is judged (`DEFAULT_MIN_FULLNESS` = 1.0, as the watcher uses it).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from console.gateway.types import TopicPartition
from consumers_app import narrow_columns
from consumers_app.column_rows import COUNT_TYPE, Stamps, append_entry, entry_times, grown, over_origin
from consumers_app.lagstatus import (
    DEFAULT_MIN_DISTANCE,
    DEFAULT_WINDOW,
    GROUP_ORDER,
    OK,
    REWIND,
    STALL,
    STOP,
    WARN,
    Commit,
    PartitionWindow,
    group_status_of,
)
from consumers_app.narrow_columns import Narrow, Rows

# Status codes of the arrays `status` returns; STATUS_NAMES[code] is the name.
STATUS_NAMES = (OK, WARN, STOP, STALL, REWIND)
CODE_OK, CODE_WARN, CODE_STOP, CODE_STALL, CODE_REWIND = range(5)
# A code's rank on the group scale (lagstatus.GROUP_ORDER: STOP, STALL and REWIND are all ERR).
GROUP_RANK = [GROUP_ORDER[group_status_of(name)] for name in STATUS_NAMES]
STATUS_OF_RANK = {rank: status for status, rank in GROUP_ORDER.items()}
_INT_MIN = np.iinfo(np.int64).min


class WindowColumns:
    """Each entry's offset is kept as its rise over its row's `origin`, in 1 byte for the rows where
    all fit, and its end offset as its distance from the offset, in 2 (`Narrow`): a row's offsets
    (ten commits of one consumer) span far less than 4 bytes count, and those of a consumer near the
    end of its log less than 1. A rise that does not fit as its row is kept (a reset far back, or a
    consumer far ahead) moves the row's origin to the least of its offsets; a row whose offsets
    span more than that even so is kept wider (`Narrow.set`). The end offsets stay in 2 bytes, not
    1: a lagging consumer's distance to the end would spill most rows and cost more than it saves."""

    def __init__(self, size: int = DEFAULT_WINDOW, min_distance: float = DEFAULT_MIN_DISTANCE, capacity: int = 1024) -> None:
        if not 2 <= size <= np.iinfo(COUNT_TYPE).max:
            raise ValueError(f"column windows need a size of 2 to {np.iinfo(COUNT_TYPE).max}, got {size}")
        self.size = size
        self.min_distance = min_distance
        self.origin = np.zeros(capacity, np.int64)  # set by a row's first entry, moved by `over_origin`
        # offset - origin: 1 byte where a row's fit (most rows: a consumer's commits are near each
        # other), 2 in the side table
        self.rises = Narrow(capacity, size, np.int8, np.int16)
        self.gaps = Narrow(capacity, size)  # each entry's end offset as its distance from the entry's offset (end - offset)
        # Each entry's time, by number (`clock`, `_stamp`), as its rise over the row's stamp origin
        # (a number at or below its entries'): 1 byte where the row's fit (`Narrow`), 2 else.
        self.stamps = Narrow(capacity, size, np.int8, np.int16)
        self.stamp_origin = np.zeros(capacity, np.int32)
        self.clock = Stamps()
        self.count = np.zeros(capacity, COUNT_TYPE)  # (entries held: at most `size`)
        # The end offset at each row's latest observation (PartitionWindow.latest_end), as its
        # distance from the row's last offset: 2 bytes where it fits, as the entries' are.
        self.latest_gap = Narrow(capacity, 1)
        self._used = 0  # rows below this were handed out at some time
        self._free: list[int] = []
        # Each group's partitions and rows: the rows as their first when they follow each other (as
        # a group's first rows do, so most groups cost a number, not an array), else an array.
        self._blocks: dict[str, tuple[tuple[TopicPartition, ...], Rows | int]] = {}

    # -- rows ---------------------------------------------------------------------------------

    def rows_of(self, group: str, tps: tuple[TopicPartition, ...]) -> Rows:
        """The rows of `group`'s windows for `tps`, in that order. The same tuple (or an equal one)
        gives the same rows; partitions the group no longer commits lose their windows, new ones
        start empty."""
        block = self._blocks.get(group)
        if block is not None and (block[0] is tps or block[0] == tps):
            return _rows(block)
        old = dict(zip(block[0], _rows(block).tolist(), strict=True)) if block is not None else {}
        rows = np.empty(len(tps), np.int64)
        for i, tp in enumerate(tps):
            row = old.pop(tp, None)
            rows[i] = self._allocate() if row is None else row
        self._release(old.values())
        first = int(rows[0]) if len(rows) else 0
        following = len(rows) > 0 and int(rows[-1]) - first == len(rows) - 1 and bool((np.diff(rows) == 1).all())
        self._blocks[group] = (tps, first if following else rows)
        return rows

    def retain(self, groups: Iterable[str]) -> None:
        """Forget the windows of every group not in `groups`."""
        keep = set(groups)
        for gid in [g for g in self._blocks if g not in keep]:
            self._release(_rows(self._blocks.pop(gid)).tolist())

    def groups(self) -> int:
        return len(self._blocks)

    def windows(self) -> int:
        return self._used - len(self._free)

    def reserve(self, windows: int) -> None:
        """Room for `windows` windows in all, so that a large first sample does not leave the
        columns up to half empty (growing by half as rows are handed out one by one)."""
        if windows > len(self.count):
            self._grow(windows + max(1024, windows // 50))

    def _grow(self, to: int | None = None) -> None:
        self.origin, self.stamp_origin, self.count = grown(self.origin, self.stamp_origin, self.count, to=to)
        for column in (self.rises, self.gaps, self.latest_gap, self.stamps):
            column.grow(len(self.count))

    def settle(self) -> None:
        """The rows kept wide whose entries fit in 2 bytes again go back (once a pass: `Narrow.settle`)."""
        self.rises.settle(self.count, self.origin)
        self.gaps.settle(self.count)
        self.latest_gap.settle(np.minimum(self.count, 1))
        self.stamps.settle(self.count, self.stamp_origin)

    def _allocate(self) -> int:
        if self._free:
            return self._free.pop()
        if self._used == len(self.count):
            self._grow()
        self._used += 1
        return self._used - 1

    def _release(self, rows: Iterable[int]) -> None:
        for row in rows:
            self.count[row] = 0
            self._free.append(row)

    # -- recording and judging ----------------------------------------------------------------

    def record(self, rows: Rows, committed: npt.NDArray[np.int64], end: npt.NDArray[np.int64], at: float,
               committing: npt.NDArray[np.bool_]) -> None:
        """`PartitionWindow.record(committed[i], end[i], at, committing[i])` for each row (rows distinct)."""
        stamp = self._stamp(at)
        chunk = narrow_columns.CHUNK
        for i in range(0, len(rows), chunk):
            self._record(rows[i:i + chunk], committed[i:i + chunk], end[i:i + chunk], at, stamp, committing[i:i + chunk])

    @property
    def times(self) -> npt.NDArray[np.float64]:
        """Each entry's time (a copy: to read; 0.0 where no entry is held)."""
        return entry_times(self.clock, self.stamp_origin, self.stamps, self.count)

    def _compact(self) -> None:
        self.clock.renumber(self.stamp_origin, self.stamps, self.count)

    def _stamp(self, at: float) -> int:
        return self.clock.of(at, self._compact)

    def _record(self, rows: Rows, committed: npt.NDArray[np.int64], end: npt.NDArray[np.int64], at: float, stamp: int,
                committing: npt.NDArray[np.bool_]) -> None:
        n = self.count[rows]
        has = n > 0
        last = np.maximum(n - 1, 0)
        last_at = self.clock.at[self.stamp_origin[rows] + self.stamps.get(rows, last)]
        last_offset = self.origin[rows] + self.rises.get(rows, last)
        kept = ~(has & (at < last_at))  # an observation older than the last entry is dropped
        noted = has & kept & ~committing & (committed == last_offset)  # not a commit: only the end is noted
        # (the latest end over the last offset as it will be: the commit, unless only the end is noted)
        self.latest_gap.set(rows[kept], (end - np.where(noted, last_offset, committed))[kept], 0)
        replace = has & kept & ~noted & (at - last_at < self.min_distance)
        if replace.any():
            r, i = rows[replace], last[replace]
            self.rises.set(r, over_origin(self.rises, self.origin, self.count, r, committed[replace]), i)  # (first: it may move origins)
            self.gaps.set(r, end[replace] - committed[replace], i)
        append = kept & ~noted & ~replace
        if not append.any():
            return
        gaps = end[append] - committed[append]
        ra, na, ca = rows[append], n[append], committed[append]
        fresh = na == 0
        self.origin[ra[fresh]] = ca[fresh]  # (an empty window's first entry is its origin)
        self.stamp_origin[ra[fresh]] = stamp
        rises = over_origin(self.rises, self.origin, self.count, ra, ca)  # (first: it may move origins)
        stamps = over_origin(self.stamps, self.stamp_origin, self.count, ra, np.full(len(ra), stamp, np.int64), na >= self.size)
        append_entry(ra, na, self.count, self.size, [(self.rises, rises), (self.gaps, gaps), (self.stamps, stamps)])

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """Each entry's offset (a copy: to read)."""
        return self.origin[:, None] + self.rises.get(np.arange(len(self.count)))

    @property
    def ends(self) -> npt.NDArray[np.int64]:
        """Each entry's end offset (a copy: to read)."""
        return self.offsets + self.gaps.get(np.arange(len(self.count)))

    def status(self, rows: Rows, now: float, allowed_lag: int = 0) -> npt.NDArray[np.int8]:
        """`evaluate_partition(window, now, allowed_lag)` of each row, as codes (STATUS_NAMES)."""
        chunk = narrow_columns.CHUNK
        if len(rows) > chunk:
            return np.concatenate([self.status(rows[i:i + chunk], now, allowed_lag) for i in range(0, len(rows), chunk)])
        out = np.full(len(rows), CODE_OK, np.int8)
        full = self.count[rows] >= self.size  # rule 1: only a full window is judged
        if not full.any():
            return out
        fr = rows[full]
        off, times = self.origin[fr][:, None] + self.rises.get(fr), self.clock.at[self.stamp_origin[fr][:, None] + self.stamps.get(fr)]
        ends = off + self.gaps.get(fr)
        lag = np.maximum(ends - off, 0)
        last_offset = off[:, -1]
        behind = np.maximum(self.latest_gap.get(fr, 0), 0) > allowed_lag  # rule 2
        stop = (now - times[:, -1] > times[:, -1] - times[:, 0]) & ~(ends <= last_offset[:, None]).any(axis=1)
        # Rule 4: an offset below the one before it, with no later offset back at that one.
        later = np.full_like(off, _INT_MIN)
        later[:, :-1] = np.maximum.accumulate(off[:, :0:-1], axis=1)[:, ::-1]  # max(off[i+1:])
        rewind = ((off[:, 1:] < off[:, :-1]) & (later[:, 1:] < off[:, :-1])).any(axis=1)
        all_behind = (lag > allowed_lag).all(axis=1)
        stall = all_behind & (off == off[:, :1]).all(axis=1)
        warn = all_behind & (np.diff(lag, axis=1) >= 0).all(axis=1)
        codes = np.select([~behind, stop, rewind, stall, warn], [CODE_OK, CODE_STOP, CODE_REWIND, CODE_STALL, CODE_WARN], CODE_OK)
        out[full] = codes
        return out

    def window(self, row: int) -> PartitionWindow:
        """One row as a PartitionWindow (to read, or to compare with the reference)."""
        n = int(self.count[row])
        one = np.array([row], np.int64)
        held = self.origin[row] + self.rises.get(one)[0, :n]
        offsets, ends = held.tolist(), (held + self.gaps.get(one)[0, :n]).tolist()
        times = self.clock.at[self.stamp_origin[row] + self.stamps.get(one)[0, :n]].tolist()
        return PartitionWindow(
            size=self.size, min_distance=self.min_distance,
            commits=[Commit(o, t, max(0, e - o)) for o, t, e in zip(offsets, times, ends, strict=True)],
            end_offsets=ends, latest_end=offsets[-1] + int(self.latest_gap.get(one, 0)[0]) if n else None)


def _rows(block: tuple[tuple[TopicPartition, ...], Rows | int]) -> Rows:
    """A group's rows, as `WindowColumns._blocks` keeps them (an array, or the first of rows that follow each other)."""
    rows = block[1]
    return np.arange(rows, rows + len(block[0]), dtype=np.int64) if isinstance(rows, int) else rows

