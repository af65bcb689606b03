"""Schema codecs without a database: Confluent's wire format, each format's round trip, bad bytes shown as hex with a reason."""

from __future__ import annotations

import io
import json
import struct

import fastavro
import pytest

from console.errors import BadParameter
from console.gateway.messages.records import Record
from topics_app import browse, schema_formats, schema_wire
from topics_app.masking import MARK, CompiledPolicy, masker_of
from topics_app.schemas import Loaded, PartDecoder, TopicDecoder

AVRO = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"}, {"name": "amount", "type": "long"},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
        {"name": "email", "type": "string"}, {"name": "vip", "type": "boolean"}]}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "blob", "type": "bytes"},
]})
ORDER = {"id": "o-1", "amount": 1250, "customer": {"email": "alice@example.com", "vip": True}, "note": None,
         "tags": ["a", "b"], "blob": "base64:AAEC"}
PROTO = """syntax = "proto3";
package shop;
message Order { string id = 1; int32 amount = 2; Customer customer = 3; message Line { string sku = 1; } repeated Line lines = 4; }
message Customer { string email = 1; }
"""
JSON_SCHEMA = json.dumps({"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}})


def record(value: bytes | None, key: bytes | None = None) -> Record:
    return Record("orders", 0, 1, 1000, "CreateTime", key, value, (), len(key or b""), len(value or b""))


def decoder(fmt: str, text: str, ids: tuple[int, ...] = (), message_type: str = "") -> PartDecoder:
    codec, compiled = schema_formats.check(fmt, text, "s.proto" if fmt == "protobuf" else "s", message_type)
    if compiled:
        codec = schema_formats.load(fmt, text, codec.message_type, compiled)
    return PartDecoder([Loaded(1, "s", fmt, codec, ids)])


def avro_bytes(value: dict[str, object]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(AVRO)), {**value, "blob": b"\x00\x01\x02"})
    return out.getvalue()


# Wire format ---------------------------------------------------------------------------------------------


def test_wire_format_header_gives_the_big_endian_schema_id() -> None:
    data = b"\x00" + struct.pack(">I", 70000) + b"rest"
    assert schema_wire.framed_id(data) == 70000 and schema_wire.payload(data) == b"rest"


def test_bytes_without_the_magic_byte_or_too_short_are_not_framed() -> None:
    assert schema_wire.framed_id(b"\x01\x00\x00\x00\x07x") is None
    assert schema_wire.framed_id(b"\x00\x00\x00") is None


@pytest.mark.parametrize("indexes", [(0,), (1,), (0, 2), (3, 1, 130)])
def test_protobuf_message_indexes_round_trip(indexes: tuple[int, ...]) -> None:
    framed = schema_wire.frame(9, b"body", indexes)
    assert schema_wire.framed_id(framed) == 9
    assert schema_wire.read_indexes(schema_wire.payload(framed)) == (indexes, b"body")


def test_the_first_message_type_is_written_as_a_single_zero() -> None:
    assert schema_wire.frame(1, b"", (0,)) == b"\x00\x00\x00\x00\x01\x00"


def test_a_cut_short_index_list_is_a_wire_error() -> None:
    with pytest.raises(schema_wire.WireError, match="cut short"):
        schema_wire.read_indexes(b"\x04\x02")  # two entries announced, one given


# Checking uploads ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "text", "words"), [
    ("avro", "{not json", "not JSON"),
    ("avro", json.dumps({"type": "record", "name": "X", "fields": [{"name": "a", "type": "strin"}]}), "unknown type 'strin'"),
    ("protobuf", 'syntax = "proto3"; message X { strin a = 1; }', '"strin" is not defined'),
    ("protobuf", 'syntax = "proto3"; enum E { A = 0; }', "defines no message type"),
    ("json_schema", json.dumps({"type": "objekt"}), "not valid at $.type"),
    ("json_schema", "[1]", "must be a JSON object"),
    ("xml", "<a/>", "'format' must be one of"),
    ("avro", "   ", "empty"),
])
def test_a_bad_schema_is_one_sentence_naming_the_problem(fmt: str, text: str, words: str) -> None:
    with pytest.raises(BadParameter) as caught:
        schema_formats.check(fmt, text, "bad.proto")
    assert words in caught.value.message and caught.value.message.endswith(".")


def test_protobuf_message_types_are_listed_and_an_unknown_one_is_refused() -> None:
    codec, compiled = schema_formats.check("protobuf", PROTO, "orders.proto")
    assert codec.message_types == ("shop.Order", "shop.Order.Line", "shop.Customer") and codec.message_type == "shop.Order"
    assert compiled
    with pytest.raises(BadParameter, match="defines no message type 'shop.Nope'; it defines shop.Order"):
        schema_formats.check("protobuf", PROTO, "orders.proto", "shop.Nope")


# Decoding ------------------------------------------------------------------------------------------------


def test_avro_round_trip_through_the_console_codec() -> None:
    part = decoder("avro", AVRO)
    data, _ = part.newest.codec.encode(ORDER, "value")
    assert data == avro_bytes(ORDER)
    text, note = part.decode(data)
    assert json.loads(text) == ORDER and note.error is None and note.schema_id is None


def test_framed_avro_is_decoded_with_the_schema_its_id_is_mapped_to_and_shows_the_id() -> None:
    framed = schema_wire.frame(42, avro_bytes(ORDER))
    text, note = decoder("avro", AVRO, ids=(42,)).decode(framed)
    assert json.loads(text) == ORDER and note.schema_id == 42 and note.error is None


def test_a_schema_id_mapped_to_no_schema_is_shown_as_hex_with_the_reason() -> None:
    framed = schema_wire.frame(43, avro_bytes(ORDER))
    data, note = decoder("avro", AVRO, ids=(42,)).decode(framed)
    assert data == framed and note.schema_id == 43
    assert note.error is not None and "schema id 43, which is mapped to no schema" in note.error and "mapped: 42" in note.error


def test_truncated_avro_is_hex_with_the_reason() -> None:
    data, note = decoder("avro", AVRO).decode(avro_bytes(ORDER)[:-3])
    assert note.error is not None and note.error.startswith("not Avro of this schema")


def test_extra_bytes_after_an_avro_record_do_not_pass_as_that_record() -> None:
    _, note = decoder("avro", AVRO).decode(avro_bytes(ORDER) + b"zz")
    assert note.error == "not Avro of this schema (2 bytes left over after the record)"


def test_a_frame_cut_inside_its_header_is_hex_with_the_reason() -> None:
    _, note = decoder("protobuf", PROTO).decode(b"\x00\x00\x01")
    assert note.error is not None and "shorter than its 5-byte header" in note.error


def test_protobuf_round_trip_and_framing_picks_the_type_by_its_message_indexes() -> None:
    part = decoder("protobuf", PROTO, ids=(5,))
    codec = part.newest.codec
    data, indexes = codec.encode({"id": "o-1", "amount": 3, "customer": {"email": "a@b"}, "lines": [{"sku": "s"}]}, "value")
    assert indexes == (0,)
    text, note = part.decode(data)
    assert json.loads(text) == {"id": "o-1", "amount": 3, "customer": {"email": "a@b"}, "lines": [{"sku": "s"}]}
    framed = schema_wire.frame(5, bytes.fromhex("0a0378407a"), (1,))  # field 1 = "x@z" read as shop.Customer
    text, note = part.decode(framed)
    assert json.loads(text) == {"email": "x@z"} and note.message_type == "shop.Customer" and note.schema_id == 5


def test_protobuf_framing_naming_an_undefined_message_is_hex_with_the_reason() -> None:
    _, note = decoder("protobuf", PROTO, ids=(5,)).decode(schema_wire.frame(5, b"", (7,)))
    assert note.error is not None and "message index [7], which the schema file does not define" in note.error


def test_bytes_that_are_not_protobuf_are_hex_with_the_reason() -> None:
    data, note = decoder("protobuf", PROTO).decode(b"\xff\xff\xff")
    assert data == b"\xff\xff\xff" and note.error is not None and note.error.startswith("not a Protobuf shop.Order")


def test_json_schema_decodes_matching_json_and_names_where_it_does_not_match() -> None:
    part = decoder("json_schema", JSON_SCHEMA, ids=(3,))
    text, note = part.decode(schema_wire.frame(3, b'{"id": "a", "n": 2}'))
    assert json.loads(text) == {"id": "a", "n": 2} and note.schema_id == 3
    _, note = part.decode(b'{"id": "a", "n": "two"}')
    assert note.error is not None and "does not match the JSON Schema at $.n" in note.error


# Encoding: invalid input names the field ------------------------------------------------------------------


def test_avro_input_that_does_not_fit_names_the_field() -> None:
    codec = decoder("avro", AVRO).newest.codec
    with pytest.raises(BadParameter, match="field 'shop.Order.amount' is \"lots\""):
        codec.encode({**ORDER, "amount": "lots"}, "value")


def test_protobuf_input_that_does_not_fit_names_the_field() -> None:
    codec = decoder("protobuf", PROTO).newest.codec
    with pytest.raises(BadParameter, match="amount field"):
        codec.encode({"amount": "lots"}, "value")


def test_json_schema_input_that_does_not_match_names_the_place() -> None:
    codec = decoder("json_schema", JSON_SCHEMA).newest.codec
    with pytest.raises(BadParameter, match=r"at \$: 'id' is a required property"):
        codec.encode({"n": 1}, "key")


# Decoded records and masking ------------------------------------------------------------------------------


def test_a_masked_json_path_is_masked_in_a_decoded_avro_record() -> None:
    policy = CompiledPolicy.compile("p", "*", "literal", "orders", (), (), [{"kind": "json_path", "path": "$.customer.email"}])
    masker = masker_of([policy], frozenset({"viewer"}), "local", "orders")
    req = browse.parse_request("orders", {}, masker=masker, decoder=TopicDecoder(None, decoder("avro", AVRO, ids=(42,))))
    [seen] = req.masked([record(schema_wire.frame(42, avro_bytes(ORDER)))])
    shown = browse.row(seen)
    value = json.loads(shown["value"])
    assert value["customer"] == {"email": MARK, "vip": True} and value["id"] == "o-1"
    assert shown["value_format"] == "avro" and shown["value_schema"]["schema_id"] == 42
    assert shown["masked"] == ["json:$.customer.email"] and "alice" not in json.dumps(shown)


def test_a_record_its_schema_cannot_read_is_masked_whole_when_a_path_is_masked() -> None:
    policy = CompiledPolicy.compile("p", "*", "literal", "orders", (), (), [{"kind": "json_path", "path": "$.customer.email"}])
    masker = masker_of([policy], frozenset({"viewer"}), "local", "orders")
    req = browse.parse_request("orders", {}, masker=masker, decoder=TopicDecoder(None, decoder("avro", AVRO)))
    [seen] = req.masked([record(b"alice@example.com garbage")])
    assert browse.row(seen)["value"] == MARK


def test_filters_see_the_decoded_record() -> None:
    req = browse.parse_request("orders", {"json_path": "$.customer.vip", "json_value": "true"}, masker=None,
                               decoder=TopicDecoder(None, decoder("avro", AVRO)))
    assert req.raw_matcher is None and req.matcher is not None
    assert req.matcher(record(avro_bytes(ORDER)))
    assert not req.matcher(record(avro_bytes({**ORDER, "customer": {"email": "b@c", "vip": False}})))


def test_a_key_read_by_its_schema_and_a_value_that_fails_both_show_in_the_row() -> None:
    keys = decoder("json_schema", json.dumps({"type": "string"}))
    req = browse.parse_request("orders", {}, masker=None, decoder=TopicDecoder(keys, decoder("avro", AVRO)))
    [seen] = req.masked([record(b"\xff\x00", key=b'"k-1"')])
    shown = browse.row(seen)
    assert (shown["key"], shown["key_format"]) == ('"k-1"', "json_schema")
    assert shown["value_format"] == "hex" and shown["value"] == "ff 00" and shown["value_note"].startswith("not Avro")


@pytest.mark.parametrize("items", ["null", {"type": "record", "name": "E", "fields": [{"name": "n", "type": "null"}]},
                                   {"type": "fixed", "name": "F", "size": 0}])
def test_an_avro_array_of_items_that_take_no_bytes_is_refused_at_upload(items: object) -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "xs", "type": {"type": "array", "items": items}}]}
    with pytest.raises(BadParameter, match=r"an array whose items take no bytes \(at \$\.xs\)"):
        schema_formats.check("avro", json.dumps(schema))


def test_recursive_avro_schemas_are_accepted_and_nested_records_decode() -> None:
    node = {"type": "record", "name": "Node", "fields": [{"name": "v", "type": "int"},
                                                         {"name": "next", "type": ["null", "Node"], "default": None}]}
    part = decoder("avro", json.dumps(node))
    data, _ = part.newest.codec.encode({"v": 1, "next": {"v": 2, "next": None}}, "value")
    assert json.loads(part.decode(data)[0]) == {"v": 1, "next": {"v": 2, "next": None}}


def test_a_deeply_nested_record_is_hex_with_a_reason_not_an_error() -> None:
    node = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"], "default": None}]}
    deep = b"\x02" * 100_000 + b"\x00"  # 100,000 nested nodes
    data, note = decoder("avro", json.dumps(node)).decode(deep)
    assert data == deep and note.error is not None


def test_a_deeply_nested_protobuf_message_is_hex_with_a_reason_not_an_error() -> None:
    part = decoder("protobuf", 'syntax = "proto3"; message N { N next = 1; }')
    nested = b""
    for _ in range(2000):  # 2,000 levels: field 1, its length as a varint, the level below
        size = len(nested)
        varint = bytearray()
        while True:
            varint.append((size & 0x7F) | (0x80 if size > 0x7F else 0))
            size >>= 7
            if not size:
                break
        nested = b"\x0a" + bytes(varint) + nested
    data, note = part.decode(nested)
    assert data == nested and note.error is not None and note.error.startswith("not a Protobuf N")
