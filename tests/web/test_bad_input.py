"""Unknown clusters and topics get a 404 with a sentence; malformed parameters a 400; never a 500."""

from __future__ import annotations

import pytest

from console.snapshots import loader


@pytest.mark.parametrize(
    "path",
    ["/api/v1/clusters/nope/", "/api/v1/clusters/nope/brokers/", "/api/v1/clusters/nope/events/",
     "/api/v1/clusters/nope/topics/orders/partitions/"],
)
def test_unknown_cluster_in_the_api_is_a_404_naming_it(client_as, snapshot, path: str) -> None:
    response = client_as("viewer").get(path)
    assert response.status_code == 404
    assert "no cluster named 'nope'" in response.json()["detail"]


def test_unknown_cluster_page_is_a_404_page_naming_it(client_as, snapshot) -> None:
    response = client_as("viewer").get("/clusters/nope/")
    assert response.status_code == 404
    assert b"no cluster named &#x27;nope&#x27;" in response.content


def test_unknown_topic_is_a_404_naming_it(client_as, snapshot) -> None:
    response = client_as("viewer").get("/api/v1/clusters/local/topics/missing.topic/partitions/")
    assert response.status_code == 404
    assert response.json()["detail"] == "Topic 'missing.topic' does not exist on cluster 'local'."


def test_unknown_api_path_is_a_json_404(client_as, snapshot) -> None:
    response = client_as("viewer").get("/api/v1/nothing-here/")
    assert response.status_code == 404
    assert response.json()["detail"]


@pytest.mark.parametrize(
    ("query", "word"),
    [
        ("broker=abc", "broker"),
        ("broker=-1", "broker"),
        ("limit=0", "limit"),
        ("limit=5000", "limit"),
        ("limit=ten", "limit"),
        ("before=x", "before"),
        ("kind=broker_exploded", "kind"),
        ("topic=bad%20name%21", "topic"),
    ],
)
def test_malformed_event_filters_are_a_400_naming_the_parameter(client_as, snapshot, query: str, word: str) -> None:
    response = client_as("viewer").get(f"/api/v1/clusters/local/events/?{query}")
    assert response.status_code == 400
    assert f"'{word}'" in response.json()["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/clusters/local/layout/?page=abc",
        "/clusters/local/layout/?page=0",
        "/clusters/local/layout/?internal=maybe",
        "/clusters/local/at-risk/?broker=abc",
        "/clusters/local/at-risk/?broker=99",
        "/clusters/local/events/?broker=x",
        "/clusters/local/events/?kind=nope",
    ],
)
def test_malformed_page_parameters_are_a_400_page_with_the_reason(client_as, snapshot, path: str) -> None:
    response = client_as("viewer").get(path)
    assert response.status_code == 400
    assert b"That did not work" in response.content
    assert b"Traceback" not in response.content


def test_api_answers_503_with_a_reason_before_the_first_snapshot(client_as, redis_server) -> None:
    from console.snapshots import store

    store.client().delete("console:snapshot:local", "console:snapshot:local:stamp")
    loader._cache.clear()
    response = client_as("viewer").get("/api/v1/clusters/local/")
    assert response.status_code == 503
    assert "no snapshot" in response.json()["detail"]
