"""What an operator sees of Kafka Connect on the real worker, in light and dark: the connectors list and a
connector's page following state changes made elsewhere (no reload), a failed task with its trace,
and the create form with Connect's message on the field it is about. Screenshots under test-output/."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conftest import OUTPUT, PASSWORD, Stack, unique, wait_for
from tests.connect_worker import kill_worker, start_worker
from tests.integration.test_connect import LIST, SINK, SOURCE, STRINGS, _no_connector_left, connect_status, file_pipeline
from tests.support import TEST_VAR, time_budget

pytestmark = [pytest.mark.cluster, pytest.mark.browser]
__all__ = ["_no_connector_left"]  # (its module-scoped cleanup, for this module too)


def _login(browser: Any, stack: Stack, user: str, scheme: str) -> Any:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(stack.base_url + "/login/")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return page


def _act(stack: Stack, name: str, action: str) -> None:
    done = stack.api("operator").post(stack.base_url + LIST + name + "/", json={"action": action}, timeout=20)
    assert done.status_code == 202, done.text


def _failing_sink(stack: Stack) -> str:
    topic, name = unique("browser-fail"), unique("broken-sink")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    blocker = TEST_VAR / unique("not-a-directory")
    blocker.write_text("x\n")
    config = {"connector.class": SINK, "file": str(blocker / "out.txt"), "topics": topic, **STRINGS}
    assert stack.api("operator").post(stack.base_url + LIST, json={"name": name, "config": config}, timeout=20).status_code == 201
    return name


def test_connectors_list_and_detail_follow_connect_live_in_light_and_dark(stack: Stack, connect_worker: str, browser: Any) -> None:
    _, source, sink = file_pipeline(stack, "browser")
    broken = _failing_sink(stack)
    row = f"tr[data-connector='{source}']"
    # Connect starts the new task after its own rebalance, slow on a loaded host: the page is held to
    # what Connect reports, so wait for Connect to report the failure first.
    wait_for(lambda: any(t["state"] == "FAILED" for t in connect_status(connect_worker, broken)["tasks"]), 60,
             what="Connect to report the broken sink's task failed")
    for scheme in ("light", "dark"):
        page = _login(browser, stack, "admin", scheme)
        page.goto(f"{stack.base_url}/clusters/local/connect/")
        page.wait_for_selector(f"{row}[data-state='RUNNING']", timeout=15_000)
        page.wait_for_selector(f"tr[data-connector='{broken}'] .task[data-state='FAILED']", timeout=15_000)
        assert page.evaluate("(() => { const n = document.querySelector('nav.tabs'); return n.scrollWidth <= n.clientWidth; })()"), \
            "every header tab fits at 1360 px"
        assert page.locator(".connect-reach").first.inner_text() == "answering"
        page.screenshot(path=str(OUTPUT / f"connect-list-{scheme}.png"), full_page=True)
        if scheme == "light":
            # A change made elsewhere reaches the open page without a reload, within 2 s of Connect reporting it.
            marker = page.evaluate("(() => { window.__notReloaded = true; return true; })()")
            _act(stack, source, "pause")
            reported = wait_for(lambda: time.monotonic() if connect_status(connect_worker, source)["connector"]["state"] == "PAUSED"
                                else None, 15, interval=0.05, what="Connect to report the pause")
            page.wait_for_selector(f"{row}[data-state='PAUSED']", timeout=15_000)
            assert time.monotonic() - reported <= time_budget(2.0)
            assert marker and page.evaluate("window.__notReloaded === true")
            _act(stack, source, "resume")
            page.wait_for_selector(f"{row}[data-state='RUNNING']", timeout=15_000)

        page.goto(f"{stack.base_url}/clusters/local/connect/local/{sink}/")
        page.wait_for_selector(".connector-state[data-state='RUNNING']", timeout=15_000)
        assert page.locator(".config-table tr[data-key='topics']").count() == 1
        if scheme == "light":
            page.evaluate("window.__notReloaded = true")
            _act(stack, sink, "pause")
            page.wait_for_selector(".connector-state[data-state='PAUSED']", timeout=15_000)
            assert page.evaluate("window.__notReloaded === true")
            page.click("button[name=action][value=resume]")
            page.wait_for_selector(".notice", timeout=15_000)
            assert f"Resumed connector '{sink}'." in page.locator(".notice").inner_text()
            wait_for(lambda: connect_status(connect_worker, sink)["connector"]["state"] == "RUNNING", 60,
                     what="Connect to report the sink resumed")
            page.wait_for_selector(".connector-state[data-state='RUNNING']", timeout=15_000)
        page.screenshot(path=str(OUTPUT / f"connect-detail-{scheme}.png"), full_page=True)

        page.goto(f"{stack.base_url}/clusters/local/connect/local/{broken}/")
        page.wait_for_selector("tr[data-task='0'][data-state='FAILED']", timeout=15_000)
        page.locator("tr[data-task='0'] details.trace summary").click()
        assert "out.txt" in page.locator("tr[data-task='0'] details.trace pre").inner_text()
        page.screenshot(path=str(OUTPUT / f"connect-failed-task-{scheme}.png"), full_page=True)

        page.goto(f"{stack.base_url}/clusters/local/connect/new/?connect=local&plugin={SOURCE}&name={unique('form')}")
        page.fill("input[name='cfg:file']", "/tmp/lines.txt")
        page.click("button.primary[type=submit]")
        page.wait_for_selector(".config-field.has-errors[data-field='topic'] .field-error", timeout=15_000)
        page.screenshot(path=str(OUTPUT / f"connect-form-{scheme}.png"), full_page=True)

        page.goto(f"{stack.base_url}/clusters/local/connect/plugins/")
        assert page.locator(f"tr[data-plugin='{SOURCE}']").count() == 1
        page.context.close()


def test_a_viewer_sees_connectors_without_the_buttons_that_change_them(stack: Stack, connect_worker: str, browser: Any) -> None:
    _, source, _ = file_pipeline(stack, "viewer")
    page = _login(browser, stack, "viewer", "light")
    page.goto(f"{stack.base_url}/clusters/local/connect/local/{source}/")
    page.wait_for_selector(".connector-state", timeout=15_000)
    assert page.locator(".connector-actions").count() == 0
    assert page.locator("text=Restart task").count() == 0
    page.context.close()


def test_an_open_page_says_when_the_worker_goes_and_comes_back(stack: Stack, connect_worker: str, browser: Any) -> None:
    _, source, _ = file_pipeline(stack, "gone")
    page = _login(browser, stack, "operator", "light")
    page.goto(f"{stack.base_url}/clusters/local/connect/")
    page.wait_for_selector(f"tr[data-connector='{source}'][data-state='RUNNING']", timeout=15_000)
    page.evaluate("window.__notReloaded = true")
    kill_worker()
    try:
        killed = time.monotonic()
        page.wait_for_selector(".connect-error", timeout=10_000)
        assert time.monotonic() - killed <= time_budget(5)
        page.wait_for_selector(".connect-error:has-text('is unreachable (connection refused)')", timeout=5_000)
        assert page.locator(".connect-reach").inner_text() == "unreachable"
        assert page.locator(f"tr[data-connector='{source}']").count() == 1  # the last known list stays
        page.screenshot(path=str(OUTPUT / "connect-unreachable-light.png"), full_page=True)
    finally:
        start_worker()
    page.wait_for_selector(".connect-reach:text('answering')", timeout=30_000)
    assert page.locator(".connect-error").count() == 0 and page.evaluate("window.__notReloaded === true")
    page.context.close()
