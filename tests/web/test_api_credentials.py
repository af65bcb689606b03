"""API tokens expire and are rotated; the metrics secret opens /metrics and nothing else (console/tokens.py)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

from console.models import AuditEntry

SECRET = "scrape-0123456789abcdef"


def _token_client(key: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def test_a_fresh_token_is_accepted_and_an_old_one_refused_with_the_reason(users: dict[str, User], snapshot: object,
                                                                          settings: object) -> None:
    token = Token.objects.create(user=users["viewer"])
    assert _token_client(token.key).get("/api/v1/clusters/").status_code == 200

    hours = settings.CONSOLE_API_TOKEN_TTL_HOURS  # type: ignore[attr-defined]
    Token.objects.filter(pk=token.pk).update(created=timezone.now() - timedelta(hours=hours, minutes=1))
    refused = _token_client(token.key).get("/api/v1/clusters/")
    assert refused.status_code == 401
    assert "expired" in refused.json()["detail"] and "rotatetoken viewer" in refused.json()["detail"]


def test_rotatetoken_replaces_the_token_and_prints_the_new_one(users: dict[str, User], snapshot: object) -> None:
    old = Token.objects.create(user=users["operator"])
    out = StringIO()
    call_command("rotatetoken", "operator", stdout=out)
    new_key = out.getvalue().strip()

    assert new_key != old.key and len(new_key) == 40
    assert _token_client(old.key).get("/api/v1/clusters/").status_code == 401
    assert _token_client(new_key).get("/api/v1/clusters/").status_code == 200
    entry = AuditEntry.objects.get(action="rotate_token")
    assert (entry.username, entry.details) == ("operator", {"replaced": True})


def test_rotatetoken_names_an_unknown_user(db: None) -> None:
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("rotatetoken", "nobody")


def test_the_metrics_secret_opens_metrics(snapshot: object, settings: object, db: None) -> None:
    settings.CONSOLE_METRICS_TOKEN = SECRET  # type: ignore[attr-defined]
    response = Client(HTTP_AUTHORIZATION=f"Bearer {SECRET}").get("/metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")


def test_a_wrong_metrics_secret_is_refused(snapshot: object, settings: object, db: None) -> None:
    settings.CONSOLE_METRICS_TOKEN = SECRET  # type: ignore[attr-defined]
    response = Client(HTTP_AUTHORIZATION="Bearer guess").get("/metrics")
    assert response.status_code == 401 and "not the metrics token" in response.json()["detail"]


def test_without_a_configured_secret_a_bearer_header_opens_nothing(snapshot: object, settings: object, db: None) -> None:
    settings.CONSOLE_METRICS_TOKEN = ""  # type: ignore[attr-defined]
    assert Client(HTTP_AUTHORIZATION="Bearer ").get("/metrics").status_code == 401
    assert Client(HTTP_AUTHORIZATION="Bearer anything").get("/metrics").status_code == 401


@pytest.mark.parametrize("path", ["/api/v1/clusters/", "/api/v1/clusters/local/topics/", "/api/v1/audit/",
                                  "/api/v1/clusters/local/consumer-groups/"])
def test_the_metrics_secret_opens_no_api_route(snapshot: object, settings: object, db: None, path: str) -> None:
    settings.CONSOLE_METRICS_TOKEN = SECRET  # type: ignore[attr-defined]
    assert Client(HTTP_AUTHORIZATION=f"Bearer {SECRET}").get(path).status_code == 401


@pytest.mark.parametrize("path", ["/clusters/local/", "/audit/", "/admin/"])
def test_the_metrics_secret_opens_no_page(snapshot: object, settings: object, db: None, path: str) -> None:
    settings.CONSOLE_METRICS_TOKEN = SECRET  # type: ignore[attr-defined]
    response = Client(HTTP_AUTHORIZATION=f"Bearer {SECRET}").get(path)
    assert response.status_code == 302 and "login" in response["Location"]


def test_the_metrics_secret_cannot_change_anything_on_metrics(snapshot: object, settings: object, db: None) -> None:
    settings.CONSOLE_METRICS_TOKEN = SECRET  # type: ignore[attr-defined]
    assert Client(HTTP_AUTHORIZATION=f"Bearer {SECRET}").post("/metrics").status_code in (401, 403, 405)


def test_logged_in_viewers_keep_metrics(client_as, snapshot: object) -> None:  # noqa: ANN001
    assert client_as("viewer").get("/metrics").status_code == 200
