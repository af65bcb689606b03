"""Compact encodings the watcher's processes keep the snapshot's largest parts in: a partition's
replica sizes (ReplicaSizes), a group's committed offsets (Commits over shared GroupPartitions),
broker keys shared by every partition, and JSON bytes copied to their size (`kept_json`).

Each equals the plain form the snapshot's JSON holds (a dict of its items) and is written as that."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from operator import itemgetter
from typing import Any

import orjson


class GroupPartitions:
    """The partitions a group commits on, in order: their "topic:partition" keys, their (topic,
    partition) tuples, and what reads their values from a mapping keyed by those tuples in one C
    call. One object per set of partitions, shared by every group that commits on that set (and by
    its state across passes), so the sampling process holds each set once rather than several
    copies per group (Sampler.partitions_of)."""

    __slots__ = ("_index", "_runs", "getter", "keys", "tps")

    def __init__(self, keys: tuple[str, ...], tps: tuple[tuple[str, int], ...]) -> None:
        self.keys, self.tps = keys, tps
        self.getter: Callable[[Mapping[tuple[str, int], Any]], Any] | None = itemgetter(*tps) if tps else None
        self._index: dict[str, int] | None = None  # (made when a key is looked up: seldom)
        self._runs: tuple[tuple[str, int, int] | tuple[str, tuple[int, ...]], ...] | None = None

    @property
    def runs(self) -> tuple[tuple[str, int, int] | tuple[str, tuple[int, ...]], ...]:
        """The partitions by topic, in order: (topic, first number, how many) for numbers that follow
        each other (a group reading a whole topic), else (topic, the numbers). What reads their
        values from a pass's offsets a topic's array at a time (consumers_app.group_entries)."""
        if self._runs is None:
            runs: list[tuple[str, int, int] | tuple[str, tuple[int, ...]]] = []
            start, tps = 0, self.tps
            for i in range(1, len(tps) + 1):
                if i == len(tps) or tps[i][0] != tps[start][0]:
                    numbers = tuple([tp[1] for tp in tps[start:i]])
                    follow = numbers == tuple(range(numbers[0], numbers[0] + len(numbers)))
                    runs.append((tps[start][0], numbers[0], len(numbers)) if follow else (tps[start][0], numbers))
                    start = i
            self._runs = tuple(runs)
        return self._runs

    def index(self, key: str) -> int | None:
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.keys)}
        return self._index.get(key)


class Commits(Mapping[str, int]):
    """A group's committed offsets as the sampling process keeps them: "topic:partition" ->
    offset, as its shared GroupPartitions and the offsets in the same order, 8 bytes each (an
    array): a dict per group, with an int object per offset, would hold the same keys again for
    every group and dominate the sampling process's memory. Serialised as the object of its items
    (model.json_default)."""

    __slots__ = ("committed", "partitions")

    def __init__(self, partitions: GroupPartitions, committed: array[int]) -> None:
        self.partitions, self.committed = partitions, committed

    def same_as(self, found: Any) -> bool:
        """Whether `found` (what `partitions.getter` read from a mapping: a tuple, or one value for
        one partition) holds these offsets."""
        if len(self.committed) == 1:
            return bool(found == self.committed[0])
        try:
            return array("q", found) == self.committed
        except (TypeError, OverflowError):
            return False

    def __getitem__(self, key: str) -> int:
        i = self.partitions.index(key)
        if i is None:
            raise KeyError(key)
        return self.committed[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self.partitions.keys)

    def __len__(self) -> int:
        return len(self.committed)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.partitions.index(key) is not None

    def values(self) -> array[int]:  # type: ignore[override]
        return self.committed

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        return zip(self.partitions.keys, self.committed, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Commits):
            return self.committed == other.committed and (self.partitions is other.partitions
                                                          or self.partitions.keys == other.partitions.keys)
        return Mapping.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Commits({dict(self.items())!r})"



class ReplicaSizes(bytes, Mapping[str, int]):
    """One partition's log size per replica, broker key -> bytes in broker order, as the watcher's
    processes keep it: one bytes object holding the number of replicas (1 byte), their broker ids
    (4 bytes each) and their sizes (8 bytes each, native int64s); the broker keys are one tuple
    shared by every partition on the same replicas (`brokers`). One object a partition, with no
    dict or int objects, because the watcher keeps one for every partition of the cluster. Equal
    ReplicaSizes are equal bytes. Serialised as the object of its items (model.json_default)."""

    __slots__ = ()

    def _count(self) -> int:
        return bytes.__getitem__(self, 0)

    @property
    def brokers(self) -> tuple[str, ...]:
        """The broker keys, in broker order (the one tuple of them: `replica_sizes_of`)."""
        n = self._count()
        ids = bytes.__getitem__(self, slice(1, 1 + 4 * n))
        found = _KEYS_OF_IDS.get(ids)
        if found is None:
            found = _shared_keys(tuple(broker_key(b) for b in struct.unpack_from(f"={n}i", self, 1)))[0]
        return found

    @property
    def sizes(self) -> bytes:
        """The sizes, 8 bytes each (native int64s), in broker order."""
        n = self._count()
        return bytes.__getitem__(self, slice(1 + 4 * n, None))

    def __getitem__(self, key: str) -> int:  # type: ignore[override]
        try:
            i = self.brokers.index(key)
        except ValueError:
            raise KeyError(key) from None
        return int(_INT64.unpack_from(self, 1 + 4 * self._count() + 8 * i)[0])

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        """As Mapping.get, without its frames and exception: applying a sampling pass asks this of
        every partition whose size was read."""
        n = bytes.__getitem__(self, 0)
        keys = _KEYS_OF_IDS.get(bytes.__getitem__(self, slice(1, 1 + 4 * n))) or self.brokers
        if key not in keys:
            return default
        return _INT64.unpack_from(self, 1 + 4 * n + 8 * keys.index(key))[0]

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        return iter(self.brokers)

    def __len__(self) -> int:
        return self._count()

    def __contains__(self, key: object) -> bool:  # type: ignore[override]
        return key in self.brokers

    def values(self) -> array[int]:  # type: ignore[override]
        held = array("q")
        held.frombytes(self.sizes)
        return held

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        return zip(self.brokers, self.values(), strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReplicaSizes):
            return bytes.__eq__(self, other)
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (replica_sizes_of, (self.brokers, self.sizes))

    def __repr__(self) -> str:
        return f"ReplicaSizes({dict(self.items())!r})"

    __str__ = __repr__


_INT64 = struct.Struct("=q")  # (an array("q")'s items: native order)
# Each replica set's broker keys, once (as given, and as their ids' bytes): the one tuple of keys and
# the head of the ReplicaSizes of that set (its count and ids).
_SIZE_BROKERS: dict[tuple[str, ...], tuple[tuple[str, ...], bytes]] = {}
_KEYS_OF_IDS: dict[bytes, tuple[str, ...]] = {}
SIZE_BROKERS_MAX = 100_000  # (replica sets come and go with reassignments: bounded)


def _shared_keys(brokers: tuple[str, ...]) -> tuple[tuple[str, ...], bytes]:
    found = _SIZE_BROKERS.get(brokers)
    if found is None:
        if len(_SIZE_BROKERS) >= SIZE_BROKERS_MAX:
            _SIZE_BROKERS.clear()
            _KEYS_OF_IDS.clear()
        keys = tuple([broker_key(int(b)) for b in brokers])
        if len(keys) > 255:
            raise ValueError(f"{len(keys)} replicas: at most 255")
        ids = array("i", [int(k) for k in keys]).tobytes()
        keys = _KEYS_OF_IDS.setdefault(ids, keys)
        found = _SIZE_BROKERS[brokers] = _SIZE_BROKERS[keys] = (keys, bytes([len(keys)]) + ids)
    return found


def replica_sizes_of(brokers: tuple[str, ...], sizes: Iterable[int] | bytes) -> ReplicaSizes:
    """A ReplicaSizes of these broker keys (in broker order) and sizes (or their int64s' bytes), the
    keys' tuple shared."""
    keys, head = _shared_keys(brokers)
    if len(keys) * 8 != len(held := sizes if isinstance(sizes, bytes) else array("q", sizes).tobytes()):
        raise ValueError(f"{len(keys)} brokers but {len(held) // 8} sizes")
    return ReplicaSizes(head + held)


# Each replica set's sizes as JSON with sorted keys (CONTENT_OPTIONS): by the ReplicaSizes' head (its
# count and ids), the text with a %d per size in the keys' order, what reads the sizes, where they
# start, and how to put them in that order (None: broker order is already the keys').
_SIZES_JSON: dict[bytes, tuple[bytes, struct.Struct, int, Callable[[tuple[int, ...]], tuple[int, ...]] | None]] = {}


def _sizes_json_of(head: bytes, sizes: ReplicaSizes) -> tuple[bytes, struct.Struct, int, Callable[[tuple[int, ...]], tuple[int, ...]] | None]:
    if len(_SIZES_JSON) >= SIZE_BROKERS_MAX:
        _SIZES_JSON.clear()
    keys = sizes.brokers
    n = len(keys)
    order = sorted(range(n), key=keys.__getitem__)  # (as orjson sorts an object's keys: by their text)
    text = b"{" + b",".join(b'"%s":%%d' % orjson.dumps(keys[i])[1:-1] for i in order) + b"}"
    pick = None if order == list(range(n)) else (lambda values, o=tuple(order): tuple([values[i] for i in o]))
    found = _SIZES_JSON[head] = (text, struct.Struct(f"={n}q"), len(head), pick)
    return found


def sizes_fragment(obj: ReplicaSizes) -> orjson.Fragment:
    """A partition's ReplicaSizes as its JSON with sorted keys (CONTENT_OPTIONS), made from a text
    kept per replica set, without building the dict of its items: a sampling pass rewrites the
    sizes of most partitions, and the dict would cost more than the rest of a partition's JSON."""
    head = bytes.__getitem__(obj, slice(0, 1 + 4 * bytes.__getitem__(obj, 0)))
    text, sizes, at, pick = _SIZES_JSON.get(head) or _sizes_json_of(head, obj)
    values = sizes.unpack_from(obj, at)
    return orjson.Fragment(text % (values if pick is None else pick(values)))


CONTENT_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS

_BROKER_KEYS: dict[int, str] = {}


def broker_key(broker: int) -> str:
    """A broker id as the snapshot's replica sizes key it: one string per broker, shared, not one
    per partition and replica."""
    key = _BROKER_KEYS.get(broker)
    if key is None:
        key = _BROKER_KEYS[broker] = str(broker)
    return key


def replica_sizes(sizes: Mapping[int, int]) -> dict[str, int]:
    """One partition's log size per replica (as the gateway gives it, by broker id) as a
    PartitionState's JSON holds it: by broker key, in broker order. (The watcher's processes keep
    the same as a ReplicaSizes; this plain form is what they equal.)"""
    return {broker_key(b): n for b, n in sorted(sizes.items())}


def kept_json(obj: Any, option: int = CONTENT_OPTIONS) -> bytes:
    """`orjson.dumps` for bytes that are kept: orjson hands back a bytes object whose allocation is
    several times its length, so what is kept (cached topic and group JSON) is copied to its size."""
    return memoryview(orjson.dumps(obj, option=option)).tobytes()
