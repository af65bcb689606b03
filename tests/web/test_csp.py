"""A strict Content-Security-Policy on every response, and templates that need nothing looser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from console.csp import HEADER

TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"


def directives(response) -> dict[str, list[str]]:  # noqa: ANN001 - a test client response
    policy = response.headers[HEADER]
    parsed = {}
    for part in policy.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


def assert_strict(response) -> None:  # noqa: ANN001
    d = directives(response)
    assert d["script-src"] == ["'self'"]
    assert d["default-src"] == ["'self'"]
    assert d["object-src"] == ["'none'"]
    assert d["frame-ancestors"] == ["'none'"]
    assert d["base-uri"] == ["'self'"]
    assert "'unsafe-eval'" not in response.headers[HEADER]


@pytest.mark.parametrize(
    "path",
    [
        "/clusters/local/",
        "/clusters/local/layout/",
        "/clusters/local/at-risk/",
        "/clusters/local/events/",
        "/clusters/local/topics/",
        "/clusters/local/topics/orders/",
        "/clusters/local/topics/orders/messages/",
        "/clusters/local/topics/new/",
        "/clusters/local/topics/orders/purge/",
        "/clusters/local/topics/orders/delete/",
        "/clusters/local/groups/",
        "/audit/",
        "/clusters/local/topics/no-such-topic/",  # a 404 page too
    ],
)
def test_every_page_carries_a_strict_policy(client_as, snapshot, monkeypatch, path: str) -> None:
    from topics_app import services

    monkeypatch.setattr(services, "topic_configs", lambda cluster, name: [])
    response = client_as("admin").get(path)
    assert response.status_code in (200, 404), response.content[:300]
    assert_strict(response)


def test_login_page_and_the_api_carry_the_policy_too(db: None) -> None:
    client = Client()
    assert_strict(client.get("/login/"))
    assert_strict(client.get("/clusters/local/"))  # the redirect to the login page
    assert_strict(client.get("/api/v1/clusters/"))


def test_websockets_may_only_go_back_to_the_host_the_page_came_from(db: None) -> None:
    connect = directives(Client().get("/login/", HTTP_HOST="localhost:8123"))["connect-src"]
    assert connect == ["'self'", "ws://localhost:8123", "wss://localhost:8123"]


def test_no_template_has_inline_script_or_event_handler_attributes() -> None:
    inline_script = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.IGNORECASE)
    handler = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.IGNORECASE)
    found = []
    # The lag report's download is a file for offline reading: its script is inline by design (it must
    # work without the console), and it is only ever sent as an attachment (test_analytics_pages.py).
    offline = {TEMPLATES / "analytics" / "report_file.html"}
    for path in sorted(TEMPLATES.rglob("*.html")):
        if path in offline:
            continue
        text = path.read_text()
        found += [f"{path.relative_to(TEMPLATES)}: {m.group(0)[:60]}" for m in inline_script.finditer(text)]
        found += [f"{path.relative_to(TEMPLATES)}: {m.group(0)[:60]}" for m in handler.finditer(text)]
        found += [f"{path.relative_to(TEMPLATES)}: javascript: URL" for _ in re.finditer(r"javascript:", text, re.IGNORECASE)]
    assert found == []
