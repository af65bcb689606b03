"""Uploaded schemas through the API and the topic page: uploads, bad schemas as 400 sentences, roles, the
audit log, decoded records in the API, its exports and the page (masked where a policy says so), and
produce encoding with a schema. Kafka is a stand-in that answers every scan with the same records."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import fastavro
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from console import gateway
from console.gateway.messages.records import Produced, Record
from console.gateway.messages.scan_spec import ScanProgress
from console.models import AuditEntry
from console.snapshots import store
from tests.web.conftest import NoKafka, sample_snapshot
from topics_app import browse, schema_wire, services
from topics_app.models import MaskingPolicy, TopicSchema

API = "/api/v1/clusters/local/topics/orders/"
AVRO = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "string"}, {"name": "amount", "type": "long"},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [{"name": "email", "type": "string"}]}}]}
ORDER = {"id": "o-7", "amount": 1250, "customer": {"email": "alice.secret@example.com"}}
PROTO = 'syntax = "proto3";\npackage shop;\nmessage Key { string id = 1; }\n'


def avro_bytes(value: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(AVRO), value)
    return out.getvalue()


FRAMED = schema_wire.frame(42, avro_bytes(ORDER))
RECORDS = [
    Record("orders", 0, 5, 1_700_000_000_000, "CreateTime", None, FRAMED, (), 0, len(FRAMED)),
    Record("orders", 0, 6, 1_700_000_000_001, "CreateTime", None, schema_wire.frame(99, b"\x02"), (), 0, 6),
    Record("orders", 0, 7, 1_700_000_000_002, "CreateTime", None, b"\xff\xfe", (), 0, 2),
]


def fake_scan(gw: Any, spec: Any, matcher: Callable[[Record], bool] | None, on_progress: Any = None,
              raw_matcher: Any = None, cancel: Any = None, time_budget: Any = None) -> tuple[list[Record], ScanProgress]:
    found = [r for r in RECORDS if (raw_matcher is None or raw_matcher(r.key, r.value)) and (matcher is None or matcher(r))]
    return found, ScanProgress(scanned=len(RECORDS), matched=len(found), positions={0: 8}, done=True, reason="Read everything.")


@pytest.fixture
def kafka(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[bytes | None, bytes | None]]:
    snap = sample_snapshot(version=2)
    store.save(snap, snap.content_bytes())
    monkeypatch.setattr(gateway, "for_cluster", lambda name: NoKafka(name, []))
    monkeypatch.setattr(browse, "scan", fake_scan)
    produced: list[tuple[bytes | None, bytes | None]] = []

    def produce(gw: Any, topic: str, value: bytes | None, key: bytes | None = None, **kwargs: Any) -> Produced:
        produced.append((value, key))
        return Produced(topic, 0, len(produced), 1)

    monkeypatch.setattr(services, "produce", produce)
    return produced


def upload(client: Client, **fields: Any) -> Any:
    body = {"part": "value", "format": "avro", "name": "order.avsc", "text": json.dumps(AVRO), "schema_ids": [42], **fields}
    return client.post(API + "schemas/", body, content_type="application/json")


def test_an_operator_uploads_an_avro_schema_and_anyone_who_sees_the_topic_lists_it(db: None, kafka: Any, client_as: Any) -> None:
    response = upload(client_as("operator"))
    assert response.status_code == 201, response.content
    listed = client_as("viewer").get(API + "schemas/").json()["schemas"]
    assert [(s["part"], s["format"], s["name"], s["schema_ids"]) for s in listed] == [("value", "avro", "order.avsc", [42])]
    entry = AuditEntry.objects.get(action="upload_schema")
    assert entry.target == "orders" and entry.details["schema_ids"] == [42]


def test_a_viewer_may_not_upload_or_remove_a_schema(db: None, kafka: Any, client_as: Any) -> None:
    assert upload(client_as("viewer")).status_code == 403
    pk = upload(client_as("operator")).json()["id"]
    assert client_as("viewer").delete(f"{API}schemas/{pk}/").status_code == 403
    assert client_as("operator").delete(f"{API}schemas/{pk}/").status_code == 204
    assert not TopicSchema.objects.exists() and AuditEntry.objects.filter(action="delete_schema").count() == 1


@pytest.mark.parametrize(("fields", "words"), [
    ({"text": "{"}, "The Avro schema is not JSON"),
    ({"text": json.dumps({"type": "record", "name": "X", "fields": [{"name": "a", "type": "lng"}]})}, "unknown type 'lng'"),
    ({"format": "protobuf", "text": "message {"}, "The Protobuf file does not compile"),
    ({"format": "protobuf", "text": PROTO, "message_type": "shop.Nope"}, "defines no message type 'shop.Nope'; it defines shop.Key"),
    ({"format": "json_schema", "text": '{"type": 5}'}, "The JSON Schema is not valid at $.type"),
    ({"format": "yaml"}, "format"),
    ({"part": "header"}, "part"),
    ({"schema_ids": [-1]}, "schema_ids"),
])
def test_a_bad_schema_is_a_400_sentence_naming_the_problem(db: None, kafka: Any, client_as: Any, fields: dict[str, Any],
                                                            words: str) -> None:
    response = upload(client_as("operator"), **fields)
    assert response.status_code == 400 and words in response.content.decode()
    assert not TopicSchema.objects.exists()


def test_a_schema_id_already_mapped_for_the_part_is_refused(db: None, kafka: Any, client_as: Any) -> None:
    assert upload(client_as("operator")).status_code == 201
    response = upload(client_as("operator"), name="again.avsc")
    assert response.status_code == 400 and "Schema id 42 is already mapped to 'order.avsc'" in response.content.decode()


def test_the_api_decodes_framed_records_and_shows_the_rest_as_hex_with_the_reason(db: None, kafka: Any, client_as: Any) -> None:
    upload(client_as("operator"))
    rows = client_as("viewer").get(API + "messages/", {"start": "oldest"}).json()["records"]
    decoded, unmapped, garbage = rows
    assert json.loads(decoded["value"]) == ORDER and decoded["value_format"] == "avro"
    assert decoded["value_schema"]["schema_id"] == 42 and decoded["value_schema"]["schema"] == "order.avsc"
    assert unmapped["value_format"] == "hex" and "schema id 99, which is mapped to no schema" in unmapped["value_note"]
    assert garbage["value_format"] == "hex" and garbage["value"] == "ff fe" and garbage["value_note"].startswith("not Avro")


def test_exports_carry_decoded_values(db: None, kafka: Any, client_as: Any) -> None:
    upload(client_as("operator"))
    lines = b"".join(client_as("viewer").get(API + "messages/", {"start": "oldest", "format": "jsonl"}).streaming_content)
    first = json.loads(lines.splitlines()[0])
    assert first["value"] == ORDER and first["value_format"] == "avro" and first["value_schema"]["schema_id"] == 42
    csv = b"".join(client_as("viewer").get(API + "messages/", {"start": "oldest", "format": "csv"}).streaming_content).decode()
    assert '""email"":""alice.secret@example.com""' in csv and ",avro," in csv


def test_a_masked_json_path_is_masked_in_decoded_avro_on_the_api_the_exports_and_the_page(db: None, kafka: Any,
                                                                                          client_as: Any) -> None:
    upload(client_as("operator"))
    MaskingPolicy.objects.create(name="pii", topic_pattern="orders", targets=[{"kind": "json_path", "path": "$.customer.email"}])
    user = User.objects.create_user("support", password="pw")
    user.groups.set([Group.objects.get_or_create(name="viewer")[0]])
    c = Client()
    c.force_login(user)
    api = c.get(API + "messages/", {"start": "oldest"})
    row = api.json()["records"][0]
    assert json.loads(row["value"])["customer"]["email"] == "****" and row["masked"] == ["json:$.customer.email"]
    exports = [b"".join(c.get(API + "messages/", {"start": "oldest", "format": f}).streaming_content).decode()  # type: ignore[attr-defined]
               for f in ("jsonl", "csv")]
    page = c.get("/clusters/local/topics/orders/messages/?run=1&start=oldest").content.decode()
    for text in [api.content.decode(), *exports, page]:
        assert "alice.secret" not in text and "****" in text
    assert "schema id 42" in page


def test_produce_encodes_json_with_an_uploaded_schema_framed_with_the_chosen_id(db: None, kafka: Any, client_as: Any) -> None:
    pk = upload(client_as("operator")).json()["id"]
    response = client_as("operator").post(API + "messages/", {"value": ORDER, "value_schema": pk, "value_schema_id": 42},
                                          content_type="application/json")
    assert response.status_code == 201, response.content
    assert kafka == [(FRAMED, None)]


def test_produce_input_that_does_not_fit_the_schema_is_a_400_naming_the_field(db: None, kafka: Any, client_as: Any) -> None:
    pk = upload(client_as("operator")).json()["id"]
    response = client_as("operator").post(API + "messages/", {"value": {**ORDER, "amount": "lots"}, "value_schema": pk},
                                          content_type="application/json")
    assert response.status_code == 400 and "field 'Order.amount' is \"lots\"" in response.json()["detail"] and kafka == []


def test_produce_with_a_protobuf_key_schema(db: None, kafka: Any, client_as: Any) -> None:
    pk = upload(client_as("operator"), part="key", format="protobuf", text=PROTO, name="key.proto", schema_ids=[]).json()["id"]
    response = client_as("operator").post(API + "messages/", {"value": "v", "key": '{"id": "k-1"}', "key_schema": pk,
                                                              "key_schema_id": 3}, content_type="application/json")
    assert response.status_code == 201, response.content
    assert kafka == [(b"v", schema_wire.frame(3, b"\x0a\x03k-1", (0,)))]


def test_the_topic_page_lists_schemas_and_uploads_a_file(db: None, kafka: Any, client_as: Any) -> None:
    operator = client_as("operator")
    upload_file = io.BytesIO(PROTO.encode())
    upload_file.name = "key.proto"
    response = operator.post("/clusters/local/topics/orders/schemas/", {"part": "key", "format": "auto", "file": upload_file,
                                                                       "schema_ids": "3, 4"})
    assert response.status_code == 302
    row = TopicSchema.objects.get()
    assert (row.format, row.message_type, row.schema_ids) == ("protobuf", "shop.Key", [3, 4])
    page = operator.get("/clusters/local/topics/orders/").content.decode()
    assert 'id="schemas-table"' in page and "key.proto" in page and 'id="schema-form"' in page
    assert 'id="schema-form"' not in client_as("viewer").get("/clusters/local/topics/orders/").content.decode()


def test_a_bad_upload_on_the_page_shows_its_sentence(db: None, kafka: Any, client_as: Any) -> None:
    operator = client_as("operator")
    response = operator.post("/clusters/local/topics/orders/schemas/", {"part": "value", "format": "avro", "text": "{"},
                             follow=True)
    assert "The Avro schema is not JSON" in response.content.decode() and not TopicSchema.objects.exists()


def test_the_produce_form_encodes_with_the_chosen_schema(db: None, kafka: Any, client_as: Any) -> None:
    pk = upload(client_as("operator")).json()["id"]
    operator = client_as("operator")
    assert f'<option value="{pk}">order.avsc</option>' in operator.get("/clusters/local/topics/orders/messages/").content.decode()
    response = operator.post("/clusters/local/topics/orders/messages/produce/", {
        "value": json.dumps(ORDER), "encoding": "text", "value_schema": str(pk), "value_schema_id": "42"}, follow=True)
    assert "Produced to partition 0" in response.content.decode() and kafka == [(FRAMED, None)]
    response = operator.post("/clusters/local/topics/orders/messages/produce/", {
        "value": json.dumps({**ORDER, "customer": {}}), "value_schema": str(pk)}, follow=True)
    assert "field &#x27;Order.customer.Customer.email&#x27; is null" in response.content.decode() and len(kafka) == 1


@pytest.mark.parametrize("fields", [{"text": '{"type": "string", "doc": "\ud800"}'}, {"name": "a\x00.avsc"}])
def test_text_no_database_can_store_is_a_400(db: None, kafka: Any, client_as: Any, fields: dict[str, Any]) -> None:
    response = upload(client_as("operator"), **fields)
    assert response.status_code == 400 and not TopicSchema.objects.exists()
