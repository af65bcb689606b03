"""topics_app.export: JSON Lines and CSV of browsed records, binary as base64 with its format."""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Iterator

import msgpack
import pytest

from console.errors import BadParameter
from console.gateway.messages.records import Record
from topics_app.export import CSV_COLUMNS, to_csv, to_jsonl


def record(value: bytes | None = b"v", key: bytes | None = b"k", headers: tuple[tuple[str, bytes | None], ...] = (),
           timestamp_ms: int = 1_763_780_400_123, timestamp_type: str = "CreateTime", offset: int = 42) -> Record:
    return Record(topic="orders", partition=3, offset=offset, timestamp_ms=timestamp_ms, timestamp_type=timestamp_type,  # type: ignore[arg-type]
                  key=key, value=value, headers=headers, key_size=len(key or b""), value_size=len(value or b""))


def csv_rows(records: list[Record], decode_as: str = "auto") -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO("".join(to_csv(records, decode_as)))))


def jsonl_rows(records: list[Record], decode_as: str = "auto") -> list[dict]:
    return [json.loads(line) for line in to_jsonl(records, decode_as)]


# CSV ---------------------------------------------------------------------------------------------


def test_csv_starts_with_the_column_names():
    first = next(to_csv([], "auto"))
    assert first.strip() == ",".join(CSV_COLUMNS)
    assert CSV_COLUMNS == ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "key_format", "value",
                           "value_format", "headers")


def test_csv_row_carries_position_time_and_text_payloads():
    [row] = csv_rows([record(b"hello, \"world\"\nline 2", key=b"id-1")])
    assert row["topic"] == "orders"
    assert (row["partition"], row["offset"]) == ("3", "42")
    assert row["timestamp"] == "2025-11-22T03:00:00.123Z"
    assert row["timestamp_type"] == "CreateTime"
    assert (row["key"], row["key_format"]) == ("id-1", "text")
    assert (row["value"], row["value_format"]) == ("hello, \"world\"\nline 2", "text")


def test_csv_holds_a_json_value_as_compact_json():
    [row] = csv_rows([record(b'{\n  "id": 7,\n  "ok": true\n}')])
    assert (row["value"], row["value_format"]) == ('{"id":7,"ok":true}', "json")


def test_csv_exports_binary_as_base64_with_its_format():
    data = b"\x00\x01\xfe\xff"
    [row] = csv_rows([record(data)])
    assert row["value_format"] == "base64"
    assert base64.b64decode(row["value"]) == data


def test_csv_exports_hex_when_hex_was_asked_for():
    [row] = csv_rows([record(b"\x00\xff")], "hex")
    assert (row["value"], row["value_format"]) == ("00ff", "hex")


def test_csv_leaves_a_missing_key_empty_with_format_null():
    [row] = csv_rows([record(key=None)])
    assert (row["key"], row["key_format"]) == ("", "null")


def test_csv_headers_column_is_a_json_list_with_binary_values_in_base64():
    [row] = csv_rows([record(headers=(("trace", b"abc"), ("raw", b"\x00\xff"), ("none", None)))])
    assert json.loads(row["headers"]) == [
        {"name": "trace", "value": "abc", "format": "text"},
        {"name": "raw", "value": "AP8=", "format": "base64"},
        {"name": "none", "value": None, "format": "null"},
    ]


@pytest.mark.parametrize("payload", [b"=HYPERLINK(\"http://x\")", b"+1+2", b"-2+3", b"@SUM(A1)"])
def test_csv_neutralises_cells_a_spreadsheet_would_run_as_formulas(payload):
    [row] = csv_rows([record(payload)])
    assert row["value"] == "'" + payload.decode()


def test_csv_neutralises_a_formula_in_the_key_and_the_value():
    formula = '=HYPERLINK("http://x","y")'
    [row] = csv_rows([record(formula.encode(), key=formula.encode())])
    assert row["key"] == row["value"] == "'" + formula


def test_csv_neutralises_a_json_payload_that_starts_like_a_formula():
    [row] = csv_rows([record(b"-12")])
    assert row["value"] == "'-12" and row["value_format"] == "json"


def test_csv_leaves_a_record_without_timestamp_empty():
    [row] = csv_rows([record(timestamp_ms=-1, timestamp_type="NoTimestamp")])
    assert row["timestamp"] == ""


def test_csv_yields_one_chunk_per_record_after_the_header():
    chunks = list(to_csv([record(offset=1), record(offset=2)], "auto"))
    assert len(chunks) == 3


# JSON Lines --------------------------------------------------------------------------------------


def test_each_jsonl_line_is_one_newline_terminated_json_object():
    lines = list(to_jsonl([record(b"a\nb"), record(b"c")], "auto"))
    assert len(lines) == 2
    for line in lines:
        assert line.endswith("\n") and line.count("\n") == 1
        assert isinstance(json.loads(line), dict)


def test_jsonl_embeds_json_values_as_json():
    [row] = jsonl_rows([record(b'{"id": 7, "items": [1, 2]}')])
    assert row["value"] == {"id": 7, "items": [1, 2]}
    assert row["value_format"] == "json"


def test_jsonl_embeds_messagepack_as_json():
    [row] = jsonl_rows([record(msgpack.packb({"id": 7}))])
    assert (row["value"], row["value_format"]) == ({"id": 7}, "msgpack")


def test_jsonl_exports_binary_as_base64_with_its_format():
    data = bytes(range(256))
    [row] = jsonl_rows([record(data, key=b"\xff")])
    assert row["value_format"] == "base64" and base64.b64decode(row["value"]) == data
    assert row["key_format"] == "base64" and base64.b64decode(row["key"]) == b"\xff"


def test_jsonl_row_carries_position_and_both_time_forms():
    [row] = jsonl_rows([record()])
    assert {k: row[k] for k in ("topic", "partition", "offset", "timestamp", "timestamp_ms", "timestamp_type")} == {
        "topic": "orders", "partition": 3, "offset": 42, "timestamp": "2025-11-22T03:00:00.123Z",
        "timestamp_ms": 1_763_780_400_123, "timestamp_type": "CreateTime",
    }


def test_jsonl_uses_null_for_a_missing_value_and_timestamp():
    [row] = jsonl_rows([record(None, timestamp_ms=-1, timestamp_type="NoTimestamp")])
    assert (row["value"], row["value_format"], row["timestamp"], row["timestamp_ms"]) == (None, "null", None, None)


def test_jsonl_text_decoding_keeps_json_as_text():
    [row] = jsonl_rows([record(b'{"id": 7}')], "text")
    assert (row["value"], row["value_format"]) == ('{"id": 7}', "text")


def test_jsonl_with_a_lone_surrogate_escape_is_still_utf8():
    line = next(to_jsonl([record(b'{"s": "\\udc80"}')], "auto"))
    line.encode("utf-8")
    assert json.loads(line)["value"] == {"s": "\udc80"}


# both --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("export", [to_csv, to_jsonl])
def test_unknown_decoding_is_a_bad_parameter_before_anything_is_written(export):
    with pytest.raises(BadParameter):
        next(export([record()], "yaml"))


@pytest.mark.parametrize("export", [to_csv, to_jsonl])
def test_export_is_lazy_so_large_results_stream(export):
    def records() -> Iterator[Record]:
        yield record(offset=1)
        raise AssertionError("read past the first record before it was asked for")

    stream = export(records(), "auto")
    assert "orders" in "".join(next(stream) for _ in range(2 if export is to_csv else 1))
