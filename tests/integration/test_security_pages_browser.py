"""What an admin sees on the SCRAM users and quotas pages of a secured cluster (Chromium on Django's live
server, the secured test broker behind it): odd names as text, a dry run before a change, the quota a
(user, client-id) gets, in light and dark (screenshots under var/screenshots/)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from console import gateway
from console.snapshots import store
from console.snapshots.model import BrokerState, Snapshot
from tests.integration.security_oracle import console_on_the_secured_broker, scram_users
from tests.secured_broker import SASL_SSL_PORT
from tests.support import CHROMIUM_ARGS, ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = ROOT / "var" / "screenshots"
CLUSTER = "secured-pages"
ODD_USER = "O'Brien \"<b>bold</b>\" 数据"
PASSWORD = "pages-admin-password"


@pytest.fixture(scope="module")
def browser(django_db_setup: None, secured_broker: Any) -> Iterator[Any]:
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


@pytest.fixture
def cluster(browser: Any, settings: Any, redis_server: str) -> Iterator[str]:
    with console_on_the_secured_broker(settings, CLUSTER) as name:
        snap = Snapshot(cluster=name, version=int(time.time() * 1000), taken_at=time.time(), checked_at=time.time(),
                        reachable=True, cluster_id="secured", controller_id=1,
                        brokers={1: BrokerState(1, "127.0.0.1", SASL_SSL_PORT, None, True)})
        store.save(snap, snap.content_bytes())
        gw = gateway.for_cluster(name)
        for user, mechanism, iterations in [(ODD_USER, "SCRAM-SHA-512", 8192), ("orders-service", "SCRAM-SHA-256", 4096),
                                            ("orders-service", "SCRAM-SHA-512", 4096), ("analytics", "SCRAM-SHA-512", 16384)]:
            gw.upsert_scram_credential(user, mechanism, "a-long-password", iterations)
        for entity, values in [
            ((("user", "orders-service"),), {"producer_byte_rate": 102400.0, "consumer_byte_rate": 204800.0}),
            ((("user", "orders-service"), ("client-id", None)), {"request_percentage": 25.0}),
            ((("user", None),), {"producer_byte_rate": 1048576.0}),
            ((("client-id", "<script>alert(1)</script>"),), {"consumer_byte_rate": 1024.0}),
            ((("ip", None),), {"connection_creation_rate": 50.0}),
        ]:
            gw.alter_client_quotas(entity, values, [])
        yield name


@pytest.fixture
def admin(db: None) -> str:
    user = User.objects.create_user("pages-admin", password=PASSWORD)
    user.groups.set([Group.objects.get_or_create(name="admin")[0]])  # (a transactional test empties the tables after it)
    return user.username


def logged_in(browser: Any, live_server: Any, username: str, scheme: str) -> Any:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return page


def test_the_users_page_in_light_and_dark_with_a_dry_run_first(browser: Any, live_server: Any, cluster: str, admin: str) -> None:
    for scheme in ("light", "dark"):
        page = logged_in(browser, live_server, admin, scheme)
        page.goto(f"{live_server.url}/clusters/{cluster}/security/users/")
        rows = page.locator("#users-table tbody tr")
        assert ODD_USER in [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())]
        assert page.locator("#users-table b").count() == 0, "a name is shown as text, never as markup"
        page.screenshot(path=str(SCREENSHOTS / f"security-users-{scheme}.png"), full_page=True)
        page.context.close()

    page = logged_in(browser, live_server, admin, "light")
    page.goto(f"{live_server.url}/clusters/{cluster}/security/users/")
    page.fill("#user-form input[name=name]", "payments")
    page.fill("#user-form input[name=password]", "payments-password")
    page.click("#user-form button[value='0']")
    assert page.locator("#users-outcome").inner_text().startswith("Dry run: Would create user 'payments' with SCRAM-SHA-512")
    assert "payments" not in scram_users()
    page.screenshot(path=str(SCREENSHOTS / "security-users-dry-run.png"), full_page=True)
    page.fill("#user-form input[name=password]", "payments-password")
    page.click("#user-form button[value='1']")
    assert "Created user 'payments'" in page.locator(".notice").inner_text()
    assert scram_users()["payments"] == {"SCRAM-SHA-512": 4096}
    page.context.close()


def test_the_quotas_page_in_light_and_dark_with_the_quota_that_applies(browser: Any, live_server: Any, cluster: str,
                                                                       admin: str) -> None:
    for scheme in ("light", "dark"):
        page = logged_in(browser, live_server, admin, scheme)
        page.goto(f"{live_server.url}/clusters/{cluster}/security/quotas/?user=orders-service&client_id=checkout")
        assert page.locator("#quotas-table tbody tr").count() == 5
        assert "<script>alert(1)</script>" in page.locator("#quotas-table").inner_text()
        effective = page.locator("#effective-table").inner_text()
        assert "request_percentage\t25 %\tuser 'orders-service' + default client-id (rule 2)" in effective, effective
        page.screenshot(path=str(SCREENSHOTS / f"security-quotas-{scheme}.png"), full_page=True)
        page.context.close()
