"""Replica sizes as the sampling process reads and sends them (SizeColumns, PackedSizes), and their
unpacking into the snapshot's ReplicaSizes in the watcher's process (unpack_sizes).
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from console.gateway.types import TopicPartition
from console.snapshots.encoding import ReplicaSizes, broker_key, replica_sizes_of


class SizeColumns(Mapping[TopicPartition, Mapping[str, int]]):
    """(topic, partition) -> each replica's log size as the snapshot keeps it ({broker key: bytes}
    in broker order: snapshot.replica_sizes), held by the sampling process as two arrays per topic,
    a row per partition number: the replicas' brokers (int32, in order, -1 after the last) and their
    sizes (int64), a fraction of what a dict per partition costs. A partition's mapping is made when asked for (`get`), and a pass sends the
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

    def replicas_on(self, brokers: Collection[int]) -> dict[TopicPartition, dict[int, int]]:
        """The sizes of the replicas on these brokers, as the gateway answers them: what a read
        carries over for brokers that did not answer it (Sampler._read_sizes)."""
        wanted = np.array(sorted(brokers), np.int32)
        out: dict[TopicPartition, dict[int, int]] = {}
        for name, (ids, sizes) in self._topics.items():
            hits = np.isin(ids, wanted)
            if not hits.any():
                continue
            for number, place in zip(*np.nonzero(hits), strict=True):
                out.setdefault((name, int(number)), {})[int(ids[number, place])] = int(sizes[number, place])
        return out

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
        what a pass sends the watcher, as arrays because a pickle keeps every object it wrote
        until its end."""
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


# Changed partitions' sizes as a pass sends them, by topic: their numbers and rows of SizeColumns,
# a few arrays per topic rather than an object per partition.
PackedSizes = dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int64]]]


_SIZE_ROWS: dict[int, np.dtype[Any]] = {}  # (ReplicaSizes' bytes as rows of a record array, by replica count)


def unpack_sizes(packed: PackedSizes) -> dict[TopicPartition, ReplicaSizes]:
    """Each partition's ReplicaSizes from packed rows. The rows that hold every replica (all but a
    partition whose replica count changed) are written as ReplicaSizes' bytes for the whole topic at
    once, each partition's then one slice of them, because made one by one they took the
    watcher's process time its metadata cycle needs; the rest are made one by one (the broker
    keys' tuple once per replica set of a topic)."""
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
