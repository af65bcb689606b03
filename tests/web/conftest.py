"""In-process tests of pages, API and websockets against a snapshot written to the test Redis."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from console import gateway
from console.gateway.errors import ClusterUnavailable
from console.snapshots import store
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


@pytest.fixture(scope="session", autouse=True)
def _no_waits_for_what_never_comes() -> Iterator[None]:
    """The web layer runs no watcher and no broker: a Kafka call can only time out and a change's
    read-your-writes wait can only run out, so both are short here (5 s each per test otherwise)."""
    from django.conf import settings

    kept = settings.KAFKA_REQUEST_TIMEOUT, settings.READ_YOUR_WRITES_WAIT
    settings.KAFKA_REQUEST_TIMEOUT, settings.READ_YOUR_WRITES_WAIT = 1.0, 0.5
    yield
    settings.KAFKA_REQUEST_TIMEOUT, settings.READ_YOUR_WRITES_WAIT = kept


@pytest.fixture(scope="session", autouse=True)
def _socket_connects_wait_for_a_loaded_machine() -> Iterator[None]:
    """A socket's connect in these tests waits up to 10 s, not the communicator's default second: under
    `make test` the web layer shares two cores with the integration chains, and a handshake that reads
    the session and the user's grants from the database can take longer than a second there."""
    from channels.testing import WebsocketCommunicator

    connect = WebsocketCommunicator.connect

    async def patient_connect(self: WebsocketCommunicator, timeout: float = 10) -> Any:
        return await connect(self, timeout)

    WebsocketCommunicator.connect = patient_connect  # type: ignore[method-assign]
    yield
    WebsocketCommunicator.connect = connect  # type: ignore[method-assign]


def sample_snapshot(version: int = 1) -> Snapshot:
    parts = [
        PartitionState(0, 1, [1, 2, 3], [1, 2, 3], [], 0, 10),
        PartitionState(1, 2, [2, 3, 1], [2, 3], [], 0, 20),
        PartitionState(2, -1, [3], [3], [3], None, None),
        PartitionState(3, 2, [2, 1], [2], [], 5, 5),
    ]
    return Snapshot(
        cluster="local",
        version=version,
        taken_at=time.time(),
        checked_at=time.time(),
        reachable=True,
        cluster_id="test-cluster",
        controller_id=1,
        brokers={
            1: BrokerState(1, "127.0.0.1", 29092, "r1", True),
            2: BrokerState(2, "127.0.0.1", 29094, "r2", True),
            3: BrokerState(3, "127.0.0.1", 29096, "r3", False),
        },
        quorum=QuorumState(1, 4, 100, [QuorumMember(1, 100, 0, -1, -1), QuorumMember(2, 99, 1, -1, -1)], []),
        topics={"orders": TopicState("orders", False, parts, min_isr=2), "__consumer_offsets": TopicState("__consumer_offsets", True, [])},
    )


@pytest.fixture
def snapshot(redis_server: str) -> Iterator[Snapshot]:
    snap = sample_snapshot(version=int(time.time() * 1000))
    store.save(snap, snap.content_bytes())
    yield snap


def make_user(role: str) -> User:
    user = User.objects.create_user(role, password="pw-" + role)
    user.groups.set([Group.objects.get(name=role)])
    if role == "admin":
        user.is_superuser = user.is_staff = True
        user.save()
    return user


@pytest.fixture
def users(db: None) -> dict[str, User]:
    return {role: make_user(role) for role in ("viewer", "operator", "admin")}


@pytest.fixture
def client_as(users: dict[str, User]):  # noqa: ANN201 - returns a factory
    def login(role: str) -> Client:
        c = Client()
        c.force_login(users[role])
        return c

    return login


class EndlessTail:
    """Stands in for topics_app.browse.run_tail: follows 'new records' (none) until stopped."""

    def __init__(self) -> None:
        self.ended = threading.Event()

    def __call__(self, cluster: str, req: Any, on_records: Any, stop: threading.Event, on_ready: Any = None) -> None:
        try:
            if on_ready is not None:
                on_ready()
            deadline = time.monotonic() + 15  # (a failed test's tail ends too: the test's loop waits for its thread)
            while not stop.wait(0.2) and time.monotonic() < deadline:
                if not on_records([]):
                    return
        finally:
            self.ended.set()


@pytest.fixture
def endless_tail(monkeypatch: pytest.MonkeyPatch) -> EndlessTail:
    from topics_app import browse

    fake = EndlessTail()
    monkeypatch.setattr(browse, "run_tail", fake)
    return fake


@pytest.fixture
def no_socket_slots(redis_server: str) -> None:
    """No per-user websocket slots left in Redis by a former test (user ids start again in each
    test's database)."""
    keys = list(store.client().scan_iter("console:ws:*"))
    if keys:
        store.client().delete(*keys)


# A gateway that refuses every use, and the snapshots the permission walks ask about ----------------


class NoKafka:
    """Stands in for a cluster's gateway: any use is noted and refused as an unreachable cluster, so
    no request here reaches Kafka or waits for it."""

    def __init__(self, cluster: str, used: list[str]) -> None:
        self._cluster = cluster
        self._used = used

    def __getattr__(self, name: str) -> Any:
        self._used.append(name)
        raise ClusterUnavailable(f"Cluster '{self._cluster}' is not reachable (no Kafka in this test).")


@pytest.fixture
def gateway_uses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    used: list[str] = []

    def for_cluster(name: str) -> NoKafka:
        gateway.cluster_config(name)  # an unknown cluster is still a 404
        return NoKafka(name, used)

    monkeypatch.setattr(gateway, "for_cluster", for_cluster)
    monkeypatch.setattr(gateway, "for_bootstrap", lambda servers, timeout=3.0: NoKafka(servers, used))
    return used


@pytest.fixture
def with_group(snapshot: Snapshot) -> Snapshot:
    gid = "team/service"  # (a "/" exercises the group-name converter)
    member = MemberState("m-1", "client-1", "/127.0.0.1", [["orders", 0]])
    snapshot.groups = {**snapshot.groups, gid: GroupState(gid, "Stable", "consumer", "classic", "range", [member], {"orders:0": 5})}
    snapshot.topic_groups["orders"] = [gid]
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    return snapshot


TEAM_B_TOPIC, TEAM_B_GROUP = "team-b.orders", "team-b/svc"


@pytest.fixture
def teams(snapshot: Snapshot) -> Snapshot:
    """Two teams' topics (`team-a.orders`, `team-b.orders`) and groups (`team-a/svc`, `team-b/svc`)."""
    for name in ("team-a.orders", TEAM_B_TOPIC):
        snapshot.topics[name] = TopicState(name, False, [PartitionState(0, 1, [1, 2, 3], [1, 2, 3], [], 0, 10)], min_isr=2)
    groups = dict(snapshot.groups)
    for gid, topic in (("team-a/svc", "team-a.orders"), (TEAM_B_GROUP, TEAM_B_TOPIC)):
        member = MemberState("m-" + gid, "client", "/127.0.0.1", [[topic, 0]])
        groups[gid] = GroupState(gid, "Stable", "consumer", "classic", "range", [member], {f"{topic}:0": 5})
        snapshot.topic_groups[topic] = [gid]
    snapshot.groups = groups
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    return snapshot

