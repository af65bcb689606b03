"""Kafka requests kafka-python does not ship, for the groups of Kafka 4: ConsumerGroupDescribe (the new
consumer protocol, KIP-848); ShareGroupDescribe and Describe/Alter/DeleteShareGroupOffsets (share
groups, KIP-932); StreamsGroupDescribe (streams groups, KIP-1071: read in streams.py).

kafka-python builds each request and response from Apache Kafka's own JSON message definitions. The
definitions of these three are read from the kafka-clients jar that `make kafka-jars` downloads from
Maven Central (the same release as the cluster and the command-line tools), so nothing is copied here.
When the jar is missing, `available()` is False and the gateway describes only classic groups.

Each call sends one request per coordinator for all of its groups, never one per group.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import uuid
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import kafka.errors as kp_errors
import kafka.protocol.api_data as kp_api_data
from django.conf import settings
from kafka.admin import KafkaAdminClient
from kafka.protocol.api_message import ApiMessage

from console.gateway.types import TopicPartition

MESSAGES = ("ConsumerGroupDescribe", "ShareGroupDescribe", "DescribeShareGroupOffsets", "AlterShareGroupOffsets",
            "DeleteShareGroupOffsets", "StreamsGroupDescribe")

_lock = threading.Lock()
_classes: dict[str, type[ApiMessage]] | None = None
_COMMENT = re.compile(r"(?m)^\s*//.*$")


def _jar() -> Path | None:
    jars = sorted(Path(settings.KAFKA_LIB_DIR).glob("kafka-clients-*.jar"))
    return jars[-1] if jars else None


def _resolve(fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]]) -> None:
    """Inline the `commonStructs` a field refers to by type name, as kafka-python's loader does."""
    for f in fields:
        name = f["type"].removeprefix("[]")
        if name in common and "fields" not in f:
            f["fields"] = common[name]
        if "fields" in f:
            _resolve(f["fields"], common)


def _schema(jar: zipfile.ZipFile, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_COMMENT.sub("", jar.read(f"common/message/{name}.json").decode()))
    _resolve(data["fields"], {s["name"]: s["fields"] for s in data.get("commonStructs", [])})
    return data


def _build(name: str, schema: dict[str, Any]) -> type[ApiMessage]:
    # kafka-python's metaclass loads a message's schema by class name from its own package; hand it
    # this one instead while the class is created.
    original = kp_api_data.load_json
    kp_api_data.load_json = lambda *_args, **_kwargs: schema  # type: ignore[assignment]
    try:
        return type(ApiMessage)(name, (ApiMessage,), {"__slots__": ()})
    finally:
        kp_api_data.load_json = original


def classes() -> dict[str, type[ApiMessage]]:
    """Request and response classes by message name ("ConsumerGroupDescribeRequest", ...); empty
    when the kafka-clients jar is not there."""
    global _classes
    with _lock:
        if _classes is None:
            built: dict[str, type[ApiMessage]] = {}
            path = _jar()
            if path is not None:
                with zipfile.ZipFile(path) as jar:
                    for message in MESSAGES:
                        for kind in ("Request", "Response"):
                            built[message + kind] = _build(message + kind, _schema(jar, message + kind))
            _classes = built
        return _classes


def available() -> bool:
    return bool(classes())


def kafka_uuid(value: Any) -> str:
    """A member or topic id as Kafka's tools print it: URL-safe base64 without padding."""
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    return str(value)


def error_text(code: int, message: str | None) -> str | None:
    if not code:
        return None
    return str(kp_errors.for_code(code)(message or ""))


async def by_coordinator(admin: KafkaAdminClient, group_ids: list[str]) -> dict[int, list[str]]:
    coordinators = await admin._find_coordinator_ids(group_ids)
    grouped: dict[int, list[str]] = defaultdict(list)
    for gid, node in coordinators.items():
        grouped[node].append(gid)
    return grouped


def _assignment(raw: dict[str, Any] | None) -> list[TopicPartition]:
    if not raw:
        return []
    return sorted((t["topic_name"], p) for t in raw.get("topic_partitions") or [] for p in t["partitions"])


def describe(admin: KafkaAdminClient, group_ids: list[str], kind: str) -> dict[str, dict[str, Any]]:
    """Describe groups of one kind ("consumer" or "share") with one request per coordinator.

    Returns per group: state, epoch (the group epoch), assignment_epoch, assignor, error, coordinator,
    and members (member_id, instance_id, client_id, host, epoch, assignment and, for consumer
    groups, target_assignment)."""
    message = {"consumer": "ConsumerGroupDescribe", "share": "ShareGroupDescribe"}[kind]
    request_class = classes()[message + "Request"]

    async def run() -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for node, ids in (await by_coordinator(admin, group_ids)).items():
            request = request_class(group_ids=ids, include_authorized_operations=False)
            response = await admin._manager.send(request, node_id=node)
            for g in response.to_dict()["groups"]:
                found[g["group_id"]] = {
                    "state": g["group_state"],
                    "epoch": g["group_epoch"],
                    "assignment_epoch": g["assignment_epoch"],
                    "assignor": g["assignor_name"],
                    "error": error_text(g["error_code"], g.get("error_message")),
                    "coordinator": node,
                    "members": [
                        {
                            "member_id": kafka_uuid(m["member_id"]),
                            "instance_id": m.get("instance_id"),
                            "client_id": m["client_id"],
                            "host": str(m["client_host"]).lstrip("/"),
                            "epoch": m["member_epoch"],
                            "assignment": _assignment(m.get("assignment")),
                            "target_assignment": _assignment(m.get("target_assignment")) if "target_assignment" in m else None,
                        }
                        for m in g["members"]
                    ],
                }
        return found

    return admin._manager.run(run)  # type: ignore[no-any-return]


def share_group_offsets(admin: KafkaAdminClient, group_ids: list[str]) -> dict[str, dict[TopicPartition, tuple[int, int]]]:
    """Start offset and lag of every partition a share group has state for (the share-partition start
    offset is the share group's equivalent of a committed offset; the lag is the broker's own figure,
    which leaves out records already acknowledged beyond the start). One request per coordinator."""
    request_class = classes()["DescribeShareGroupOffsetsRequest"]

    async def run() -> dict[str, dict[TopicPartition, tuple[int, int]]]:
        found: dict[str, dict[TopicPartition, tuple[int, int]]] = {}
        for node, ids in (await by_coordinator(admin, group_ids)).items():
            group = request_class.DescribeShareGroupOffsetsRequestGroup  # type: ignore[attr-defined]
            request = request_class(groups=[group(group_id=gid, topics=None) for gid in ids])
            response = await admin._manager.send(request, node_id=node)
            for g in response.to_dict()["groups"]:
                offsets = found.setdefault(g["group_id"], {})
                for t in g["topics"]:
                    for p in t["partitions"]:
                        if p["error_code"] == 0 and p["start_offset"] >= 0:
                            offsets[(t["topic_name"], p["partition_index"])] = (p["start_offset"], p.get("lag", -1))
        return found

    return admin._manager.run(run)  # type: ignore[no-any-return]


def _raise_for(code: int, message: str | None, what: str) -> None:
    if code:
        raise kp_errors.for_code(code)(f"{what}: {message or ''}".rstrip(": "))


def alter_share_group_offsets(admin: KafkaAdminClient, group_id: str, offsets: dict[TopicPartition, int]) -> dict[str, str]:
    """Set a share group's start offsets (the group must be empty). Returns the partitions Kafka
    refused, "topic-partition" -> error."""
    request_class = classes()["AlterShareGroupOffsetsRequest"]
    topic_class = request_class.AlterShareGroupOffsetsRequestTopic  # type: ignore[attr-defined]
    partition_class = topic_class.AlterShareGroupOffsetsRequestPartition
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic[topic].append(partition_class(partition_index=partition, start_offset=offset))

    async def run() -> dict[str, str]:
        node = await admin._find_coordinator_id(group_id)
        request = request_class(group_id=group_id, topics=[topic_class(topic_name=t, partitions=ps) for t, ps in by_topic.items()])
        response = (await admin._manager.send(request, node_id=node)).to_dict()
        _raise_for(response["error_code"], response.get("error_message"), f"alter the offsets of share group '{group_id}'")
        return {f"{t['topic_name']}-{p['partition_index']}": str(error_text(p["error_code"], p.get("error_message")))
                for t in response["responses"] for p in t["partitions"] if p["error_code"]}

    return admin._manager.run(run)  # type: ignore[no-any-return]


def delete_share_group_offsets(admin: KafkaAdminClient, group_id: str, topics: list[str]) -> dict[str, str]:
    """Forget a share group's state on whole topics (the group must be empty). Returns the topics
    Kafka refused, topic -> error."""
    request_class = classes()["DeleteShareGroupOffsetsRequest"]
    topic_class = request_class.DeleteShareGroupOffsetsRequestTopic  # type: ignore[attr-defined]

    async def run() -> dict[str, str]:
        node = await admin._find_coordinator_id(group_id)
        request = request_class(group_id=group_id, topics=[topic_class(topic_name=t) for t in topics])
        response = (await admin._manager.send(request, node_id=node)).to_dict()
        _raise_for(response["error_code"], response.get("error_message"), f"delete the offsets of share group '{group_id}'")
        return {t["topic_name"]: str(error_text(t["error_code"], t.get("error_message"))) for t in response["responses"] if t["error_code"]}

    return admin._manager.run(run)  # type: ignore[no-any-return]
