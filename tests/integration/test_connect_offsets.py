"""Offsets (KIP-875) and auto-restart against the real Connect worker (fixture `connect_worker`), with
Kafka's own tools as the oracle: a reset on a stopped FileStreamSource makes it read its file from the
start again once resumed (records counted with kafka-get-offsets); an alter of a sink's offsets is what
kafka-consumer-groups --describe shows for its group; a sink task that cannot open its file is restarted
with growing gaps, given up on after N, each on the events timeline, and an alert rule on
connect_task_failing fires (its Alert row listed and its webhook message received)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
import requests

from tests.alert_receivers import http_receiver
from tests.conftest import Stack, unique, wait_for
from tests.integration.test_connect import LIST, SINK, SOURCE, STRINGS, _no_connector_left, connect_status, file_pipeline
from tests.support import TEST_VAR

pytestmark = pytest.mark.cluster
__all__ = ["_no_connector_left"]  # (its module-scoped cleanup, for this module too)


def end_offset(stack: Stack, topic: str) -> int:
    """kafka-get-offsets: the records in the topic's one partition."""
    found = re.search(rf"^{re.escape(topic)}:0:(\d+)$", stack.cluster.tool("kafka-get-offsets", "--topic", topic, "--time", "-1"), re.M)
    assert found is not None
    return int(found.group(1))


def group_offsets(stack: Stack, group: str, topic: str) -> dict[int, int]:
    """kafka-consumer-groups --describe: the group's committed offset per partition of `topic`."""
    out = stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group)
    found = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[1] == topic and cols[2].isdigit() and cols[3].isdigit():
            found[int(cols[2])] = int(cols[3])
    return found


def act(stack: Stack, name: str, action: str, state: str, url: str) -> None:
    done = stack.api("operator").post(stack.base_url + LIST + name + "/", json={"action": action}, timeout=20)
    assert done.status_code == 202, done.text
    wait_for(lambda: connect_status(url, name)["connector"]["state"] == state, 20, what=f"{name} {state}")


def offsets(stack: Stack, name: str) -> list[dict[str, Any]]:
    answer = stack.get(LIST + name + "/offsets/", user="viewer")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["offsets"])


def test_a_reset_source_reads_its_file_from_the_start_again(stack: Stack, connect_worker: str) -> None:
    topic, name = unique("reread"), unique("reread-source")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    inbox = TEST_VAR / f"{name}.txt"
    inbox.write_text("one\ntwo\nthree\n")
    made = stack.api("operator").post(stack.base_url + LIST, timeout=20, json={"name": name, "config": {
        "connector.class": SOURCE, "file": str(inbox), "topic": topic, **STRINGS}})
    assert made.status_code == 201, made.text
    position = {"partition": {"filename": str(inbox)}, "offset": {"position": len(inbox.read_bytes())}}
    wait_for(lambda: offsets(stack, name) == [position], 30, interval=0.5, what="the source's offset at the file's end")
    assert end_offset(stack, topic) == 3
    path = stack.base_url + LIST + name + "/offsets/"
    operator = stack.api("operator")
    refused = operator.delete(path, json={"confirm": name}, timeout=20)
    assert refused.status_code == 409 and "stop it first" in refused.json()["detail"]
    act(stack, name, "stop", "STOPPED", connect_worker)
    preview = operator.delete(path, json={"dry_run": True}, timeout=20).json()
    assert preview["changes"] == [{**{k: v for k, v in position.items() if k == "partition"}, "current": position["offset"],
                                   "new": None, "change": "remove"}] and preview["blocked"] is None
    assert offsets(stack, name) == [position]  # (a preview changes nothing)
    done = operator.delete(path, json={"confirm": name}, timeout=20)
    assert done.status_code == 200, done.text
    theirs = requests.get(f"{connect_worker}/connectors/{name}/offsets", timeout=5).json()
    assert theirs == {"offsets": []} and offsets(stack, name) == []
    act(stack, name, "resume", "RUNNING", connect_worker)
    wait_for(lambda: end_offset(stack, topic) == 6, 40, interval=1, what="the file read again from its start")
    wait_for(lambda: offsets(stack, name) == [position], 20, interval=0.5, what="the offset at the file's end again")
    assert end_offset(stack, topic) == 6  # read once more, not twice
    audit = stack.get("/api/v1/audit/?per_page=100&q=" + name).json()["entries"]
    assert {(e["action"], e["outcome"]) for e in audit if e["action"] == "connector_offsets_reset"} == {("connector_offsets_reset", "refused"),
                                                                                                     ("connector_offsets_reset", "ok")}


def test_an_altered_sink_offset_is_what_kafka_consumer_groups_shows(stack: Stack, connect_worker: str) -> None:
    topic, _, sink = file_pipeline(stack, "alter")  # (two records)
    partition = {"kafka_topic": topic, "kafka_partition": 0}
    wait_for(lambda: offsets(stack, sink) == [{"partition": partition, "offset": {"kafka_offset": 2}}], 40, interval=0.5,
             what="the sink's committed offset at 2")
    act(stack, sink, "stop", "STOPPED", connect_worker)
    path, operator = stack.base_url + LIST + sink + "/offsets/", stack.api("operator")
    change = {"offsets": [{"partition": partition, "offset": {"kafka_offset": 1}}]}
    preview = operator.patch(path + "?dry_run=true", json=change, timeout=20).json()
    assert preview["changes"] == [{"partition": partition, "current": {"kafka_offset": 2}, "new": {"kafka_offset": 1}, "change": "set"}]
    assert group_offsets(stack, f"connect-{sink}", topic) == {0: 2}  # (a preview changes nothing)
    done = operator.patch(path, json=change, timeout=20)
    assert done.status_code == 200, done.text
    assert group_offsets(stack, f"connect-{sink}", topic) == {0: 1}
    assert offsets(stack, sink) == [{"partition": partition, "offset": {"kafka_offset": 1}}]


def test_a_failing_sink_task_is_restarted_with_backoff_given_up_on_and_alerted(stack: Stack, connect_worker: str) -> None:
    topic, name = unique("restart-lines"), unique("restart-sink")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    blocker = TEST_VAR / unique("unwritable")  # a file where the sink wants a directory: its output cannot be opened
    blocker.write_text("not a directory\n")  # (the tests run as root, for whom a read-only file is still writable)
    operator = stack.api("operator")
    policy = {"enabled": True, "max_restarts": 3, "window_seconds": 600, "backoff_seconds": 1, "max_backoff_seconds": 8}
    saved = operator.put(stack.base_url + LIST + name + "/restart-policy/", json=policy, timeout=20)
    assert saved.status_code == 200 and saved.json()["schedule_seconds"] == [1, 2, 4], saved.text
    with http_receiver() as hook:
        hook_name, rule_name = unique("connect-hook"), unique("connect-failing")
        assert stack.api("admin").post(stack.base_url + "/api/v1/alert-channels/", timeout=10,
                                       json={"name": hook_name, "kind": "webhook", "url": hook.url + "/hook"}).status_code == 201
        made_rule = operator.post(stack.base_url + "/api/v1/clusters/local/alert-rules/", timeout=10, json={
            "name": rule_name, "condition": "connect_task_failing", "target": name, "for_seconds": 0, "severity": "critical",
            "channels": [hook_name]})
        assert made_rule.status_code == 201, made_rule.text
        made = operator.post(stack.base_url + LIST, timeout=20, json={"name": name, "config": {
            "connector.class": SINK, "file": str(blocker / "out.txt"), "topics": topic, **STRINGS}})
        assert made.status_code == 201, made.text

        def events(kind: str) -> list[dict[str, Any]]:
            rows = stack.get(f"/api/v1/clusters/local/events/?kind={kind}&limit=100").json()["events"]
            return sorted((e for e in rows if e["details"].get("connector") == name), key=lambda e: e["id"])

        gave_up = wait_for(lambda: events("connect_task_gave_up"), 60, interval=0.5, what="the policy to give up")[0]
        restarts = events("connect_task_restarted")
        assert [e["details"]["attempt"] for e in restarts] == [1, 2, 3]
        at = [datetime.fromisoformat(e["at"]).timestamp() for e in restarts]
        gaps = [b - a for a, b in zip(at, at[1:], strict=False)]
        assert gaps[0] >= 2.0 and gaps[1] >= 4.0 and gaps[1] > gaps[0], gaps  # (each at least its backoff, growing)
        assert gave_up["severity"] == "critical" and "after 3 restarts within 600 s" in gave_up["message"]
        assert connect_status(connect_worker, name)["tasks"][0]["state"] == "FAILED"
        shown = stack.get(LIST + name + "/restart-policy/", user="viewer").json()
        assert shown["tasks"][0]["restarts"] == 3 and shown["tasks"][0]["gave_up_at"] is not None

        def firing() -> list[dict[str, Any]]:
            rows = stack.get("/api/v1/clusters/local/alerts/", user="viewer", params={"rule": rule_name}).json()["alerts"]
            return [a for a in rows if a["state"] == "firing"]

        alert = wait_for(firing, 15, interval=0.25, what="the connect_task_failing alert firing")[0]
        assert alert["key"] == f"task:local/{name}/0" and "auto-restart gave up after 3 restarts" in alert["message"]
        message = wait_for(lambda: [r for r in list(hook.requests) if r.json()["rule"].get("name") == rule_name], 20,
                           interval=0.25, what="the webhook message")[0]
        assert message.json()["kind"] == "firing" and {a["key"] for a in message.json()["alerts"]} == {f"task:local/{name}/0"}
    assert len(events("connect_task_restarted")) == 3  # given up: no more restarts
