"""Leader elections refuse what they must before Kafka is asked: unclean needs admin and the
cluster's name typed again (with the data-loss warning), and names its partitions."""

from __future__ import annotations

import pytest

API = "/api/v1/clusters/local/leader-elections/"


def post(client, body: dict):  # noqa: ANN001, ANN201
    return client.post(API, body, content_type="application/json")


def test_an_operator_may_not_run_an_unclean_election(client_as, snapshot) -> None:
    r = post(client_as("operator"), {"type": "unclean", "topics": ["orders"], "confirm": "local"})
    assert r.status_code == 403 and "admin" in r.json()["detail"]


def test_an_unclean_election_without_the_typed_name_warns_of_data_loss(client_as, snapshot) -> None:
    r = post(client_as("admin"), {"type": "unclean", "topics": ["orders"], "confirm": "yes"})
    assert r.status_code == 400
    assert "gone for good" in r.json()["detail"] and "'local'" in r.json()["detail"]


def test_an_unclean_election_over_the_whole_cluster_is_refused(client_as, snapshot) -> None:
    r = post(client_as("admin"), {"type": "unclean", "confirm": "local"})
    assert r.status_code == 400 and "names its topics or partitions" in r.json()["detail"]


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"topics": ["no-such-topic"]}, 404, "no-such-topic"),
    ({"partitions": [{"topic": "orders", "partition": 999}]}, 400, "no partition 999"),
    ({"partitions": [{"topic": "orders"}]}, 400, "'partitions"),
    ({"type": "sideways"}, 400, "preferred or unclean"),
])
def test_bad_election_requests_get_a_sentence(client_as, snapshot, body: dict, status: int, words: str) -> None:
    r = post(client_as("operator"), body)
    assert r.status_code == status, r.content
    assert words in r.json()["detail"]
