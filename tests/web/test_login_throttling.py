"""Login throttling (console/throttle.py): per user name and per client address, on the console's
login and the admin site's, with one audit entry per lockout and none per failed attempt."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from console.models import AuditEntry

ATTACKER = "203.0.113.7"
ELSEWHERE = "198.51.100.20"


def _login(path: str, username: str, password: str, address: str) -> object:
    return Client(REMOTE_ADDR=address, HTTP_USER_AGENT="guesser/1.0").post(
        path, {"username": username, "password": password})


def test_fifty_wrong_passwords_lock_the_address_with_one_audit_entry(users: dict[str, User]) -> None:
    for attempt in range(50):
        response = _login("/login/", "operator", f"wrong-{attempt}", ATTACKER)
        assert response.status_code in (200, 429)  # type: ignore[attr-defined]

    refused = _login("/login/", "operator", "pw-operator", ATTACKER)
    assert refused.status_code == 429  # type: ignore[attr-defined]
    assert "Too many failed logins" in refused.content.decode()  # type: ignore[attr-defined]
    assert "_auth_user_id" not in refused.wsgi_request.session  # type: ignore[attr-defined]

    lockouts = AuditEntry.objects.filter(action="login_lockout")
    assert lockouts.count() == 1
    entry = lockouts.get()
    assert (entry.username, entry.outcome, entry.client_ip, entry.user_agent) == ("operator", "refused", ATTACKER, "guesser/1.0")
    assert not AuditEntry.objects.filter(action="login", outcome="failed").exists()

    # The address is locked for every user; the attacked user still logs in from their own address.
    assert _login("/login/", "viewer", "pw-viewer", ATTACKER).status_code == 429  # type: ignore[attr-defined]
    assert _login("/login/", "operator", "pw-operator", ELSEWHERE).status_code == 302  # type: ignore[attr-defined]
    assert _login("/login/", "viewer", "pw-viewer", ELSEWHERE).status_code == 302  # type: ignore[attr-defined]
    assert AuditEntry.objects.filter(action="login_lockout").count() == 1


def test_a_wrong_password_is_counted_not_audited(users: dict[str, User]) -> None:
    assert _login("/login/", "viewer", "nope", ATTACKER).status_code == 200  # type: ignore[attr-defined]
    assert not AuditEntry.objects.exists()


def test_admin_login_is_throttled_like_the_console_login(users: dict[str, User]) -> None:
    # Anonymous callers are sent to the console's login first: the admin site's form is open to
    # logged-in users, so a viewer guessing the admin's password is who it must stop.
    viewer = Client(REMOTE_ADDR=ATTACKER)
    viewer.force_login(users["viewer"])
    for attempt in range(50):
        viewer.post("/admin/login/", {"username": "admin", "password": f"wrong-{attempt}"})

    refused = viewer.post("/admin/login/", {"username": "admin", "password": "pw-admin"})
    assert refused.status_code == 429  # type: ignore[attr-defined]
    assert "Too many failed logins" in refused.content.decode()  # type: ignore[attr-defined]
    assert AuditEntry.objects.filter(action="login_lockout", username="admin").count() == 1
    # The same lock holds on the console's own login, from that address; the admin's own address is not locked.
    assert _login("/login/", "admin", "pw-admin", ATTACKER).status_code == 429  # type: ignore[attr-defined]
    assert _login("/login/", "admin", "pw-admin", ELSEWHERE).status_code == 302  # type: ignore[attr-defined]


def test_the_api_takes_no_password_so_it_cannot_get_around_the_lock(users: dict[str, User]) -> None:
    import base64

    basic = "Basic " + base64.b64encode(b"admin:pw-admin").decode()
    response = Client(REMOTE_ADDR=ATTACKER).get("/api/v1/clusters/", HTTP_AUTHORIZATION=basic)
    assert response.status_code == 401


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_a_right_password_resets_the_count(users: dict[str, User], path: str, settings: object) -> None:
    limit = settings.AXES_FAILURE_LIMIT  # type: ignore[attr-defined]
    for _ in range(limit - 1):
        _login(path, "admin", "wrong", ATTACKER)
    assert _login(path, "admin", "pw-admin", ATTACKER).status_code == 302  # type: ignore[attr-defined]
    for _ in range(limit - 1):
        _login(path, "admin", "wrong", ATTACKER)
    assert _login(path, "admin", "pw-admin", ATTACKER).status_code == 302  # type: ignore[attr-defined]
