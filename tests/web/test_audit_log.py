"""The audit log's page and API: filters, search, pages, client address and user agent, bad filters."""

from __future__ import annotations

import html
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from console.models import AuditEntry

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def admin(client_as) -> Client:  # noqa: ANN001
    """An admin's client, over 600 entries (more than the old page's 500), a few of them distinct."""
    client = client_as("admin")
    AuditEntry.objects.all().delete()  # (the login's own entry)
    rows = [AuditEntry(username="operator", cluster="local", action="create_topic", target=f"t{i}",
                       details={"partitions": 3}, outcome="ok") for i in range(596)]
    rows += [
        AuditEntry(username="admin", cluster="local", action="delete_topic", target="payments", details={"reason": "cleanup"},
                   outcome="ok", client_ip="192.0.2.44", user_agent="curl/8.5"),
        AuditEntry(username="operator", cluster="other", action="reset_offsets", target="billing-group",
                   details={"strategy": "earliest"}, outcome="refused"),
        AuditEntry(username="viewer", action="login_lockout", outcome="refused", client_ip="203.0.113.9"),
        AuditEntry(username="operator", cluster="local", action="purge", target="audit-me", outcome="failed",
                   details={"error": "Broker unreachable"}),
    ]
    AuditEntry.objects.bulk_create(rows)
    # Spread in time: the nth entry n minutes after T0 (auto_now_add set them all to now).
    for n, pk in enumerate(AuditEntry.objects.order_by("id").values_list("id", flat=True)):
        AuditEntry.objects.filter(pk=pk).update(at=T0 + timedelta(minutes=n))
    return client


def test_the_api_pages_through_every_entry(admin: Client) -> None:
    first = admin.get("/api/v1/audit/?per_page=500").json()
    assert (first["total"], first["pages"], len(first["entries"])) == (600, 2, 500)
    second = admin.get("/api/v1/audit/?per_page=500&page=2").json()
    assert len(second["entries"]) == 100
    ids = [e["id"] for e in first["entries"] + second["entries"]]
    assert len(set(ids)) == 600 and ids == sorted(ids, reverse=True)


def test_the_api_filters_by_user_action_outcome_cluster_and_time(admin: Client) -> None:

    def targets(query: str) -> list[str]:
        response = admin.get("/api/v1/audit/?" + query)
        assert response.status_code == 200, response.content
        return [e["target"] for e in response.json()["entries"]]

    assert targets("user=admin") == ["payments"]
    assert targets("action=reset_offsets") == ["billing-group"]
    assert targets("outcome=failed") == ["audit-me"]
    assert targets("cluster=other") == ["billing-group"]
    assert targets("since=2026-03-01T12:02:00Z&until=2026-03-01T12:04:00Z") == ["t4", "t3", "t2"]
    assert len(targets("until=2026-03-01&per_page=500")) == 500  # a date runs to its end
    assert targets("since=2026-03-02") == []
    assert targets("q=CLEANUP") == ["payments"]  # details, any case
    assert targets("q=billing") == ["billing-group"]  # target


def test_the_api_shows_the_client_address_and_user_agent(admin: Client) -> None:
    entry = admin.get("/api/v1/audit/?user=admin").json()["entries"][0]
    assert (entry["client_ip"], entry["user_agent"], entry["details"]) == ("192.0.2.44", "curl/8.5", {"reason": "cleanup"})


@pytest.mark.parametrize(("query", "named"), [
    ("outcome=maybe", "'outcome'"),
    ("since=yesterday", "'since'"),
    ("until=2026-13-45", "'until'"),
    ("since=2026-03-02&until=2026-03-01", "'since'"),
    ("page=0", "'page'"),
    ("per_page=100000", "'per_page'"),
    ("user=" + "x" * 200, "'user'"),
    ("action=drop%20table", "'action'"),
])
def test_a_bad_filter_is_a_400_that_names_it(admin: Client, query: str, named: str) -> None:
    api = admin.get("/api/v1/audit/?" + query)
    assert api.status_code == 400 and named in api.json()["detail"]
    page = admin.get("/audit/?" + query)
    assert page.status_code == 400 and named in html.unescape(page.content.decode())


def test_the_page_filters_searches_and_pages(admin: Client) -> None:
    page = admin.get("/audit/").content.decode()
    assert "600 entries" in page and "page 1 of 12" in page and "older →" in page

    found = admin.get("/audit/?q=cleanup").content.decode()
    assert "1 entry matching" in found and "payments" in found and "192.0.2.44" in found and "curl/8.5" in found
    assert "t17" not in found

    last = admin.get("/audit/?user=operator&page=12").content.decode()
    assert "page 12 of 12" in last and "← newer" in last and "user=operator" in last


def test_the_audit_log_is_for_admins_only(admin: Client, client_as) -> None:  # noqa: ANN001
    assert client_as("operator").get("/api/v1/audit/").status_code == 403
    assert client_as("operator").get("/audit/").status_code == 403
