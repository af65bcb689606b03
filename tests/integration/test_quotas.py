"""Client quotas set in the console, checked on the secured test broker: the list equals what
`kafka-configs --describe` shows for users, clients and ips, removals and dry runs are Kafka's, and a
produce quota of 100 KB/s set in the console holds a real producer to it (within 20%)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from django.test import Client

from console.models import AuditEntry
from tests.integration.security_oracle import (
    admin_client,
    allow_writes,
    api,
    as_entity,
    console_on_the_secured_broker,
    create_topic,
    quotas,
)
from tests.secured_broker import SASL_PORT
from tests.support import unique, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]

QUOTA = 102_400  # bytes per second
RUN_SECONDS = 45  # Kafka measures over 11 one-second samples and lets a first burst through: a long run
STEADY_AFTER = 12  # ...measured after that burst has been paid for


def throttled_rate(delivered: list[tuple[float, int]]) -> float:
    """Bytes per second over whole throttle cycles after the first burst. Kafka lets a burst through
    whenever its 11-second window has room and then holds the client back until the window's rate is
    the quota again, so only a span from one burst's start to another's shows that rate."""
    starts: list[tuple[float, int]] = []
    for i, (t, _n) in enumerate(delivered):
        if t >= STEADY_AFTER and (not starts or t - starts[-1][0] > 2):
            ahead = sum(n for u, n in delivered[i:i + 1000] if u < t + 1)
            if ahead > 2 * QUOTA:
                starts.append((t, i))
    assert len(starts) >= 2, f"fewer than two bursts after {STEADY_AFTER} s: {starts}"
    (t_a, i_a), (t_b, i_b) = starts[0], starts[-1]
    return sum(n for _t, n in delivered[i_a:i_b]) / (t_b - t_a)


@pytest.fixture(scope="module")
def broker(secured_broker: Any) -> None:
    """The session's secured broker."""


@pytest.fixture
def console(broker: None, settings: Any) -> Iterator[tuple[Client, str]]:
    with console_on_the_secured_broker(settings, "secured-quotas") as name:
        yield admin_client(), f"/api/v1/clusters/{name}/quotas/"


def listed(client: Client, path: str) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    r = client.get(path)
    assert r.status_code == 200, r.content
    return {as_entity(q["entity"]): {k: float(v) for k, v in q["values"].items()} for q in r.json()["quotas"]}


def agreed(client: Client, path: str) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    """The console's list once it equals Kafka's tool's (the broker applies a change a moment after the
    controller accepts it)."""
    seen: list[Any] = []

    def same() -> bool:
        seen[:] = [listed(client, path), quotas()]
        return bool(seen[0] == seen[1])

    try:
        wait_for(same, 20, interval=0.5, what="the console's quotas to equal kafka-configs --describe")
    except AssertionError:
        assert seen[0] == seen[1]
    return dict(seen[0])


def test_the_quota_list_equals_kafka_configs_describe_for_users_clients_and_ips(console: tuple[Client, str]) -> None:
    client, path = console
    user, app, odd = unique("bob"), unique("app"), unique("O'Brien <数据>")
    changes: list[tuple[dict[str, str | None], dict[str, float]]] = [
        ({"user": user}, {"producer_byte_rate": 2048}),
        ({"user": user, "client-id": app}, {"consumer_byte_rate": 4096, "request_percentage": 12.5}),
        ({"user": user, "client-id": None}, {"controller_mutation_rate": 3}),
        ({"user": None}, {"producer_byte_rate": 1_000_000}),
        ({"user": None, "client-id": None}, {"consumer_byte_rate": 2_000_000}),
        ({"client-id": app}, {"request_percentage": 50}),
        ({"client-id": None}, {"producer_byte_rate": 5_000_000}),
        ({"client-id": odd}, {"producer_byte_rate": 7}),
        ({"ip": "10.1.2.3"}, {"connection_creation_rate": 5}),
        ({"ip": None}, {"connection_creation_rate": 100}),
    ]
    try:  # (the session shares the broker: its defaults would hold back every later module)
        for entity, values in changes:
            r = api(client, "POST", path, {"entity": entity, "set": values})
            assert r.status_code == 200, r.content
        shown = agreed(client, path)
        for entity, values in changes:
            assert shown[as_entity(entity)] == {k: float(v) for k, v in values.items()}

        r = api(client, "GET", path + f"effective/?user={user}&client_id={app}")
        got = {q["key"]: (q["value"], q["entity_text"]) for q in r.json()["quotas"]}
        assert got == {"producer_byte_rate": (2048, f"user '{user}'"),
                       "consumer_byte_rate": (4096, f"user '{user}' + client-id '{app}'"),
                       "request_percentage": (12.5, f"user '{user}' + client-id '{app}'"),
                       "controller_mutation_rate": (3, f"user '{user}' + default client-id")}
    finally:
        deleted = [api(client, "DELETE", path, {"entity": entity}).status_code for entity, _values in changes]
    assert deleted == [200] * len(changes)
    assert agreed(client, path) == {}


def test_a_dry_run_and_a_refused_value_change_nothing(console: tuple[Client, str]) -> None:
    client, path = console
    entity: dict[str, str | None] = {"user": unique("carol")}
    r = api(client, "POST", path + "?dry_run=1", {"entity": entity, "set": {"producer_byte_rate": 1024}})
    assert r.status_code == 200 and r.json()["message"].startswith("Kafka accepts producer_byte_rate=1024")
    for body, sentence in [({"set": {"producer_byte_rate": -1}}, "must be more than 0, not -1"),
                           ({"set": {"fetch_rate": 5}}, "Unknown quota 'fetch_rate'"),
                           ({"set": {"connection_creation_rate": 5}}, "cannot be set on a user or client-id")]:
        r = api(client, "POST", path, {"entity": entity, **body})
        assert r.status_code == 400 and sentence in r.json()["detail"]
    assert as_entity(entity) not in quotas()
    assert not AuditEntry.objects.filter(action="quotas_alter", outcome="ok").exists()


def test_a_produce_quota_set_in_the_console_throttles_a_real_producer(console: tuple[Client, str]) -> None:
    client, path = console
    user, password, topic = unique("throttled"), "throttled-password", unique("quota")
    users_path = path.replace("/quotas/", "/users/")
    assert api(client, "POST", users_path, {"name": user, "mechanism": "SCRAM-SHA-512", "password": password}).status_code == 201
    create_topic(topic)
    allow_writes(user, topic)
    r = api(client, "POST", path, {"entity": {"user": user}, "set": {"producer_byte_rate": QUOTA}})
    assert r.status_code == 200, r.content
    try:
        rate = throttled_produce(user, password, topic)
    finally:  # (the session shares the broker: the next modules list every quota)
        api(client, "DELETE", path, {"entity": {"user": user}})
    assert abs(rate - QUOTA) <= 0.2 * QUOTA, f"{rate:.0f} B/s against a quota of {QUOTA} B/s"


def throttled_produce(user: str, password: str, topic: str) -> float:
    """Produce as `user` for RUN_SECONDS as fast as the client may; the rate the broker let through."""
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{SASL_PORT}", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": password,
                         "linger.ms": 5, "queue.buffering.max.kbytes": 64, "max.in.flight": 1})
    delivered: list[tuple[float, int]] = []
    errors: list[str] = []

    def done(err: Any, msg: Any) -> None:
        if err is None:
            delivered.append((time.monotonic(), len(msg.value())))
        else:
            errors.append(str(err))

    payload = b"x" * 1000
    start = time.monotonic()
    while time.monotonic() - start < RUN_SECONDS:
        try:
            producer.produce(topic, payload, on_delivery=done)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors[:3]
    return throttled_rate([(t - start, n) for t, n in delivered])
