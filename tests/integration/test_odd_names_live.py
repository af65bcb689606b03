"""Real consumer groups whose ids use characters Kafka allows but URLs and HTML do not expect.

Each group commits offsets on a real topic. Checked against Kafka's own tool: the groups list page,
the topic page and their live updates render and link each group to its own page; each group's
page, API detail (lag equal to `kafka-consumer-groups --describe`), reset dry run and delete work.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from console.converters import encode_name
from tests.conftest import Stack, unique, wait_for

pytestmark = pytest.mark.cluster

ODD = ["team/service", "</script>", "a%2Fb", "a?b#c", "with space", "ünïcode"]
API = "/api/v1/clusters/local/consumer-groups/"
PARTITIONS = 2


def segment(gid: str) -> str:
    """How a client puts a group id in a path: the console's escape (`/` -> ~2F), then percent-encoding."""
    return quote(encode_name(gid), safe="")


@pytest.fixture(scope="module")
def odd(stack: Stack) -> dict[str, Any]:
    topic = unique("oddnames")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", str(PARTITIONS), "--replication-factor", "1")
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap})
    for i in range(20):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    prefix = unique("g")  # the ids are shared across runs on one cluster: a prefix keeps them apart
    groups = [f"{prefix}-{name}" for name in ODD]
    for n, gid in enumerate(groups):  # committed offsets without consuming: n+1 and 2 of 10 per partition
        consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": gid, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(topic, 0, n + 1), TopicPartition(topic, 1, 2)], asynchronous=False)
        consumer.close()
    listed = set(stack.cluster.tool("kafka-consumer-groups", "--list").splitlines())
    assert set(groups) <= listed, sorted(set(groups) - listed)

    def all_listed() -> bool:
        rows = stack.get(API, params={"q": prefix, "per_page": 100}).json()["results"]
        return {r["group"] for r in rows} == set(groups)

    wait_for(all_listed, 60, what="every odd group in the console's list")
    return {"topic": topic, "prefix": prefix, "groups": groups}


def describe(stack: Stack, gid: str, topic: str) -> dict[int, tuple[int, int, int]]:
    """kafka-consumer-groups --describe: partition -> (committed, end, lag). Columns are split
    from the right, since the group id itself may contain spaces."""
    out = stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", gid)
    rows = {}
    for line in out.splitlines():
        if not line.startswith(gid + " "):
            continue
        cols = line[len(gid):].split()
        if cols[0] == topic:
            rows[int(cols[1])] = (int(cols[2]), int(cols[3]), int(cols[4]))
    return rows


def test_api_detail_lag_equals_kafka_and_reset_dry_run_works(stack: Stack, odd: dict[str, Any]) -> None:
    topic = odd["topic"]
    for gid in odd["groups"]:
        expected = describe(stack, gid, topic)
        assert len(expected) == PARTITIONS, (gid, expected)

        def matches(gid: str = gid, expected: dict[int, tuple[int, int, int]] = expected) -> bool:
            r = stack.get(API + segment(gid) + "/")
            assert r.status_code == 200, (gid, r.status_code, r.text[:200])
            body = r.json()
            assert body["group"] == gid
            ours = {p["partition"]: (p["committed"], p["end_offset"], p["lag"]) for p in body["partitions"] if p["topic"] == topic}
            return ours == expected

        wait_for(matches, 30, what=f"the API detail of {gid!r} to equal kafka-consumer-groups --describe")
        r = stack.api("operator").post(stack.base_url + API + segment(gid) + "/offsets",
                                       json={"to": "earliest", "topics": [topic], "dry_run": True}, timeout=20)
        assert r.status_code == 200, (gid, r.status_code, r.text[:300])
        assert sorted((o["partition"], o["new"]) for o in r.json()["offsets"]) == [(p, 0) for p in range(PARTITIONS)]


def test_pages_render_link_each_group_to_its_own_page_and_update_live(stack: Stack, odd: dict[str, Any],
                                                                      logged_in_page: Any) -> None:
    page = logged_in_page
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    def on_dialog(dialog: Any) -> None:  # an alert() would mean an id ran as script
        errors.append("a dialog opened: " + dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    response = page.goto(stack.base_url + f"/clusters/local/groups/?q={quote(odd['prefix'])}&per_page=100")
    assert response.status == 200
    page.wait_for_selector("#groups-table")
    rows = page.eval_on_selector_all("#groups-table tr[data-group]", "rows => rows.map(r => r.dataset.group)")
    assert sorted(rows) == sorted(odd["groups"])
    links = page.eval_on_selector_all("#groups-table tr[data-group] a", "as => as.map(a => [a.textContent, a.getAttribute('href')])")
    assert sorted(text for text, _ in links) == sorted(odd["groups"])
    assert "-&lt;/script&gt;</a>" in page.content()  # the id is text, not markup

    # A live update: more messages raise every group's lag; the rows change without a reload.
    lag_before = {gid: page.locator(f"#groups-table tr[data-group={css_string(gid)}] td").nth(3).inner_text()
                  for gid in odd["groups"]}
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap})
    for i in range(10):
        producer.produce(odd["topic"], value=f"more{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    for gid in odd["groups"]:
        cell = page.locator(f"#groups-table tr[data-group={css_string(gid)}] td").nth(3)

        def updated(cell: Any = cell, gid: str = gid) -> bool:
            return bool(cell.inner_text() != lag_before[gid])

        wait_for(updated, 30, what=f"a live lag update of {gid!r}")

    # The topic page lists the same groups, each linking to its page.
    page.goto(stack.base_url + f"/clusters/local/topics/{odd['topic']}/")
    page.wait_for_selector("#groups-table")
    topic_rows = page.eval_on_selector_all("#groups-table tr[data-group]", "rows => rows.map(r => r.dataset.group)")
    assert set(odd["groups"]) <= set(topic_rows)

    for text, href in links:
        r = page.goto(stack.base_url + href)
        assert r.status == 200, (text, href)
        assert text in page.locator("h1").inner_text(), (text, href)
    assert not errors, errors


def css_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def test_each_odd_group_can_be_deleted(stack: Stack, odd: dict[str, Any]) -> None:
    for gid in odd["groups"]:
        r = stack.api("operator").delete(stack.base_url + API + segment(gid) + "/", json={"confirm": gid}, timeout=20)
        assert r.status_code == 200, (gid, r.status_code, r.text[:300])
        assert r.json()["deleted"] == gid
    left = set(stack.cluster.tool("kafka-consumer-groups", "--list").splitlines())
    assert not set(odd["groups"]) & left, sorted(set(odd["groups"]) & left)
    r = stack.get(API, params={"q": odd["prefix"], "per_page": 100})
    assert r.status_code == 200 and r.json()["results"] == [], r.text[:300]
