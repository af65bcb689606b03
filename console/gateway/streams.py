"""Streams groups (KIP-1071): StreamsGroupDescribe, one request per coordinator, read into the
product's dataclasses; the group's members, their tasks, and the topology the group runs.

The request's classes come from Kafka's own message definitions (protocol.py). The committed offsets,
resets and deletes of a streams group are those of any group (OffsetFetch, OffsetCommit while the group
is empty, DeleteGroups), in groups.py, as `kafka-streams-groups` sends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka.admin import KafkaAdminClient

from console.gateway import protocol
from console.gateway.types import TopicPartition

Tasks = tuple[tuple[str, tuple[int, ...]], ...]  # (subtopology id, its partitions), by subtopology id


@dataclass(frozen=True)
class StreamsAssignment:
    active: Tasks
    standby: Tasks
    warmup: Tasks


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    process_id: str
    member_epoch: int
    topology_epoch: int
    is_classic: bool
    assignment: StreamsAssignment
    target_assignment: StreamsAssignment


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]  # the application's input topics it reads
    repartition_sink_topics: tuple[str, ...]  # what it writes for another subtopology to read
    repartition_source_topics: tuple[tuple[str, int], ...]  # (topic, partitions; 0: not fixed): it reads them too; made by Kafka
    changelog_topics: tuple[str, ...]  # its state stores' changelogs, created by Kafka

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every topic it reads: its source topics, then its repartition topics (Kafka lists those apart)."""
        return tuple(dict.fromkeys([*self.source_topics, *(name for name, _ in self.repartition_source_topics)]))


@dataclass(frozen=True)
class StreamsGroup:
    group_id: str
    state: str  # Empty, NotReady, Assigning, Reconciling, Stable, Dead
    group_epoch: int
    assignment_epoch: int  # the target assignment's epoch
    topology_epoch: int | None  # None until a member has initialized the topology
    subtopologies: tuple[Subtopology, ...]
    members: tuple[StreamsMember, ...]
    coordinator: int | None
    error: str | None = None

    def input_partitions(self, tasks: Tasks) -> tuple[TopicPartition, ...]:
        """The partitions these tasks read: task (s, p) reads partition p of each input of s."""
        sources = {s.subtopology_id: s.inputs for s in self.subtopologies}
        return tuple(sorted({(t, p) for sid, parts in tasks for t in sources.get(sid, ()) for p in parts}))


def _tasks(raw: list[dict[str, Any]] | None) -> Tasks:
    return tuple(sorted((t["subtopology_id"], tuple(sorted(t["partitions"]))) for t in raw or []))


def _assignment(raw: dict[str, Any] | None) -> StreamsAssignment:
    raw = raw or {}
    return StreamsAssignment(_tasks(raw.get("active_tasks")), _tasks(raw.get("standby_tasks")), _tasks(raw.get("warmup_tasks")))


def read_group(raw: dict[str, Any], coordinator: int | None) -> StreamsGroup:
    """One group of a StreamsGroupDescribe answer (kafka-python's `to_dict()`)."""
    topology = raw.get("topology") or {}
    return StreamsGroup(
        group_id=raw["group_id"],
        state=raw.get("group_state") or "Unknown",
        group_epoch=raw.get("group_epoch", -1),
        assignment_epoch=raw.get("assignment_epoch", -1),
        topology_epoch=topology.get("epoch") if topology else None,
        subtopologies=tuple(sorted((
            Subtopology(
                subtopology_id=s["subtopology_id"],
                source_topics=tuple(sorted(s.get("source_topics") or [])),
                repartition_sink_topics=tuple(sorted(s.get("repartition_sink_topics") or [])),
                repartition_source_topics=tuple(sorted((t["name"], t.get("partitions", 0)) for t in s.get("repartition_source_topics") or [])),
                changelog_topics=tuple(sorted(t["name"] for t in s.get("state_changelog_topics") or [])),
            ) for s in topology.get("subtopologies") or []), key=lambda s: (len(s.subtopology_id), s.subtopology_id))),
        members=tuple(sorted((
            StreamsMember(
                member_id=str(m["member_id"]),
                instance_id=m.get("instance_id"),
                client_id=m.get("client_id") or "",
                host=str(m.get("client_host") or "").lstrip("/"),
                process_id=str(m.get("process_id") or ""),
                member_epoch=m.get("member_epoch", -1),
                topology_epoch=m.get("topology_epoch", -1),
                is_classic=bool(m.get("is_classic")),
                assignment=_assignment(m.get("assignment")),
                target_assignment=_assignment(m.get("target_assignment")),
            ) for m in raw.get("members") or []), key=lambda m: m.member_id)),
        coordinator=coordinator,
        error=protocol.error_text(raw.get("error_code", 0), raw.get("error_message")),
    )


def describe_streams(admin: KafkaAdminClient, group_ids: list[str]) -> dict[str, StreamsGroup]:
    """Describe streams groups with one StreamsGroupDescribe per coordinator. A group that is not a
    streams group comes back with its error (GROUP_ID_NOT_FOUND)."""
    request_class = protocol.classes()["StreamsGroupDescribeRequest"]

    async def run() -> dict[str, StreamsGroup]:
        found: dict[str, StreamsGroup] = {}
        for node, ids in (await protocol.by_coordinator(admin, group_ids)).items():
            request = request_class(group_ids=ids, include_authorized_operations=False)
            response = await admin._manager.send(request, node_id=node)
            for g in response.to_dict()["groups"]:
                found[g["group_id"]] = read_group(g, node)
        return found

    return admin._manager.run(run)  # type: ignore[no-any-return]
