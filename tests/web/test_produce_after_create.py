"""A produce right after the console created the topic waits for the brokers to learn of it, and a
produce to a topic nobody just created is refused at once."""

from __future__ import annotations

import time
from typing import Any

import pytest

from console import snapshots
from console.gateway.errors import NotFound
from console.gateway.messages.records import Produced
from console.snapshots import Snapshot
from topics_app import services

CLUSTER = "local"


class BrokerLearning:
    """Answers "no such topic" for the first `unknown_for` produces, as a broker that has not yet
    replayed the controller's record of a new topic does."""

    def __init__(self, unknown_for: int) -> None:
        self.unknown_for = unknown_for
        self.calls = 0

    def __call__(self, _gateway: Any, topic: str, value: bytes | None, **_kwargs: Any) -> Produced:
        self.calls += 1
        if self.calls <= self.unknown_for:
            raise NotFound(f"Topic '{topic}' does not exist on cluster '{CLUSTER}'.")
        return Produced(topic=topic, partition=0, offset=self.calls, timestamp_ms=0)


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> BrokerLearning:
    learning = BrokerLearning(unknown_for=3)
    monkeypatch.setattr(services, "produce", learning)
    monkeypatch.setattr(services.gateway, "for_cluster", lambda _name: None)
    return learning


def test_a_produce_right_after_the_console_created_the_topic_is_written_once_the_broker_knows_it(
        snapshot: Snapshot, users: dict[str, Any], broker: BrokerLearning) -> None:
    snapshots.note_change(CLUSTER, {"topic:just-made": 1})
    produced = services.produce_message(users["admin"], CLUSTER, "just-made", b"v", None, [], None)
    assert produced.offset == 4 and broker.calls == 4


def test_a_produce_to_a_topic_nobody_just_created_is_refused_at_once(
        snapshot: Snapshot, users: dict[str, Any], broker: BrokerLearning) -> None:
    started = time.monotonic()
    with pytest.raises(NotFound):
        services.produce_message(users["admin"], CLUSTER, "never-made", b"v", None, [], None)
    assert broker.calls == 1 and time.monotonic() - started < 1


def test_a_produce_to_a_topic_the_console_just_deleted_is_refused_at_once(
        snapshot: Snapshot, users: dict[str, Any], broker: BrokerLearning) -> None:
    snapshots.note_change(CLUSTER, {"topic:just-gone": 0})
    with pytest.raises(NotFound):
        services.produce_message(users["admin"], CLUSTER, "just-gone", b"v", None, [], None)
    assert broker.calls == 1
