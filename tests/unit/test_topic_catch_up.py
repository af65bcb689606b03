"""A broker that has not yet learnt of a topic the controller just created answers "unknown topic"
for a moment (KRaft brokers follow the metadata log). Producing right after creating must not fail
for that: once the cluster said the topic exists (its id was read), the partitions are asked for
again for a few seconds. A topic that does not exist is still NotFound at once."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError

from console.gateway.errors import NotFound
from console.gateway.messages import produce as producing
from console.gateway.messages import reading


class Client:
    """list_topics answers "unknown" the first `behind` times, then the topic with 3 partitions."""

    def __init__(self, behind: int) -> None:
        self.behind = behind
        self.asked = 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        self.asked += 1
        if self.asked <= self.behind:
            gone = SimpleNamespace(error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), partitions={})
            return SimpleNamespace(topics={topic: gone})
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions={2: None, 0: None, 1: None})})

    def poll(self, timeout: float) -> None:
        pass


class Gateway:
    name = "local"
    timeout = 5.0

    def _call(self, action: str, run: Any) -> Any:
        return run()


@pytest.fixture(autouse=True)
def no_sleeping(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    # (the module's own `time`, not the time module's sleep: a thread another test left running, that
    # sleeps a second between its turns, would call it too and fill the list)
    monkeypatch.setattr(reading, "time", SimpleNamespace(monotonic=time.monotonic, sleep=slept.append))
    return slept


def test_a_topic_the_cluster_said_exists_is_asked_for_again_while_a_broker_catches_up(no_sleeping: list[float]) -> None:
    client = Client(behind=2)
    assert reading.topic_partitions(client, Gateway(), "fresh", exists=True) == [0, 1, 2]  # type: ignore[arg-type]
    assert client.asked == 3 and no_sleeping == [0.05, 0.1]


def test_without_that_an_unknown_topic_is_not_found_at_once(no_sleeping: list[float]) -> None:
    client = Client(behind=1)
    with pytest.raises(NotFound, match="Topic 'typo' does not exist on cluster 'local'"):
        reading.topic_partitions(client, Gateway(), "typo")  # type: ignore[arg-type]
    assert client.asked == 1 and no_sleeping == []


def test_the_asking_again_is_bounded(no_sleeping: list[float]) -> None:
    client = Client(behind=100)
    with pytest.raises(NotFound):
        reading.topic_partitions(client, Gateway(), "gone-again", exists=True)  # type: ignore[arg-type]
    assert client.asked == len(reading.CATCH_UP_DELAYS) + 1 and sum(no_sleeping) < 3.5


def test_produce_reads_the_partitions_as_of_a_topic_that_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(producing, "_producer_for", lambda gateway, topic: "producer")

    def partitions(client: Any, gateway: Any, topic: str, exists: bool = False) -> list[int]:
        seen["exists"] = exists
        raise NotFound("stop here")

    monkeypatch.setattr(producing, "topic_partitions", partitions)
    with pytest.raises(NotFound):
        producing.produce(Gateway(), "fresh", b"v")  # type: ignore[arg-type]
    assert seen == {"exists": True}
