"""What a person sees under the strict Content-Security-Policy: every page loads with the header and
no violation, its live features still work, and the messages page opens on the newest messages."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from tests.conftest import OUTPUT, PASSWORD, Stack, unique, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.browser]

MESSAGES = 90
PARTITIONS = 3
# Message i goes to partition i % 3 at offset i // 3, one second after message i - 1; so the newest
# 50 across partitions are i = 89..40, newest first.
BASE_TS = int(time.time() * 1000) - 3_600_000

VIOLATION_WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sourceFile || "") + ":" + e.lineNumber);
});
"""


@pytest.fixture(scope="module")
def names(stack: Stack) -> tuple[str, str]:
    """A topic with MESSAGES JSON messages over 3 partitions, and an empty group that read 30 of them."""
    topic, group = unique("csp-topic"), unique("csp-group")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", str(PARTITIONS), "--replication-factor", "3")
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all"})
    for i in range(MESSAGES):
        producer.produce(topic, value=json.dumps({"i": i, "kind": "order", "amount": i * 3.5}).encode(), key=f"k{i}".encode(),
                         partition=i % PARTITIONS, timestamp=BASE_TS + i * 1000, headers=[("source", b"csp-test")])
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 30
    while got < 30 and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(num_messages=30 - got, timeout=1) if m.error() is None)
    consumer.commit(asynchronous=False)
    consumer.close()
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{topic}/").status_code == 200, 15, what="topic in snapshot")
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/consumer-groups/{group}/").status_code == 200, 30,
             what="group in snapshot")
    return topic, group


def watched(page: Any) -> list[str]:
    """Violations reported on this page: the console's 'Refused to ...' lines, and (read later from
    window.__csp) the securitypolicyviolation events."""
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    page.add_init_script(VIOLATION_WATCH)
    return console


def assert_strict_header(response: Any) -> None:
    policy = response.headers.get("content-security-policy", "")
    directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
    assert directives.get("script-src") == ["'self'"], policy
    assert "'unsafe-eval'" not in policy and directives.get("object-src") == ["'none'"], policy


@pytest.fixture
def admin_page(browser: Any, stack: Stack) -> Iterator[tuple[Any, list[str]]]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    console = watched(page)
    page.goto(stack.base_url + "/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/clusters/local/")
    yield page, console
    context.close()


def test_every_page_loads_with_the_policy_and_no_violation(stack: Stack, names: tuple[str, str], admin_page: Any,
                                                           browser: Any) -> None:
    page, console = admin_page
    topic, group = names
    pages = {
        "overview": "/clusters/local/", "layout": "/clusters/local/layout/", "at-risk": "/clusters/local/at-risk/",
        "events": "/clusters/local/events/", "topics": "/clusters/local/topics/", "topic": f"/clusters/local/topics/{topic}/",
        "messages": f"/clusters/local/topics/{topic}/messages/", "create topic": "/clusters/local/topics/new/",
        "configs": f"/clusters/local/topics/{topic}/configs/", "purge": f"/clusters/local/topics/{topic}/purge/",
        "delete": f"/clusters/local/topics/{topic}/delete/", "groups": "/clusters/local/groups/",
        "group": f"/clusters/local/groups/{group}/", "reset": f"/clusters/local/groups/{group}/reset/", "audit": "/audit/",
    }
    for name, path in pages.items():
        response = page.goto(stack.base_url + path)
        assert response is not None and response.status == 200, f"{name}: {response and response.status}"
        assert_strict_header(response)
        if page.locator("#live-status").count():
            page.wait_for_selector("#live-state:text('live')", timeout=10_000)  # its websocket connected
        if name == "messages":
            page.wait_for_selector("#message-rows tr", timeout=10_000)
        if name == "group":
            # The lag chart's Plotly.js draws scatter lines without eval.
            drawn = page.evaluate("""() => {
                var d = document.createElement("div"); document.querySelector("main").appendChild(d);
                return Plotly.newPlot(d, [{x: [1, 2, 3], y: [3, 1, 2], type: "scatter", mode: "lines"},
                                          {x: [1, 2, 3], y: [1, 2, 1], type: "scatter", mode: "lines", yaxis: "y2"}],
                                      {height: 200, yaxis2: {overlaying: "y", side: "right"}})
                  .then(function () { return d.querySelectorAll(".scatterlayer .trace").length; });
            }""")
            assert drawn == 2
        page.wait_for_timeout(300)
        assert page.evaluate("window.__csp") == [], f"{name}: {page.evaluate('window.__csp')}"
        assert console == [], f"{name}: {console}"

    context = browser.new_context()
    anonymous = context.new_page()
    console = watched(anonymous)
    response = anonymous.goto(stack.base_url + "/login/")
    assert response is not None and response.status == 200
    assert_strict_header(response)
    anonymous.wait_for_timeout(300)
    assert anonymous.evaluate("window.__csp") == [] and console == []
    context.close()


def test_theme_toggle_cluster_switch_and_broker_choice_work_without_inline_handlers(stack: Stack, admin_page: Any) -> None:
    page, console = admin_page
    page.goto(stack.base_url + "/clusters/local/")
    page.emulate_media(color_scheme="light")
    page.click(".theme-toggle")
    assert page.evaluate("document.documentElement.getAttribute('data-theme')") == "dark"
    assert page.evaluate("localStorage.getItem('theme')") == "dark"
    page.reload()
    assert page.evaluate("document.documentElement.getAttribute('data-theme')") == "dark"  # applied from <head>
    page.click(".theme-toggle")
    assert page.evaluate("document.documentElement.getAttribute('data-theme')") == "light"

    # The test stack has one cluster, so the page shows no switch: give it the one a two-cluster
    # console renders, and check that choosing a cluster opens that cluster's URL.
    page.evaluate("""() => {
        var s = document.createElement("select"); s.className = "cluster-switch";
        s.innerHTML = '<option value="local" data-href="/clusters/local/">local</option>' +
                      '<option value="other" data-href="/clusters/local/events/">other</option>';
        document.querySelector(".topbar").appendChild(s);
    }""")
    page.select_option(".cluster-switch", "other")
    page.wait_for_url("**/clusters/local/events/")

    page.goto(stack.base_url + "/clusters/local/at-risk/?broker=1")
    page.select_option("select[name=broker]", "2")
    page.wait_for_url("**/at-risk/?broker=2")
    assert page.evaluate("window.__csp") == [] and console == []


def test_messages_page_shows_the_newest_messages_without_a_click(stack: Stack, names: tuple[str, str], browser: Any) -> None:
    topic, _ = names
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        console = watched(page)
        page.goto(stack.base_url + "/login/")
        page.fill("input[name=username]", "operator")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/clusters/local/")
        page.goto(stack.base_url + f"/clusters/local/topics/{topic}/messages/")
        page.wait_for_selector("#message-rows tr", timeout=10_000)
        rows = page.locator("#message-rows tr")
        assert rows.count() == 50
        order = page.evaluate("""() => Array.from(document.querySelectorAll("#message-rows tr"))
            .map(function (r) { return Number(r.dataset.offset) * 3 + Number(r.dataset.partition); })""")
        assert order == list(range(MESSAGES - 1, MESSAGES - 51, -1))  # all partitions, newest first
        assert "matched 50" in page.inner_text("#scan-progress")
        assert page.is_visible("#earlier-page") and page.is_hidden("#no-messages")
        assert page.evaluate("window.__csp") == [] and console == []
        page.screenshot(path=str(OUTPUT / f"messages-newest-{scheme}.png"), full_page=False)
        # The earlier page continues exactly below the newest 50.
        page.click("#earlier-page")
        page.wait_for_selector("#message-rows tr")
        earlier = page.evaluate("""() => Array.from(document.querySelectorAll("#message-rows tr"))
            .map(function (r) { return Number(r.dataset.offset) * 3 + Number(r.dataset.partition); })""")
        assert earlier == list(range(MESSAGES - 51, -1, -1))
        context.close()


def test_a_scan_that_matches_nothing_says_so_and_frees_the_buttons(stack: Stack, names: tuple[str, str], logged_in_page: Any) -> None:
    topic, _ = names
    page = logged_in_page
    page.goto(stack.base_url + f"/clusters/local/topics/{topic}/messages/")
    page.wait_for_selector("#message-rows tr", timeout=10_000)
    page.select_option("select[name=start]", "oldest")
    page.fill("input[name=q]", "nothing-matches-this")
    page.click("#scan-button")
    page.wait_for_selector("#scan-progress:text('matched 0')", timeout=10_000)  # a scan of 90 ends by itself
    assert page.is_disabled("#stop-button") and page.is_enabled("#scan-button")
    assert page.is_visible("#no-messages")
