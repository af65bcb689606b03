"""Consumer, share and streams groups: their states, members and committed offsets; resets and deletes.

Read through kafka-python, which batches what librdkafka asks group by group (FindCoordinator,
DescribeGroups and OffsetFetch per coordinator); the new protocols' requests are in protocol.py.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Generator
from typing import Any

import kafka.errors as kp_errors
from kafka.admin import KafkaAdminClient

from console.gateway import protocol, streams
from console.gateway.classic_describe import describe_classic
from console.gateway.connections import Connections
from console.gateway.errors import ClusterUnavailable, InvalidRequest, NotFound
from console.gateway.streams import StreamsGroup
from console.gateway.translate import error_code_name, translate_error
from console.gateway.types import ConsumerGroup, GroupMember, TopicPartition

log = logging.getLogger(__name__)

_COORDINATOR_MOVED = re.compile(r"(?i)not.?coordinator|coordinator.?not.?available|coordinator.?load")
# Groups described at a time (GroupAdmin.consumer_group_chunks): what kafka-python's decoded answers hold at once.
DESCRIBE_CHUNK = 2000
# group_state: asked this many times while the group's coordinator answers with an error (moving, loading).
GROUP_STATE_ATTEMPTS = 4
GROUP_STATE_RETRY_SECONDS = 0.5

Naming = Callable[[TopicPartition], TopicPartition]


def _same_partition(tp: TopicPartition) -> TopicPartition:
    return tp


def _coordinator_error(error: str) -> bool:
    """A describe's per-group error that says nothing of the group: its coordinator moving, loading or
    not available (as opposed to none, "no such group", "not a group of this kind", not authorized)."""
    return any(name in error for name in ("NotCoordinator", "CoordinatorLoadInProgress", "CoordinatorNotAvailable"))


def _modern_group(gid: str, group_type: str, listing: dict[str, Any], d: dict[str, Any], named: Naming) -> ConsumerGroup:
    """A group of the new consumer protocol (KIP-848) or a share group (KIP-932) from protocol.describe."""
    members = tuple(sorted((
        GroupMember(
            member_id=m["member_id"],
            client_id=m["client_id"],
            host=m["host"],
            assignment=tuple([named(tp) for tp in m["assignment"]]),
            instance_id=m.get("instance_id"),
            epoch=m["epoch"],
            target_assignment=None if m.get("target_assignment") is None else tuple([named(tp) for tp in m["target_assignment"]]),
        )
        for m in d["members"]), key=lambda m: m.member_id))
    return ConsumerGroup(
        group_id=gid,
        state=d["state"] or listing.get("group_state") or "Unknown",
        protocol_type=listing.get("protocol_type") or group_type,
        group_type=group_type,
        assignor=d["assignor"] or "",
        members=members,
        error=d["error"],
        coordinator=d["coordinator"],
        generation=d["epoch"] if d["epoch"] >= 0 else None,
        assignment_epoch=d["assignment_epoch"] if d["assignment_epoch"] >= 0 else None,
    )


def _streams_group(gid: str, listing: dict[str, Any], g: StreamsGroup, named: Naming) -> ConsumerGroup:
    """A streams group (KIP-1071) as a group of the list: each member's partitions are those its active
    tasks read (task s/p reads partition p of each input topic of subtopology s)."""
    members = tuple(
        GroupMember(member_id=m.member_id, client_id=m.client_id, host=m.host, instance_id=m.instance_id, epoch=m.member_epoch,
                    assignment=tuple([named(tp) for tp in g.input_partitions(m.assignment.active)]))
        for m in g.members)
    return ConsumerGroup(group_id=gid, state=g.state if not g.error else listing.get("group_state") or "Unknown",
                         protocol_type=listing.get("protocol_type") or "streams", group_type="streams", assignor="",
                         members=members, error=g.error, coordinator=g.coordinator,
                         generation=g.group_epoch if g.group_epoch >= 0 else None,
                         assignment_epoch=g.assignment_epoch if g.assignment_epoch >= 0 else None)


def _classic_group(gid: str, group_type: str, listing: dict[str, Any], d: dict[str, Any], named: Naming,
                   coordinator: int | None) -> ConsumerGroup:
    """A classic group from DescribeGroups (or a group of a kind the console cannot describe)."""
    members = []
    for m in d.get("members", []):
        assignment = (m.get("member_assignment") or {}).get("assigned_partitions", [])
        members.append(GroupMember(
            member_id=m.get("member_id", ""),
            client_id=m.get("client_id", ""),
            host=str(m.get("client_host", "")).lstrip("/"),
            assignment=tuple([named(tp) for tp in sorted((a["topic"], p) for a in assignment for p in a["partitions"])]),
            instance_id=m.get("group_instance_id"),
        ))
    error = d.get("error")
    if group_type != "classic" and not error:
        error = f"The console cannot describe {group_type} groups yet; members are not shown."
    return ConsumerGroup(
        group_id=gid,
        state=(d.get("group_state") if group_type == "classic" else None) or listing.get("group_state") or "Unknown",
        protocol_type=d.get("protocol_type", listing.get("protocol_type", "")) or listing.get("protocol_type") or "",
        group_type=group_type,
        assignor=d.get("protocol_data", "") or "",
        members=tuple(sorted(members, key=lambda m: m.member_id)),
        error=error,
        coordinator=coordinator,
    )


def _refused(result: dict[Any, Any]) -> dict[str, str]:
    """The partitions of a kafka-python offsets answer that Kafka refused, with the error's name."""
    return {f"{tp.topic}-{tp.partition}": err.__name__ for tp, err in result.items() if err is not kp_errors.NoError}


class GroupAdmin(Connections):
    """Consumer and share groups."""

    # Describing --------------------------------------------------------------------------------
    def consumer_groups(self, partition: Naming | None = None) -> list[ConsumerGroup]:
        """Every group with its state and members (`consumer_group_chunks`, as one list)."""
        return self._call("list consumer groups",
                          lambda: [g for chunk in self._group_chunks(partition or _same_partition) for g in chunk])

    def consumer_group_chunks(self, partition: Naming | None = None) -> Generator[list[ConsumerGroup], None, None]:
        """Every group with its state and members, DESCRIBE_CHUNK groups at a time, each chunk
        described when the one before has been taken, so that the caller, turning each into what it
        keeps, never holds every group's answer at once (kafka-python's decoded answers are several
        times the size of the ConsumerGroups made of them). One ListGroups per broker first, then for
        each chunk one batched FindCoordinator and per coordinator one DescribeGroups for its classic
        groups, one ConsumerGroupDescribe for its new-protocol groups (KIP-848) and one
        ShareGroupDescribe for its share groups (KIP-932); never one request per group. A read that
        fails raises GatewayError from the iteration. `partition`: what names each assigned
        partition in the answer, given the (topic, partition) tuple; the watcher's sampler passes
        its shared tuples, so that the answer holds no tuples of its own."""
        chunks = self._group_chunks(partition or _same_partition)
        while True:
            chunk = self._call("list consumer groups", lambda: next(chunks, None))
            if chunk is None:
                return
            yield chunk

    def _group_chunks(self, named: Naming) -> Generator[list[ConsumerGroup], None, None]:
        def describe(ids: list[str], kind_of: dict[str, str]) -> Callable[[KafkaAdminClient], tuple[
                dict[str, Any], dict[str, Any], dict[str, int | None]]]:
            def run(admin: KafkaAdminClient) -> tuple[dict[str, Any], dict[str, Any], dict[str, int | None]]:
                classic = [gid for gid in ids if kind_of[gid] == "classic"]
                described = describe_classic(admin, classic, protocol_of) if classic else {}
                modern: dict[str, Any] = {}
                if protocol.available():
                    for kind in ("consumer", "share"):
                        of_kind = [gid for gid in ids if kind_of[gid] == kind]
                        if of_kind:
                            modern.update(protocol.describe(admin, of_kind, kind))
                    of_streams = [gid for gid in ids if kind_of[gid] == "streams"]
                    if of_streams:
                        modern.update(streams.describe_streams(admin, of_streams))
                cluster = admin._manager.cluster  # coordinators found while describing, cached by kafka-python
                return described, modern, {gid: cluster.get_coordinator(gid) for gid in ids}

            return run

        listed = self._with_kafka_python("groups", lambda admin: admin.list_groups())
        kinds = {g["group_id"]: g for g in listed}
        del listed
        kind_of = {gid: g.get("group_type") or "classic" for gid, g in kinds.items()}
        protocol_of = {gid: g.get("protocol_type") or "" for gid, g in kinds.items()}
        ordered = sorted(kinds)
        for start in range(0, len(ordered), DESCRIBE_CHUNK):
            chunk = ordered[start:start + DESCRIBE_CHUNK]
            described, modern, coordinators = self._with_kafka_python("groups", describe(chunk, kind_of))
            moved = [gid for gid, d in [*described.items(), *modern.items()]
                     if _COORDINATOR_MOVED.search(str(d.error if isinstance(d, StreamsGroup) else d.get("error") or ""))]
            if moved:  # the coordinator moved (broker restart, leader election): find it afresh next time
                log.info("coordinator of %d group(s) moved (e.g. %s); renewing the groups client", len(moved), moved[0])
                self.forget_kafka_python("groups")
            groups: list[ConsumerGroup] = []
            for gid in chunk:
                listing = kinds[gid]
                group_type = listing.get("group_type") or "classic"
                if isinstance(modern.get(gid), StreamsGroup):
                    groups.append(_streams_group(gid, listing, modern[gid], named))
                elif gid in modern:
                    groups.append(_modern_group(gid, group_type, listing, modern[gid], named))
                else:
                    groups.append(_classic_group(gid, group_type, listing, described.get(gid, {}), named, coordinators.get(gid)))
            del described, modern
            yield groups

    def group_state(self, group_id: str) -> tuple[str, int, str]:
        """A group's state, member count and type ("classic", "consumer", "share" or "streams"), asked now (not
        from the snapshot): offset changes depend on it. NotFound when the group does not exist."""

        def run() -> tuple[str, int, str]:
            def describe(admin: KafkaAdminClient) -> tuple[str, int, str] | str:
                """The group's state, or the error of a coordinator that could not say (moving, loading)."""
                d = describe_classic(admin, [group_id], {}).get(group_id) or {}
                error = str(d.get("error") or "")
                if _coordinator_error(error):
                    return error
                if "not a classic group" in error and protocol.available():
                    for kind in ("consumer", "share"):
                        m = protocol.describe(admin, [group_id], kind).get(group_id) or {}
                        if m and not m["error"]:
                            return m["state"], len(m["members"]), kind
                        if m and _coordinator_error(str(m["error"])):
                            return str(m["error"])
                    sg = streams.describe_streams(admin, [group_id]).get(group_id)
                    if sg and not sg.error:
                        return sg.state, len(sg.members), "streams"
                    if sg and _coordinator_error(str(sg.error)):
                        return str(sg.error)
                state = d.get("group_state") or "Dead"
                if state == "Dead" and not d.get("members"):
                    raise NotFound(f"Consumer group '{group_id}' does not exist on cluster '{self.name}'.")
                return state, len(d.get("members", [])), "classic"

            def ask(admin: KafkaAdminClient) -> tuple[str, int, str]:
                # A coordinator moving or loading (after a broker restart) answers with an error and no
                # state: that is not "the group does not exist" (a reset of a live group must not
                # answer 404). Asked again, then a 503 that says so.
                for attempt in range(GROUP_STATE_ATTEMPTS):
                    answer = describe(admin)
                    if not isinstance(answer, str):
                        return answer
                    if attempt + 1 < GROUP_STATE_ATTEMPTS:
                        time.sleep(GROUP_STATE_RETRY_SECONDS)
                raise ClusterUnavailable(f"Consumer group '{group_id}' could not be described now: its coordinator "
                                         f"answered {answer[:200]}. Try again in a moment.")

            return self._with_kafka_python("group", ask)

        return self._call(f"describe consumer group '{group_id}'", run)

    def streams_group(self, group_id: str) -> StreamsGroup:
        """A streams group's members, tasks and topology, asked now (StreamsGroupDescribe). NotFound
        when there is no streams group of that id."""

        def run() -> StreamsGroup:
            if not protocol.available():
                raise NotFound(f"Cluster '{self.name}': the console cannot describe streams groups without Kafka's client jar.")
            g = self._with_kafka_python("group", lambda admin: streams.describe_streams(admin, [group_id])).get(group_id)
            if g is None or (g.error and "GroupIdNotFound" in g.error):
                raise NotFound(f"Streams group '{group_id}' does not exist on cluster '{self.name}'.")
            if g.error:
                if _COORDINATOR_MOVED.search(g.error):
                    self.forget_kafka_python("group")
                raise ClusterUnavailable(f"Streams group '{group_id}' could not be described now: {g.error[:200]}.")
            return g

        return self._call(f"describe streams group '{group_id}'", run)

    # Committed offsets -------------------------------------------------------------------------
    def group_offsets(self, group_ids: list[str]) -> dict[str, dict[TopicPartition, int]]:
        """Committed offsets of many groups: one OffsetFetch per coordinator (KIP-709)."""
        if not group_ids:
            return {}

        def run() -> dict[str, dict[TopicPartition, int]]:
            raw = self._with_kafka_python("groups", lambda admin: admin.list_group_offsets(list(group_ids)))
            return {
                gid: {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items() if meta.offset >= 0}
                for gid, offsets in raw.items()
            }

        return self._call("fetch committed offsets", run)

    def share_group_offsets(self, group_ids: list[str]) -> dict[str, dict[TopicPartition, tuple[int, int]]]:
        """Share groups' start offset and lag per partition: one DescribeShareGroupOffsets per coordinator."""
        if not group_ids or not protocol.available():
            return {}
        return self._call("fetch share group offsets",
                          lambda: self._with_kafka_python("groups", lambda admin: protocol.share_group_offsets(admin, group_ids)))

    def alter_group_offsets(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        def run() -> None:
            from kafka.structs import OffsetAndMetadata
            from kafka.structs import TopicPartition as KpTopicPartition

            request = {KpTopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
            failed = _refused(self._with_kafka_python("group", lambda admin: admin.alter_group_offsets(group_id, request)))
            if failed:
                raise InvalidRequest(f"Kafka refused some offsets of group '{group_id}': {failed}.")

        self._call(f"set the offsets of group '{group_id}'", run)

    def alter_share_group_offsets(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        def run() -> None:
            failed = self._with_kafka_python("group", lambda admin: protocol.alter_share_group_offsets(admin, group_id, offsets))
            if failed:
                raise InvalidRequest(f"Kafka refused some start offsets of share group '{group_id}': {failed}.")

        self._call(f"set the start offsets of share group '{group_id}'", run)

    def delete_share_group_offsets(self, group_id: str, topics: list[str]) -> None:
        def run() -> None:
            failed = self._with_kafka_python("group", lambda admin: protocol.delete_share_group_offsets(admin, group_id, topics))
            if failed:
                raise InvalidRequest(f"Kafka refused to delete the offsets of share group '{group_id}' on: {failed}.")

        self._call(f"delete offsets of share group '{group_id}'", run)

    def delete_group_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        def run() -> None:
            from kafka.structs import TopicPartition as KpTopicPartition

            tps = [KpTopicPartition(t, p) for t, p in partitions]
            failed = _refused(self._with_kafka_python("group", lambda admin: admin.delete_group_offsets(group_id, tps)))
            if failed:
                raise InvalidRequest(f"Kafka refused to delete some offsets of group '{group_id}': {failed}.")

        self._call(f"delete offsets of group '{group_id}'", run)

    def delete_group(self, group_id: str) -> None:
        def run() -> None:
            result = self._with_kafka_python("group", lambda admin: admin.delete_groups([group_id]))
            for gid, outcome in dict(result).items():
                if outcome != "OK":
                    raise translate_error(error_code_name(str(outcome)), str(outcome), self.name, f"delete group '{gid}'")

        self._call(f"delete consumer group '{group_id}'", run)
