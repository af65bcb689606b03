"""A connector's offsets on its page, in light and dark, on the real worker: the offsets Connect keeps,
the preview of an alter and of a reset (current beside new) before anything changes, and the reset
done once the name is typed. Screenshots under test-output/."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from tests.conftest import OUTPUT, Stack, unique, wait_for
from tests.integration.test_connect import LIST, SOURCE, STRINGS, _no_connector_left, connect_status
from tests.integration.test_connect_browser import _login
from tests.support import TEST_VAR

pytestmark = [pytest.mark.cluster, pytest.mark.browser]
__all__ = ["_no_connector_left"]  # (its module-scoped cleanup, for this module too)


def _stopped_source(stack: Stack, connect_worker: str) -> tuple[str, str]:
    topic, name = unique("browser-offsets"), unique("offsets-source")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    inbox = TEST_VAR / f"{name}.txt"
    inbox.write_text("alpha\nbeta\n")
    made = stack.api("operator").post(stack.base_url + LIST, timeout=20, json={"name": name, "config": {
        "connector.class": SOURCE, "file": str(inbox), "topic": topic, **STRINGS}})
    assert made.status_code == 201, made.text
    wait_for(lambda: requests.get(f"{connect_worker}/connectors/{name}/offsets", timeout=5).json()["offsets"], 30, interval=0.5,
             what="the source's offsets")
    done = stack.api("operator").post(stack.base_url + LIST + name + "/", json={"action": "stop"}, timeout=20)
    assert done.status_code == 202, done.text
    wait_for(lambda: connect_status(connect_worker, name)["connector"]["state"] == "STOPPED", 20, what="the source stopped")
    return name, str(inbox)


def test_the_offsets_preview_on_the_connector_page_in_light_and_dark(stack: Stack, connect_worker: str, browser: Any) -> None:
    name, inbox = _stopped_source(stack, connect_worker)
    url = f"{stack.base_url}/clusters/local/connect/local/{name}/"
    for scheme in ("light", "dark"):
        page = _login(browser, stack, "operator", scheme)
        page.goto(url)
        page.wait_for_selector("#offsets .offsets-table", timeout=15_000)
        assert '"position": 11' in page.locator("#offsets .offsets-table").inner_text()
        page.locator("details.offsets-forms > summary").click()
        if scheme == "light":
            page.fill("#offsets-alter textarea[name=offsets]",
                      json.dumps([{"partition": {"filename": inbox}, "offset": {"position": 6}}], indent=2))
            page.click("#offsets-alter button[type=submit]")
            page.wait_for_selector("#offsets-preview[data-op='preview_alter'] tr[data-change='set']", timeout=15_000)
            row = page.locator("#offsets-preview-table tbody tr").first.inner_text()
            assert '"position": 11' in row and '"position": 6' in row
            page.locator("#offsets").screenshot(path=str(OUTPUT / f"connect-offsets-alter-preview-{scheme}.png"))
            assert requests.get(f"{connect_worker}/connectors/{name}/offsets", timeout=5).json()["offsets"][0]["offset"] == {"position": 11}
            page.goto(url)
            page.locator("details.offsets-forms > summary").click()
        page.click("#offsets-reset button[type=submit]")
        page.wait_for_selector("#offsets-preview[data-op='preview_reset'] tr[data-change='remove']", timeout=15_000)
        page.screenshot(path=str(OUTPUT / f"connect-offsets-reset-preview-{scheme}.png"), full_page=True)
        if scheme == "dark":
            page.fill("#offsets-reset-apply input[name=confirm]", name)
            page.click("#offsets-reset-apply button[type=submit]")
            page.wait_for_selector(".notice", timeout=15_000)
            assert f"Reset the offsets of connector '{name}'" in page.locator(".notice").inner_text()
            assert page.locator("#offsets .offsets-table td.empty").count() == 1
            assert requests.get(f"{connect_worker}/connectors/{name}/offsets", timeout=5).json() == {"offsets": []}
        page.context.close()
