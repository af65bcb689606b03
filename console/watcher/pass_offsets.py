"""One sampling pass's offsets answer held as arrays (PassOffsets), and the runs of topics a
pass asks for (topic_runs): what the sampler and the group evaluation read a pass's offsets through.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from console.gateway.types import TopicPartition
from console.watcher.columns import ABSENT, OffsetColumns


def topic_runs(tps: list[TopicPartition]) -> list[tuple[str, int, int, npt.NDArray[np.int64]]]:
    """Each topic's run in `tps` (listed topic by topic, as a sampling pass asks for them): its name,
    where the run starts and stops, and its partition numbers."""
    runs: list[tuple[str, int, int, npt.NDArray[np.int64]]] = []
    start = 0
    for i in range(1, len(tps) + 1):
        if i == len(tps) or tps[i][0] != tps[start][0]:
            runs.append((tps[start][0], start, i, np.fromiter((tp[1] for tp in tps[start:i]), np.int64, i - start)))
            start = i
    return runs


class PassOffsets(Mapping[TopicPartition, int]):
    """One sampling pass's offsets answer: the partitions answered, as the shared tuples the pass
    asked with (`keys`, in the order asked) and their offsets in one array (`values`), and the same
    by topic (`columns`, OffsetColumns: what a group's partitions are read from, a topic's array at a
    time), because the gateway's dict (an entry and an int object per partition), held through
    the whole pass, was where the sampling process peaked.

    The time tables take `keys` and `values` as they are (the same list object as long as every
    partition answers); lookups by partition go through `columns`."""

    __slots__ = ("columns", "keys_", "values_")

    def __init__(self, keys: list[TopicPartition], values: npt.NDArray[np.int64], columns: OffsetColumns) -> None:
        self.keys_, self.values_, self.columns = keys, values, columns

    @classmethod
    def of(cls, asked: list[TopicPartition], runs: list[tuple[str, int, int, npt.NDArray[np.int64]]],
           answer: Mapping[TopicPartition, int], previous: PassOffsets | None = None) -> PassOffsets:
        """The gateway's answer for `asked` (keyed by its objects), `runs` its topics' runs (`topic_runs`).

        `previous`: the last answer for the same partitions. A topic whose values are all as they
        were in it keeps its array, the same object, so that what compares arrays downstream (the
        merge, `changed`, the groups' caught-up check) passes over it by identity: on an idle
        cluster a pass then costs next to nothing per topic beyond reading the answer."""
        try:  # (every partition answered, the usual case: looked up in C)
            values = np.fromiter(map(answer.__getitem__, asked), np.int64, len(asked))
        except KeyError:
            values = np.fromiter((answer.get(tp, ABSENT) for tp in asked), np.int64, len(asked))
        present = values != ABSENT
        if any(len(numbers) and numbers.min() < 0 for _name, _start, _stop, numbers in runs):
            raise ValueError("a partition number below 0")
        kept = cls._kept(asked, runs, values, previous)
        topics: dict[str, npt.NDArray[np.int64]] = {}
        for i, (name, start, stop, numbers) in enumerate(runs):
            if kept is not None and kept[i]:
                topics[name] = previous.columns.array(name)  # type: ignore[union-attr,assignment]
                continue
            mine = present[start:stop]
            if not mine.any():
                continue
            before = topics.get(name)  # (a topic asked for in two runs: tools and tests list partitions as they like)
            size = max(int(numbers.max()) + 1, len(before) if before is not None else 0)
            held = _pad(before, size) if before is not None else np.full(size, ABSENT, np.int64)
            held[numbers[mine]] = values[start:stop][mine]
            topics[name] = held
        count = int(np.count_nonzero(present))
        if count == len(asked):
            return cls(asked, values, OffsetColumns(topics, count))
        answered = np.flatnonzero(present)
        return cls([asked[i] for i in answered.tolist()], values[answered], OffsetColumns(topics, count))

    @staticmethod
    def _kept(asked: list[TopicPartition], runs: list[tuple[str, int, int, npt.NDArray[np.int64]]],
              values: npt.NDArray[np.int64], previous: PassOffsets | None) -> npt.NDArray[np.bool_] | None:
        """For each run, whether its topic's array in `previous` is this answer's too: `previous`
        answered every partition of the same `asked` (its keys are that list), the run's values are
        all as they were there and present, and the topic has no other run (None: no run is)."""
        if previous is None or previous.keys_ is not asked or len(previous.values_) != len(values) or not runs:
            return None
        if len({run[0] for run in runs}) != len(runs):
            return None  # (a topic asked for in two runs: made afresh)
        same = (values == previous.values_) & (values != ABSENT)
        kept = np.logical_and.reduceat(same, np.fromiter((run[1] for run in runs), np.int64, len(runs)))
        held = previous.columns
        for i in np.flatnonzero(kept).tolist():
            if held.array(runs[i][0]) is None:
                kept[i] = False
        return kept

    def get(self, key: TopicPartition, default: Any = None) -> Any:  # type: ignore[override]
        return self.columns.get(key, default)

    def __getitem__(self, key: TopicPartition) -> int:
        return self.columns[key]

    def __contains__(self, key: object) -> bool:
        return key in self.columns

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self.keys_)

    def __len__(self) -> int:
        return len(self.keys_)

    def values(self) -> Any:
        return self.values_.tolist()

    def items(self) -> Any:
        return zip(self.keys_, self.values_.tolist(), strict=True)



def _pad(values: npt.NDArray[np.int64], size: int) -> npt.NDArray[np.int64]:
    """`values` grown to `size` with absent values (itself when it has that size)."""
    if len(values) >= size:
        return values
    return np.concatenate([values, np.full(size - len(values), ABSENT, np.int64)])

