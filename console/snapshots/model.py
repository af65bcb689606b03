"""The latest known state of one cluster, as the watcher saw it: pure data, no I/O.

Pages and the API read a Snapshot instead of asking Kafka, so a page costs Kafka nothing. How the
snapshot is cut into stored parts is in `parts` and `part_cache`; its tallies in `tallies`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Protocol

import orjson

from console.snapshots.encoding import CONTENT_OPTIONS, Commits, ReplicaSizes
from console.snapshots.gc_pause import no_gc
from console.snapshots.tallies import TopicTally


class PartsCache(Protocol):
    """What `Snapshot.content_bytes` asks of a cache of topics' stored parts (part_cache.TopicBytes)."""

    def fragments(self, topics: dict[str, Any]) -> dict[str, orjson.Fragment]: ...


@dataclass
class BrokerState:
    id: int
    host: str
    port: int
    rack: str | None
    up: bool  # Kafka lists it (registered, not fenced)
    # False: Kafka lists it but its port refuses the console's connections (it probably died and
    # Kafka has not fenced it yet). A broker down is not probed: True. (A snapshot stored before
    # this field reads as True.)
    reachable: bool = True


@dataclass(slots=True)  # (one per partition of the cluster: no per-object attribute dict)
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
        without its generic copy, because a sampling pass changes the offsets of most partitions."""
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
    # Its partitions' end offsets stored with its part (number, end, ...; a StoredTopic's), None: read its partitions.
    stored_ends: ClassVar[list[int | None] | None] = None

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


    def end_offsets(self) -> dict[int, int | None]:
        """Partition number -> end offset; a topic read from the store gives them from the summary
        stored with it, without parsing its partitions (a group's lag needs no more of its topics)."""
        flat = self.stored_ends
        if flat is not None:
            each = iter(flat)
            return dict(zip(each, each))  # type: ignore[arg-type]  # noqa: B905 - (pairs of one list: the same iterator twice)
        return {p.partition: p.end_offset for p in self.partitions}

    def partition(self, number: int) -> PartitionState | None:
        for p in self.partitions:
            if p.partition == number:
                return p
        return None



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


@dataclass(slots=True)  # (one per member of every group: no attribute dict each)
class MemberState:
    member_id: str
    client_id: str
    host: str
    assignment: Sequence[Sequence[Any]]  # [[topic, partition], ...] (tuples from the sampler, lists from JSON)
    instance_id: str | None = None
    epoch: int | None = None  # member epoch (new consumer protocol, share groups)
    target_assignment: Sequence[Sequence[Any]] | None = None  # the assignment the member is moving to (new protocol)



@dataclass(slots=True)  # (one per group, all held by the sampling process)
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
    # partition, which would cost a dict per group partition in time and memory at every sample):
    # "topic:partition", lag status (lagstatus.py), time lag in seconds (None when unknown).
    lag_keys: Sequence[str] = field(default_factory=list)  # (the sampling process's: its GroupPartitions' keys)
    lag_status: Sequence[str] = field(default_factory=list)  # (the sampling process's: compact, see `json_default`)
    lag_seconds: Sequence[float | None] = field(default_factory=list)

    def lag_of(self) -> dict[str, dict[str, Any]]:
        """"topic:partition" -> {"status", "time_lag"} of the last evaluation."""
        return {key: {"status": status, "time_lag": seconds}
                for key, status, seconds in zip(self.lag_keys, self.lag_status, self.lag_seconds, strict=True)}

    def topics(self) -> list[str]:
        names = {key.rpartition(":")[0] for key in self.offsets}
        names |= {a[0] for m in self.members for a in m.assignment}
        return sorted(names)


def json_default(obj: Any) -> Any:
    """orjson's `default`: what it cannot write by itself (a group's Commits, a partition's
    ReplicaSizes, a reading process's groups), as the objects of their items."""
    if isinstance(obj, Commits):
        return dict(zip(obj.partitions.keys, obj.committed, strict=True))
    if isinstance(obj, ReplicaSizes):
        return dict(zip(obj.brokers, obj.values(), strict=True))
    if isinstance(obj, TopicState):  # (orjson writes a dataclass, not a subclass of one (StoredTopic): as the TopicState it equals)
        return TopicState(obj.name, obj.internal, obj.partitions, obj.min_isr, obj.produce_rate)
    json_value = getattr(type(obj), "json_value", None)  # (the apps' compact columns: consumers_app.lag_values)
    if json_value is not None:
        return json_value(obj)
    if isinstance(obj, Mapping):  # (a reading process's groups: parts.GroupsRead)
        return dict(obj.items())
    raise TypeError(f"{type(obj).__name__} is not serialisable")


# What a stored group may hold (a snapshot stored by an earlier version may hold fields no longer kept).
_GROUP_FIELDS = frozenset(f.name for f in fields(GroupState))
_MEMBER_FIELDS = frozenset(f.name for f in fields(MemberState))
_MEMBER_COUNT = len(_MEMBER_FIELDS)


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

    def content_bytes(self, topic_bytes: PartsCache | None = None) -> bytes:
        """Everything but the stamp, as JSON; equal bytes mean nothing changed. With `topic_bytes`,
        each topic already serialised (the same object as then) is not serialised again."""
        blank = replace(self, version=0, taken_at=None, checked_at=None, offsets_at=None, groups_at=None, quorum=None,
                        quorum_error=None)
        if topic_bytes is not None:
            blank.topics = topic_bytes.fragments(self.topics)  # type: ignore[assignment]
        return orjson.dumps(blank, default=json_default, option=CONTENT_OPTIONS)

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
        return orjson.dumps(self, default=json_default, option=orjson.OPT_NON_STR_KEYS).decode()

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
                    partitions=[partition_from_dict(p) for p in t["partitions"]],
                    min_isr=t.get("min_isr"),
                    produce_rate=t.get("produce_rate"),
                )
                for name, t in data.get("topics", {}).items()
            },
            offsets_at=data.get("offsets_at"),
            topic_groups=data.get("topic_groups", {}),
            groups={gid: group_from_dict(g) for gid, g in data.get("groups", {}).items()},
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
            "brokers_unreachable": sum(1 for b in self.brokers.values() if b.up and not b.reachable),
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
                "reachable": b.reachable,
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



def partition_from_dict(p: dict[str, Any]) -> PartitionState:
    """A partition from its JSON; its fields given in order, not by name, which is faster, and web
    processes parse the partitions of every changed topic they are asked for."""
    return PartitionState(p["partition"], p["leader"], p["replicas"], p["isr"], p["offline_replicas"], p.get("start_offset"),
                          p.get("end_offset"), p.get("size"), p.get("replica_sizes", {}))


def group_from_dict(g: dict[str, Any]) -> GroupState:
    """A group from its JSON. Its fields are given in order, not by name, when it holds every field
    and no other (as this version writes it), which is several times faster: web processes parse
    every group a version changed for the groups list sorted by lag."""
    members = [MemberState(m["member_id"], m["client_id"], m["host"], m["assignment"], m["instance_id"], m["epoch"],
                           m["target_assignment"]) if len(m) == _MEMBER_COUNT and m.keys() == _MEMBER_FIELDS
               else MemberState(**m) for m in g["members"]]
    if len(g) != len(_GROUP_FIELDS) or g.keys() != _GROUP_FIELDS:
        return GroupState(**{**{k: v for k, v in g.items() if k in _GROUP_FIELDS}, "members": members})
    return GroupState(g["group_id"], g["state"], g["protocol_type"], g["group_type"], g["assignor"], members, g["offsets"],
                      g["coordinator"], g["generation"], g["broker_lag"], g["error"], g["status"], g["time_lag"], g["lag_keys"],
                      g["lag_status"], g["lag_seconds"])


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
