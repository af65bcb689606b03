"""Small builders for snapshots, so each test states only what matters to it."""

from __future__ import annotations

from collections.abc import Iterable

from console.snapshots.model import BrokerState, PartitionState, Snapshot, TopicState

TAKEN_AT = 1_700_000_000.0


def broker(bid: int, up: bool = True, rack: str | None = None) -> BrokerState:
    return BrokerState(id=bid, host=f"kafka-{bid}.example", port=9090 + bid, rack=rack, up=up)


def part(
    n: int = 0,
    leader: int = 1,
    replicas: Iterable[int] = (1, 2, 3),
    isr: Iterable[int] | None = None,
    offline_replicas: Iterable[int] = (),
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> PartitionState:
    replicas = list(replicas)
    return PartitionState(
        partition=n,
        leader=leader,
        replicas=replicas,
        isr=list(replicas if isr is None else isr),
        offline_replicas=list(offline_replicas),
        start_offset=start_offset,
        end_offset=end_offset,
    )


def topic(name: str, *partitions: PartitionState, internal: bool = False, min_isr: int | None = None) -> TopicState:
    if not partitions:
        partitions = tuple(part(n, leader=n % 3 + 1) for n in range(3))
    return TopicState(name=name, internal=internal, partitions=list(partitions), min_isr=min_isr)


def snapshot(
    *topics: TopicState,
    brokers: Iterable[BrokerState] | None = None,
    controller_id: int | None = 1,
    reachable: bool = True,
    taken_at: float | None = TAKEN_AT,
    cluster: str = "main",
    **extra: object,
) -> Snapshot:
    """A reachable cluster of three live brokers holding `topics` (by default one healthy topic)."""
    if brokers is None:
        brokers = [broker(1), broker(2), broker(3)]
    if not topics:
        topics = (topic("orders", min_isr=2),)
    return Snapshot(
        cluster=cluster,
        taken_at=taken_at,
        checked_at=taken_at,
        reachable=reachable,
        cluster_id="cluster-id-1",
        controller_id=controller_id,
        brokers={b.id: b for b in brokers},
        topics={t.name: t for t in topics},
        **extra,  # type: ignore[arg-type]
    )
