"""Message filters: substring, regex and JSON path criteria on a record's key, value or headers.

`build_matcher` tests a whole record; `build_raw_matcher` is the cheap pre-filter a scan runs on
the key and value bytes before it builds a record.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from console import patterns
from console.errors import BadParameter
from console.gateway.messages.records import Record
from topics_app.decoding import parse_json, reject_constant, utf8
from topics_app.json_path import json_path_values, parse_json_path

TARGETS = ("key", "value", "headers", "any")
MAX_PATTERN_CHARS = 1000
REGEX_SECONDS_PER_MESSAGE = 0.5  # a filter regex that needs longer on one message stops the scan with a 400


@dataclass(frozen=True)
class FilterSpec:
    """Which messages to keep; every criterion given must hold (empty strings count as not given)."""

    substring: str | None = None
    regex: str | None = None
    json_path: str | None = None  # e.g. $.order.items[0].sku; the target must be JSON with this path
    json_value: str | None = None  # the path must equal this JSON scalar (42, true, null, "x"; bare words are strings)
    target: str = "value"  # key, value, headers or any
    case_sensitive: bool = False



def _json_scalar_equal(value: Any, expected: Any) -> bool:
    """Equality of JSON scalars: 1 == 1.0, but true is not 1 and "1" is not 1."""
    if expected is None or isinstance(expected, bool):
        return value is expected
    if isinstance(expected, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == expected
    return isinstance(value, str) and value == expected


def _expected_value(raw: str) -> Any:
    try:
        value = json.loads(raw, parse_constant=reject_constant)
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
        text = utf8(d)
        if text is None:
            return False
        ok, document, _ = parse_json(text)
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
