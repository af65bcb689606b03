"""The cluster a plan works on, what the operator asks for, and what that request may touch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

from console.gateway.types import TopicPartition

if TYPE_CHECKING:
    from console.snapshots import Snapshot

Assignment = dict[TopicPartition, tuple[int, ...]]


class PlanError(ValueError):
    """A request or an imported plan the planner refuses; the message is one sentence for the operator."""


class Kind(StrEnum):
    REBALANCE = "rebalance"
    DECOMMISSION = "decommission"
    ADD_BROKERS = "add_brokers"
    REPLICATION_FACTOR = "replication_factor"
    IMPORTED = "imported"  # a plan read from Kafka's reassignment JSON, not computed here


REQUEST_KINDS = (Kind.REBALANCE, Kind.DECOMMISSION, Kind.ADD_BROKERS, Kind.REPLICATION_FACTOR)


# The cluster ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Broker:
    id: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None = None  # the current leader; None when offline or not known
    size: int = 0  # bytes in the partition's log (from log dirs): what a new replica copies

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def current_leader(self) -> int | None:
        """The broker leading now, or the preferred leader when the partition is offline."""
        if self.leader is not None and self.leader >= 0 and self.leader in self.replicas:
            return self.leader
        return self.replicas[0] if self.replicas else None


@dataclass(frozen=True)
class ClusterLayout:
    brokers: tuple[Broker, ...]
    partitions: tuple[PartitionInfo, ...]

    def __post_init__(self) -> None:
        if len({b.id for b in self.brokers}) != len(self.brokers):
            raise PlanError("The cluster layout lists a broker twice.")
        if len({p.key for p in self.partitions}) != len(self.partitions):
            raise PlanError("The cluster layout lists a partition twice.")
        for p in self.partitions:
            if not p.replicas:
                raise PlanError(f"Partition {p.topic}-{p.partition} has no replicas in the cluster layout.")
            if p.size < 0:
                raise PlanError(f"Partition {p.topic}-{p.partition} has a negative size in the cluster layout.")

    @cached_property
    def racks(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self.brokers}

    @cached_property
    def by_key(self) -> dict[TopicPartition, PartitionInfo]:
        return {p.key: p for p in self.partitions}

    @cached_property
    def topics(self) -> dict[str, tuple[PartitionInfo, ...]]:
        """Topic name -> its partitions, by partition number."""
        grouped: dict[str, list[PartitionInfo]] = {}
        for p in self.partitions:
            grouped.setdefault(p.topic, []).append(p)
        return {t: tuple(sorted(ps, key=lambda p: p.partition)) for t, ps in sorted(grouped.items())}

    def assignment(self) -> Assignment:
        return {p.key: p.replicas for p in self.partitions}


def layout_from_snapshot(snapshot: Snapshot) -> ClusterLayout:
    """The layout the watcher last saw; partition sizes are the leader's log size from log dirs."""
    brokers = tuple(Broker(b.id, b.rack) for b in sorted(snapshot.brokers.values(), key=lambda b: b.id))
    partitions = tuple(
        PartitionInfo(t.name, p.partition, tuple(p.replicas), p.leader if p.leader >= 0 else None, max(0, p.size or 0))
        for t in snapshot.topics.values()
        for p in t.partitions
    )
    return ClusterLayout(brokers, partitions)


# The request ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanRequest:
    """What the operator asks for. `topics` empty in a rebalance means the whole cluster."""

    kind: Kind
    topics: tuple[str, ...] = ()
    brokers: tuple[int, ...] = ()
    replication_factor: int | None = None

    @classmethod
    def rebalance(cls, topics: Iterable[str] = ()) -> PlanRequest:
        return cls(Kind.REBALANCE, topics=tuple(topics))

    @classmethod
    def decommission(cls, brokers: Iterable[int]) -> PlanRequest:
        return cls(Kind.DECOMMISSION, brokers=tuple(brokers))

    @classmethod
    def add_brokers(cls, brokers: Iterable[int], topics: Iterable[str] = ()) -> PlanRequest:
        return cls(Kind.ADD_BROKERS, topics=tuple(topics), brokers=tuple(brokers))

    @classmethod
    def change_replication_factor(cls, topics: Iterable[str], replication_factor: int) -> PlanRequest:
        return cls(Kind.REPLICATION_FACTOR, topics=tuple(topics), replication_factor=replication_factor)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanRequest:
        """The REST body `{"kind", "topics", "brokers", "replication_factor"}`, checked for types."""
        kinds = ", ".join(k.value for k in REQUEST_KINDS)
        try:
            kind = Kind(str(data.get("kind")))
        except ValueError:
            raise PlanError(f"The kind of plan must be one of {kinds}.") from None
        if kind is Kind.IMPORTED:
            raise PlanError(f"The kind of plan must be one of {kinds}.")
        topics = data.get("topics") or []
        brokers = data.get("brokers") or []
        rf = data.get("replication_factor")
        if not isinstance(topics, list) or not all(isinstance(t, str) and t for t in topics):
            raise PlanError("topics must be a list of topic names.")
        if not isinstance(brokers, list) or not all(is_int(b) for b in brokers):
            raise PlanError("brokers must be a list of broker ids.")
        if rf is not None and not is_int(rf):
            raise PlanError("replication_factor must be a whole number.")
        return cls(kind, tuple(topics), tuple(brokers), rf)


@dataclass(frozen=True)
class Scope:
    """A request resolved against the layout: which topics may change and where replicas may go."""

    topics: tuple[str, ...]
    targets: tuple[int, ...]  # brokers allowed to hold the topics' replicas afterwards
    removed: tuple[int, ...] = ()
    added: tuple[int, ...] = ()
    replication_factor: int | None = None
    racks: Mapping[int, str | None] = field(default_factory=dict, compare=False)  # of the targets
    notes: tuple[str, ...] = ()

    @property
    def rack_aware(self) -> bool:
        """Kafka's rule: racks count only when every broker has one."""
        return bool(self.targets) and all(self.racks.get(b) is not None for b in self.targets)

    @property
    def num_racks(self) -> int:
        return len({self.racks[b] for b in self.targets}) if self.rack_aware else 1


def resolve(layout: ClusterLayout, request: PlanRequest) -> Scope:
    """Check a request against the cluster and say what it may touch; PlanError says what is wrong."""
    known = {b.id for b in layout.brokers}
    if not known:
        raise PlanError("The cluster has no brokers to place replicas on.")
    topics_asked = list(dict.fromkeys(request.topics))
    brokers_asked = list(dict.fromkeys(request.brokers))
    for t in topics_asked:
        if t not in layout.topics:
            raise PlanError(f"Topic {t} does not exist in the cluster.")
    for b in brokers_asked:
        if b not in known:
            raise PlanError(f"Broker {b} is not in the cluster.")
    kind = request.kind
    if request.replication_factor is not None and kind is not Kind.REPLICATION_FACTOR:
        raise PlanError("Only a replication factor change takes a replication factor.")
    removed: list[int] = []
    added: list[int] = []
    rf: int | None = None
    if kind in (Kind.REBALANCE, Kind.IMPORTED):
        if brokers_asked:
            raise PlanError("A rebalance takes topics, not brokers: decommission or add_brokers name brokers.")
        topics = topics_asked or list(layout.topics)
    elif kind is Kind.DECOMMISSION:
        if not brokers_asked:
            raise PlanError("Name the broker or brokers to decommission.")
        if topics_asked:
            raise PlanError("A decommission moves every replica off the named brokers, so it takes no topics.")
        removed = sorted(brokers_asked)
        gone = set(removed)
        topics = [t for t, ps in layout.topics.items() if any(gone.intersection(p.replicas) for p in ps)]
    elif kind is Kind.ADD_BROKERS:
        if not brokers_asked:
            raise PlanError("Name the newly added broker or brokers to spread replicas onto.")
        added = sorted(brokers_asked)
        topics = topics_asked or list(layout.topics)
    elif kind is Kind.REPLICATION_FACTOR:
        if not topics_asked:
            raise PlanError("Name the topic or topics whose replication factor should change.")
        if brokers_asked:
            raise PlanError("A replication factor change takes topics, not brokers.")
        rf = request.replication_factor
        if rf is None or rf < 1:
            raise PlanError("Give a replication factor of at least 1.")
        topics = topics_asked
    else:  # pragma: no cover - StrEnum exhausts the kinds
        raise PlanError(f"Unknown kind of plan {kind}.")

    targets = sorted(known - set(removed))
    if not targets:
        raise PlanError(f"Decommissioning {brokers_text(removed)} would leave no broker to hold the replicas.")
    if rf is not None and rf > len(targets):
        raise PlanError(f"Replication factor {rf} is more than the {len(targets)} brokers in the cluster.")
    for t in topics:
        need = rf if rf is not None else max(len(set(p.replicas)) for p in layout.topics[t])
        if need > len(targets):
            if removed:
                raise PlanError(
                    f"Decommissioning {brokers_text(removed)} leaves {len(targets)} broker{'s' if len(targets) != 1 else ''}, "
                    f"too few for topic {t} with replication factor {need}."
                )
            raise PlanError(f"Topic {t} has replication factor {need} but the cluster has only {len(targets)} brokers.")

    notes: list[str] = []
    racks = {b: layout.racks[b] for b in targets}
    rackless = [b for b in targets if racks[b] is None]
    if rackless and len(rackless) < len(targets):
        notes.append(
            f"{brokers_text(rackless).capitalize()} {'has' if len(rackless) == 1 else 'have'} no rack, so replicas "
            "are placed without regard to racks (Kafka's tool would refuse without --disable-rack-aware)."
        )
    in_scope = set(topics)
    strays = sorted({b for p in layout.partitions if p.topic in in_scope for b in p.replicas if b not in known})
    if strays:
        verb = "holds replicas but is" if len(strays) == 1 else "hold replicas but are"
        notes.append(f"{brokers_text(strays).capitalize()} {verb} not in the cluster; those replicas are moved.")
    return Scope(tuple(sorted(topics)), tuple(targets), tuple(removed), tuple(added), rf, racks, tuple(notes))


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def brokers_text(ids: Sequence[int]) -> str:
    ids = sorted(ids)
    if len(ids) == 1:
        return f"broker {ids[0]}"
    return "brokers " + ", ".join(str(i) for i in ids[:-1]) + f" and {ids[-1]}"
