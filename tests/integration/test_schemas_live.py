"""Schemas on the real cluster: Avro and Protobuf records in Confluent's wire format, written by this test
with fastavro and protoc-generated classes (not the console's encoder), are decoded exactly by the browse
API; what the console produces with a schema reads back with those same independent decoders; the
browser shows the decoded records (light and dark)."""

from __future__ import annotations

import importlib.resources
import importlib.util
import io
import json
import struct
import subprocess
import sys
from types import ModuleType
from typing import Any

import fastavro
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.conftest import OUTPUT, PASSWORD, Stack, unique, wait_for

pytestmark = pytest.mark.cluster

AVRO_ID, PROTO_ID = 101, 202
AVRO = {"type": "record", "name": "Payment", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"}, {"name": "cents", "type": "long"}, {"name": "card", "type": "string"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}, {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "payer", "type": {"type": "record", "name": "Payer", "fields": [
        {"name": "email", "type": "string"}, {"name": "vip", "type": "boolean"}]}}]}
PROTO = """syntax = "proto3";
package shop;
message Shipment { string id = 1; int32 parcels = 2; repeated string tags = 3; Address to = 4; }
message Address { string city = 1; string street = 2; }
"""


def frame(schema_id: int, body: bytes, indexes: bytes = b"") -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + indexes + body


def avro_encode(value: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(AVRO), value)
    return out.getvalue()


def avro_decode(data: bytes) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(AVRO), None)


@pytest.fixture(scope="module")
def shop_pb2(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The .proto compiled to Python classes by protoc, as a producing application would have them."""
    out = tmp_path_factory.mktemp("pb")
    (out / "shop.proto").write_text(PROTO)
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{out}", f"-I{include}", f"--python_out={out}", "shop.proto"],
                   check=True, cwd=out)
    spec = importlib.util.spec_from_file_location("shop_pb2_test", out / "shop_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def schemas_topic(stack: Stack) -> dict[str, Any]:
    topic = unique("payments")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{topic}/").status_code == 200, 30, what="topic in snapshot")
    url = f"{stack.base_url}/api/v1/clusters/local/topics/{topic}/schemas/"
    operator = stack.api("operator")
    avro = operator.post(url, timeout=10, json={"part": "value", "format": "avro", "name": "payment.avsc",
                                                "text": json.dumps(AVRO), "schema_ids": [AVRO_ID]})
    assert avro.status_code == 201, avro.text
    proto = operator.post(url, timeout=30, json={"part": "value", "format": "protobuf", "name": "shop.proto", "text": PROTO,
                                                 "message_type": "shop.Shipment", "schema_ids": [PROTO_ID]})
    assert proto.status_code == 201, proto.text
    assert proto.json()["message_types"] == ["shop.Shipment", "shop.Address"]
    return {"topic": topic, "avro": avro.json()["id"], "proto": proto.json()["id"]}


def produce(stack: Stack, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=f"k{i}".encode())
    assert producer.flush(30) == 0


def newest(stack: Stack, topic: str, n: int) -> list[dict[str, Any]]:
    response = stack.get(f"/api/v1/clusters/local/topics/{topic}/messages/", params={"start": "newest", "limit": n})
    assert response.status_code == 200, response.text
    return sorted(response.json()["records"], key=lambda r: r["offset"])


def raw_newest(stack: Stack, topic: str) -> bytes:
    """The newest record's value as Kafka holds it, read with a plain consumer."""
    consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": unique("raw"), "enable.auto.commit": False})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, high - 1)])
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        value = message.value()
        assert value is not None
        return bytes(value)
    finally:
        consumer.close()


def test_framed_avro_and_protobuf_written_elsewhere_are_decoded_exactly(stack: Stack, schemas_topic: dict[str, Any],
                                                                        shop_pb2: ModuleType) -> None:
    topic = schemas_topic["topic"]
    payment = {"id": "p-1", "cents": 2**40 + 7, "card": "4111 1111 1111 1111", "tags": ["web", "eu"], "note": None,
               "payer": {"email": "ada@example.com", "vip": True}}
    shipment = shop_pb2.Shipment(id="s-9", parcels=3, tags=["fragile"], to=shop_pb2.Address(city="Lyon", street="Rue 1"))
    address = shop_pb2.Address(city="Oslo")
    produce(stack, topic, [
        frame(AVRO_ID, avro_encode(payment)),
        frame(PROTO_ID, shipment.SerializeToString(), b"\x00"),  # [0]: the file's first message type
        frame(PROTO_ID, address.SerializeToString(), b"\x02\x02"),  # [1]: its second
        frame(AVRO_ID, avro_encode(payment)[:-4]),  # cut short
        frame(303, avro_encode(payment)),  # an id mapped to nothing
    ])
    rows = newest(stack, topic, 5)
    assert json.loads(rows[0]["value"]) == payment and rows[0]["value_format"] == "avro"
    assert rows[0]["value_schema"]["schema_id"] == AVRO_ID
    assert json.loads(rows[1]["value"]) == {"id": "s-9", "parcels": 3, "tags": ["fragile"], "to": {"city": "Lyon", "street": "Rue 1"}}
    assert rows[1]["value_format"] == "protobuf" and rows[1]["value_schema"]["message_type"] == "shop.Shipment"
    assert json.loads(rows[2]["value"]) == {"city": "Oslo"} and rows[2]["value_schema"]["message_type"] == "shop.Address"
    assert rows[3]["value_format"] == "hex" and rows[3]["value_note"].startswith(f"schema id {AVRO_ID}: not Avro")
    assert rows[4]["value_format"] == "hex" and "schema id 303, which is mapped to no schema" in rows[4]["value_note"]
    assert rows[4]["value"].replace(" ", "") == frame(303, avro_encode(payment)).hex()


def test_what_the_console_produces_with_a_schema_reads_back_with_independent_decoders(stack: Stack, schemas_topic: dict[str, Any],
                                                                                      shop_pb2: ModuleType) -> None:
    topic = schemas_topic["topic"]
    url = f"{stack.base_url}/api/v1/clusters/local/topics/{topic}/messages/"
    payment = {"id": "p-2", "cents": 99, "card": "5500", "tags": [], "note": "gift", "payer": {"email": "bo@example.com", "vip": False}}
    sent = stack.api("operator").post(url, timeout=10, json={"value": payment, "value_schema": schemas_topic["avro"],
                                                             "value_schema_id": AVRO_ID})
    assert sent.status_code == 201, sent.text
    raw = raw_newest(stack, topic)
    assert raw[:5] == frame(AVRO_ID, b"") and avro_decode(raw[5:]) == payment

    sent = stack.api("operator").post(url, timeout=10, json={"value": {"id": "s-3", "parcels": 2, "to": {"city": "Rome"}},
                                                             "value_schema": schemas_topic["proto"], "value_schema_id": PROTO_ID})
    assert sent.status_code == 201, sent.text
    raw = raw_newest(stack, topic)
    assert raw[:6] == frame(PROTO_ID, b"", b"\x00")
    decoded = shop_pb2.Shipment.FromString(raw[6:])
    assert (decoded.id, decoded.parcels, decoded.to.city) == ("s-3", 2, "Rome")
    assert json.loads(newest(stack, topic, 1)[0]["value"]) == {"id": "s-3", "parcels": 2, "to": {"city": "Rome"}}

    refused = stack.api("operator").post(url, timeout=10, json={"value": {"id": "s-4", "parcels": "many"},
                                                                "value_schema": schemas_topic["proto"]})
    assert refused.status_code == 400 and "parcels" in refused.json()["detail"]


@pytest.mark.browser
def test_the_browser_shows_decoded_records_with_their_schema_ids_in_light_and_dark(stack: Stack, schemas_topic: dict[str, Any],
                                                                                   browser: Any) -> None:
    topic = schemas_topic["topic"]
    payment = {"id": "p-shot", "cents": 4200, "card": "4000 0000 0000 0002", "tags": ["screenshot"], "note": None,
               "payer": {"email": "shot@example.com", "vip": True}}
    produce(stack, topic, [frame(AVRO_ID, avro_encode(payment)), b"\xde\xad\xbe\xef"])
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        page.goto(stack.base_url + "/login/")
        page.fill("input[name=username]", "operator")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/clusters/local/")
        page.goto(stack.base_url + f"/clusters/local/topics/{topic}/messages/")
        page.wait_for_selector("#message-rows tr:has-text('p-shot')", timeout=15_000)
        rows = page.inner_text("#message-rows")
        assert f"schema id {AVRO_ID}" in rows and '"email": "shot@example.com"' in rows and "de ad be ef" in rows
        page.screenshot(path=str(OUTPUT / f"messages-schemas-{scheme}.png"), full_page=True)
        page.goto(stack.base_url + f"/clusters/local/topics/{topic}/#schemas")
        page.wait_for_selector("#schemas-table")
        page.locator("#schemas").screenshot(path=str(OUTPUT / f"topic-schemas-{scheme}.png"))
        context.close()
