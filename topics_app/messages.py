"""Message browsing without Kafka: decoding payloads for display, filters and exports.

Nothing here is ever marked safe for HTML: a payload holding markup is returned as plain text and
the template escapes it.
"""

from __future__ import annotations

import base64
import importlib
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgpack

from console import patterns
from console.errors import BadParameter
from console.gateway.messages import Record
from console.inert import csv_writer

DECODINGS = ("auto", "text", "json", "hex", "base64", "msgpack")
TARGETS = ("key", "value", "headers", "any")
MAX_PATTERN_CHARS = 1000
REGEX_SECONDS_PER_MESSAGE = 0.5  # a filter regex that needs longer on one message stops the scan with a 400

# C0 and C1 control characters other than tab, newline and carriage return: not "printable text".
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Decoding ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decoded:
    format: str  # what was used: null, text, json, msgpack, hex or base64
    text: str  # what to display; JSON and MessagePack are pretty-printed JSON with a 2-space indent
    json: Any = None  # the parsed value for json and msgpack, else None
    error: str | None = None  # why the requested decoding was not used, e.g. "not valid UTF-8; shown as hex"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _parse_json(text: str) -> tuple[bool, Any, str]:
    """(ok, value, why not). Strict JSON: NaN and Infinity are refused."""
    try:
        return True, json.loads(text, parse_constant=_reject_constant), ""
    except ValueError as exc:
        return False, None, str(exc)
    except RecursionError:
        return False, None, "nested too deeply"


def _dumps(value: Any, *, pretty: bool = False) -> str:
    """JSON text that is always encodable as UTF-8 (a JSON string may hold a lone surrogate escape)."""
    kwargs: dict[str, Any] = {"indent": 2} if pretty else {"separators": (",", ":")}
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(value, **kwargs)
    return text


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _msgpack_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return _utf8(key) or "base64:" + _b64(key)
    plain = _jsonable(key)
    return plain if isinstance(plain, str) else _dumps(plain)


def _jsonable(value: Any) -> Any:
    """A MessagePack value as JSON: binary as "base64:...", extension types and timestamps spelled out."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        return "base64:" + _b64(value)
    if isinstance(value, msgpack.ExtType):  # a namedtuple: before the tuple case
        return {"$ext": value.code, "data": _b64(value.data)}
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
        return Decoded(format=fmt, text=_dumps(value, pretty=True), json=value)
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
        return Decoded(format="base64", text=_b64(data))
    if as_ == "msgpack":
        ok, value = _parse_msgpack(data)
        shown = _structured("msgpack", value) if ok else None
        return shown or _hex(data, "not valid MessagePack; shown as hex")
    text = _utf8(data)
    if as_ == "text":
        return Decoded(format="text", text=text) if text is not None else _hex(data, "not valid UTF-8; shown as hex")
    if as_ == "json":
        if text is None:
            return _hex(data, "not valid UTF-8, so not JSON; shown as hex")
        ok, value, why = _parse_json(text)
        shown = _structured("json", value) if ok else None
        return shown or Decoded(format="text", text=text, error=f"not valid JSON ({why or 'nested too deeply'}); shown as text")
    # auto
    if text is not None:
        ok, value, _ = _parse_json(text)
        shown = _structured("json", value) if ok else None
        if shown is not None:
            return shown
        if not _CONTROL.search(text):
            return Decoded(format="text", text=text)
    ok, value = _parse_msgpack(data)
    if ok and isinstance(value, (dict, list)):
        shown = _structured("msgpack", value)
        if shown is not None:
            return shown
    return _hex(data)


# Filters -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilterSpec:
    """Which messages to keep; every criterion given must hold (empty strings count as not given)."""

    substring: str | None = None
    regex: str | None = None
    json_path: str | None = None  # e.g. $.order.items[0].sku; the target must be JSON with this path
    json_value: str | None = None  # the path must equal this JSON scalar (42, true, null, "x"; bare words are strings)
    target: str = "value"  # key, value, headers or any
    case_sensitive: bool = False


Step = tuple[str, Any]  # ("key", name) | ("index", n) | ("any", None)

_NAME = re.compile(r"[^.\[\]\s'\"]+")
_INDEX = re.compile(r"-?\d+")


def parse_json_path(path: str) -> tuple[Step, ...]:
    """Parse $.a.b[0]['c d'][*]; the leading $ is optional. BadParameter naming 'json_path' when invalid."""

    def bad(reason: str, at: int) -> BadParameter:
        return BadParameter(
            f"'json_path' is not a valid JSON path: {reason} at character {at + 1} of '{path[:100]}'. "
            "Write it like $.order.items[0].sku or $['a key'][*]."
        )

    steps: list[Step] = []
    i = 0
    if path.startswith("$"):
        i = 1
    elif path and path[0] not in ".[":
        m = _NAME.match(path)
        if m is None:
            raise bad("expected a name", 0)
        steps.append(("key", m.group()))
        i = m.end()
    while i < len(path):
        c = path[i]
        if c == ".":
            if path.startswith("*", i + 1):
                steps.append(("any", None))
                i += 2
                continue
            m = _NAME.match(path, i + 1)
            if m is None:
                raise bad("expected a name after '.'", i + 1)
            steps.append(("key", m.group()))
            i = m.end()
        elif c == "[":
            j = i + 1
            if path.startswith("*]", j):
                steps.append(("any", None))
                i = j + 2
            elif j < len(path) and path[j] in "'\"":
                quote, k, name = path[j], j + 1, []
                while k < len(path) and path[k] != quote:
                    if path[k] == "\\" and k + 1 < len(path):
                        k += 1
                    name.append(path[k])
                    k += 1
                if k >= len(path):
                    raise bad("unterminated quoted name", j)
                if not path.startswith("]", k + 1):
                    raise bad("expected ']'", k + 1)
                steps.append(("key", "".join(name)))
                i = k + 2
            else:
                m = _INDEX.match(path, j)
                if m is None:
                    raise bad("expected a number, '*' or a quoted name after '['", j)
                if not path.startswith("]", m.end()):
                    raise bad("expected ']'", m.end())
                steps.append(("index", int(m.group())))
                i = m.end() + 1
        else:
            raise bad(f"unexpected '{c}'", i)
    return tuple(steps)


def json_path_values(document: Any, steps: tuple[Step, ...]) -> list[Any]:
    """Every value the path reaches in a parsed JSON document (several with wildcards, none if absent)."""
    nodes = [document]
    for kind, arg in steps:
        found: list[Any] = []
        for node in nodes:
            if kind == "key":
                if isinstance(node, dict) and arg in node:
                    found.append(node[arg])
            elif kind == "index":
                if isinstance(node, list) and -len(node) <= arg < len(node):
                    found.append(node[arg])
            elif isinstance(node, dict):
                found.extend(node.values())
            elif isinstance(node, list):
                found.extend(node)
        if not found:
            return []
        nodes = found
    return nodes


def _json_scalar_equal(value: Any, expected: Any) -> bool:
    """Equality of JSON scalars: 1 == 1.0, but true is not 1 and "1" is not 1."""
    if expected is None or isinstance(expected, bool):
        return value is expected
    if isinstance(expected, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == expected
    return isinstance(value, str) and value == expected


def _expected_value(raw: str) -> Any:
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError:
        return raw  # a bare word is meant as a string
    if isinstance(value, (dict, list)):
        raise BadParameter("'json_value' must be a single JSON value such as 42, true, null or \"shipped\", not an object or list.")
    return value


ByteTest = Callable[[bytes], bool]

# The regular-expression parser of the standard library, to find the literals every match contains.
_re_parser: Any = importlib.import_module("re._parser")
_re_constants: Any = importlib.import_module("re._constants")


def required_literals(regex: re.Pattern[str]) -> list[str]:
    """Literal strings that every match of `regex` contains (longest first; empty when unsure).

    A cheap `in` test on them rejects most non-matching payloads before the regex runs.
    """
    c = _re_constants
    repeats = {c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT}
    runs: list[str] = []

    def walk(items: Any) -> bool:
        run: list[str] = []
        for op, arg in items:
            if op is c.LITERAL:
                run.append(chr(arg))
                continue
            if op is c.AT:  # anchors consume nothing: the literals around them stay adjacent
                continue
            runs.append("".join(run))
            run = []
            if op is c.SUBPATTERN:
                _, add_flags, del_flags, sub = arg
                if add_flags or del_flags:
                    return False  # (?i:...) and the like: give up rather than reason about flags
                if not walk(sub):
                    return False
            elif op in repeats:
                minimum, _, sub = arg
                if minimum >= 1 and not walk(sub):
                    return False
            elif op is c.ATOMIC_GROUP and not walk(arg):
                return False
            # Alternations, classes, lookarounds and back-references contribute nothing required.
        runs.append("".join(run))
        return True

    try:
        parsed = _re_parser.parse(regex.pattern, regex.flags)
    except Exception:  # noqa: BLE001 - a parser change in a future Python only costs the shortcut
        return []
    if not walk(parsed):
        return []
    return sorted(dict.fromkeys(r for r in runs if len(r) >= 2), key=len, reverse=True)[:3]


def _regex_test(regex: re.Pattern[str], search: Callable[[str], bool]) -> ByteTest:
    """`regex` gives the literals for the cheap pre-test; `search` runs the pattern with a time limit."""
    literals = required_literals(regex)
    if regex.flags & re.IGNORECASE:
        # For ASCII payloads and ASCII literals, case-insensitive means ASCII case folding.
        folded = [lit.lower().encode("ascii") for lit in literals if lit.isascii()]

        def insensitive(d: bytes) -> bool:
            if folded and d.isascii():
                lower = d.lower()
                for lit in folded:
                    if lit not in lower:
                        return False
            return search(_text(d))

        return insensitive
    exact = []
    for lit in literals:
        try:
            exact.append(lit.encode("utf-8"))
        except UnicodeEncodeError:
            continue  # a lone surrogate escape in the pattern

    def sensitive(d: bytes) -> bool:
        for lit in exact:
            if lit not in d:
                return False
        return search(_text(d))

    return sensitive


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _byte_tests(spec: FilterSpec) -> list[ByteTest]:
    """One test per substring/regex criterion, on one payload's bytes."""
    tests: list[ByteTest] = []
    if spec.substring:
        if len(spec.substring) > MAX_PATTERN_CHARS:
            raise BadParameter(f"'substring' must be at most {MAX_PATTERN_CHARS} characters long.")
        needle = spec.substring
        if spec.case_sensitive:
            encoded = needle.encode("utf-8")
            tests.append(lambda d: encoded in d)
        elif needle.isascii():
            # ASCII case folding on the bytes: no decoding on the fast path.
            folded = needle.lower().encode("ascii")
            tests.append(lambda d: folded in d.lower())
        else:
            pattern = re.compile(re.escape(needle), re.IGNORECASE)
            tests.append(lambda d: pattern.search(_text(d)) is not None)
    if spec.regex:
        if len(spec.regex) > MAX_PATTERN_CHARS:
            raise BadParameter(f"'regex' must be at most {MAX_PATTERN_CHARS} characters long.")
        regex, runner = patterns.compile_checked(spec.regex, not spec.case_sensitive, "regex")
        tests.append(_regex_test(regex, patterns.limited_search(runner, "regex", REGEX_SECONDS_PER_MESSAGE)))
    return tests


def _json_path_test(spec: FilterSpec) -> tuple[ByteTest, ByteTest] | None:
    """(cheap necessary test, full test) of the JSON path criterion on one payload's bytes."""
    if not spec.json_path:
        if spec.json_value:
            raise BadParameter("'json_value' needs a 'json_path' to compare it with.")
        return None
    steps = parse_json_path(spec.json_path)
    has_expected = spec.json_value is not None and spec.json_value != ""
    expected = _expected_value(spec.json_value) if has_expected and spec.json_value is not None else None
    # Without any backslash in the document every key on the path must appear literally, quoted.
    literals = [b'"' + str(arg).encode("utf-8") + b'"' for kind, arg in steps if kind == "key"]

    def cheap(d: bytes) -> bool:
        return b"\\" in d or all(lit in d for lit in literals)

    def full(d: bytes) -> bool:
        if not cheap(d):
            return False
        text = _utf8(d)
        if text is None:
            return False
        ok, document, _ = _parse_json(text)
        if not ok:
            return False
        values = json_path_values(document, steps)
        if not has_expected:
            return bool(values)
        return any(_json_scalar_equal(v, expected) for v in values)

    return cheap, full


def _check_target(spec: FilterSpec) -> None:
    if spec.target not in TARGETS:
        raise BadParameter(f"'target' must be one of {', '.join(TARGETS)}, not '{spec.target[:50]}'.")


def _fields(target: str, header_names: bool) -> Callable[[Record], list[bytes]]:
    """The payloads a criterion looks at; header names count for text searches, not for JSON paths."""

    def key(r: Record) -> list[bytes]:
        return [] if r.key is None else [r.key]

    def value(r: Record) -> list[bytes]:
        return [] if r.value is None else [r.value]

    def headers(r: Record) -> list[bytes]:
        out = []
        for name, v in r.headers:
            if header_names:
                out.append(name.encode("utf-8", "surrogateescape"))
            if v is not None:
                out.append(v)
        return out

    def any_(r: Record) -> list[bytes]:
        return key(r) + value(r) + headers(r)

    return {"key": key, "value": value, "headers": headers, "any": any_}[target]


def build_matcher(spec: FilterSpec) -> Callable[[Record], bool] | None:
    """The full test of a record, or None when the spec asks for nothing. Raises BadParameter."""
    _check_target(spec)
    text_tests = _byte_tests(spec)
    path = _json_path_test(spec)
    if not text_tests and path is None:
        return None
    text_fields = _fields(spec.target, header_names=True)
    json_fields = _fields(spec.target, header_names=False)
    path_test = None if path is None else path[1]

    def matches(record: Record) -> bool:
        if text_tests:
            payloads = text_fields(record)
            if not all(any(test(p) for p in payloads) for test in text_tests):
                return False
        return path_test is None or any(path_test(p) for p in json_fields(record))

    return matches


def build_raw_matcher(spec: FilterSpec) -> Callable[[bytes | None, bytes | None], bool] | None:
    """A cheap pre-filter on (key, value) bytes that never rejects what build_matcher accepts.

    None when nothing can be decided from key and value alone (headers are a target, or no criteria).
    """
    _check_target(spec)
    if spec.target not in ("key", "value"):
        return None
    tests = _byte_tests(spec)
    path = _json_path_test(spec)
    if path is not None:
        tests.append(path[0])
    if not tests:
        return None
    on_key = spec.target == "key"
    if len(tests) == 1:
        only = tests[0]

        def one(key: bytes | None, value: bytes | None) -> bool:
            data = key if on_key else value
            return data is not None and only(data)

        return one

    def every(key: bytes | None, value: bytes | None) -> bool:
        data = key if on_key else value
        return data is not None and all(test(data) for test in tests)

    return every


# Export ------------------------------------------------------------------------------------------

MARK = "****"  # what a masked key, value, header or JSON field shows instead of its content
CSV_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "key_format", "value", "value_format",
               "headers")


def _iso(ms: int) -> str | None:
    if ms < 0:
        return None
    try:
        return (_EPOCH + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except OverflowError:
        return None


def export_field(data: bytes | None, decode_as: str) -> tuple[Any, str]:
    """(value, format) of a key or value in an export: parsed JSON, text, or base64 for binary."""
    if data is None:
        return None, "null"
    shown = decode(data, decode_as)
    if shown.format in ("json", "msgpack"):
        return shown.json, shown.format
    if shown.format == "text":
        return shown.text, "text"
    if decode_as == "hex" and shown.error is None:
        return data.hex(), "hex"
    return _b64(data), "base64"


def _export_headers(headers: tuple[tuple[str, bytes | None], ...], masked: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, value in headers:
        text = None if value is None else _utf8(value)
        if "header:" + name in masked:
            out.append({"name": name, "value": MARK, "format": "masked"})
        elif value is None:
            out.append({"name": name, "value": None, "format": "null"})
        elif text is not None and not _CONTROL.search(text):
            out.append({"name": name, "value": text, "format": "text"})
        else:
            out.append({"name": name, "value": _b64(value), "format": "base64"})
    return out


def _row(r: Record, decode_as: str) -> dict[str, Any]:
    masked: tuple[str, ...] = getattr(r, "masked", ())  # parts topics_app.masking replaced: the mark is all there is
    key, key_format = (MARK, "masked") if "key" in masked else export_field(r.key, decode_as)
    value, value_format = (MARK, "masked") if "value" in masked else export_field(r.value, decode_as)
    return {
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
        yield _dumps(_row(r, decode_as)) + "\n"


def _cell(value: Any) -> str:
    """A CSV cell: text as it is, parsed JSON as compact JSON (the writer neutralises formulas)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else _dumps(value)


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
                         _cell(row["value"]), row["value_format"], _dumps(row["headers"])])
        yield flush()

