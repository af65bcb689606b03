"""What `kafka-reassign-partitions --generate` would propose for a request, so a plan can be shown
beside it: Kafka's placement modelled faithfully, and its movement averaged over its random choices."""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from brokers_app.placement.model import Assignment, ClusterLayout, PlanRequest, Scope, resolve


@dataclass(frozen=True)
class GenerateEstimate:
    """What `kafka-reassign-partitions --generate` would move, averaged over its random start points."""

    bytes: float
    replicas: float


class _KafkaPlacer:
    """Kafka's AdminUtils.assignReplicasToBrokers, the placement `kafka-reassign-partitions --generate`
    uses (and ZooKeeper-era topic creation; KRaft's controller uses StripedReplicaPlacer instead).

    Rack-unaware: first replicas round-robin over the broker list from a random start; the other
    replicas follow at a shift that grows by one after every full round. Rack-aware (every broker has
    a rack): the same over a list that alternates racks, skipping a broker whose rack already holds a
    replica while some rack holds none. Memoised: a partition's list depends only on its first index
    and the shift modulo (brokers - 1)."""

    def __init__(self, brokers: Sequence[int], racks: Mapping[int, str] | None) -> None:
        if racks is None:
            self.arranged = sorted(brokers)  # describeCluster order, which brokers return by id
            self.num_racks = 1
        else:
            by_rack: dict[str, list[int]] = {}
            for b in sorted(brokers):
                by_rack.setdefault(racks[b], []).append(b)
            queues = [deque(by_rack[r]) for r in sorted(by_rack)]
            self.arranged = []
            while len(self.arranged) < len(brokers):
                for q in queues:
                    if q:
                        self.arranged.append(q.popleft())
            self.num_racks = len(by_rack)
        self.racks = racks
        self.n = len(self.arranged)
        self._memo: dict[tuple[int, int, int], tuple[int, ...]] = {}

    def shift_key(self, shift: int) -> int:
        return (shift * self.num_racks) % (self.n - 1) if self.n > 1 else 0

    def replicas(self, first: int, key: int, rf: int) -> tuple[int, ...]:
        memo_key = (first, key, rf)
        hit = self._memo.get(memo_key)
        if hit is not None:
            return hit
        n, arranged = self.n, self.arranged
        out = [arranged[first]]
        if self.racks is None:
            out += [arranged[(first + 1 + (key + j) % (n - 1)) % n] for j in range(rf - 1)]
        else:
            racks = self.racks
            used_racks, used = {racks[out[0]]}, {out[0]}
            k = 0
            for _ in range(rf - 1):
                while True:
                    broker = arranged[(first + 1 + (key + k) % (n - 1)) % n]
                    k += 1
                    rack = racks[broker]
                    if (rack not in used_racks or len(used_racks) == self.num_racks) and (broker not in used or len(used) == n):
                        out.append(broker)
                        used_racks.add(rack)
                        used.add(broker)
                        break
        result = tuple(out)
        self._memo[memo_key] = result
        return result

    def assign(self, n_partitions: int, rf: int, start: int, shift: int) -> list[tuple[int, ...]]:
        lists = []
        for p in range(n_partitions):
            if p > 0 and p % self.n == 0:
                shift += 1
            lists.append(self.replicas((p + start) % self.n, self.shift_key(shift), rf))
        return lists


def _kafka_placer(scope: Scope) -> _KafkaPlacer:
    racks = {b: r for b, r in scope.racks.items() if r is not None} if scope.rack_aware else None
    return _KafkaPlacer(scope.targets, racks)


def _kafka_rf(layout: ClusterLayout, scope: Scope, topic: str) -> int:
    # Kafka takes the replica count of one partition of the topic for all of them.
    return scope.replication_factor or len(set(layout.topics[topic][0].replicas))


def kafka_generate(layout: ClusterLayout, request: PlanRequest, rng: random.Random | None = None) -> Assignment:
    """What `kafka-reassign-partitions --generate` proposes for the same request: every partition of the
    in-scope topics re-placed from scratch over the brokers the request allows, one random start
    index and one random shift per topic (pass `rng` to fix them).

    A faithful model of ReassignPartitionsCommand.calculateAssignment + AdminUtils.assignReplicasToBrokers,
    approximate only where Kafka is unspecified: brokers are ordered by id (Kafka keeps describeCluster's
    order), the topic's replication factor is its lowest partition's (Kafka takes an arbitrary one), a
    replication factor change re-places with the new factor (the tool cannot change it; this is what
    re-creating the topic would do), and with some brokers lacking a rack placement ignores racks, as
    `--disable-rack-aware` does (the tool refuses otherwise). For decommission the topics are those
    with a replica on the removed brokers and the broker list is the others."""
    scope = resolve(layout, request)
    rng = rng or random.Random()
    placer = _kafka_placer(scope)
    result: Assignment = {}
    for topic in scope.topics:
        partitions = layout.topics[topic]
        lists = placer.assign(len(partitions), _kafka_rf(layout, scope, topic), rng.randrange(placer.n), rng.randrange(placer.n))
        for p, replicas in zip(partitions, lists, strict=True):
            result[p.key] = replicas
    return result


def kafka_generate_expected(layout: ClusterLayout, request: PlanRequest) -> GenerateEstimate:
    """Bytes and replicas `--generate` would move for the request, averaged exactly over its random choices."""
    return generate_expected(layout, resolve(layout, request))


def generate_expected(layout: ClusterLayout, scope: Scope) -> GenerateEstimate:
    placer = _kafka_placer(scope)
    n = placer.n
    total_bytes = 0.0
    total_replicas = 0.0
    for topic in scope.topics:
        rf = _kafka_rf(layout, scope, topic)
        for i, p in enumerate(layout.topics[topic]):
            # Over the n x n (start, shift) draws, the first index takes every value once per shift,
            # and the shift key's distribution depends only on how many full rounds came before.
            keys = Counter(placer.shift_key(shift + i // n) for shift in range(n))
            orig = set(p.replicas)
            moved = 0
            for first in range(n):
                for key, weight in keys.items():
                    moved += weight * sum(1 for b in placer.replicas(first, key, rf) if b not in orig)
            total_replicas += moved / (n * n)
            total_bytes += p.size * moved / (n * n)
    return GenerateEstimate(total_bytes, total_replicas)
