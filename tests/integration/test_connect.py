"""Kafka Connect against the real worker (fixture `connect_worker`): the console's view of every connector
and task equals Connect's own REST API (read here with plain HTTP), Connect's validation reaches the
field it is about, actions are carried out, a failed task shows with its trace, and a killed worker
is reported as unreachable (never a 500) until it is back."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
import requests

from connect_app.client import ConnectClient, ConnectRefused, ConnectUnreachable
from console.connect_config import ConnectConfig
from tests.conftest import PASSWORD, Stack, unique, wait_for
from tests.connect_worker import kill_worker, start_worker
from tests.support import TEST_VAR, time_budget

pytestmark = pytest.mark.cluster

LIST = "/api/v1/clusters/local/connectors/"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRINGS = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
           "value.converter": "org.apache.kafka.connect.storage.StringConverter"}


@pytest.fixture(scope="module", autouse=True)
def _no_connector_left(connect_worker: str) -> Iterator[None]:
    """The connectors a module made are deleted after it: the session's worker (and the topics and
    groups its tasks use) stays as the other modules found it."""
    before = set(requests.get(connect_worker + "/connectors", timeout=10).json())
    yield
    for name in set(requests.get(connect_worker + "/connectors", timeout=30).json()) - before:
        requests.delete(f"{connect_worker}/connectors/{name}", timeout=30)


def connect_status(url: str, name: str) -> dict[str, Any]:
    """The oracle: Connect's own answer for one connector."""
    answer = requests.get(f"{url}/connectors/{name}/status", timeout=5)
    answer.raise_for_status()
    return dict(answer.json())


def oracle_states(url: str, name: str) -> tuple[str, list[tuple[int, str, str]]]:
    s = connect_status(url, name)
    return s["connector"]["state"], sorted((t["id"], t["state"], t["worker_id"]) for t in s["tasks"])


def console_states(stack: Stack, name: str) -> tuple[str, list[tuple[int, str, str]]] | None:
    rows = {c["name"]: c for c in stack.get(LIST).json()["connectors"]}
    if name not in rows:
        return None
    return rows[name]["state"], sorted((t["id"], t["state"], t["worker_id"]) for t in rows[name]["tasks"])


def same_as_connect(stack: Stack, url: str, name: str, state: str | None = None) -> bool:
    """The console shows the connector as Connect does; with `state`, the connector and (but a stopped
    one, which has none) its tasks are in it."""
    theirs = oracle_states(url, name)
    settled = state is None or (theirs[0] == state and (state == "STOPPED" or (bool(theirs[1]) and all(t[1] == state for t in theirs[1]))))
    return settled and console_states(stack, name) == theirs


def file_pipeline(stack: Stack, tmp: str) -> tuple[str, str, str]:
    """A file source into a new topic and a file sink out of it, created through the console's API."""
    topic, source, sink = unique("connect-lines"), unique("file-source"), unique("file-sink")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    inbox = TEST_VAR / f"{source}.txt"
    inbox.write_text("first\nsecond\n")
    for name, config in ((source, {"connector.class": SOURCE, "file": str(inbox), "topic": topic, **STRINGS}),
                         (sink, {"connector.class": SINK, "file": str(TEST_VAR / f"{sink}.txt"), "topics": topic, **STRINGS})):
        made = stack.api("operator").post(stack.base_url + LIST, json={"name": name, "config": config}, timeout=20)
        assert made.status_code == 201, made.text
    return topic, source, sink


def page_session(stack: Stack, user: str = "admin") -> requests.Session:
    """A browser-like session (login form, CSRF cookie) for the pages."""
    session = requests.Session()
    form = session.get(stack.base_url + "/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None
    done = session.post(stack.base_url + "/login/", timeout=10, headers={"Referer": stack.base_url + "/login/"},
                        data={"username": user, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)})
    assert done.status_code == 200 and "/login/" not in done.url, done.url
    return session


def test_client_reads_the_worker_and_its_plugins(connect_worker: str) -> None:
    client = ConnectClient(ConnectConfig(name="local", url=connect_worker))
    assert client.server_info()["version"]
    classes = {p["class"] for p in client.plugins()}
    assert {SOURCE, SINK} <= classes


def test_client_carries_connects_own_message_for_an_unknown_connector(connect_worker: str) -> None:
    client = ConnectClient(ConnectConfig(name="local", url=connect_worker))
    with pytest.raises(ConnectRefused) as caught:
        client.status("no-such-connector")
    assert caught.value.http_status == 404
    assert "no-such-connector" in caught.value.message and connect_worker in caught.value.message


def test_client_says_a_worker_that_does_not_answer_is_unreachable() -> None:
    client = ConnectClient(ConnectConfig(name="gone", url="http://127.0.0.1:1"), timeout=2)
    with pytest.raises(ConnectUnreachable) as caught:
        client.connectors()
    assert caught.value.message == "Connect cluster 'gone' at http://127.0.0.1:1 is unreachable (connection refused)."


def test_every_connector_and_task_state_equals_connects_own(stack: Stack, connect_worker: str) -> None:
    _, source, sink = file_pipeline(stack, "states")
    names = requests.get(connect_worker + "/connectors", timeout=5).json()
    assert {source, sink} <= set(names)
    for name in names:
        wait_for(partial(same_as_connect, stack, connect_worker, name), 10, what=f"the console to show {name} as Connect does")
    listed = stack.get(LIST).json()
    assert listed["connect_clusters"][0]["reachable"] is True
    row = next(c for c in listed["connectors"] if c["name"] == sink)
    assert row["type"] == "sink" and row["plugin"] == SINK and row["worker_id"] == connect_status(connect_worker, sink)["connector"]["worker_id"]


def test_the_sink_writes_what_the_source_read(stack: Stack, connect_worker: str) -> None:
    _, source, sink = file_pipeline(stack, "flow")
    wait_for(lambda: (TEST_VAR / f"{sink}.txt").exists() and (TEST_VAR / f"{sink}.txt").read_text() == "first\nsecond\n", 30,
             what="the sink file to hold the source file's lines")


def test_a_missing_required_field_gets_connects_message_on_that_field(stack: Stack, connect_worker: str) -> None:
    name = unique("no-topic")
    # FileStreamSource needs `topic` (no default): Connect's validation says so on that key.
    answer = stack.api("operator").post(stack.base_url + LIST, timeout=20,
                                        json={"name": name, "config": {"connector.class": SOURCE, "file": "/tmp/x"}})
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert "topic" in body["errors"], body
    expected = requests.put(f"{connect_worker}/connector-plugins/{SOURCE}/config/validate", timeout=10,
                            json={"connector.class": SOURCE, "name": name, "file": "/tmp/x"}).json()
    theirs = next(c["value"]["errors"] for c in expected["configs"] if c["value"]["name"] == "topic")
    assert body["errors"]["topic"] == theirs and theirs
    assert body["detail"].startswith("Connect refused the config: 'topic': ") and theirs[0] in body["detail"]
    assert name not in requests.get(connect_worker + "/connectors", timeout=5).json()
    # The page shows the same message under the field it is about.
    session = page_session(stack, "operator")
    new = f"{stack.base_url}/clusters/local/connect/new/?connect=local&plugin={SOURCE}&name={name}"
    form = session.get(new, timeout=20)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert form.status_code == 200 and token is not None
    page = session.post(new, timeout=20, headers={"Referer": new},
                        data={"csrfmiddlewaretoken": token.group(1), "connect": "local", "plugin": SOURCE, "name": name,
                              "cfg:file": "/tmp/x"})
    assert page.status_code == 400
    field = re.search(r'<div class="config-field has-errors" data-field="topic">(.*?)</div>\n</div>', page.text, re.S)
    assert field is not None, page.text[:2000]
    assert theirs[0].replace('"', "&quot;") in field.group(1)


def test_pause_resume_stop_and_restart_are_carried_out(stack: Stack, connect_worker: str) -> None:
    _, source, _ = file_pipeline(stack, "actions")
    detail = stack.base_url + LIST + source + "/"
    operator = stack.api("operator")
    wait_for(lambda: same_as_connect(stack, connect_worker, source, "RUNNING"), 15, what="the source running")
    for action, state in (("pause", "PAUSED"), ("resume", "RUNNING"), ("stop", "STOPPED"), ("resume", "RUNNING")):
        done = operator.post(detail, json={"action": action}, timeout=20)
        assert done.status_code == 202, done.text
        wait_for(partial(same_as_connect, stack, connect_worker, source, state), 15, what=f"{source} {state} after {action}")
    before = connect_status(connect_worker, source)
    done = operator.post(detail, json={"action": "restart", "include_tasks": True}, timeout=20)
    assert done.status_code == 202 and done.json()["message"] == f"Restarted connector '{source}' and its tasks.", done.text
    wait_for(lambda: same_as_connect(stack, connect_worker, source, "RUNNING"), 15, what="the source running after its restart")
    assert operator.post(detail, json={"action": "restart", "task": 0}, timeout=20).status_code == 202
    wait_for(lambda: same_as_connect(stack, connect_worker, source, "RUNNING"), 15, what="the task running after its restart")
    assert [t["id"] for t in connect_status(connect_worker, source)["tasks"]] == [t["id"] for t in before["tasks"]]
    audit = stack.get("/api/v1/audit/?per_page=100&q=" + source).json()
    actions = {e["action"] for e in audit["entries"] if e["target"] == source}
    assert {"connector_create", "connector_pause", "connector_resume", "connector_stop", "connector_restart",
            "connector_restart_task"} <= actions, actions


def test_a_failed_sink_task_shows_failed_with_its_trace_within_5_seconds(stack: Stack, connect_worker: str) -> None:
    topic = unique("connect-fail")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    blocker = TEST_VAR / unique("not-a-directory")
    blocker.write_text("a file where the sink wants a directory\n")
    name = unique("failing-sink")
    config = {"connector.class": SINK, "file": str(blocker / "out.txt"), "topics": topic, **STRINGS}
    made = stack.api("operator").post(stack.base_url + LIST, json={"name": name, "config": config}, timeout=20)
    assert made.status_code == 201, made.text
    failed_at = wait_for(lambda: time.monotonic() if [t["state"] for t in connect_status(connect_worker, name)["tasks"]] == ["FAILED"]
                         else None, 30, interval=0.1, what="Connect to report the sink task failed")
    wait_for(lambda: console_states(stack, name) == oracle_states(connect_worker, name), 5, interval=0.1,
             what="the API to show the failed task")
    assert time.monotonic() - failed_at <= time_budget(5)
    shown = stack.get(LIST + name + "/").json()
    assert shown["tasks"][0]["state"] == "FAILED"
    assert shown["tasks"][0]["trace"] == connect_status(connect_worker, name)["tasks"][0]["trace"]
    assert "out.txt" in shown["tasks"][0]["trace"]
    page = page_session(stack).get(f"{stack.base_url}/clusters/local/connect/local/{name}/", timeout=20)
    assert page.status_code == 200
    assert 'data-task="0" data-state="FAILED"' in page.text and "out.txt" in page.text
    restarted = stack.api("operator").post(stack.base_url + LIST + name + "/", timeout=20,
                                           json={"action": "restart", "include_tasks": True, "only_failed": True})
    assert restarted.json()["message"] == f"Restarted connector '{name}' and its failed tasks."


def test_bad_actions_and_configs_are_400_sentences(stack: Stack, connect_worker: str) -> None:
    operator = stack.api("operator")
    _, source, _ = file_pipeline(stack, "bad")
    detail = stack.base_url + LIST + source + "/"
    cases = [
        (operator.post(detail, json={"action": "explode"}, timeout=10), "Unknown action 'explode'; the actions are pause, resume, stop, restart."),
        (operator.post(detail, json={"action": "pause", "task": 0}, timeout=10),
         "'task' goes with the restart action only: Connect pauses, resumes and stops whole connectors."),
        (operator.post(stack.base_url + LIST, json={"config": {"connector.class": SINK}}, timeout=10), "'name': This field is required."),
        (operator.post(stack.base_url + LIST, json={"name": "x", "config": {}}, timeout=10),
         "The connector config is empty: it needs at least connector.class."),
        (operator.post(stack.base_url + LIST, json={"name": "x", "config": {"connector.class": "no.such.Plugin"}}, timeout=10), None),
    ]
    for answer, sentence in cases:
        assert answer.status_code == 400, answer.text
        if sentence is not None:
            assert answer.json()["detail"] == sentence
    assert cases[-1][0].json()["detail"].startswith("Connect cluster 'local' has no connector plugin 'no.such.Plugin'; its plugins: ")
    missing = stack.get(LIST + "no-such-connector/")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "Connect cluster 'local' of cluster 'local' has no connector 'no-such-connector'."


def test_delete_removes_the_connector(stack: Stack, connect_worker: str) -> None:
    _, source, _ = file_pipeline(stack, "delete")
    assert stack.api("viewer").delete(stack.base_url + LIST + source + "/", timeout=10).status_code == 403
    gone = stack.api("operator").delete(stack.base_url + LIST + source + "/", timeout=20)
    assert gone.status_code == 200, gone.text
    assert source not in requests.get(connect_worker + "/connectors", timeout=5).json()
    wait_for(lambda: console_states(stack, source) is None, 5, what="the list to drop the deleted connector")


def test_a_killed_worker_is_reported_unreachable_and_recovers(stack: Stack, connect_worker: str) -> None:
    _, source, _ = file_pipeline(stack, "kill")
    wait_for(lambda: console_states(stack, source) is not None, 10, what="the connector listed")
    session = page_session(stack)
    kill_worker()
    try:
        # (The first read after the kill may find its kept-alive connection reset; the next ones are refused.)
        error = f"Connect cluster 'local' at {connect_worker} is unreachable (connection refused)."
        listed = wait_for(lambda: (body := stack.get(LIST).json())["connect_clusters"][0]["error"] == error and body, 5,
                          interval=0.2, what="the API to say Connect is unreachable")
        assert listed["connect_clusters"][0]["reachable"] is False
        assert source in {c["name"] for c in listed["connectors"]}  # the last known list stays
        seen: list[str] = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            started = time.monotonic()
            detail = stack.get(LIST + source + "/", timeout=20)
            seen.append(f"{time.monotonic() - started:.2f}s {detail.status_code} {detail.text[:200]}")
            if detail.json().get("detail") == error:
                break
        assert detail.status_code == 503 and detail.json()["detail"] == error, seen
        assert stack.get("/api/v1/clusters/local/connect-plugins/").status_code == 503
        for path in ("/clusters/local/connect/", f"/clusters/local/connect/local/{source}/", "/clusters/local/connect/plugins/",
                     "/clusters/local/connect/new/"):
            page = session.get(stack.base_url + path, timeout=20)
            assert page.status_code == 200, (path, page.status_code)
            assert "is unreachable (connection refused)" in page.text, path
    finally:
        start_worker()
    wait_for(lambda: stack.get(LIST).json()["connect_clusters"][0]["reachable"] is True, 15, what="the API to see Connect back")
    wait_for(lambda: same_as_connect(stack, connect_worker, source, "RUNNING"), 30, what="the connector running again")
    assert "is unreachable" not in session.get(stack.base_url + "/clusters/local/connect/", timeout=20).text
