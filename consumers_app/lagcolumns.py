"""Lag windows as columns (numpy): what `lagstatus.PartitionWindow` and `evaluate_partition` do, for
many windows at once; pure, no I/O.

At 300,000 partitions and 50,000 groups the watcher keeps about 1.5 million windows. As Python
objects (a window, two lists, ten `Commit`s) they took about 3 KB each, 4 GB in all, and recording
and judging the 900,000 that change between two samples took seconds of one core. Here a window is
one row of three (rows x size) arrays, 100 bytes at the default size, and a sample records and
judges every changed window in a few array operations. An entry's time is kept as the number of its
sample (`Stamps`): every entry a sample records has that sample's time, so 8 bytes per entry were
spent on a few distinct values (90 MB of windows and 108 MB of time tables at that scale). The
number is kept as its rise over its row's `stamp_origin` (`Narrow`): a window's in 1 byte while its
entries are within 127 samples of each other (a consumer's commits are seen one a sample), else in 2
(8 MB less at that scale than 2 bytes for all); a table's in 2, as an idle partition's table keeps
the first point of its flat run for hours. Its end offset is kept as its distance from the entry's offset, and its offset as its rise
over its row's origin, each in 2 bytes where all fit (`Narrow`).

The rows of a group are a block handed out once per set of partitions (`rows_of`): the group's
(topic, partition) tuple is the key, so no per-partition key is kept. Entries are left-aligned: a
row holds `count` entries, oldest first; an entry's lag is not stored (it is always
`max(0, end - offset)` of the same entry, as `PartitionWindow.record` computes it).

`PartitionWindow`/`evaluate_partition` stay the reference: a property test replays random
sequences through both and compares every window and status (tests/unit/test_lagcolumns.py).
Only a full window is judged (`DEFAULT_MIN_FULLNESS` = 1.0, as the watcher uses it).
"""

from __future__ import annotations

import ctypes
import mmap
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from console.watcher.numbers import PARTITION_NUMBERS
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
# arrays, and 1.5 million windows at once made each of them 120 MB. At 65,536 rows a batch's judging
# held 33 MB of them and a settle 26 MB, where the sampling process peaked (300,000 partitions,
# 50,000 groups, each pass's high-water mark phase by phase).
CHUNK = 1 << 14
SHIFT_ENTRIES = 1 << 19  # entries shifted at once when full rows take a new one (`_append`)
SETTLE_ROWS = 1 << 14  # wide rows a `Narrow.settle` looks at, at least (tests make it small)
TopicPartition = tuple[str, int]
_INT_MIN = np.iinfo(np.int64).min
_COUNT = np.int16  # a row's entries; a window or table holds at most this many


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
        becomes its first entry's number (a block of rows at a time: the columns hold millions of
        entries; a rise never grows, so a row kept in 1 byte stays so)."""
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
    for i in range(0, len(count), CHUNK):
        rows = np.arange(i, min(len(count), i + CHUNK), dtype=np.int64)
        held = _held(count[rows], stamps.size)
        yield rows, held, np.where(held, origin[rows][:, None] + stamps.get(rows), 0)


def _over_origin(column: Narrow, origin: npt.NDArray[Any], count: npt.NDArray[np.integer[Any]], rows: Rows,
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
    # (a block of rows at a time: every table's first point can fall out of 1 byte at the same
    # sample, and 300,000 rows of 60 entries at once made each temporary here 144 MB)
    for i in range(0, len(rf), CHUNK):
        rb = rf[i:i + CHUNK]
        held = _held(count[rb], column.size)
        if away is not None:
            held[away[i:i + CHUNK], 0] = False
        current = origin[rb][:, None] + column.get(rb)
        low = np.minimum(np.where(held, current, _INT64_MAX).min(axis=1), vf[i:i + CHUNK])
        column.set(rb, np.where(held, current - low[:, None], 0))
        origin[rb] = low
    return values - origin[rows]


_PAGE = mmap.PAGESIZE
_MADV_DONTNEED = 4  # (Linux)
_libc: Any = None


def _give_back(array: npt.NDArray[Any], done: int, upto: int) -> int:
    """The memory pages wholly within bytes `done` to `upto` of `array` (C-contiguous, its own
    memory, never read again: a column being replaced) given back to the system (madvise
    MADV_DONTNEED; where that is not available, nothing); returns where the next call starts
    (`done`, moved to the last page boundary given back)."""
    global _libc
    if upto <= done or not array.flags.c_contiguous or array.base is not None:
        return done
    base = array.ctypes.data
    low = -(-(base + done) // _PAGE) * _PAGE
    high = (base + upto) // _PAGE * _PAGE
    if high <= low:
        return done
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None)
        _libc.madvise(ctypes.c_void_p(low), ctypes.c_size_t(high - low), _MADV_DONTNEED)
    except (OSError, AttributeError):
        return upto
    return high - base


def _inserted(array: npt.NDArray[Any], places: npt.NDArray[np.int64], values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """`np.insert(array, places, values, axis=0)` (`places` sorted), made a block of CHUNK rows at a
    time with the pages of `array` already copied given back as it goes (`_give_back`): a side
    table copied whole at each spill held it twice (a busy cluster's windows spill a few thousand
    rows a pass into side tables of tens of MB). `array` is not read afterwards."""
    n, k = len(array), len(places)
    out = np.empty((n + k, *array.shape[1:]), array.dtype)
    done = 0
    row_bytes = array.strides[0] if array.ndim and n else 0
    for i in range(0, n + 1, CHUNK):  # (n + 1: the values put after the last row, in the last block)
        j = min(n, i + CHUNK)
        last = j + 1 if j == n else j
        m0, m1 = np.searchsorted(places, [i, last]).tolist()  # (the values put before rows i to j)
        into = np.arange(m0, m1) + places[m0:m1]
        out[into] = values[m0:m1]
        if j > i:
            old = np.arange(i, j)
            out[old + np.searchsorted(places, old, side="right")] = array[i:j]
            done = _give_back(array, done, j * row_bytes)
        if j == n:
            break
    return out


def _held(count: npt.NDArray[np.integer[Any]], size: int) -> npt.NDArray[np.bool_]:
    """Which entries of each row are written (the first `count` of it)."""
    return np.arange(size)[None, :] < count[:, None]


_INT64_MAX = int(np.iinfo(np.int64).max)


class Narrow:
    """A (rows x size) column of integers kept in 2 bytes an entry for every row whose entries all
    fit, and whole in a side table of 4 bytes an entry (8 from the first entry that does not fit in
    4, for good) for the rows that do not: their rows in order (`wide_rows`), each row's entries in
    `wide`. (Those are the offsets' sizes, the default; a window's times are kept in 1 byte and 2
    in the side table, 4 and 8 after: the `narrow` and `wide` types it is made with.) A busy
    partition's offsets or a lagging consumer's lags spill its row; most rows of a large cluster
    (idle partitions, consumers at the end of their logs) never do, and the windows and tables then
    take half the room (about 90 MB less at 300,000 partitions and 1.5 million windows). When more
    than a fifth of the rows are wide the column is kept plain (every row in `wide`, indexed by row:
    `narrow` is None), so a busy cluster's columns take no more than their wide size an entry as
    before; it narrows again once at most a tenth would be wide (`settle`). Whole rows are moved a
    block at a time (CHUNK rows): a temporary of every row's entries was 144 MB at 300,000 tables.

    Values go in and come out as int64s: `get` and `set` take the rows (distinct for `set`) and
    either no columns (whole rows), one column for all, or one per row."""

    NARROW_MAX = int(np.iinfo(np.int16).max)  # (tests make both small, to spill and widen often)
    WIDE_MAX = int(np.iinfo(np.int32).max)  # (of 4-byte wide rows; 2-byte ones keep at most this and 32,767)
    # A column is kept plain once more than 1/PLAIN_SHARE of its rows would be wide, and narrows again
    # when at most 1/NARROW_SHARE would stay so. A wide row costs its entries in the wide type and 8
    # bytes of index, and every spill copies the wide table (`_spill`): at half the rows, as it was,
    # the windows' offsets held twice their plain size before they went plain, and the sampling
    # process peaked there (300,000 partitions, 50,000 groups: 40 MB above the pass's start, from
    # the 10th pass to the 23rd). At a fifth, narrow and wide and a spill's copy are about the plain size.
    PLAIN_SHARE = 5
    NARROW_SHARE = 10
    SETTLE_EVERY = 16  # a plain column's check whether it would narrow again: every so many `settle`s
    SETTLE_SHARE = 8  # a `settle` looks at this share of the wide rows (the next ones each time), at least SETTLE_ROWS

    def __init__(self, capacity: int, size: int, narrow: type[np.signedinteger[Any]] = np.int16,
                 wide: type[np.signedinteger[Any]] = np.int32) -> None:
        self.size = size
        self._narrow_type = np.dtype(narrow)
        self.narrow: npt.NDArray[np.signedinteger[Any]] | None = np.zeros((capacity, size), narrow)
        self.wide_rows: Rows = np.zeros(0, np.int64)  # (sorted)
        # Whether each row is wide (a byte a row): only those are looked up in `wide_rows`.
        self.is_wide: npt.NDArray[np.bool_] | None = np.zeros(capacity, np.bool_)
        self.wide: npt.NDArray[np.signedinteger[Any]] = np.zeros((0, size), wide)
        self._settles = 0
        self._settle_from = 0  # (where the next `settle` starts in `wide_rows`)

    def __len__(self) -> int:
        return len(self.wide) if self.narrow is None else len(self.narrow)

    @property
    def nbytes(self) -> int:
        return self.wide.nbytes + self.wide_rows.nbytes + (0 if self.narrow is None or self.is_wide is None
                                                           else self.narrow.nbytes + self.is_wide.nbytes)

    @property
    def dtype(self) -> np.dtype[Any]:
        """What a wide row's entries are kept in (as made, or wider for good)."""
        return self.wide.dtype

    @property
    def top(self) -> int:
        """The largest value a narrow row keeps (the least is minus this, less one)."""
        return min(self.NARROW_MAX, int(np.iinfo(self._narrow_type).max))

    def _wide_top(self) -> int:
        if self.wide.dtype == np.int64:
            return _INT64_MAX
        return min(self.WIDE_MAX, int(np.iinfo(self.wide.dtype).max))

    def _widen(self, low: int, high: int) -> None:
        """The wide rows' entries made wide enough for `low` and `high` (for good)."""
        while low < -self._wide_top() - 1 or high > self._wide_top():
            self.wide = self.wide.astype(np.int32 if self.wide.dtype == np.int16 else np.int64)

    def spilled(self) -> int:
        """The rows kept wide (all of them in a plain column)."""
        return len(self.wide) if self.narrow is None else len(self.wide_rows)

    def grow(self, to: int) -> None:
        """Room for `to` rows, the new ones 0."""
        if self.narrow is None:
            self.wide = np.concatenate([self.wide, np.zeros((to - len(self.wide), self.size), self.wide.dtype)])
        else:
            assert self.is_wide is not None
            self.is_wide = np.concatenate([self.is_wide, np.zeros(to - len(self.narrow), np.bool_)])
            self.narrow = np.concatenate([self.narrow, np.zeros((to - len(self.narrow), self.size), self._narrow_type)])

    def lookup(self, rows: Rows) -> tuple[Rows, npt.NDArray[np.bool_]] | None:
        """Where each of `rows` is in `wide`, and whether it is there (None: no row is): what `get`
        takes as `found` to read those rows (or a part of them, the lookup cut as they are) again
        while nothing is written."""
        if not len(self.wide_rows) or self.is_wide is None:
            return None
        hit = self.is_wide[rows]
        slots = np.zeros(len(rows), np.int64)
        slots[hit] = np.searchsorted(self.wide_rows, rows[hit])
        return slots, hit

    def limits(self, rows: Rows) -> npt.NDArray[np.int64] | int:
        """The largest value each row keeps as it is kept now (the least is minus this, less one)."""
        wide_top, top = self._wide_top(), self.top
        if self.narrow is None:
            return wide_top
        found = self.lookup(rows)
        return top if found is None else np.where(found[1], wide_top, top)

    def get(self, rows: Rows, cols: Any = None, found: Any = False) -> npt.NDArray[np.int64]:
        if self.narrow is None:
            return (self.wide[rows] if cols is None else self.wide[rows, cols]).astype(np.int64)
        out = (self.narrow[rows] if cols is None else self.narrow[rows, cols]).astype(np.int64)
        if found is False:
            found = self.lookup(rows)
        if found is not None and found[1].any():
            slots, hit = found
            if cols is None:
                out[hit] = self.wide[slots[hit]]
            else:
                out[hit] = self.wide[slots[hit], cols if np.ndim(cols) == 0 else np.asarray(cols)[hit]]
        return out

    def set(self, rows: Rows, values: Any, cols: Any = None) -> None:
        """Each row's values (whole rows, or at `cols`); rows distinct."""
        values = np.broadcast_to(np.asarray(values, np.int64), (len(rows), self.size) if cols is None else (len(rows),))
        if not len(rows):
            return
        low, high = (values.min(axis=1), values.max(axis=1)) if cols is None else (values, values)
        self._widen(int(low.min()), int(high.max()))
        if self.narrow is None:
            if cols is None:
                self.wide[rows] = values
            else:
                self.wide[rows, cols] = values
            return
        found = self.lookup(rows)
        top = self.top
        spill = (low < -top - 1) | (high > top)
        if found is not None:
            spill &= ~found[1]
        if spill.any():
            self._spill(rows[spill])
            if self.narrow is None:
                self.set(rows, values, cols)
                return
            found = self.lookup(rows)
        if found is None:
            if cols is None:
                self.narrow[rows] = values
            else:
                self.narrow[rows, cols] = values
            return
        slots, hit = found
        held = ~hit
        if cols is None:
            self.narrow[rows[held]] = values[held]
            self.wide[slots[hit]] = values[hit]
        elif np.ndim(cols) == 0:
            self.narrow[rows[held], cols] = values[held]
            self.wide[slots[hit], cols] = values[hit]
        else:
            cols = np.asarray(cols)
            self.narrow[rows[held], cols[held]] = values[held]
            self.wide[slots[hit], cols[hit]] = values[hit]

    def shift_in(self, rows: Rows, values: Any) -> None:
        """Each row's entries moved one place to the front (the first let go), `values` put last;
        rows distinct. (In place where the row and its value fit in 2 bytes: no copy of the rows.)"""
        values = np.broadcast_to(np.asarray(values, np.int64), (len(rows),))
        if self.narrow is None:
            self.wide[rows, :-1] = self.wide[rows, 1:]
            self.set(rows, values, self.size - 1)
            return
        top = self.top
        easy = (values >= -top - 1) & (values <= top)
        found = self.lookup(rows)
        if found is not None:
            easy &= ~found[1]
        within = rows[easy]
        self.narrow[within, :-1] = self.narrow[within, 1:]
        self.narrow[within, -1] = values[easy]
        if not easy.all():
            rest = rows[~easy]
            shifted = self.get(rest)
            shifted[:, :-1] = shifted[:, 1:]
            shifted[:, -1] = values[~easy]
            self.set(rest, shifted)

    def _spill(self, rows: Rows) -> None:
        """`rows` (none of them wide yet) kept wide from now on, their entries as they are."""
        assert self.narrow is not None
        every = np.concatenate([self.wide_rows, rows])
        if len(every) > len(self.narrow) // self.PLAIN_SHARE:  # many rows wide: plain
            # A block of rows at a time, the narrow rows and the wide ones' entries copied in, and
            # the pages of both already copied given back at once: the plain column is twice the
            # narrow one, and made next to the narrow one and the side table whole it held 53 MB
            # at once (the windows' offsets at 1.5 million rows), the sampling process's peak.
            narrow, side, side_rows = self.narrow, self.wide, self.wide_rows
            wide = np.empty(narrow.shape, side.dtype)
            narrow_done = side_done = 0
            for i in range(0, len(wide), CHUNK):
                end = min(len(wide), i + CHUNK)
                wide[i:end] = narrow[i:end]
                first, last = np.searchsorted(side_rows, [i, end]).tolist()
                wide[side_rows[first:last]] = side[first:last]
                narrow_done = _give_back(narrow, narrow_done, end * narrow.strides[0])
                side_done = _give_back(side, side_done, last * side.strides[0] if side.ndim == 2 and len(side) else 0)
            self.wide, self.narrow, self.wide_rows, self.is_wide = wide, None, np.zeros(0, np.int64), None
            return
        assert self.is_wide is not None
        self.is_wide[rows] = True
        rows = np.sort(rows)
        # (put in their places in one new table: a busy cluster's rows spill a few thousand at a
        # time, and a table concatenated then reordered was two new copies of it each time)
        places = np.searchsorted(self.wide_rows, rows)
        self.wide = _inserted(self.wide, places, self.narrow[rows].astype(self.wide.dtype))
        self.wide_rows = _inserted(self.wide_rows, places, rows)

    def settle(self, count: npt.NDArray[np.integer[Any]], origin: npt.NDArray[Any] | None = None) -> None:
        """The wide rows whose held entries (the first `count` of each row) all fit go back to 2
        bytes, the others' entries as they are; with `origin` (the values being rises over it), a
        row is first brought down to its least held value, its origin moved up as much. A plain
        column narrows again (every SETTLE_EVERY calls) when at most a tenth of its rows would
        stay wide."""
        if self.narrow is None:
            self._settles += 1
            if self._settles % self.SETTLE_EVERY == 0:
                self._narrow_again(count, origin)
            return
        k = len(self.wide_rows)
        if not k:
            return
        # (a share of the wide rows at a time, the next ones each call: a busy cluster's wide rows
        # stay wide, and looking at all of them every pass cost as much as recording them)
        start = self._settle_from if self._settle_from < k else 0
        end = min(k, start + max(SETTLE_ROWS, -(-k // self.SETTLE_SHARE)))
        self._settle_from = end
        rows = self.wide_rows[start:end]
        fits = np.zeros(len(rows), np.bool_)
        for i in range(0, len(rows), CHUNK):  # (a block at a time: each temporary is 8 bytes an entry)
            rb = rows[i:i + CHUNK]
            back, low, ok = self._fitting(self.wide[start + i:start + i + len(rb)], count[rb], origin is not None)
            fits[i:i + CHUNK] = ok
            if origin is not None:
                origin[rb[ok]] += low[ok]
            self.narrow[rb[ok]] = back[ok]
        if not fits.any():
            return
        gone = rows[fits]
        assert self.is_wide is not None
        self.is_wide[gone] = False
        keep = np.ones(k, np.bool_)
        keep[start:end] = ~fits
        self.wide_rows, self.wide = self.wide_rows[keep], self.wide[keep]
        self._settle_from = start + int((~fits).sum())

    def _fitting(self, wide: npt.NDArray[Any], count: npt.NDArray[np.integer[Any]], rebase: bool) -> tuple[
            npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """Of wide rows holding `count` entries: their held entries (each row brought down to its
        least when `rebase`, 0 after the held ones), how far down, and which rows then fit in 2 bytes."""
        held = _held(count, self.size)
        values = wide.astype(np.int64)
        low: npt.NDArray[np.int64] = np.where(held, values, _INT64_MAX).min(axis=1) if rebase else np.zeros(len(values), np.int64)
        low[count == 0] = 0
        values = np.where(held, values - low[:, None], 0)
        top = self.top
        fits = np.asarray(((values >= -top - 1) & (values <= top)).all(axis=1))
        return values, low, fits

    def _narrow_again(self, count: npt.NDArray[np.integer[Any]], origin: npt.NDArray[Any] | None) -> None:
        n = len(self.wide)
        fits = np.zeros(n, np.bool_)
        for i in range(0, n, CHUNK):
            fits[i:i + CHUNK] = self._fitting(self.wide[i:i + CHUNK], count[i:i + CHUNK], origin is not None)[2]
        if n - int(fits.sum()) > n // self.NARROW_SHARE:
            return
        narrow = np.zeros((n, self.size), self._narrow_type)
        for i in range(0, n, CHUNK):
            values, low, ok = self._fitting(self.wide[i:i + CHUNK], count[i:i + CHUNK], origin is not None)
            block = narrow[i:i + CHUNK]
            block[ok] = values[ok]
            if origin is not None:
                origin[i:i + CHUNK][ok] += low[ok]
        self.wide_rows = np.flatnonzero(~fits).astype(np.int64)
        self.wide, self.narrow, self.is_wide = self.wide[self.wide_rows], narrow, ~fits


class WindowColumns:
    """Each entry's offset is kept as its rise over its row's `origin`, in 1 byte for the rows where
    all fit, and its end offset as its distance from the offset, in 2 (`Narrow`): a row's offsets
    (ten commits of one consumer) span far less than 4 bytes count, and those of a consumer near the
    end of its log less than 1. A rise that does not fit as its row is kept (a reset far back, or a
    consumer far ahead) moves the row's origin to the least of its offsets; a row whose offsets
    span more than that even so is kept wider (`Narrow.set`). (The lags in 1 byte too were 5.6 MB
    more, not less: half the rows spilled.)"""

    def __init__(self, size: int = DEFAULT_WINDOW, min_distance: float = DEFAULT_MIN_DISTANCE, capacity: int = 1024) -> None:
        if not 2 <= size <= np.iinfo(_COUNT).max:
            raise ValueError(f"column windows need a size of 2 to {np.iinfo(_COUNT).max}, got {size}")
        self.size = size
        self.min_distance = min_distance
        self.origin = np.zeros(capacity, np.int64)  # set by a row's first entry, moved by `_over_origin`
        # offset - origin: 1 byte where a row's fit (89% of the rows at 300,000 partitions and 50,000
        # groups, bench/simulate.py: a consumer's ten commits near each other), 2 in the side table
        self.rises = Narrow(capacity, size, np.int8, np.int16)
        self.gaps = Narrow(capacity, size)  # each entry's end offset as its distance from the entry's offset (end - offset)
        # Each entry's time, by number (`clock`, `_stamp`), as its rise over the row's stamp origin
        # (a number at or below its entries'): 1 byte where the row's fit (`Narrow`), 2 else.
        self.stamps = Narrow(capacity, size, np.int8, np.int16)
        self.stamp_origin = np.zeros(capacity, np.int32)
        self.clock = Stamps()
        self.count = np.zeros(capacity, _COUNT)  # (entries held: at most `size`)
        # The end offset at each row's latest observation (PartitionWindow.latest_end), as its
        # distance from the row's last offset: 2 bytes where it fits, as the entries' (9 MB less).
        self.latest_gap = Narrow(capacity, 1)
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
            self._grow(windows + max(1024, windows // 50))

    def _grow(self, to: int | None = None) -> None:
        self.origin, self.stamp_origin, self.count = _grown(self.origin, self.stamp_origin, self.count, to=to)
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
        for i in range(0, len(rows), CHUNK):
            self._record(rows[i:i + CHUNK], committed[i:i + CHUNK], end[i:i + CHUNK], at, stamp, committing[i:i + CHUNK])

    @property
    def times(self) -> npt.NDArray[np.float64]:
        """Each entry's time (a copy: to read; 0.0 where no entry is held)."""
        return _times(self.clock, self.stamp_origin, self.stamps, self.count)

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
            self.rises.set(r, _over_origin(self.rises, self.origin, self.count, r, committed[replace]), i)  # (first: it may move origins)
            self.gaps.set(r, end[replace] - committed[replace], i)
        append = kept & ~noted & ~replace
        if not append.any():
            return
        gaps = end[append] - committed[append]
        ra, na, ca = rows[append], n[append], committed[append]
        fresh = na == 0
        self.origin[ra[fresh]] = ca[fresh]  # (an empty window's first entry is its origin)
        self.stamp_origin[ra[fresh]] = stamp
        rises = _over_origin(self.rises, self.origin, self.count, ra, ca)  # (first: it may move origins)
        stamps = _over_origin(self.stamps, self.stamp_origin, self.count, ra, np.full(len(ra), stamp, np.int64), na >= self.size)
        _append(ra, na, self.count, self.size, [(self.rises, rises), (self.gaps, gaps), (self.stamps, stamps)])

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
        if len(rows) > CHUNK:
            return np.concatenate([self.status(rows[i:i + CHUNK], now, allowed_lag) for i in range(0, len(rows), CHUNK)])
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


def _times(clock: Stamps, origin: npt.NDArray[np.int32], stamps: Narrow, count: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.float64]:
    """Each held entry's time, 0.0 for the others (a copy)."""
    return np.concatenate([clock.at[numbers] for _rows, _held, numbers in _numbers(origin, stamps, count)]
                          or [np.zeros((0, stamps.size))])


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


def _append(rows: Rows, n: npt.NDArray[np.integer[Any]], count: npt.NDArray[np.integer[Any]], size: int,
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
        # tables shift every row each sample, 71 MB at once at 300,000 tables of 60 points)
        block = max(1, SHIFT_ENTRIES // size)
        for column, value in columns:
            vf = value[full]
            for i in range(0, len(rf), block):
                column.shift_in(rf[i:i + block], vf[i:i + block])


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
    point: a table's offsets never go down), in 2 bytes for the tables where all fit (`Narrow`: the
    tables of partitions that move little), else in 4 or 8. A rise that does not fit as its row is
    kept moves the row's origin up to the oldest point it keeps; a table that spans more than that
    even so is kept wider."""

    def __init__(self, limit: int = DEFAULT_POINTS, capacity: int = 1024, forget_after: float = 600.0) -> None:
        if not 2 <= limit <= np.iinfo(_COUNT).max:
            raise ValueError(f"a table needs room for 2 to {np.iinfo(_COUNT).max} points, got {limit}")
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
        self.count = np.zeros(capacity, _COUNT)  # (points held: at most `limit`)
        self.last_seen = np.full(capacity, np.inf)  # when each row's partition was last added (inf: free)
        # Each partition's row, by topic and partition number (-1: none): 4 bytes a partition. (A dict
        # keyed by (topic, partition) and its row numbers as ints was 19 MB at 300,000 partitions.)
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
        sampling pass's answer as it keeps it, with no dict: console.watcher.columns.PassOffsets).
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
            # (the new rows once: made again for each topic, the list of every new partition cost
            # topics x partitions, 100 s of a first pass at 300,000 partitions in 10,000 topics)
            new_rows = rows[np.asarray(new, np.int64)]
            for name, (places, numbers) in _by_topic([keys[i] for i in new]).items():
                self._place(name, numbers, new_rows[places])
            self._keys, self._rows = keys, rows
        rows = self._rows
        self.last_seen[rows] = at
        if (self.last_seen < at - self.forget_after).any():
            self._forget(at)
        stamp = self.clock.of(at, self._compact)
        # (a block of rows at a time: every partition's table at once made each of a dozen
        # temporaries 2.4 MB at 300,000 partitions, the sampling process's largest step of a pass)
        for i in range(0, len(rows), CHUNK):
            self._add_rows(rows[i:i + CHUNK], values[i:i + CHUNK], at, stamp)
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
            self.stamps.set(ru, _over_origin(self.stamps, self.stamp_origin, self.count, ru, np.full(len(ru), stamp, np.int64)),
                            last[update])
        append = ok & ~update
        if append.any():
            ra, na, va = rows[append], n[append], values[append]
            fresh = na == 0
            self.origin[ra[fresh]] = va[fresh]  # (an empty table's first point is its origin)
            self.stamp_origin[ra[fresh]] = stamp
            full = na >= self.limit
            rises = _over_origin(self.rises, self.origin, self.count, ra, va, full)  # (first: it may move origins)
            stamps = _over_origin(self.stamps, self.stamp_origin, self.count, ra, np.full(len(ra), stamp, np.int64), full)
            _append(ra, na, self.count, self.limit, [(self.rises, rises), (self.stamps, stamps)])

    def _grow(self, to: int | None = None) -> None:
        self.origin, self.stamp_origin, self.count, self.last_seen = _grown(self.origin, self.stamp_origin, self.count,
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
        return _times(self.clock, self.stamp_origin, self.stamps, self.count)

    def _compact(self) -> None:
        self.clock.renumber(self.stamp_origin, self.stamps, self.count)

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
