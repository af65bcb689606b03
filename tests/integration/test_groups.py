"""Consumer groups: what the console says equals kafka-consumer-groups; resets match its dry runs."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.conftest import Stack, unique, wait_for

pytestmark = pytest.mark.cluster
API = "/api/v1/clusters/local/consumer-groups/"


def table(output: str) -> list[dict[str, str]]:
    """Rows of a kafka-consumer-groups table (header line starting with GROUP)."""
    rows, header = [], None
    for line in output.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "GROUP":
            header = parts
            continue
        if header and len(parts) >= len(header) - 0 and len(parts) == len(header):
            rows.append(dict(zip(header, parts, strict=True)))
    return rows


def produce(stack: Stack, topic: str, per_partition: int, partitions: int, ts: int | None = None) -> None:
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, value=f"m{i}".encode(), partition=p, timestamp=(ts + i * 1000) if ts else 0)
    assert producer.flush(20) == 0


def consume(stack: Stack, group: str, topic: str, count: int) -> int:
    """Consume `count` messages as `group`, commit and leave (the group ends up Empty)."""
    consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "client.id": f"{group}-client",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 30
    while got < count and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(num_messages=count - got, timeout=1) if m.error() is None)
    consumer.commit(asynchronous=False)
    consumer.close()
    return got


class ActiveMember:
    def __init__(self, stack: Stack, group: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group,
                                  "client.id": f"{group}-live", "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(0.2)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.consumer.close()


@pytest.fixture
def topic(stack: Stack) -> str:
    name = unique("grp-topic")
    # retention.ms=-1: the 2023 timestamps would otherwise fall to the cluster's 24 h time retention.
    stack.cluster.tool("kafka-topics", "--create", "--topic", name, "--partitions", "3", "--replication-factor", "1",
                       "--config", "retention.ms=-1")
    produce(stack, name, 100, 3, ts=1_700_000_000_000)
    return name


@pytest.fixture
def member(stack: Stack, topic: str) -> Iterator[tuple[str, ActiveMember]]:
    group = unique("grp-live")
    consumed = consume(stack, group, topic, 120)
    active = ActiveMember(stack, group, topic)
    in_snapshot(stack, group, consumed)
    yield group, active
    active.close()


def in_snapshot(stack: Stack, group: str, consumed: int) -> None:
    """Wait until the console shows the group with all it committed (offsets start at 0, so the
    committed offsets add up to the messages consumed)."""
    wait_for(lambda: sum(p["committed"] or 0 for p in api_partitions(stack, group).values()) == consumed, 30,
             what=f"group {group} with its commits in the snapshot")


def api_partitions(stack: Stack, group: str) -> dict[tuple[str, int], dict[str, Any]]:
    r = stack.get(API + group + "/")
    return {(p["topic"], p["partition"]): p for p in r.json()["partitions"]} if r.status_code == 200 else {}


def test_offsets_lag_and_owners_equal_kafka_consumer_groups_describe(stack: Stack, topic: str,
                                                                     member: tuple[str, ActiveMember]) -> None:
    group, _ = member

    def oracle() -> dict[tuple[str, int], dict[str, Any]]:
        rows = table(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group))
        def number(text: str) -> int | None:
            return None if text == "-" else int(text)

        return {(r["TOPIC"], int(r["PARTITION"])): {"committed": number(r["CURRENT-OFFSET"]), "end_offset": int(r["LOG-END-OFFSET"]),
                                                    "lag": number(r["LAG"]), "client_id": r["CLIENT-ID"]} for r in rows}

    def matches() -> bool:
        expected = oracle()
        ours = {k: {f: v[f] for f in ("committed", "end_offset", "lag", "client_id")} for k, v in api_partitions(stack, group).items()}
        seen["expected"], seen["ours"] = expected, ours
        return len(expected) == 3 and ours == expected

    seen: dict[str, Any] = {}

    wait_for(matches, 30, interval=1, what="API partitions equal to kafka-consumer-groups --describe")
    members = table(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group, "--members", "--verbose"))
    detail = stack.get(API + group + "/").json()
    assert [(m["CLIENT-ID"], m["#PARTITIONS"]) for m in members] == [
        (m["client_id"], str(len(m["assignment"]))) for m in detail["member_list"]]
    assert detail["total_lag"] == sum(p["lag"] for p in seen["expected"].values() if p["lag"] is not None)
    assert detail["members"] == 1 and detail["state"] == "Stable"



def named_by(made: dict[tuple[str, int], tuple[str, int]]) -> Any:
    """A `partition` argument for ClusterGateway.consumer_groups: one tuple of its own per partition."""
    return lambda tp: made.setdefault(tp, (str(tp[0]), int(tp[1])))


def test_the_describe_names_assigned_partitions_with_the_tuples_it_is_given(stack: Stack, topic: str,
                                                                            member: tuple[str, ActiveMember]) -> None:
    """The watcher's sampler hands the gateway its shared (topic, partition) tuples: the answer for
    50,000 groups held 1.5 million tuples of its own otherwise."""
    from console import gateway

    group, _ = member
    made: dict[tuple[str, int], tuple[str, int]] = {}
    found = {g.group_id: g for g in gateway.for_cluster(gateway.cluster_configs()[0].name).consumer_groups(named_by(made))}
    tps = [tp for m in found[group].members for tp in m.assignment]
    assert sorted(tps) == [(topic, 0), (topic, 1), (topic, 2)]
    assert all(tp is made[tp] for tp in tps)

def test_groups_list_searches_and_sorts_by_lag(stack: Stack, topic: str) -> None:
    prefix = unique("grp-list")
    for name, count in (("a", 300), ("b", 30), ("c", 150)):
        in_snapshot(stack, f"{prefix}-{name}", consume(stack, f"{prefix}-{name}", topic, count))
    wait_for(lambda: stack.get(API, params={"q": prefix}).json()["count"] == 3, 30, what="three groups listed")

    def order() -> list[str]:
        rows = stack.get(API, params={"q": prefix, "ordering": "-total_lag"}).json()["results"]
        return [r["group"].rsplit("-", 1)[1] for r in rows]

    wait_for(lambda: order() == ["b", "c", "a"], 20, what="groups sorted by lag")


@pytest.mark.parametrize(
    ("body", "tool_args"),
    [
        ({"to": "earliest"}, ["--to-earliest"]),
        ({"to": "latest"}, ["--to-latest"]),
        ({"to": "offset", "offset": 42}, ["--to-offset", "42"]),
        ({"to": "shift", "shift": -15}, ["--shift-by", "-15"]),
        ({"to": "shift", "shift": 500}, ["--shift-by", "500"]),
        ({"to": "timestamp", "timestamp": "2023-11-14T22:14:00Z"}, ["--to-datetime", "2023-11-14T22:14:00.000"]),
    ],
)
def test_reset_preview_equals_kafka_consumer_groups_reset_dry_run(stack: Stack, topic: str, body: dict, tool_args: list) -> None:
    group = unique("grp-reset")
    in_snapshot(stack, group, consume(stack, group, topic, 300))  # every partition committed at 100
    produce(stack, topic, 100, 3)  # the log moves on to 200 per partition
    wait_for(lambda: all(p["end_offset"] == 200 for p in api_partitions(stack, group).values()), 20, what="new end offsets")
    expected_rows = table(stack.cluster.tool("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                                             "--dry-run", *tool_args))
    expected = {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in expected_rows}
    r = stack.api("operator").post(stack.base_url + API + group + "/offsets",
                                   json={**body, "topics": [topic], "dry_run": True}, timeout=20)
    assert r.status_code == 200, r.text
    assert {(o["topic"], o["partition"]): o["new"] for o in r.json()["offsets"]} == expected


def test_applied_reset_is_what_kafka_then_reports(stack: Stack, topic: str) -> None:
    group = unique("grp-apply")
    in_snapshot(stack, group, consume(stack, group, topic, 150))
    r = stack.api("operator").post(stack.base_url + API + group + "/offsets",
                                   json={"to": "offset", "offset": 7, "partitions": {topic: [1]}, "confirm": group}, timeout=20)
    assert r.status_code == 200, r.text
    rows = table(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group))
    assert {int(x["PARTITION"]): int(x["CURRENT-OFFSET"]) for x in rows if x["PARTITION"] == "1"} == {1: 7}
    entries = stack.get("/api/v1/audit/").json()["entries"]
    assert any(e["action"] == "reset_offsets" and e["target"] == group and e["user"] == "operator" for e in entries)


def test_reset_of_an_active_group_is_refused_and_changes_nothing(stack: Stack, topic: str,
                                                                 member: tuple[str, ActiveMember]) -> None:
    group, _ = member
    before = table(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group))
    r = stack.api("operator").post(stack.base_url + API + group + "/offsets", json={"to": "earliest", "confirm": group},
                                   timeout=20)
    assert r.status_code == 400 and "only lets offsets be reset while the group is empty" in r.json()["detail"]
    after = table(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group))
    assert [x["CURRENT-OFFSET"] for x in after] == [x["CURRENT-OFFSET"] for x in before]


@pytest.mark.parametrize(
    ("path_group", "body", "status", "words"),
    [
        ("no-such-group", {"to": "earliest", "dry_run": True}, 404, "no-such-group"),
        (None, {"to": "timestamp", "timestamp": "2999-01-01T00:00:00Z", "dry_run": True}, 400, "future"),
        (None, {"to": "earliest", "topics": ["no-such-topic"], "dry_run": True}, 404, "no-such-topic"),
        (None, {"to": "sideways", "dry_run": True}, 400, "'to'"),
        (None, {"to": "offset", "dry_run": True}, 400, "'offset'"),
        (None, {"to": "group", "from_group": "nobody-here", "dry_run": True}, 404, "nobody-here"),
    ],
)
def test_bad_resets_get_a_clear_message_and_change_nothing(stack: Stack, topic: str, path_group: str | None, body: dict,
                                                           status: int, words: str) -> None:
    group = path_group or unique("grp-bad")
    if path_group is None:
        in_snapshot(stack, group, consume(stack, group, topic, 30))
    r = stack.api("operator").post(stack.base_url + API + group + "/offsets", json=body, timeout=20)
    assert r.status_code == status, r.text
    assert words in r.json()["detail"]


def test_viewer_cannot_reset_or_delete(stack: Stack, topic: str) -> None:
    group = unique("grp-viewer")
    in_snapshot(stack, group, consume(stack, group, topic, 10))
    viewer = stack.api("viewer")
    assert viewer.post(stack.base_url + API + group + "/offsets", json={"to": "earliest"}, timeout=10).status_code == 403
    assert viewer.delete(stack.base_url + API + group + "/", timeout=10).status_code == 403


def test_delete_offsets_of_one_topic_then_the_group(stack: Stack, topic: str) -> None:
    group = unique("grp-del")
    in_snapshot(stack, group, consume(stack, group, topic, 30))
    committed = len([p for p in api_partitions(stack, group).values() if p["committed"] is not None])
    operator = stack.api("operator")
    r = operator.delete(stack.base_url + API + group + "/offsets", params={"topic": topic, "confirm": group}, timeout=10)
    assert r.status_code == 200 and r.json()["deleted_partitions"] == committed
    assert operator.delete(stack.base_url + API + group + "/", json={"confirm": group}, timeout=10).status_code == 200
    wait_for(lambda: group not in stack.cluster.tool("kafka-consumer-groups", "--list").split(), 20, what="group gone")


def test_metrics_expose_the_lag_the_api_shows(stack: Stack, topic: str) -> None:
    group = unique("grp-metrics")
    in_snapshot(stack, group, consume(stack, group, topic, 60))
    assert stack.get("/metrics", user="viewer").status_code == 200
    import requests

    assert requests.get(stack.base_url + "/metrics", timeout=10).status_code == 401
    text = stack.get("/metrics").text
    lines = [line for line in text.splitlines() if line.startswith("kafka_consumergroup_group_sum_lag") and f'group="{group}"' in line]
    assert lines and float(lines[0].rsplit(" ", 1)[1]) == stack.get(API + group + "/").json()["total_lag"]


def rebalances(stack: Stack, group: str) -> list[dict[str, Any]]:
    r = stack.get(API + group + "/rebalances/")
    return r.json()["rebalances"] if r.status_code == 200 else []


@pytest.mark.browser
def test_members_joining_and_leaving_are_recorded_as_rebalances_and_shown_live(stack: Stack, topic: str,
                                                                             logged_in_page: Any) -> None:
    group = unique("grp-rebal")
    first = ActiveMember(stack, group, topic)
    try:
        wait_for(lambda: stack.get(API + group + "/").status_code == 200
                 and stack.get(API + group + "/").json()["members"] == 1, 30, what="first member in the snapshot")
        page = logged_in_page
        page.goto(stack.base_url + f"/clusters/local/groups/{group}/")
        page.wait_for_selector("#group-rebalances")
        page.evaluate("window.__noReload = true")
        second = ActiveMember(stack, group, topic)
        wait_for(lambda: any(r["trigger"] == "member joined" and any(m["client_id"] == f"{group}-live" for m in r["joined"])
                             for r in rebalances(stack, group)), 60, what="a 'member joined' rebalance")
        page.wait_for_selector("#group-rebalances tr[data-trigger='member joined']", timeout=15_000)
        assert page.evaluate("window.__noReload") is True
        page.wait_for_selector("#lag-chart .main-svg", timeout=15_000)  # Plotly drew the lag history
        from tests.conftest import OUTPUT

        page.screenshot(path=str(OUTPUT / "group.png"), full_page=True)
        second.close()
        wait_for(lambda: any(r["trigger"] == "member left or timed out" for r in rebalances(stack, group)), 90,
                 what="a 'member left' rebalance")
        joined = next(r for r in rebalances(stack, group) if r["trigger"] == "member joined")
        assert joined["moved"], "partitions must change owner when a second member joins"
        assert joined["duration_s"] >= 0
    finally:
        first.close()
    events = stack.get("/api/v1/clusters/local/events/", params={"kind": "rebalance"}).json()["events"]
    assert any(e["details"].get("group") == group for e in events)


def test_time_lag_of_a_paused_consumer_grows_with_the_pause(stack: Stack) -> None:
    topic = unique("grp-timelag")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    group = unique("grp-paused")
    stop = threading.Event()

    def steady() -> None:
        producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "linger.ms": 0})
        while not stop.is_set():
            producer.produce(topic, value=b"tick")
            producer.poll(0)
            time.sleep(0.05)
        producer.flush(5)

    writer = threading.Thread(target=steady, daemon=True)
    writer.start()
    try:
        consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe([topic])
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:  # keep up for a while, committing
            if consumer.consume(num_messages=500, timeout=0.2):
                consumer.commit(asynchronous=False)
        with contextlib.suppress(Exception):  # nothing new since the last commit is fine
            consumer.commit(asynchronous=False)
        paused_at = time.time()
        consumer.close()  # from here the committed offset stays while the log moves on

        def sampled() -> dict[str, Any] | None:  # a time lag from a sample begun ten seconds into the pause
            r = stack.get(API + group + "/")
            body = r.json() if r.status_code == 200 else {}
            return body if body.get("time_lag") is not None and (body.get("as_of") or 0) - paused_at >= 10 else None

        body = wait_for(sampled, 25, what="a time lag sampled ten seconds into the pause")
        # Judged at some time between the sample's start and this answer.
        earliest, latest = body["as_of"] - paused_at, time.time() - paused_at
        assert earliest - 2.5 <= body["time_lag"] <= latest + 2.5, (body["time_lag"], earliest, latest)
    finally:
        stop.set()
        writer.join(5)


def test_a_stalled_group_gets_an_error_status_and_a_healthy_one_ok(stack: Stack) -> None:
    topic = unique("grp-status")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    produce(stack, topic, 50, 1)
    healthy, stalled = unique("grp-ok"), unique("grp-stall")
    stop = threading.Event()

    def run(group: str, keep_up: bool) -> None:
        producer = Producer({"bootstrap.servers": stack.cluster.bootstrap})
        consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe([topic])
        stuck_at: list[TopicPartition] = []
        while not stop.is_set():
            producer.produce(topic, value=b"more")
            producer.poll(0)
            if keep_up or not stuck_at:
                messages = consumer.consume(num_messages=1000 if keep_up else 10, timeout=0.5)
                if messages and not keep_up:
                    consumer.commit(asynchronous=False)
                    stuck_at = consumer.committed(consumer.assignment(), timeout=5)
                    consumer.pause(consumer.assignment())  # stays in the group, reads nothing more
                    continue
                with contextlib.suppress(Exception):
                    consumer.commit(asynchronous=False)
            else:
                consumer.poll(0.5)
                consumer.commit(offsets=stuck_at, asynchronous=False)  # the same offset, again and again
        consumer.close()

    threads = [threading.Thread(target=run, args=(g, keep), daemon=True) for g, keep in ((healthy, True), (stalled, False))]
    for t in threads:
        t.start()
    try:
        def status(group: str) -> str | None:
            r = stack.get(API + group + "/")
            return r.json()["status"] if r.status_code == 200 else None

        wait_for(lambda: status(stalled) == "ERR", 60, interval=1, what="the stalled group in ERR")
        detail = stack.get(API + stalled + "/").json()
        assert {p["status"] for p in detail["partitions"] if p["status"]} == {"STALL"}
        wait_for(lambda: status(healthy) in {"OK", "WARN"}, 30, interval=1, what="a status for the healthy group")
        assert status(healthy) == "OK" or status(healthy) == "WARN"
    finally:
        stop.set()
        for t in threads:
            t.join(10)
