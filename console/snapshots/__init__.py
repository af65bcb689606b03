"""The read model of a cluster: the snapshot the watcher writes and every page, API and socket reads.

Apps read cluster state only through this package's names: `live(cluster)` (or `latest`, `watched`,
`reachable`) for the latest snapshot, and `note_change` after a change they made, so the next read
waits until the snapshot shows it; `group_holders` to tell which groups a version changed. The
modules behind it: `model` (the dataclasses), `tallies` (page tallies), `encoding` (compact
encodings), `parts` and `part_cache` (the stored parts format), `store` and `loader` (the Redis
store, written by the watcher and read here), `changes` (read-your-writes notes) and `reader` (the
one reader)."""

from console.snapshots.encoding import Commits, GroupPartitions, ReplicaSizes
from console.snapshots.model import (
    BrokerState,
    GroupState,
    MemberState,
    PartitionState,
    QuorumMember,
    QuorumState,
    Snapshot,
    TopicState,
)
from console.snapshots.parts import group_holders
from console.snapshots.reader import (
    PARTITIONS_NOTED,
    Live,
    change_shown,
    latest,
    live,
    note_change,
    noted,
    reachable,
    require_snapshot,
    watched,
)
from console.snapshots.store import CELERY_HEARTBEAT_KEY, append_lag_history, heartbeat_age, lag_history
from console.snapshots.store import client as redis_client
from console.snapshots.tallies import TopicTally, tallied

__all__ = [
    "CELERY_HEARTBEAT_KEY",
    "PARTITIONS_NOTED",
    "BrokerState",
    "Commits",
    "GroupPartitions",
    "GroupState",
    "Live",
    "MemberState",
    "PartitionState",
    "QuorumMember",
    "QuorumState",
    "ReplicaSizes",
    "Snapshot",
    "TopicState",
    "TopicTally",
    "append_lag_history",
    "change_shown",
    "group_holders",
    "heartbeat_age",
    "lag_history",
    "latest",
    "live",
    "note_change",
    "noted",
    "reachable",
    "redis_client",
    "require_snapshot",
    "tallied",
    "watched",
]
