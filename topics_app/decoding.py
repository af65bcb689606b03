"""Payload decoding for display: a key, value or header as JSON, text, MessagePack, hex or base64.

Nothing here is ever marked safe for HTML: a payload holding markup is returned as plain text and
the template escapes it.
"""

from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import msgpack

from console.errors import BadParameter

DECODINGS = ("auto", "text", "json", "hex", "base64", "msgpack")

# C0 and C1 control characters other than tab, newline and carriage return: not "printable text".
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Decoded:
    format: str  # what was used: null, text, json, msgpack, hex or base64
    text: str  # what to display; JSON and MessagePack are pretty-printed JSON with a 2-space indent
    json: Any = None  # the parsed value for json and msgpack, else None
    error: str | None = None  # why the requested decoding was not used, e.g. "not valid UTF-8; shown as hex"


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def parse_json(text: str) -> tuple[bool, Any, str]:
    """(ok, value, why not). Strict JSON: NaN and Infinity are refused."""
    try:
        return True, json.loads(text, parse_constant=reject_constant), ""
    except ValueError as exc:
        return False, None, str(exc)
    except RecursionError:
        return False, None, "nested too deeply"


def json_text(value: Any, *, pretty: bool = False) -> str:
    """JSON text that is always encodable as UTF-8 (a JSON string may hold a lone surrogate escape)."""
    kwargs: dict[str, Any] = {"indent": 2} if pretty else {"separators": (",", ":")}
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(value, **kwargs)
    return text


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _msgpack_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return utf8(key) or "base64:" + b64(key)
    plain = _jsonable(key)
    return plain if isinstance(plain, str) else json_text(plain)


def _jsonable(value: Any) -> Any:
    """A MessagePack value as JSON: binary as "base64:...", extension types and timestamps spelled out."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        return "base64:" + b64(value)
    if isinstance(value, msgpack.ExtType):  # a namedtuple: before the tuple case
        return {"$ext": value.code, "data": b64(value.data)}
    if isinstance(value, msgpack.Timestamp):
        try:
            return value.to_datetime().isoformat()
        except (OverflowError, ValueError):
            return {"$timestamp": [value.seconds, value.nanoseconds]}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {_msgpack_key(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def _parse_msgpack(data: bytes) -> tuple[bool, Any]:
    try:
        value = msgpack.unpackb(data, raw=False, strict_map_key=False)
        return True, _jsonable(value)
    except (ValueError, TypeError, OverflowError, RecursionError, msgpack.UnpackException):
        return False, None


def _hex(data: bytes, error: str | None = None) -> Decoded:
    return Decoded(format="hex", text=data.hex(" "), error=error)


def _structured(fmt: str, value: Any) -> Decoded | None:
    try:
        return Decoded(format=fmt, text=json_text(value, pretty=True), json=value)
    except RecursionError:
        return None


def decode(data: bytes | None, as_: str) -> Decoded:
    """Render a key, value or header for display; never fails, whatever the bytes."""
    if as_ not in DECODINGS:
        raise BadParameter(f"'decode' must be one of {', '.join(DECODINGS)}, not '{as_[:50]}'.")
    if data is None:
        return Decoded(format="null", text="")
    if as_ == "hex":
        return _hex(data)
    if as_ == "base64":
        return Decoded(format="base64", text=b64(data))
    if as_ == "msgpack":
        ok, value = _parse_msgpack(data)
        shown = _structured("msgpack", value) if ok else None
        return shown or _hex(data, "not valid MessagePack; shown as hex")
    text = utf8(data)
    if as_ == "text":
        return Decoded(format="text", text=text) if text is not None else _hex(data, "not valid UTF-8; shown as hex")
    if as_ == "json":
        if text is None:
            return _hex(data, "not valid UTF-8, so not JSON; shown as hex")
        ok, value, why = parse_json(text)
        shown = _structured("json", value) if ok else None
        return shown or Decoded(format="text", text=text, error=f"not valid JSON ({why or 'nested too deeply'}); shown as text")
    # auto
    if text is not None:
        ok, value, _ = parse_json(text)
        shown = _structured("json", value) if ok else None
        if shown is not None:
            return shown
        if not CONTROL_CHARS.search(text):
            return Decoded(format="text", text=text)
    ok, value = _parse_msgpack(data)
    if ok and isinstance(value, (dict, list)):
        shown = _structured("msgpack", value)
        if shown is not None:
            return shown
    return _hex(data)
