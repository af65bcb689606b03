"""Kafka's quota rules as the console applies them: which entity's quota a connection gets, and the checks of a change."""

from __future__ import annotations

import itertools

import pytest

from console.errors import BadParameter
from security_app.quota_rules import PRECEDENCE, check_change, check_value, describe, effective, shown

USER, CLIENT = "bob", "orders-app"
Quotas = list[tuple[dict[str, str | None], dict[str, float]]]


def _entity(rule: tuple[tuple[str, str | None], ...]) -> dict[str, str | None]:
    names = {"user": USER, "client-id": CLIENT}
    return {t: (names[t] if n == "name" else None) for t, n in rule}


def _produce(quotas: Quotas, user: str | None = USER,
             client: str | None = CLIENT) -> tuple[float | None, int | None]:
    applied = next(a for a in effective(quotas, user, client) if a.key == "producer_byte_rate")
    return applied.value, applied.rank


@pytest.mark.parametrize("present", [bits for bits in itertools.product((0, 1), repeat=len(PRECEDENCE)) if any(bits)])
def test_the_first_entity_in_kafkas_order_that_sets_the_key_gives_the_quota(present: tuple[int, ...]) -> None:
    quotas = [(_entity(rule), {"producer_byte_rate": float(1000 * (i + 1))})
              for i, (rule, on) in enumerate(zip(PRECEDENCE, present, strict=True)) if on]
    first = present.index(1)
    assert _produce(quotas) == (float(1000 * (first + 1)), first + 1)


def test_kafkas_documented_order_is_the_one_applied() -> None:
    assert [describe(_entity(r)) for r in PRECEDENCE] == [
        "user 'bob' + client-id 'orders-app'", "user 'bob' + default client-id", "user 'bob'",
        "default user + client-id 'orders-app'", "default user + default client-id", "default user",
        "client-id 'orders-app'", "default client-id",
    ]


def test_each_kind_of_quota_is_looked_up_on_its_own() -> None:
    quotas: Quotas = [({"user": USER}, {"producer_byte_rate": 100.0}), ({"client-id": CLIENT}, {"consumer_byte_rate": 200.0}),
              ({"user": None, "client-id": None}, {"request_percentage": 25.0})]
    got = {a.key: (a.value, a.entity) for a in effective(quotas, USER, CLIENT)}
    assert got["producer_byte_rate"] == (100.0, {"user": USER})
    assert got["consumer_byte_rate"] == (200.0, {"client-id": CLIENT})
    assert got["request_percentage"] == (25.0, {"user": None, "client-id": None})
    assert got["controller_mutation_rate"] == (None, None)


def test_another_users_or_clients_quota_does_not_apply() -> None:
    quotas: Quotas = [({"user": "alice"}, {"producer_byte_rate": 1.0}), ({"user": USER, "client-id": "other"}, {"producer_byte_rate": 2.0}),
              ({"client-id": "other"}, {"producer_byte_rate": 3.0})]
    assert _produce(quotas) == (None, None)


def test_without_a_client_id_only_rules_without_one_apply() -> None:
    quotas: Quotas = [({"user": USER, "client-id": CLIENT}, {"producer_byte_rate": 1.0}), ({"user": USER, "client-id": None},
                                                                                  {"producer_byte_rate": 2.0})]
    assert _produce(quotas, client=None) == (2.0, 2)
    assert _produce([({"client-id": None}, {"producer_byte_rate": 5.0})], user=None) == (5.0, 8)


def test_an_ips_connection_rate_comes_from_the_ip_then_the_default_ip() -> None:
    quotas: Quotas = [({"ip": None}, {"connection_creation_rate": 10.0}), ({"ip": "10.0.0.1"}, {"connection_creation_rate": 2.0})]
    rate = {ip: next(a for a in effective(quotas, USER, CLIENT, ip) if a.key == "connection_creation_rate").value
            for ip in ("10.0.0.1", "10.0.0.2")}
    assert rate == {"10.0.0.1": 2.0, "10.0.0.2": 10.0}


@pytest.mark.parametrize(("entity", "set_values", "remove", "sentence"), [
    ({"user": "bob"}, {"producer_byte_rate": -1}, [], "Quota 'producer_byte_rate' must be more than 0, not -1; to lift a quota, remove it."),
    ({"user": "bob"}, {"producer_byte_rate": 0}, [], "must be more than 0, not 0"),
    ({"user": "bob"}, {"bytes_per_second": 5}, [], "Unknown quota 'bytes_per_second'; the quotas are producer_byte_rate"),
    ({"user": "bob"}, {}, ["nope"], "Unknown quota 'nope'"),
    ({"user": "bob"}, {"producer_byte_rate": 1.5}, [], "whole bytes per second, not 1.5"),
    ({"user": "bob"}, {"connection_creation_rate": 5}, [], "cannot be set on a user or client-id"),
    ({"ip": "1.2.3.4"}, {"consumer_byte_rate": 5}, [], "cannot be set on an ip"),
    ({"ip": "1.2.3.4", "user": "bob"}, {"connection_creation_rate": 5}, [], "An ip quota stands alone"),
    ({"group": "x"}, {"producer_byte_rate": 5}, [], "Unknown quota entity type 'group'"),
    ({}, {"producer_byte_rate": 5}, [], "Name the quota's entity"),
    ({"user": ""}, {"producer_byte_rate": 5}, [], "for the default user, set 'default' instead of a name"),
    ({"user": "bob"}, {"producer_byte_rate": 5}, ["producer_byte_rate"], "both set and removed"),
    ({"user": "bob"}, {}, [], "Nothing to change"),
    ({"user": "bob"}, {"request_percentage": float("nan")}, [], "must be a number"),
    ({"user": "bob"}, {"request_percentage": float("inf")}, [], "too large"),
])
def test_a_bad_change_is_refused_with_a_sentence(entity: dict[str, str | None], set_values: dict[str, float],
                                                 remove: list[str], sentence: str) -> None:
    with pytest.raises(BadParameter) as refused:
        check_change(entity, set_values, remove)
    assert sentence in refused.value.message


def test_a_good_change_comes_back_in_kafkas_entity_order() -> None:
    assert list(check_change({"client-id": None, "user": "bob"}, {"request_percentage": 12.5}, [])) == ["user", "client-id"]
    assert check_value("consumer_byte_rate", 1024) == 1024.0


@pytest.mark.parametrize(("key", "value", "text"), [
    ("producer_byte_rate", 102400, "100 KiB/s"), ("consumer_byte_rate", 1536, "1.5 KiB/s"), ("producer_byte_rate", 512, "512 B/s"),
    ("consumer_byte_rate", 3 * 2**20, "3 MiB/s"), ("request_percentage", 12.5, "12.5 %"), ("request_percentage", 25.0, "25 %"),
    ("controller_mutation_rate", 3.0, "3/s"), ("connection_creation_rate", 0.5, "0.5/s"),
])
def test_quotas_are_shown_with_their_unit(key: str, value: float, text: str) -> None:
    assert shown(key, value) == text
