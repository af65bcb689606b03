"""Sessions end after CONSOLE_SESSION_IDLE_SECONDS without a request and CONSOLE_SESSION_MAX_AGE_SECONDS
after the login (console/sessions.py), and the HTTPS settings come from the environment."""

from __future__ import annotations

import time

from django.contrib.auth.models import User
from django.test import Client

from console import sessions
from console.models import AuditEntry


def _logged_in(address: str = "192.0.2.5") -> Client:
    c = Client(REMOTE_ADDR=address, HTTP_USER_AGENT="browser/2")
    assert c.post("/login/", {"username": "viewer", "password": "pw-viewer"}).status_code == 302
    return c


def _age(c: Client, key: str, seconds: float) -> None:
    session = c.session
    session[key] = time.time() - seconds
    session.save()


def test_a_session_idle_longer_than_the_limit_is_sent_to_the_login_page(users: dict[str, User], snapshot: object,
                                                                       settings: object) -> None:
    c = _logged_in()
    assert c.get("/clusters/local/").status_code == 200
    _age(c, sessions.SEEN, settings.CONSOLE_SESSION_IDLE_SECONDS + 5)  # type: ignore[attr-defined]

    response = c.get("/clusters/local/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert c.get("/api/v1/clusters/").status_code in (401, 403)
    entry = AuditEntry.objects.get(action="session_expired")
    assert (entry.username, entry.details["reason"], entry.client_ip) == ("viewer", "idle", "192.0.2.5")


def test_a_used_session_still_ends_at_the_maximum_age(users: dict[str, User], snapshot: object, settings: object) -> None:
    c = _logged_in()
    _age(c, sessions.STARTED, settings.CONSOLE_SESSION_MAX_AGE_SECONDS + 5)  # type: ignore[attr-defined]

    response = c.get("/clusters/local/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert AuditEntry.objects.get(action="session_expired").details["reason"] == "max_age"


def test_a_session_in_use_goes_on(users: dict[str, User], snapshot: object, settings: object) -> None:
    c = _logged_in()
    _age(c, sessions.SEEN, settings.CONSOLE_SESSION_IDLE_SECONDS - 120)  # type: ignore[attr-defined]
    assert c.get("/clusters/local/").status_code == 200
    assert time.time() - c.session[sessions.SEEN] < 60  # the use was written down
    assert not AuditEntry.objects.filter(action="session_expired").exists()


def test_login_and_logout_entries_carry_the_client_address_and_user_agent(users: dict[str, User]) -> None:
    c = _logged_in("192.0.2.9")
    c.post("/logout/")
    rows = list(AuditEntry.objects.order_by("id").values_list("action", "client_ip", "user_agent"))
    assert rows == [("login", "192.0.2.9", "browser/2"), ("logout", "192.0.2.9", "browser/2")]


def test_the_proxy_header_is_believed_only_behind_a_proxy(users: dict[str, User], settings: object) -> None:
    forwarded = "10.9.9.9, 198.51.100.77"
    c = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    c.post("/login/", {"username": "viewer", "password": "pw-viewer"})
    assert AuditEntry.objects.get(action="login").client_ip == "127.0.0.1"

    settings.CONSOLE_BEHIND_PROXY = True  # type: ignore[attr-defined]
    c = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    c.post("/login/", {"username": "viewer", "password": "pw-viewer"})
    # The right-most entry is the one the (one) trusted proxy wrote; the rest is the client's own say.
    assert AuditEntry.objects.filter(action="login").order_by("-id")[0].client_ip == "198.51.100.77"
