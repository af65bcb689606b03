"""Per-partition values kept by topic, not by (topic, partition): the offsets and replica sizes
the watcher's process merges from its sampling process's passes (OffsetColumns, ListColumns), and
a pass's changed offsets packed to be sent (pack).

Each topic's values are one array (or list) indexed by partition number, because a dict entry,
key tuple and value object per partition made these the largest structures of both processes.
A pass's changes make new arrays only for the topics they touch; the others are shared with the
mapping before, which is never changed (what was handed out stays as it was). They are read through
the Mapping interface, a partition at a time, where a snapshot needs a partition's value.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from console.gateway.types import TopicPartition

V = TypeVar("V")

_ABSENT = np.iinfo(np.int64).min  # (an offset never read: Kafka's are never negative)
ABSENT = _ABSENT


class _ByTopic(Mapping[TopicPartition, V], Generic[V]):
    """(topic, partition) -> a value, held per topic in a sequence indexed by partition number."""

    __slots__ = ("_count", "_topics")

    def __init__(self, topics: dict[str, Any] | None = None, count: int = 0) -> None:
        self._topics: dict[str, Any] = topics if topics is not None else {}
        self._count = count

    def _at(self, values: Any, number: int) -> Any:
        """The value at `number` of a topic's sequence, or _MISSING."""
        raise NotImplementedError

    def get(self, key: TopicPartition, default: Any = None) -> Any:  # type: ignore[override]
        values = self._topics.get(key[0])
        number = key[1]
        if values is None or not 0 <= number < len(values):
            return default
        found = self._at(values, number)
        return default if found is _MISSING else found

    def __getitem__(self, key: TopicPartition) -> V:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self._count


class OffsetColumns(_ByTopic[int]):
    """(topic, partition) -> offset, as one int64 array per topic. Immutable: `updated` makes a
    new one that shares the arrays of the topics it does not change."""

    __slots__ = ()

    def _at(self, values: npt.NDArray[np.int64], number: int) -> Any:
        value = values[number]
        return _MISSING if value == _ABSENT else int(value)

    def __iter__(self) -> Iterator[TopicPartition]:
        for name, values in self._topics.items():
            for number in np.flatnonzero(values != _ABSENT).tolist():
                yield (name, number)

    def array(self, name: str) -> npt.NDArray[np.int64] | None:
        """A topic's values by partition number (ABSENT where none; never to be changed), or None."""
        return self._topics.get(name)  # type: ignore[no-any-return]

    def updated_packed(self, packed: PackedOffsets) -> OffsetColumns:
        """The values packed by topic (`pack`) over this one's (a new object; this one is unchanged)."""
        if not packed:
            return self
        topics = dict(self._topics)
        count = self._count
        for name, (numbers, values) in packed.items():
            index = np.frombuffer(numbers, np.int32).astype(np.int64)
            if len(index) and index.min() < 0:
                raise ValueError(f"partition {int(index.min())} of {name!r}")
            old = topics.get(name)
            size = max(int(index.max()) + 1 if len(index) else 0, len(old) if old is not None else 0)
            held = np.full(size, _ABSENT, np.int64)
            if old is not None:
                held[:len(old)] = old
            count += int(np.count_nonzero(held[index] == _ABSENT))
            held[index] = np.frombuffer(values, np.int64)
            topics[name] = held
        return OffsetColumns(topics, count)

    @classmethod
    def merged(cls, last: Mapping[TopicPartition, int] | None, answer: Mapping[TopicPartition, int]) -> OffsetColumns:
        """`answer` over `last` (a pass's offsets answer over the last pass's offsets), as arrays: the
        way a sampling pass keeps its end and start offsets, because the answer's dict (an entry
        and an int object per partition) held twice at a pass's end was the sampling process's
        peak.

        An answer that holds every partition of `last` (the usual one) replaces it: partitions no
        longer listed (a deleted topic's) go. One that left some out (a broker that did not answer)
        keeps their last values; an empty one (the read failed) gives `last` itself. A topic whose
        values are last's keeps last's array, the same object: `pack`, `changed_keys` and
        `produce_rates` pass over it by identity."""
        if last is not None and not isinstance(last, OffsetColumns):
            last = cls.merged(None, last)  # (a plain mapping: its columns first)
        if not answer:
            return last if last is not None else cls()
        if isinstance(answer, OffsetColumns):
            # (a pass's answer by topic already: its arrays, never changed, are taken as they are)
            fresh = cls(dict(answer._topics), answer._count)
        else:
            fresh = cls().updated_packed(pack(answer))
        old = last._topics if last is not None else {}
        answered = fresh._topics
        if not (len(fresh) >= len(last or ()) and all((new := answered.get(name)) is not None and (new is was or _holds(new, was))
                                                       for name, was in old.items())):
            assert last is not None
            fresh = last.updated_packed(pack(answer))  # (the partitions the answer left out, as they were)
        topics = fresh._topics
        for name, held in topics.items():
            was = old.get(name)
            if was is not None and was is not held and len(was) == len(held) and np.array_equal(was, held):
                topics[name] = was
        return fresh

    def changed(self, old: Mapping[TopicPartition, int] | None) -> Iterator[tuple[str, npt.NDArray[np.intp]]]:
        """(topic, the numbers of its partitions whose value `old` does not have) for each topic with
        any: a topic whose array is old's is passed over. `old` another OffsetColumns (or None)."""
        before = old._topics if isinstance(old, OffsetColumns) else {}
        for name, held in self._topics.items():
            was = before.get(name)
            if was is held:
                continue
            pick = held != _ABSENT
            if was is not None:
                n = min(len(was), len(held))
                pick[:n] &= held[:n] != was[:n]
            numbers = np.flatnonzero(pick)
            if len(numbers):
                yield name, numbers

    def changed_keys(self, old: Mapping[TopicPartition, int] | None) -> list[TopicPartition]:
        """The partitions whose value `old` does not have (`changed`), as (topic, partition) pairs."""
        return [(name, n) for name, numbers in self.changed(old) for n in numbers.tolist()]

    def rates(self, before: OffsetColumns, seconds: float) -> dict[str, float]:
        """Messages per second per topic from `before`'s offsets to these: the rise of the
        partitions in both (one that went down counts 0); a topic with none in both has none."""
        out: dict[str, float] = {}
        was_of = before._topics
        for name, held in self._topics.items():
            was = was_of.get(name)
            if was is None:
                continue
            if was is held:  # (unchanged: no rise, if it has any partition; its first, mostly)
                if len(held) and (held[0] != _ABSENT or bool((held != _ABSENT).any())):
                    out[name] = 0.0
                continue
            n = min(len(was), len(held))
            both = (held[:n] != _ABSENT) & (was[:n] != _ABSENT)
            if not both.any():
                continue
            out[name] = round(int(np.maximum(held[:n][both] - was[:n][both], 0).sum()) / seconds, 2)
        return out


def _holds(new: npt.NDArray[np.int64], old: npt.NDArray[np.int64]) -> bool:
    """Whether `new` has a value for every partition `old` has."""
    n = len(old)
    return len(new) >= n and not bool(((old != _ABSENT) & (new[:n] == _ABSENT)).any())


class ListColumns(_ByTopic[V]):
    """(topic, partition) -> a value (each partition's replica sizes: the mapping the snapshot's
    partition keeps), as one list per topic. Immutable, as OffsetColumns."""

    __slots__ = ()

    def _at(self, values: list[V | None], number: int) -> Any:
        value = values[number]
        return _MISSING if value is None else value

    def __iter__(self) -> Iterator[TopicPartition]:
        for name, values in self._topics.items():
            for number, value in enumerate(values):
                if value is not None:
                    yield (name, number)

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


# Changed partitions' offsets as a pass sends them, by topic: their numbers and values, a few
# arrays per topic rather than an object per partition.
PackedOffsets = dict[str, tuple["array[int]", "array[int]"]]


def pack(new: Mapping[TopicPartition, int], old: Mapping[TopicPartition, int] | None = None) -> PackedOffsets:
    """The values of `new` that `old` does not have (all of them without `old`), packed by topic."""
    if new is old:  # (a pass whose read failed keeps the last mapping: nothing to walk)
        return {}
    out: PackedOffsets = {}
    if isinstance(new, OffsetColumns) and (old is None or isinstance(old, OffsetColumns)):
        # (a topic at a time, passing over the arrays old shares: a sampling pass's offsets)
        for name, numbers in new.changed(old):
            packed = out[name] = (array("i"), array("q"))
            packed[0].frombytes(numbers.astype(np.int32).tobytes())
            packed[1].frombytes(new._topics[name][numbers].tobytes())
        return out
    get = old.get if old else None
    for (name, number), value in new.items():
        if get is not None and get((name, number), _MISSING) == value:
            continue
        found = out.get(name)
        if found is None:
            found = out[name] = (array("i"), array("q"))
        found[0].append(number)
        found[1].append(value)
    return out
