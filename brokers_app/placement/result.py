"""A plan: every in-scope partition's replicas before and after, the bytes each move copies, each
broker's share before and after, and Kafka's JSON of the changes; computed or imported alike."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from brokers_app.placement.generate import GenerateEstimate, generate_expected
from brokers_app.placement.kafka_json import parse_reassignment, reassignment_json
from brokers_app.placement.model import Assignment, ClusterLayout, Kind, PlanRequest, Scope, resolve
from console.gateway.types import TopicPartition


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


def build_plan(
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
        generate=generate_expected(layout, scope) if compare_with_generate else None,
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


def export_reassignment(plan: Plan) -> str:
    """The plan as the file `kafka-reassign-partitions --execute/--verify --reassignment-json-file` reads."""
    return json.dumps(plan.reassignment(), indent=2) + "\n"


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
    return build_plan(layout, request, scope, assignment, 0, compare_with_generate)
