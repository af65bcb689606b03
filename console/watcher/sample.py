"""What a sampling pass is asked for (Layout: the partitions to sample) and what it hands back to
the metadata cycle (Sample), in the watcher's process and its sampling process alike.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

from console.gateway.types import TopicPartition
from console.snapshots.model import GroupState
from console.snapshots.store import GroupParts


@dataclass(frozen=True)
class Sample:
    """One sampling pass. Its mappings are never changed once handed out (a pass whose read of them
    failed hands out the last pass's again: `OffsetColumns.merged`)."""

    started: float  # when it was asked for: what it is stamped with (a change noted before it is in it)
    # every end offset known, this pass's over the last ones (columns.OffsetColumns from a Sampler)
    ends: Mapping[TopicPartition, int]
    starts: Mapping[TopicPartition, int]
    # log-dir sizes per replica (snapshot.replica_sizes): columns.SizeColumns from a Sampler
    sizes: Mapping[TopicPartition, Mapping[str, int]] | None
    rates: Mapping[str, float]  # messages per second per topic
    groups: dict[str, GroupState] | None  # None when the groups could not be read
    groups_changed: bool  # the evaluation changed a group state it carried over
    changed: tuple[TopicPartition, ...]  # the partitions whose offsets or sizes differ from the pass before
    # From the sampling process: each group's stored part (its digest, and its JSON until a save
    # wrote it: store.GroupParts, keyed as stored, "g:<id>") and the topics it reads (by group id),
    # instead of `groups` (which is then None). The topics are a new mapping when anything in them
    # changed; the parts are one object, renewed in place as the next pass's pieces arrive
    # (DeltaMerger.apply_piece).
    group_parts: GroupParts | None = None
    group_topics: Mapping[str, list[str]] | None = None
    # The pass's number (each Sampler pass's is new in the process; 0: not a Sampler's), and the
    # number of the pass whose groups `groups_changed` compares with (0: none). Numbers, not the
    # groups: a sample holding the pass before's would keep a third generation of states alive.
    number: int = 0
    groups_since: int = 0


class Layout(Collection[TopicPartition]):
    """The partitions to sample, as each topic's name and partition numbers: what the watcher
    holds and sends its sampling process, with no (topic, partition) tuple per partition to keep.
    Iterating gives the (topic, partition) pairs, topic by topic."""

    __slots__ = ("_count", "topics")

    def __init__(self, topics: list[tuple[str, tuple[int, ...]]]) -> None:
        self.topics = topics
        self._count = sum(len(numbers) for _name, numbers in topics)

    def __iter__(self) -> Iterator[TopicPartition]:
        for name, numbers in self.topics:
            for number in numbers:
                yield (name, number)

    def __len__(self) -> int:
        return self._count

    def __contains__(self, tp: object) -> bool:
        return any(tp == (name, number) for name, numbers in self.topics for number in numbers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self.topics == other.topics

    __hash__ = None  # type: ignore[assignment]  # (compared, never a key)

