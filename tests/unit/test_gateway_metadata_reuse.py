"""The gateway's metadata: an unchanged topic comes back as the same Topic object (no Kafka: a stand-in
for librdkafka's admin client)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from console.gateway.client import ClusterGateway
from console.gateway.config import ClusterConfig


class Admin:
    def __init__(self) -> None:
        self.leaders = {"orders": 1, "logs": 2}

    def list_topics(self, timeout: float) -> Any:
        def part(pid: int, leader: int) -> Any:
            return SimpleNamespace(id=pid, leader=leader, replicas=[1, 2], isrs=[1, 2], error=None)

        topics = {name: SimpleNamespace(error=None, partitions={0: part(0, leader), 1: part(1, 2)})
                  for name, leader in self.leaders.items()}
        brokers = {b: SimpleNamespace(id=b, host="h", port=9092, rack=None) for b in (1, 2)}
        return SimpleNamespace(cluster_id="c1", brokers=brokers, topics=topics)


def test_an_unchanged_topic_is_the_same_object_and_a_changed_one_is_rebuilt() -> None:
    gw = ClusterGateway(ClusterConfig(name="x", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    admin = Admin()
    setattr(gw, "_admin_client", lambda: admin)  # noqa: B010 - a stand-in for the real client
    first = {t.name: t for t in gw.metadata().topics}
    admin.leaders["orders"] = 2
    second = {t.name: t for t in gw.metadata().topics}
    assert second["logs"] is first["logs"]
    assert second["orders"] is not first["orders"]
    assert [p.leader for p in second["orders"].partitions] == [2, 2]
    del admin.leaders["logs"]
    third = {t.name: t for t in gw.metadata().topics}
    assert list(third) == ["orders"] and third["orders"] is second["orders"]


def test_partitions_on_the_same_brokers_share_one_tuple_of_them() -> None:
    """librdkafka hands back new lists per partition at every call; the gateway keeps one tuple per
    list of broker ids (its Partitions and the raw fields it compares), whatever topic they are of."""
    gw = ClusterGateway(ClusterConfig(name="x", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    admin = Admin()
    setattr(gw, "_admin_client", lambda: admin)  # noqa: B010 - a stand-in for the real client
    parts = [p for t in gw.metadata().topics for p in t.partitions]
    assert len(parts) == 4 and all(p.replicas == (1, 2) for p in parts)
    assert all(p.replicas is parts[0].replicas and p.isr is parts[0].replicas for p in parts)
    admin.leaders["orders"] = 2  # (a changed topic: built again, on the same tuples)
    again = [p for t in gw.metadata().topics for p in t.partitions]
    assert all(p.replicas is parts[0].replicas for p in again)
    kept = [raw for raw, _topic in gw._topic_cache.values()]
    assert all(fields[2] is parts[0].replicas and fields[3] is parts[0].replicas for raw in kept for fields in raw[1])


def test_shared_ids_are_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from console.gateway import types

    monkeypatch.setattr(types, "IDS_MAX", 3)
    monkeypatch.setattr(types, "_ids", {})
    first = types.shared_ids([1, 2])
    assert types.shared_ids((1, 2)) is first
    for i in range(5):
        types.shared_ids([i, 9])
    assert len(types._ids) <= 3
    assert types.shared_ids([1, 2]) == (1, 2)


def test_the_answers_held_per_partition_group_and_member_carry_no_attribute_dict() -> None:
    """The watcher holds a Partition per partition (300,000) and the sampling process a
    ConsumerGroup per group and a GroupMember per member at each pass: slots, no dict each."""
    import pickle

    from console.gateway.types import ConsumerGroup, GroupMember, Partition

    p = Partition(topic="t", partition=0, leader=1, replicas=(1, 2), isr=(1, 2))
    m = GroupMember(member_id="m", client_id="c", host="/h", assignment=(("t", 0),))
    g = ConsumerGroup(group_id="g", state="Stable", protocol_type="consumer", group_type="classic", assignor="range",
                      members=(m,))
    for obj in (p, m, g):
        assert not hasattr(obj, "__dict__")
        assert pickle.loads(pickle.dumps(obj)) == obj  # (the sampling process gets them pickled from tools and tests)
