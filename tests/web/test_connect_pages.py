"""Kafka Connect pages and API without Kafka: bad input is a 400 sentence before Connect is asked, roles
hold, secrets never leave the console unmasked, Connect's validation reaches its field, and a Connect
that does not answer is a sentence, never a 500. Connect is tests/connect_double.py."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from connect_app import masking, state
from connect_app.types import ConnectClusterState, ConnectorState, TaskState
from console import snapshots
from console.connect_config import ConnectConfig
from tests.connect_double import SINK, SOURCE, ConnectDouble, running_double

API = "/api/v1/clusters/local/connectors/"


def _forget_reads() -> None:
    r = snapshots.redis_client()
    for key in r.scan_iter("connect:local:*"):
        r.delete(key)


@pytest.fixture
def double(redis_server: str) -> Iterator[ConnectDouble]:
    with running_double() as d, override_settings(KAFKA_CONNECT={"local": (ConnectConfig("local", d.url),)}):
        _forget_reads()
        yield d
        _forget_reads()


@pytest.fixture
def nobody_there(redis_server: str) -> Iterator[str]:
    url = "http://127.0.0.1:1"
    with override_settings(KAFKA_CONNECT={"local": (ConnectConfig("local", url),)}):
        _forget_reads()
        yield url
        _forget_reads()


def _post(client: Any, path: str, body: Any, method: str = "post") -> Any:
    return getattr(client, method)(path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(("method", "path", "body", "sentence"), [
    ("post", "orders-sink/", {"action": "explode"}, "Unknown action 'explode'; the actions are pause, resume, stop, restart."),
    ("post", "orders-sink/", {}, "'action': This field is required."),
    ("post", "orders-sink/", {"action": "stop", "task": 1},
     "'task' goes with the restart action only: Connect pauses, resumes and stops whole connectors."),
    ("post", "orders-sink/", {"action": "pause", "include_tasks": True}, "'include_tasks' and 'only_failed' go with the restart action only."),
    ("post", "orders-sink/", {"action": "restart", "task": 0, "only_failed": True},
     "'include_tasks' and 'only_failed' restart a connector's tasks; they do not go with 'task'."),
    ("post", "orders-sink/", {"action": "restart", "task": -1}, "'task' must be at least 0."),
    ("post", "orders-sink/", {"action": "restart", "include_tasks": "yes"}, "'include_tasks' must be true or false."),
    ("post", "", {"config": {"connector.class": SINK}}, "'name': This field is required."),
    ("post", "", {"name": " ", "config": {"connector.class": SINK}}, "The connector name is empty."),
    ("post", "", {"name": "a\nb", "config": {"connector.class": SINK}}, "The connector name contains a control character."),
    ("post", "", {"name": "x", "config": {}}, "The connector config is empty: it needs at least connector.class."),
    ("post", "", {"name": "x", "config": {"topics": "t"}},
     "'config.connector.class' is missing: name the connector's plugin (see the plugins list)."),
    ("post", "", {"name": "x", "config": ["connector.class"]}, "'config': Expected a dictionary of items but got type \"list\"."),
    ("post", "", {"name": "x", "config": {"tasks.max": {"n": 1}}}, "'config.tasks.max' must be a string or a number."),
    ("post", "", {"name": "x", "config": {"connector.class": SINK}, "colour": "red"},
     "'colour' is not a field of this request; the fields are config, name."),
    ("put", "orders-sink/", {"config": {}}, "The connector config is empty: it needs at least connector.class."),
])
def test_bad_input_is_a_400_sentence_before_connect_is_asked(client_as: Any, double: ConnectDouble, method: str, path: str,
                                                             body: Any, sentence: str) -> None:
    answer = _post(client_as("operator"), API + path, body, method)
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"] == sentence
    assert [r for r in double.requests if r[0] != "GET"] == []


def test_a_viewer_lists_connectors_but_changes_none(client_as: Any, double: ConnectDouble) -> None:
    double.add("orders-sink")
    viewer = client_as("viewer")
    assert viewer.get(API).status_code == 200
    assert viewer.get(API + "orders-sink/").status_code == 200
    for method, path, body in (("post", "", {"name": "x", "config": {"connector.class": SINK}}),
                               ("post", "orders-sink/", {"action": "pause"}), ("put", "orders-sink/", {"config": {"a": "b"}}),
                               ("delete", "orders-sink/", {})):
        assert _post(viewer, API + path, body, method).status_code == 403
    assert viewer.get("/clusters/local/connect/new/").status_code == 403
    assert double.connectors["orders-sink"]["status"]["connector"]["state"] == "RUNNING"


def test_the_list_is_the_watchers_last_read(client_as: Any, double: ConnectDouble) -> None:
    kept = ConnectClusterState(cluster="local", name="local", url=double.url, reachable=True, checked_at=1.0, read_at=1.0,
                               version="4.3.1", connectors=(
                                   ConnectorState("a-sink", "sink", "RUNNING", "w1", tasks=(TaskState(0, "FAILED", "w1", "boom"),),
                                                  plugin=SINK),
                                   ConnectorState("b-source", "source", "PAUSED", "w2", tasks=(TaskState(0, "PAUSED", "w2"),),
                                                  plugin=SOURCE)))
    state.store(kept)
    listed = client_as("viewer").get(API).json()
    assert listed["connectors"] == [
        {"name": "a-sink", "connect": "local", "type": "sink", "plugin": SINK, "state": "RUNNING", "worker_id": "w1", "trace": None,
         "tasks": [{"id": 0, "state": "FAILED", "worker_id": "w1", "trace": "boom"}]},
        {"name": "b-source", "connect": "local", "type": "source", "plugin": SOURCE, "state": "PAUSED", "worker_id": "w2",
         "trace": None, "tasks": [{"id": 0, "state": "PAUSED", "worker_id": "w2", "trace": None}]},
    ]
    assert client_as("viewer").get(API + "?state=PAUSED").json()["connectors"][0]["name"] == "b-source"
    assert client_as("viewer").get(API + "?state=SIDEWAYS").status_code == 400
    assert double.requests == []  # the list never asked Connect
    shown = client_as("viewer").get("/clusters/local/connect/").content.decode()
    assert 'data-connector="a-sink" data-state="RUNNING"' in shown and 'data-task="0" data-state="FAILED"' in shown


def test_secrets_are_masked_and_config_provider_references_named(client_as: Any, double: ConnectDouble) -> None:
    double.password_keys[SINK] = ["vault.token.value"]
    double.add("db-sink", config={"connection.password": "hunter2", "vault.token.value": "s3cr3t-token",
                                  "connection.user": "${file:/etc/connect/db.properties:user}", "topics": "orders"})
    answer = client_as("viewer").get(API + "db-sink/")
    body = answer.json()
    assert body["config"]["connection.password"] == masking.MASK and body["config"]["vault.token.value"] == masking.MASK
    assert body["config"]["connection.user"] == "${file:/etc/connect/db.properties:user}"
    assert sorted(body["secrets"]) == ["connection.password", "vault.token.value"] and body["references"] == ["connection.user"]
    page = client_as("viewer").get("/clusters/local/connect/local/db-sink/").content.decode()
    for text in (answer.content.decode(), page):
        assert "hunter2" not in text and "s3cr3t-token" not in text
    assert "config provider" in page
    # Written back as read, the masked secrets keep their values; the audit log keeps them masked too.
    config = {k: v for k, v in body["config"].items() if k != "name"}
    config["topics"] = "orders,refunds"
    saved = _post(client_as("operator"), API + "db-sink/", {"config": config}, "put")
    assert saved.status_code == 200, saved.content
    assert double.connectors["db-sink"]["config"]["connection.password"] == "hunter2"
    assert double.connectors["db-sink"]["config"]["vault.token.value"] == "s3cr3t-token"
    audit = json.dumps(client_as("admin").get("/api/v1/audit/?q=db-sink").json())
    assert "connector_update" in audit and "hunter2" not in audit and "s3cr3t-token" not in audit


def test_connects_validation_errors_come_back_per_field(client_as: Any, double: ConnectDouble) -> None:
    double.validation_errors["topics"] = ['Must configure one of topics or topics.regex']
    answer = _post(client_as("operator"), API, {"name": "orders-sink", "config": {"connector.class": SINK, "file": "/tmp/o"}})
    assert answer.status_code == 400
    assert answer.json() == {"detail": "Connect refused the config: 'topics': Must configure one of topics or topics.regex",
                             "errors": {"topics": ["Must configure one of topics or topics.regex"]}}
    assert "orders-sink" not in double.connectors
    page = client_as("operator").post(f"/clusters/local/connect/new/?plugin={SINK}",
                                      {"connect": "local", "plugin": SINK, "name": "orders-sink", "cfg:file": "/tmp/o"})
    assert page.status_code == 400
    shown = page.content.decode()
    at = shown.index('data-field="topics"')
    assert "Must configure one of topics or topics.regex" in shown[at:at + 1500]


def test_actions_reach_connect_and_are_audited(client_as: Any, double: ConnectDouble) -> None:
    double.add("orders-sink", tasks=["FAILED", "RUNNING"])
    operator = client_as("operator")
    for body, request, message in (
        ({"action": "pause"}, ("PUT", "/connectors/orders-sink/pause"), "Paused connector 'orders-sink'."),
        ({"action": "restart", "include_tasks": True, "only_failed": True},
         ("POST", "/connectors/orders-sink/restart?includeTasks=true&onlyFailed=true"),
         "Restarted connector 'orders-sink' and its failed tasks."),
        ({"action": "restart", "task": 1}, ("POST", "/connectors/orders-sink/tasks/1/restart"), "Restarted task 1 of connector 'orders-sink'."),
    ):
        answer = _post(operator, API + "orders-sink/", body)
        assert answer.status_code == 202 and answer.json()["message"] == message
        assert request in [(m, p) for m, p, _ in double.requests]
    page = operator.post("/clusters/local/connect/local/orders-sink/delete/", {"confirm": "orders"})
    assert page.status_code == 400 and "Type the connector&#x27;s name, &#x27;orders-sink&#x27;, to confirm." in page.content.decode()
    assert operator.post("/clusters/local/connect/local/orders-sink/delete/", {"confirm": "orders-sink"}).status_code == 302
    assert "orders-sink" not in double.connectors
    entries = client_as("admin").get("/api/v1/audit/?q=orders-sink&per_page=50").json()["entries"]
    assert {e["action"] for e in entries} >= {"connector_pause", "connector_restart", "connector_restart_task", "connector_delete"}


def test_a_connect_that_does_not_answer_is_a_sentence_not_a_500(client_as: Any, nobody_there: str) -> None:
    sentence = f"Connect cluster 'local' at {nobody_there} is unreachable (connection refused)."
    viewer = client_as("viewer")
    listed = viewer.get(API).json()
    assert listed["connect_clusters"][0]["reachable"] is False and listed["connect_clusters"][0]["error"] == sentence
    for path in (API + "orders-sink/", "/api/v1/clusters/local/connect-plugins/"):
        answer = viewer.get(path)
        assert answer.status_code == 503 and answer.json() == {"detail": sentence}
    for path in ("/clusters/local/connect/", "/clusters/local/connect/local/orders-sink/", "/clusters/local/connect/plugins/"):
        page = viewer.get(path)
        assert page.status_code in (200, 404) and html.escape(sentence) in page.content.decode(), path


def test_a_cluster_without_connect_says_so(client_as: Any, redis_server: str) -> None:
    with override_settings(KAFKA_CONNECT={"local": ()}):
        viewer = client_as("viewer")
        assert viewer.get(API).json() == {"connect_clusters": [], "connectors": []}
        answer = viewer.get(API + "orders-sink/")
        assert answer.status_code == 404
        assert answer.json()["detail"].startswith("Cluster 'local' has no Kafka Connect cluster configured")
        assert "has no Kafka Connect cluster configured" in viewer.get("/clusters/local/connect/").content.decode()


def test_the_edit_form_shows_secrets_masked_and_keeps_them_when_left_as_shown(client_as: Any, double: ConnectDouble) -> None:
    double.add("db-sink", config={"connection.password": "hunter2", "topics": "orders", "file": "/tmp/out"})
    operator = client_as("operator")
    form = operator.get("/clusters/local/connect/local/db-sink/edit/")
    shown = form.content.decode()
    assert form.status_code == 200 and "hunter2" not in shown
    assert f'name="cfg:connection.password" value="{masking.MASK}" type="password"' in shown
    saved = operator.post("/clusters/local/connect/local/db-sink/edit/",
                          {"connect": "local", "plugin": SINK, "name": "db-sink", "cfg:connection.password": masking.MASK,
                           "cfg:topics": "orders,refunds", "cfg:file": "/tmp/out", "extra": "producer.override.linger.ms=5"})
    assert saved.status_code == 302, saved.content.decode()[:500]
    config = double.connectors["db-sink"]["config"]
    assert config["connection.password"] == "hunter2" and config["topics"] == "orders,refunds"
    assert config["producer.override.linger.ms"] == "5"
    bad = operator.post("/clusters/local/connect/local/db-sink/edit/",
                        {"connect": "local", "plugin": SINK, "name": "db-sink", "extra": "no equals sign here"})
    assert bad.status_code == 400 and "Line 1 of the other settings is not key=value" in bad.content.decode()
    assert "hunter2" not in bad.content.decode()
