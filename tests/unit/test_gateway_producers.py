"""DescribeProducers through the gateway: kafka-python fails the whole request on one partition's
retriable error (a topic created a moment ago whose leaders its metadata does not name yet), so the
gateway asks again with fresh metadata, then partition by partition, leaving out only the partition
whose leader does not answer (no Kafka: a stand-in for kafka-python's admin client)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka.errors import NotLeaderForPartitionError, TopicAuthorizationFailedError

from console.gateway import transactions
from console.gateway.client import ClusterGateway
from console.gateway.config import ClusterConfig
from console.gateway.errors import GatewayError


class Admin:
    """Answers DescribeProducers; `wrong` partitions answer NotLeaderForPartition `failures` times."""

    def __init__(self, wrong: set[int], failures: int, error: type[Exception] = NotLeaderForPartitionError) -> None:
        self.wrong, self.failures, self.error = wrong, failures, error
        self.calls: list[list[int]] = []

    def describe_producers(self, tps: list[Any]) -> dict[Any, Any]:
        self.calls.append([tp.partition for tp in tps])
        if self.failures > 0 and any(tp.partition in self.wrong for tp in tps):
            self.failures -= 1
            raise self.error(f"DescribeProducersRequest failed for {tps[0]}")
        producer = SimpleNamespace(producer_id=7, producer_epoch=0, last_sequence=3, last_timestamp=1, coordinator_epoch=0,
                                   current_transaction_start_offset=-1)
        return {tp: SimpleNamespace(active_producers=[producer]) for tp in tps}


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(transactions.time, "sleep", lambda seconds: None)
    gw = ClusterGateway(ClusterConfig(name="x", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    refreshed: list[int] = []
    monkeypatch.setattr(gw, "_fresh_metadata", lambda client, max_age_ms=5000: refreshed.append(max_age_ms))
    setattr(gw, "refreshed", refreshed)  # noqa: B010 - what the test reads back
    return gw


def run_on(gw: Any, admin: Admin, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(gw, "_with_kafka_python", lambda purpose, fn: fn(admin))
    return gw.producers([("t", n) for n in range(4)])


def test_a_leader_the_metadata_named_wrongly_is_asked_again_with_fresh_metadata(gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = Admin(wrong={2}, failures=1)
    found = run_on(gateway, admin, monkeypatch)
    assert sorted(found) == [("t", n) for n in range(4)] and all(len(v) == 1 for v in found.values())
    assert admin.calls == [[0, 1, 2, 3], [0, 1, 2, 3]] and gateway.refreshed == [0]


def test_a_partition_that_keeps_failing_is_left_out_and_the_others_are_shown(gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = Admin(wrong={2}, failures=100)
    found = run_on(gateway, admin, monkeypatch)
    assert found[("t", 2)] is None and all(found[("t", n)] for n in (0, 1, 3))
    assert admin.calls[-4:] == [[0], [1], [2], [3]] and len(admin.calls) == transactions._PRODUCER_ATTEMPTS + 4


def test_an_error_that_asking_again_cannot_mend_is_the_callers_at_once(gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = Admin(wrong={2}, failures=100, error=TopicAuthorizationFailedError)
    with pytest.raises(GatewayError):
        run_on(gateway, admin, monkeypatch)
    assert admin.calls == [[0, 1, 2, 3]]


def test_slow_answers_stop_the_asking_in_time_and_the_rest_are_unanswered(gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each failing request takes 0.2 s of the 1 s limit: after its retry share no more are sent, so
    the page gets a partial answer (the others unanswered) instead of a timeout."""
    clock = [0.0]
    monkeypatch.setattr(transactions.time, "monotonic", lambda: clock[0])
    admin = Admin(wrong={0, 1, 2, 3}, failures=100)
    ask = admin.describe_producers

    def slow(tps: list[Any]) -> dict[Any, Any]:
        clock[0] += 0.2
        return ask(tps)

    admin.describe_producers = slow  # type: ignore[method-assign]
    found = run_on(gateway, admin, monkeypatch)
    assert sorted(found) == [("t", n) for n in range(4)] and all(v is None for v in found.values())
    assert len(admin.calls) < transactions._PRODUCER_ATTEMPTS + 4
