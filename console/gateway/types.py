"""The product's own view of Kafka: frozen dataclasses the gateway returns."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import ne
from typing import Any, overload

TopicPartition = tuple[str, int]

IDS_MAX = 100_000  # distinct lists of broker ids kept by `shared_ids` (then it starts afresh)
_ids: dict[tuple[int, ...], tuple[int, ...]] = {}


def shared_ids(ids: Iterable[int]) -> tuple[int, ...]:
    """The one tuple of these broker ids, in this order (a partition's replicas or ISR). A cluster's
    partitions share a few thousand replica sets, but each metadata answer brings new lists per
    partition: sharing them keeps one tuple per set instead of one per partition."""
    t = tuple(ids)
    found = _ids.get(t)
    if found is None:
        if len(_ids) >= IDS_MAX:
            _ids.clear()
        found = _ids.setdefault(t, t)
    return found

# Kafka marks these topics internal; the metadata librdkafka returns has no flag for it.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


@dataclass(frozen=True)
class Broker:
    id: int
    host: str
    port: int
    rack: str | None


# (slots: an answer holds one of these per partition, group and member, so none carries an attribute dict)
@dataclass(frozen=True, slots=True)
class Partition:
    topic: str
    partition: int
    leader: int  # -1 when the partition has no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: str | None = None


PartitionRow = tuple[int, int, tuple[int, ...], tuple[int, ...], "str | None"]  # (partition, leader, replicas, isr, error)


class PartitionTable(Sequence[Partition]):
    """A topic's partitions as the gateway's metadata keeps them: columns, not a Partition object
    per partition. The gateway holds the last answer's topics to hand an unchanged topic back as
    the same object (ClusterGateway.metadata), and the watcher compares a changed topic's
    partitions with the ones it was built from, so every partition of the cluster is held: as
    columns (numbers and leaders in arrays, the replicas' and ISR's shared tuples a reference each)
    that costs a fraction of a Partition object per partition. A partition is made as a Partition
    when asked for; `rows` gives the plain fields without making any."""

    __slots__ = ("_errors", "_isr", "_leaders", "_numbers", "_replicas", "topic")

    def __init__(self, topic: str, numbers: array[int], leaders: array[int], replicas: tuple[tuple[int, ...], ...],
                 isr: tuple[tuple[int, ...], ...], errors: tuple[str | None, ...] | None = None) -> None:
        if not len(numbers) == len(leaders) == len(replicas) == len(isr) or (errors is not None and len(errors) != len(numbers)):
            raise ValueError("a partition table's columns must have one entry per partition")
        self.topic = topic
        self._numbers, self._leaders, self._replicas, self._isr = numbers, leaders, replicas, isr
        self._errors = errors if errors is not None and errors.count(None) != len(errors) else None  # (None: no error at all)

    @classmethod
    def of(cls, topic: str, rows: Iterable[tuple[int, int, Iterable[int], Iterable[int], str | None]]) -> PartitionTable:
        """A table of (partition, leader, replicas, isr, error) rows, in their order (the broker id
        tuples shared: `shared_ids`)."""
        listed = list(rows)
        if not listed:
            return cls(topic, array("i"), array("i"), (), (), ())
        # (the rows turned into columns and the id tuples looked up in C, not a step per partition
        # in Python: on a large cluster every second's metadata brings thousands of changed topics)
        numbers, leaders, replicas, isr, errors = zip(*listed, strict=True)
        replicas, isr = tuple(map(tuple, replicas)), tuple(map(tuple, isr))
        keep = _ids.setdefault
        table = cls(topic, array("i", numbers), array("i", leaders), tuple(map(keep, replicas, replicas)),
                    tuple(map(keep, isr, isr)), errors)
        if len(_ids) > IDS_MAX:  # (as `shared_ids`: past the bound it starts afresh)
            _ids.clear()
        return table

    def rows(self) -> Iterator[PartitionRow]:
        """Each partition's (partition, leader, replicas, isr, error), in order."""
        errors = self._errors if self._errors is not None else (None,) * len(self._numbers)
        return zip(self._numbers, self._leaders, self._replicas, self._isr, errors, strict=True)

    def __len__(self) -> int:
        return len(self._numbers)

    def row(self, i: int) -> PartitionRow:
        """The (partition, leader, replicas, isr, error) at place `i`."""
        return (self._numbers[i], self._leaders[i], self._replicas[i], self._isr[i],
                self._errors[i] if self._errors is not None else None)

    def places_changed(self, before: PartitionTable) -> list[int] | None:
        """The places whose row differs from `before`'s at the same place, when both tables list the
        same partitions in the same order and neither has an error; None otherwise (then compare
        row by row). Column against column, without making a row per partition, because a typical
        change touches one partition of each of many large topics."""
        if before._errors is not None or self._errors is not None or before._numbers != self._numbers:
            return None
        # (each column compared whole first: a change is mostly one column's, a leader's or an ISR's)
        everywhere = range(len(self._numbers))
        found: list[int] | None = None
        for old, now in ((before._leaders, self._leaders), (before._replicas, self._replicas), (before._isr, self._isr)):
            if old != now:
                places = list(compress(everywhere, map(ne, old, now)))
                found = places if found is None else sorted(set(found).union(places))
        return found if found is not None else []

    def _at(self, i: int) -> Partition:
        return Partition(self.topic, self._numbers[i], self._leaders[i], self._replicas[i], self._isr[i],
                         self._errors[i] if self._errors is not None else None)

    @overload
    def __getitem__(self, i: int) -> Partition: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Partition, ...]: ...

    def __getitem__(self, i: int | slice) -> Partition | tuple[Partition, ...]:
        if isinstance(i, slice):
            return tuple(self._at(k) for k in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._at(i)

    def __iter__(self) -> Iterator[Partition]:
        topic = self.topic
        for number, leader, replicas, isr, error in self.rows():
            yield Partition(topic, number, leader, replicas, isr, error)

    def _key(self) -> tuple[Any, ...]:
        return (self.topic, self._numbers.tobytes(), self._leaders.tobytes(), self._replicas, self._isr, self._errors)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PartitionTable):
            return self is other or self._key() == other._key()
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:
        return (PartitionTable, (self.topic, self._numbers, self._leaders, self._replicas, self._isr, self._errors))

    def __repr__(self) -> str:
        return f"PartitionTable({list(self)!r})"


def partition_rows(partitions: Sequence[Partition]) -> Iterator[PartitionRow]:
    """The (partition, leader, replicas, isr, error) of each partition: a PartitionTable's without
    making a Partition, or any sequence of Partitions' (tests, tools)."""
    if isinstance(partitions, PartitionTable):
        return partitions.rows()
    return ((p.partition, p.leader, p.replicas, p.isr, p.error) for p in partitions)


@dataclass(frozen=True)
class Topic:
    name: str
    internal: bool
    partitions: Sequence[Partition]  # (a PartitionTable from the gateway; a tuple of Partitions from tests and tools)
    error: str | None = None


@dataclass(frozen=True)
class ClusterMetadata:
    cluster_id: str | None
    brokers: tuple[Broker, ...]  # live (registered, unfenced) brokers only
    topics: tuple[Topic, ...]


@dataclass(frozen=True)
class QuorumReplica:
    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int  # ms since the epoch, -1 when unknown
    last_caught_up_timestamp: int


@dataclass(frozen=True)
class Quorum:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]


@dataclass(frozen=True)
class ConfigValue:
    name: str
    value: str | None  # None when sensitive (masked) or unset
    source: str  # "default", "static broker", "dynamic broker", "dynamic default broker", "dynamic topic"
    is_default: bool
    is_sensitive: bool
    is_read_only: bool

    @property
    def overridden(self) -> bool:
        return self.source == "dynamic topic"


@dataclass(frozen=True, slots=True)
class GroupMember:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]
    instance_id: str | None = None  # static membership (group.instance.id)
    epoch: int | None = None  # member epoch (new consumer protocol and share groups)
    target_assignment: tuple[TopicPartition, ...] | None = None  # new consumer protocol, while reconciling


@dataclass(frozen=True, slots=True)
class ConsumerGroup:
    group_id: str
    state: str
    protocol_type: str  # "consumer" for Kafka consumers, "" for offset-only groups
    group_type: str  # "classic", "consumer" (KIP-848), "share" (KIP-932) or "streams" (KIP-1071)
    assignor: str
    members: tuple[GroupMember, ...]
    error: str | None = None
    coordinator: int | None = None
    generation: int | None = None  # group epoch of consumer and share groups; None for classic groups
    assignment_epoch: int | None = None


@dataclass(frozen=True)
class OngoingReassignment:
    """A reassignment Kafka is carrying out: the full replica set while it runs, and the movers."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, order=True)
class Acl:
    """One Kafka ACL binding, its enums by name (TOPIC, PREFIXED, READ, ALLOW...)."""

    resource_type: str
    pattern_type: str
    resource_name: str
    principal: str
    host: str
    operation: str
    permission: str

    def as_dict(self) -> dict[str, str]:
        return {"principal": self.principal, "host": self.host, "operation": self.operation, "permission": self.permission,
                "resource_type": self.resource_type, "resource_name": self.resource_name, "pattern_type": self.pattern_type}
