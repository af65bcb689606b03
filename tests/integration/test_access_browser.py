"""Scoped roles on the real cluster, as a person meets them: an admin binds a user to one team's topics on
the access page, and that user's topics list, live updates and topic pages show that team's only."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import OUTPUT, PASSWORD, Stack, unique
from tests.support import manage

pytestmark = [pytest.mark.cluster, pytest.mark.browser]


def _login(browser: Any, stack: Stack, user: str, scheme: str = "light") -> Any:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(stack.base_url + "/login/")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return page


def test_a_user_bound_to_one_teams_topics_sees_only_those_live(stack: Stack, browser: Any) -> None:
    team = unique("acl")
    mine, theirs, later = f"{team}-a.orders", f"{team}-b.orders", f"{team}-a.payments"
    user = f"{team}-user"
    manage("ensureuser", user, "--role", "none", "--password", PASSWORD)
    for topic in (mine, theirs):
        stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")

    admin = _login(browser, stack, "admin")
    admin.goto(stack.base_url + "/access/")
    admin.fill("input[name=subject]", user)
    admin.select_option("select[name=role]", "viewer")
    admin.fill("input[name=cluster]", "local")
    admin.select_option("select[name=topic_kind]", "prefix")
    admin.fill("input[name=topic_pattern]", f"{team}-a.")
    admin.select_option("select[name=group_kind]", "none")
    admin.click("form.form button[type=submit]")
    admin.wait_for_selector(f"td:has-text('{user}')")
    for scheme in ("light", "dark"):
        admin.emulate_media(color_scheme=scheme)
        admin.screenshot(path=str(OUTPUT / f"access-{scheme}.png"), full_page=True)
    admin.context.close()

    page = _login(browser, stack, user)
    page.goto(stack.base_url + f"/clusters/local/topics/?q={team}")
    page.wait_for_selector("#live-state:text('live')")
    page.wait_for_selector(f"text={mine}", timeout=15_000)
    assert theirs not in page.inner_text("main")
    page.evaluate("window.__noReload = true")
    stack.cluster.tool("kafka-topics", "--create", "--topic", later, "--partitions", "1", "--replication-factor", "1")
    page.wait_for_selector(f"text={later}", timeout=15_000)  # (pushed live, cut to the user's names)
    assert theirs not in page.inner_text("main") and page.evaluate("window.__noReload") is True
    page.screenshot(path=str(OUTPUT / "topics-scoped.png"), full_page=True)

    response = page.goto(stack.base_url + f"/clusters/local/topics/{theirs}/")
    assert response is not None and response.status == 403
    assert f"You may not see topic '{theirs}'" in page.inner_text("main")
    assert page.goto(stack.base_url + "/audit/").status == 403  # type: ignore[union-attr]
    page.context.close()
