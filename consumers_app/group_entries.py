"""What one group state's committed offsets give the group evaluation (group_evaluation.py), derived
once per state: its partitions, the getter of their end offsets, and whether it is at the end of
every partition's log."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Mapping, Sequence
from operator import is_, itemgetter
from typing import Any, cast

import numpy as np

from console.snapshots import Commits, GroupPartitions
from console.watcher.columns import ABSENT, OffsetColumns
from console.watcher.pass_offsets import PassOffsets


def _partition_of(key: str, tp_of: dict[str, tuple[str, int]]) -> tuple[str, int]:
    topic, _, part = key.rpartition(":")
    tp = tp_of[key] = (sys.intern(topic), int(part))  # (one topic string for all its partitions, not one each)
    return tp


class GroupEntries:
    """What one group state's committed offsets give the evaluation, derived once per state."""

    __slots__ = ("at_end_of", "committed", "committed_key", "getter", "keys", "offsets", "time_rows", "time_rows_of", "tps")

    def __init__(self, offsets: Mapping[str, int], shared: Mapping[str, tuple[str, int]], tp_of: dict[str, tuple[str, int]]) -> None:
        self.offsets = offsets
        self.keys: Sequence[str]
        self.committed: Sequence[int]  # (an array of the sampler's Commits, else a tuple)
        if isinstance(offsets, Commits):
            # The sampler's: its partitions' keys, tuples and getter are shared objects already.
            self.keys, self.tps, self.committed = offsets.partitions.keys, offsets.partitions.tps, offsets.committed
            self.getter = offsets.partitions.getter
        else:
            self.keys = list(offsets)
            self.tps = tuple([shared.get(key) or tp_of.get(key) or _partition_of(key, tp_of) for key in self.keys])
            self.committed = tuple(offsets.values())
            # The end offsets of its partitions in one C call, to compare with the committed ones.
            self.getter = itemgetter(*self.tps) if self.tps else None
        self.committed_key: Any = self.committed if len(self.committed) != 1 else self.committed[0]
        # Each partition's row of the time tables, once all have one: one array for all the groups
        # that commit on the same partitions (GroupEvaluation._time_rows_of).
        self.time_rows: array[int] | None = None
        self.time_rows_of = -1  # ... as of this generation of the time tables
        # The arrays (one per topic run) of the offsets by topic in which every partition was last
        # found at its committed offset: the same arrays again (a pass's answer keeps a topic's
        # array when its values are as they were: columns.PassOffsets.of) are at the end still.
        self.at_end_of: tuple[Any, ...] | None = None

    def at_end(self, ends: Mapping[tuple[str, int], int]) -> bool:
        """Whether every partition's end offset in `ends` is its committed one (KeyError: one has none)."""
        if self.getter is None:
            return False
        columns = offset_columns(ends)
        if columns is not None and isinstance(self.offsets, Commits):
            held = tuple([columns.array(run[0]) for run in self.offsets.partitions.runs])
            was = self.at_end_of
            if was is not None and all(map(is_, held, was)):
                return True
            self.at_end_of = None
            found = read_partitions(self.offsets.partitions, columns)
            if (found == ABSENT).any():
                raise KeyError("a partition without an end offset")
            if np.array_equal(found, np.frombuffer(self.offsets.committed, np.int64)):
                self.at_end_of = held
                return True
            return False
        found = self.getter(ends)
        if isinstance(self.offsets, Commits):
            return self.offsets.same_as(found)
        return bool(found == self.committed_key)

    def ends(self, ends: Mapping[tuple[str, int], int]) -> list[int | None]:
        if self.getter is None:
            return []
        columns = offset_columns(ends)
        if columns is not None and isinstance(self.offsets, Commits):
            found = read_partitions(self.offsets.partitions, columns)
            if (found == ABSENT).any():
                return [None if v == ABSENT else v for v in found.tolist()]
            return cast(list[int | None], found.tolist())
        try:
            found = self.getter(ends)
        except KeyError:
            return [ends.get(tp) for tp in self.tps]
        return list(found) if len(self.tps) != 1 else [found]


def offset_columns(ends: Mapping[tuple[str, int], int]) -> OffsetColumns | None:
    """A pass's offsets by topic, when `ends` has them so (the sampler's), else None."""
    if isinstance(ends, PassOffsets):
        return ends.columns
    return ends if isinstance(ends, OffsetColumns) else None


def read_partitions(partitions: GroupPartitions, columns: OffsetColumns) -> np.ndarray:  # type: ignore[type-arg]
    """The values of a group's partitions, in order, from offsets by topic (ABSENT where none): a
    topic's slice or pick at a time, not a look-up per partition (the sampler keeps a pass's
    offsets as arrays by topic, not a dict: pass_offsets.PassOffsets)."""
    got = []
    for run in partitions.runs:
        held = columns.array(run[0])
        if len(run) == 3:
            first, n = run[1], run[2]
            part = held[first:first + n] if held is not None else np.full(n, ABSENT, np.int64)
            if len(part) < n:
                part = np.concatenate([part, np.full(n - len(part), ABSENT, np.int64)])
        else:
            numbers = np.asarray(run[1], np.int64)
            part = np.full(len(numbers), ABSENT, np.int64)
            if held is not None:
                inside = numbers < len(held)
                part[inside] = held[numbers[inside]]
        got.append(part)
    return got[0] if len(got) == 1 else np.concatenate(got)

