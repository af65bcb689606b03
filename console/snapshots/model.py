"""The latest known state of one cluster, as the watcher saw it; pure data, no I/O.

Pages and the API read a Snapshot instead of asking Kafka, so a page costs Kafka nothing.
"""

from __future__ import annotations

import gc
import struct
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from itertools import chain, compress
from operator import is_not, itemgetter
from typing import Any, ClassVar

import lz4.block
import orjson

from console.errors import PartUnreadable


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects that form no cycles:
    at 30,000 partitions it makes parsing a snapshot three to four times faster."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class BrokerState:
    id: int
    host: str
    port: int
    rack: str | None
    up: bool


@dataclass(slots=True)  # (300,000 of them: no per-object attribute storage beyond the fields)
class PartitionState:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    start_offset: int | None = None
    end_offset: int | None = None
    size: int | None = None  # bytes in the leader's log (falls back to the largest replica)
    # broker id (as text) -> bytes (a dict, or the watcher's ReplicaSizes)
    replica_sizes: Mapping[str, int] = field(default_factory=dict)

    @property
    def messages(self) -> int | None:
        if self.start_offset is None or self.end_offset is None:
            return None
        return max(0, self.end_offset - self.start_offset)

    @property
    def offline(self) -> bool:
        return self.leader < 0

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None

    def under_min_isr(self, min_isr: int | None) -> bool:
        return min_isr is not None and len(self.isr) < min_isr

    def with_offsets(self, start_offset: int | None, end_offset: int | None, size: int | None,
                     replica_sizes: Mapping[str, int]) -> PartitionState:
        """A copy with these offsets and sizes, the rest shared: what `dataclasses.replace` makes,
        in a fifth of its time (a sampling pass at 300,000 partitions changes tens of thousands)."""
        return PartitionState(self.partition, self.leader, self.replicas, self.isr, self.offline_replicas,
                              start_offset, end_offset, size, replica_sizes)


@dataclass
class TopicState:
    name: str
    internal: bool
    partitions: list[PartitionState]
    min_isr: int | None = None  # None until the watcher has read the topic's config
    produce_rate: float | None = None  # messages per second between the last two offset samples

    # The tally stored with the topic's part (a StoredTopic's), None when it is to be made (`TopicTally.of`).
    stored_tally: ClassVar[TopicTally | None] = None

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)

    @property
    def size(self) -> int | None:
        sizes = [p.size for p in self.partitions if p.size is not None]
        return sum(sizes) if sizes else None

    @property
    def messages(self) -> int | None:
        counts = [p.messages for p in self.partitions if p.messages is not None]
        return sum(counts) if counts else None

    def counts(self) -> dict[str, int]:
        return {
            "under_replicated": sum(p.under_replicated for p in self.partitions),
            "offline": sum(p.offline for p in self.partitions),
            "under_min_isr": sum(p.under_min_isr(self.min_isr) for p in self.partitions),
        }


    def partition(self, number: int) -> PartitionState | None:
        for p in self.partitions:
            if p.partition == number:
                return p
        return None


@dataclass(frozen=True, slots=True)
class TopicTally:
    """What a topic adds to the cluster's counts and broker rows (Snapshot.counts, broker_rows), and
    what else its row in the topics list says of its partitions (`replication_factor`, `size`,
    `messages`: the topic's own, not summed by `moved`): one walk of its partitions for both."""

    partitions: int
    under_replicated: int
    offline: int
    under_min_isr: int
    led: dict[int, int]  # broker -> partitions it leads
    led_under_replicated: dict[int, int]  # broker -> under-replicated partitions it leads
    hosted: dict[int, int]  # broker -> replicas it hosts
    replication_factor: int = 0  # (as TopicState.replication_factor, .size, .messages)
    size: int | None = None
    messages: int | None = None

    @classmethod
    def of(cls, topic: TopicState) -> TopicTally:
        """One walk of the partitions, each property of PartitionState and TopicState written out
        (at 300,000 partitions a web process tallies about 3,000 changed topics a second: the walks
        of the overview's tally and the topics list's row took 80 us a topic, this one 32). A topic
        read from the store has its tally already (StoredTopic: the watcher's, stored with its part)."""
        stored = topic.stored_tally
        if stored is not None:
            return stored
        urp = offline = under_min = rf = 0
        size = messages = None
        min_isr = topic.min_isr
        led: dict[int, int] = {}
        led_urp: dict[int, int] = {}
        hosted: dict[int, int] = {}
        for p in topic.partitions:
            replicas, in_sync, leader = p.replicas, len(p.isr), p.leader
            if in_sync < len(replicas):  # (under_replicated)
                urp += 1
                led_urp[leader] = led_urp.get(leader, 0) + 1
            if leader < 0:  # (offline)
                offline += 1
            if min_isr is not None and in_sync < min_isr:  # (under_min_isr)
                under_min += 1
            led[leader] = led.get(leader, 0) + 1
            if len(replicas) > rf:
                rf = len(replicas)
            for r in replicas:
                hosted[r] = hosted.get(r, 0) + 1
            if p.size is not None:
                size = p.size + (size or 0)
            if p.start_offset is not None and p.end_offset is not None:  # (messages)
                messages = max(0, p.end_offset - p.start_offset) + (messages or 0)
        return cls(len(topic.partitions), urp, offline, under_min, led, led_urp, hosted, rf, size, messages)

    def changed(self, before: TopicState, after: TopicState, places: Iterable[int]) -> TopicTally | None:
        """`TopicTally.of(after)` from this tally of `before`, looking only at the partitions at
        `places` (those not the same objects; partitions added included): the watcher stores a
        changed topic's tally with its part (`topic_summary`). A second's leader and ISR changes touch
        one or two partitions of each of thousands of topics; a sampling pass changes the offsets of
        most partitions of thousands of topics, and a partition whose leader, replicas and ISR are
        as they were moves the size and messages alone. None when this cannot tell (its min ISR
        changed, partitions went, the replication factor may have dropped, a size or offsets went
        unknown): walk them all."""
        old, new = before.partitions, after.partitions
        min_isr = after.min_isr
        if min_isr != before.min_isr or len(new) < len(old):
            return None
        rf, size, messages = self.replication_factor, self.size, self.messages
        moves: list[tuple[PartitionState | None, PartitionState]] = []  # (each partition as it was, None when added, and as it is)
        for i in places:
            q = new[i]
            if i < len(old):
                p = old[i]
                if p.size is not None:
                    if q.size is None:
                        return None
                    size = (size or 0) - p.size
                if p.start_offset is not None and p.end_offset is not None:
                    if q.start_offset is None or q.end_offset is None:
                        return None
                    messages = (messages or 0) - max(0, p.end_offset - p.start_offset)
                if p.leader != q.leader or p.replicas != q.replicas or p.isr != q.isr:
                    if len(p.replicas) == rf > len(q.replicas):
                        return None
                    moves.append((p, q))
            else:
                moves.append((None, q))
            if q.size is not None:
                size = q.size + (size or 0)
            if q.start_offset is not None and q.end_offset is not None:
                messages = max(0, q.end_offset - q.start_offset) + (messages or 0)
        if not moves:  # (offsets alone: the counts and the brokers' dicts as they were, shared: no tally changes its own)
            return TopicTally(len(new), self.under_replicated, self.offline, self.under_min_isr, self.led,
                              self.led_under_replicated, self.hosted, rf, size, messages)  # (`replace`, in a fifth of its time)
        urp, offline, under_min = self.under_replicated, self.offline, self.under_min_isr
        # A dict is copied when a move first changes it, else shared: a leader moved or an ISR
        # changed leaves the replicas each broker hosts as they were (most moves, at scale).
        led, led_urp, hosted = self.led, self.led_under_replicated, self.hosted
        for was, q in moves:
            replicas, leader = q.replicas, q.leader
            is_urp = len(q.isr) < len(replicas)
            if len(replicas) > rf:
                rf = len(replicas)
            if was is None:
                was_urp, was_leader, was_replicas, was_offline, was_under = False, None, None, False, False
            else:
                was_urp, was_leader, was_replicas = len(was.isr) < len(was.replicas), was.leader, was.replicas
                was_offline, was_under = was.leader < 0, min_isr is not None and len(was.isr) < min_isr
            urp += is_urp - was_urp
            offline += (leader < 0) - was_offline
            under_min += (min_isr is not None and len(q.isr) < min_isr) - was_under
            if was_urp != is_urp or (is_urp and was_leader != leader):
                if led_urp is self.led_under_replicated:
                    led_urp = dict(led_urp)
                if was_urp:
                    _add(led_urp, was_leader, -1)  # type: ignore[arg-type] # (a partition that was: its leader)
                if is_urp:
                    _add(led_urp, leader, 1)
            if was_leader != leader:
                if led is self.led:
                    led = dict(led)
                if was_leader is not None:
                    _add(led, was_leader, -1)
                _add(led, leader, 1)
            if was_replicas != replicas:
                if hosted is self.hosted:
                    hosted = dict(hosted)
                for r in was_replicas or ():
                    _add(hosted, r, -1)
                for r in replicas:
                    _add(hosted, r, 1)
        return TopicTally(len(new), urp, offline, under_min, led, led_urp, hosted, rf, size, messages)

    @classmethod
    def total(cls, tallies: Iterable[TopicTally]) -> TopicTally:
        return cls(0, 0, 0, 0, {}, {}, {}).moved(tallies, ())

    def moved(self, added: Iterable[TopicTally], removed: Iterable[TopicTally]) -> TopicTally:
        """This total (a sum of tallies) with `added` counted in and `removed` out, as a new one."""
        counts = [self.partitions, self.under_replicated, self.offline, self.under_min_isr]
        per_broker = (dict(self.led), dict(self.led_under_replicated), dict(self.hosted))
        for sign, tallies in ((1, added), (-1, removed)):
            for t in tallies:
                counts[0] += sign * t.partitions
                counts[1] += sign * t.under_replicated
                counts[2] += sign * t.offline
                counts[3] += sign * t.under_min_isr
                for total, part in zip(per_broker, (t.led, t.led_under_replicated, t.hosted), strict=True):
                    for b, n in part.items():
                        total[b] = total.get(b, 0) + sign * n
        return TopicTally(counts[0], counts[1], counts[2], counts[3], *per_broker)


def _add(counts: dict[int, int], key: int, n: int) -> None:
    """`n` more for `key` (one that comes to 0 is taken out, as a walk would never have put it in)."""
    left = counts.get(key, 0) + n
    if left:
        counts[key] = left
    else:
        del counts[key]


# Per cluster, in this process: each topic's tally and their sum, of the last snapshot tallied (`tallied`).
_TALLIED: dict[str, tuple[dict[str, tuple[TopicState, TopicTally]], TopicTally]] = {}


def tallied(snap: Snapshot) -> tuple[dict[str, tuple[TopicState, TopicTally]], TopicTally]:
    """`snap.tallies`, from what it gave for the last snapshot of the same cluster tallied in this
    process: the overview's counts and broker rows and the topics list's rows share one tally per
    changed topic."""
    held = _TALLIED.get(snap.cluster)
    made, total = _TALLIED[snap.cluster] = snap.tallies(*held) if held is not None else snap.tallies()
    return made, total


@dataclass
class QuorumMember:
    id: int
    log_end_offset: int
    lag: int | None
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass
class QuorumState:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[QuorumMember]
    observers: list[QuorumMember]


@dataclass(slots=True)  # (100,000 members at 50,000 groups: no attribute dict each, 28 MB)
class MemberState:
    member_id: str
    client_id: str
    host: str
    assignment: Sequence[Sequence[Any]]  # [[topic, partition], ...] (tuples from the sampler, lists from JSON)
    instance_id: str | None = None
    epoch: int | None = None  # member epoch (new consumer protocol, share groups)
    target_assignment: Sequence[Sequence[Any]] | None = None  # the assignment the member is moving to (new protocol)


class GroupPartitions:
    """The partitions a group commits on, in order: their "topic:partition" keys, their (topic,
    partition) tuples, and what reads their values from a mapping keyed by those tuples in one C
    call. One object per set of partitions, shared by every group that commits on that set (and by
    its state across passes): the sampling process kept these three, each of 30 entries, three and
    four times over per group at 50,000 groups (Sampler.partitions_of)."""

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
        values from a pass's offsets a topic's array at a time (consumers_app.watching)."""
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
    array). A dict of 30 entries per group was 830 bytes (42 MB at 50,000 groups), next to the same
    keys and offsets again in the evaluation's entries, and each offset an int object of 28 bytes
    (42 MB more). Serialised as the object of its items (`_encode`)."""

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
    shared by every partition on the same replicas (`brokers`). A dict of three entries and its
    three ints were 268 bytes a partition, 77 MB of the watcher at 300,000 partitions; an object
    holding the keys' tuple and a bytes object of the sizes 112 (two objects); this one 88 (7 MB
    less). Equal ReplicaSizes are equal bytes. Serialised as the object of its items (`_encode`)."""

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
        """As Mapping.get, without its frames and exception (applying a sampling pass asks this of
        every partition whose size was read: 144,000 at 300,000 partitions)."""
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


def _encode(obj: Any) -> Any:
    """What orjson cannot write by itself: a group's Commits and a partition's ReplicaSizes, as the
    objects of their items."""
    if isinstance(obj, Commits):
        return dict(zip(obj.partitions.keys, obj.committed, strict=True))
    if isinstance(obj, ReplicaSizes):
        return dict(zip(obj.brokers, obj.values(), strict=True))
    if isinstance(obj, GroupsRead):
        return dict(obj.items())
    if isinstance(obj, StoredTopic):  # (orjson writes a dataclass, not a subclass of one: as the TopicState it equals)
        return TopicState(obj.name, obj.internal, obj.partitions, obj.min_isr, obj.produce_rate)
    json_value = getattr(type(obj), "json_value", None)  # (the apps' compact columns: consumers_app.watching)
    if json_value is not None:
        return json_value(obj)
    raise TypeError(f"{type(obj).__name__} is not serialisable")


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


def _content_encode(obj: Any) -> Any:
    """`_encode` for CONTENT_OPTIONS (sorted keys): a partition's ReplicaSizes as its JSON, made from
    a text kept per replica set (orjson.Fragment), without the dict of its items. A topic whose
    every partition's offsets changed (each sampling pass, at 300,000 partitions) is serialised
    whole: the dict took 1.4 of the 2.3 us a partition's JSON took."""
    if type(obj) is ReplicaSizes:
        head = bytes.__getitem__(obj, slice(0, 1 + 4 * bytes.__getitem__(obj, 0)))
        text, sizes, at, pick = _SIZES_JSON.get(head) or _sizes_json_of(head, obj)
        values = sizes.unpack_from(obj, at)
        return orjson.Fragment(text % (values if pick is None else pick(values)))
    return _encode(obj)


@dataclass(slots=True)  # (50,000 of them in the sampling process)
class GroupState:
    group_id: str
    state: str
    protocol_type: str
    group_type: str
    assignor: str
    members: list[MemberState]
    # "topic:partition" -> committed offset (':' cannot occur in a topic name); for a share group, the
    # share-partition start offset, its equivalent (a dict, or the sampling process's Commits)
    offsets: Mapping[str, int]
    coordinator: int | None = None
    generation: int | None = None  # group epoch (new consumer protocol, share groups); None for classic
    broker_lag: dict[str, int] = field(default_factory=dict)  # "topic:partition" -> lag Kafka reports (share groups)
    error: str | None = None  # why the group could not be described, when it could not
    status: str | None = None  # Burrow-style group status: OK, WARN, ERR, NOTFOUND (None until evaluated)
    time_lag: float | None = None  # seconds, max over partitions
    # The last evaluation of each partition, three lists in the same order (columns, not a dict per
    # partition: at 1.5 million group partitions that was a second of each sample and 300 MB):
    # "topic:partition", lag status (lagstatus.py), time lag in seconds (None when unknown).
    lag_keys: Sequence[str] = field(default_factory=list)  # (the sampling process's: its GroupPartitions' keys)
    lag_status: Sequence[str] = field(default_factory=list)  # (the sampling process's: compact, see `_encode`)
    lag_seconds: Sequence[float | None] = field(default_factory=list)

    def lag_of(self) -> dict[str, dict[str, Any]]:
        """"topic:partition" -> {"status", "time_lag"} of the last evaluation."""
        return {key: {"status": status, "time_lag": seconds}
                for key, status, seconds in zip(self.lag_keys, self.lag_status, self.lag_seconds, strict=True)}

    def topics(self) -> list[str]:
        names = {key.rpartition(":")[0] for key in self.offsets}
        names |= {a[0] for m in self.members for a in m.assignment}
        return sorted(names)


class HeldGroup:
    """A group's stored part and, once something asked for it, its GroupState (`GroupsRead`)."""

    __slots__ = ("raw", "value")

    def __init__(self, raw: bytes, value: GroupState | None = None) -> None:
        self.raw = raw
        self.value = value


class GroupsRead(Mapping[str, GroupState]):
    """A snapshot's groups as a reading process (web, Celery) holds them: each group's stored part,
    parsed into its GroupState when something first asks for that group. At 50,000 groups each of
    the sampling process's passes changes nearly every group, within four or five versions: parsing
    every changed group took 0.3 to 0.7 s of each of those versions' reads in a web process (21 us a
    group), before any page was redrawn, though the live pages but the groups list ask for no group
    and that one by default for the fifty it shows. A group the next version did not change keeps
    its holder (`held`), parsed or not, so it is parsed once whatever number of versions hold it. In
    the order the parts were given (the store gives them in name order)."""

    __slots__ = ("_held",)

    def __init__(self, held: dict[str, HeldGroup]) -> None:
        self._held = held

    @classmethod
    def of(cls, groups: Mapping[str, GroupState]) -> GroupsRead:
        """Groups already built (their parts made from them)."""
        if isinstance(groups, GroupsRead):
            return groups
        return cls({gid: HeldGroup(group_part(g), g) for gid, g in groups.items()})

    def held(self) -> dict[str, HeldGroup]:
        """Each group's holder (shared with the versions that keep it: not to be changed)."""
        return self._held

    def __getitem__(self, gid: str) -> GroupState:
        held = self._held[gid]
        value = held.value
        if value is None:  # (two threads may both parse it: either object will do)
            try:
                value = held.value = Snapshot.group_from_json(held.raw)
            except (ValueError, TypeError, KeyError, zlib.error) as exc:  # (orjson's decode error is a ValueError)
                raise PartUnreadable(f"The stored part of consumer group '{gid[:200]}' cannot be read ({exc}); "
                                     "the watcher writes the snapshot again when it restarts.") from exc
        return value

    def __contains__(self, gid: object) -> bool:
        return gid in self._held

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def __repr__(self) -> str:
        return f"GroupsRead({len(self._held)} groups)"


CONTENT_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS

_BROKER_KEYS: dict[int, str] = {}


def broker_key(broker: int) -> str:
    """A broker id as the snapshot's replica sizes key it: one string per broker, not one per
    partition and replica (900,000 of them at 300,000 partitions)."""
    key = _BROKER_KEYS.get(broker)
    if key is None:
        key = _BROKER_KEYS[broker] = str(broker)
    return key


def replica_sizes(sizes: Mapping[int, int]) -> dict[str, int]:
    """One partition's log size per replica (as the gateway gives it, by broker id) as a
    PartitionState's JSON holds it: by broker key, in broker order. (The watcher's processes keep
    the same as a ReplicaSizes, made by columns.SizeColumns; this plain form is what they equal.)"""
    return {broker_key(b): n for b, n in sorted(sizes.items())}


def kept_json(obj: Any, option: int = CONTENT_OPTIONS) -> bytes:
    """`orjson.dumps` for bytes that are kept: orjson hands back a bytes object whose allocation is
    about ten times its length (3 KB of JSON hold 32 KB), so what is kept is copied to its size.
    At 300,000 partitions the cached topic and group JSON held gigabytes that way."""
    return memoryview(orjson.dumps(obj, option=option)).tobytes()


# zlib's preset dictionary for a group's part: the field names and the common values of a group's
# JSON, which a part of a few hundred bytes otherwise spells out once each (the most frequent last:
# nearest). Never changed once parts are stored with it: a part names its dictionary (zlib's DICTID,
# its Adler-32), and a new one is added to GROUP_DICTIONARIES, not put in this one's place.
GROUP_DICTIONARY = (
    b'"instance_id":null,"epoch":null,"target_assignment":null,"coordinator":,"generation":null,'
    b'"broker_lag":{},"error":null,"PreparingRebalance","CompletingRebalance","Empty","Dead","share",'
    b'"cooperative-sticky","sticky","roundrobin","uniform","consumer-","REWIND","STALL","STOP","ERR",'
    b'"WARN",{"group_id":"","state":"Stable","protocol_type":"consumer","group_type":"classic",'
    b'"assignor":"range","members":[{"member_id":"","client_id":"","host":"/","assignment":[["",0],["",1]]'
    b'}],"offsets":{"":0},"status":"OK","time_lag":0.0,"lag_keys":["",""],"lag_status":["OK","OK"],'
    b'"lag_seconds":[0.0,null,0.0]}')
GROUP_DICTIONARIES = {zlib.adler32(GROUP_DICTIONARY): GROUP_DICTIONARY}
_FDICT = 0x20  # (zlib's header: a preset dictionary's Adler-32 follows the first two bytes)


def group_part(g: GroupState) -> bytes:
    """A group as its stored part: its JSON, compressed (zlib's fastest level, with
    GROUP_DICTIONARY). The watcher holds every group's part to store the next version's changes
    against, and the sampling process sends them: at 50,000 groups of 30 partitions their JSON was
    150 MB in the watcher, twice over while a pass renewed them; compressed it is a quarter of that
    (about 20 us a group to make), and with the dictionary a fifth less again. Redis keeps them so
    too. `Snapshot.group_from_json` reads every form (JSON starts with "{", zlib with "x"; a part
    compressed before the dictionary has none)."""
    packer = zlib.compressobj(1, zdict=GROUP_DICTIONARY)
    return packer.compress(orjson.dumps(g, default=_encode, option=CONTENT_OPTIONS)) + packer.flush()


def _inflate(raw: bytes) -> bytes:
    """A zlib part's JSON, with the preset dictionary its header names (when it names one)."""
    if len(raw) < 6 or not raw[1] & _FDICT:
        return zlib.decompress(raw)
    dictionary = GROUP_DICTIONARIES.get(int.from_bytes(raw[2:6], "big"))
    if dictionary is None:
        raise ValueError("a stored group part was compressed with a dictionary this version does not know")
    unpacker = zlib.decompressobj(zdict=dictionary)
    return unpacker.decompress(raw) + unpacker.flush()


_LZ4 = b"L"  # (what starts a part compressed with LZ4: JSON starts with "{", zlib with "x")
_SUMMARY = b"S"  # (what starts a topic's part with its summary before it: `topic_part`)


def topic_part(raw: bytes, summary: bytes | None = None) -> bytes:
    """A topic's JSON as its stored part: compressed with LZ4 (its block, with its size, after a
    marker byte). The watcher holds every topic's part to serialise the next version of a changed
    topic against (TopicBytes), and web processes hold them to read the next version's changes
    against: at 10,000 topics of 30 partitions 62 MB of JSON, 21 MB so. LZ4 rather than the groups'
    zlib: 5 us a topic to make and 3 to read again (zlib took 67 and 14), and about 3,000 topics
    change every second at 300,000 partitions.

    With `summary` (`topic_summary`: the topic's fields but its partitions, and its tally), the
    part starts with it, uncompressed, after a marker byte and its length: a reading process takes
    the topic from the summary and parses its partitions only when asked for them (StoredTopic)."""
    packed = _LZ4 + lz4.block.compress(raw, store_size=True)
    if summary is None:
        return packed
    return _SUMMARY + len(summary).to_bytes(4, "big") + summary + packed


def part_json(raw: bytes) -> bytes:
    """A stored part's JSON: as it is, or unpacked (a topic's `topic_part`, a group's `group_part`)."""
    head = raw[:1]
    if head == b"{":
        return raw
    if head == _SUMMARY:
        return lz4.block.decompress(memoryview(raw)[6 + int.from_bytes(raw[1:5], "big"):])
    if head == _LZ4:
        return lz4.block.decompress(memoryview(raw)[1:])
    return _inflate(raw)


def _flat(counts: dict[int, int]) -> list[int]:
    return list(chain.from_iterable(counts.items()))


def _pairs(flat: list[int]) -> dict[int, int]:
    each = iter(flat)
    return dict(zip(each, each))  # noqa: B905 - (pairs of one list: the same iterator twice)


def topic_summary(t: TopicState, tally: TopicTally) -> bytes:
    """What a topic's stored part says before its partitions (`topic_part`): its own fields and its
    tally, as one JSON array (StoredTopic.of_part reads it)."""
    return _summary(t, tally)


def _summary(t: TopicState, tally: TopicTally, before: TopicTally | None = None, part: bytes | None = None) -> bytes:
    """`topic_summary`; the JSON of those of the tally's three brokers' dicts that are the same
    dicts as `before`'s is copied from the summary `before` was stored with (`part`, the topic's
    part before) rather than written again: TopicTally.changed shares the dicts a change leaves as
    they were (all three when offsets alone moved, the hosted replicas when a leader moved), and
    writing them was most of a summary's time."""
    dicts = (tally.led, tally.led_under_replicated, tally.hosted)
    made: list[bytes | None] = [None, None, None]
    if before is not None and part is not None and part[:1] == _SUMMARY \
            and (dicts[0] is before.led or dicts[1] is before.led_under_replicated or dicts[2] is before.hosted):
        # (the summary ends with the three dicts' flat lists of numbers: the last three "[")
        end = 5 + int.from_bytes(part[1:5], "big") - 1
        for i, old in ((2, before.hosted), (1, before.led_under_replicated), (0, before.led)):
            start = part.rindex(b"[", 5, end)
            if dicts[i] is old:
                made[i] = part[start:end]
            end = start - 1
    head = orjson.dumps([t.name, t.internal, t.min_isr, t.produce_rate, tally.partitions, tally.under_replicated,
                         tally.offline, tally.under_min_isr, tally.replication_factor, tally.size, tally.messages])
    made = [m if m is not None else orjson.dumps(_flat(d)) for m, d in zip(made, dicts, strict=True)]
    return b"".join((head[:-1], b",", made[0], b",", made[1], b",", made[2], b"]"))  # type: ignore[arg-type]


class _StoredPartitions:
    """A StoredTopic's partitions: parsed from its part when first asked for, then kept by the topic
    (in its __dict__, which this descriptor without __set__ gives way to)."""

    def __get__(self, obj: StoredTopic | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            parts = [_partition(p) for p in orjson.loads(part_json(obj.part))["partitions"]]
        except (ValueError, TypeError, KeyError, IndexError, lz4.block.LZ4BlockError) as exc:  # (orjson's decode error is a ValueError)
            raise PartUnreadable(f"The stored part of topic '{obj.name[:200]}' cannot be read ({exc}); "
                                 "the watcher writes the snapshot again when it restarts.") from exc
        obj.__dict__["partitions"] = parts  # (two threads may both parse it: either list will do)
        return parts


class StoredTopic(TopicState):
    """A topic as a reading process (web, Celery) takes it from the store: its fields and its tally
    from the summary the watcher stored with its part (`topic_summary`), its partitions parsed when
    first asked for. At 300,000 partitions about 2,600 topics change a second; the overview and the
    topics list need only their tallies, and parsing each one's partitions (75 us) and walking them
    (32 us) was most of a web process's work. It equals the TopicState it was stored from."""

    partitions = _StoredPartitions()  # type: ignore[assignment]
    part: bytes = b""  # (its stored part; one made by `replace` holds its partitions instead)

    @classmethod
    def of_part(cls, raw: bytes) -> StoredTopic:
        """The topic of a part with its summary (ValueError when the summary cannot be read: the
        store's reader takes the snapshot as unreadable, StoreUnreadable)."""
        end = 5 + int.from_bytes(raw[1:5], "big")
        s = orjson.loads(memoryview(raw)[5:end])
        t = cls.__new__(cls)
        try:
            t.__dict__.update(name=s[0], internal=s[1], min_isr=s[2], produce_rate=s[3], part=raw,
                              stored_tally=TopicTally(s[4], s[5], s[6], s[7], _pairs(s[11]), _pairs(s[12]), _pairs(s[13]),
                                                      s[8], s[9], s[10]))
        except (TypeError, KeyError, IndexError) as exc:
            raise ValueError(f"a topic's stored summary is not one this version writes ({exc})") from exc
        return t

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TopicState):
            return all(getattr(self, name) == getattr(other, name) for name in _TOPIC_FIELDS)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


# (the content without its topics and groups, each topic's JSON under "t:<name>" and each group's under "g:<id>")
ContentParts = tuple[bytes, dict[str, bytes]]
TOPIC_PART, GROUP_PART = "t:", "g:"
# In the header: stored in parts, groups apart, topics with their summaries (`topic_part`); a header
# without it, or with an earlier one, is from an older version (read as none until the watcher rewrites it).
PARTS_FORMAT = 3


class TopicBytes:
    """Each topic's stored part (its JSON, compressed: `topic_part`), kept while the same TopicState
    object is in the snapshot.

    The watcher never changes a topic object once it is in a snapshot (a topic whose offsets
    changed is copied first), so the object's identity says its JSON is still what it was: a cycle
    serialises only the topics it built or changed. Nor does it change a partition's state once in
    a snapshot (a changed partition is a new object): of a changed topic, only the partitions that
    are not the same objects as in its last JSON are serialised, the others' JSON is copied from
    it. At 300,000 partitions a second's changes touch about 3,000 topics but only one or two
    partitions of each; serialising those topics whole took a third of the metadata cycle."""

    def __init__(self) -> None:
        # name -> (the object, its stored part, its marks (a group's; a topic's: its tally, alone),
        # where each partition's JSON starts in it and each one's length)
        self._cache: dict[str, tuple[Any, bytes, tuple[Any, ...], array[int] | None]] = {}
        self.serialised = 0  # objects serialised by the last call
        self.partitions_serialised = 0  # of their partitions, those serialised (not copied)
        # The names (as `each` gave them out) serialised anew or gone since `take_touched`: the parts
        # whose digest can differ from what they were then (the watcher's next content's changes).
        # A cache nobody asks (the groups' in the watcher's process, the topics' when it samples in
        # its own) stops listing past TOUCHED_MAX and says "all" (None) when asked.
        self._touched: list[str] | None = []
        # What the last call was given and gave out (`_each_same_names`): the names and objects in
        # their order, the prefix, and the parts under their prefixed names.
        self._names: list[str] = []
        self._objects: list[Any] = []
        self._prefix = ""
        self._out: dict[str, bytes] = {}

    TOUCHED_MAX = 100_000

    def take_touched(self) -> list[str] | None:
        """The names serialised anew or gone since the last call (each once or more); None when
        more than TOUCHED_MAX were: then every part may have changed."""
        touched, self._touched = self._touched, []
        return touched

    def _touch(self, names: Iterable[str]) -> None:
        touched = self._touched
        if touched is not None:
            touched.extend(names)
            if len(touched) > self.TOUCHED_MAX:
                self._touched = None

    MARKED = False  # whether `_marks` says anything (a topic's: no; identity alone decides)

    @staticmethod
    def _marks(obj: Any) -> tuple[Any, ...]:
        """What, besides the object's identity, says its JSON is unchanged."""
        return ()

    def _entry(self, obj: Any, last: tuple[Any, bytes, tuple[Any, ...], array[int] | None] | None) -> \
            tuple[Any, bytes, tuple[Any, ...], array[int] | None]:
        """A topic's JSON, as `orjson.dumps(topic, option=CONTENT_OPTIONS)` writes it, with where its
        partitions are in it: where the first starts, then each one's length (`last`: the name's
        entry before, whose partitions' JSON is reused for the same partition objects at the same
        places). A run of partitions reused is copied as one slice of the JSON before: a sampling
        pass changes one or two partitions of thousands of topics, and copying them one by one
        cost more than serialising the changed ones."""
        # (orjson writes a dataclass's fields in their order, sorted keys or not: so is the shell)
        shell = orjson.dumps({name: _NO_PARTITIONS if name == "partitions" else getattr(obj, name) for name in _TOPIC_FIELDS})
        cut = shell.index(_PARTITIONS_KEY) + len(_PARTITIONS_KEY) - 1  # (between the brackets)
        head = shell[:cut]
        parts = obj.partitions
        places = array("I", [len(head)])
        pieces: list[bytes] = []
        if last is not None and last[3] is not None:
            old_parts, old_raw, old_places = last[0].partitions, part_json(last[1]), last[3]
            changed = list(compress(range(len(parts)), map(is_not, old_parts, parts)))  # (the places not the same objects)
            changed.extend(range(len(old_parts), len(parts)))  # (partitions added)
            at = old_places[0]  # (where the partition `done` starts in the JSON before)
        else:
            old_raw, old_places, changed, at = b"", array("I"), list(range(len(parts))), 0
        done = 0
        for i in [*changed, len(parts)]:
            if i > done:  # partitions done..i-1 as they were: one slice, their commas with them
                lengths = old_places[done + 1:i + 1]
                size = sum(lengths) + len(lengths) - 1
                pieces.append(old_raw[at:at + size])
                places.extend(lengths)
                at += size + 1
            if i == len(parts):
                break
            raw = orjson.dumps(parts[i], default=_content_encode, option=CONTENT_OPTIONS)
            pieces.append(raw)
            places.append(len(raw))
            if i + 1 < len(old_places):
                at += old_places[i + 1] + 1  # (past its JSON before)
            done = i + 1
        self.partitions_serialised += len(changed)
        # Its tally, from the one kept with its last part when it can tell (TopicTally.changed).
        tally = last[2][0].changed(last[0], obj, changed) if last is not None and last[3] is not None and last[2] else None
        if tally is not None:
            summary = _summary(obj, tally, last[2][0], last[1])  # type: ignore[index]
        else:
            tally = TopicTally.of(obj)
            summary = _summary(obj, tally)
        return obj, topic_part(head + b",".join(pieces) + shell[cut:], summary), (tally,), places

    def each(self, objects: Mapping[str, Any], prefix: str = "") -> dict[str, bytes]:
        """Each object's stored part (a topic's `topic_part`, a group's `group_part`; the same bytes
        object as last time for an object seen then), under `prefix` + its name."""
        if not self.MARKED:
            names = list(objects)
            if names == self._names and prefix == self._prefix:
                return self._each_same_names(names, list(objects.values()))
            self._names, self._objects, self._out = [], [], {}  # (no second hold on the parts replaced below)
        kept: dict[str, tuple[Any, bytes, tuple[Any, ...], array[int] | None]] = {}
        out: dict[str, bytes] = {}
        cache, fresh, marks = self._cache, 0, self._marks if self.MARKED else None
        touched: list[str] = []
        known = len(cache)
        self.partitions_serialised = 0
        for name, t in objects.items():
            hit = cache.get(name)
            # (10,000 topics a cycle, nearly all the same objects: no marks to make and compare for them)
            if hit is None or hit[0] is not t or (marks is not None and not _same_marks(hit[2], marks(t))):
                # (the last JSON let go of as the new one is made: a cycle that changes every topic
                # does not hold both; an exception on the way only costs those topics a new one)
                if hit is None:
                    known += 1  # (a name new to the cache)
                hit = self._entry(t, cache.pop(name, None))
                fresh += 1
                touched.append(prefix + name if prefix else name)
            kept[name] = hit
            out[prefix + name if prefix else name] = hit[1]
        if known != len(kept):  # (names of the cache before that `objects` no longer has)
            touched.extend(prefix + name if prefix else name for name in cache if name not in kept)
        self._touch(touched)
        self._cache, self.serialised = kept, fresh
        if not self.MARKED:
            self._names, self._objects, self._prefix, self._out = names, list(objects.values()), prefix, dict(out)
        return out

    def _each_same_names(self, names: list[str], objects: list[Any]) -> dict[str, bytes]:
        """`each` given the same names in the same order as last time: the objects that are not
        the same ones found by comparing the two lists (in C, not a step per topic in Python: a
        cycle at 300,000 partitions looks at 10,000 topics and changes a few hundred), only those
        serialised, and the parts given out last time copied with theirs put in."""
        cache, out, prefix = self._cache, self._out, self._prefix
        touched: list[str] = []
        self.partitions_serialised = 0
        changed = list(compress(range(len(names)), map(is_not, objects, self._objects)))
        try:
            for i in changed:
                name = names[i]
                key = prefix + name if prefix else name
                # (as `each`: the last JSON let go of as the new one is made; its place in `out` kept)
                out[key] = b""
                hit = cache[name] = self._entry(objects[i], cache.pop(name, None))
                out[key] = hit[1]
                touched.append(key)
                self._objects[i] = objects[i]
        finally:
            self._touch(touched)
        self.serialised = len(changed)
        return dict(out)

    def fragments(self, topics: dict[str, Any]) -> dict[str, orjson.Fragment]:
        return {name: orjson.Fragment(part_json(b)) for name, b in self.each(topics).items()}


_TOPIC_FIELDS = tuple(f.name for f in fields(TopicState))
_NO_PARTITIONS: list[Any] = []
_PARTITIONS_KEY = b'"partitions":[]'


def _same_marks(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


class GroupBytes(TopicBytes):
    """Each group's JSON, kept while the same GroupState object holds the same evaluation. Within
    the watcher's process the evaluation renews a group state's status and lag columns in place
    (new lists each time it judges the group), so those are compared too: by identity first."""

    MARKED = True

    @staticmethod
    def _marks(obj: Any) -> tuple[Any, ...]:
        return (obj.status, obj.time_lag, obj.lag_keys, obj.lag_status, obj.lag_seconds)

    def _entry(self, obj: Any, last: tuple[Any, bytes, tuple[Any, ...], array[int] | None] | None) -> \
            tuple[Any, bytes, tuple[Any, ...], array[int] | None]:
        return obj, group_part(obj), self._marks(obj), None


# What a stored group may hold (a snapshot stored by an earlier version may hold fields no longer kept).
_GROUP_FIELDS = frozenset(f.name for f in fields(GroupState))

@dataclass
class Snapshot:
    cluster: str
    version: int = 0
    taken_at: float | None = None  # when Kafka last answered, seconds since the epoch
    checked_at: float | None = None  # when the watcher last tried
    reachable: bool = False
    error: str | None = None
    cause: str | None = None  # kind of connection failure (console.gateway.causes), when unreachable for want of one
    cluster_id: str | None = None
    controller_id: int | None = None
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    quorum: QuorumState | None = None
    quorum_error: str | None = None
    topics: dict[str, TopicState] = field(default_factory=dict)
    offsets_at: float | None = None
    topic_groups: dict[str, list[str]] = field(default_factory=dict)  # topic -> consumer groups with offsets on it
    # (a dict in the watcher; a reading process's snapshot from the store holds GroupsRead)
    groups: Mapping[str, GroupState] = field(default_factory=dict)
    groups_at: float | None = None

    # Serialisation -----------------------------------------------------------------------------
    # The snapshot is stored in two parts: the content (layout, offsets, groups: large, changes
    # now and then) and the stamp (version, timestamps and the KRaft quorum: small, changes every
    # cycle). Web processes parse the content once per version and the stamp on every read.
    STAMP_FIELDS = ("version", "taken_at", "checked_at", "offsets_at", "groups_at", "quorum", "quorum_error")

    def partition(self, topic: str, number: int) -> PartitionState | None:
        """A topic's partition, None when the topic or the partition is not in this snapshot."""
        t = self.topics.get(topic)
        return t.partition(number) if t is not None else None

    def content_bytes(self, topic_bytes: TopicBytes | None = None) -> bytes:
        """Everything but the stamp, as JSON; equal bytes mean nothing changed. With `topic_bytes`,
        each topic already serialised (the same object as then) is not serialised again."""
        blank = replace(self, version=0, taken_at=None, checked_at=None, offsets_at=None, groups_at=None, quorum=None,
                        quorum_error=None)
        if topic_bytes is not None:
            blank.topics = topic_bytes.fragments(self.topics)  # type: ignore[assignment]
        return orjson.dumps(blank, default=_encode, option=CONTENT_OPTIONS)

    def content_parts(self, topic_bytes: TopicBytes | None = None, group_bytes: GroupBytes | None = None,
                      group_parts: dict[str, bytes] | None = None) -> ContentParts:
        """The content as stored: a header (everything but the stamp, the topics and the groups), and
        each topic's and each group's JSON (what `content_bytes` holds, in parts, so a change
        rewrites only the topics and groups it touched). The caches keep each object's JSON while
        it is the same object. `group_parts`: the groups' JSON as made elsewhere (the sampling
        process), keyed as stored ("g:<id>"), used instead of `groups`: those not stored yet (the
        watcher holds only the digests of the others: store.GroupParts)."""
        blank = replace(self, version=0, taken_at=None, checked_at=None, offsets_at=None, groups_at=None, quorum=None,
                        quorum_error=None, topics={}, groups={})
        header = _with_format(orjson.dumps(blank, option=CONTENT_OPTIONS))
        parts = (topic_bytes if topic_bytes is not None else TopicBytes()).each(self.topics, TOPIC_PART)
        if group_parts is not None:
            parts.update(group_parts)
        elif isinstance(self.groups, GroupsRead):  # (as read: their stored parts)
            parts.update((GROUP_PART + gid, held.raw) for gid, held in self.groups.held().items())
        else:
            parts.update((group_bytes if group_bytes is not None else GroupBytes()).each(self.groups, GROUP_PART))
        return header, parts

    def stamp_bytes(self) -> bytes:
        return orjson.dumps({name: getattr(self, name) for name in self.STAMP_FIELDS})

    def apply_stamp(self, raw: bytes | str) -> None:
        stamp = orjson.loads(raw)
        self.version = stamp["version"]
        self.taken_at = stamp["taken_at"]
        self.checked_at = stamp["checked_at"]
        self.offsets_at = stamp["offsets_at"]
        self.groups_at = stamp["groups_at"]
        self.quorum = _quorum(stamp["quorum"])
        self.quorum_error = stamp["quorum_error"]

    def to_json(self) -> str:
        return orjson.dumps(self, default=_encode, option=orjson.OPT_NON_STR_KEYS).decode()

    def content_key(self) -> bytes:
        return self.content_bytes()

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        with no_gc():
            return cls.from_dict(orjson.loads(text))

    @classmethod
    def from_parts(cls, header: bytes, topics: dict[str, TopicState], groups: Mapping[str, GroupState] | None = None) -> Snapshot:
        """A snapshot from its stored parts: the header parsed, the topics and groups already built
        or held (GroupsRead; each in name order: they are taken as they are)."""
        with no_gc():
            snap = cls.from_dict(orjson.loads(header))
        snap.topics = {**snap.topics, **topics} if snap.topics else topics
        if groups:
            snap.groups = {**snap.groups, **groups} if snap.groups else groups
        return snap

    @staticmethod
    def group_from_json(raw: bytes) -> GroupState:
        """A group from its stored part (`group_part`: compressed), or from its plain JSON."""
        return _group(orjson.loads(part_json(raw)))

    @staticmethod
    def topic_from_json(raw: bytes) -> TopicState:
        """A topic from its stored part (`topic_part`: compressed; with its summary, a StoredTopic),
        or from its plain JSON."""
        if raw[:1] == _SUMMARY:
            return StoredTopic.of_part(raw)
        t = orjson.loads(part_json(raw))
        return TopicState(name=t["name"], internal=t["internal"], partitions=[_partition(p) for p in t["partitions"]],
                          min_isr=t.get("min_isr"), produce_rate=t.get("produce_rate"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Snapshot:
        quorum = data.get("quorum")
        return cls(
            cluster=data["cluster"],
            version=data.get("version", 0),
            taken_at=data.get("taken_at"),
            checked_at=data.get("checked_at"),
            reachable=data.get("reachable", False),
            error=data.get("error"),
            cause=data.get("cause"),
            cluster_id=data.get("cluster_id"),
            controller_id=data.get("controller_id"),
            brokers={int(k): BrokerState(**v) for k, v in data.get("brokers", {}).items()},
            quorum=_quorum(quorum),
            quorum_error=data.get("quorum_error"),
            topics={
                name: TopicState(
                    name=t["name"],
                    internal=t["internal"],
                    partitions=[_partition(p) for p in t["partitions"]],
                    min_isr=t.get("min_isr"),
                    produce_rate=t.get("produce_rate"),
                )
                for name, t in data.get("topics", {}).items()
            },
            offsets_at=data.get("offsets_at"),
            topic_groups=data.get("topic_groups", {}),
            groups={gid: _group(g) for gid, g in data.get("groups", {}).items()},
            groups_at=data.get("groups_at"),
        )

    # Derived views -------------------------------------------------------------------------------
    def live_broker_ids(self) -> set[int]:
        return {b.id for b in self.brokers.values() if b.up}

    def counts(self, total: TopicTally | None = None) -> dict[str, int]:
        """The cluster's totals; `total`: the sum of the topics' `TopicTally`, when the caller keeps it (`tallies`)."""
        total = total if total is not None else TopicTally.total(TopicTally.of(t) for t in self.topics.values())
        return {
            "brokers": len(self.brokers),
            "brokers_up": len(self.live_broker_ids()),
            "topics": len(self.topics),
            "partitions": total.partitions,
            "under_replicated": total.under_replicated,
            "offline": total.offline,
            "under_min_isr": total.under_min_isr,
        }

    def broker_rows(self, total: TopicTally | None = None) -> list[dict[str, Any]]:
        """Per broker: partitions led, replicas hosted, and under-replicated partitions it leads
        (the same thing Kafka's UnderReplicatedPartitions metric counts per broker)."""
        total = total if total is not None else TopicTally.total(TopicTally.of(t) for t in self.topics.values())
        led, hosted, urp = total.led, total.hosted, total.led_under_replicated
        return [
            {
                "id": b.id,
                "host": b.host,
                "port": b.port,
                "rack": b.rack,
                "up": b.up,
                "controller": b.id == self.controller_id,
                "leader_count": led.get(b.id, 0),
                "replica_count": hosted.get(b.id, 0),
                "under_replicated": urp.get(b.id, 0),
            }
            for b in sorted(self.brokers.values(), key=lambda b: b.id)
        ]

    def tallies(self, before: Mapping[str, tuple[TopicState, TopicTally]] | None = None,
                total: TopicTally | None = None) -> tuple[dict[str, tuple[TopicState, TopicTally]], TopicTally]:
        """Each topic's tally and their sum. Given what this returned for an earlier version
        (`before`, `total`), a topic whose TopicState is the same object (a reading process's store
        keeps what did not change) keeps its tally and the sum moves by the changed topics' only:
        the overview's counts and broker rows look at the changed topics alone."""
        before = before or {}
        made = {}
        added, removed = [], []
        for name, t in self.topics.items():
            seen = before.get(name)
            if seen is None or seen[0] is not t:
                if seen is not None:
                    removed.append(seen[1])
                seen = (t, TopicTally.of(t))
                added.append(seen[1])
            made[name] = seen
        if total is None:
            return made, TopicTally.total(tally for _, tally in made.values())
        removed.extend(before[name][1] for name in before.keys() - made.keys())
        return made, total.moved(added, removed)

    def at_risk(self, broker_id: int) -> dict[str, list[dict[str, Any]]]:
        """Partitions that would go offline, or under min ISR, if `broker_id` died now."""
        offline: list[dict[str, Any]] = []
        under_min: list[dict[str, Any]] = []
        for topic in sorted(self.topics.values(), key=lambda t: t.name):
            for p in topic.partitions:
                if broker_id not in p.replicas or p.offline:
                    continue
                remaining = [r for r in p.isr if r != broker_id]
                row = {"topic": topic.name, "partition": p.partition, "leader": p.leader, "replicas": p.replicas,
                       "isr": p.isr, "remaining_isr": remaining, "min_isr": topic.min_isr}
                if not remaining:
                    offline.append(row)
                elif p.under_min_isr(topic.min_isr) is False and topic.min_isr is not None and len(remaining) < topic.min_isr:
                    under_min.append(row)
        return {"offline": offline, "under_min_isr": under_min}


def _partition(p: dict[str, Any]) -> PartitionState:
    """A partition from its JSON; its fields given in order, not by name (a third less time: a web
    process parses about 3,000 topics' partitions a second at 300,000 partitions)."""
    return PartitionState(p["partition"], p["leader"], p["replicas"], p["isr"], p["offline_replicas"], p.get("start_offset"),
                          p.get("end_offset"), p.get("size"), p.get("replica_sizes", {}))


def _group(g: dict[str, Any]) -> GroupState:
    return GroupState(**{**{k: v for k, v in g.items() if k in _GROUP_FIELDS}, "members": [MemberState(**m) for m in g["members"]]})


def _with_format(header: bytes) -> bytes:
    """The header marked as stored in parts with the groups apart (`PARTS_FORMAT`)."""
    return b'{"parts":%d,' % PARTS_FORMAT + header[1:] if header != b"{}" else b'{"parts":%d}' % PARTS_FORMAT


def _quorum(quorum: dict[str, Any] | None) -> QuorumState | None:
    if not quorum:
        return None
    return QuorumState(
        leader_id=quorum["leader_id"],
        leader_epoch=quorum["leader_epoch"],
        high_watermark=quorum["high_watermark"],
        voters=[QuorumMember(**m) for m in quorum["voters"]],
        observers=[QuorumMember(**m) for m in quorum["observers"]],
    )
