"""Rows of entries as the lag windows and the time tables keep them in `Narrow` columns; pure, no I/O.

A row holds `count` entries, oldest first (left-aligned). An entry's time is kept as the number of
its sample (`Stamps`): every entry one sample records has that sample's time, so a few distinct
times need not cost 8 bytes an entry. Numbers and offsets are kept as their rise over the row's
origin (`over_origin`), so that the rows of partitions and consumers that move little fit in the
narrow type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from consumers_app import narrow_columns
from consumers_app.narrow_columns import INT64_MAX, Narrow, Rows, written

SHIFT_ENTRIES = 1 << 19  # entries shifted at once when full rows take a new one (`append_entry`)
COUNT_TYPE = np.int16  # a row's entries; a window or table holds at most this many


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

    def renumber(self, origin: npt.NDArray[np.int32], stamps: Narrow, count: npt.NDArray[np.integer[Any]]) -> None:
        """Give back the numbers no held entry has (the first `count` of each row, kept as rises
        over the row's `origin` in `stamps`); the others keep their order, and each row's origin
        becomes its first entry's number (a block of rows at a time, as the columns may hold
        millions of entries; a rise never grows, so a row kept in 1 byte stays so)."""
        used = np.zeros(self.n, np.bool_)
        used[0] = True
        for _rows, held, numbers in _numbers(origin, stamps, count):
            used[numbers[held]] = True
        kept = np.flatnonzero(used)
        new_of = np.zeros(self.n, np.int64)
        new_of[kept] = np.arange(len(kept), dtype=np.int64)
        for rows, held, numbers in _numbers(origin, stamps, count):
            renewed = new_of[numbers]
            first = np.where(count[rows] > 0, renewed[:, 0], 0)
            stamps.set(rows, np.where(held, renewed - first[:, None], 0))
            origin[rows] = first
        self.at[:len(kept)] = self.at[kept]
        self.at[len(kept):] = 0.0
        self.n = len(kept)
        self._last = (0.0, 0)


def _numbers(origin: npt.NDArray[np.int32], stamps: Narrow, count: npt.NDArray[np.integer[Any]]) -> Iterator[
        tuple[Rows, npt.NDArray[np.bool_], npt.NDArray[np.int64]]]:
    """Each block of rows, which of their entries are held, and the held entries' sample numbers (0
    for the others)."""
    chunk = narrow_columns.CHUNK
    for i in range(0, len(count), chunk):
        rows = np.arange(i, min(len(count), i + chunk), dtype=np.int64)
        held = written(count[rows], stamps.size)
        yield rows, held, np.where(held, origin[rows][:, None] + stamps.get(rows), 0)


def over_origin(column: Narrow, origin: npt.NDArray[Any], count: npt.NDArray[np.integer[Any]], rows: Rows,
                values: npt.NDArray[np.int64], leaving: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.int64]:
    """`values` as rises over their rows' `origin`, about to be written into those rows (distinct),
    which hold the first `count` entries of `column` (`leaving`: rows whose first entry is about to
    be shifted out, not counted). A row whose rise does not fit as the row is kept has its origin
    moved to the least of its entries and the value (its rises rewritten: `Narrow.set` keeps the
    row wider if they still do not fit)."""
    rises = values - origin[rows]
    if not len(rises):
        return rises
    top = column.limits(rows)
    far = (rises < -top - 1) | (rises > top)
    if not far.any():
        return rises
    rf, vf = rows[far], values[far]
    away = leaving[far] if leaving is not None else None
    # (a block of rows at a time: every table's first point can fall out of its narrow type at the
    # same sample, and a temporary of every row's entries would be the size of the column)
    chunk = narrow_columns.CHUNK
    for i in range(0, len(rf), chunk):
        rb = rf[i:i + chunk]
        held = written(count[rb], column.size)
        if away is not None:
            held[away[i:i + chunk], 0] = False
        current = origin[rb][:, None] + column.get(rb)
        low = np.minimum(np.where(held, current, INT64_MAX).min(axis=1), vf[i:i + chunk])
        column.set(rb, np.where(held, current - low[:, None], 0))
        origin[rb] = low
    return values - origin[rows]


def entry_times(clock: Stamps, origin: npt.NDArray[np.int32], stamps: Narrow, count: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.float64]:
    """Each held entry's time, 0.0 for the others (a copy)."""
    return np.concatenate([clock.at[numbers] for _rows, _held, numbers in _numbers(origin, stamps, count)]
                          or [np.zeros((0, stamps.size))])


def append_entry(rows: Rows, n: npt.NDArray[np.integer[Any]], count: npt.NDArray[np.integer[Any]], size: int,
                 columns: list[tuple[Narrow, npt.NDArray[np.int64]]]) -> None:
    """A new newest entry in each of `rows` (holding `n` entries): `value` into each column, after
    the others where there is room, else with the oldest shifted out."""
    room = n < size
    if room.any():
        rr, ii = rows[room], n[room]
        for column, value in columns:
            column.set(rr, value[room], ii)
        count[rr] = ii + 1
    full = ~room
    if full.any():
        rf = rows[full]
        # (a block of rows at a time: `column[rows, 1:]` is a copy, and a busy cluster's full time
        # tables shift every row each sample)
        block = max(1, SHIFT_ENTRIES // size)
        for column, value in columns:
            vf = value[full]
            for i in range(0, len(rf), block):
                column.shift_in(rf[i:i + block], vf[i:i + block])


def grown(*arrays: npt.NDArray[Any], to: int | None = None) -> list[npt.NDArray[Any]]:
    """The arrays with half as many rows again (1,024 at least), or with `to` rows, the new ones
    empty (0; inf for float rows, which is what a free row's last-seen time holds)."""
    grow = max(1024, len(arrays[0]) // 2) if to is None else max(0, to - len(arrays[0]))
    return [np.concatenate([a, np.full((grow, *a.shape[1:]), np.inf if a.ndim == 1 and a.dtype == np.float64 else 0,
                                       a.dtype)]) for a in arrays]

