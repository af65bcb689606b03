"""What an admin sees of a hanging transaction (Chromium on Django's live server, the session's cluster
behind it): the transactions page with the hanging one first and highlighted, in light and dark
(screenshots under var/screenshots/), the topic page's LSO it holds and the group page's flag of a
read_committed group it blocks (the running console's watcher keeps them), and its abort after the id
is typed again."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as RdTopicPartition
from django.contrib.auth.models import Group, User

from console.converters import encode_name
from tests.integration.test_transactions import CLUSTER, hanging, write_plain  # noqa: F401 - `hanging` is a fixture
from tests.integration.test_transactions_lso import commit
from tests.support import CHROMIUM_ARGS, ROOT, Cluster, Stack, unique, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = ROOT / "var" / "screenshots"
PASSWORD = "txn-pages-admin-password"


@pytest.fixture(scope="module")
def browser(django_db_setup: None) -> Iterator[Any]:
    """Chromium for this module, started after the test database (Playwright's sync API keeps an event
    loop in this thread, where Django refuses ORM calls unless told that loop is not their caller)."""
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "1")
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True,
                                         args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()


def logged_in(browser: Any, live_server: Any, scheme: str) -> Any:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", "txn-pages-admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return page


def held_pages_in(browser: Any, live_server: Any, scheme: str, topic: str, tid: str, group: str) -> None:
    """The topic page's LSO held by the transaction and the group page's blocked flag, live from the watcher."""
    page = logged_in(browser, live_server, scheme)

    def lso_shown() -> bool:
        # The LSO (the transactions loop's look) and the high watermark (a sampling pass) arrive
        # separately: the row is judged once both show, the LSO held at 0 below a high watermark of 15.
        page.goto(f"{live_server.url}/clusters/{CLUSTER}/topics/{encode_name(topic)}/")
        row = page.locator("#partitions-table tr[data-partition='0']")
        cell = row.locator("td.lso")
        return bool(cell.count()) and cell.inner_text().startswith("0") and "txn" in cell.inner_text() and "15" in row.inner_text()

    wait_for(lso_shown, 30, interval=1, what="the topic's LSO held by the transaction below the high watermark")
    page.screenshot(path=str(SCREENSHOTS / f"transactions-topic-lso-{scheme}.png"), full_page=True)

    def blocked_shown() -> bool:
        page.goto(f"{live_server.url}/clusters/{CLUSTER}/groups/{encode_name(group)}/")
        return bool(page.locator(f".blocked-by[data-transactional-id='{tid}']").count())

    wait_for(blocked_shown, 30, interval=1, what="the group blocked by the transaction")
    row = page.locator(f"#group-partitions tr[data-tp='{topic}-0']").inner_text().split()
    assert row[2:7] == ["0", "0", "15", "15", "0"], row  # committed, LSO, end offset, lag, readable lag
    assert page.locator("#group-partitions .tag:text('blocked')").is_visible()
    assert "what a read_committed consumer can read" in page.locator("#lag-note").inner_text()
    page.screenshot(path=str(SCREENSHOTS / f"transactions-group-blocked-{scheme}.png"), full_page=True)
    page.context.close()


def test_a_hanging_transaction_first_and_highlighted_in_light_and_dark_then_aborted(
        browser: Any, live_server: Any, stack: Stack, kafka_cluster: Cluster, hanging: tuple[str, str]) -> None:  # noqa: F811
    topic, tid = hanging
    user = User.objects.create_user("txn-pages-admin", password=PASSWORD)
    user.groups.set([Group.objects.get_or_create(name="admin")[0]])
    write_plain(kafka_cluster, topic, 10)
    group = unique("rc-group")  # a read_committed group stopped at the LSO (nothing it may read before it)
    committer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": group, "isolation.level": "read_committed"})
    commit(committer, [RdTopicPartition(topic, 0, 0)])
    committer.close()
    for scheme in ("light", "dark"):
        held_pages_in(browser, live_server, scheme, topic, tid, group)
    for scheme in ("light", "dark"):
        page = logged_in(browser, live_server, scheme)

        def shown(page: Any = page) -> bool:
            page.goto(f"{live_server.url}/clusters/{CLUSTER}/transactions/")
            return bool(page.locator(f"#transactions-table tr.row-failing[data-transactional-id='{tid}']").count())

        wait_for(shown, 30, interval=1, what="the transaction shown hanging")
        # Other tests on the shared cluster may leave hanging transactions too: every hanging row comes first.
        failing = [("row-failing" in (c or "")) for c in page.locator("#transactions-table tbody tr").evaluate_all(
            "rows => rows.map(r => r.className)")]
        assert failing == sorted(failing, reverse=True), "hanging ones first"
        row = page.locator(f"#transactions-table tr[data-transactional-id='{tid}']")
        assert f"{topic}-0: 0 / 15" in row.inner_text() and "stuck" in row.inner_text()
        assert page.locator("#transactions-hanging").is_visible()
        page.screenshot(path=str(SCREENSHOTS / f"transactions-{scheme}.png"), full_page=True)
        page.context.close()

    page = logged_in(browser, live_server, "light")
    page.goto(f"{live_server.url}/clusters/{CLUSTER}/transactions/")
    row = page.locator(f"#transactions-table tr[data-transactional-id='{tid}']")
    row.locator("input[name=confirm]").fill("not-the-id")
    row.locator("button[type=submit]").click()
    assert f"Type the transactional id '{tid}'" in page.locator("#transactions-error").inner_text()
    page.goto(f"{live_server.url}/clusters/{CLUSTER}/transactions/")
    row = page.locator(f"#transactions-table tr[data-transactional-id='{tid}']")
    row.locator("input[name=confirm]").fill(tid)
    row.locator("button[type=submit]").click()
    page.wait_for_load_state()
    assert f"Aborted the transaction of '{tid}' on {topic}-0." in page.content()
    assert page.locator(f"#transactions-table tr.row-failing[data-transactional-id='{tid}']").count() == 0
    page.context.close()
