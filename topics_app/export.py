"""Exports of browsed messages: JSON Lines and CSV, JSON payloads embedded, binary as base64."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from console.gateway.messages.records import Record
from console.inert import csv_writer
from topics_app.decoding import CONTROL_CHARS, b64, decode, json_text, utf8
from topics_app.masking import MARK, masked_parts
from topics_app.schemas import PartNote, notes

CSV_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "key_format", "value", "value_format",
               "headers")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso(ms: int) -> str | None:
    if ms < 0:
        return None
    try:
        return (_EPOCH + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except OverflowError:
        return None


def export_field(data: bytes | None, decode_as: str, note: PartNote | None = None) -> tuple[Any, str]:
    """(value, format) of a key or value in an export: parsed JSON, text, or base64 for binary.

    One read by its schema is its JSON under the schema's format; one its schema could not read is hex."""
    if data is None:
        return None, "null"
    if note is not None:
        if note.error is not None:
            return data.hex(), "hex"
        if decode_as in ("auto", "json"):
            return decode(data, "json").json, note.format
    shown = decode(data, decode_as)
    if shown.format in ("json", "msgpack"):
        return shown.json, shown.format
    if shown.format == "text":
        return shown.text, "text"
    if decode_as == "hex" and shown.error is None:
        return data.hex(), "hex"
    return b64(data), "base64"


def _export_headers(headers: tuple[tuple[str, bytes | None], ...], masked: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, value in headers:
        text = None if value is None else utf8(value)
        if "header:" + name in masked:
            out.append({"name": name, "value": MARK, "format": "masked"})
        elif value is None:
            out.append({"name": name, "value": None, "format": "null"})
        elif text is not None and not CONTROL_CHARS.search(text):
            out.append({"name": name, "value": text, "format": "text"})
        else:
            out.append({"name": name, "value": b64(value), "format": "base64"})
    return out


def _row(r: Record, decode_as: str) -> dict[str, Any]:
    masked = masked_parts(r)  # parts masking replaced: the mark is all there is
    key_note, value_note = notes(r)
    key, key_format = (MARK, "masked") if "key" in masked else export_field(r.key, decode_as, key_note)
    value, value_format = (MARK, "masked") if "value" in masked else export_field(r.value, decode_as, value_note)
    schemas = {} if key_note is None and value_note is None else {
        "key_schema": key_note.as_json() if key_note else None, "value_schema": value_note.as_json() if value_note else None}
    return {**schemas,
        "topic": r.topic,
        "partition": r.partition,
        "offset": r.offset,
        "timestamp": _iso(r.timestamp_ms),
        "timestamp_ms": r.timestamp_ms if r.timestamp_ms >= 0 else None,
        "timestamp_type": r.timestamp_type,
        "key": key,
        "key_format": key_format,
        "value": value,
        "value_format": value_format,
        "headers": _export_headers(r.headers, masked),
    }


def to_jsonl(records: Iterable[Record], decode_as: str = "auto") -> Iterator[str]:
    """One JSON object per line (newline-terminated); JSON payloads are embedded as JSON."""
    decode(None, decode_as)  # reject an unknown decoding before the first line
    for r in records:
        yield json_text(_row(r, decode_as)) + "\n"


def _cell(value: Any) -> str:
    """A CSV cell: text as it is, parsed JSON as compact JSON (the writer neutralises formulas)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json_text(value)


def to_csv(records: Iterable[Record], decode_as: str = "auto") -> Iterator[str]:
    """A header line, then one line per record (CSV_COLUMNS; JSON payloads and headers as compact JSON)."""
    decode(None, decode_as)
    buffer = io.StringIO()
    writer = csv_writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(CSV_COLUMNS)
    yield flush()
    for r in records:
        row = _row(r, decode_as)
        timestamp = row["timestamp"] or (str(r.timestamp_ms) if r.timestamp_ms >= 0 else "")
        writer.writerow([_cell(r.topic), r.partition, r.offset, timestamp, r.timestamp_type, _cell(row["key"]), row["key_format"],
                         _cell(row["value"]), row["value_format"], json_text(row["headers"])])
        yield flush()
