"""A connector's offsets and auto-restart policy without Kafka (Connect is tests/connect_double.py): bad
input and a connector not stopped are sentences, roles hold, previews change nothing, and the
auto-restart engine keeps its schedule across a restarted console (its counts are in the database)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from brokers_app.models import Event
from connect_app import state
from connect_app.models import RestartPolicy, TaskRestarts
from connect_app.restarts import Restarter, failing_tasks
from connect_app.types import ConnectClusterState, ConnectorState, TaskState
from console import snapshots
from console.connect_config import ConnectConfig
from tests.connect_double import SINK, SOURCE, ConnectDouble, running_double

API = "/api/v1/clusters/local/connectors/"
PAGE = "/clusters/local/connect/local/"
SINK_OFFSET = {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 7}}


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


def _send(client: Any, method: str, path: str, body: Any = None) -> Any:
    return getattr(client, method)(path, json.dumps(body if body is not None else {}), content_type="application/json")


def _changes(double: ConnectDouble) -> list[tuple[str, str, Any]]:
    return [r for r in double.requests if r[0] in ("PATCH", "DELETE")]


@pytest.mark.parametrize(("body", "sentence"), [
    ({"offsets": []}, "'offsets' must be a non-empty list of {\"partition\": {...}, \"offset\": {...} or null}."),
    ({"offsets": {"a": 1}}, "'offsets' must be a non-empty list of {\"partition\": {...}, \"offset\": {...} or null}."),
    ({"offsets": [{"partition": {}}]}, "offsets[0] must be an object with exactly 'partition' and 'offset'."),
    ({"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": -1}}]},
     "offsets[0].offset of a sink connector must be {\"kafka_offset\": N} with N 0 or more, or null."),
    ({"offsets": [{"partition": {"filename": "/tmp/x"}, "offset": {"position": 0}}]},
     "offsets[0].partition of a sink connector must have exactly 'kafka_topic' and 'kafka_partition'."),
    ({"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": "0"}, "offset": None}]},
     "offsets[0].partition.kafka_partition must be a partition number (0 or more)."),
    ({"offsets": [SINK_OFFSET, SINK_OFFSET]}, "offsets[1] names the same partition as an earlier entry."),
    ({"offsets": [SINK_OFFSET], "colour": "red"}, "'colour' is not a field of this request; the fields are dry_run, offsets."),
    ({}, "'offsets': This field is required."),
])
def test_a_bad_offsets_body_is_a_400_sentence(client_as: Any, double: ConnectDouble, body: Any, sentence: str) -> None:
    double.add("orders-sink", state="STOPPED", tasks=[])
    answer = _send(client_as("operator"), "patch", API + "orders-sink/offsets/", body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"] == sentence
    assert _changes(double) == []


def test_a_connector_not_stopped_is_told_to_stop_first(client_as: Any, double: ConnectDouble) -> None:
    double.add("orders-sink")
    double.offsets["orders-sink"] = [SINK_OFFSET]
    operator = client_as("operator")
    sentence = ("Connector 'orders-sink' is RUNNING: stop it first (Connect changes a connector's offsets only while it is "
                "STOPPED), then resume it after the change.")
    for method, body in (("patch", {"offsets": [SINK_OFFSET]}), ("delete", {"confirm": "orders-sink"})):
        answer = _send(operator, method, API + "orders-sink/offsets/", body)
        assert answer.status_code == 409, answer.content
        assert answer.json()["detail"] == sentence
    # A preview works in any state, and says so.
    preview = _send(operator, "delete", API + "orders-sink/offsets/?dry_run=true")
    assert preview.status_code == 200 and preview.json()["blocked"] == sentence
    assert _changes(double) == []
    audit = client_as("admin").get("/api/v1/audit/?q=orders-sink").json()["entries"]
    assert {(e["action"], e["outcome"]) for e in audit} == {("connector_offsets_alter", "refused"), ("connector_offsets_reset", "refused")}


def test_preview_then_alter_and_reset_a_stopped_sink(client_as: Any, double: ConnectDouble) -> None:
    double.add("orders-sink", state="STOPPED", tasks=[])
    double.offsets["orders-sink"] = [SINK_OFFSET]
    operator, path = client_as("operator"), API + "orders-sink/offsets/"
    new: list[dict[str, Any]] = [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 3}},
           {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": {"kafka_offset": 0}}]
    preview = _send(operator, "patch", path, {"offsets": new, "dry_run": True}).json()
    assert preview["changes"] == [
        {"partition": new[0]["partition"], "current": {"kafka_offset": 7}, "new": {"kafka_offset": 3}, "change": "set"},
        {"partition": new[1]["partition"], "current": None, "new": {"kafka_offset": 0}, "change": "add"}]
    assert preview["blocked"] is None and _changes(double) == []
    done = _send(operator, "patch", path, {"offsets": new})
    assert done.status_code == 200, done.content
    assert done.json()["message"] == "Altered the offsets of 2 partitions of connector 'orders-sink'; resume it to carry on from them."
    assert client_as("viewer").get(path).json()["offsets"] == sorted(new, key=lambda o: o["partition"]["kafka_partition"])
    wrong = _send(operator, "delete", path, {"confirm": "orders"})
    assert wrong.status_code == 400
    assert wrong.json()["detail"] == "Type the connector's name, 'orders-sink', to confirm the reset of its offsets."
    assert _send(operator, "delete", path + "?confirm=orders-sink").status_code == 200
    assert double.offsets["orders-sink"] == []
    actions = {e["action"] for e in client_as("admin").get("/api/v1/audit/?q=orders-sink").json()["entries"] if e["outcome"] == "ok"}
    assert actions == {"connector_offsets_alter", "connector_offsets_reset"}


def test_roles_and_the_page_preview(client_as: Any, double: ConnectDouble) -> None:
    double.add("file-source", plugin=SOURCE, state="STOPPED", tasks=[])
    double.offsets["file-source"] = [{"partition": {"filename": "/tmp/in.txt"}, "offset": {"position": 12}}]
    viewer, operator = client_as("viewer"), client_as("operator")
    assert viewer.get(API + "file-source/offsets/").json()["offsets"][0]["offset"] == {"position": 12}
    assert _send(viewer, "delete", API + "file-source/offsets/", {"confirm": "file-source"}).status_code == 403
    assert _send(viewer, "put", API + "file-source/restart-policy/", {"enabled": True}).status_code == 403
    assert viewer.post(PAGE + "file-source/offsets/", {"op": "preview_reset"}).status_code == 403
    shown = viewer.get(PAGE + "file-source/").content.decode()
    assert 'id="offsets"' in shown and "&quot;position&quot;: 12" in shown and 'id="offsets-alter"' not in shown
    page = operator.post(PAGE + "file-source/offsets/", {"op": "preview_reset"})
    text = page.content.decode()
    assert page.status_code == 200 and 'id="offsets-preview"' in text and 'data-change="remove"' in text
    assert 'id="offsets-reset-apply"' in text and _changes(double) == []
    refused = operator.post(PAGE + "file-source/offsets/", {"op": "reset", "confirm": "nope"})
    assert refused.status_code == 400 and "Type the connector&#x27;s name" in refused.content.decode()
    bad_json = operator.post(PAGE + "file-source/offsets/", {"op": "preview_alter", "offsets": "[{"})
    assert bad_json.status_code == 400 and "The offsets are not JSON" in bad_json.content.decode()
    done = operator.post(PAGE + "file-source/offsets/", {"op": "reset", "confirm": "file-source"})
    assert done.status_code == 302 and double.offsets["file-source"] == []


@pytest.mark.parametrize(("body", "sentence"), [
    ({"max_restarts": -1}, "'max_restarts' must be 1 or more restarts."),
    ({"max_restarts": 2.5}, "'max_restarts' must be a whole number of restarts."),
    ({"window_seconds": "soon"}, "'window_seconds' must be a number of seconds, not 'soon'."),
    ({"backoff_seconds": 0}, "'backoff_seconds' must be 0.1 or more seconds."),
    ({"backoff_seconds": 30, "max_backoff_seconds": 10}, "'max_backoff_seconds' (10) must be at least 'backoff_seconds' (30)."),
    ({"enabled": "yes"}, "'enabled' must be true or false."),
    ({"retries": 3}, "'retries' is not a field of this request; the fields are backoff_seconds, enabled, max_backoff_seconds, "
                     "max_restarts, window_seconds."),
])
def test_a_bad_restart_policy_is_a_400_sentence(client_as: Any, double: ConnectDouble, body: Any, sentence: str) -> None:
    double.add("orders-sink")
    answer = _send(client_as("operator"), "put", API + "orders-sink/restart-policy/", body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"] == sentence
    assert not RestartPolicy.objects.exists()


def _read(double: ConnectDouble, at: float, task_state: str) -> None:
    state.store(ConnectClusterState(cluster="local", name="local", url=double.url, reachable=True, checked_at=at, read_at=at,
                                    connectors=(ConnectorState("orders-sink", "sink", "RUNNING", "w1", plugin=SINK,
                                                               tasks=(TaskState(0, task_state, "w1", "java.io.IOException: denied"),)),)))


def _restarts(double: ConnectDouble) -> int:
    return sum(1 for m, p, _ in double.requests if m == "POST" and p.endswith("/tasks/0/restart"))


def test_auto_restart_backs_off_survives_a_console_restart_and_gives_up(client_as: Any, double: ConnectDouble) -> None:
    double.add("orders-sink", tasks=["FAILED"])
    saved = _send(client_as("operator"), "put", API + "orders-sink/restart-policy/",
                  {"enabled": True, "max_restarts": 2, "window_seconds": 600, "backoff_seconds": 1, "max_backoff_seconds": 8})
    assert saved.status_code == 200, saved.content
    assert saved.json()["schedule_seconds"] == [1.0, 2.0]
    configs = (ConnectConfig("local", double.url),)
    t0 = 1_000_000.0
    restarter = Restarter("local", configs)
    _read(double, t0, "FAILED")
    assert restarter.run_once(t0) == 0  # the failure seen: the first restart is due a second later
    assert restarter.run_once(t0 + 0.9) == 0
    assert restarter.run_once(t0 + 1.0) == 1 and _restarts(double) == 1
    # The console restarts: a new engine carries on from the database, and a read older than the
    # restart's effect is not a new failure.
    restarter = Restarter("local", configs)
    _read(double, t0 + 1.5, "FAILED")
    assert restarter.run_once(t0 + 1.6) == 0
    _read(double, t0 + 2.5, "FAILED")
    assert restarter.run_once(t0 + 2.5) == 0 and restarter.run_once(t0 + 4.4) == 0  # the second waits 2 s
    assert restarter.run_once(t0 + 4.5) == 1 and _restarts(double) == 2
    assert failing_tasks("local") == []  # (the policy is on it)
    _read(double, t0 + 6.0, "FAILED")
    assert restarter.run_once(t0 + 6.0) == 0 and restarter.run_once(t0 + 100) == 0 and _restarts(double) == 2
    row = TaskRestarts.objects.get()
    assert row.restarts == [t0 + 1.0, t0 + 4.5] and row.gave_up_at == t0 + 6.0
    events = list(Event.objects.filter(cluster="local", kind__startswith="connect_task").order_by("id").values_list("kind", "message"))
    assert [k for k, _ in events] == ["connect_task_restarted", "connect_task_restarted", "connect_task_gave_up"]
    assert events[0][1] == ("Auto-restarted task 0 of connector 'orders-sink' after 1 s (restart 1 of 2 within 600 s; next after 2 s).")
    assert events[2][1] == ("Auto-restart gave up on task 0 of connector 'orders-sink': it failed again after 2 restarts within "
                            "600 s (java.io.IOException: denied).")
    assert [(t.connector, t.task, t.restarts) for t in failing_tasks("local")] == [("orders-sink", 0, 2)]
    shown = client_as("viewer").get(API + "orders-sink/restart-policy/").json()
    assert shown["tasks"][0]["restarts"] == 2 and shown["tasks"][0]["gave_up_at"] == t0 + 6.0
    # Restarted by hand and running: the policy starts afresh.
    _read(double, t0 + 200, "RUNNING")
    restarter.run_once(t0 + 200)
    row.refresh_from_db()
    assert row.gave_up_at is None and row.restarts == [] and failing_tasks("local") == []
