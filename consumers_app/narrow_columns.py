"""A column of integers kept narrow where its rows fit (`Narrow`): the storage under the lag windows
(lag_windows.py) and the time tables (time_tables.py); pure, no I/O.

Most rows of a large cluster (idle partitions, consumers at the end of their logs) hold values that
fit in 1 or 2 bytes and a busy partition's row does not, so a row is kept narrow while all its
entries fit and whole in a wider side table once one does not.
"""

from __future__ import annotations

import ctypes
import mmap
from typing import Any

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int64]
# Rows recorded or judged in one go: a column operation's temporaries are (rows x size) arrays, so
# working a block of rows at a time bounds what a pass holds at once however many rows there are.
# The other column modules read it from here when called, so one setting (tests make it small)
# holds for them all.
CHUNK = 1 << 14
SETTLE_ROWS = 1 << 14  # wide rows a `Narrow.settle` looks at, at least (tests make it small)
INT64_MAX = int(np.iinfo(np.int64).max)


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
    time with the pages of `array` already copied given back as it goes (`_give_back`), so that a
    side table is not held twice while a spill copies it. `array` is not read afterwards."""
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


def written(count: npt.NDArray[np.integer[Any]], size: int) -> npt.NDArray[np.bool_]:
    """Which entries of each row are written (the first `count` of it)."""
    return np.arange(size)[None, :] < count[:, None]


class Narrow:
    """A (rows x size) column of integers kept in 2 bytes an entry for every row whose entries all
    fit, and whole in a side table of 4 bytes an entry (8 from the first entry that does not fit in
    4, for good) for the rows that do not: their rows in order (`wide_rows`), each row's entries in
    `wide`. (Those are the offsets' sizes, the default; a window's times are kept in 1 byte and 2
    in the side table, 4 and 8 after: the `narrow` and `wide` types it is made with.) A busy
    partition's offsets or a lagging consumer's lags spill its row; most rows of a large cluster
    (idle partitions, consumers at the end of their logs) never do, so the columns take about half
    the room of wide ones. When more than a fifth of the rows are wide the column is kept plain
    (every row in `wide`, indexed by row: `narrow` is None), so a busy cluster's columns take no more
    than their wide size an entry; it narrows again once at most a tenth would be wide (`settle`).
    Whole rows are moved a block of CHUNK rows at a time, so no temporary holds every row's entries.

    Values go in and come out as int64s: `get` and `set` take the rows (distinct for `set`) and
    either no columns (whole rows), one column for all, or one per row."""

    NARROW_MAX = int(np.iinfo(np.int16).max)  # (tests make both small, to spill and widen often)
    WIDE_MAX = int(np.iinfo(np.int32).max)  # (of 4-byte wide rows; 2-byte ones keep at most this and 32,767)
    # A column is kept plain once more than 1/PLAIN_SHARE of its rows would be wide, and narrows again
    # when at most 1/NARROW_SHARE would stay so. A wide row costs its entries in the wide type and 8
    # bytes of index, and every spill copies the wide table (`_spill`): at a fifth, the narrow rows,
    # the wide ones and a spill's copy together stay about the size of the plain column, where a
    # higher share would hold up to twice it before going plain.
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
            return INT64_MAX
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
            # narrow one, and made whole next to the narrow one and the side table it would be the
            # sampling process's peak.
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
        # (put in their places in one new table: a table concatenated then reordered is two new
        # copies of it at each spill, and a busy cluster spills rows every pass)
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
        held = written(count, self.size)
        values = wide.astype(np.int64)
        low: npt.NDArray[np.int64] = np.where(held, values, INT64_MAX).min(axis=1) if rebase else np.zeros(len(values), np.int64)
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

