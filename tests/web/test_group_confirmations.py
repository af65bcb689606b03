"""Deleting a group, deleting its offsets and resetting them run only with the group's id typed again,
in the API as on the pages; an unclean election only with the cluster's name. Previews need nothing.
A refusal is a 400 naming 'confirm', Kafka is not asked, and the audit log records it as refused."""

from __future__ import annotations

import pytest

from console.models import AuditEntry
from console.snapshots.model import Snapshot
from tests.web.kafka_double import GROUP, KafkaDouble, add_empty_group, replace_gateway

API = "/api/v1/clusters/local/consumer-groups/billing~2Fsettle/"
PAGE = "/clusters/local/groups/billing~2Fsettle/"


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch, snapshot: Snapshot) -> KafkaDouble:
    return replace_gateway(monkeypatch)


@pytest.fixture
def empty_group(snapshot: Snapshot) -> str:
    return add_empty_group(snapshot)


def refusals(action: str) -> int:
    return AuditEntry.objects.filter(action=action, outcome="refused").count()


def delete(client, path: str, body: dict | None):  # noqa: ANN001, ANN201
    """A DELETE with a JSON body, or with none at all (as curl -X DELETE sends it)."""
    return client.delete(path) if body is None else client.delete(path, body, content_type="application/json")


@pytest.mark.parametrize(("query", "body"), [("", None), ("", {}), ("?confirm=billing", None), ("", {"confirm": "billing"})])
def test_the_api_refuses_a_group_delete_without_its_id_typed_again(client_as, kafka: KafkaDouble, empty_group: str,
                                                                   query: str, body: dict | None) -> None:
    r = delete(client_as("operator"), API + query, body)
    assert r.status_code == 400, r.content
    assert f"give the group's id '{GROUP}' again as 'confirm'" in r.json()["detail"]
    assert kafka.changes("delete_group") == []
    assert refusals("delete_group") == 1


@pytest.mark.parametrize(("query", "body"), [("?confirm=billing%2Fsettle", None), ("", {"confirm": GROUP})])
def test_the_api_deletes_a_group_with_its_id_in_the_query_or_the_body(client_as, kafka: KafkaDouble, empty_group: str,
                                                                      query: str, body: dict | None) -> None:
    r = delete(client_as("operator"), API + query, body)
    assert r.status_code == 200, r.content
    assert kafka.changes("delete_group") == [GROUP]


def test_deleting_a_groups_offsets_on_a_topic_needs_its_id_typed_again(client_as, kafka: KafkaDouble, empty_group: str) -> None:
    operator = client_as("operator")
    r = operator.delete(API + "offsets/?topic=orders")
    assert r.status_code == 400 and "'confirm'" in r.json()["detail"]
    assert kafka.changes("delete_group_offsets") == []
    assert operator.delete(API + "offsets/?topic=orders&confirm=billing%2Fsettle").status_code == 200
    assert kafka.changes("delete_group_offsets") == [(GROUP, [("orders", 0)])]


def test_a_reset_is_applied_only_with_the_groups_id_typed_again(client_as, kafka: KafkaDouble, empty_group: str) -> None:
    operator = client_as("operator")
    preview = operator.post(API + "offsets/", {"to": "earliest", "dry_run": True}, content_type="application/json")
    assert preview.status_code == 200, preview.content
    refused = operator.post(API + "offsets/", {"to": "earliest"}, content_type="application/json")
    assert refused.status_code == 400 and "'confirm'" in refused.json()["detail"]
    assert kafka.changes("alter_group_offsets") == [] and refusals("reset_offsets") == 1
    done = operator.post(API + "offsets/", {"to": "earliest", "confirm": GROUP}, content_type="application/json")
    assert done.status_code == 200, done.content
    assert kafka.changes("alter_group_offsets") == [(GROUP, {("orders", 0): 0})]


def test_the_reset_page_asks_for_the_name_with_the_preview_and_refuses_an_apply_without_it(
        client_as, kafka: KafkaDouble, empty_group: str) -> None:
    operator = client_as("operator")
    preview = operator.post(PAGE + "reset/", {"to": "earliest", "apply": "0"})
    assert preview.status_code == 200 and b'name="confirm"' in preview.content
    r = operator.post(PAGE + "reset/", {"to": "earliest", "apply": "1", "confirm": ""})
    assert r.status_code == 400 and b"again as &#x27;confirm&#x27;" in r.content
    assert kafka.changes("alter_group_offsets") == []
    assert operator.post(PAGE + "reset/", {"to": "earliest", "apply": "1", "confirm": GROUP}).status_code == 302
    assert len(kafka.changes("alter_group_offsets")) == 1


def test_the_group_page_deletes_offsets_or_the_group_only_with_its_name_typed(client_as, kafka: KafkaDouble,
                                                                             empty_group: str) -> None:
    operator = client_as("operator")
    operator.post(PAGE + "delete/", {"topic": "orders", "confirm": ""})
    operator.post(PAGE + "delete/", {"confirm": "billing"})
    assert kafka.changes("delete_group_offsets") == [] and kafka.changes("delete_group") == []
    assert refusals("delete_group_offsets") == 1 and refusals("delete_group") == 1
    operator.post(PAGE + "delete/", {"topic": "orders", "confirm": GROUP})
    operator.post(PAGE + "delete/", {"confirm": GROUP})
    assert len(kafka.changes("delete_group_offsets")) == 1 and kafka.changes("delete_group") == [GROUP]


def test_a_change_made_on_the_page_and_in_the_api_records_the_same_audit_entry(client_as, kafka: KafkaDouble,
                                                                               empty_group: str) -> None:
    operator = client_as("operator")
    assert operator.post(PAGE + "reset/", {"to": "earliest", "apply": "1", "confirm": GROUP}).status_code == 302
    assert operator.post(API + "offsets/", {"to": "earliest", "confirm": GROUP}, content_type="application/json").status_code == 200
    assert operator.post(PAGE + "delete/", {"topic": "orders", "confirm": GROUP}).status_code == 302
    assert operator.delete(API + "offsets/?topic=orders&confirm=billing%2Fsettle").status_code == 200
    entries = [(e.action, e.target, e.details, e.outcome) for e in AuditEntry.objects.filter(cluster="local").order_by("id")]
    reset = ("reset_offsets", GROUP, {"to": "earliest", "topics": [], "partitions": {}, "offsets": {"orders-0": 0}}, "ok")
    deleted = ("delete_group_offsets", GROUP, {"topic": "orders", "partitions": 1}, "ok")
    assert entries == [reset, reset, deleted, deleted]


def test_an_unclean_election_without_the_clusters_name_is_audited_as_refused(client_as, kafka: KafkaDouble) -> None:
    r = client_as("admin").post("/api/v1/clusters/local/leader-elections/", {"type": "unclean", "topics": ["orders"]},
                                content_type="application/json")
    assert r.status_code == 400 and "type the cluster's name ('local')" in r.json()["detail"]
    assert kafka.changes("elect_leaders") == [] and refusals("elect_leaders") == 1


def test_the_schema_states_the_confirmations(client_as) -> None:
    schema = client_as("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    bodies = schema["components"]["schemas"]
    assert "confirm" in bodies["ResetBody"]["properties"] and "confirm" in bodies["GroupDeleteBody"]["properties"]
    group = schema["paths"]["/api/v1/clusters/{cluster}/consumer-groups/{group}/"]["delete"]
    assert "requestBody" in group and any(p["name"] == "confirm" for p in group["parameters"])
    assert "all" in bodies["PurgeBody"]["properties"] and "neither is a 400" in schema["paths"][
        "/api/v1/clusters/{cluster}/topics/{topic}/records/"]["delete"]["summary"]
