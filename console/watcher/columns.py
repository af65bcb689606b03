"""Per-partition values the watcher's process keeps from its sampling process's passes, by topic.

The watcher turns each pass's delta back into whole mappings (sampling_process.DeltaMerger). As
dicts keyed by (topic, partition) they were, at 300,000 partitions, a dict entry, a key tuple and
an int object per partition and per kind (end offsets, start offsets, replica sizes): about 60 MB,
and each pass copied all three to hand out new mappings. Here each topic's values are one array
indexed by partition number (an int64 array for offsets, a list for the replica sizes' mappings),
and a pass's changes make new arrays only for the topics they touch; the others are shared with
the mapping before, which is never changed (what was handed out stays as it was).

They are read through the Mapping interface, a partition at a time, only where a snapshot needs a
partition's value: the metadata cycle reads the partitions that changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

TopicPartition = tuple[str, int]
V = TypeVar("V")

_ABSENT = np.iinfo(np.int64).min  # (an offset never read: Kafka's are never negative)


class OffsetColumns(Mapping[TopicPartition, int]):
    """(topic, partition) -> offset, as one int64 array per topic. Immutable: `updated` makes a
    new one that shares the arrays of the topics it does not change."""

    __slots__ = ("_count", "_topics")

    def __init__(self, topics: dict[str, npt.NDArray[np.int64]] | None = None, count: int = 0) -> None:
        self._topics: dict[str, npt.NDArray[np.int64]] = topics if topics is not None else {}
        self._count = count

    def get(self, key: TopicPartition, default: Any = None) -> Any:  # type: ignore[override]
        values = self._topics.get(key[0])
        number = key[1]
        if values is None or not 0 <= number < len(values):
            return default
        value = values[number]
        return default if value == _ABSENT else int(value)

    def __getitem__(self, key: TopicPartition) -> int:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return int(value)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[TopicPartition]:
        for name, values in self._topics.items():
            for number in np.flatnonzero(values != _ABSENT).tolist():
                yield (name, number)

    def __len__(self) -> int:
        return self._count

    def updated(self, changes: Mapping[TopicPartition, int]) -> OffsetColumns:
        """These values over this one's (a new object; this one is unchanged)."""
        if not changes:
            return self
        topics = dict(self._topics)
        count = self._count
        for name, numbers in _by_topic(changes).items():
            old = topics.get(name)
            size = max(max(numbers) + 1, len(old) if old is not None else 0)
            values = np.full(size, _ABSENT, np.int64)
            if old is not None:
                values[:len(old)] = old
            index = np.fromiter(numbers, np.int64, len(numbers))
            count += int(np.count_nonzero(values[index] == _ABSENT))
            values[index] = np.fromiter((changes[(name, n)] for n in numbers), np.int64, len(numbers))
            topics[name] = values
        return OffsetColumns(topics, count)


class ListColumns(Mapping[TopicPartition, V], Generic[V]):
    """(topic, partition) -> a value (each partition's replica sizes: the mapping the snapshot's
    partition keeps), as one list per topic. Immutable, as OffsetColumns."""

    __slots__ = ("_count", "_topics")

    def __init__(self, topics: dict[str, list[V | None]] | None = None, count: int = 0) -> None:
        self._topics: dict[str, list[V | None]] = topics if topics is not None else {}
        self._count = count

    def get(self, key: TopicPartition, default: Any = None) -> Any:  # type: ignore[override]
        values = self._topics.get(key[0])
        number = key[1]
        if values is None or not 0 <= number < len(values):
            return default
        value = values[number]
        return default if value is None else value

    def __getitem__(self, key: TopicPartition) -> V:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[TopicPartition]:
        for name, values in self._topics.items():
            for number, value in enumerate(values):
                if value is not None:
                    yield (name, number)

    def __len__(self) -> int:
        return self._count

    def updated(self, changes: Mapping[TopicPartition, V]) -> ListColumns[V]:
        if not changes:
            return self
        topics = dict(self._topics)
        count = self._count
        for name, numbers in _by_topic(changes).items():
            old = topics.get(name)
            values: list[V | None] = list(old) if old is not None else []
            if len(values) <= max(numbers):
                values.extend([None] * (max(numbers) + 1 - len(values)))
            for number in numbers:
                count += values[number] is None
                values[number] = changes[(name, number)]
            topics[name] = values
        return ListColumns(topics, count)


def _by_topic(changes: Mapping[TopicPartition, Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name, number in changes:
        if number < 0:
            raise ValueError(f"partition {number} of {name!r}")
        found = out.get(name)
        if found is None:
            out[name] = [number]
        else:
            found.append(number)
    return out


_MISSING: Any = object()
