"""The message browser against 1,000 messages of known contents: seek, filters, export, produce,
tail, and payloads that look like HTML shown as text."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.conftest import Stack, unique, wait_for
from tests.support import time_budget

pytestmark = pytest.mark.cluster

BASE_TS = 1_700_000_000_000
XSS = "<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>"


def content(i: int) -> bytes:
    if i == 500:
        return XSS.encode()
    if i % 3 == 0:
        return json.dumps({"i": i, "kind": "order", "nested": {"n": i % 10}}).encode()
    if i % 3 == 1:
        return f"plain text {i}".encode()
    return bytes([0xFF, 0x00, i % 256, 0xFE])


@pytest.fixture(scope="module")
def known(stack: Stack) -> str:
    """A 2-partition topic: message i is in partition i % 2 at offset i // 2, written at BASE_TS + i s."""
    topic = unique("known")
    # Kept forever: the messages carry 2023 timestamps, so the cluster's 24 h time retention would
    # delete them as soon as a newer message rolls the segment (seen as a flaky test).
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "3",
                       "--config", "retention.ms=-1")
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(1000):
        producer.produce(topic, value=content(i), key=f"k{i}".encode(), partition=i % 2, timestamp=BASE_TS + i * 1000,
                         headers=[("h", f"v{i % 5}".encode())])
    assert producer.flush(30) == 0
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{topic}/").status_code == 200, 15, what="topic in snapshot")
    return topic


def read(stack: Stack, topic: str, user: str = "viewer", **params: Any) -> Any:
    return stack.get(f"/api/v1/clusters/local/topics/{topic}/messages/", user=user, params=params)


def keys(response: Any) -> list[int]:
    assert response.status_code == 200, response.text
    return [int(r["key"][1:]) for r in response.json()["records"]]


def test_seek_by_offset_returns_exactly_the_messages_from_that_offset(stack: Stack, known: str) -> None:
    assert keys(read(stack, known, start="offset", partitions="0", offset=100, limit=10)) == list(range(200, 220, 2))


def test_seek_by_timestamp_returns_the_first_messages_at_or_after_it(stack: Stack, known: str) -> None:
    got = keys(read(stack, known, start="timestamp", timestamp=BASE_TS + 700_000, limit=6))
    assert got == [700, 701, 702, 703, 704, 705]
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((BASE_TS + 900_000) / 1000))
    assert keys(read(stack, known, start="timestamp", timestamp=iso, limit=3)) == [900, 901, 902]


def test_newest_and_oldest_and_paging_cover_every_message_once(stack: Stack, known: str) -> None:
    assert sorted(keys(read(stack, known, start="newest", limit=4))) == [996, 997, 998, 999]
    seen: list[int] = []
    r = read(stack, known, start="oldest", limit=300)
    seen += keys(r)
    while r.json()["records"]:
        r = read(stack, known, start="oldest", positions=r.json()["next_positions"], limit=300)
        seen += keys(r)
    assert sorted(seen) == list(range(1000))


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"q": "plain text 12"}, {i for i in range(1000) if i % 3 == 1 and "plain text 12" in f"plain text {i}"}),
        ({"regex": r"^plain text 9\d$"}, {i for i in range(90, 100) if i % 3 == 1}),
        ({"json_path": "$.nested.n", "json_value": "3"}, {i for i in range(1000) if i % 3 == 0 and i != 500 and i % 10 == 3}),
        ({"json_path": "$.kind"}, {i for i in range(1000) if i % 3 == 0 and i != 500}),
        ({"q": "k77", "target": "key"}, {77} | set(range(770, 780))),
        ({"q": "v3", "target": "headers"}, {i for i in range(1000) if i % 5 == 3}),
    ],
)
def test_each_filter_matches_exactly_the_expected_messages(stack: Stack, known: str, params: dict, expected: set[int]) -> None:
    got = keys(read(stack, known, start="oldest", limit=1000, **params))
    assert set(got) == expected and len(got) == len(expected)


def test_binary_and_json_payloads_are_decoded_as_asked(stack: Stack, known: str) -> None:
    rows = read(stack, known, start="offset", partitions="0", offset=1, limit=2).json()["records"]  # i = 2 (binary), 4 (text)
    assert rows[0]["value_format"] == "hex" and rows[0]["value"].replace(" ", "").lower().startswith("ff00")
    as_b64 = read(stack, known, start="offset", partitions="0", offset=1, limit=1, decode_value="base64").json()["records"]
    assert as_b64[0]["value"] == "/wAC/g=="
    json_row = read(stack, known, start="offset", partitions="1", offset=1, limit=1).json()["records"][0]  # i = 3
    assert json_row["value_format"] == "json" and json.loads(json_row["value"])["nested"]["n"] == 3


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"regex": "([unclosed"}, "'regex'"),
        ({"json_path": "$.a[", "start": "oldest"}, "JSON path"),
        ({"start": "offset", "partitions": "0", "offset": 99999}, "beyond the end"),
        ({"start": "timestamp", "timestamp": "last tuesday"}, "'timestamp'"),
        ({"start": "offset"}, "'offset'"),
        ({"limit": 0}, "'limit'"),
        ({"partitions": "0,x"}, "'partitions'"),
        ({"decode_value": "rot13"}, "decode"),
        ({"format": "xml"}, "'format'"),
    ],
)
def test_bad_browse_requests_get_a_clear_400(stack: Stack, known: str, params: dict, words: str) -> None:
    r = read(stack, known, **params)
    assert r.status_code == 400, r.text
    assert words.lower() in r.json()["detail"].lower()


def test_unknown_topic_is_a_404(stack: Stack) -> None:
    r = read(stack, "no-such-topic-here")
    assert r.status_code == 404 and "no-such-topic-here" in r.json()["detail"]


def test_export_as_json_lines_and_csv_has_one_line_per_message(stack: Stack, known: str) -> None:
    lines = read(stack, known, start="oldest", limit=1000, q="plain text 1", format="jsonl").text.splitlines()
    expected = [i for i in range(1000) if i % 3 == 1 and "plain text 1" in f"plain text {i}"]
    assert sorted(int(json.loads(line)["key"][1:]) for line in lines) == expected
    csv_text = read(stack, known, start="oldest", limit=1000, q="plain text 1", format="csv").text
    assert len(csv_text.strip().splitlines()) == len(expected) + 1


def test_viewer_browses_but_cannot_produce_and_an_operator_produce_is_audited(stack: Stack, known: str) -> None:
    url = stack.base_url + f"/api/v1/clusters/local/topics/{known}/messages/"
    assert stack.api("viewer").post(url, json={"value": "x"}, timeout=10).status_code == 403
    r = stack.api("operator").post(url, json={"value": '{"a": 1}', "key": "pk", "encoding": "json", "partition": 1,
                                              "headers": {"source": "test"}}, timeout=10)
    assert r.status_code == 201, r.text
    produced = r.json()
    assert produced["partition"] == 1 and produced["offset"] == 500
    row = read(stack, known, start="offset", partitions="1", offset=500, limit=1).json()["records"][0]
    assert (row["key"], json.loads(row["value"]), row["headers"]) == ("pk", {"a": 1}, [{"key": "source", "value": "test"}])
    entries = stack.get("/api/v1/audit/").json()["entries"]
    assert any(e["action"] == "produce" and e["target"] == known and e["user"] == "operator" for e in entries)


def test_republish_copies_a_message_to_another_topic(stack: Stack, known: str) -> None:
    target = unique("copy")
    stack.cluster.tool("kafka-topics", "--create", "--topic", target, "--partitions", "1", "--replication-factor", "1")
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{target}/").status_code == 200, 15, what="target topic")
    url = stack.base_url + f"/api/v1/clusters/local/topics/{known}/messages/republish/"
    r = stack.api("operator").post(url, json={"partition": 1, "offset": 1, "target_topic": target}, timeout=10)
    assert r.status_code == 201, r.text
    row = read(stack, target, start="oldest", limit=5).json()["records"]
    assert [(x["key"], json.loads(x["value"])["i"]) for x in row] == [("k3", 3)]


@pytest.mark.browser
def test_html_payload_is_shown_as_text_and_never_runs(stack: Stack, known: str, logged_in_page: Any) -> None:
    page = logged_in_page
    page.goto(stack.base_url + f"/clusters/local/topics/{known}/messages/?run=1&start=offset&partitions=0&offset=250&limit=1")
    page.wait_for_selector("#message-rows tr")
    page.wait_for_timeout(500)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#message-rows script, #message-rows img").count() == 0
    assert XSS in page.inner_text("#message-rows")
    from tests.conftest import OUTPUT

    page.screenshot(path=str(OUTPUT / "messages.png"), full_page=True)


@pytest.mark.browser
def test_live_tail_shows_a_new_message_within_two_seconds(stack: Stack, known: str, logged_in_page: Any) -> None:
    page = logged_in_page
    page.goto(stack.base_url + f"/clusters/local/topics/{known}/messages/")
    page.wait_for_function("document.getElementById('tail-button') !== null")
    page.wait_for_timeout(1000)  # the page's websocket connects
    page.click("#tail-button")
    page.wait_for_selector("#tail-button:text('Stop tail')")
    marker = unique("tail-marker")
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap})
    producer.produce(known, value=marker.encode(), partition=0)
    producer.flush(10)
    sent = time.monotonic()
    page.wait_for_selector(f"#message-rows tr:has-text('{marker}')", timeout=time_budget(2.0) * 1000)
    assert time.monotonic() - sent < time_budget(2.0)
    page.click("#pause-button")
    paused_marker = unique("paused")
    producer.produce(known, value=paused_marker.encode(), partition=1)
    producer.flush(10)
    page.wait_for_selector("#pause-button:text('batches waiting')", timeout=5000)
    assert page.locator(f"#message-rows tr:has-text('{paused_marker}')").count() == 0
    page.click("#pause-button")
    page.wait_for_selector(f"#message-rows tr:has-text('{paused_marker}')", timeout=time_budget(2.0) * 1000)


@pytest.mark.browser
def test_scan_in_the_browser_reports_progress_and_pages(stack: Stack, known: str, logged_in_page: Any) -> None:
    page = logged_in_page
    page.goto(stack.base_url + f"/clusters/local/topics/{known}/messages/")
    page.wait_for_timeout(1000)
    page.select_option("select[name=start]", "oldest")
    page.fill("input[name=regex]", "^plain text 1\\d$")
    page.click("#scan-button")
    page.wait_for_selector("#scan-progress:text('matched 4')", timeout=10_000)
    assert page.locator("#message-rows tr").count() == 4  # i in 10..19 with i % 3 == 1: 10, 13, 16, 19


def test_paging_back_returns_the_messages_just_before_the_page(stack: Stack, known: str) -> None:
    page = read(stack, known, start="offset", partitions="0", offset=100, limit=5)  # i = 200..208
    assert keys(page) == [200, 202, 204, 206, 208]
    back = read(stack, known, direction="backward", positions="0:100", limit=3)
    assert sorted(keys(back)) == [194, 196, 198]
