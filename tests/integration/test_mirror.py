"""MirrorMaker 2 on the real Connect worker, from the test cluster ("local") to the one-node cluster
"backup", with Kafka's own tools as the oracle: records produced on the source appear on the target's
remote topic; the lag the console shows equals the difference of the end offsets kafka-get-offsets
reads on both clusters; a group's translated offset equals MM2's checkpoint as Kafka's
CheckpointFormatter prints it. Screenshots of the replication page in light and dark under test-output/."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from console.devcluster_mirror import connector_names, install_mirror, mirror_configs
from tests.backup_cluster import BACKUP_BOOTSTRAP, backup_tool
from tests.conftest import OUTPUT, PASSWORD, Stack, kafka_tool, unique, wait_for
from tests.support import BOOTSTRAP, ROOT

pytestmark = pytest.mark.cluster

API = "/api/v1/clusters/local/replication/"
FLOW = "local:local->backup"


@dataclass(frozen=True)
class Mirror:
    connect: str
    topic: str  # on local; "local.<topic>" on backup
    names: dict[str, str]

    @property
    def remote(self) -> str:
        return "local." + self.topic


def produce(topic: str, values: list[str]) -> None:
    done = subprocess.run([str(ROOT / "kafka" / "bin" / "kafka-console-producer"), "--bootstrap-server", BOOTSTRAP,
                           "--topic", topic], input="\n".join(values) + "\n", capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr


def end_offsets(output: str, topic: str) -> dict[int, int]:
    """kafka-get-offsets' lines `topic:partition:offset`."""
    found = {}
    for line in output.splitlines():
        name, partition, offset = line.strip().rsplit(":", 2)
        if name == topic:
            found[int(partition)] = int(offset)
    return found


def source_ends(topic: str) -> dict[int, int]:
    return end_offsets(kafka_tool("kafka-get-offsets", "--bootstrap-server", BOOTSTRAP, "--topic", topic), topic)


def target_ends(topic: str) -> dict[int, int]:
    return end_offsets(backup_tool("kafka-get-offsets", "--topic", topic), topic)


def flow_of(stack: Stack, **params: str) -> dict[str, Any]:
    answer = stack.get(API, params={"flow": FLOW, **params}, timeout=60)
    assert answer.status_code == 200, answer.text
    (flow,) = answer.json()["flows"]
    return dict(flow)


def topic_lag(stack: Stack, topic: str) -> int | None:
    """The records the console says the topic's remote copy is behind (None: not listed)."""
    found = [t["records"] for t in flow_of(stack)["topics"] if t["topic"] == topic]
    return found[0] if found else None


def connector_state(connect: str, name: str) -> tuple[str, list[str]]:
    s = requests.get(f"{connect}/connectors/{name}/status", timeout=5).json()
    return s["connector"]["state"], [t["state"] for t in s["tasks"]]


@pytest.fixture(scope="module")
def mirror(stack: Stack, connect_worker: str, backup_cluster: str) -> Iterator[Mirror]:
    topic = unique("mm2t.orders")
    kafka_tool("kafka-topics", "--bootstrap-server", BOOTSTRAP, "--create", "--topic", topic, "--partitions", "2",
               "--replication-factor", "3")
    configs = mirror_configs("local", BOOTSTRAP, "backup", backup_cluster, topics=r"mm2t\..*", groups=r"mm2g\..*", interval=1)
    install_mirror(connect_worker, configs)
    names = {kind.lower(): name for kind, name in connector_names("local", "backup").items()}
    names["upstream heartbeat"] = connector_names("backup", "local")["Heartbeat"]
    wait_for(lambda: connector_state(connect_worker, names["source"]) == ("RUNNING", ["RUNNING"]), 60,
             what="MirrorSourceConnector running")
    try:
        yield Mirror(connect_worker, topic, names)
    finally:
        for name in names.values():
            requests.delete(f"{connect_worker}/connectors/{name}", timeout=30)


def test_records_produced_on_the_source_appear_on_the_target(mirror: Mirror) -> None:
    values = [f"record-{i}" for i in range(40)]
    produce(mirror.topic, values)
    wait_for(lambda: sum(target_ends(mirror.remote).values()) == 40, 90, what="40 records on backup's remote topic")
    copied = backup_tool("kafka-console-consumer", "--topic", mirror.remote, "--from-beginning", "--max-messages", "40",
                         "--timeout-ms", "20000")
    assert sorted(copied.split()) == sorted(values)


def test_the_lag_shown_is_the_difference_of_end_offsets(stack: Stack, mirror: Mirror) -> None:
    wait_for(lambda: topic_lag(stack, mirror.topic) == 0, 60, what="the topic caught up")
    source = mirror.names["source"]
    assert requests.put(f"{mirror.connect}/connectors/{source}/pause", timeout=10).status_code == 202
    wait_for(lambda: connector_state(mirror.connect, source) == ("PAUSED", ["PAUSED"]), 30, what="the source connector paused")
    produce(mirror.topic, [f"late-{i}" for i in range(30)])
    # The oracle before and after the console's measurement: nothing moves while MM2 is paused.
    before = (source_ends(mirror.topic), target_ends(mirror.remote))
    flow = flow_of(stack)
    assert (source_ends(mirror.topic), target_ends(mirror.remote)) == before
    (shown,) = [t for t in flow["topics"] if t["topic"] == mirror.topic]
    assert shown["remote_topic"] == mirror.remote and shown["created"] is True
    src, tgt = before
    assert {p["partition"]: (p["source_end_offset"], p["target_end_offset"], p["records"]) for p in shown["partitions"]} == {
        p: (src[p], tgt[p], src[p] - tgt[p]) for p in src}
    assert shown["records"] == sum(src.values()) - sum(tgt.values()) == 30 <= flow["lag"]["records"]
    assert all(p["seconds"] is not None and p["seconds"] >= 0 for p in shown["partitions"] if p["records"])
    assert flow["lag"]["heartbeat_age_seconds"] > 0  # (the heartbeats emitted in local wait too)
    assert requests.put(f"{mirror.connect}/connectors/{source}/resume", timeout=10).status_code == 202
    wait_for(lambda: topic_lag(stack, mirror.topic) == 0, 60, what="the topic caught up after resuming")
    wait_for(lambda: (flow_of(stack)["lag"]["heartbeat_age_seconds"] or 99) < 5, 30, what="local's heartbeats replicated within 5 s")
    assert source_ends(mirror.topic) == target_ends(mirror.remote)


CHECKPOINT = re.compile(r"Checkpoint\{consumerGroupId=(?P<group>[^,]+), topicPartition=(?P<tp>[^,]+)-(?P<p>\d+), "
                        r"upstreamOffset=(?P<up>\d+), downstreamOffset=(?P<down>\d+)")


def checkpoints_by_kafka(topic: str) -> dict[tuple[str, str, int], tuple[int, int]]:
    """MM2's checkpoints as Kafka's own CheckpointFormatter prints them; the newest of each key wins."""
    done = subprocess.run([str(ROOT / "kafka" / "bin" / "kafka-console-consumer"), "--bootstrap-server", BACKUP_BOOTSTRAP,
                           "--topic", topic, "--from-beginning", "--timeout-ms", "5000",
                           "--formatter", "org.apache.kafka.connect.mirror.formatters.CheckpointFormatter"],
                          capture_output=True, text=True, timeout=90)
    found = {}
    for m in CHECKPOINT.finditer(done.stdout):
        found[(m["group"], m["tp"], int(m["p"]))] = (int(m["up"]), int(m["down"]))
    return found


def test_a_groups_translated_offset_equals_mm2s_checkpoint(stack: Stack, mirror: Mirror) -> None:
    group = unique("mm2g.billing")
    kafka_tool("kafka-console-consumer", "--bootstrap-server", BOOTSTRAP, "--topic", mirror.topic, "--group", group,
               "--from-beginning", "--max-messages", "25", "--timeout-ms", "20000")

    def caught_up() -> list[dict[str, Any]]:
        """The rows whose committed offset MM2 checkpointed (it has nothing to translate at offset 0), once every
        partition the group read from is checkpointed at its committed offset."""
        rows = [g for g in flow_of(stack, group=group)["groups"] if g["topic"] == mirror.topic]
        read = [r for r in rows if r["source_offset"]]
        ok = read and all(r["translated_offset"] is not None and r["checkpoint_upstream_offset"] == r["source_offset"]
                          for r in read)
        return rows if ok else []

    rows = wait_for(caught_up, 90, interval=1.0, what=f"MM2's checkpoints of group {group} caught up with its commits")
    described = kafka_tool("kafka-consumer-groups", "--bootstrap-server", BOOTSTRAP, "--describe", "--group", group)
    committed = {int(cols[2]): int(cols[3]) for cols in (line.split() for line in described.splitlines())
                 if len(cols) > 3 and cols[1] == mirror.topic and cols[3].isdigit()}
    assert {r["partition"]: r["source_offset"] for r in rows} == committed
    by_kafka = wait_for(lambda: {k: v for k, v in checkpoints_by_kafka("local.checkpoints.internal").items()
                                 if k[0] == group and k[1] == mirror.remote} or None, 30, what="the checkpoints read by Kafka")
    assert {r["partition"]: (r["checkpoint_upstream_offset"], r["translated_offset"]) for r in rows if r["translated_offset"] is not None} == {
        p: v for (_, _, p), v in by_kafka.items()}


@pytest.mark.browser
def test_the_replication_page_in_light_and_dark(stack: Stack, mirror: Mirror, browser: Any) -> None:
    source = mirror.names["source"]
    assert requests.put(f"{mirror.connect}/connectors/{source}/pause", timeout=10).status_code == 202
    wait_for(lambda: connector_state(mirror.connect, source) == ("PAUSED", ["PAUSED"]), 30, what="the source connector paused")
    produce(mirror.topic, [f"while-paused-{i}" for i in range(12)])  # a lagging topic on the screenshots
    try:
        _screenshots(stack, mirror, browser)
    finally:
        requests.put(f"{mirror.connect}/connectors/{source}/resume", timeout=10)


def _screenshots(stack: Stack, mirror: Mirror, browser: Any) -> None:
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        page.goto(stack.base_url + "/login/")
        page.fill("input[name=username]", "viewer")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        page.goto(stack.base_url + "/clusters/local/replication/", timeout=60_000)
        flow = page.locator(f"section.mirror-flow[data-flow='{FLOW}']")
        row = flow.locator(f"table.mirror-topics tr[data-topic='{mirror.topic}']")
        assert row.locator("td.mono").first.inner_text() == mirror.topic and mirror.remote in row.inner_text()
        assert flow.locator(f"table.mirror-groups tr[data-topic='{mirror.topic}']").count() >= 1
        assert row.get_attribute("data-records") == "12" and "row-lagging" in (row.get_attribute("class") or "")
        flow.locator("tr.mirror-parts summary").first.click()  # the lagging topic's partitions
        assert "Replication" in page.locator("nav.subtabs a.active").inner_text()
        page.screenshot(path=str(OUTPUT / f"replication-{scheme}.png"), full_page=True)
        context.close()
