"""A change made on a page and the same change through the API leave the same audit entry: the
service that makes the change records it, once (brokers_app/services.py)."""

from __future__ import annotations

from typing import Any

import pytest

from brokers_app.models import ReassignmentJob
from console.models import AuditEntry
from console.snapshots.model import Snapshot
from tests.web.kafka_double import KafkaDouble, replace_gateway

API = "/api/v1/clusters/local/"
PAGE = "/clusters/local/"


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch, snapshot: Snapshot) -> KafkaDouble:
    return replace_gateway(monkeypatch)


def entries(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action).order_by("id"))


def planned(client_as) -> int:  # noqa: ANN001
    # Broker 3 is down in the sample snapshot; moving partition 3 of orders from [2, 1] to [1, 2] is legal.
    body = {"kind": "import", "plan": {"version": 1, "partitions": [{"topic": "orders", "partition": 3, "replicas": [1, 2]}]}}
    r = client_as("operator").post(f"{API}reassignments/", body, content_type="application/json")
    assert r.status_code == 201, r.content
    return int(r.json()["id"])


def test_a_preferred_election_is_audited_alike_from_the_page_and_the_api(client_as, kafka: KafkaDouble) -> None:
    page = client_as("operator").post(f"{PAGE}reassignments/", {"action": "election"})
    assert page.status_code == 200, page.content
    api = client_as("operator").post(f"{API}leader-elections/", {"type": "preferred"}, content_type="application/json")
    assert api.status_code == 200, api.content
    by_page, by_api = entries("elect_leaders")
    assert (by_page.target, by_page.outcome, by_page.details) == (by_api.target, by_api.outcome, by_api.details)
    assert by_page.target == "preferred" and by_page.details["topics"] == [] and "elected" in by_page.details


def test_executing_a_job_is_audited_alike_from_the_page_and_the_api(client_as, snapshot: Snapshot) -> None:
    first, second = planned(client_as), planned(client_as)
    r = client_as("operator").post(f"{PAGE}reassignments/{first}/", {"action": "execute", "throttle_mb": "1", "max_moves": "2"})
    assert r.status_code == 302, r.content
    ReassignmentJob.objects.filter(id=first).update(active=False, state=ReassignmentJob.CANCELLED)  # one job runs at a time
    r = client_as("operator").post(f"{API}reassignments/{second}/", {"action": "execute", "throttle_bytes_per_second": 1024 * 1024,
                                                                       "max_moves_per_broker": 2}, content_type="application/json")
    assert r.status_code == 202, r.content

    def without_job(entry: AuditEntry) -> dict[str, Any]:
        return {k: v for k, v in entry.details.items() if k != "job"}

    by_page, by_api = entries("reassignment_execute")
    assert (by_page.outcome, by_api.outcome) == ("ok", "ok")
    assert without_job(by_page) == without_job(by_api)
    assert by_page.details["throttle"] == 1024 * 1024 and by_page.details["max_moves_per_broker"] == 2
    assert (by_page.target, by_api.target) == (f"job {first}", f"job {second}")


def test_cancelling_a_job_is_audited_alike_from_the_page_and_the_api(client_as, snapshot: Snapshot) -> None:
    first, second = planned(client_as), planned(client_as)
    assert client_as("operator").post(f"{PAGE}reassignments/{first}/", {"action": "cancel"}).status_code == 302
    r = client_as("operator").post(f"{API}reassignments/{second}/", {"action": "cancel"}, content_type="application/json")
    assert r.status_code == 200, r.content
    by_page, by_api = entries("reassignment_cancel")
    assert (by_page.outcome, by_page.details["totals"]) == (by_api.outcome, by_api.details["totals"])
    assert by_page.details.keys() == by_api.details.keys()
