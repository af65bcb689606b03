"""SCRAM users made in the console, checked with Kafka's own tools on the secured test broker: the
list equals `kafka-configs --describe --entity-type users`; a user created in the console produces
with kafka-console-producer and its password; a changed password refuses the old one."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from console.models import AuditEntry
from tests.integration.security_oracle import (
    admin_client,
    allow_writes,
    api,
    console_on_the_secured_broker,
    console_produce,
    create_topic,
    scram_users,
    user_properties,
)
from tests.support import unique

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]


@pytest.fixture(scope="module")
def broker(secured_broker: Any) -> None:
    """The session's secured broker."""


@pytest.fixture
def console(broker: None, settings: Any) -> Iterator[tuple[Client, str]]:
    with console_on_the_secured_broker(settings, "secured-users") as name:
        yield admin_client(), f"/api/v1/clusters/{name}/users/"


def listed(client: Client, path: str) -> dict[str, dict[str, int]]:
    r = client.get(path)
    assert r.status_code == 200, r.content
    return {u["name"]: {m["mechanism"]: m["iterations"] for m in u["mechanisms"]} for u in r.json()["users"]}


def test_a_user_created_in_the_console_produces_and_a_changed_password_refuses_the_old_one(
        console: tuple[Client, str], caplog: pytest.LogCaptureFixture) -> None:
    client, path = console
    caplog.set_level(logging.DEBUG)
    name, topic = unique("svc"), unique("scram")
    first, second = "first-password-1", "second-password-2"
    create_topic(topic)
    allow_writes(name, topic)
    r = api(client, "POST", path, {"name": name, "mechanism": "SCRAM-SHA-512", "password": first})
    assert r.status_code == 201, r.content
    written, said = console_produce(topic, user_properties(name, first), "with the first password")
    assert written, said

    r = api(client, "POST", path, {"name": name, "mechanism": "SCRAM-SHA-512", "password": second})
    assert r.status_code == 200 and r.json()["message"] == f"Changed the SCRAM-SHA-512 password of user '{name}'."
    written, said = console_produce(topic, user_properties(name, first), "with the old password")
    assert not written and "failed authentication" in said, said
    written, said = console_produce(topic, user_properties(name, second), "with the new password")
    assert written, said

    entries = AuditEntry.objects.filter(action="scram_user_set", target=name)
    assert [(e.outcome, e.details["mechanism"]) for e in entries] == [("ok", "SCRAM-SHA-512")] * 2
    for secret in (first, second):
        assert all(secret not in json.dumps(e.details) for e in AuditEntry.objects.all())
        assert secret not in caplog.text


def test_the_user_list_equals_kafka_configs_describe_users(console: tuple[Client, str]) -> None:
    client, path = console
    odd = unique("O'Brien \"<b>\" 数据")
    for name, mechanism, iterations in [(odd, "SCRAM-SHA-256", 8192), (odd, "SCRAM-SHA-512", 4096),
                                        (unique("a=b,c"), "SCRAM-SHA-256", 16384)]:
        r = api(client, "POST", path, {"name": name, "mechanism": mechanism, "password": "a-long-password",
                                       "iterations": iterations})
        assert r.status_code in (200, 201), r.content
    assert listed(client, path) == scram_users()
    assert listed(client, path)[odd] == {"SCRAM-SHA-256": 8192, "SCRAM-SHA-512": 4096}


def test_deleting_one_mechanism_then_the_user(console: tuple[Client, str]) -> None:
    client, path = console
    name = unique("leaving")
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        assert api(client, "POST", path, {"name": name, "mechanism": mechanism, "password": "a-long-password"}).status_code == 201
    r = api(client, "DELETE", f"{path}{name}/?mechanism=SCRAM-SHA-256&dry_run=1")
    assert r.status_code == 200 and scram_users()[name] == {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}
    assert api(client, "DELETE", f"{path}{name}/?mechanism=SCRAM-SHA-256").status_code == 200
    assert scram_users()[name] == {"SCRAM-SHA-512": 4096}
    assert api(client, "DELETE", f"{path}{name}/").json()["message"] == f"Deleted user '{name}' (SCRAM-SHA-512)."
    assert name not in scram_users() and name not in listed(client, path)


@pytest.mark.parametrize(("body", "sentence"), [
    ({"mechanism": "SCRAM-SHA-512", "password": "short"}, "The password must be at least 8 characters long"),
    ({"mechanism": "SCRAM-SHA-1", "password": "a-long-password"}, "Unknown SCRAM mechanism 'SCRAM-SHA-1'"),
    ({"mechanism": "SCRAM-SHA-512", "password": "a-long-password", "iterations": 2048}, "between 4096 and 16384"),
])
def test_bad_input_is_a_400_sentence_and_creates_nothing(console: tuple[Client, str], body: dict[str, Any],
                                                         sentence: str) -> None:
    client, path = console
    name = unique("refused")
    r = api(client, "POST", path, {"name": name, **body})
    assert r.status_code == 400 and sentence in r.json()["detail"]
    assert name not in scram_users()
