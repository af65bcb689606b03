"""What an operator sees of alerting on the real cluster, in light and dark: the rules with a preview,
an alert appearing on the open active page as the group falls behind (no reload) and leaving it as
the group catches up, and the history that keeps both. Screenshots under test-output/."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.conftest import OUTPUT, PASSWORD, Stack, unique, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.browser]


def _login(browser: Any, stack: Stack, user: str, scheme: str) -> Any:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(stack.base_url + "/login/")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return page


def _dead_letter_shown(page: Any) -> bool:
    page.reload()
    return bool(page.locator("#dead-letters-table").count() == 1)


def _lagging_group(stack: Stack, records: int) -> tuple[str, str]:
    """A topic with `records` records and a group whose committed offsets are at its start."""
    topic, group = unique("alerted-orders"), unique("alerted-billing")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "3")
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all"})
    for i in range(records):
        producer.produce(topic, value=json.dumps({"order": i}).encode(), key=str(i).encode())
    assert producer.flush(30) == 0
    return topic, group


def _commit(stack: Stack, group: str, topic: str, where: str) -> None:
    stack.cluster.tool("kafka-consumer-groups", "--group", group, "--topic", topic, "--reset-offsets", where, "--execute")


def test_rules_live_alerts_and_history_in_light_and_dark(stack: Stack, browser: Any) -> None:
    topic, group = _lagging_group(stack, 60)
    admin, operator = stack.api("admin"), stack.api("operator")
    hook = unique("ops-webhook")
    made = admin.post(stack.base_url + "/api/v1/alert-channels/", timeout=10,
                      json={"name": hook, "kind": "webhook", "url": "https://hooks.example.invalid/kafka", "max_attempts": 1})
    assert made.status_code == 201, made.text
    rules = stack.base_url + "/api/v1/clusters/local/alert-rules/"
    lag_rule = unique("billing lagging")
    for body in ({"name": lag_rule, "condition": "group_lag", "target": group, "threshold": 10, "for_seconds": 0,
                  "severity": "warning", "channels": []},
                 {"name": unique("brokers gone"), "condition": "broker_down", "for_seconds": 10, "severity": "critical",
                  "channels": [hook]},
                 {"name": unique("orders stalled"), "condition": "group_status", "status": "STOP", "target": "re:alerted-.*",
                  "for_seconds": 120, "severity": "critical", "channels": [hook], "enabled": False}):
        r = operator.post(rules, json=body, timeout=10)
        assert r.status_code == 201, r.text

    # The rules page, its form's preview naming what fires now (nothing yet: the group has no offsets).
    for scheme in ("light", "dark"):
        page = _login(browser, stack, "operator", scheme)
        page.goto(f"{stack.base_url}/clusters/local/alerts/rules/")
        assert lag_rule in page.locator("#rules-table").inner_text()
        page.fill("#rule-form input[name=name]", "any broker down")
        page.select_option("#rule-condition", "broker_down")
        page.click("#rule-form button[value=preview]")
        page.wait_for_selector("#rule-preview")
        assert "0 matches" in page.locator("#rule-preview h2").inner_text()
        page.screenshot(path=str(OUTPUT / f"alerts-rules-{scheme}.png"), full_page=True)
        page.context.close()

    # The active page, open while the group falls behind: the alert arrives over the websocket.
    page = _login(browser, stack, "operator", "light")
    page.goto(f"{stack.base_url}/clusters/local/alerts/")
    page.wait_for_selector("#live-state:text('live')")
    page.evaluate("window.__notReloaded = true")
    _commit(stack, group, topic, "--to-earliest")
    row = page.locator(f"#alerts-table tr:has-text('{group}')")
    row.wait_for(timeout=30_000)
    assert page.evaluate("window.__notReloaded") is True
    assert "60 records behind" in row.inner_text() and "firing" in row.inner_text()
    page.screenshot(path=str(OUTPUT / "alerts-active-light.png"), full_page=True)
    dark = _login(browser, stack, "operator", "dark")
    dark.goto(f"{stack.base_url}/clusters/local/alerts/")
    dark.locator(f"#alerts-table tr:has-text('{group}') button").click()  # acknowledge
    assert "acknowledged by operator" in dark.locator(f"#alerts-table tr:has-text('{group}')").inner_text()
    dark.screenshot(path=str(OUTPUT / "alerts-active-dark.png"), full_page=True)
    dark.context.close()

    # The group catches up: the alert leaves the open page and is resolved in the history.
    _commit(stack, group, topic, "--to-latest")
    wait_for(lambda: page.locator(f"#alerts-table tr:has-text('{group}')").count() == 0, 30, what="the alert to resolve on the page")
    page.context.close()
    for scheme in ("light", "dark"):
        page = _login(browser, stack, "viewer", scheme)
        page.goto(f"{stack.base_url}/clusters/local/alerts/history/?rule={lag_rule}")
        text = page.locator("#history-table").inner_text()
        assert "resolved" in text and group in text and "acknowledged by operator" in text
        page.screenshot(path=str(OUTPUT / f"alerts-history-{scheme}.png"), full_page=True)
        page.context.close()

    # An admin's channel page (the header with the admin's own tabs still fits): a test message to a
    # host that does not exist becomes a dead letter after its one attempt.
    for scheme in ("light", "dark"):
        page = _login(browser, stack, "admin", scheme)
        page.goto(f"{stack.base_url}/clusters/local/alerts/channels/{hook}/")
        assert page.evaluate("(() => { const n = document.querySelector('nav.tabs'); return n.scrollWidth <= n.clientWidth; })()"), \
            "every header tab fits at 1360 px"
        if scheme == "light":
            page.click("#channel-test button")
            assert "A test message is on its way" in page.locator(".notice").inner_text()
            wait_for(partial(_dead_letter_shown, page), 60, interval=1, what="the test message to become a dead letter")
        page.screenshot(path=str(OUTPUT / f"alerts-channel-{scheme}.png"), full_page=True)
        page.goto(f"{stack.base_url}/clusters/local/alerts/silences/")
        page.fill("#silence-form input[name=value0]", lag_rule)
        page.fill("#silence-form input[name=comment]", f"billing replay ({scheme})")
        page.click("#silence-form button[type=submit]")
        assert f"billing replay ({scheme})" in page.locator("#silences-table").inner_text()
        page.screenshot(path=str(OUTPUT / f"alerts-silences-{scheme}.png"), full_page=True)
        page.context.close()
