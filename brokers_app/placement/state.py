"""The planner's working state: replica sets as sets, per-broker counts, and the indexes that
find the cheapest move, all kept in step with every replica placed or removed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from brokers_app.placement.model import ClusterLayout, Scope
from console.gateway.types import TopicPartition


class PlannerState:
    """Mutable working state of one plan; replica sets are sets, the order is decided at the end."""

    def __init__(self, layout: ClusterLayout, scope: Scope) -> None:
        self.targets = scope.targets
        self.target_set = set(scope.targets)
        self.rack = scope.racks
        self.rack_aware = scope.rack_aware
        self.num_racks = scope.num_racks
        self.preferred_targets = set(scope.added)
        self.keys: list[TopicPartition] = [p.key for t in scope.topics for p in layout.topics[t]]
        self.info = {k: layout.by_key[k] for k in self.keys}
        self.parts: dict[TopicPartition, set[int]] = {k: set(self.info[k].replicas) for k in self.keys}
        self.orig: dict[TopicPartition, frozenset[int]] = {k: frozenset(v) for k, v in self.parts.items()}
        self.size = {k: self.info[k].size for k in self.keys}
        rf = scope.replication_factor
        self.rf = {k: rf if rf is not None else len(v) for k, v in self.parts.items()}
        # Racks each partition must span: as many as possible (Kafka's rack-aware rule).
        self.need = {k: min(n, self.num_racks) if self.rack_aware else 1 for k, n in self.rf.items()}
        self.required = 0
        # Counts of in-scope replicas (the balance goal) and of all replicas (a tie-break).
        self.count: Counter[int] = Counter({b: 0 for b in self.targets})
        self.total: Counter[int] = Counter()
        self.topic_count: Counter[tuple[str, int]] = Counter()
        for p in layout.partitions:
            for b in set(p.replicas):
                self.total[b] += 1
        # Partitions by broker: on it now, and added there by this plan. Dicts as ordered sets, so a
        # plan never depends on the iteration order of a set of strings (which changes with the hash seed).
        self.on: dict[int, dict[TopicPartition, None]] = {b: {} for b in self.targets}
        self.added: dict[int, dict[TopicPartition, None]] = {b: {} for b in self.targets}
        # (src, dst) -> partitions on src that were on dst before this plan: moving them back is free.
        self.back: dict[tuple[int, int], dict[TopicPartition, None]] = {}
        for k, bs in self.parts.items():
            for b in bs:
                self.count[b] += 1
                self.topic_count[(k[0], b)] += 1
                self.on.setdefault(b, {})[k] = None
        # Indexes for balancing, built only when counts need balancing (see _index_for_balancing).
        self.indexed = False
        self.flexible: dict[int, dict[TopicPartition, None]] = {}
        self.cheap: dict[int, list[TopicPartition]] = {}
        self.cheap_index: dict[int, dict[TopicPartition, int]] = {}
        self.cursor: dict[int, dict[int, int]] = {}  # src -> dst -> entries of cheap[src] known unmovable
        self.pending: dict[int, dict[int, set[int]]] = {}  # src -> dst -> entries behind the cursor since changed

    def _index_for_balancing(self) -> None:
        """Per broker, its original in-scope replicas cheapest first (followers before leaders), with a
        cursor per destination past the entries found unmovable there. Only a change to a partition's
        replicas can make it movable again, so a changed entry behind a cursor is noted as pending
        and looked at first; no scan repeats itself.
        Rack-aware: per broker, the partitions whose replica there could move to another rack at all;
        with one replica per rack (the usual layout) there are none, and knowing it saves scanning
        thousands of partitions for a move that cannot exist."""
        originals: dict[int, list[TopicPartition]] = {b: [] for b in self.targets}
        for k in self.keys:
            for b in self.orig[k]:
                if b in originals:
                    originals[b].append(k)
        for b, ks in originals.items():
            ordered = sorted(ks, key=self._cheapness(b))
            self.cheap[b] = ordered
            self.cheap_index[b] = {k: i for i, k in enumerate(ordered)}
            self.cursor[b] = {}
            self.pending[b] = {}
        if self.rack_aware:
            for k in self.keys:
                self._index_flexible(k, add=True)
        self.indexed = True

    def _cheapness(self, broker: int) -> Any:
        return lambda k: (self.size[k], self.info[k].current_leader == broker, k)

    # Bookkeeping

    def _is_flexible(self, k: TopicPartition, b: int) -> bool:
        rack = self.rack
        own = rack.get(b)
        others = [rack.get(r) for r in self.parts[k] if r != b]
        distinct = len(set(others) | {own})
        return own in others or distinct < self.num_racks or distinct > self.need[k]

    def _index_flexible(self, k: TopicPartition, add: bool) -> None:
        for b in self.parts[k]:
            if b not in self.target_set:
                continue
            if not add:
                self.flexible.get(b, {}).pop(k, None)
            elif self._is_flexible(k, b):
                self.flexible.setdefault(b, {})[k] = None

    def _place(self, k: TopicPartition, b: int) -> None:
        if self.indexed and self.rack_aware:
            self._index_flexible(k, add=False)
        self.parts[k].add(b)
        self.count[b] += 1
        self.total[b] += 1
        self.topic_count[(k[0], b)] += 1
        self.on.setdefault(b, {})[k] = None
        for d in self.orig[k]:
            if d not in self.parts[k]:
                self.back.setdefault((b, d), {})[k] = None
        if b in self.orig[k]:
            for x in self.parts[k]:
                self.back.get((x, b), {}).pop(k, None)
        else:
            self.added.setdefault(b, {})[k] = None
        if self.indexed:
            self._rewind(k)
            if self.rack_aware:
                self._index_flexible(k, add=True)

    def _unplace(self, k: TopicPartition, b: int) -> None:
        if self.indexed and self.rack_aware:
            self._index_flexible(k, add=False)
        self.parts[k].discard(b)
        self.count[b] -= 1
        self.total[b] -= 1
        self.topic_count[(k[0], b)] -= 1
        del self.on[b][k]
        for d in self.orig[k]:
            self.back.get((b, d), {}).pop(k, None)
        if b in self.orig[k]:
            for x in self.parts[k]:
                self.back.setdefault((x, b), {})[k] = None
        else:
            del self.added[b][k]
        if self.indexed:
            self._rewind(k)
            if self.rack_aware:
                self._index_flexible(k, add=True)

    def _rewind(self, k: TopicPartition) -> None:
        for s in self.orig[k]:
            index = self.cheap_index.get(s, {}).get(k)
            if index is not None:
                pending = self.pending[s]
                for d, at in self.cursor[s].items():
                    if index < at:
                        pending.setdefault(d, set()).add(index)

    def _move(self, k: TopicPartition, src: int, dst: int) -> None:
        self._unplace(k, src)
        self._place(k, dst)

    def _racks(self, brokers: Iterable[int]) -> Counter[str | None]:
        return Counter(self.rack.get(b) for b in brokers)

    def _can_move(self, k: TopicPartition, src: int, dst: int) -> bool:
        replicas = self.parts[k]
        if dst in replicas or dst not in self.target_set:
            return False
        if not self.rack_aware or self.rack[src] == self.rack[dst]:
            return True
        rack = self.rack
        racks = {rack.get(b) for b in replicas if b != src}
        racks.add(rack[dst])
        return len(racks) >= self._need_racks(k)

    def _need_racks(self, k: TopicPartition) -> int:
        return self.need[k]

    def _place_key(self, k: TopicPartition, b: int) -> tuple[int, bool, int, int, bool, int]:
        """Where a new replica goes: least loaded, where it already was, fewest of its topic, newest broker."""
        return (self.count[b], b not in self.orig[k], self.topic_count[(k[0], b)], self.total[b],
                b not in self.preferred_targets, b)

    def _move_cost(self, k: TopicPartition, src: int, dst: int) -> int:
        """Bytes a move adds to the plan: a replica going back is free, undoing an added one refunds it."""
        return self.size[k] * ((dst not in self.orig[k]) - (src not in self.orig[k]))
