"""Planning a reassignment through the API: from the watcher's snapshot, changing nothing."""

from __future__ import annotations

API = "/api/v1/clusters/local/reassignments/"


def post(client, body: dict):  # noqa: ANN001, ANN201
    return client.post(API, body, content_type="application/json")


def test_a_rebalance_plan_keeps_each_replication_factor_and_names_kafkas_json(client_as, snapshot) -> None:
    r = post(client_as("operator"), {"kind": "rebalance"})
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["plan"]["version"] == 1
    factor = {(t.name, p.partition): len(p.replicas) for t in snapshot.topics.values() for p in t.partitions}
    for p in body["plan"]["partitions"]:
        assert len(p["replicas"]) == factor[(p["topic"], p["partition"])] == len(set(p["replicas"])), p
    assert body["totals"]["partitions_changed"] == len(body["plan"]["partitions"])


def test_decommissioning_below_the_replication_factor_is_refused_with_the_reason(client_as, snapshot) -> None:
    r = post(client_as("operator"), {"kind": "decommission", "brokers": [3]})
    assert r.status_code == 400
    assert "too few for topic orders with replication factor 3" in r.json()["detail"]


def test_a_bad_plan_request_gets_a_sentence(client_as, snapshot) -> None:
    r = post(client_as("operator"), {"kind": "decommission", "brokers": [9]})
    assert r.status_code == 400 and "9" in r.json()["detail"], r.content
    r = post(client_as("operator"), {"kind": "sideways"})
    assert r.status_code == 400 and "rebalance" in r.json()["detail"]


def test_a_viewer_cannot_plan(client_as, snapshot) -> None:
    assert post(client_as("viewer"), {"kind": "rebalance"}).status_code == 403
