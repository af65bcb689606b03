"""Lag windows as columns (numpy): what `lagstatus.PartitionWindow` and `evaluate_partition` do, for
many windows at once; pure, no I/O.

At 300,000 partitions and 50,000 groups the watcher keeps about 1.5 million windows. As Python
objects (a window, two lists, ten `Commit`s) they took about 3 KB each, 4 GB in all, and recording
and judging the 900,000 that change between two samples took seconds of one core. Here a window is
one row of three (rows x size) arrays, 100 bytes at the default size, and a sample records and
judges every changed window in a few array operations. An entry's time is kept as the number of its
sample (`Stamps`), in 2 bytes while every number fits (`STAMP_MAX`; 4 after): every entry a sample
records has that sample's time, so 8 bytes per entry were spent on a few distinct values (90 MB of
windows and 108 MB of time tables at that scale). Its end offset is kept as its distance from the entry's offset, and its offset as its rise over its
row's origin, each in 4 bytes while all fit (60 MB less each).

The rows of a group are a block handed out once per set of partitions (`rows_of`): the group's
(topic, partition) tuple is the key, so no per-partition key is kept. Entries are left-aligned: a
row holds `count` entries, oldest first; an entry's lag is not stored (it is always
`max(0, end - offset)` of the same entry, as `PartitionWindow.record` computes it).

`PartitionWindow`/`evaluate_partition` stay the reference: a property test replays random
sequences through both and compares every window and status (tests/unit/test_lagcolumns.py).
Only a full window is judged (`DEFAULT_MIN_FULLNESS` = 1.0, as the watcher uses it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

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
from consumers_app.timelag import DEFAULT_POINTS

# Status codes of the arrays `status` returns; STATUS_NAMES[code] is the name.
STATUS_NAMES = (OK, WARN, STOP, STALL, REWIND)
CODE_OK, CODE_WARN, CODE_STOP, CODE_STALL, CODE_REWIND = range(5)
# A code's rank on the group scale (lagstatus.GROUP_ORDER: STOP, STALL and REWIND are all ERR).
GROUP_RANK = [GROUP_ORDER[group_status_of(name)] for name in STATUS_NAMES]
STATUS_OF_RANK = {rank: status for status, rank in GROUP_ORDER.items()}

Rows = npt.NDArray[np.int64]
# Rows recorded or judged in one go: the temporaries of a window operation are (rows x size)
# arrays, and 1.5 million windows at once made each of them 120 MB.
CHUNK = 1 << 16
SHIFT_ENTRIES = 1 << 19  # entries shifted at once when full rows take a new one (`_append`)
TopicPartition = tuple[str, int]
_INT_MIN = np.iinfo(np.int64).min
_INT32 = np.iinfo(np.int32)
# Entries keep their sample's number in 2 bytes while every number handed out fits (4 from the first
# that does not: more than 32,767 samples' times held at once, 27 hours of them at 3 s). 66 MB less
# at 1.5 million windows and 300,000 time tables. (Tests make it small, to widen often.)
STAMP_MAX = int(np.iinfo(np.int16).max)
_COUNT = np.int16  # a row's entries; a window or table holds at most this many
Entries = npt.NDArray[np.int16] | npt.NDArray[np.int32]  # (rows x size) stamps: each entry's sample, by number


class Stamps:
    """The times of the samples the entries of a set of columns hold, each by a 4-byte number.
    Number 0 is time 0.0, what an entry never written holds. When the numbers run out, the ones no
    entry holds any more are given back (`compact`, by the columns, which know their entries) and
    the rest renumbered in order; the room doubles when more than half are still held."""

    CAPACITY = 1024  # numbers to start with (tests make it small, to renumber often)

    def __init__(self) -> None:
        self.at = np.zeros(max(2, self.CAPACITY), np.float64)
        self.n = 1
        self._last: tuple[float, int] = (0.0, 0)

    def of(self, at: float, compact: Callable[[], None]) -> int:
        """The number of the sample at `at` (a new one unless it is the last one given)."""
        if self._last[0] == at and self._last[1]:
            return self._last[1]
        if self.n == len(self.at):
            compact()
            if self.n > len(self.at) // 2:
                self.at = np.concatenate([self.at, np.zeros(len(self.at), np.float64)])
        number = self.n
        self.at[number] = at
        self.n += 1
        self._last = (at, number)
        return number

    def renumber(self, entries: Entries, held: npt.NDArray[np.bool_]) -> None:
        """Give back the numbers no `held` entry of `entries` has; the others keep their order
        (in place, a block of rows at a time: the columns hold millions of entries)."""
        used = np.zeros(self.n, np.bool_)
        used[0] = True
        for i in range(0, len(entries), CHUNK):
            used[entries[i:i + CHUNK][held[i:i + CHUNK]]] = True
        kept = np.flatnonzero(used)
        new_of = np.zeros(self.n, np.int32)
        new_of[kept] = np.arange(len(kept), dtype=np.int32)
        for i in range(0, len(entries), CHUNK):
            block = entries[i:i + CHUNK]
            block[...] = np.where(held[i:i + CHUNK], new_of[block], 0)
        self.at[:len(kept)] = self.at[kept]
        self.at[len(kept):] = 0.0
        self.n = len(kept)
        self._last = (0.0, 0)


def _stamped(clock: Stamps, at: float, compact: Callable[[], None], columns: Any) -> tuple[int, Entries]:
    """The number of the sample at `at`, and the columns' stamps: widened to 4 bytes (for good) when
    the number does not fit in 2 (read after `compact`, which may renumber them in place)."""
    stamp = clock.of(at, compact)
    stamps: Entries = columns.stamps
    if stamp > STAMP_MAX and stamps.dtype == np.int16:
        stamps = stamps.astype(np.int32)
    return stamp, stamps


def _held(count: npt.NDArray[np.integer[Any]], size: int) -> npt.NDArray[np.bool_]:
    """Which entries of each row are written (the first `count` of it)."""
    return np.arange(size)[None, :] < count[:, None]


class WindowColumns:
    """Each entry's offset is kept as its rise over its row's `origin`, in 4 bytes (60 MB less at 1.5
    million windows): a row's offsets (ten commits of one consumer) span far less than 4 bytes count.
    A rise that does not fit (a reset far back, or far ahead) moves the row's origin to the least
    of its offsets; a row whose offsets span more than that even so widens the column to 8 for good."""

    RISE_MAX = int(_INT32.max)  # (tests make it small, to move origins and widen often)

    def __init__(self, size: int = DEFAULT_WINDOW, min_distance: float = DEFAULT_MIN_DISTANCE, capacity: int = 1024) -> None:
        if not 2 <= size <= np.iinfo(_COUNT).max:
            raise ValueError(f"column windows need a size of 2 to {np.iinfo(_COUNT).max}, got {size}")
        self.size = size
        self.min_distance = min_distance
        self.origin = np.zeros(capacity, np.int64)  # set by a row's first entry, moved by `_rebased`
        self.rises: npt.NDArray[np.int32] | npt.NDArray[np.int64] = np.zeros((capacity, size), np.int32)  # offset - origin
        # Each entry's end offset as its distance from the entry's offset (end - offset), in 4 bytes
        # while every distance fits (8 from the first that does not: `_fit`).
        self.gaps: npt.NDArray[np.int32] | npt.NDArray[np.int64] = np.zeros((capacity, size), np.int32)
        self.stamps: Entries = np.zeros((capacity, size), np.int16)  # each entry's time, by number (`clock`, `_stamp`)
        self.clock = Stamps()
        self.count = np.zeros(capacity, _COUNT)  # (entries held: at most `size`)
        self.latest_end = np.zeros(capacity, np.int64)
        self._used = 0  # rows below this were handed out at some time
        self._free: list[int] = []
        # Each group's partitions and rows: the rows as their first when they follow each other (as
        # a group's first rows do: 50,000 arrays of 30 rows, 17 MB, were a number each), else an array.
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
            self.origin, self.rises, self.gaps, self.stamps, self.count, self.latest_end = _grown(
                self.origin, self.rises, self.gaps, self.stamps, self.count, self.latest_end, to=windows + max(1024, windows // 50))

    def _allocate(self) -> int:
        if self._free:
            return self._free.pop()
        if self._used == len(self.count):
            self.origin, self.rises, self.gaps, self.stamps, self.count, self.latest_end = _grown(
                self.origin, self.rises, self.gaps, self.stamps, self.count, self.latest_end)
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
        for i in range(0, len(rows), CHUNK):
            self._record(rows[i:i + CHUNK], committed[i:i + CHUNK], end[i:i + CHUNK], at, stamp, committing[i:i + CHUNK])

    @property
    def times(self) -> npt.NDArray[np.float64]:
        """Each entry's time (a copy: to read)."""
        return self.clock.at[self.stamps]

    def _compact(self) -> None:
        self.clock.renumber(self.stamps, _held(self.count, self.size))

    def _stamp(self, at: float) -> int:
        stamp, self.stamps = _stamped(self.clock, at, self._compact, self)
        return stamp

    def _record(self, rows: Rows, committed: npt.NDArray[np.int64], end: npt.NDArray[np.int64], at: float, stamp: int,
                committing: npt.NDArray[np.bool_]) -> None:
        n = self.count[rows]
        has = n > 0
        last = np.maximum(n - 1, 0)
        last_at = self.clock.at[self.stamps[rows, last]]
        last_offset = self.origin[rows] + self.rises[rows, last]
        kept = ~(has & (at < last_at))  # an observation older than the last entry is dropped
        self.latest_end[rows[kept]] = end[kept]
        noted = has & kept & ~committing & (committed == last_offset)  # not a commit: only the end is noted
        replace = has & kept & ~noted & (at - last_at < self.min_distance)
        if replace.any():
            r, i = rows[replace], last[replace]
            rises = self._rebased(r, committed[replace])  # (first: it may move origins or replace the column)
            self.rises[r, i] = rises
            gaps = self._fit(end[replace] - committed[replace])  # (first: it may replace the column)
            self.gaps[r, i] = gaps
        append = kept & ~noted & ~replace
        if not append.any():
            return
        gaps = self._fit(end[append] - committed[append])  # (first: it may replace the column)
        ra, na, ca = rows[append], n[append], committed[append]
        fresh = na == 0
        self.origin[ra[fresh]] = ca[fresh]  # (an empty window's first entry is its origin)
        rises = self._rebased(ra, ca)  # (first: it may move origins or replace the column)
        _append(ra, na, self.count, self.size, [(self.rises, rises), (self.gaps, gaps), (self.stamps, stamp)])

    def _rebased(self, rows: Rows, values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """`values` as rises over their rows' origins, about to be written into those rows (distinct);
        a row whose rise does not fit has its origin moved to the least of its offsets and the value,
        and the column widens if the row's offsets span more than a rise holds even so."""
        rises = values - self.origin[rows]
        top = self.RISE_MAX
        if self.rises.dtype != np.int32 or not len(rises) or (rises.min() >= -top - 1 and rises.max() <= top):
            return rises
        far = (rises < -top - 1) | (rises > top)
        rf, vf = rows[far], values[far]
        held = _held(self.count[rf], self.size)
        offsets = self.origin[rf][:, None] + self.rises[rf]
        low = np.minimum(np.where(held, offsets, np.iinfo(np.int64).max).min(axis=1), vf)
        high = np.maximum(np.where(held, offsets, _INT_MIN).max(axis=1), vf)
        if (high - low).max() > top:
            self.rises = self.rises.astype(np.int64)
            return rises
        self.rises[rf] = np.where(held, offsets - low[:, None], 0)
        self.origin[rf] = low
        return values - self.origin[rows]

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """Each entry's offset (a copy: to read)."""
        return self.origin[:, None] + self.rises

    def _fit(self, gaps: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """`gaps`, after widening the column to 8 bytes if one of them does not fit in 4 (for good:
        a lag of two billion messages, or a commit that far past the end)."""
        if self.gaps.dtype == np.int32 and len(gaps) and (gaps.min() < _INT32.min or gaps.max() > _INT32.max):
            self.gaps = self.gaps.astype(np.int64)
        return gaps

    @property
    def ends(self) -> npt.NDArray[np.int64]:
        """Each entry's end offset (a copy: to read)."""
        return self.offsets + self.gaps

    def status(self, rows: Rows, now: float, allowed_lag: int = 0) -> npt.NDArray[np.int8]:
        """`evaluate_partition(window, now, allowed_lag)` of each row, as codes (STATUS_NAMES)."""
        if len(rows) > CHUNK:
            return np.concatenate([self.status(rows[i:i + CHUNK], now, allowed_lag) for i in range(0, len(rows), CHUNK)])
        out = np.full(len(rows), CODE_OK, np.int8)
        full = self.count[rows] >= self.size  # rule 1: only a full window is judged
        if not full.any():
            return out
        fr = rows[full]
        off, times = self.origin[fr][:, None] + self.rises[fr], self.clock.at[self.stamps[fr]]
        ends = off + self.gaps[fr]
        lag = np.maximum(ends - off, 0)
        last_offset = off[:, -1]
        behind = np.maximum(self.latest_end[fr] - last_offset, 0) > allowed_lag  # rule 2
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
        held = self.origin[row] + self.rises[row, :n].astype(np.int64)
        offsets, ends = held.tolist(), (held + self.gaps[row, :n]).tolist()
        times = self.clock.at[self.stamps[row, :n]].tolist()
        return PartitionWindow(
            size=self.size, min_distance=self.min_distance,
            commits=[Commit(o, t, max(0, e - o)) for o, t, e in zip(offsets, times, ends, strict=True)],
            end_offsets=ends, latest_end=int(self.latest_end[row]) if n else None)


def _rows(block: tuple[tuple[TopicPartition, ...], Rows | int]) -> Rows:
    """A group's rows, as `WindowColumns._blocks` keeps them (an array, or the first of rows that follow each other)."""
    rows = block[1]
    return np.arange(rows, rows + len(block[0]), dtype=np.int64) if isinstance(rows, int) else rows


def _append(rows: Rows, n: npt.NDArray[np.integer[Any]], count: npt.NDArray[np.integer[Any]], size: int,
            columns: list[tuple[npt.NDArray[np.int64] | Entries, npt.NDArray[np.int64] | int]]) -> None:
    """A new newest entry in each of `rows` (holding `n` entries): `value` into each column, after
    the others where there is room, else with the oldest shifted out."""
    room = n < size
    if room.any():
        rr, ii = rows[room], n[room]
        for column, value in columns:
            column[rr, ii] = value[room] if isinstance(value, np.ndarray) else value
        count[rr] = ii + 1
    full = ~room
    if full.any():
        rf = rows[full]
        # (a block of rows at a time: `column[rows, 1:]` is a copy, and a busy cluster's full time
        # tables shift every row each sample, 71 MB at once at 300,000 tables of 60 points)
        block = max(1, SHIFT_ENTRIES // size)
        for column, value in columns:
            vf = value[full] if isinstance(value, np.ndarray) else value
            for i in range(0, len(rf), block):
                rb = rf[i:i + block]
                column[rb, :-1] = column[rb, 1:]
                column[rb, -1] = vf[i:i + block] if isinstance(vf, np.ndarray) else vf


def _grown(*arrays: npt.NDArray[Any], to: int | None = None) -> list[npt.NDArray[Any]]:
    """The arrays with half as many rows again (1,024 at least), or with `to` rows, the new ones
    empty (0; inf for float rows, which is what a free row's last-seen time holds)."""
    grow = max(1024, len(arrays[0]) // 2) if to is None else max(0, to - len(arrays[0]))
    return [np.concatenate([a, np.full((grow, *a.shape[1:]), np.inf if a.ndim == 1 and a.dtype == np.float64 else 0,
                                       a.dtype)]) for a in arrays]


class TimeColumns:
    """`timelag.OffsetTimeTable` of every partition as columns, and `timelag.time_lag` for many
    (partition, committed offset) pairs at once; the reference tables stay the specification
    (tests/unit/test_lagcolumns.py). A partition's row is handed out the first time it is added; a
    partition no sample has listed for `forget_after` seconds (a deleted topic, mostly) loses its
    table and its row goes to the next new partition. `generation` counts those hand-backs: rows
    remembered by a caller are good while it is unchanged.

    A point's offset is kept as its rise over its row's `origin` (at or below the row's oldest
    point: a table's offsets never go down), in 4 bytes: 72 MB less at 300,000 tables of 60 points.
    A rise that does not fit moves the row's origin up to the oldest point it keeps; a table that
    spans more than 4 bytes even so widens the column to 8 for good."""

    RISE_MAX = int(np.iinfo(np.int32).max)  # (tests make it small, to move origins and widen often)

    def __init__(self, limit: int = DEFAULT_POINTS, capacity: int = 1024, forget_after: float = 600.0) -> None:
        if not 2 <= limit <= np.iinfo(_COUNT).max:
            raise ValueError(f"a table needs room for 2 to {np.iinfo(_COUNT).max} points, got {limit}")
        self.limit = limit
        self.forget_after = forget_after
        self.origin = np.zeros(capacity, np.int64)
        self.rises: npt.NDArray[np.int32] | npt.NDArray[np.int64] = np.zeros((capacity, limit), np.int32)  # offset - origin
        self.stamps: Entries = np.zeros((capacity, limit), np.int16)  # each point's time, by number (`clock`, `_stamp`)
        self.clock = Stamps()
        self.count = np.zeros(capacity, _COUNT)  # (points held: at most `limit`)
        self.last_seen = np.full(capacity, np.inf)  # when each row's partition was last added (inf: free)
        self.index: dict[TopicPartition, int] = {}
        self.generation = 0
        self._partition_of: list[TopicPartition | None] = []  # by row
        self._free: list[int] = []
        self._keys: list[TopicPartition] = []
        self._rows: Rows = np.zeros(0, np.int64)

    def row(self, tp: TopicPartition) -> int | None:
        return self.index.get(tp)

    def rows(self, tps: Iterable[TopicPartition]) -> list[int | None]:
        index = self.index
        return [index.get(tp) for tp in tps]

    def add_all(self, ends: Mapping[TopicPartition, int], at: float) -> None:
        """`OffsetTimeTable.add(offset, at)` on the table of each partition in `ends`."""
        if not ends:
            return
        keys = list(ends)
        if keys != self._keys:  # (the same partitions in the same order: the rows of last time)
            index = self.index
            new = [tp for tp in keys if tp not in index]
            needed = len(self._partition_of) + len(new) - len(self._free)
            if needed > len(self.count):  # (room for them all at once, not half again as much)
                self.origin, self.rises, self.stamps, self.count, self.last_seen = _grown(
                    self.origin, self.rises, self.stamps, self.count, self.last_seen, to=needed + max(1024, needed // 50))
            for tp in new:
                index[tp] = self._allocate(tp)
            self._keys, self._rows = keys, np.fromiter((index[tp] for tp in keys), np.int64, len(keys))
        rows = self._rows
        self.last_seen[rows] = at
        if (self.last_seen < at - self.forget_after).any():
            self._forget(at)
        values = np.fromiter(ends.values(), np.int64, len(keys))
        stamp, self.stamps = _stamped(self.clock, at, self._compact, self)
        n = self.count[rows]
        has = n > 0
        last = np.maximum(n - 1, 0)
        newest_at = self.clock.at[self.stamps[rows, last]]
        origin = self.origin[rows]
        newest = origin + self.rises[rows, last]
        # Rejected: not newer than the newest point, or an offset below it.
        ok = ~has | ((at > newest_at) & (values >= newest))
        # A flat run keeps only its first and last point: the last moves forward in time.
        update = ok & (n > 1) & (origin + self.rises[rows, np.maximum(n - 2, 0)] == values) & (newest == values)
        if update.any():
            self.stamps[rows[update], last[update]] = stamp
        append = ok & ~update
        if not append.any():
            return
        ra, na, va = rows[append], n[append], values[append]
        fresh = na == 0
        self.origin[ra[fresh]] = va[fresh]  # (an empty table's first point is its origin)
        rises = self._rises(ra, na, va)  # (first: it may replace the column)
        _append(ra, na, self.count, self.limit, [(self.rises, rises), (self.stamps, stamp)])

    def _rises(self, rows: Rows, n: npt.NDArray[np.integer[Any]], values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """`values` over their rows' origins, about to be added to rows holding `n` points; a row
        whose rise does not fit has its origin moved up to the oldest point it will keep (the second
        when it is full: the first is shifted out), and the column widens if one still does not."""
        rises = values - self.origin[rows]
        if self.rises.dtype != np.int32 or not len(rises) or rises.max() <= self.RISE_MAX:
            return rises
        far = rises > self.RISE_MAX
        rf = rows[far]
        keep = np.where(n[far] >= self.limit, 1, 0)
        up = self.rises[rf, keep].astype(np.int64)
        self.rises[rf] -= up[:, None].astype(self.rises.dtype)
        self.origin[rf] += up
        rises = values - self.origin[rows]
        if rises.max() > self.RISE_MAX:
            self.rises = self.rises.astype(np.int64)
        return rises

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """Each point's offset (a copy: to read)."""
        return self.origin[:, None] + self.rises

    @property
    def times(self) -> npt.NDArray[np.float64]:
        """Each point's time (a copy: to read)."""
        return self.clock.at[self.stamps]

    def _compact(self) -> None:
        self.clock.renumber(self.stamps, _held(self.count, self.limit))

    def time_lag(self, rows: Rows, committed: npt.NDArray[np.int64], now: float) -> npt.NDArray[np.float64]:
        """`time_lag(table, committed[i], now)` for the table in each row; NaN where that is None
        (and for a row of -1: no table)."""
        if len(rows) > CHUNK:  # (a dozen temporaries of one element per row)
            return np.concatenate([self.time_lag(rows[i:i + CHUNK], committed[i:i + CHUNK], now)
                                   for i in range(0, len(rows), CHUNK)])
        out = np.full(len(rows), np.nan)
        known = rows >= 0
        r, x = rows[known], committed[known]
        n = self.count[r]
        rises, stamps, at = self.rises, self.stamps, self.clock.at
        origin = self.origin[r]
        y = x - origin  # (the offset as its row's points are kept: a rise over the origin)
        last = np.maximum(n - 1, 0)
        exact = (n > 0) & (rises[r, last] == y)
        # k: the points with this offset or a smaller one (a table's offsets never go down), found by
        # a binary search in every row at once: log2(limit) steps of one element per row.
        flat_rises, base = rises.ravel(), r * self.limit
        lo, hi = np.zeros(len(r), np.int64), n.copy()
        # Most consumers are near the end of the log: an offset at or past the second newest point
        # (and short of the newest) lies in the newest pair, k = n - 1, with no search.
        near = (n >= 2) & (flat_rises[base + np.maximum(n - 2, 0)] <= y) & (flat_rises[base + last] > y)
        lo[near] = n[near] - 1
        hi[near] = lo[near]
        while True:
            active = np.flatnonzero(lo < hi)
            if not len(active):
                break
            mid = (lo[active] + hi[active]) >> 1
            right_of = flat_rises[base[active] + mid] <= y[active]
            lo[active[right_of]] = mid[right_of] + 1
            hi[active[~right_of]] = mid[~right_of]
        k = lo
        between = (k >= 1) & (k <= n - 1)
        left = np.where(between, k - 1, 0)
        right = np.where(between, k, last)
        lo_offset, ro = origin + rises[r, left], origin + rises[r, right]
        lt, rt = at[stamps[r, left]], at[stamps[r, right]]
        flat = ro == lo_offset
        with np.errstate(divide="ignore", invalid="ignore"):
            predicted = np.where(flat, np.where(x < lo_offset, lt, np.inf),
                                 rt - (ro - x) * (rt - lt) / np.where(flat, 1, ro - lo_offset))
        lag = np.maximum(0.0, now - predicted)
        lag[exact] = 0.0
        lag[~exact & (n < 2)] = np.nan
        out[known] = lag
        return out

    def _allocate(self, tp: TopicPartition) -> int:
        if self._free:
            row = self._free.pop()
            self._partition_of[row] = tp
            return row
        row = len(self._partition_of)
        if row == len(self.count):
            self.origin, self.rises, self.stamps, self.count, self.last_seen = _grown(
                self.origin, self.rises, self.stamps, self.count, self.last_seen)
        self._partition_of.append(tp)
        return row

    def _forget(self, at: float) -> None:
        for row in np.flatnonzero(self.last_seen < at - self.forget_after).tolist():
            tp = self._partition_of[row]
            if tp is not None:
                del self.index[tp]
            self._partition_of[row] = None
            self.count[row] = 0
            self.last_seen[row] = np.inf
            self._free.append(row)
        self.generation += 1
        self._keys = []  # (the rows of the last listing may have gone)
