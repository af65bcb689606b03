"""Leader elections: preferred (any operator) and unclean (admins only, with a typed confirmation).

A preferred election moves each partition's leadership back to the first replica of its list, which
is where replica placement meant it to be; Kafka answers "not needed" where it already is. An unclean
election lets an out-of-sync replica lead a partition that has no in-sync leader: the partition comes
back, and what only the lost leader had is gone for good.
"""

from __future__ import annotations

from typing import Any

from console import gateway, snapshots
from console.errors import BadParameter
from console.gateway.errors import NotFound
from console.gateway.types import TopicPartition
from console.snapshots import Snapshot

UNCLEAN_WARNING = ("An unclean election makes an out-of-sync replica the leader: messages that only the lost leader "
                   "had are gone for good, and consumers may see offsets go back.")


def scope(snap: Snapshot, topics: list[str], partitions: list[TopicPartition]) -> list[TopicPartition] | None:
    """The partitions named (whole topics, single partitions); None when nothing is named: all of them."""
    if not topics and not partitions:
        return None
    chosen: set[TopicPartition] = set()
    for name in topics:
        t = snap.topics.get(name)
        if t is None:
            raise NotFound(f"Topic '{name}' does not exist on cluster '{snap.cluster}'.")
        chosen |= {(name, p.partition) for p in t.partitions}
    for name, number in partitions:
        t = snap.topics.get(name)
        if t is None:
            raise NotFound(f"Topic '{name}' does not exist on cluster '{snap.cluster}'.")
        if number not in {p.partition for p in t.partitions}:
            raise BadParameter(f"Topic '{name}' has no partition {number} (it has {len(t.partitions)}).")
        chosen.add((name, number))
    return sorted(chosen)


def _first_replica(snap: Snapshot, topic: str, number: int) -> int:
    """Where a preferred election puts the leader (-1: not known)."""
    p = snap.partition(topic, number)
    return p.replicas[0] if p is not None and p.replicas else -1


def elect(cluster: str, snap: Snapshot, unclean: bool, topics: list[str], partitions: list[TopicPartition],
          confirm: str = "") -> dict[str, Any]:
    """Run an election; an unclean one only with the cluster's name typed again as `confirm` (checked
    here, inside the audit of services.elect_leaders, so a refusal is recorded as one)."""
    if unclean and confirm != cluster:
        raise BadParameter(f"{UNCLEAN_WARNING} To go ahead, type the cluster's name ('{cluster}') as 'confirm'.")
    chosen = scope(snap, topics, partitions)
    if unclean and chosen is None:
        raise BadParameter("An unclean election names its topics or partitions; it is never run over the whole cluster.")
    leaders = {(t.name, p.partition): None if p.offline else p.leader
               for t in snap.topics.values() for p in t.partitions}
    results = gateway.for_cluster(cluster).elect_leaders(unclean, chosen)
    elected = [tp for tp, outcome in sorted(results.items()) if outcome is None][:snapshots.PARTITIONS_NOTED]
    if elected:
        # The user's next request shows the new leaders (snapshots.note_change; -1: any live leader).
        snapshots.note_change(cluster, {f"leader:{t}:{p}": -1 if unclean else _first_replica(snap, t, p) for t, p in elected})
    rows = [{"topic": t, "partition": p, "leader_before": leaders.get((t, p)),
             "result": "elected" if outcome is None else outcome}
            for (t, p), outcome in sorted(results.items())]
    return {
        "type": "unclean" if unclean else "preferred",
        "scope": "cluster" if chosen is None else f"{len(chosen)} partition{'s' if len(chosen) != 1 else ''}",
        "elected": sum(1 for r in rows if r["result"] == "elected"),
        "not_needed": sum(1 for r in rows if r["result"] == "not needed"),
        "failed": sum(1 for r in rows if r["result"] not in {"elected", "not needed"}),
        "partitions": rows,
    }
