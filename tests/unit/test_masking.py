"""Masking without Django: checking a policy's fields, matching topics and users, rewriting records."""

from __future__ import annotations

import json

import pytest

from console.errors import BadParameter
from console.gateway.messages.records import Record
from topics_app import masking
from topics_app.masking import MARK, CompiledPolicy, masked_parts, masker_of

VALUE = {"customer": {"email": "alice@example.com", "name": "Alice"}, "cards": [{"number": "4111"}, {"number": "5500"}]}


def record(value: bytes | None = json.dumps(VALUE).encode(), key: bytes | None = b"k-1",
           headers: tuple[tuple[str, bytes | None], ...] = (("Authorization", b"Bearer t"), ("trace", b"x"))) -> Record:
    return Record("orders", 0, 5, 1000, "CreateTime", key, value, headers, len(key or b""), len(value or b""))


def policy(targets: list[dict[str, str]], *, kind: str = "literal", pattern: str = "orders", cluster: str = "*",
           applies_to: tuple[str, ...] = (), exempt: tuple[str, ...] = ()) -> CompiledPolicy:
    return CompiledPolicy.compile("p", cluster, kind, pattern, applies_to, exempt, masking.check_targets(targets))


def test_json_fields_become_the_mark_and_the_value_stays_valid_json() -> None:
    m = masker_of([policy([{"kind": "json_path", "path": "$.customer.email"},
                           {"kind": "json_path", "path": "$.cards[*].number"}])], frozenset({"viewer"}), "local", "orders")
    assert m is not None
    out = m.apply(record())
    shown = json.loads(out.value or b"")
    assert shown == {"customer": {"email": MARK, "name": "Alice"}, "cards": [{"number": MARK}, {"number": MARK}]}
    assert masked_parts(out) == ("json:$.cards[*].number", "json:$.customer.email")


def test_a_value_without_the_field_is_left_as_it_is() -> None:
    m = masker_of([policy([{"kind": "json_path", "path": "$.missing"}])], frozenset(), "local", "orders")
    assert m is not None
    r = record()
    assert m.apply(r) is r


def test_a_value_that_is_not_json_is_masked_whole_when_a_json_path_applies() -> None:
    m = masker_of([policy([{"kind": "json_path", "path": "$.email"}])], frozenset(), "local", "orders")
    assert m is not None
    out = m.apply(record(value=b"\x82\xa5email\xa3a@b"))
    assert out.value == MARK.encode() and masked_parts(out) == ("value",)


def test_duplicate_keys_do_not_let_a_hidden_copy_through() -> None:
    m = masker_of([policy([{"kind": "json_path", "path": "$.email"}])], frozenset(), "local", "orders")
    assert m is not None
    out = m.apply(record(value=b'{"email": "first-secret", "email": "second-secret"}'))
    assert b"secret" not in (out.value or b"")


def test_key_whole_value_and_headers_case_insensitively_become_the_mark() -> None:
    m = masker_of([policy([{"kind": "key"}, {"kind": "value"}, {"kind": "header", "name": "authorization"}])],
                  frozenset(), "local", "orders")
    assert m is not None
    out = m.apply(record())
    assert out.key == out.value == MARK.encode()
    assert out.headers == (("Authorization", MARK.encode()), ("trace", b"x"))
    assert masked_parts(out) == ("key", "value", "header:Authorization")
    assert out.key_size == 3  # sizes are Kafka's, not the content


def test_null_key_and_tombstone_stay_null() -> None:
    m = masker_of([policy([{"kind": "key"}, {"kind": "value"}])], frozenset(), "local", "orders")
    assert m is not None
    r = record(value=None, key=None)
    assert m.apply(r) is r


@pytest.mark.parametrize(("kind", "pattern", "topic", "covered"), [
    ("literal", "orders", "orders", True), ("literal", "orders", "orders2", False),
    ("prefix", "pay.", "pay.cards", True), ("prefix", "pay.", "orders", False),
    ("regex", r"pay\.(cards|iban)", "pay.iban", True), ("regex", r"pay\.(cards|iban)", "pay.iban.dlq", False),
])
def test_topic_patterns_match_literally_by_prefix_or_by_a_whole_regex(kind: str, pattern: str, topic: str,
                                                                       covered: bool) -> None:
    assert policy([{"kind": "key"}], kind=kind, pattern=pattern).covers_topic("local", topic) is covered


def test_a_policy_for_one_cluster_leaves_the_others_alone() -> None:
    p = policy([{"kind": "key"}], cluster="prod")
    assert p.covers_topic("prod", "orders") and not p.covers_topic("local", "orders")


def test_exempt_roles_and_groups_win_over_applies_to_and_empty_applies_to_means_everyone() -> None:
    p = policy([{"kind": "key"}], applies_to=("viewer", "support"), exempt=("pii-readers",))
    assert p.reaches(frozenset({"viewer"})) and p.reaches(frozenset({"operator", "support"}))
    assert not p.reaches(frozenset({"operator"}))
    assert not p.reaches(frozenset({"viewer", "pii-readers"}))
    assert policy([{"kind": "key"}]).reaches(frozenset())


def test_policies_that_reach_a_user_merge_their_targets() -> None:
    m = masker_of([policy([{"kind": "key"}]), policy([{"kind": "header", "name": "h"}], kind="prefix", pattern="ord")],
                  frozenset(), "local", "orders")
    assert m is not None and m.targets.key and m.targets.headers == frozenset({"h"})
    assert masker_of([policy([{"kind": "key"}], exempt=("admin",))], frozenset({"admin"}), "local", "orders") is None


@pytest.mark.parametrize(("targets", "says"), [
    ([], "non-empty list"),
    ([{"kind": "column"}], "'targets[0]'.kind must be one of json_path, header, key, value"),
    ([{"kind": "json_path", "path": "$.a["}], "'targets[0]'.path: it is not a valid JSON path"),
    ([{"kind": "json_path"}], "'targets[0]'.path must be a JSON path"),
    ([{"kind": "header"}], "'targets[0]'.name must be the header's name"),
    ([{"kind": "key", "path": "$.a"}], "has no field 'path'"),
])
def test_bad_targets_are_refused_with_a_sentence_naming_the_entry(targets: list[dict[str, str]], says: str) -> None:
    with pytest.raises(BadParameter, match=None) as caught:
        masking.check_targets(targets)
    assert says in caught.value.message


def test_bad_topic_patterns_and_names_are_refused_with_a_sentence() -> None:
    with pytest.raises(BadParameter, match="'topic_pattern' is not a valid regular expression"):
        masking.check_topic_pattern("regex", "(unclosed")
    with pytest.raises(BadParameter, match="'topic_kind' must be one of literal, prefix, regex"):
        masking.check_topic_pattern("glob", "a*")
    with pytest.raises(BadParameter, match="'exempt' must be a list of role or group names"):
        masking.check_names("admin", "exempt")


def test_a_masked_document_keeps_text_surrogate_escapes_and_big_numbers() -> None:
    m = masker_of([policy([{"kind": "json_path", "path": "$.email"}])], frozenset(), "local", "orders")
    assert m is not None
    for raw in ('{"email": "x", "name": "Zoë"}', '{"email": "x", "odd": "\\ud800"}', '{"email": "x", "n": 123456789012345678901234}'):
        out = json.loads(m.apply(record(value=raw.encode())).value or b"")
        assert out == {**json.loads(raw), "email": MARK}
