"""What a person sees: login, the live overview, layout and events pages, in light and dark."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import OUTPUT, PASSWORD, Stack, unique, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.browser]


def test_login_opens_the_overview_and_saves_a_screenshot(stack: Stack, browser: Any) -> None:
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        page.goto(stack.base_url + "/clusters/local/")
        assert "/login/" in page.url
        page.fill("input[name=username]", "viewer")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("#brokers-table")
        page.wait_for_selector("#live-state:text('live')")
        assert page.locator("#brokers-table tbody tr").count() >= 3
        assert page.locator("#quorum-leader").inner_text().strip().isdigit()
        page.screenshot(path=str(OUTPUT / f"overview-{scheme}.png"), full_page=True)
        context.close()


def test_wrong_password_is_refused_with_a_message(stack: Stack, browser: Any) -> None:
    page = browser.new_page()
    page.goto(stack.base_url + "/login/")
    page.fill("input[name=username]", "viewer")
    page.fill("input[name=password]", "wrong")
    page.click("button[type=submit]")
    assert "did not match" in page.inner_text("main")
    page.close()


def test_new_topic_appears_in_counts_layout_and_events_without_reload(stack: Stack, logged_in_page: Any) -> None:
    page = logged_in_page
    topic = unique("live-topic")
    page.goto(stack.base_url + f"/clusters/local/layout/?q={topic}")
    page.wait_for_selector("#live-state:text('live')")
    assert page.locator(f'[data-topic="{topic}"]').count() == 0
    page.evaluate("window.__noReload = true")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "3")
    page.wait_for_selector(f'[data-topic="{topic}"] tr[data-partition="2"]', timeout=15_000)
    assert page.locator(f'[data-topic="{topic}"] .cell.leader').count() == 3
    assert page.evaluate("window.__noReload") is True
    page.screenshot(path=str(OUTPUT / "layout.png"), full_page=True)

    def recorded() -> bool:  # (the timeline is written after the snapshot: on a loaded host, seconds later)
        page.goto(stack.base_url + f"/clusters/local/events/?topic={topic}")
        return page.locator("tr[data-kind='topic_created']").count() > 0

    wait_for(recorded, 60, interval=1, what="the topic's creation on the timeline")
    page.screenshot(path=str(OUTPUT / "events.png"), full_page=True)
    page.goto(stack.base_url + "/clusters/local/at-risk/")
    page.wait_for_selector("#risk-offline")
    page.screenshot(path=str(OUTPUT / "at-risk.png"), full_page=True)


def test_payload_like_html_in_a_topic_name_filter_is_shown_as_text(stack: Stack, logged_in_page: Any) -> None:
    page = logged_in_page
    page.goto(stack.base_url + "/clusters/local/layout/?q=%3Cimg%20src%3Dx%20onerror%3Dwindow.__xss%3D1%3E")
    page.wait_for_selector("#live-layout")
    assert page.evaluate("window.__xss") is None
    assert page.locator("#live-layout img").count() == 0
