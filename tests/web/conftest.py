"""In-process tests of pages, API and websockets against a snapshot written to the test Redis."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from console.watcher import store
from console.watcher.snapshot import BrokerState, PartitionState, QuorumMember, QuorumState, Snapshot, TopicState


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
