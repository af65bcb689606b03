"""Every page and API call needs a login; roles decide who may open what."""

from __future__ import annotations

import pytest
from django.test import Client

PAGES = ["/", "/clusters/local/", "/clusters/local/layout/", "/clusters/local/at-risk/", "/clusters/local/events/", "/audit/"]
API = [
    "/api/v1/clusters/",
    "/api/v1/clusters/local/",
    "/api/v1/clusters/local/brokers/",
    "/api/v1/clusters/local/events/",
    "/api/v1/clusters/local/topics/orders/partitions/",
    "/api/v1/audit/",
    "/api/schema/",
]


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES)
def test_anonymous_page_request_is_redirected_to_login(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.django_db
@pytest.mark.parametrize("path", API)
def test_anonymous_api_request_gets_401(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 401
    assert "credentials were not provided" in response.content.decode().lower()


@pytest.mark.django_db
def test_wrong_token_gets_401() -> None:
    response = Client().get("/api/v1/clusters/", HTTP_AUTHORIZATION="Token not-a-token")
    assert response.status_code == 401


def test_healthz_needs_no_login(redis_server: str, db: None) -> None:
    response = Client().get("/healthz")
    assert response.status_code in (200, 503)
    body = response.json()
    assert {"ok", "database", "redis", "watcher", "celery", "clusters"} <= body.keys()
    assert body["database"]["ok"] is True and body["redis"]["ok"] is True


def test_viewer_cannot_open_the_audit_log(client_as, snapshot) -> None:
    viewer = client_as("viewer")
    assert viewer.get("/audit/").status_code == 403
    assert viewer.get("/api/v1/audit/").status_code == 403


def test_operator_cannot_open_the_audit_log(client_as, snapshot) -> None:
    assert client_as("operator").get("/api/v1/audit/").status_code == 403


def test_admin_opens_the_audit_log(client_as, snapshot) -> None:
    admin = client_as("admin")
    assert admin.get("/audit/").status_code == 200
    assert admin.get("/api/v1/audit/").status_code == 200


def test_viewer_sees_every_read_only_page(client_as, snapshot) -> None:
    viewer = client_as("viewer")
    for path in PAGES[1:-1]:
        assert viewer.get(path).status_code == 200, path


def test_login_and_logout_are_written_to_the_audit_log(users, snapshot) -> None:
    from console.models import AuditEntry

    c = Client()
    assert c.post("/login/", {"username": "viewer", "password": "pw-viewer"}).status_code == 302
    c.post("/logout/")
    assert list(AuditEntry.objects.filter(username="viewer").values_list("action", flat=True).order_by("id")) == ["login", "logout"]
