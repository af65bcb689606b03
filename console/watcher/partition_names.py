"""The one (topic, partition) tuple, "topic:partition" key and recurring string a sampling pass
shares among the group states that name them: each answer from Kafka brings new objects, and kept
per group they were much of the sampling process's memory.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import TypeVar

from console.gateway.types import TopicPartition
from console.watcher.numbers import PARTITION_NUMBERS

TEXTS_MAX = 200_000  # strings and assignments shared (PartitionNames.text, .tps): forgotten all at once beyond this
_T = TypeVar("_T")


def _interned(table: dict[_T, _T], value: _T) -> _T:
    """The one object equal to `value` in `table`, which holds at most TEXTS_MAX (cleared all at
    once when a new value finds it full)."""
    found = table.get(value)
    if found is None:
        if len(table) >= TEXTS_MAX:
            table.clear()
        found = table[value] = value
    return found


class PartitionNames:
    """One (topic, partition) tuple and one "topic:partition" string per partition, shared by every
    group state that names it: many groups commit on the same partitions, and the gateway's
    answers are new objects at every pass. Kept per topic, in two lists indexed by partition
    number (partition numbers are dense: 0 to the count less one), a fraction of what two dicts
    keyed by tuple and by string cost.
    Cleared when it holds far more partitions than are in use (deleted topics), so it never grows
    without bound; `generation` counts the clearings."""

    __slots__ = ("_count", "_other", "_sets", "_texts", "_topics", "by_key", "generation")

    def __init__(self) -> None:
        # topic -> (each partition's key, each partition's tuple), by partition number (None: not named yet)
        self._topics: dict[str, tuple[list[str | None], list[TopicPartition | None]]] = {}
        self._other: dict[TopicPartition, tuple[str, TopicPartition]] = {}  # (numbers beyond the lists')
        self._count = 0
        self.generation = 0
        self.by_key: Mapping[str, TopicPartition] = _ByKey(self._topics, self._other)  # each key's tuple (for the evaluation, which shares them)
        self._texts: dict[str, str] = {}  # (see `text`)
        self._sets: dict[tuple[TopicPartition, ...], tuple[TopicPartition, ...]] = {}  # (see `tps`)

    def __len__(self) -> int:
        return self._count

    def entry(self, tp: TopicPartition) -> tuple[str, TopicPartition]:
        """The shared "topic:partition" key of `tp`, and its shared tuple."""
        found = self._topics.get(tp[0])
        number = tp[1]
        if found is not None and 0 <= number < len(found[0]):
            key = found[0][number]
            if key is not None:
                return key, found[1][number]  # type: ignore[return-value]
        return self._add(tp)

    def _add(self, tp: TopicPartition) -> tuple[str, TopicPartition]:
        # (one topic string for all its partitions: the gateway's answers hold one per partition)
        name, number = sys.intern(tp[0]), int(tp[1])
        if not 0 <= number < PARTITION_NUMBERS:
            known = self._other.get((name, number))
            if known is None:
                known = self._other[(name, number)] = (f"{name}:{number}", (name, number))
                self._count += 1
            return known
        found = self._topics.get(name)
        if found is None:
            found = self._topics[name] = ([], [])
        keys, tuples = found
        if number >= len(keys):
            keys.extend([None] * (number + 1 - len(keys)))
            tuples.extend([None] * (number + 1 - len(tuples)))
        key, shared = f"{name}:{number}", (name, number)
        keys[number], tuples[number] = key, shared
        self._count += 1
        return key, shared

    def key(self, tp: TopicPartition) -> str:
        """The shared "topic:partition" key of `tp`."""
        return self.entry(tp)[0]

    def shared(self, tp: TopicPartition) -> TopicPartition:
        """The shared (topic, partition) tuple equal to `tp` (`entry`'s, looked up without it: the
        gateway asks for one per partition of every member's assignment, every pass)."""
        found = self._topics.get(tp[0])
        number = tp[1]
        if found is not None and 0 <= number < len(found[1]):
            got = found[1][number]
            if got is not None:
                return got
        return self._add(tp)[1]

    def tps(self, tps: tuple[TopicPartition, ...]) -> tuple[TopicPartition, ...]:
        """One tuple of the shared tuples for each list of partitions (a member's assignment): the
        groups that read a topic with the same number of members and the same assignor are given
        the same lists, not one tuple per member."""
        shared = self.shared
        return _interned(self._sets, tuple([shared(tp) for tp in tps]))

    def text(self, value: str) -> str:
        """One string for each value of a member's client id and host, and of a group's state,
        protocol type, group type and assignor: they recur across groups and passes, and each answer
        brings new strings."""
        return _interned(self._texts, value)

    def bound(self, in_use: int) -> None:
        if self._count > 2 * in_use + 100_000:
            self._topics, self._other, self._count, self._sets = {}, {}, 0, {}
            self.by_key = _ByKey(self._topics, self._other)
            self.generation += 1


class _ByKey(Mapping[str, TopicPartition]):
    """PartitionNames' tuples by key ("topic:partition")."""

    __slots__ = ("_other", "_topics")

    def __init__(self, topics: dict[str, tuple[list[str | None], list[TopicPartition | None]]],
                 other: dict[TopicPartition, tuple[str, TopicPartition]]) -> None:
        self._topics, self._other = topics, other

    def __getitem__(self, key: str) -> TopicPartition:
        topic, _, number = key.rpartition(":")
        found = self._topics.get(topic)
        if found is not None and number.isdigit() and int(number) < len(found[0]) and found[0][int(number)] == key:
            return found[1][int(number)]  # type: ignore[return-value]
        try:
            known = self._other.get((topic, int(number)))
        except ValueError:
            known = None
        if known is None:
            raise KeyError(key)
        return known[1]

    def __iter__(self) -> Iterator[str]:
        for keys, _tuples in self._topics.values():
            yield from (k for k in keys if k is not None)
        yield from (key for key, _tp in self._other.values())

    def __len__(self) -> int:
        return sum(len(keys) - keys.count(None) for keys, _tuples in self._topics.values()) + len(self._other)

