"""Time tables as columns (numpy): `timelag.OffsetTimeTable` of every partition, and
`timelag.time_lag` for many (partition, committed offset) pairs at once; pure, no I/O.

A table is one row of a few `Narrow` columns (column_rows.py keeps their entries), so a sample
adds a point to every partition's table, and a pass interpolates every group's time lags, in a
few array operations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from console.gateway.types import TopicPartition
from console.watcher.numbers import PARTITION_NUMBERS
from consumers_app import narrow_columns
from consumers_app.column_rows import COUNT_TYPE, Stamps, append_entry, entry_times, grown, over_origin
from consumers_app.narrow_columns import Narrow, Rows
from consumers_app.timelag import DEFAULT_POINTS


class TimeColumns:
    """`timelag.OffsetTimeTable` of every partition as columns, and `timelag.time_lag` for many
    (partition, committed offset) pairs at once; the reference tables stay the specification
    (tests/unit/test_lagcolumns.py). A partition's row is handed out the first time it is added; a
    partition no sample has listed for `forget_after` seconds (a deleted topic, mostly) loses its
    table and its row goes to the next new partition. `generation` counts those hand-backs: rows
    remembered by a caller are good while it is unchanged.

    A point's offset is kept as its rise over its row's `origin` (at or below the row's oldest
    point: a table's offsets never go down), in 2 bytes for the tables where all fit (`Narrow`: the
    tables of partitions that move little), else in 4 or 8. A rise that does not fit as its row is
    kept moves the row's origin up to the oldest point it keeps; a table that spans more than that
    even so is kept wider."""

    def __init__(self, limit: int = DEFAULT_POINTS, capacity: int = 1024, forget_after: float = 600.0) -> None:
        if not 2 <= limit <= np.iinfo(COUNT_TYPE).max:
            raise ValueError(f"a table needs room for 2 to {np.iinfo(COUNT_TYPE).max} points, got {limit}")
        self.limit = limit
        self.forget_after = forget_after
        self.origin = np.zeros(capacity, np.int64)
        self.rises = Narrow(capacity, limit)  # offset - origin
        # Each point's time, by number (`clock`), as its rise over the row's stamp origin, in 2 bytes
        # (`Narrow`; 4 for a table whose points span more than 32,767 numbers). Not 1 as the
        # windows': an idle partition's table keeps the first point of its flat run, and every
        # table of a console started at once passes 127 samples from its first at the same sample.
        self.stamps = Narrow(capacity, limit, np.int16, np.int32)
        self.stamp_origin = np.zeros(capacity, np.int32)
        self.clock = Stamps()
        self.count = np.zeros(capacity, COUNT_TYPE)  # (points held: at most `limit`)
        self.last_seen = np.full(capacity, np.inf)  # when each row's partition was last added (inf: free)
        # Each partition's row, by topic and partition number (-1: none): 4 bytes a partition, where
        # a dict keyed by (topic, partition) costs a tuple and an int object a partition.
        # Numbers Kafka never gives (below 0, or PARTITION_NUMBERS and above) are kept apart.
        self._row_of: dict[str, npt.NDArray[np.int32]] = {}
        self._other_rows: dict[TopicPartition, int] = {}
        self.generation = 0
        self._partition_of: list[TopicPartition | None] = []  # by row
        self._free: list[int] = []
        self._keys: list[TopicPartition] = []
        self._rows: Rows = np.zeros(0, np.int64)

    def row(self, tp: TopicPartition) -> int | None:
        found = self._row_of.get(tp[0])
        number = tp[1]
        if found is not None and 0 <= number < len(found):
            row = int(found[number])
            return row if row >= 0 else None
        return self._other_rows.get(tp) if self._other_rows else None

    def rows(self, tps: Iterable[TopicPartition]) -> list[int | None]:
        row = self.row
        return [row(tp) for tp in tps]

    def _rows_in(self, name: str, numbers: Rows) -> Rows:
        """The rows of a topic's partitions numbered `numbers` (-1: none)."""
        out = np.full(len(numbers), -1, np.int64)
        found = self._row_of.get(name)
        if found is not None:
            inside = (numbers >= 0) & (numbers < len(found))
            out[inside] = found[numbers[inside]]
        if self._other_rows:
            for i in np.flatnonzero((numbers < 0) | (numbers >= PARTITION_NUMBERS)).tolist():
                out[i] = self._other_rows.get((name, int(numbers[i])), -1)
        return out

    def _place(self, name: str, numbers: Rows, rows: Rows) -> None:
        """The rows of a topic's partitions numbered `numbers` (-1: none)."""
        odd = (numbers < 0) | (numbers >= PARTITION_NUMBERS)
        for i in np.flatnonzero(odd).tolist():
            if rows[i] < 0:
                self._other_rows.pop((name, int(numbers[i])), None)
            else:
                self._other_rows[(name, int(numbers[i]))] = int(rows[i])
        numbers, rows = numbers[~odd], rows[~odd]
        found = self._row_of.get(name)
        top = int(numbers[rows >= 0].max()) + 1 if (rows >= 0).any() else 0
        if found is None or top > len(found):
            if not top:
                return
            grown = np.full(max(top, len(found) + 8 if found is not None else 0), -1, np.int32)  # (8 spare at most)
            if found is not None:
                grown[:len(found)] = found
            found = self._row_of[name] = grown
        inside = numbers < len(found)
        found[numbers[inside]] = rows[inside]
        if not (found >= 0).any():
            del self._row_of[name]  # (a deleted topic's)

    def add_all(self, ends: Mapping[TopicPartition, int], at: float) -> None:
        """`OffsetTimeTable.add(offset, at)` on the table of each partition in `ends`."""
        if ends:
            self.add_aligned(list(ends), np.fromiter(ends.values(), np.int64, len(ends)), at)

    def add_aligned(self, keys: list[TopicPartition], values: npt.NDArray[np.int64], at: float) -> None:
        """`add_all` of the partitions `keys` and their offsets `values`, in the same order (a
        sampling pass's answer as it keeps it, with no dict: console.watcher.pass_offsets.PassOffsets).
        The same list object as last time is known to give the same rows at once."""
        if not keys:
            return
        if keys is not self._keys and keys != self._keys:  # (the same partitions in the same order: the rows of last time)
            rows = np.full(len(keys), -1, np.int64)
            for name, (places, numbers) in _by_topic(keys).items():
                rows[places] = self._rows_in(name, numbers)
            new = np.flatnonzero(rows < 0).tolist()
            needed = len(self._partition_of) + len(new) - len(self._free)
            if needed > len(self.count):  # (room for them all at once, not half again as much)
                self._grow(needed + max(1024, needed // 50))
            for i in new:
                rows[i] = self._allocate(keys[i])
            # (the new rows once: made again for each topic, the list of every new partition would
            # cost topics x partitions, a first pass's whole time on a cluster of many topics)
            new_rows = rows[np.asarray(new, np.int64)]
            for name, (places, numbers) in _by_topic([keys[i] for i in new]).items():
                self._place(name, numbers, new_rows[places])
            self._keys, self._rows = keys, rows
        rows = self._rows
        self.last_seen[rows] = at
        if (self.last_seen < at - self.forget_after).any():
            self._forget(at)
        stamp = self.clock.of(at, self._compact)
        # (a block of rows at a time: every partition's table at once would make each of a dozen
        # temporaries a row per partition, the sampling process's largest step of a pass)
        chunk = narrow_columns.CHUNK
        for i in range(0, len(rows), chunk):
            self._add_rows(rows[i:i + chunk], values[i:i + chunk], at, stamp)
        self.rises.settle(self.count, self.origin)
        self.stamps.settle(self.count, self.stamp_origin)

    def _add_rows(self, rows: Rows, values: npt.NDArray[np.int64], at: float, stamp: int) -> None:
        n = self.count[rows]
        has = n > 0
        last = np.maximum(n - 1, 0)
        newest_at = self.clock.at[self.stamp_origin[rows] + self.stamps.get(rows, last)]
        origin = self.origin[rows]
        newest = origin + self.rises.get(rows, last)
        # Rejected: not newer than the newest point, or an offset below it.
        ok = ~has | ((at > newest_at) & (values >= newest))
        # A flat run keeps only its first and last point: the last moves forward in time.
        update = ok & (n > 1) & (newest == values)
        if update.any():
            update[update] = origin[update] + self.rises.get(rows[update], np.maximum(n[update] - 2, 0)) == values[update]
        if update.any():
            ru = rows[update]
            self.stamps.set(ru, over_origin(self.stamps, self.stamp_origin, self.count, ru, np.full(len(ru), stamp, np.int64)),
                            last[update])
        append = ok & ~update
        if append.any():
            ra, na, va = rows[append], n[append], values[append]
            fresh = na == 0
            self.origin[ra[fresh]] = va[fresh]  # (an empty table's first point is its origin)
            self.stamp_origin[ra[fresh]] = stamp
            full = na >= self.limit
            rises = over_origin(self.rises, self.origin, self.count, ra, va, full)  # (first: it may move origins)
            stamps = over_origin(self.stamps, self.stamp_origin, self.count, ra, np.full(len(ra), stamp, np.int64), full)
            append_entry(ra, na, self.count, self.limit, [(self.rises, rises), (self.stamps, stamps)])

    def _grow(self, to: int | None = None) -> None:
        self.origin, self.stamp_origin, self.count, self.last_seen = grown(self.origin, self.stamp_origin, self.count,
                                                                            self.last_seen, to=to)
        self.rises.grow(len(self.count))
        self.stamps.grow(len(self.count))

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """Each point's offset (a copy: to read)."""
        return self.origin[:, None] + self.rises.get(np.arange(len(self.count)))

    @property
    def times(self) -> npt.NDArray[np.float64]:
        """Each point's time (a copy: to read; 0.0 where no point is held)."""
        return entry_times(self.clock, self.stamp_origin, self.stamps, self.count)

    def _compact(self) -> None:
        self.clock.renumber(self.stamp_origin, self.stamps, self.count)

    def time_lag(self, rows: Rows, committed: npt.NDArray[np.int64], now: float) -> npt.NDArray[np.float64]:
        """`time_lag(table, committed[i], now)` for the table in each row; NaN where that is None
        (and for a row of -1: no table)."""
        chunk = narrow_columns.CHUNK
        if len(rows) > chunk:  # (a dozen temporaries of one element per row)
            return np.concatenate([self.time_lag(rows[i:i + chunk], committed[i:i + chunk], now)
                                   for i in range(0, len(rows), chunk)])
        out = np.full(len(rows), np.nan)
        known = rows >= 0
        r, x = rows[known], committed[known]
        n = self.count[r]
        rises, stamps, at = self.rises, self.stamps, self.clock.at
        stamp_origin, found_stamps = self.stamp_origin[r], stamps.lookup(r)
        origin = self.origin[r]
        y = x - origin  # (the offset as its row's points are kept: a rise over the origin)
        last = np.maximum(n - 1, 0)
        found = rises.lookup(r)  # (once for the rows' several reads)
        newest = rises.get(r, last, found)
        exact = (n > 0) & (newest == y)
        # k: the points with this offset or a smaller one (a table's offsets never go down), found by
        # a binary search in every row at once: log2(limit) steps of one element per row.
        lo, hi = np.zeros(len(r), np.int64), n.copy()
        # Most consumers are near the end of the log: an offset at or past the second newest point
        # (and short of the newest) lies in the newest pair, k = n - 1, with no search.
        near = (n >= 2) & (rises.get(r, np.maximum(n - 2, 0), found) <= y) & (newest > y)
        lo[near] = n[near] - 1
        hi[near] = lo[near]
        while True:
            active = np.flatnonzero(lo < hi)
            if not len(active):
                break
            mid = (lo[active] + hi[active]) >> 1
            right_of = rises.get(r[active], mid, None if found is None else (found[0][active], found[1][active])) <= y[active]
            lo[active[right_of]] = mid[right_of] + 1
            hi[active[~right_of]] = mid[~right_of]
        k = lo
        between = (k >= 1) & (k <= n - 1)
        left = np.where(between, k - 1, 0)
        right = np.where(between, k, last)
        lo_offset, ro = origin + rises.get(r, left, found), origin + rises.get(r, right, found)
        lt, rt = at[stamp_origin + stamps.get(r, left, found_stamps)], at[stamp_origin + stamps.get(r, right, found_stamps)]
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
        else:
            row = len(self._partition_of)
            if row == len(self.count):
                self._grow()
            self._partition_of.append(tp)
        return row

    def _forget(self, at: float) -> None:
        for row in np.flatnonzero(self.last_seen < at - self.forget_after).tolist():
            tp = self._partition_of[row]
            if tp is not None:
                self._place(tp[0], np.array([tp[1]], np.int64), np.array([-1], np.int64))
            self._partition_of[row] = None
            self.count[row] = 0
            self.last_seen[row] = np.inf
            self._free.append(row)
        self.generation += 1
        self._keys = []  # (the rows of the last listing may have gone)


def _by_topic(tps: Iterable[TopicPartition]) -> dict[str, tuple[Rows, Rows]]:
    """Of each topic, where its partitions are in `tps` and their numbers."""
    places: dict[str, tuple[list[int], list[int]]] = {}
    for i, (name, number) in enumerate(tps):
        found = places.get(name)
        if found is None:
            found = places[name] = ([], [])
        found[0].append(i)
        found[1].append(number)
    return {name: (np.array(at, np.int64), np.array(numbers, np.int64)) for name, (at, numbers) in places.items()}

