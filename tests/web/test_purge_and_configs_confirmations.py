"""Purges and config edits change only what they name, on the pages as in the API.

A purge names its partitions and offsets or asks for every record explicitly; a config edit changes
only the keys it names and removes an override only when asked to; a change that deletes records the
topic holds (lower retention, a new cleanup policy) needs the role that may delete topics. Every
refusal is a sentence naming what is missing, Kafka is never asked, and the audit log says "refused".
"""

from __future__ import annotations

from typing import Any

import pytest

from console.models import AuditEntry
from console.snapshots.model import Snapshot
from tests.web.kafka_double import KafkaDouble, replace_gateway

API = "/api/v1/clusters/local/topics/orders/"
PAGE = "/clusters/local/topics/orders/"
EVERY_PARTITION = {0: -1, 1: -1, 2: -1, 3: -1}


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch, snapshot: Snapshot) -> KafkaDouble:
    return replace_gateway(monkeypatch)


def refused(action: str) -> list[dict[str, Any]]:
    return [e.details for e in AuditEntry.objects.filter(action=action, outcome="refused")]


# Purge ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [{}, {"offsets": {}}, {"all": False}, {"offsets": {}, "all": False}])
def test_a_purge_naming_neither_offsets_nor_all_is_a_400_and_deletes_nothing(client_as, kafka: KafkaDouble,
                                                                             body: dict) -> None:
    r = client_as("operator").delete(API + "records/", body, content_type="application/json")
    assert r.status_code == 400, r.content
    assert "'offsets'" in r.json()["detail"] and "'all'" in r.json()["detail"] and "nothing was deleted" in r.json()["detail"]
    assert kafka.changes("delete_records") == []
    assert len(refused("purge_records")) == 1


def test_a_purge_with_both_offsets_and_all_is_refused(client_as, kafka: KafkaDouble) -> None:
    r = client_as("operator").delete(API + "records/", {"offsets": {"0": 5}, "all": True}, content_type="application/json")
    assert r.status_code == 400 and "not both" in r.json()["detail"]
    assert kafka.changes("delete_records") == []


def test_a_purge_deletes_only_the_partitions_it_names_or_all_when_asked(client_as, kafka: KafkaDouble) -> None:
    operator = client_as("operator")
    assert operator.delete(API + "records/", {"offsets": {"1": 40}}, content_type="application/json").status_code == 200
    assert operator.delete(API + "records/", {"all": True}, content_type="application/json").status_code == 200
    assert kafka.changes("delete_records") == [{1: 40}, EVERY_PARTITION]


def test_the_purge_page_with_blank_offsets_and_no_all_box_deletes_nothing(client_as, kafka: KafkaDouble) -> None:
    r = client_as("operator").post(PAGE + "purge/", {"offsets": "  ", "apply": "1"})
    assert r.status_code == 400
    assert b"ask for every record of every partition explicitly" in r.content
    assert kafka.changes("delete_records") == []
    assert len(refused("purge_records")) == 1


def test_the_purge_page_deletes_everything_only_with_its_box_ticked(client_as, kafka: KafkaDouble) -> None:
    operator = client_as("operator")
    preview = operator.post(PAGE + "purge/", {"offsets": "", "all": "1", "apply": "0"})
    assert preview.status_code == 200 and b"About 400 records" in preview.content
    assert b'name="all" value="1" checked' in preview.content  # the box stays ticked for the purge itself
    assert operator.post(PAGE + "purge/", {"offsets": "", "all": "1", "apply": "1"}).status_code == 302
    assert kafka.changes("delete_records") == [EVERY_PARTITION]


# Config edits ---------------------------------------------------------------------------------------------


def sent(double: KafkaDouble) -> list[tuple[dict[str, str], list[str]]]:
    """What was applied (not only validated) in Kafka."""
    return [(s, d) for s, d, validate_only in double.changes("alter_topic_configs") if not validate_only]


def test_the_config_page_leaves_overrides_it_does_not_name_in_place(client_as, kafka: KafkaDouble) -> None:
    kafka.overrides = {"retention.ms": "7200000", "max.message.bytes": "2000000"}
    r = client_as("operator").post(PAGE + "configs/", {"configs": "retention.ms=86400000", "apply": "1"})
    assert r.status_code == 302, r.content
    assert sent(kafka) == [({"retention.ms": "86400000"}, [])]


def test_lines_left_as_they_were_are_not_sent_to_kafka(client_as, kafka: KafkaDouble) -> None:
    kafka.overrides = {"retention.ms": "7200000", "max.message.bytes": "2000000"}
    r = client_as("operator").post(PAGE + "configs/", {"configs": "retention.ms=7200000\nmax.message.bytes=3000000",
                                                      "apply": "1"})
    assert r.status_code == 302, r.content
    assert sent(kafka) == [({"max.message.bytes": "3000000"}, [])]


def test_an_override_is_removed_only_when_its_box_is_ticked(client_as, kafka: KafkaDouble) -> None:
    kafka.overrides = {"max.message.bytes": "2000000", "segment.bytes": "536870912"}
    form = client_as("operator").get(PAGE + "configs/")
    assert b'name="remove" value="max.message.bytes"' in form.content
    r = client_as("operator").post(PAGE + "configs/", {"configs": "", "remove": "segment.bytes", "apply": "1"})
    assert r.status_code == 302, r.content
    assert sent(kafka) == [({}, ["segment.bytes"])]


def test_a_key_both_set_and_removed_is_refused(client_as, kafka: KafkaDouble) -> None:
    kafka.overrides = {"max.message.bytes": "2000000"}
    r = client_as("operator").patch(API + "configs/", {"set": {"max.message.bytes": "5"}, "delete": ["max.message.bytes"]},
                                    content_type="application/json")
    assert r.status_code == 400 and "both set and removed" in r.json()["detail"]
    assert kafka.changes("alter_topic_configs") == []


@pytest.mark.parametrize(("overrides", "body", "words"), [
    ({}, {"set": {"retention.ms": "3600000"}}, "retention.ms=3600000 is lower than the current 604800000"),
    ({}, {"set": {"retention.ms": "1"}}, "below 60000 ms"),
    ({}, {"set": {"retention.bytes": "1000"}}, "below 1048576 bytes"),
    ({}, {"set": {"retention.bytes": "10485760"}}, "a partition larger than that"),
    ({"cleanup.policy": "compact"}, {"set": {"cleanup.policy": "delete"}}, "adds delete"),
    ({}, {"set": {"cleanup.policy": "compact"}}, "adds compact"),
    ({"retention.ms": "-1"}, {"delete": ["retention.ms"]}, "removing the override retention.ms=-1"),
])
def test_an_operator_may_not_change_configs_in_a_way_that_deletes_records(client_as, kafka: KafkaDouble, overrides: dict,
                                                                           body: dict, words: str) -> None:
    kafka.overrides = overrides
    r = client_as("operator").patch(API + "configs/", body, content_type="application/json")
    assert r.status_code == 403, r.content
    assert words in r.json()["detail"] and "the topic.delete action" in r.json()["detail"]
    assert kafka.changes("alter_topic_configs") == []
    assert len(refused("alter_topic_configs")) == 1


def test_an_admin_may_lower_retention_and_is_told_it_deletes_records(client_as, kafka: KafkaDouble) -> None:
    r = client_as("admin").patch(API + "configs/", {"set": {"retention.ms": "3600000"}}, content_type="application/json")
    assert r.status_code == 200, r.content
    assert "deletes records the topic holds now" in r.json()["message"] and r.json()["deletes_records"]
    assert sent(kafka) == [({"retention.ms": "3600000"}, [])]


@pytest.mark.parametrize("body", [
    {"set": {"retention.ms": "3600000"}},  # every record is younger than an hour
    {"set": {"retention.ms": "1209600000"}},  # raised
    {"set": {"cleanup.policy": "delete"}},  # the policy it has
    {"set": {"max.message.bytes": "2000000"}},
])
def test_an_operator_may_change_configs_that_delete_nothing_the_topic_holds(client_as, kafka: KafkaDouble, body: dict) -> None:
    kafka.age_ms = 60_000
    r = client_as("operator").patch(API + "configs/", body, content_type="application/json")
    assert r.status_code == 200, r.content


def test_the_config_page_refuses_an_operators_retention_cut_with_its_reason(client_as, kafka: KafkaDouble) -> None:
    r = client_as("operator").post(PAGE + "configs/", {"configs": "retention.ms=1000", "apply": "0"})
    assert r.status_code == 403
    assert b"right to delete the topic" in r.content
    assert kafka.changes("alter_topic_configs") == []


# Both ways in --------------------------------------------------------------------------------------------


def test_the_page_and_the_api_record_the_same_audit_entry_for_the_same_change(client_as, kafka: KafkaDouble,
                                                                              settings: Any) -> None:
    settings.READ_YOUR_WRITES_WAIT = 0  # (the double changes no snapshot: nothing to wait for)
    admin = client_as("admin")
    assert admin.delete(API + "records/", {"offsets": {"1": 40}}, content_type="application/json").status_code == 200
    assert admin.post(PAGE + "purge/", {"offsets": "1=40", "apply": "1"}).status_code == 302
    assert admin.patch(API + "configs/", {"set": {"retention.ms": "1000"}}, content_type="application/json").status_code == 200
    assert admin.post(PAGE + "configs/", {"configs": "retention.ms=1000", "apply": "1"}).status_code == 302
    assert admin.delete(API, {"confirm": "orders"}, content_type="application/json").status_code == 200
    assert admin.post(PAGE + "delete/", {"confirm": "orders", "apply": "1"}).status_code == 302
    assert kafka.changes("delete_topic") == ["orders", "orders"]
    entries = [(e.action, e.target, e.outcome, e.details) for e in AuditEntry.objects.exclude(action="login").order_by("id")]
    assert [action for action, *_ in entries] == ["purge_records"] * 2 + ["alter_topic_configs"] * 2 + ["delete_topic"] * 2
    assert entries[0] == entries[1] and entries[2] == entries[3] and entries[4] == entries[5]
