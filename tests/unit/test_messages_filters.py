"""topics_app.message_filters and json_path: substring, regex and JSON path on key, value or headers, plus the raw pre-filter."""

from __future__ import annotations

import re

import pytest

from console.errors import BadParameter
from console.gateway.messages.records import Record
from topics_app.json_path import json_path_values, parse_json_path
from topics_app.message_filters import FilterSpec, build_matcher, build_raw_matcher, required_literals


def record(value: bytes | None = b"", key: bytes | None = None, headers: tuple[tuple[str, bytes | None], ...] = ()) -> Record:
    return Record(topic="orders", partition=0, offset=1, timestamp_ms=1000, timestamp_type="CreateTime", key=key, value=value,
                  headers=headers, key_size=len(key or b""), value_size=len(value or b""))


def matches(spec: FilterSpec, rec: Record) -> bool:
    matcher = build_matcher(spec)
    assert matcher is not None
    return matcher(rec)


ORDER = b'{"order": {"id": 7, "status": "shipped", "paid": true, "items": [{"sku": "AB-1", "qty": 2}, {"sku": "CD-2", "qty": 1.5}]}}'

# validation --------------------------------------------------------------------------------------


def test_invalid_regex_is_a_bad_parameter_naming_it():
    with pytest.raises(BadParameter) as raised:
        build_matcher(FilterSpec(regex="status=(OK"))
    assert raised.value.message.startswith("'regex' is not a valid regular expression: ")
    assert "missing )" in raised.value.message


def test_catastrophic_regex_stops_with_a_bad_parameter_instead_of_hanging():
    import time

    matcher = build_matcher(FilterSpec(regex="(a|aa)+$"))
    assert matcher is not None
    assert matcher(record(b"aaaa"))  # fine on a short payload
    started = time.monotonic()
    with pytest.raises(BadParameter) as raised:
        matcher(record(b"a" * 60 + b"!"))  # exponential backtracking: Python's re would not return
    assert time.monotonic() - started < 5
    assert "took longer than 0.5 s" in raised.value.message and "'regex'" in raised.value.message


@pytest.mark.parametrize("path", ["$.", "$..a", "$[", "$[x]", "$['a'", "$['a'x]", "$a", "$.a]", "$[1", "$.a b"])
def test_invalid_json_path_is_a_bad_parameter_naming_it(path):
    with pytest.raises(BadParameter) as raised:
        build_matcher(FilterSpec(json_path=path))
    assert raised.value.message.startswith("'json_path' is not a valid JSON path")
    assert path in raised.value.message


def test_unknown_target_is_a_bad_parameter_naming_it():
    with pytest.raises(BadParameter) as raised:
        build_matcher(FilterSpec(substring="x", target="body"))
    assert "'target'" in raised.value.message
    assert "body" in raised.value.message


def test_json_value_without_a_path_is_a_bad_parameter():
    with pytest.raises(BadParameter) as raised:
        build_matcher(FilterSpec(json_value="7"))
    assert "'json_path'" in raised.value.message


@pytest.mark.parametrize("expected", ['{"a": 1}', "[1, 2]"])
def test_json_value_that_is_an_object_or_list_is_a_bad_parameter(expected):
    with pytest.raises(BadParameter) as raised:
        build_matcher(FilterSpec(json_path="$.a", json_value=expected))
    assert "'json_value'" in raised.value.message


def test_overlong_regex_is_a_bad_parameter():
    with pytest.raises(BadParameter) as raised:
        build_matcher(FilterSpec(regex="a" * 1001))
    assert "'regex'" in raised.value.message


def test_a_spec_without_criteria_gives_no_matcher():
    assert build_matcher(FilterSpec()) is None
    assert build_matcher(FilterSpec(substring="", regex="", json_path="")) is None
    assert build_raw_matcher(FilterSpec()) is None


# substring and regex -----------------------------------------------------------------------------


def test_substring_ignores_case_by_default():
    assert matches(FilterSpec(substring="SHIPPED"), record(ORDER))


def test_case_sensitive_substring_respects_case():
    assert not matches(FilterSpec(substring="SHIPPED", case_sensitive=True), record(ORDER))
    assert matches(FilterSpec(substring="shipped", case_sensitive=True), record(ORDER))


def test_non_ascii_substring_ignores_case():
    assert matches(FilterSpec(substring="ZÜRICH"), record("city: zürich".encode()))


def test_substring_that_is_absent_does_not_match():
    assert not matches(FilterSpec(substring="cancelled"), record(ORDER))


def test_regex_searches_anywhere_in_the_value():
    assert matches(FilterSpec(regex=r'"qty":\s*2\b'), record(ORDER))
    assert not matches(FilterSpec(regex=r'"qty":\s*3\b'), record(ORDER))


def test_regex_ignores_case_unless_asked_not_to():
    assert matches(FilterSpec(regex="STATUS"), record(ORDER))
    assert not matches(FilterSpec(regex="STATUS", case_sensitive=True), record(ORDER))


def test_regex_sees_characters_not_bytes():
    assert matches(FilterSpec(regex=r"^caf.$", case_sensitive=True), record("café".encode()))


def test_missing_value_never_matches():
    assert not matches(FilterSpec(regex=".*"), record(None))


def test_key_target_looks_only_at_the_key():
    rec = record(b"value-text", key=b"key-text")
    assert matches(FilterSpec(substring="key-", target="key"), rec)
    assert not matches(FilterSpec(substring="value-", target="key"), rec)


def test_headers_target_matches_header_names_and_values():
    rec = record(b"body", headers=(("trace-id", b"abc123"), ("empty", None)))
    assert matches(FilterSpec(substring="abc123", target="headers"), rec)
    assert matches(FilterSpec(substring="TRACE", target="headers"), rec)
    assert not matches(FilterSpec(substring="body", target="headers"), rec)


def test_any_target_looks_at_key_value_and_headers():
    rec = record(b"in-value", key=b"in-key", headers=(("h", b"in-header"),))
    for needle in ("in-value", "in-key", "in-header"):
        assert matches(FilterSpec(substring=needle, target="any"), rec)
    assert not matches(FilterSpec(substring="nowhere", target="any"), rec)


def test_every_criterion_must_hold():
    assert matches(FilterSpec(substring="shipped", regex="AB-\\d"), record(ORDER))
    assert not matches(FilterSpec(substring="shipped", regex="ZZ-\\d"), record(ORDER))


# JSON path ---------------------------------------------------------------------------------------


def test_json_path_parses_dots_brackets_quotes_and_wildcards():
    assert parse_json_path("$.order.items[0].sku") == (("key", "order"), ("key", "items"), ("index", 0), ("key", "sku"))
    assert parse_json_path("order['a key'][*].x[-1]") == (("key", "order"), ("key", "a key"), ("any", None), ("key", "x"),
                                                         ("index", -1))
    assert parse_json_path('$["it\'s"].*') == (("key", "it's"), ("any", None))
    assert parse_json_path("$") == ()


def test_json_path_values_follows_the_path_and_wildcards():
    doc = {"a": [{"b": 1}, {"b": 2}, {"c": 3}]}
    assert json_path_values(doc, parse_json_path("$.a[*].b")) == [1, 2]
    assert json_path_values(doc, parse_json_path("$.a[-1].c")) == [3]
    assert json_path_values(doc, parse_json_path("$.a[5]")) == []
    assert json_path_values(doc, parse_json_path("$.a.b")) == []


def test_json_path_matches_when_the_path_exists():
    assert matches(FilterSpec(json_path="$.order.items[1].sku"), record(ORDER))
    assert not matches(FilterSpec(json_path="$.order.items[2].sku"), record(ORDER))
    assert not matches(FilterSpec(json_path="$.order.customer"), record(ORDER))


@pytest.mark.parametrize(
    ("path", "expected", "result"),
    [
        ("$.order.id", "7", True),
        ("$.order.id", "7.0", True),
        ("$.order.id", '"7"', False),
        ("$.order.status", "shipped", True),
        ("$.order.status", '"shipped"', True),
        ("$.order.status", "Shipped", False),
        ("$.order.paid", "true", True),
        ("$.order.paid", "1", False),
        ("$.order.items[1].qty", "1.5", True),
        ("$.order.items[*].sku", "CD-2", True),
        ("$.order.items[*].sku", "EF-3", False),
        ("$.order", "null", False),
    ],
)
def test_json_path_with_a_value_compares_json_scalars(path, expected, result):
    assert matches(FilterSpec(json_path=path, json_value=expected), record(ORDER)) is result


def test_json_path_null_value_matches_a_json_null():
    assert matches(FilterSpec(json_path="$.x", json_value="null"), record(b'{"x": null}'))
    assert not matches(FilterSpec(json_path="$.x", json_value="null"), record(b'{"x": 0}'))


def test_json_path_true_and_false_are_not_one_and_zero():
    assert not matches(FilterSpec(json_path="$.n", json_value="true"), record(b'{"n": 1}'))
    assert not matches(FilterSpec(json_path="$.n", json_value="false"), record(b'{"n": 0}'))
    assert matches(FilterSpec(json_path="$.n", json_value="false"), record(b'{"n": false}'))


def test_json_path_on_a_non_json_value_does_not_match():
    assert not matches(FilterSpec(json_path="$.order"), record(b"order: 7"))
    assert not matches(FilterSpec(json_path="$.order"), record(b"\xff\x00"))


def test_json_path_finds_a_key_written_with_escapes():
    assert matches(FilterSpec(json_path="$.sku", json_value="AB-1"), record(b'{"s\\u006bu": "AB-1"}'))


def test_json_path_on_headers_looks_at_header_values():
    rec = record(b"plain", headers=(("meta", b'{"tenant": "acme"}'),))
    assert matches(FilterSpec(json_path="$.tenant", json_value="acme", target="headers"), rec)
    assert not matches(FilterSpec(json_path="$.tenant", json_value="acme", target="value"), rec)


# the raw pre-filter ------------------------------------------------------------------------------


def test_raw_matcher_is_none_when_headers_may_decide():
    assert build_raw_matcher(FilterSpec(substring="x", target="headers")) is None
    assert build_raw_matcher(FilterSpec(substring="x", target="any")) is None


def test_raw_matcher_tests_the_chosen_side():
    on_key = build_raw_matcher(FilterSpec(substring="abc", target="key"))
    on_value = build_raw_matcher(FilterSpec(substring="abc", target="value"))
    assert on_key is not None and on_value is not None
    assert on_key(b"xabcx", b"zzz") and not on_key(b"zzz", b"xabcx")
    assert on_value(b"zzz", b"xabcx") and not on_value(b"xabcx", b"zzz")
    assert not on_value(b"abc", None)


def test_raw_matcher_rejects_a_json_document_lacking_a_key_of_the_path():
    raw = build_raw_matcher(FilterSpec(json_path="$.order.customer"))
    assert raw is not None
    assert not raw(None, ORDER)
    assert raw(None, b'{"order": {"customer": 1}}')


PAYLOADS = [
    ORDER,
    b"status=FAILED id=7",
    b"STATUS: failed",
    "status \u212a failed".encode(),  # KELVIN SIGN, which case-insensitive matching folds to k
    "Straße café ZÜRICH".encode(),
    b'{"s\\u006bu": "AB-1", "status": "FAILED"}',
    b"\xff\xfe status FAILED \x00",
    b"",
]
SPECS = [
    FilterSpec(substring="failed"),
    FilterSpec(substring="FAILED", case_sensitive=True),
    FilterSpec(substring="k"),
    FilterSpec(substring="zürich"),
    FilterSpec(regex=r"status\W{1,4}FAILED"),
    FilterSpec(regex=r"status\W{1,4}FAILED", case_sensitive=True),
    FilterSpec(regex=r"(?i)STATUS.*failed", case_sensitive=True),
    FilterSpec(regex=r"status \w failed"),
    FilterSpec(regex=r"caf.|zürich"),
    FilterSpec(regex=r"stra(?:ss|ß)e"),
    FilterSpec(json_path="$.sku", json_value="AB-1"),
    FilterSpec(json_path="$.order.items[*].sku"),
    FilterSpec(substring="status", regex="FAILED", json_path="$.status"),
]


@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_raw_matcher_never_rejects_what_the_matcher_accepts(spec):
    matcher, raw = build_matcher(spec), build_raw_matcher(spec)
    assert matcher is not None and raw is not None
    accepted = 0
    for payload in PAYLOADS:
        if matcher(record(payload)):
            accepted += 1
            assert raw(None, payload), payload
    assert accepted or spec.substring == "zürich" or spec.json_path


def test_kelvin_sign_matches_k_ignoring_case_in_a_regex():
    # The raw pre-filter folds ASCII only; it must step aside for a non-ASCII payload.
    spec = FilterSpec(regex=r"status k failed")
    raw = build_raw_matcher(spec)
    assert raw is not None and raw(None, "status \u212a failed".encode())
    assert matches(spec, record("status \u212a failed".encode()))


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"status\W{1,4}FAILED", ["status", "FAILED"]),
        (r"x(?:abc)+y", ["abc"]),
        (r"(?:abc)?zz", ["zz"]),
        (r"^order-\d+$", ["order-"]),
        (r"abc|def", []),
        (r"(?i:abc)de", []),
        (r"(?!abc)xy", ["xy"]),
        (r"[ab]c", []),
    ],
)
def test_required_literals_are_those_every_match_contains(pattern, literals):
    assert required_literals(re.compile(pattern)) == literals
