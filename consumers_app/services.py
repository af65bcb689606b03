"""The changes to consumer groups, one function each: reset (or copy) offsets, delete a group, delete
its offsets on a topic. Each validates, calls the gateway, notes the change for the next reads and
writes one audit entry, so that a page and the API making the same change record the same entry."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from console import gateway, snapshots
from console.audit import audited
from console.auth import require
from console.errors import BadParameter
from console.gateway.errors import NotFound
from console.snapshots import GroupState, Snapshot
from consumers_app.group_rows import group, split_key

RESET_TO = {"earliest", "latest", "timestamp", "offset", "shift", "group"}


@dataclass
class ResetSpec:
    to: str
    topics: list[str] = field(default_factory=list)  # empty: every topic the group has offsets for
    partitions: dict[str, list[int]] = field(default_factory=dict)  # topic -> partitions (only these)
    timestamp_ms: int | None = None
    offset: int | None = None
    shift: int | None = None
    from_group: str | None = None


def _scope(snap: Snapshot, g: GroupState, spec: ResetSpec) -> list[tuple[str, int]]:
    committed = [split_key(k) for k in g.offsets]
    if spec.partitions:
        chosen = []
        for topic, parts in spec.partitions.items():
            t = snap.topics.get(topic)
            if t is None:
                raise NotFound(f"Topic '{topic}' does not exist on cluster '{snap.cluster}'.")
            known = {p.partition for p in t.partitions}
            bad = sorted(set(parts) - known)
            if bad:
                raise BadParameter(f"Topic '{topic}' has no partition {', '.join(map(str, bad))}.")
            chosen += [(topic, p) for p in parts]
        return sorted(set(chosen))
    if spec.topics:
        chosen = []
        for topic in spec.topics:
            t = snap.topics.get(topic)
            if t is None:
                raise NotFound(f"Topic '{topic}' does not exist on cluster '{snap.cluster}'.")
            chosen += [(topic, p.partition) for p in t.partitions]
        return sorted(chosen)
    if not committed:
        raise BadParameter(f"Group '{g.group_id}' has no committed offsets; name the topics to reset.")
    return sorted(committed)


def plan_reset(cluster: str, snap: Snapshot, group_id: str, spec: ResetSpec) -> list[dict[str, Any]]:
    """The preview: per partition the current committed offset, the new one and the lag after.
    New offsets are clamped to the partition's current start and end, as Kafka's own tool does."""
    if spec.to not in RESET_TO:
        raise BadParameter(f"'to' must be one of {', '.join(sorted(RESET_TO))}, not '{spec.to[:30]}'.")
    g = group(snap, group_id)
    gw = gateway.for_cluster(cluster)
    if g.group_type == "streams" and not spec.topics and not spec.partitions:
        # A streams group's own input topics, as `kafka-streams-groups --all-input-topics`: never its
        # repartition topics, whose records one subtopology wrote for another to read once.
        inputs = sorted({t for s in gw.streams_group(group_id).subtopologies for t in s.source_topics})
        if not inputs:
            raise BadParameter(f"Streams group '{group_id}' has no input topics in its topology; name the topics to reset.")
        spec = replace(spec, topics=inputs)
    scope = _scope(snap, g, spec)
    starts = gw.list_offsets(scope, "earliest")
    ends = gw.list_offsets(scope, "latest")
    current = {split_key(k): v for k, v in g.offsets.items()}
    if spec.to == "timestamp":
        if spec.timestamp_ms is None:
            raise BadParameter("Give the 'timestamp' to reset to.")
        if spec.timestamp_ms > time.time() * 1000 + 1000:
            raise BadParameter("The timestamp is in the future: there are no offsets there yet.")
        targets = gw.offsets_for_time(scope, spec.timestamp_ms)
    elif spec.to == "group":
        if not spec.from_group:
            raise BadParameter("Give the group to copy offsets from ('from_group').")
        other = {split_key(k): v for k, v in group(snap, spec.from_group).offsets.items()}
        missing = [f"{t}-{p}" for t, p in scope if (t, p) not in other]
        if missing:
            raise BadParameter(f"Group '{spec.from_group}' has no committed offset for {', '.join(missing[:10])}.")
        targets = {tp: other[tp] for tp in scope}
    else:
        targets = {}
        for tp in scope:
            if spec.to == "earliest":
                targets[tp] = starts.get(tp, 0)
            elif spec.to == "latest":
                targets[tp] = ends.get(tp, 0)
            elif spec.to == "offset":
                if spec.offset is None or spec.offset < 0:
                    raise BadParameter("Give a non-negative 'offset' to reset to.")
                targets[tp] = spec.offset
            else:
                if spec.shift is None:
                    raise BadParameter("Give the 'shift' (a positive or negative number of messages).")
                base = current.get(tp)
                if base is None:
                    raise BadParameter(f"Group '{group_id}' has no committed offset on {tp[0]}-{tp[1]} to shift from.")
                targets[tp] = base + spec.shift
    rows = []
    for tp in scope:
        lo, hi = starts.get(tp, 0), ends.get(tp, 0)
        new = min(max(targets[tp], lo), hi)
        rows.append({"topic": tp[0], "partition": tp[1], "current": current.get(tp), "new": new,
                     "start_offset": lo, "end_offset": hi, "lag_after": hi - new})
    return rows


def confirmed(group_id: str, confirm: str, change: str) -> None:
    """A change that loses a group's positions runs only when the group's id is typed again, on a page
    or in the API alike (`confirm`): a script or a stray click must not reach Kafka with a guess."""
    if confirm != group_id:
        given = "a different id" if confirm else "no confirmation"
        raise BadParameter(f"To {change}, give the group's id '{group_id}' again as 'confirm' ({given} was given); "
                           "nothing was changed.")


def check_sources(user: Any, cluster: str, spec: ResetSpec) -> None:
    """A reset that copies another group's offsets reads that group: the user must see it."""
    if spec.from_group:
        require(user, "group.view", cluster, group=spec.from_group)


def preview_reset(user: Any, cluster: str, snap: Snapshot, group_id: str, spec: ResetSpec) -> list[dict[str, Any]]:
    """What a reset would do (`plan_reset`), for a user who may see every group it reads; a preview
    changes nothing and is not audited."""
    check_sources(user, cluster, spec)
    return plan_reset(cluster, snap, group_id, spec)


def reset_offsets(user: Any, cluster: str, snap: Snapshot, group_id: str, spec: ResetSpec, confirm: str) -> list[dict[str, Any]]:
    """Reset the group's offsets as `spec` says (to another group's: a copy), audited with the new
    offsets; returns the plan applied."""
    with audited(user, "reset_offsets", cluster=cluster, target=group_id,
                 details={"to": spec.to, "topics": spec.topics, "partitions": spec.partitions}) as entry:
        plan = _apply_reset(user, cluster, snap, group_id, spec, confirm)
        entry["offsets"] = {f"{r['topic']}-{r['partition']}": r["new"] for r in plan}
    return plan


def _apply_reset(user: Any, cluster: str, snap: Snapshot, group_id: str, spec: ResetSpec, confirm: str) -> list[dict[str, Any]]:
    check_sources(user, cluster, spec)
    group(snap, group_id)  # an unknown group is a 404, as in the preview, before Kafka is asked
    confirmed(group_id, confirm, f"reset the offsets of group '{group_id}'")
    gw = gateway.for_cluster(cluster)
    state, members, kind = gw.group_state(group_id)
    if state not in {"Empty", "Dead"} or members:
        if kind == "streams":  # kafka-streams-groups resets an inactive group only, and so does Kafka
            raise BadParameter(f"Streams group '{group_id}' is {state} with {members} member{'s' if members != 1 else ''}: "
                               "its offsets can only be reset while the group is inactive (empty). Stop every "
                               "instance of the Streams application first.")
        raise BadParameter(f"Group '{group_id}' is {state} with {members} member{'s' if members != 1 else ''}: Kafka "
                           "only lets offsets be reset while the group is empty. Stop its consumers first.")
    plan = plan_reset(cluster, snap, group_id, spec)
    new = {(r["topic"], r["partition"]): r["new"] for r in plan}
    if kind == "share":  # a share group's start offsets (KIP-932)
        gw.alter_share_group_offsets(group_id, new)
    else:
        gw.alter_group_offsets(group_id, new)
    snapshots.note_change(cluster, {f"group:{group_id}": 1})
    return plan


def delete_group(user: Any, cluster: str, snap: Snapshot, group_id: str, confirm: str, internal_topics: bool = False) -> list[str]:
    """Delete the group (Kafka refuses one that has members), audited. With `internal_topics`, a streams
    group's repartition and changelog topics go too, as `kafka-streams-groups --delete
    --delete-all-internal-topics` does (they are named in its topology, read before the group goes);
    deleting topics is an admin's change. Returns the topics deleted."""
    with audited(user, "delete_group", cluster=cluster, target=group_id, details={"internal_topics": internal_topics}) as entry:
        g = group(snap, group_id)
        confirmed(group_id, confirm, f"delete group '{group_id}'")
        gw = gateway.for_cluster(cluster)
        topics: list[str] = []
        if internal_topics:
            if g.group_type != "streams":
                raise BadParameter(f"Group '{group_id}' is a {g.group_type} group: only a streams group has internal topics to delete.")
            topology = gw.streams_group(group_id).subtopologies
            topics = sorted({t for s in topology for t in (*s.changelog_topics, *(name for name, _ in s.repartition_source_topics))})
            for topic in topics:
                require(user, "topic.delete", cluster, topic=topic)
        gw.delete_group(group_id)
        snapshots.note_change(cluster, {f"group:{group_id}": 0})
        for topic in topics:
            gw.delete_topic(topic)
            snapshots.note_change(cluster, {f"topic:{topic}": 0})
        entry["topics"] = topics
    return topics


def delete_group_offsets(user: Any, cluster: str, snap: Snapshot, group_id: str, topic: str, confirm: str) -> int:
    """Delete the group's committed offsets on `topic`, audited with the partitions they were on;
    returns how many."""
    with audited(user, "delete_group_offsets", cluster=cluster, target=group_id, details={"topic": topic}) as entry:
        g = group(snap, group_id)
        confirmed(group_id, confirm, f"delete the offsets of group '{group_id}' on topic '{topic}'")
        parts = [split_key(k) for k in g.offsets if split_key(k)[0] == topic]
        if not parts:
            raise BadParameter(f"Group '{group_id}' has no committed offsets on topic '{topic}'.")
        if g.group_type == "share":  # share groups forget whole topics
            gateway.for_cluster(cluster).delete_share_group_offsets(group_id, [topic])
        else:
            gateway.for_cluster(cluster).delete_group_offsets(group_id, parts)
        snapshots.note_change(cluster, {f"group:{group_id}": 1})
        entry["partitions"] = len(parts)
    return len(parts)
