"""Every route answers HEAD, OPTIONS and TRACE without acting and without showing what a role may not see.

A page view used to run its body for OPTIONS with the viewer role: OPTIONS on the produce page wrote a
record, OPTIONS on /audit/ rendered the audit log. Here every route of the permission table
(tests/web/test_route_roles.py) is asked HEAD, OPTIONS and TRACE by every role: HEAD is a GET (the
GET's role, no body); OPTIONS needs one of the route's actions and answers only the allowed methods
(no body, no gateway call, no audit entry); TRACE is 405 for everyone, admins included.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console.access import ACTIONS, ROLES
from console.models import AuditEntry
from tests.web.test_route_roles import (
    ANONYMOUS,
    PUBLIC,
    ROUTES,
    UNDECLARED_PAGES,
    Route,
    client_for,
    expected_roles,
)

pytestmark = pytest.mark.usefixtures("with_group")


def _least(route: Route, method: str) -> str | None:
    declared = (expected_roles(route) or {}).get(method)
    if declared is None:
        return None
    return ACTIONS[declared][0] if declared in ACTIONS else declared


def _routes() -> list[Route]:
    return [r for r in ROUTES if not r.is_admin_site and r.key not in UNDECLARED_PAGES]


def _cases(methods: tuple[str, ...]) -> list[Any]:
    return [pytest.param(route, method, caller, id=f"{method} /{route.path} as {caller}")
            for route in _routes() for method in methods for caller in (*ROLES,)]


def _changes() -> int:
    """Audit entries of changes (reads of messages are audited too, and HEAD is a read)."""
    return AuditEntry.objects.exclude(action="read_messages").count()


def _request(client: Client, route: Route, method: str) -> Any:
    return client.generic(method, "/" + route.path)


@pytest.mark.parametrize(("route", "method", "caller"), _cases(("HEAD",)))
def test_head_is_answered_as_a_get_for_the_gets_role_only(route: Route, method: str, caller: str, db: None,
                                                         gateway_uses: list[str]) -> None:
    client = client_for(caller)
    before = _changes()  # (after the login's own entry)
    response = _request(client, route, method)
    get_role = _least(route, "GET")
    where = f"HEAD /{route.path} as {caller}: {response.status_code}"
    if get_role is None:
        assert response.status_code == 405, f"{where}, expected 405 (the route has no GET)"
    elif get_role != PUBLIC and ROLES.index(caller) < ROLES.index(get_role):
        assert response.status_code == 403, f"{where}, expected 403 (GET needs {get_role})"
    else:
        assert response.status_code not in (401, 403, 405), where
    assert not response.content, f"{where}: HEAD answered with a body"
    assert _changes() == before, f"{where}: HEAD was audited as a change"


@pytest.mark.parametrize(("route", "method", "caller"), _cases(("OPTIONS",)))
def test_options_never_runs_a_view_and_needs_one_of_its_actions(route: Route, method: str, caller: str, db: None,
                                                               gateway_uses: list[str]) -> None:
    client = client_for(caller)
    before = AuditEntry.objects.count()
    response = _request(client, route, method)
    roles = [r for r in (_least(route, m) for m in expected_roles(route) or {}) if r is not None]
    where = f"OPTIONS /{route.path} as {caller}: {response.status_code}"
    if PUBLIC not in roles and all(ROLES.index(caller) < ROLES.index(r) for r in roles):
        assert response.status_code == 403, f"{where}, expected 403 (needs one of {roles})"
    else:
        assert response.status_code == 200, where
        allowed = {m.strip() for m in response["Allow"].split(",")}
        assert set(expected_roles(route) or {}) <= allowed, f"{where}: Allow is {allowed}"
        if not route.is_api:
            assert not response.content, f"{where}: a page answered OPTIONS with a body"
    assert not gateway_uses, f"{where}: OPTIONS reached the gateway ({gateway_uses})"
    assert AuditEntry.objects.count() == before, f"{where}: OPTIONS changed or read something"


@pytest.mark.parametrize("route", [pytest.param(r, id=f"TRACE /{r.path}") for r in _routes()])
def test_trace_is_not_allowed_even_for_an_admin(route: Route, db: None, gateway_uses: list[str]) -> None:
    response = _request(client_for("admin"), route, "TRACE")
    assert response.status_code == 405, f"TRACE /{route.path}: {response.status_code}"
    assert not gateway_uses


def test_options_on_the_produce_page_as_a_viewer_writes_nothing(db: None, gateway_uses: list[str]) -> None:
    response = client_for("viewer").options("/clusters/local/topics/orders/messages/produce/")
    assert response.status_code == 403
    assert not gateway_uses  # (the page's body, which produces, never ran)


def test_options_on_the_audit_page_as_a_viewer_shows_no_entry(db: None) -> None:
    AuditEntry.objects.create(username="someone", action="delete_topic", target="secret-topic-name")
    response = client_for("viewer").options("/audit/")
    assert response.status_code == 403
    assert b"secret-topic-name" not in response.content
    assert client_for(ANONYMOUS).options("/audit/").status_code == 302  # (to the login page)
