"""A connector's offsets (KIP-875): read them, and on a STOPPED connector reset or alter them, always
previewed first (each partition's current offset beside its new one), checked here before Connect is
asked, and audited. Views and the API only parse and render.

A source connector's partitions and offsets are what its plugin keeps (FileStreamSource: {"filename"}
-> {"position"}); a sink connector's are its consumer group's (connect-<name>): {"kafka_topic",
"kafka_partition"} -> {"kafka_offset"}. An alter names only the partitions it changes; an offset of
null removes that partition's offset. Connect refuses both changes unless the connector is STOPPED:
the console says so first, in a sentence, rather than passing on Connect's 400.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from connect_app import services
from connect_app.client import ConnectRefused
from console.audit import audited
from console.errors import BadParameter, ConsoleError

MAX_PARTITIONS = 10_000  # partitions one alter may name (a larger change is a script's job, in parts)
AUDIT_ROWS = 200  # changes kept in an audit entry (the count says how many there were)
INT64_MAX = 2**63 - 1
SINK_PARTITION_KEYS = frozenset({"kafka_topic", "kafka_partition"})


class NotStopped(ConsoleError):
    """The connector runs (or is paused): Connect changes offsets only while it is STOPPED."""

    http_status = 409


@dataclass(frozen=True)
class Offsets:
    connect: str
    name: str
    type: str  # source or sink
    state: str  # the connector's state as Connect says now
    offsets: list[dict[str, Any]]  # [{partition, offset}], sorted by partition


@dataclass(frozen=True)
class Plan:
    """What a change would do: per partition its current and new offset (None: none / removed)."""

    current: Offsets
    changes: list[dict[str, Any]]  # {partition, current, new, change: set|add|remove|unchanged}
    blocked: str = ""  # why it cannot be applied now (not stopped), else ""

    def as_dict(self) -> dict[str, Any]:
        return {"connector": self.current.name, "connect": self.current.connect, "type": self.current.type,
                "state": self.current.state, "blocked": self.blocked or None, "changes": self.changes}


def _key(partition: Any) -> bytes:
    return orjson.dumps(partition, option=orjson.OPT_SORT_KEYS)


def read(cluster: str, connect: str | None, name: str) -> Offsets:
    """The connector's offsets and state, as Connect says now."""
    services.check_name(name)
    target = services.locate(cluster, name, connect)
    c = services.client(target)
    try:
        status = c.status(name)
        found = c.offsets(name)
    except ConnectRefused as exc:
        if exc.connect_status == 404:
            raise services.NotFound(f"Connect cluster '{target.name}' of cluster '{cluster}' has no connector '{name}'.") from None
        raise
    rows = sorted(({"partition": o.get("partition") or {}, "offset": o.get("offset")} for o in found), key=lambda o: _key(o["partition"]))
    return Offsets(connect=target.name, name=name, type=status.type, state=status.state, offsets=rows)


def _blocked(current: Offsets) -> str:
    if current.state == "STOPPED":
        return ""
    return (f"Connector '{current.name}' is {current.state}: stop it first (Connect changes a connector's offsets only while "
            "it is STOPPED), then resume it after the change.")


def check_offsets(value: Any, kind: str) -> list[dict[str, Any]]:
    """An alter's `offsets`: a list of {partition: {...}, offset: {...} or null}; a sink's name a topic
    partition and a kafka_offset. Each mistake is one sentence naming the entry."""
    if not isinstance(value, list) or not value:
        raise BadParameter("'offsets' must be a non-empty list of {\"partition\": {...}, \"offset\": {...} or null}.")
    if len(value) > MAX_PARTITIONS:
        raise BadParameter(f"'offsets' names {len(value)} partitions; one change may name at most {MAX_PARTITIONS}.")
    seen: set[bytes] = set()
    out = []
    for i, entry in enumerate(value):
        where = f"offsets[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"partition", "offset"} or "partition" not in entry or "offset" not in entry:
            raise BadParameter(f"{where} must be an object with exactly 'partition' and 'offset'.")
        partition, offset = entry["partition"], entry["offset"]
        if not isinstance(partition, dict) or not partition:
            raise BadParameter(f"{where}.partition must be a non-empty object (such as {{\"filename\": ...}} or "
                               "{\"kafka_topic\": ..., \"kafka_partition\": 0}).")
        if offset is not None and (not isinstance(offset, dict) or not offset):
            raise BadParameter(f"{where}.offset must be a non-empty object, or null to remove the partition's offset.")
        if kind == "sink":
            _check_sink(where, partition, offset)
        key = _key(partition)
        if key in seen:
            raise BadParameter(f"{where} names the same partition as an earlier entry.")
        seen.add(key)
        out.append({"partition": partition, "offset": offset})
    return out


def _check_sink(where: str, partition: dict[str, Any], offset: dict[str, Any] | None) -> None:
    if set(partition) != SINK_PARTITION_KEYS:
        raise BadParameter(f"{where}.partition of a sink connector must have exactly 'kafka_topic' and 'kafka_partition'.")
    topic, number = partition["kafka_topic"], partition["kafka_partition"]
    if not isinstance(topic, str) or not topic.strip():
        raise BadParameter(f"{where}.partition.kafka_topic must be a topic name.")
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise BadParameter(f"{where}.partition.kafka_partition must be a partition number (0 or more).")
    if offset is not None:
        value = offset.get("kafka_offset")
        if set(offset) != {"kafka_offset"} or isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
            raise BadParameter(f"{where}.offset of a sink connector must be {{\"kafka_offset\": N}} with N 0 or more, or null.")


def preview_alter(cluster: str, connect: str | None, name: str, offsets: Any) -> Plan:
    check_offsets(offsets, "")  # (its shape, before Connect is asked; a sink's keys once its type is known)
    current = read(cluster, connect, name)
    wanted = check_offsets(offsets, current.type)
    now = {_key(o["partition"]): o["offset"] for o in current.offsets}
    changes = []
    for o in wanted:
        before = now.get(_key(o["partition"]))
        change = ("unchanged" if before == o["offset"] else "remove" if o["offset"] is None
                  else "add" if before is None else "set")
        changes.append({"partition": o["partition"], "current": before, "new": o["offset"], "change": change})
    return Plan(current=current, changes=changes, blocked=_blocked(current))


def preview_reset(cluster: str, connect: str | None, name: str) -> Plan:
    current = read(cluster, connect, name)
    changes = [{"partition": o["partition"], "current": o["offset"], "new": None, "change": "remove"} for o in current.offsets]
    return Plan(current=current, changes=changes, blocked=_blocked(current))


def _applied(plan: Plan) -> None:
    if plan.blocked:
        raise NotStopped(plan.blocked)


def alter(user: Any, cluster: str, connect: str | None, name: str, offsets: Any) -> tuple[services.Outcome, Plan]:
    plan = preview_alter(cluster, connect, name, offsets)
    target = services.connect_config(cluster, plan.current.connect)
    details = {"connect": target.name, "type": plan.current.type, "partitions": len(plan.changes),
               "changes": plan.changes[:AUDIT_ROWS]}
    with audited(user, "connector_offsets_alter", cluster=cluster, target=name, details=details) as entry:
        _applied(plan)
        entry["connect_message"] = services.client(target).alter_offsets(name, [{"partition": c["partition"], "offset": c["new"]}
                                                                               for c in plan.changes])
    n = len(plan.changes)
    return services.Outcome(f"Altered the offsets of {n} partition{'s' if n != 1 else ''} of connector '{name}'; resume it to "
                            "carry on from them.", {"connect": target.name}), plan


def reset(user: Any, cluster: str, connect: str | None, name: str, confirm: str) -> tuple[services.Outcome, Plan]:
    """Forget every offset of a stopped connector; `confirm` must repeat its name."""
    services.check_name(name)
    if confirm != name:
        raise BadParameter(f"Type the connector's name, '{name}', to confirm the reset of its offsets.")
    plan = preview_reset(cluster, connect, name)
    target = services.connect_config(cluster, plan.current.connect)
    details = {"connect": target.name, "type": plan.current.type, "partitions": len(plan.changes),
               "offsets_before": plan.current.offsets[:AUDIT_ROWS]}
    with audited(user, "connector_offsets_reset", cluster=cluster, target=name, details=details) as entry:
        _applied(plan)
        entry["connect_message"] = services.client(target).reset_offsets(name)
    start = "from the start of its source" if plan.current.type == "source" else "as its consumer group's auto.offset.reset says"
    return services.Outcome(f"Reset the offsets of connector '{name}' ({len(plan.changes)} partitions); resumed, it reads "
                            f"{start}.", {"connect": target.name}), plan
