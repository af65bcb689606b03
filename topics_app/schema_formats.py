"""Schema formats: an uploaded Avro, Protobuf or JSON Schema text checked, and records decoded and encoded by it.

Pure logic, no Django. `check` refuses a bad schema with one sentence naming the problem; a
`Codec` turns a record's bytes into a JSON value (raising `Mismatch` with the reason when the
bytes do not fit) and a JSON value into bytes (raising BadParameter naming the field). Protobuf
text is compiled by protoc (grpcio-tools) once, at upload; records are read with the stored
FileDescriptorSet, so no compiler runs while browsing.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import importlib.resources
import io
import json
import math
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro
import jsonschema
from fastavro.validation import ValidationError as AvroValidationError
from fastavro.validation import validate as avro_validate
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message

from console.errors import BadParameter
from topics_app.decoding import reject_constant

FORMATS = ("avro", "protobuf", "json_schema")
FORMAT_NAMES = {"avro": "Avro", "protobuf": "Protobuf", "json_schema": "JSON Schema"}
PROTOC_SECONDS = 30
MAX_SCHEMA_CHARS = 1_000_000


class Mismatch(ValueError):
    """Bytes that the schema cannot read; the text is the reason shown beside their hex."""


def _clip(text: str, n: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


# JSON for display: what Avro's reader returns that JSON has no type for ---------------------------------


def plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return "base64:" + base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    return value


@dataclass
class Codec:
    format: str
    message_types: tuple[str, ...] = ()  # Protobuf: every message type the file defines (nested ones too)
    message_type: str = ""

    def decode(self, data: bytes, indexes: tuple[int, ...] | None = None) -> Any:
        raise NotImplementedError

    def encode(self, value: Any, what: str) -> tuple[bytes, tuple[int, ...] | None]:
        """(bytes, Protobuf message indexes for the wire format or None)."""
        raise NotImplementedError


# Avro ------------------------------------------------------------------------------------------------


def _avro_in(value: Any, schema: Any, named: dict[str, Any]) -> Any:
    """A JSON value as fastavro's writer takes it: bytes from "base64:..." or text, decimals from numbers or text."""
    if isinstance(schema, list):  # a union: convert for the first branch whose conversion is not a no-op
        for branch in schema:
            converted = _avro_in(value, branch, named)
            if converted is not value:
                return converted
        return value
    if isinstance(schema, str):
        schema = named.get(schema, {"type": schema})
    if not isinstance(schema, dict):
        return value
    kind = schema.get("type")
    if schema.get("logicalType") == "decimal" and isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return decimal.Decimal(str(value))
        except decimal.InvalidOperation:
            return value
    if kind in ("bytes", "fixed") and isinstance(value, str):
        if value.startswith("base64:"):
            try:
                return base64.b64decode(value[7:], validate=True)
            except binascii.Error:
                return value
        return value.encode("utf-8")
    if kind == "record" and isinstance(value, dict):
        fields = {f["name"]: f["type"] for f in schema.get("fields", [])}
        return {k: _avro_in(v, fields[k], named) if k in fields else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        return [_avro_in(v, schema.get("items"), named) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _avro_in(v, schema.get("values"), named) for k, v in value.items()}
    return value


# fastavro's pure-Python reader: it counts against Python's recursion limit, where the compiled one
# would overflow the thread's stack on a record nested 100,000 deep (a schema that refers to itself).
_avro_py_reader: Any = importlib.import_module("fastavro._read_py")


@dataclass
class AvroCodec(Codec):
    parsed: Any = None
    named: dict[str, Any] = field(default_factory=dict)
    recursive: bool = False

    def decode(self, data: bytes, indexes: tuple[int, ...] | None = None) -> Any:
        buffer = io.BytesIO(data)
        reader = _avro_py_reader.schemaless_reader if self.recursive else fastavro.schemaless_reader
        try:
            value = reader(buffer, self.parsed, None)
        except Exception as exc:  # noqa: BLE001 - any byte string may reach the reader; each failure is a reason to show
            raise Mismatch(f"not Avro of this schema ({_clip(str(exc) or type(exc).__name__, 150)})") from None
        left = len(data) - buffer.tell()
        if left:
            raise Mismatch(f"not Avro of this schema ({left} bytes left over after the record)")
        return plain(value)

    def encode(self, value: Any, what: str) -> tuple[bytes, tuple[int, ...] | None]:
        datum = _avro_in(value, self.parsed, self.named)
        try:
            avro_validate(datum, self.parsed, raise_errors=True)
        except AvroValidationError as exc:
            problems = "; ".join(f"field '{e.field}' is {json.dumps(plain(e.datum))[:60]}, which is not {_clip(json.dumps(e.schema), 80)}"
                                 if e.field else f"{json.dumps(plain(e.datum))[:60]} is not {_clip(json.dumps(e.schema), 80)}"
                                 for e in exc.errors[:3])
            raise BadParameter(f"The {what} does not fit the Avro schema: {problems}.") from None
        buffer = io.BytesIO()
        try:
            fastavro.schemaless_writer(buffer, self.parsed, datum)
        except Exception as exc:  # noqa: BLE001 - a value the validator let through but the writer refuses
            raise BadParameter(f"The {what} does not fit the Avro schema: {_clip(str(exc), 200)}.") from None
        return buffer.getvalue(), None


def _avro(text: str) -> AvroCodec:
    try:
        document = json.loads(text, parse_constant=reject_constant)
    except ValueError as exc:
        raise BadParameter(f"The Avro schema is not JSON: {_clip(str(exc), 200)}.") from None
    named: dict[str, Any] = {}
    try:
        parsed = fastavro.parse_schema(document, named_schemas=named)
    except Exception as exc:  # noqa: BLE001 - fastavro raises several types, each with a readable text
        reason = str(exc) or type(exc).__name__
        if type(exc).__name__ == "UnknownType":
            reason = f"unknown type '{reason}'"
        raise BadParameter(f"The Avro schema is not valid: {_clip(reason, 200)}.") from None
    where = _unbounded_array(parsed, named, "$", set())
    if where:
        # Each item of such an array takes no bytes, so a record of a few bytes could announce an
        # array of 2^62 of them and hold the reading thread for good.
        raise BadParameter(f"The Avro schema has an array whose items take no bytes (at {where}); records of it cannot be "
                           "read safely.")
    return AvroCodec("avro", parsed=parsed, named=named, recursive=_recursive(parsed, named, ()))


def _recursive(schema: Any, named: dict[str, Any], inside: tuple[str, ...]) -> bool:
    """Whether a named type refers to itself, so records of it can nest without a bound."""
    if isinstance(schema, list):
        return any(_recursive(b, named, inside) for b in schema)
    if isinstance(schema, str):
        if schema in inside:
            return True
        return schema in named and _recursive(named[schema], named, (*inside, schema))
    if not isinstance(schema, dict):
        return False
    name = schema.get("name")
    if isinstance(name, str) and schema.get("type") in {"record", "error"}:
        inside = (*inside, name)
    return any(_recursive(schema.get(k), named, inside) for k in ("items", "values")) or any(
        _recursive(f["type"], named, inside) for f in schema.get("fields", []))


def _zero_width(schema: Any, named: dict[str, Any], seen: set[str]) -> bool:
    """Whether a value of `schema` can take no bytes at all (null, fixed of size 0, records of only such fields)."""
    if isinstance(schema, str):
        if schema == "null":
            return True
        if schema in seen or schema not in named:
            return False
        return _zero_width(named[schema], named, seen | {schema})
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "fixed":
            return schema.get("size") == 0
        if kind == "record":
            return all(_zero_width(f["type"], named, seen | {schema.get("name", "")}) for f in schema.get("fields", []))
        return kind == "null" or (isinstance(kind, str) and kind not in {"array", "map", "enum", "record"} and
                                  _zero_width(kind, named, seen))
    return False  # a union reads its branch index first


def _unbounded_array(schema: Any, named: dict[str, Any], path: str, seen: set[str]) -> str | None:
    if isinstance(schema, list):
        return next((w for b in schema if (w := _unbounded_array(b, named, path, seen))), None)
    if isinstance(schema, str):
        if schema in seen or schema not in named:
            return None
        return _unbounded_array(named[schema], named, path, seen | {schema})
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind == "array":
        if _zero_width(schema.get("items"), named, set()):
            return path
        return _unbounded_array(schema.get("items"), named, path + "[*]", seen)
    if kind == "map":
        return _unbounded_array(schema.get("values"), named, path + ".*", seen)
    if kind == "record":
        inner = seen | {schema.get("name", "")}
        return next((w for f in schema.get("fields", []) if (w := _unbounded_array(f["type"], named, f"{path}.{f['name']}", inner))),
                    None)
    return None


# JSON Schema -----------------------------------------------------------------------------------------


def _where(path: Any) -> str:
    steps = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return "$" + steps


@dataclass
class JsonSchemaCodec(Codec):
    validator: Any = None

    def _problem(self, value: Any) -> str | None:
        error = jsonschema.exceptions.best_match(self.validator.iter_errors(value))
        if error is None:
            return None
        return f"at {_where(error.absolute_path)}: {_clip(error.message, 160)}"

    def decode(self, data: bytes, indexes: tuple[int, ...] | None = None) -> Any:
        try:
            value = json.loads(data.decode("utf-8"), parse_constant=reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise Mismatch(f"not JSON ({_clip(str(exc), 120)})") from None
        problem = self._problem(value)
        if problem:
            raise Mismatch(f"does not match the JSON Schema {problem}")
        return value

    def encode(self, value: Any, what: str) -> tuple[bytes, tuple[int, ...] | None]:
        problem = self._problem(value)
        if problem:
            raise BadParameter(f"The {what} does not match the JSON Schema {problem}.")
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), None


def _json_schema(text: str) -> JsonSchemaCodec:
    try:
        document = json.loads(text, parse_constant=reject_constant)
    except ValueError as exc:
        raise BadParameter(f"The JSON Schema is not JSON: {_clip(str(exc), 200)}.") from None
    if not isinstance(document, (dict, bool)):
        raise BadParameter("The JSON Schema must be a JSON object (or true or false).")
    cls = jsonschema.validators.validator_for(document)
    try:
        cls.check_schema(document)
    except jsonschema.exceptions.SchemaError as exc:
        raise BadParameter(f"The JSON Schema is not valid at {_where(exc.absolute_path)}: {_clip(exc.message, 200)}.") from None
    return JsonSchemaCodec("json_schema", validator=cls(document))


# Protobuf --------------------------------------------------------------------------------------------


def compile_proto(text: str, name: str) -> bytes:
    """The .proto text compiled by protoc into a FileDescriptorSet (with its imports: Google's well-known types)."""
    stem = Path(name).name if name.endswith(".proto") else "schema.proto"
    if not all(c.isalnum() or c in "._-" for c in stem):
        stem = "schema.proto"
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / stem).write_text(text, encoding="utf-8")
        out = Path(tmp) / "set.pb"
        try:
            done = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}", f"-I{include}",
                                   f"--descriptor_set_out={out}", "--include_imports", stem],
                                  capture_output=True, text=True, timeout=PROTOC_SECONDS, cwd=tmp, check=False)
        except subprocess.TimeoutExpired:
            raise BadParameter(f"The Protobuf file took protoc more than {PROTOC_SECONDS} s to compile.") from None
        if done.returncode != 0 or not out.exists():
            lines = [line.replace(tmp + "/", "") for line in done.stderr.splitlines() if line.strip()]
            raise BadParameter(f"The Protobuf file does not compile: {_clip('; '.join(lines[:3]) or 'protoc failed', 300)}.")
        return out.read_bytes()


def _message_names(proto: descriptor_pb2.FileDescriptorProto) -> list[tuple[str, tuple[int, ...]]]:
    """(full name, message-index path) of every message type the file defines, nested ones after their parent."""
    prefix = f"{proto.package}." if proto.package else ""
    out: list[tuple[str, tuple[int, ...]]] = []

    def walk(messages: Any, parent: str, path: tuple[int, ...]) -> None:
        for i, m in enumerate(messages):
            full = f"{parent}{m.name}"
            out.append((full, (*path, i)))
            walk(m.nested_type, full + ".", (*path, i))

    walk(proto.message_type, prefix, ())
    return out


@dataclass
class ProtobufCodec(Codec):
    pool: Any = None
    by_path: dict[tuple[int, ...], str] = field(default_factory=dict)
    classes: dict[str, Any] = field(default_factory=dict)

    def _class(self, name: str) -> Any:
        if name not in self.classes:
            descriptor: Descriptor = self.pool.FindMessageTypeByName(name)
            self.classes[name] = message_factory.GetMessageClass(descriptor)
        return self.classes[name]

    def decode(self, data: bytes, indexes: tuple[int, ...] | None = None) -> Any:
        name = self.message_type if indexes is None else self.by_path.get(indexes)
        if name is None:
            raise Mismatch(f"the framing names message index {list(indexes or ())}, which the schema file does not define")
        try:
            message: Message = self._class(name).FromString(data)
            return json_format.MessageToDict(message, preserving_proto_field_name=True)
        except (DecodeError, RuntimeError, ValueError, RecursionError) as exc:
            raise Mismatch(f"not a Protobuf {name} ({_clip(str(exc) or type(exc).__name__, 120)})") from None

    def encode(self, value: Any, what: str) -> tuple[bytes, tuple[int, ...] | None]:
        message = self._class(self.message_type)()
        try:
            json_format.ParseDict(value, message)
        except json_format.ParseError as exc:
            raise BadParameter(f"The {what} does not fit the Protobuf message {self.message_type}: {_clip(str(exc), 240)}") from None
        path = next(p for p, n in self.by_path.items() if n == self.message_type)
        return message.SerializeToString(), path


def load_protobuf(compiled: bytes, message_type: str) -> ProtobufCodec:
    files = descriptor_pb2.FileDescriptorSet.FromString(compiled).file
    pool = descriptor_pool.DescriptorPool()
    for proto in files:  # (imports first: protoc writes them in dependency order)
        pool.Add(proto)
    names = _message_names(files[-1])
    return ProtobufCodec("protobuf", tuple(n for n, _ in names), message_type, pool=pool,
                         by_path={path: n for n, path in names})


def _protobuf(text: str, name: str, message_type: str) -> tuple[ProtobufCodec, bytes]:
    compiled = compile_proto(text, name)
    codec = load_protobuf(compiled, "")
    if not codec.message_types:
        raise BadParameter("The Protobuf file defines no message type.")
    chosen = message_type.strip().lstrip(".") or codec.message_types[0]
    if chosen not in codec.message_types:
        shown = ", ".join(codec.message_types[:20])
        raise BadParameter(f"The Protobuf file defines no message type '{chosen[:100]}'; it defines {shown}.")
    codec.message_type = chosen
    return codec, compiled


# Entry points ----------------------------------------------------------------------------------------


def check(fmt: str, text: str, name: str = "schema", message_type: str = "") -> tuple[Codec, bytes]:
    """(codec, compiled form to store: a FileDescriptorSet for Protobuf, else b""); a bad schema is a BadParameter."""
    if fmt not in FORMATS:
        raise BadParameter(f"'format' must be one of {', '.join(FORMATS)}, not '{str(fmt)[:30]}'.")
    if not isinstance(text, str) or not text.strip():
        raise BadParameter("The schema file is empty.")
    if len(text) > MAX_SCHEMA_CHARS:
        raise BadParameter(f"The schema file is longer than {MAX_SCHEMA_CHARS:,} characters.")
    for given in (text, name, message_type):
        try:
            given.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate escape from JSON: no file holds it, no database stores it
            raise BadParameter("The schema, its name and message type must be valid Unicode text.") from None
        if "\x00" in given:
            raise BadParameter("The schema, its name and message type cannot hold NUL characters.")
    if fmt == "avro":
        return _avro(text), b""
    if fmt == "json_schema":
        return _json_schema(text), b""
    return _protobuf(text, name, message_type)


def load(fmt: str, text: str, message_type: str, compiled: bytes) -> Codec:
    """A stored schema's codec (checked at upload; Protobuf from its stored FileDescriptorSet)."""
    if fmt == "protobuf":
        return load_protobuf(bytes(compiled), message_type)
    return check(fmt, text)[0]
