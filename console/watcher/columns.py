"""Per-partition values kept by topic, not by (topic, partition): the offsets and sizes the
watcher's process merges from its sampling process's passes (OffsetColumns, ListColumns), and the
replica sizes the sampling process reads (SizeColumns).

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

import hashlib
import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from console.snapshots.model import ReplicaSizes, broker_key, replica_sizes_of

TopicPartition = tuple[str, int]
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
        way a sampling pass keeps its end and start offsets. As the answer's dict they were a dict
        entry and an int object per partition (about 20 MB at 300,000 partitions), and the pass
        that renewed them held the last pass's and its own at once, at its end, where the sampling
        process holds the most.

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
    time). As the gateway's dict (a dict entry and an int object per partition) it was about 20 MB
    at 300,000 partitions, held through the whole pass: where the sampling process peaks.

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
            values = np.fromiter((answer.get(tp, _ABSENT) for tp in asked), np.int64, len(asked))
        present = values != _ABSENT
        if any(len(numbers) and numbers.min() < 0 for _name, _start, _stop, numbers in runs):
            raise ValueError("a partition number below 0")
        kept = cls._kept(asked, runs, values, previous)
        topics: dict[str, npt.NDArray[np.int64]] = {}
        for i, (name, start, stop, numbers) in enumerate(runs):
            if kept is not None and kept[i]:
                topics[name] = previous.columns._topics[name]  # type: ignore[union-attr]
                continue
            mine = present[start:stop]
            if not mine.any():
                continue
            before = topics.get(name)  # (a topic asked for in two runs: tools and tests list partitions as they like)
            size = max(int(numbers.max()) + 1, len(before) if before is not None else 0)
            held = _pad(before, size) if before is not None else np.full(size, _ABSENT, np.int64)
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
        same = (values == previous.values_) & (values != _ABSENT)
        kept = np.logical_and.reduceat(same, np.fromiter((run[1] for run in runs), np.int64, len(runs)))
        held = previous.columns._topics
        for i in np.flatnonzero(kept).tolist():
            if runs[i][0] not in held:
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
    return np.concatenate([values, np.full(size - len(values), _ABSENT, np.int64)])


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


class SizeColumns(Mapping[TopicPartition, Mapping[str, int]]):
    """(topic, partition) -> each replica's log size as the snapshot keeps it ({broker key: bytes}
    in broker order: snapshot.replica_sizes), held by the sampling process as two arrays per topic,
    a row per partition number: the replicas' brokers (int32, in order, -1 after the last) and their
    sizes (int64). As a dict per partition they were 72 MB of that process at 300,000 partitions;
    here about 13. A partition's mapping is made when asked for (`get`), and a pass sends the
    watcher only those that changed (`changed_packed`).

    `read` builds one from the gateway's answers; a topic whose sizes equal the ones before keeps
    their arrays (so `changed_packed` passes over it by identity). Immutable."""

    __slots__ = ("_count", "_digests", "_topics")

    def __init__(self, topics: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]] | None = None,
                 count: int = 0, digests: dict[str, bytes] | None = None) -> None:
        self._topics = topics if topics is not None else {}
        self._count = count
        # each topic's answer as read (its replicas' partition, broker and size, in the answers'
        # order), digested: the next read's equal answer keeps the arrays without making them again
        self._digests = digests if digests is not None else {}

    @classmethod
    def read(cls, answers: Iterable[Mapping[TopicPartition, Mapping[int, int]]],
             before: Mapping[TopicPartition, Mapping[str, int]] | None) -> SizeColumns:
        """The sizes the answers give (each broker's replicas in one answer only: they are read a
        few brokers at a time), each answer let go as it is taken in."""
        triples: dict[str, array[int]] = {}  # topic -> (partition, broker, size), flat
        for answer in answers:
            for (name, number), replicas in answer.items():
                found = triples.get(name)
                if found is None:
                    found = triples[sys.intern(name)] = array("q")
                for broker, size in replicas.items():
                    found.extend((number, broker, size))
        old = before._topics if isinstance(before, SizeColumns) else {}
        old_digests = before._digests if isinstance(before, SizeColumns) else {}
        topics: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]] = {}
        digests: dict[str, bytes] = {}
        count = 0
        for name, flat in triples.items():
            digest = digests[name] = hashlib.blake2b(flat, digest_size=16).digest()
            kept = old.get(name)
            if kept is not None and old_digests.get(name) == digest:
                # (answered as before, in the same order: the same arrays; most topics of an idle cluster)
                topics[name] = kept
                count += int(np.count_nonzero(kept[0][:, 0] >= 0))
                continue
            rows = np.frombuffer(flat, np.int64).reshape(-1, 3)
            rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))]  # by partition, then broker
            numbers = rows[:, 0]
            if numbers[0] < 0:
                raise ValueError(f"partition {int(numbers[0])} of {name!r}")
            per = np.bincount(numbers)
            first = np.concatenate(([0], np.cumsum(per)[:-1]))
            place = np.arange(len(rows)) - first[numbers]  # (a replica's place in its partition's row)
            brokers = np.full((len(per), int(per.max())), -1, np.int32)
            sizes = np.zeros(brokers.shape, np.int64)
            brokers[numbers, place] = rows[:, 1]
            sizes[numbers, place] = rows[:, 2]
            count += int(np.count_nonzero(per))
            if kept is not None and np.array_equal(kept[0], brokers) and np.array_equal(kept[1], sizes):
                topics[name] = kept
            else:
                topics[name] = (brokers, sizes)
        return cls(topics, count, digests)

    def _row(self, key: TopicPartition) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]] | None:
        found = self._topics.get(key[0])
        number = key[1]
        if found is None or not 0 <= number < len(found[0]) or found[0][number, 0] < 0:
            return None
        return found[0][number], found[1][number]

    def get(self, key: TopicPartition, default: Any = None) -> Any:  # type: ignore[override]
        row = self._row(key)
        return default if row is None else _mapping(*row)

    def largest(self, key: TopicPartition) -> int | None:
        """The largest replica's size (what analytics counts as the partition's)."""
        row = self._row(key)
        return None if row is None else int(row[1][row[0] >= 0].max())

    def __getitem__(self, key: TopicPartition) -> ReplicaSizes:
        row = self._row(key)
        if row is None:
            raise KeyError(key)
        return _mapping(*row)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and self._row(key) is not None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[TopicPartition]:
        for name, (brokers, _sizes) in self._topics.items():
            for number in np.flatnonzero(brokers[:, 0] >= 0).tolist():
                yield (name, number)

    def __len__(self) -> int:
        return self._count

    def changed_keys(self, before: Mapping[TopicPartition, Mapping[str, int]] | None) -> list[TopicPartition]:
        """The partitions whose sizes differ from `before`'s (or are not in it): a topic whose arrays
        are the ones before is passed over."""
        return [(name, n) for name, (_b, _s, numbers) in self._changed(before) for n in numbers]

    def changed_packed(self, before: Mapping[TopicPartition, Mapping[str, int]] | None) -> PackedSizes:
        """The sizes of the partitions `changed_keys` gives, by topic as arrays (`unpack_sizes`):
        what a pass sends the watcher. (A pickle keeps every object it wrote until its end: as a mapping or a tuple per
        partition, the first pass's 300,000 were 60 to 120 MB of that process's peak.)"""
        return {name: (np.array(numbers, np.int32), brokers[numbers], sizes[numbers])
                for name, (brokers, sizes, numbers) in self._changed(before)}

    def _changed(self, before: Mapping[TopicPartition, Mapping[str, int]] | None) -> Iterator[
            tuple[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], list[int]]]]:
        """Each topic with changed partitions: its arrays and the numbers of those partitions."""
        old = before._topics if isinstance(before, SizeColumns) else None
        for name, (brokers, sizes) in self._topics.items():
            if old is not None:
                kept = old.get(name)
                if kept is not None and kept[0] is brokers and kept[1] is sizes:
                    continue
                present = brokers[:, 0] >= 0
                if kept is not None:
                    n, width = min(len(kept[0]), len(brokers)), max(kept[0].shape[1], brokers.shape[1])
                    same = np.zeros(len(brokers), np.bool_)
                    same[:n] = (_wide(kept[0][:n], width, -1) == _wide(brokers[:n], width, -1)).all(axis=1) & \
                        (_wide(kept[1][:n], width, 0) == _wide(sizes[:n], width, 0)).all(axis=1)
                    present &= ~same
                numbers = np.flatnonzero(present).tolist()
            else:
                numbers = np.flatnonzero(brokers[:, 0] >= 0).tolist()
                if before:  # (a plain mapping: compared partition by partition)
                    numbers = [n for n in numbers if before.get((name, n)) != _mapping(brokers[n], sizes[n])]
            if numbers:
                yield name, (brokers, sizes, numbers)


def _wide(rows: npt.NDArray[Any], width: int, fill: int) -> npt.NDArray[Any]:
    """`rows` with `fill` columns added up to `width` (a topic whose partitions' replica count changed)."""
    if rows.shape[1] == width:
        return rows
    return np.concatenate([rows, np.full((len(rows), width - rows.shape[1]), fill, rows.dtype)], axis=1)


# Changed partitions as a pass sends them, by topic: their numbers and values (offsets), or their
# numbers and rows of SizeColumns (sizes). A few arrays per topic, not an object per partition.
PackedOffsets = dict[str, tuple["array[int]", "array[int]"]]
PackedSizes = dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int64]]]


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


_SIZE_ROWS: dict[int, np.dtype[Any]] = {}  # (ReplicaSizes' bytes as rows of a record array, by replica count)


def unpack_sizes(packed: PackedSizes) -> dict[TopicPartition, ReplicaSizes]:
    """Each partition's ReplicaSizes from packed rows. The rows that hold every replica (all but a
    partition whose replica count changed) are written as ReplicaSizes' bytes for the whole topic at
    once, each partition's then one slice of them: made one by one (the broker keys' tuple once
    per replica set of a topic), a size pass of 300,000 partitions cost the watcher's process 0.15
    to 0.45 CPU-seconds, taken from its metadata cycle."""
    out: dict[TopicPartition, ReplicaSizes] = {}
    for name, (numbers, brokers, sizes) in packed.items():
        width = brokers.shape[1] if brokers.ndim == 2 else 0
        if 0 < width <= 255 and len(brokers):
            if int(brokers.min()) >= 0:
                whole, rest = None, None
            else:
                whole = (brokers >= 0).all(axis=1)
                rest = ~whole
            if whole is None or whole.any():
                dtype = _SIZE_ROWS.get(width)
                if dtype is None:
                    dtype = _SIZE_ROWS[width] = np.dtype([("n", "u1"), ("ids", "=i4", (width,)), ("sizes", "=i8", (width,))])
                rows = np.empty(len(brokers) if whole is None else int(whole.sum()), dtype)
                rows["n"] = width
                rows["ids"] = brokers if whole is None else brokers[whole]
                rows["sizes"] = sizes if whole is None else sizes[whole]
                raw, step = rows.tobytes(), dtype.itemsize  # (each row as replica_sizes_of makes it: count, ids, sizes)
                at = 0
                for number in (numbers if whole is None else np.asarray(numbers)[whole]).tolist():
                    out[(name, number)] = ReplicaSizes(raw[at:at + step])
                    at += step
            if rest is None:
                continue
            numbers, brokers, sizes = np.asarray(numbers)[rest], brokers[rest], sizes[rest]
        keys: dict[tuple[int, ...], tuple[str, ...]] = {}
        held = np.ascontiguousarray(sizes, np.int64)  # (each row's first n sizes are the bytes a ReplicaSizes keeps)
        for i, (number, row) in enumerate(zip(numbers.tolist(), brokers.tolist(), strict=True)):
            n = len(row) - row.count(-1)
            ids = tuple(row[:n])
            found = keys.get(ids)
            if found is None:
                found = keys[ids] = tuple([broker_key(b) for b in ids])
            out[(name, number)] = replica_sizes_of(found, held[i, :n].tobytes())
    return out


def _mapping(brokers: npt.NDArray[np.int32], sizes: npt.NDArray[np.int64]) -> ReplicaSizes:
    n = int(np.count_nonzero(brokers >= 0))  # (the replicas come first in a row)
    return replica_sizes_of(tuple([broker_key(b) for b in brokers[:n].tolist()]), sizes[:n].astype(np.int64).tobytes())
