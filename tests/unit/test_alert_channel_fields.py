"""The one check of an alert channel's fields: every bad field is a sentence (a 400), never a 500."""

from __future__ import annotations

import pytest

from alerts_app.channels import validate_channel
from console.errors import BadParameter


def test_a_webhook_channel_is_cleaned_with_defaults() -> None:
    got = validate_channel({"name": "ops <hook> ü", "kind": "webhook", "url": " https://hooks.example.com/a?b=1 ", "secret": "k"})
    assert got == {"name": "ops <hook> ü", "kind": "webhook", "url": "https://hooks.example.com/a?b=1", "to": [],
                   "secret": "k", "max_attempts": 5, "enabled": True}


def test_an_email_channel_takes_a_list_or_a_comma_separated_string() -> None:
    assert validate_channel({"name": "m", "kind": "email", "to": "a@example.com, b@example.com"})["to"] == ["a@example.com", "b@example.com"]
    assert validate_channel({"name": "m", "kind": "email", "to": ["a@example.com"], "max_attempts": 3})["max_attempts"] == 3


@pytest.mark.parametrize("url, words", [
    ("ftp://x", "must start with http:// or https://; its scheme is 'ftp:'"),
    ("javascript:alert(1)", "its scheme is 'javascript:'"),
    ("JavaScript:alert(1)", "its scheme is 'javascript:'"),
    ("file:///etc/passwd", "its scheme is 'file:'"),
    ("/relative/path", "its scheme is none"),
    ("http://", "must name a host"),
    ("https://user:pw@example.com/", "must not carry a user name or password"),
    ("https://example.com/a b", "spaces or control characters"),
    ("http://example.com:99999/", "not a valid URL"),
    ("", "'url' is required"),
    ("https://x/" + "a" * 2000, "at most 2000 characters"),
])
def test_a_url_that_is_not_http_is_a_sentence(url: str, words: str) -> None:
    with pytest.raises(BadParameter) as caught:
        validate_channel({"name": "n", "kind": "webhook", "url": url})
    assert words in caught.value.message and caught.value.http_status == 400


@pytest.mark.parametrize("fields, words", [
    ({"name": "n", "kind": "pager", "url": "https://x"}, "'kind' must be one of webhook, email, slack, teams, alertmanager"),
    ({"name": "n", "url": "https://x"}, "nothing is not"),
    ({"kind": "slack", "url": "https://x"}, "'name' is required"),
    ({"name": " n", "kind": "slack", "url": "https://x"}, "start or end with a space"),
    ({"name": "a\x00b", "kind": "slack", "url": "https://x"}, "control characters"),
    ({"name": "n" * 101, "kind": "slack", "url": "https://x"}, "at most 100"),
    ({"name": "n", "kind": "email"}, "'to' is required"),
    ({"name": "n", "kind": "email", "to": ["not-an-address"]}, "'not-an-address' in 'to' is not an e-mail address"),
    ({"name": "n", "kind": "email", "to": ["a@example.com"], "url": "https://x"}, "give 'to', not 'url'"),
    ({"name": "n", "kind": "email", "to": ["a@example.com"], "secret": "s"}, "an e-mail channel has none"),
    ({"name": "n", "kind": "teams", "url": "https://x", "to": ["a@example.com"]}, "give 'url', not 'to'"),
    ({"name": "n", "kind": "webhook", "url": "https://x", "max_attempts": 0}, "from 1 to 20, not 0"),
    ({"name": "n", "kind": "webhook", "url": "https://x", "max_attempts": True}, "whole number"),
    ({"name": "n", "kind": "webhook", "url": "https://x", "max_attempts": 2.5}, "whole number"),
    ({"name": "n", "kind": "webhook", "url": "https://x", "secret": 7}, "'secret' must be a string"),
    ({"name": "n", "kind": "webhook", "url": "https://x", "enabled": "yes"}, "true or false"),
    ({"name": "n", "kind": "webhook", "url": "https://x", "colour": "red"}, "Unknown channel field 'colour'"),
])
def test_each_bad_field_is_a_sentence(fields: dict, words: str) -> None:
    with pytest.raises(BadParameter) as caught:
        validate_channel(fields)
    assert words in caught.value.message
