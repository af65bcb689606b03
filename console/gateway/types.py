"""The product's own view of Kafka: frozen dataclasses the gateway returns."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

TopicPartition = tuple[str, int]

IDS_MAX = 100_000  # distinct lists of broker ids kept by `shared_ids` (then it starts afresh)
_ids: dict[tuple[int, ...], tuple[int, ...]] = {}


def shared_ids(ids: Iterable[int]) -> tuple[int, ...]:
    """The one tuple of these broker ids, in this order (a partition's replicas or ISR). A cluster's
    partitions share a few thousand replica sets, but each metadata answer brings new lists per
    partition: at 300,000 partitions the watcher held 340,000 tuples (23 MB) where a few hundred do."""
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


# (slots: 300,000 partitions, 50,000 groups and their members per answer, with no attribute dict each)
@dataclass(frozen=True, slots=True)
class Partition:
    topic: str
    partition: int
    leader: int  # -1 when the partition has no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: str | None = None


@dataclass(frozen=True)
class Topic:
    name: str
    internal: bool
    partitions: tuple[Partition, ...]
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
    assignment: tuple[tuple[str, int], ...]
    instance_id: str | None = None  # static membership (group.instance.id)
    epoch: int | None = None  # member epoch (new consumer protocol and share groups)
    target_assignment: tuple[tuple[str, int], ...] | None = None  # new consumer protocol, while reconciling


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
