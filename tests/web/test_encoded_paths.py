"""Names in URL paths the standard way: `team%2Fservice` reaches the group `team/service` through the real ASGI app.

Django's test Client decodes `%2F` itself and never sees the server's raw path, so these tests call
console.asgi.application with the scope Daphne builds: `path` percent-decoded, `raw_path` as received."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import unquote

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from console.rawpath import EncodedSlashes, routed_path
from console.snapshots import store
from console.snapshots.model import GroupState, MemberState
from tests.support import off_the_test_thread

NAMES = ["team/service", "a%2Fb", "a~b/c"]


@pytest.fixture
def slash_groups(snapshot):  # noqa: ANN201
    for i, gid in enumerate(NAMES):
        member = MemberState(f"m-{i}", f"client-{i}", "host-1", [["orders", 0]])
        snapshot.groups[gid] = GroupState(gid, "Stable", "consumer", "classic", "range", [member], {"orders:0": 5})
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    return snapshot


def asgi_get(raw_path: str, session: str) -> tuple[int, str]:
    """GET through console.asgi.application with the scope Daphne builds from the request line."""
    from console.asgi import application

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "path": unquote(raw_path), "raw_path": raw_path.encode("ascii"), "root_path": "", "scheme": "http",
             "query_string": b"", "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
             "headers": [(b"host", b"testserver"), (b"cookie", f"{settings.SESSION_COOKIE_NAME}={session}".encode())]}

    sent: list[dict[str, Any]] = []
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)  # the client never disconnects: the app cancels this wait when it has answered
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def call() -> tuple[int, str]:
        # Awaited in this context (not a fresh one, as asgiref's ApplicationCommunicator does), so the view's
        # database work runs on the test's thread and sees its transaction.
        await asyncio.wait_for(application(scope, receive, send), 10)
        start = next(m for m in sent if m["type"] == "http.response.start")
        return start["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()

    # As Django's own test client does: a request must not close the test's database connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        return async_to_sync(call)()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def viewer_session(client_as) -> str:  # noqa: ANN001
    return client_as("viewer").cookies[settings.SESSION_COOKIE_NAME].value


@pytest.mark.parametrize("segment", ["team%2Fservice", "team%2fservice", "team~2Fservice"])
def test_the_api_detail_reaches_a_group_with_a_slash_percent_encoded_or_in_the_tilde_form(slash_groups, viewer_session,
                                                                                          segment: str) -> None:
    status, body = asgi_get(f"/api/v1/clusters/local/consumer-groups/{segment}/", viewer_session)
    assert status == 200, body[:300]
    assert json.loads(body)["group"] == "team/service"


@pytest.mark.parametrize("segment", ["team%2Fservice", "team~2Fservice"])
def test_the_group_page_reaches_a_group_with_a_slash_percent_encoded_or_in_the_tilde_form(slash_groups, viewer_session,
                                                                                           segment: str) -> None:
    status, body = asgi_get(f"/clusters/local/groups/{segment}/", viewer_session)
    assert status == 200, body[:300]
    assert '<h1 class="mono">team/service</h1>' in body


def test_a_group_named_with_a_literal_percent_is_reached_with_its_percent_encoded(slash_groups, viewer_session) -> None:
    status, body = asgi_get("/api/v1/clusters/local/consumer-groups/a%252Fb/", viewer_session)
    assert status == 200 and json.loads(body)["group"] == "a%2Fb"
    status, body = asgi_get("/clusters/local/groups/a%252Fb/", viewer_session)
    assert status == 200 and '<h1 class="mono">a%2Fb</h1>' in body


def test_a_tilde_in_a_segment_sent_the_standard_way_is_a_tilde(slash_groups, viewer_session) -> None:
    status, body = asgi_get("/api/v1/clusters/local/consumer-groups/a~b%2Fc/", viewer_session)
    assert status == 200 and json.loads(body)["group"] == "a~b/c"


def test_a_topic_name_with_an_encoded_slash_is_a_clear_not_found(slash_groups, viewer_session) -> None:
    status, body = asgi_get("/api/v1/clusters/local/topics/orders%2Fx/", viewer_session)  # topic names hold no slash
    assert status == 404 and "does not exist" in json.loads(body)["detail"]


@pytest.mark.parametrize(("raw", "routed"), [
    ("/api/v1/clusters/local/consumer-groups/team%2Fservice/offsets/", "/api/v1/clusters/local/consumer-groups/team~2Fservice/offsets/"),
    ("/clusters/local/groups/a~b%2fc/", "/clusters/local/groups/a~7Eb~2Fc/"),
    ("/clusters/local/groups/%2F/", "/clusters/local/groups/~2F/"),
    ("/clusters/local/groups/%C3%BC%2Fx/", "/clusters/local/groups/ü~2Fx/"),
    ("/clusters/local/groups/a%252Fb/", "/clusters/local/groups/a%2Fb/"),
    ("/clusters/local/groups/team~2Fservice/", "/clusters/local/groups/team~2Fservice/"),
])
def test_only_segments_with_an_encoded_slash_are_read_the_standard_way(raw: str, routed: str) -> None:
    assert routed_path(unquote(raw), raw.encode()) == routed


def test_a_path_that_does_not_match_its_raw_path_is_left_alone() -> None:
    assert routed_path("/elsewhere/", b"/groups/team%2Fservice/") == "/elsewhere/"
    assert routed_path("/groups/team/service/", None) == "/groups/team/service/"


@pytest.mark.parametrize(("kind", "expected"), [("http", "/g/a~2Fb/"), ("websocket", "/g/a~2Fb/"), ("lifespan", None)])
def test_the_middleware_rewrites_http_and_websocket_scopes_only(kind: str, expected: str | None) -> None:
    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope)

    async def receive() -> dict[str, Any]:
        return {}

    async def send(message: Any) -> None:
        pass

    scope: dict[str, Any] = {"type": kind}
    if expected:
        scope.update(path="/g/a/b/", raw_path=b"/g/a%2Fb/")
    off_the_test_thread(lambda: async_to_sync(EncodedSlashes(app))(scope, receive, send))
    assert seen[0].get("path") == expected and seen[0].get("raw_path") == scope.get("raw_path")
