"""Streams groups (KIP-1071): what `kafka-streams-groups --describe` shows, for the group page and the
API: members with their active, standby and warm-up tasks, the topology's subtopologies with their
topics, and the lag of each subtopology's inputs (the group's committed offsets against the ends).

The description is asked of Kafka on each read (one StreamsGroupDescribe to the group's coordinator):
the watcher's snapshot keeps the group's members and offsets, not its topology or tasks. The lag comes
from the snapshot, as on every group page. Resets and deletes are the group's (services.py): Kafka
takes them as for any group, and only while the group is empty, as `kafka-streams-groups` requires.
"""

from __future__ import annotations

from typing import Any

from console import gateway
from console.errors import BadParameter
from console.gateway.streams import StreamsAssignment, StreamsGroup, Tasks
from console.snapshots import Snapshot
from consumers_app.group_rows import end_offsets, group, split_key


def _tasks(tasks: Tasks) -> list[dict[str, Any]]:
    return [{"subtopology": sid, "partitions": list(parts)} for sid, parts in tasks]


def _assignment(a: StreamsAssignment) -> dict[str, list[dict[str, Any]]]:
    return {"active": _tasks(a.active), "standby": _tasks(a.standby), "warmup": _tasks(a.warmup)}


def input_lag(snap: Snapshot, sg: StreamsGroup, committed: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    """Per subtopology, each input partition (source and repartition topics) with the group's committed
    offset, the end offset and the lag (None when either is unknown), and the subtopology's total."""
    topics = {t for s in sg.subtopologies for t in s.inputs}
    ends = end_offsets(snap, topics)
    out = []
    for s in sg.subtopologies:
        repartition = {name for name, _ in s.repartition_source_topics}
        rows: list[dict[str, Any]] = []
        for topic in s.inputs:
            parts = sorted(p for t, p in ends if t == topic)
            for p in parts:
                offset, end = committed.get((topic, p)), ends.get((topic, p))
                lag = max(end - offset, 0) if offset is not None and end is not None else None
                rows.append({"topic": topic, "partition": p, "repartition": topic in repartition,
                             "committed": offset, "end_offset": end, "lag": lag})
        known: list[int] = [r["lag"] for r in rows if r["lag"] is not None]
        out.append({"subtopology": s.subtopology_id, "lag": sum(known) if known else None,
                    "unknown_partitions": len(rows) - len(known), "partitions": rows})
    return out


def describe(cluster: str, snap: Snapshot, group_id: str) -> dict[str, Any]:
    """The streams group as `kafka-streams-groups --describe --members --verbose` and `--offsets` show
    it. A group of another kind is refused with a sentence; an unknown one is a 404."""
    g = group(snap, group_id)
    if g.group_type != "streams":
        raise BadParameter(f"Group '{group_id}' is a {g.group_type} group, not a streams group (KIP-1071).")
    sg = gateway.for_cluster(cluster).streams_group(group_id)
    committed = {split_key(k): v for k, v in g.offsets.items()}
    return {
        "group": sg.group_id,
        "state": sg.state,
        "group_epoch": sg.group_epoch,
        "assignment_epoch": sg.assignment_epoch,
        "topology_epoch": sg.topology_epoch,
        "coordinator": sg.coordinator,
        "members": [{
            "member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id, "host": m.host,
            "process_id": m.process_id, "member_epoch": m.member_epoch, "topology_epoch": m.topology_epoch,
            "protocol": "classic" if m.is_classic else "streams",
            "assignment": _assignment(m.assignment), "target_assignment": _assignment(m.target_assignment),
        } for m in sg.members],
        "subtopologies": [{
            "subtopology": s.subtopology_id, "source_topics": list(s.source_topics),
            "repartition_sink_topics": list(s.repartition_sink_topics),
            "repartition_source_topics": [{"topic": t, "partitions": n} for t, n in s.repartition_source_topics],
            "changelog_topics": list(s.changelog_topics),
        } for s in sg.subtopologies],
        "lag": input_lag(snap, sg, committed),
    }
