"""Records decoded by the schemas uploaded for their topic, and values encoded by them for produce.

A browse asks `decoder_for(cluster, topic)` once (one query); its `apply` turns each record's key
and value into JSON text before masking, filters and display see them, so a masked JSON path is
masked in a decoded Avro or Protobuf record exactly as in a JSON one. A key or value the schema
cannot read keeps its bytes and carries the reason (shown beside its hex); nothing here raises on
record bytes. Codecs are cached per process by (row, updated_at): an upload or delete in any
process counts from the next request on.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict, dataclass
from typing import Any

from console.errors import BadParameter, ConsoleError
from console.gateway.messages.records import Record
from topics_app import schema_wire
from topics_app.decoding import json_text
from topics_app.masking import MaskedRecord
from topics_app.models import TopicSchema
from topics_app.schema_formats import FORMAT_NAMES, Codec, Mismatch, load

log = logging.getLogger(__name__)

PARTS = ("key", "value")
MAX_CACHED = 500


class SchemaNotFound(ConsoleError):
    http_status = 404


@dataclass(frozen=True)
class PartNote:
    """What schema decoding did with a key or value."""

    format: str  # avro, protobuf or json_schema
    schema: str  # the uploaded file's name
    schema_pk: int
    schema_id: int | None = None  # the Confluent schema id of the framing; None: not framed
    message_type: str = ""
    error: str | None = None  # why the bytes are shown as hex

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SchemaRecord(MaskedRecord):
    """A record whose key and/or value were read by an uploaded schema (now JSON text), or failed to be."""

    key_schema: PartNote | None = None
    value_schema: PartNote | None = None


def notes(r: Record) -> tuple[PartNote | None, PartNote | None]:
    return getattr(r, "key_schema", None), getattr(r, "value_schema", None)


@dataclass(frozen=True)
class Loaded:
    pk: int
    name: str
    format: str
    codec: Codec
    ids: tuple[int, ...]


_lock = threading.Lock()
_cache: dict[tuple[int, str], Codec] = {}


def _codec(row: TopicSchema) -> Codec:
    key = (row.pk, row.updated_at.isoformat())
    codec = _cache.get(key)
    if codec is None:
        codec = load(row.format, row.text, row.message_type, bytes(row.compiled or b""))
        with _lock:
            if len(_cache) >= MAX_CACHED:
                _cache.clear()
            _cache[key] = codec
    return codec


def _loaded(row: TopicSchema) -> Loaded:
    return Loaded(row.pk, row.name, row.format, _codec(row), tuple(int(i) for i in row.schema_ids or ()))


class PartDecoder:
    def __init__(self, schemas: list[Loaded]) -> None:
        self.newest = schemas[0]  # unframed records are read with the part's newest schema
        self.by_id = {i: s for s in schemas for i in s.ids}

    def _read(self, s: Loaded, data: bytes, schema_id: int | None) -> tuple[bytes, PartNote]:
        note = PartNote(s.format, s.name, s.pk, schema_id, s.codec.message_type)
        indexes = None
        try:
            if schema_id is not None and s.format == "protobuf":
                indexes, data = schema_wire.read_indexes(data)
            value = s.codec.decode(data, indexes)
            if indexes is not None:
                note = PartNote(s.format, s.name, s.pk, schema_id, s.codec.by_path[indexes])  # type: ignore[attr-defined]
            return json_text(value).encode("utf-8"), note
        except (Mismatch, schema_wire.WireError) as exc:
            raise Mismatch(str(exc)) from None
        except RecursionError:
            raise Mismatch("nested too deeply to show") from None
        except Exception as exc:  # noqa: BLE001 - record bytes come from anyone: a library's surprise is a reason, never a 500
            log.warning("schema %s could not read a record: %r", s.name, exc)
            raise Mismatch(f"could not be read with {s.name} ({type(exc).__name__})") from None

    def decode(self, data: bytes) -> tuple[bytes, PartNote]:
        """(JSON text, note); on a mismatch the original bytes and a note with the reason."""
        schema_id = schema_wire.framed_id(data)
        if schema_id is not None and schema_id in self.by_id:
            s = self.by_id[schema_id]
            try:
                return self._read(s, schema_wire.payload(data), schema_id)
            except Mismatch as exc:
                return data, PartNote(s.format, s.name, s.pk, schema_id, s.codec.message_type, f"schema id {schema_id}: {exc}")
        s = self.newest
        try:
            return self._read(s, data, None)
        except Mismatch as exc:
            if schema_id is not None:
                reason = (f"Confluent wire format with schema id {schema_id}, which is mapped to no schema uploaded for "
                          f"this part (mapped: {', '.join(map(str, sorted(self.by_id))) or 'none'})")
                return data, PartNote(s.format, s.name, s.pk, schema_id, "", reason)
            if data[:1] == b"\x00" and len(data) < schema_wire.HEADER:
                reason = f"starts with Confluent's magic byte but is {len(data)} bytes, shorter than its 5-byte header"
                return data, PartNote(s.format, s.name, s.pk, None, s.codec.message_type, reason)
            return data, PartNote(s.format, s.name, s.pk, None, s.codec.message_type, str(exc))


@dataclass(frozen=True)
class TopicDecoder:
    key: PartDecoder | None
    value: PartDecoder | None

    def apply(self, r: Record) -> Record:
        key, value = r.key, r.value
        key_note = value_note = None
        if self.key is not None and key is not None:
            key, key_note = self.key.decode(key)
        if self.value is not None and value is not None:
            value, value_note = self.value.decode(value)
        if key_note is None and value_note is None:
            return r
        return SchemaRecord(r.topic, r.partition, r.offset, r.timestamp_ms, r.timestamp_type, key, value, r.headers,
                            r.key_size, r.value_size, (), key_note, value_note)


def rows_of(cluster: str, topic: str) -> list[TopicSchema]:
    return list(TopicSchema.objects.filter(cluster=cluster, topic=topic))


def decoder_for(cluster: str, topic: str) -> TopicDecoder | None:
    """The decoder of this topic's records; None when no schema was uploaded for it."""
    rows = rows_of(cluster, topic)
    if not rows:
        return None
    parts = {p: [_loaded(r) for r in rows if r.part == p] for p in PARTS}
    return TopicDecoder(PartDecoder(parts["key"]) if parts["key"] else None,
                        PartDecoder(parts["value"]) if parts["value"] else None)


def as_json(row: TopicSchema) -> dict[str, Any]:
    codec = _codec(row)
    return {"id": row.pk, "part": row.part, "format": row.format, "format_name": FORMAT_NAMES.get(row.format, row.format),
            "name": row.name, "message_type": row.message_type, "message_types": list(codec.message_types),
            "schema_ids": list(row.schema_ids or ()), "uploaded_by": row.uploaded_by,
            "updated_at": row.updated_at.isoformat(), "text": row.text}


def schema_row(cluster: str, topic: str, pk: int) -> TopicSchema:
    try:
        return TopicSchema.objects.get(pk=pk, cluster=cluster, topic=topic)
    except TopicSchema.DoesNotExist:
        raise SchemaNotFound(f"Topic '{topic}' has no uploaded schema {pk}.") from None


# Produce -------------------------------------------------------------------------------------------------


def parse_input(value: Any, what: str) -> Any:
    """The JSON value to encode: a string is JSON text (a JSON string is written "\\"text\\""), anything else as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError as exc:
        raise BadParameter(f"The {what} must be JSON to be encoded with a schema: {exc}.") from None


def encode_with(cluster: str, topic: str, part: str, pk: int, value: Any, wire_id: int | None) -> bytes:
    """`value` (JSON) encoded with uploaded schema `pk` of this topic's `part`, framed with `wire_id` when given."""
    row = schema_row(cluster, topic, pk)
    if row.part != part:
        raise BadParameter(f"Schema {pk} is for the {row.part}, not the {part}.")
    codec = _codec(row)
    data, indexes = codec.encode(parse_input(value, part), part)
    if wire_id is None:
        return data
    if not 0 <= wire_id <= schema_wire.MAX_SCHEMA_ID:
        raise BadParameter(f"The {part}'s schema id must be between 0 and {schema_wire.MAX_SCHEMA_ID}.")
    return schema_wire.frame(wire_id, data, indexes)

