"""What a masked viewer sees in the message browser on a real topic: the mark, never the value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.conftest import OUTPUT, PASSWORD, Stack, unique, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.browser]

EMAIL, CARD, TOKEN = "masked.customer@example.com", "4000123412341234", "Bearer sekrit-token-77"


def test_a_masked_viewer_sees_the_mark_in_the_message_browser_in_light_and_dark(stack: Stack, browser: Any) -> None:
    topic = unique("masked-orders")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all"})
    value = {"order": 7, "customer": {"email": EMAIL, "name": "Ada"}, "cards": [{"number": CARD, "expiry": "12/29"}]}
    producer.produce(topic, value=json.dumps(value).encode(), key=b"order-7",
                     headers=[("authorization", TOKEN.encode()), ("trace", b"abc-1")])
    assert producer.flush(30) == 0
    created = stack.api("admin").post(stack.base_url + "/api/v1/masking-policies/", timeout=10, json={
        "name": f"pii {topic}", "topic_kind": "literal", "topic_pattern": topic, "applies_to": ["viewer"], "exempt": ["admin"],
        "targets": [{"kind": "json_path", "path": "$.customer.email"}, {"kind": "json_path", "path": "$.cards[*].number"},
                    {"kind": "header", "name": "authorization"}]})
    assert created.status_code == 201, created.text
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{topic}/").status_code == 200, 30,
             what="the topic in the watcher's snapshot")

    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        page.goto(stack.base_url + "/login/")
        page.fill("input[name=username]", "viewer")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/clusters/local/")
        # Without run=1 the page asks its websocket for the newest messages.
        page.goto(stack.base_url + f"/clusters/local/topics/{topic}/messages/")
        page.wait_for_selector("#message-rows tr:has-text('Ada')", timeout=15_000)
        rows = page.inner_text("#message-rows")
        assert '"email": "****"' in rows and '"number": "****"' in rows and "authorization=****" in rows
        assert "trace=abc-1" in rows and "order-7" in rows
        html = page.content()
        for secret in (EMAIL, CARD, "sekrit-token-77"):
            assert secret not in html
        page.screenshot(path=str(OUTPUT / f"messages-masked-{scheme}.png"), full_page=True)
        context.close()

    clear = stack.get(f"/api/v1/clusters/local/topics/{topic}/messages/", params={"start": "oldest"}).json()["records"]
    assert EMAIL in clear[0]["value"]  # the admin is exempt
