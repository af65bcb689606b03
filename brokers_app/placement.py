"""Replica placement plans that move as little data as possible (ALGORITHMS.md section 5).

Pure functions over a `ClusterLayout` (brokers with racks, partitions with their replica lists,
current leaders and sizes from log dirs): no Kafka calls, no I/O. `plan()` answers a request
(rebalance, decommission, add brokers, change replication factor) with a `Plan` that lists every
partition's replicas before and after, the bytes each move copies, per-broker counts before and
after, and Kafka's own reassignment JSON for the partitions that change. `kafka_generate()` models
what `kafka-reassign-partitions --generate` would propose for the same request, so a plan can be
shown beside it. `parse_reassignment()` reads Kafka's JSON back, refusing bad input with one sentence.

How the planner works, following the goals' order (hard rules, replica balance, leader balance,
fewest bytes, current leader kept):
1. Every partition the request may touch ("in scope") gets the moves it cannot avoid: replicas off
   brokers being removed (or no longer in the cluster), replicas added or dropped for a new
   replication factor, a replica swapped into a rack the partition lacks. New replicas go to the
   least loaded allowed broker.
2. Replica balance: while the fullest and emptiest brokers differ by more than one, move a replica
   along the cheapest chain of moves from a fullest broker to one holding at least two fewer (or
   into an emptiest one), found by Dijkstra over brokers where an edge is the cheapest single move:
   a replica going back where it was is free, otherwise the partition's size (smallest first,
   followers before leaders). Each chain lowers the sum of squared counts, so this ends.
3. Leader balance, the same way over preferred leaders (first replicas): hand leadership to another
   replica by reordering (copies nothing), preferring to keep the current leader and lists that
   need no change; when reordering cannot help (a broker leading single-replica partitions), move a
   leading replica, alone or swapped with a follower, never worsening replica balance.
Balance is measured over the in-scope partitions on the brokers allowed to hold them: for a
whole-cluster rebalance the whole cluster, for selected topics those topics, as `--generate` does.
"""

from __future__ import annotations

import heapq
import json
import random
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from console.snapshots.model import Snapshot

TopicPartition = tuple[str, int]
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
        if not isinstance(brokers, list) or not all(_is_int(b) for b in brokers):
            raise PlanError("brokers must be a list of broker ids.")
        if rf is not None and not _is_int(rf):
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


# The plan ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionChange:
    topic: str
    partition: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    size: int
    leader_before: int | None

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def added(self) -> tuple[int, ...]:
        return tuple(b for b in self.after if b not in self.before)

    @property
    def removed(self) -> tuple[int, ...]:
        return tuple(b for b in dict.fromkeys(self.before) if b not in self.after)

    @property
    def bytes_to_move(self) -> int:
        """Each new replica copies the whole log from the leader."""
        return self.size * len(self.added)

    @property
    def leader_after(self) -> int | None:
        return self.after[0] if self.after else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "before": list(self.before),
            "after": list(self.after),
            "leader_before": self.leader_before,
            "leader_after": self.leader_after,
            "size": self.size,
            "bytes_to_move": self.bytes_to_move,
        }


@dataclass(frozen=True)
class BrokerLoad:
    """One broker's share of the whole cluster before and after; leaders are preferred leaders."""

    broker: int
    rack: str | None
    known: bool  # False: named in replica lists but not in the cluster (down or gone)
    removed: bool
    added: bool
    replicas_before: int
    replicas_after: int
    leaders_before: int
    leaders_after: int
    bytes_before: int
    bytes_after: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Spread:
    """Max minus min, over the target brokers, of in-scope replicas and of preferred leaders."""

    replicas: int
    leaders: int


@dataclass(frozen=True)
class GenerateEstimate:
    """What `kafka-reassign-partitions --generate` would move, averaged over its random start points."""

    bytes: float
    replicas: float


@dataclass(frozen=True)
class Plan:
    request: PlanRequest
    scope: Scope
    partitions: tuple[PartitionChange, ...]  # every in-scope partition, changed or not
    brokers: tuple[BrokerLoad, ...]
    total_bytes: int  # all replicas in the cluster, before
    total_replicas: int
    bytes_to_move: int
    replicas_to_move: int
    required_replicas: int  # replicas that had to move whatever the plan (removed brokers, new RF, racks)
    spread_before: Spread
    spread_after: Spread
    generate: GenerateEstimate | None
    notes: tuple[str, ...] = ()

    @property
    def changes(self) -> tuple[PartitionChange, ...]:
        return tuple(c for c in self.partitions if c.changed)

    @property
    def moved_fraction(self) -> float:
        """Bytes copied over all bytes stored (every replica counted)."""
        return self.bytes_to_move / self.total_bytes if self.total_bytes else 0.0

    @property
    def generate_fraction(self) -> float | None:
        if self.generate is None:
            return None
        return self.generate.bytes / self.total_bytes if self.total_bytes else 0.0

    def assignment(self) -> Assignment:
        return {c.key: c.after for c in self.partitions}

    def reassignment(self) -> dict[str, Any]:
        """Kafka's reassignment JSON (`--execute`/`--verify` input) for the partitions that change."""
        return reassignment_json({c.key: c.after for c in self.changes})

    def to_dict(self) -> dict[str, Any]:
        return {
            "request": {
                "kind": self.request.kind.value,
                "topics": list(self.request.topics),
                "brokers": list(self.request.brokers),
                "replication_factor": self.request.replication_factor,
            },
            "plan": self.reassignment(),
            "partitions": [c.to_dict() for c in self.changes],
            "brokers": [b.to_dict() for b in self.brokers],
            "totals": {
                "partitions_in_scope": len(self.partitions),
                "partitions_changed": len(self.changes),
                "replicas_to_move": self.replicas_to_move,
                "required_replicas": self.required_replicas,
                "bytes_to_move": self.bytes_to_move,
                "total_bytes": self.total_bytes,
                "total_replicas": self.total_replicas,
                "moved_fraction": self.moved_fraction,
                "generate_bytes": None if self.generate is None else self.generate.bytes,
                "generate_replicas": None if self.generate is None else self.generate.replicas,
                "generate_fraction": self.generate_fraction,
                "spread_before": self.spread_before.__dict__,
                "spread_after": self.spread_after.__dict__,
            },
            "notes": list(self.notes),
        }


def plan(layout: ClusterLayout, request: PlanRequest, *, compare_with_generate: bool = True) -> Plan:
    """The plan for a request: hard rules kept, then balance, then fewest bytes, then leaders kept."""
    scope = resolve(layout, request)
    planner = _Planner(layout, scope)
    after = planner.run()
    return _build_plan(layout, request, scope, after, planner.required, compare_with_generate)


def spread(assignment: Mapping[TopicPartition, Sequence[int]], brokers: Iterable[int]) -> Spread:
    """Balance of an assignment over some brokers (replicas elsewhere are ignored)."""
    targets = list(brokers)
    replicas = Counter({b: 0 for b in targets})
    leaders = Counter({b: 0 for b in targets})
    for lst in assignment.values():
        for b in lst:
            if b in replicas:
                replicas[b] += 1
        if lst and lst[0] in leaders:
            leaders[lst[0]] += 1
    if not targets:
        return Spread(0, 0)
    return Spread(max(replicas.values()) - min(replicas.values()), max(leaders.values()) - min(leaders.values()))


def _build_plan(
    layout: ClusterLayout,
    request: PlanRequest,
    scope: Scope,
    after: Mapping[TopicPartition, tuple[int, ...]],
    required: int,
    compare_with_generate: bool,
    extra_notes: Sequence[str] = (),
) -> Plan:
    changes = tuple(
        PartitionChange(p.topic, p.partition, p.replicas, after.get(p.key, p.replicas), p.size, p.leader)
        for t in scope.topics
        for p in layout.topics[t]
    )
    before_all = layout.assignment()
    after_all = dict(before_all)
    after_all.update(after)
    sizes = {p.key: p.size for p in layout.partitions}
    rb, lb, bb = _loads(before_all, sizes)
    ra, la, ba = _loads(after_all, sizes)
    known = {b.id for b in layout.brokers}
    ids = sorted(known | set(rb) | set(ra))
    removed, added = set(scope.removed), set(scope.added)
    brokers = tuple(
        BrokerLoad(b, layout.racks.get(b), b in known, b in removed, b in added, rb[b], ra[b], lb[b], la[b], bb[b], ba[b])
        for b in ids
    )
    in_scope_before = {c.key: c.before for c in changes}
    in_scope_after = {c.key: c.after for c in changes}
    return Plan(
        request=request,
        scope=scope,
        partitions=changes,
        brokers=brokers,
        total_bytes=sum(p.size * len(set(p.replicas)) for p in layout.partitions),
        total_replicas=sum(len(set(p.replicas)) for p in layout.partitions),
        bytes_to_move=sum(c.bytes_to_move for c in changes),
        replicas_to_move=sum(len(c.added) for c in changes),
        required_replicas=required,
        spread_before=spread(in_scope_before, scope.targets),
        spread_after=spread(in_scope_after, scope.targets),
        generate=_generate_expected(layout, scope) if compare_with_generate else None,
        notes=scope.notes + tuple(extra_notes),
    )


def _loads(assignment: Mapping[TopicPartition, Sequence[int]], sizes: Mapping[TopicPartition, int]) -> tuple[Counter[int], Counter[int], Counter[int]]:
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    data: Counter[int] = Counter()
    for tp, lst in assignment.items():
        for b in dict.fromkeys(lst):
            replicas[b] += 1
            data[b] += sizes.get(tp, 0)
        if lst:
            leaders[lst[0]] += 1
    return replicas, leaders, data


# The planner ---------------------------------------------------------------------------------------

_LEADER_CLASSES = 4
_DIRECT_MOVES_ABOVE = 50  # replicas still to move before balancing switches from direct moves to chains


class _Planner:
    """Mutable working state of one plan; replica sets are sets, the order is decided at the end."""

    def __init__(self, layout: ClusterLayout, scope: Scope) -> None:
        self.targets = scope.targets
        self.target_set = set(scope.targets)
        self.rack = scope.racks
        self.rack_aware = scope.rack_aware
        self.num_racks = scope.num_racks
        self.preferred_targets = set(scope.added)
        self.keys: list[TopicPartition] = [p.key for t in scope.topics for p in layout.topics[t]]
        self.info = {k: layout.by_key[k] for k in self.keys}
        self.parts: dict[TopicPartition, set[int]] = {k: set(self.info[k].replicas) for k in self.keys}
        self.orig: dict[TopicPartition, frozenset[int]] = {k: frozenset(v) for k, v in self.parts.items()}
        self.size = {k: self.info[k].size for k in self.keys}
        rf = scope.replication_factor
        self.rf = {k: rf if rf is not None else len(v) for k, v in self.parts.items()}
        # Racks each partition must span: as many as possible (Kafka's rack-aware rule).
        self.need = {k: min(n, self.num_racks) if self.rack_aware else 1 for k, n in self.rf.items()}
        self.required = 0
        # Counts of in-scope replicas (the balance goal) and of all replicas (a tie-break).
        self.count: Counter[int] = Counter({b: 0 for b in self.targets})
        self.total: Counter[int] = Counter()
        self.topic_count: Counter[tuple[str, int]] = Counter()
        for p in layout.partitions:
            for b in set(p.replicas):
                self.total[b] += 1
        # Partitions by broker: on it now, and added there by this plan. Dicts as ordered sets, so a
        # plan never depends on the iteration order of a set of strings (which changes with the hash seed).
        self.on: dict[int, dict[TopicPartition, None]] = {b: {} for b in self.targets}
        self.added: dict[int, dict[TopicPartition, None]] = {b: {} for b in self.targets}
        # (src, dst) -> partitions on src that were on dst before this plan: moving them back is free.
        self.back: dict[tuple[int, int], dict[TopicPartition, None]] = {}
        for k, bs in self.parts.items():
            for b in bs:
                self.count[b] += 1
                self.topic_count[(k[0], b)] += 1
                self.on.setdefault(b, {})[k] = None
        # Indexes for balancing, built only when counts need balancing (see _index_for_balancing).
        self.indexed = False
        self.flexible: dict[int, dict[TopicPartition, None]] = {}
        self.cheap: dict[int, list[TopicPartition]] = {}
        self.cheap_index: dict[int, dict[TopicPartition, int]] = {}
        self.cursor: dict[int, dict[int, int]] = {}  # src -> dst -> entries of cheap[src] known unmovable
        self.pending: dict[int, dict[int, set[int]]] = {}  # src -> dst -> entries behind the cursor since changed

    def _index_for_balancing(self) -> None:
        """Per broker, its original in-scope replicas cheapest first (followers before leaders), with a
        cursor per destination past the entries found unmovable there. Only a change to a partition's
        replicas can make it movable again, so a changed entry behind a cursor is noted as pending
        and looked at first; no scan repeats itself.
        Rack-aware: per broker, the partitions whose replica there could move to another rack at all;
        with one replica per rack (the usual layout) there are none, and knowing it saves scanning
        thousands of partitions for a move that cannot exist."""
        originals: dict[int, list[TopicPartition]] = {b: [] for b in self.targets}
        for k in self.keys:
            for b in self.orig[k]:
                if b in originals:
                    originals[b].append(k)
        for b, ks in originals.items():
            ordered = sorted(ks, key=self._cheapness(b))
            self.cheap[b] = ordered
            self.cheap_index[b] = {k: i for i, k in enumerate(ordered)}
            self.cursor[b] = {}
            self.pending[b] = {}
        if self.rack_aware:
            for k in self.keys:
                self._index_flexible(k, add=True)
        self.indexed = True

    def _cheapness(self, broker: int) -> Any:
        return lambda k: (self.size[k], self.info[k].current_leader == broker, k)

    # Bookkeeping

    def _is_flexible(self, k: TopicPartition, b: int) -> bool:
        rack = self.rack
        own = rack.get(b)
        others = [rack.get(r) for r in self.parts[k] if r != b]
        distinct = len(set(others) | {own})
        return own in others or distinct < self.num_racks or distinct > self.need[k]

    def _index_flexible(self, k: TopicPartition, add: bool) -> None:
        for b in self.parts[k]:
            if b not in self.target_set:
                continue
            if not add:
                self.flexible.get(b, {}).pop(k, None)
            elif self._is_flexible(k, b):
                self.flexible.setdefault(b, {})[k] = None

    def _place(self, k: TopicPartition, b: int) -> None:
        if self.indexed and self.rack_aware:
            self._index_flexible(k, add=False)
        self.parts[k].add(b)
        self.count[b] += 1
        self.total[b] += 1
        self.topic_count[(k[0], b)] += 1
        self.on.setdefault(b, {})[k] = None
        for d in self.orig[k]:
            if d not in self.parts[k]:
                self.back.setdefault((b, d), {})[k] = None
        if b in self.orig[k]:
            for x in self.parts[k]:
                self.back.get((x, b), {}).pop(k, None)
        else:
            self.added.setdefault(b, {})[k] = None
        if self.indexed:
            self._rewind(k)
            if self.rack_aware:
                self._index_flexible(k, add=True)

    def _unplace(self, k: TopicPartition, b: int) -> None:
        if self.indexed and self.rack_aware:
            self._index_flexible(k, add=False)
        self.parts[k].discard(b)
        self.count[b] -= 1
        self.total[b] -= 1
        self.topic_count[(k[0], b)] -= 1
        del self.on[b][k]
        for d in self.orig[k]:
            self.back.get((b, d), {}).pop(k, None)
        if b in self.orig[k]:
            for x in self.parts[k]:
                self.back.setdefault((x, b), {})[k] = None
        else:
            del self.added[b][k]
        if self.indexed:
            self._rewind(k)
            if self.rack_aware:
                self._index_flexible(k, add=True)

    def _rewind(self, k: TopicPartition) -> None:
        for s in self.orig[k]:
            index = self.cheap_index.get(s, {}).get(k)
            if index is not None:
                pending = self.pending[s]
                for d, at in self.cursor[s].items():
                    if index < at:
                        pending.setdefault(d, set()).add(index)

    def _move(self, k: TopicPartition, src: int, dst: int) -> None:
        self._unplace(k, src)
        self._place(k, dst)

    def _racks(self, brokers: Iterable[int]) -> Counter[str | None]:
        return Counter(self.rack.get(b) for b in brokers)

    def _can_move(self, k: TopicPartition, src: int, dst: int) -> bool:
        replicas = self.parts[k]
        if dst in replicas or dst not in self.target_set:
            return False
        if not self.rack_aware or self.rack[src] == self.rack[dst]:
            return True
        rack = self.rack
        racks = {rack.get(b) for b in replicas if b != src}
        racks.add(rack[dst])
        return len(racks) >= self._need_racks(k)

    def _need_racks(self, k: TopicPartition) -> int:
        return self.need[k]

    def _place_key(self, k: TopicPartition, b: int) -> tuple[int, bool, int, int, bool, int]:
        """Where a new replica goes: least loaded, where it already was, fewest of its topic, newest broker."""
        return (self.count[b], b not in self.orig[k], self.topic_count[(k[0], b)], self.total[b],
                b not in self.preferred_targets, b)

    # Step 1: the moves the request cannot avoid

    def _repair(self, k: TopicPartition) -> None:
        replicas = self.parts[k]
        for b in sorted(replicas - self.target_set):
            self._unplace(k, b)
        keep = self.info[k].current_leader
        rf = self.rf[k]
        while len(replicas) > rf:
            racks = self._racks(replicas)
            drop = max(
                (b for b in replicas if b != keep or len(replicas) == 1),
                key=lambda b: (racks[self.rack.get(b)] > 1, self.count[b], self.total[b], b),
            )
            self._unplace(k, drop)
        need = self._need_racks(k)
        while len(replicas) < rf:
            racks = self._racks(replicas)
            choices = [b for b in self.targets if b not in replicas]
            if len(racks) < need:
                choices = [b for b in choices if self.rack[b] not in racks] or choices
            self._place(k, min(choices, key=lambda b: self._place_key(k, b)))
            self.required += 1
        while True:
            racks = self._racks(replicas)
            if len(racks) >= need:
                break
            crowded = [b for b in replicas if racks[self.rack[b]] > 1]
            out = max(crowded, key=lambda b: (b != keep, b not in self.orig[k], self.count[b], self.total[b], b))
            into = min((b for b in self.targets if self.rack[b] not in racks), key=lambda b: self._place_key(k, b))
            self._move(k, out, into)
            self.required += 1

    # Step 2: balance replica counts with the cheapest moves

    def _best_move(self, src: int, dst: int) -> tuple[int, TopicPartition] | None:
        """The cheapest allowed move of a replica from src to dst, as (bytes it adds, partition)."""
        on_src = self.on.get(src, {})
        if self.rack_aware and self.rack[src] != self.rack[dst]:
            flexible = self.flexible.get(src, {})
            if 4 * len(flexible) < len(on_src):  # few replicas here can change rack: look at those only
                best: tuple[int, TopicPartition] | None = None
                for k in flexible:
                    if self._can_move(k, src, dst):
                        cand = (self._move_cost(k, src, dst), k)
                        best = cand if best is None or cand < best else best
                return best
        # A replica going back to dst, where it was: free, or a refund when this plan put it on src.
        # Any will do (the search values refunds at zero), so stop at the first.
        for k in self.back.get((src, dst), ()):
            if self._can_move(k, src, dst):
                return (self._move_cost(k, src, dst), k)
        for k in self.added.get(src, ()):  # a replica this plan added on src going elsewhere: free
            if self._can_move(k, src, dst):
                return (0, k)
        # The smallest original replica on src (followers first), past those already moved away.
        ordered = self.cheap.get(src, [])
        if not ordered:
            return None
        waiting = self.pending[src].get(dst)
        if waiting:  # entries behind the cursor that changed since: cheaper than any ahead of it
            for index in sorted(waiting):
                k = ordered[index]
                if k in on_src and dst not in self.orig[k] and self._can_move(k, src, dst):
                    return (self.size[k], k)
                waiting.discard(index)
        cursors = self.cursor[src]
        j = cursors.get(dst, 0)
        while j < len(ordered):
            k = ordered[j]
            if k in on_src and dst not in self.orig[k] and self._can_move(k, src, dst):
                cursors[dst] = j
                return (self.size[k], k)
            j += 1
        cursors[dst] = j
        return None

    def _balance_replicas(self) -> None:
        """Move replicas from the fullest brokers to the emptiest along the cheapest chain of moves
        until counts differ by at most one or no chain exists; each chain lowers the sum of squares."""
        if len(self.targets) < 2:
            return
        budget = 4 * sum(self.count[b] for b in self.targets) + 100
        while budget > 0:
            budget -= 1
            hi = max(self.count[b] for b in self.targets)
            lo = min(self.count[b] for b in self.targets)
            if hi - lo <= 1:
                return
            if not self.indexed:
                self._index_for_balancing()
            if self._excess() > _DIRECT_MOVES_ABOVE and self._direct_move(hi, lo):
                continue
            found = self._cheapest_path([b for b in self.targets if self.count[b] == hi],
                                        {b for b in self.targets if self.count[b] <= hi - 2})
            if found is None or found[0][0] > 0:  # filling the emptiest from others may be cheaper
                other = self._cheapest_path([b for b in self.targets if self.count[b] >= lo + 2],
                                            {b for b in self.targets if self.count[b] == lo})
                if other is not None and (found is None or other[0] < found[0]):
                    found = other
            if found is None:
                return
            chain = found[1]
            for s, d in reversed(chain):
                move = self._best_move(s, d)
                if move is None:
                    return
                self._move(move[1], s, d)

    def _excess(self) -> int:
        """Replicas above the rounded-up mean: about how many moves balancing still needs."""
        ceiling = -(-sum(self.count[b] for b in self.targets) // len(self.targets))
        return sum(max(0, self.count[b] - ceiling) for b in self.targets)

    def _direct_move(self, hi: int, lo: int) -> bool:
        """The cheapest single move from a fullest broker, or into an emptiest one. Chains cost a
        search over every pair of brokers per move; with thousands of moves to make, direct moves
        do nearly as well, and chains finish the job."""
        pairs = {(s, d) for s in self.targets if self.count[s] == hi for d in self.targets if self.count[d] <= hi - 2}
        pairs |= {(s, d) for d in self.targets if self.count[d] == lo for s in self.targets if self.count[s] >= lo + 2}
        best: tuple[int, int, bool, int, int, TopicPartition] | None = None
        for s, d in sorted(pairs):
            move = self._best_move(s, d)
            if move is not None:
                rank = (move[0], self.count[d] - self.count[s], d not in self.preferred_targets, d, s, move[1])
                best = rank if best is None or rank < best else best
        if best is None:
            return False
        self._move(best[-1], best[-2], best[-3])
        return True

    def _cheapest_path(self, sources: Sequence[int], sinks: set[int]) -> tuple[tuple[int, int, bool, bool, int], list[tuple[int, int]]] | None:
        """Dijkstra over brokers, an edge being the cheapest single move (refunds count as free):
        a chain through a middle broker can copy far less than the cheapest direct move."""
        if not sources or not sinks:
            return None
        parent: dict[int, int | None] = {b: None for b in sources}
        best: dict[int, tuple[int, int]] = {b: (0, 0) for b in sources}
        # Ties go to sinks first: a chain never costs less than its first link, so stopping early is safe.
        heap: list[tuple[int, int, bool, bool, int]] = [(0, 0, True, False, b) for b in sorted(sources)]
        done: set[int] = set()
        while heap:
            cost, hops, not_sink, not_new, node = heapq.heappop(heap)
            if node in done:
                continue
            done.add(node)
            if node in sinks:
                chain: list[tuple[int, int]] = []
                cur = node
                while (prev := parent[cur]) is not None:
                    chain.append((prev, cur))
                    cur = prev
                return (cost, hops, not_sink, not_new, node), chain[::-1]
            for nxt in self.targets:
                if nxt in done:
                    continue
                move = self._best_move(node, nxt)
                if move is None:
                    continue
                reach = (cost + max(0, move[0]), hops + 1)
                if nxt not in best or reach < best[nxt]:
                    best[nxt] = reach
                    parent[nxt] = node
                    heapq.heappush(heap, (*reach, nxt not in sinks, nxt not in self.preferred_targets, nxt))
        return None

    # Step 3: preferred leaders

    def _leader_class(self, k: TopicPartition, leader: int, other: int) -> int:
        """How much handing k's leadership from `leader` to `other` costs: back home, neutral, new."""
        if other == self.home[k]:
            return 0
        if leader != self.home[k]:
            return 1
        return 2 if self.parts[k] != self.orig[k] else 3

    def _index_leader(self, k: TopicPartition, add: bool) -> None:
        leader = self.leader[k]
        for other in self.parts[k]:
            if other == leader:
                continue
            bucket = self.edges.setdefault((leader, other), [{} for _ in range(_LEADER_CLASSES)])
            cls = self._leader_class(k, leader, other)
            if add:
                bucket[cls][k] = None
            else:
                del bucket[cls][k]

    def _choose_leaders(self) -> None:
        self.leader: dict[TopicPartition, int] = {}
        self.home: dict[TopicPartition, int] = {}
        self.leaders: Counter[int] = Counter({b: 0 for b in self.targets})
        undecided = []
        for k in self.keys:
            info, replicas = self.info[k], self.parts[k]
            if replicas == self.orig[k] and info.replicas[0] in replicas:
                home: int | None = info.replicas[0]  # unchanged: keep the list as it is
            elif info.current_leader in replicas:
                home = info.current_leader
            else:
                home = next((b for b in info.replicas if b in replicas), None)
            if home is None:
                undecided.append(k)
                continue
            self.home[k] = self.leader[k] = home
            self.leaders[home] += 1
        for k in undecided:  # every replica is new: lead from the broker leading least
            home = min(self.parts[k], key=lambda b: (self.leaders[b], self.total[b], b))
            self.home[k] = self.leader[k] = home
            self.leaders[home] += 1
        self.edges: dict[tuple[int, int], list[dict[TopicPartition, None]]] = {}
        for k in self.keys:
            self._index_leader(k, add=True)

    def _hand_over(self, src: int, dst: int) -> bool:
        bucket = self.edges.get((src, dst))
        if not bucket:
            return False
        for candidates in bucket:
            if candidates:
                k = next(iter(candidates))
                self._index_leader(k, add=False)
                self.leader[k] = dst
                self.leaders[src] -= 1
                self.leaders[dst] += 1
                self._index_leader(k, add=True)
                return True
        return False

    def _balance_leaders(self) -> None:
        if len(self.targets) < 2:
            return
        budget = 4 * len(self.keys) + 100

        def reorderable(s: int, d: int) -> bool:
            return any(self.edges.get((s, d), ()))

        def movable(s: int, d: int) -> bool:
            return reorderable(s, d) or self._leader_move(s, d) is not None

        while budget > 0:
            budget -= 1
            hi = max(self.leaders[b] for b in self.targets)
            lo = min(self.leaders[b] for b in self.targets)
            if hi - lo <= 1:
                return
            path = None
            # Reordering replicas first (it copies nothing); moving a leading replica only when stuck.
            for linked in (reorderable, movable):
                for sources, sinks in (
                    ([b for b in self.targets if self.leaders[b] == hi], {b for b in self.targets if self.leaders[b] <= hi - 2}),
                    ([b for b in self.targets if self.leaders[b] >= lo + 2], {b for b in self.targets if self.leaders[b] == lo}),
                ):
                    path = _bfs(sources, sinks, self.targets, linked)
                    if path:
                        break
                if path:
                    break
            if not path:
                return
            for s, d in reversed(path):
                if not self._hand_over(s, d) and not self._apply_leader_move(s, d):
                    return

    def _leader_move(self, src: int, dst: int) -> tuple[int, TopicPartition, TopicPartition | None] | None:
        """The cheapest way to give dst one of src's leaderships by moving data, without worsening replica
        balance: move a replica src leads to dst when dst holds fewer replicas, else swap it with one of
        dst's followers. Needed when a broker leads partitions whose other replicas cannot lead instead
        (single-replica partitions, say). Answers (bytes, partition moved, follower moved back)."""
        lead: tuple[int, TopicPartition] | None = None
        for k in self.on.get(src, ()):
            if self.leader[k] == src and self._can_move(k, src, dst):
                cand = (self._move_cost(k, src, dst), k)
                lead = cand if lead is None or cand < lead else lead
        if lead is None:
            return None
        if self.count[src] > self.count[dst]:
            return (lead[0], lead[1], None)
        back: tuple[int, TopicPartition] | None = None
        for k in self.on.get(dst, ()):
            if self.leader[k] != dst and self._can_move(k, dst, src):
                cand = (self._move_cost(k, dst, src), k)
                back = cand if back is None or cand < back else back
        if back is None:
            return None
        return (lead[0] + back[0], lead[1], back[1])

    def _apply_leader_move(self, src: int, dst: int) -> bool:
        found = self._leader_move(src, dst)
        if found is None:
            return False
        _, lead, follower = found
        self._index_leader(lead, add=False)
        self._move(lead, src, dst)
        self.leader[lead] = dst
        self.leaders[src] -= 1
        self.leaders[dst] += 1
        self._index_leader(lead, add=True)
        if follower is not None:
            self._index_leader(follower, add=False)
            self._move(follower, dst, src)
            self._index_leader(follower, add=True)
        return True

    def _move_cost(self, k: TopicPartition, src: int, dst: int) -> int:
        """Bytes a move adds to the plan: a replica going back is free, undoing an added one refunds it."""
        return self.size[k] * ((dst not in self.orig[k]) - (src not in self.orig[k]))

    # The result

    def _order(self, k: TopicPartition) -> tuple[int, ...]:
        """Leader first; a new replica takes the place of the one it replaces, so lists read naturally."""
        before = list(dict.fromkeys(self.info[k].replicas))
        replicas = self.parts[k]
        incoming = iter(sorted(replicas - set(before)))
        after: list[int] = []
        for b in before:
            if b in replicas:
                after.append(b)
            else:
                nb = next(incoming, None)
                if nb is not None:
                    after.append(nb)
        after.extend(incoming)
        leader = self.leader[k]
        after.remove(leader)
        return (leader, *after)

    def run(self) -> dict[TopicPartition, tuple[int, ...]]:
        for k in self.keys:
            self._repair(k)
        self._balance_replicas()
        self._choose_leaders()
        self._balance_leaders()
        return {k: self._order(k) for k in self.keys}


def _bfs(sources: Sequence[int], sinks: set[int], nodes: Sequence[int], linked: Any) -> list[tuple[int, int]] | None:
    """Shortest chain of edges from any source to any sink (sources excluded as sinks)."""
    parent: dict[int, int | None] = {s: None for s in sources}
    queue = deque(sources)
    while queue:
        node = queue.popleft()
        for nxt in nodes:
            if nxt in parent or not linked(node, nxt):
                continue
            parent[nxt] = node
            if nxt in sinks:
                path: list[tuple[int, int]] = []
                cur: int = nxt
                while parent[cur] is not None:
                    prev = parent[cur]
                    assert prev is not None
                    path.append((prev, cur))
                    cur = prev
                return path[::-1]
            queue.append(nxt)
    return None


# Kafka's --generate --------------------------------------------------------------------------------


class _KafkaPlacer:
    """Kafka's AdminUtils.assignReplicasToBrokers, the placement `kafka-reassign-partitions --generate`
    uses (and ZooKeeper-era topic creation; KRaft's controller uses StripedReplicaPlacer instead).

    Rack-unaware: first replicas round-robin over the broker list from a random start; the other
    replicas follow at a shift that grows by one after every full round. Rack-aware (every broker has
    a rack): the same over a list that alternates racks, skipping a broker whose rack already holds a
    replica while some rack holds none. Memoised: a partition's list depends only on its first index
    and the shift modulo (brokers - 1)."""

    def __init__(self, brokers: Sequence[int], racks: Mapping[int, str] | None) -> None:
        if racks is None:
            self.arranged = sorted(brokers)  # describeCluster order, which brokers return by id
            self.num_racks = 1
        else:
            by_rack: dict[str, list[int]] = {}
            for b in sorted(brokers):
                by_rack.setdefault(racks[b], []).append(b)
            queues = [deque(by_rack[r]) for r in sorted(by_rack)]
            self.arranged = []
            while len(self.arranged) < len(brokers):
                for q in queues:
                    if q:
                        self.arranged.append(q.popleft())
            self.num_racks = len(by_rack)
        self.racks = racks
        self.n = len(self.arranged)
        self._memo: dict[tuple[int, int, int], tuple[int, ...]] = {}

    def shift_key(self, shift: int) -> int:
        return (shift * self.num_racks) % (self.n - 1) if self.n > 1 else 0

    def replicas(self, first: int, key: int, rf: int) -> tuple[int, ...]:
        memo_key = (first, key, rf)
        hit = self._memo.get(memo_key)
        if hit is not None:
            return hit
        n, arranged = self.n, self.arranged
        out = [arranged[first]]
        if self.racks is None:
            out += [arranged[(first + 1 + (key + j) % (n - 1)) % n] for j in range(rf - 1)]
        else:
            racks = self.racks
            used_racks, used = {racks[out[0]]}, {out[0]}
            k = 0
            for _ in range(rf - 1):
                while True:
                    broker = arranged[(first + 1 + (key + k) % (n - 1)) % n]
                    k += 1
                    rack = racks[broker]
                    if (rack not in used_racks or len(used_racks) == self.num_racks) and (broker not in used or len(used) == n):
                        out.append(broker)
                        used_racks.add(rack)
                        used.add(broker)
                        break
        result = tuple(out)
        self._memo[memo_key] = result
        return result

    def assign(self, n_partitions: int, rf: int, start: int, shift: int) -> list[tuple[int, ...]]:
        lists = []
        for p in range(n_partitions):
            if p > 0 and p % self.n == 0:
                shift += 1
            lists.append(self.replicas((p + start) % self.n, self.shift_key(shift), rf))
        return lists


def _kafka_placer(scope: Scope) -> _KafkaPlacer:
    racks = {b: r for b, r in scope.racks.items() if r is not None} if scope.rack_aware else None
    return _KafkaPlacer(scope.targets, racks)


def _kafka_rf(layout: ClusterLayout, scope: Scope, topic: str) -> int:
    # Kafka takes the replica count of one partition of the topic for all of them.
    return scope.replication_factor or len(set(layout.topics[topic][0].replicas))


def kafka_generate(layout: ClusterLayout, request: PlanRequest, rng: random.Random | None = None) -> Assignment:
    """What `kafka-reassign-partitions --generate` proposes for the same request: every partition of the
    in-scope topics re-placed from scratch over the brokers the request allows, one random start
    index and one random shift per topic (pass `rng` to fix them).

    A faithful model of ReassignPartitionsCommand.calculateAssignment + AdminUtils.assignReplicasToBrokers,
    approximate only where Kafka is unspecified: brokers are ordered by id (Kafka keeps describeCluster's
    order), the topic's replication factor is its lowest partition's (Kafka takes an arbitrary one), a
    replication factor change re-places with the new factor (the tool cannot change it; this is what
    re-creating the topic would do), and with some brokers lacking a rack placement ignores racks, as
    `--disable-rack-aware` does (the tool refuses otherwise). For decommission the topics are those
    with a replica on the removed brokers and the broker list is the others."""
    scope = resolve(layout, request)
    rng = rng or random.Random()
    placer = _kafka_placer(scope)
    result: Assignment = {}
    for topic in scope.topics:
        partitions = layout.topics[topic]
        lists = placer.assign(len(partitions), _kafka_rf(layout, scope, topic), rng.randrange(placer.n), rng.randrange(placer.n))
        for p, replicas in zip(partitions, lists, strict=True):
            result[p.key] = replicas
    return result


def kafka_generate_expected(layout: ClusterLayout, request: PlanRequest) -> GenerateEstimate:
    """Bytes and replicas `--generate` would move for the request, averaged exactly over its random choices."""
    return _generate_expected(layout, resolve(layout, request))


def _generate_expected(layout: ClusterLayout, scope: Scope) -> GenerateEstimate:
    placer = _kafka_placer(scope)
    n = placer.n
    total_bytes = 0.0
    total_replicas = 0.0
    for topic in scope.topics:
        rf = _kafka_rf(layout, scope, topic)
        for i, p in enumerate(layout.topics[topic]):
            # Over the n x n (start, shift) draws, the first index takes every value once per shift,
            # and the shift key's distribution depends only on how many full rounds came before.
            keys = Counter(placer.shift_key(shift + i // n) for shift in range(n))
            orig = set(p.replicas)
            moved = 0
            for first in range(n):
                for key, weight in keys.items():
                    moved += weight * sum(1 for b in placer.replicas(first, key, rf) if b not in orig)
            total_replicas += moved / (n * n)
            total_bytes += p.size * moved / (n * n)
    return GenerateEstimate(total_bytes, total_replicas)


# Kafka's reassignment JSON -------------------------------------------------------------------------


def reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> dict[str, Any]:
    """`{"version": 1, "partitions": [{"topic", "partition", "replicas"}]}`, by topic and partition."""
    return {
        "version": 1,
        "partitions": [
            {"topic": t, "partition": p, "replicas": list(assignment[(t, p)])} for t, p in sorted(assignment)
        ],
    }


def export_reassignment(plan: Plan) -> str:
    """The plan as the file `kafka-reassign-partitions --execute/--verify --reassignment-json-file` reads."""
    return json.dumps(plan.reassignment(), indent=2) + "\n"


def parse_reassignment(
    layout: ClusterLayout, data: str | bytes | Mapping[str, Any], *, allow_rf_change: bool = False
) -> Assignment:
    """Read Kafka's reassignment JSON and check it against the cluster and the hard rules.

    Refuses, with one sentence: text that is not JSON or not the format, an unknown topic, partition or
    broker, a partition listed twice or a broker listed twice in one partition, a replica count other
    than the partition's (unless `allow_rf_change`), replicas in fewer racks than possible."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise PlanError(f"The plan is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}).") from None
    if not isinstance(data, Mapping):
        raise PlanError('The plan must be a JSON object with "version" and "partitions".')
    if "version" not in data:
        raise PlanError('The plan has no "version"; Kafka\'s reassignment JSON has "version": 1.')
    if not _is_int(data["version"]) or data["version"] != 1:
        raise PlanError(f'The plan has version {json.dumps(data["version"])}, but only version 1 is understood.')
    entries = data.get("partitions")
    if not isinstance(entries, list):
        raise PlanError('The plan has no "partitions" list.')
    known = {b.id for b in layout.brokers}
    result: Assignment = {}
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping):
            raise PlanError(f'Entry {n} of "partitions" is not an object.')
        topic = entry.get("topic")
        if not isinstance(topic, str) or not topic:
            raise PlanError(f'Entry {n} of "partitions" has no topic name.')
        number = entry.get("partition")
        if not isinstance(number, int) or isinstance(number, bool):
            raise PlanError(f'Entry {n} of "partitions" (topic {topic}) has no partition number.')
        name = f"{topic}-{number}"
        replicas = entry.get("replicas")
        if not isinstance(replicas, list) or not all(_is_int(b) for b in replicas):
            raise PlanError(f"Partition {name} has no replica list of broker ids.")
        if not replicas:
            raise PlanError(f"Partition {name} has an empty replica list.")
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None and (not isinstance(log_dirs, list) or any(d != "any" for d in log_dirs)):
            raise PlanError(f'Partition {name} names log directories; only "any" is supported.')
        if topic not in layout.topics:
            raise PlanError(f"Topic {topic} does not exist in the cluster.")
        info = layout.by_key.get((topic, number))
        if info is None:
            numbers = [p.partition for p in layout.topics[topic]]
            raise PlanError(f"Partition {name} does not exist; topic {topic} has partitions {min(numbers)} to {max(numbers)}.")
        if (topic, number) in result:
            raise PlanError(f"Partition {name} appears twice in the plan.")
        seen: set[int] = set()
        for b in replicas:
            if b in seen:
                raise PlanError(f"Partition {name} lists broker {b} twice.")
            seen.add(b)
            if b not in known:
                raise PlanError(f"Partition {name} names broker {b}, which is not in the cluster.")
        current = len(set(info.replicas))
        if len(replicas) != current and not allow_rf_change:
            raise PlanError(
                f"Partition {name} has {len(replicas)} replicas instead of its replication factor {current}; "
                "change the replication factor with a replication factor request."
            )
        result[(topic, number)] = tuple(replicas)
    _check_racks(layout, result)
    return result


def _check_racks(layout: ClusterLayout, assignment: Mapping[TopicPartition, Sequence[int]]) -> None:
    racks = layout.racks
    if not racks or any(r is None for r in racks.values()):
        return
    # Racks of the brokers that hold replicas once the plan is applied: a plan that empties brokers
    # (a decommission) is judged on the racks left, not on those of the brokers it retires.
    after = {**layout.assignment(), **assignment}
    available = len({racks[b] for replicas in after.values() for b in replicas if b in racks})
    for (topic, number), replicas in sorted(assignment.items()):
        used = len({racks[b] for b in replicas})
        need = min(len(replicas), available)
        if used < need:
            raise PlanError(
                f"Partition {topic}-{number} puts its {len(replicas)} replicas in {used} rack{'s' if used != 1 else ''} "
                f"although {need} racks are available."
            )


def plan_from_reassignment(
    layout: ClusterLayout,
    data: str | bytes | Mapping[str, Any],
    *,
    allow_rf_change: bool = False,
    compare_with_generate: bool = True,
) -> Plan:
    """An imported plan, checked and shown like a computed one (its scope is the topics it names)."""
    assignment = parse_reassignment(layout, data, allow_rf_change=allow_rf_change)
    topics = tuple(sorted({t for t, _ in assignment}))
    request = PlanRequest(Kind.IMPORTED, topics=topics)
    scope = resolve(layout, request) if topics else Scope((), tuple(sorted(b.id for b in layout.brokers)))
    return _build_plan(layout, request, scope, assignment, 0, compare_with_generate)


# Helpers -------------------------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def brokers_text(ids: Sequence[int]) -> str:
    ids = sorted(ids)
    if len(ids) == 1:
        return f"broker {ids[0]}"
    return "brokers " + ", ".join(str(i) for i in ids[:-1]) + f" and {ids[-1]}"
