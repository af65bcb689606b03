"""Reassignment jobs through the API and pages, without Kafka: storing, listing, refusals, roles.

What a job does to a cluster is tested on the real one (tests/integration/test_reassignment.py)."""

from __future__ import annotations

import json

from brokers_app.models import ReassignmentJob
from console.models import AuditEntry

API = "/api/v1/clusters/local/reassignments/"


def post(client, path: str, body: dict):  # noqa: ANN001, ANN201
    return client.post(path, body, content_type="application/json")


def planned(client_as) -> dict:  # noqa: ANN001
    # Broker 3 is down in the sample snapshot; moving partition 3 of orders from [2, 1] to [1, 2] is legal.
    body = {"kind": "import", "plan": {"version": 1, "partitions": [{"topic": "orders", "partition": 3, "replicas": [1, 2]}]}}
    r = post(client_as("operator"), API, body)
    assert r.status_code == 201, r.content
    return r.json()


def test_a_plan_is_stored_listed_and_read_back(client_as, snapshot) -> None:
    p = planned(client_as)
    assert p["state"] == "planned" and p["plan"]["partitions"] == [{"topic": "orders", "partition": 3, "replicas": [1, 2]}]
    listed = client_as("viewer").get(API).json()["jobs"]
    assert [j["id"] for j in listed] == [p["id"]] and listed[0]["state"] == "planned"
    detail = client_as("viewer").get(f"{API}{p['id']}/").json()
    assert detail["partitions"][0]["before"] == [2, 1] and detail["partitions"][0]["after"] == [1, 2]
    assert detail["verification"] is None


def test_execute_queues_one_job_per_cluster_and_audits_it(client_as, snapshot) -> None:
    first, second = planned(client_as), planned(client_as)
    r = post(client_as("operator"), f"{API}{first['id']}/", {"action": "execute", "throttle_bytes_per_second": 1_000_000})
    assert r.status_code == 202, r.content
    assert r.json()["state"] == "queued" and r.json()["throttle_bytes_per_second"] == 1_000_000
    r = post(client_as("operator"), f"{API}{second['id']}/", {"action": "execute"})
    assert r.status_code == 409
    assert r.json()["detail"] == f"Job {first['id']} is queued on cluster 'local'; one job runs at a time."
    assert ReassignmentJob.objects.get(id=second["id"]).state == "planned", "the refused job did not change"
    r = post(client_as("operator"), f"{API}{first['id']}/", {"action": "execute"})
    assert r.status_code == 409 and "only a planned job can be executed" in r.json()["detail"]
    outcomes = list(AuditEntry.objects.filter(action="reassignment_execute").values_list("outcome", flat=True).order_by("id"))
    assert outcomes == ["ok", "refused", "refused"]
    entry = AuditEntry.objects.filter(action="reassignment_execute", outcome="ok").get()
    assert entry.details["plan"]["partitions"][0]["replicas"] == [1, 2], "the plan itself is in the audit log"


def test_cancel_of_a_queued_job_asks_the_worker_and_of_a_planned_one_discards_it(client_as, snapshot) -> None:
    a, b = planned(client_as), planned(client_as)
    r = post(client_as("operator"), f"{API}{b['id']}/", {"action": "cancel"})
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    post(client_as("operator"), f"{API}{a['id']}/", {"action": "execute"})
    r = post(client_as("operator"), f"{API}{a['id']}/", {"action": "cancel"})
    assert r.status_code == 202 and r.json()["state"] == "cancelling"
    r = post(client_as("operator"), f"{API}{b['id']}/", {"action": "cancel"})
    assert r.status_code == 409 and "nothing to cancel" in r.json()["detail"]


def test_bad_input_gets_a_sentence_and_changes_nothing(client_as, snapshot) -> None:
    op = client_as("operator")
    cases: list[tuple[dict, str]] = [
        ({"kind": "replication_factor", "topics": ["orders"], "replication_factor": 4}, "4"),
        ({"kind": "decommission", "brokers": [9]}, "9"),
        ({"kind": "decommission", "brokers": [1, 2, 3]}, "would leave no broker"),
        ({"kind": "import"}, "needs 'plan'"),
        ({"kind": "import", "plan": {"version": 1, "partitions": [{"topic": "orders", "partition": 3, "replicas": [1, 1]}]}},
         "Partition orders-3 lists broker 1 twice."),
        ({"kind": "import", "plan": {"version": 1, "partitions": [{"topic": "orders", "partition": 3, "replicas": [1, 7]}]}},
         "broker 7, which is not in the cluster"),
        ({"kind": "import", "plan": {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2]}]}},
         "instead of its replication factor 3"),
        # Broker 3 is down in the sample snapshot.
        ({"kind": "replication_factor", "topics": ["orders"], "replication_factor": 3},
         "Replication factor 3 is more than the 2 live brokers (broker 3 is down)."),
        ({"kind": "import", "plan": {"version": 1, "partitions": [{"topic": "orders", "partition": 3, "replicas": [1, 3]}]}},
         "The plan puts a replica of orders-3 on broker 3, which is down: bring it back first, or decommission it."),
    ]
    for body, words in cases:
        r = post(op, API, body)
        assert r.status_code == 400, (body, r.content)
        assert words in r.json()["detail"], (body, r.json())
    assert ReassignmentJob.objects.count() == 0
    for body in ({"action": "sideways"}, {"action": "execute", "max_moves_per_broker": 0}, {"action": "execute", "throttle_bytes_per_second": 5}):
        p = planned(client_as)
        r = post(op, f"{API}{p['id']}/", body)
        assert r.status_code == 400, (body, r.content)
    assert post(op, f"{API}99999/", {"action": "execute"}).status_code == 404
    assert client_as("viewer").get(f"{API}{2**70}/").status_code == 404


def test_a_viewer_reads_but_cannot_execute_or_cancel(client_as, snapshot) -> None:
    p = planned(client_as)
    assert client_as("viewer").get(f"{API}{p['id']}/").status_code == 200
    for action in ("execute", "cancel"):
        assert post(client_as("viewer"), f"{API}{p['id']}/", {"action": action}).status_code == 403
    assert ReassignmentJob.objects.get(id=p["id"]).state == "planned"


def test_the_pages_show_the_plan_its_chart_data_and_the_exported_json(client_as, snapshot) -> None:
    p = planned(client_as)
    page = client_as("viewer").get(f"/clusters/local/reassignments/{p['id']}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="plan-chart"' in html and 'id="plan-brokers"' in html and "Execute" not in html, "a viewer gets no execute form"
    op_page = client_as("operator").get(f"/clusters/local/reassignments/{p['id']}/").content.decode()
    assert 'id="execute-form"' in op_page
    exported = client_as("viewer").get(f"/clusters/local/reassignments/{p['id']}/plan.json")
    assert json.loads(exported.content) == p["plan"]
    assert exported["Content-Disposition"].startswith("attachment;")
    listing = client_as("viewer").get("/clusters/local/reassignments/?preview=1&kind=rebalance").content.decode()
    assert 'id="plan-preview"' in listing
    refused = client_as("viewer").get("/clusters/local/reassignments/?preview=1&kind=decommission&brokers=x")
    assert refused.status_code == 400 and "whole numbers" in refused.content.decode()
    r = client_as("operator").post("/clusters/local/reassignments/", {"kind": "rebalance"})
    assert r.status_code == 302 and "/clusters/local/reassignments/" in r["Location"]
