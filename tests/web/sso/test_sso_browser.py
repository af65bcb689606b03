"""What a person sees: the login page's sign-in button, the provider's own pages, and the console
landing with the role the provider's or the directory's groups map to (Chromium, the console served
by Django's live server on a written snapshot)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.sso_servers import LDAP_PASSWORD, OIDC_PASSWORD
from tests.support import CHROMIUM_ARGS, OUTPUT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def roles_of(username: str) -> list[str]:
    return sorted(n for n in User.objects.get(username=username).groups.values_list("name", flat=True) if ":" not in n)


@pytest.fixture(scope="module")
def browser(django_db_setup: None) -> Iterator[Any]:
    """Chromium for this module only, started after the test database: Playwright's sync API keeps an
    event loop in this thread, where Django refuses ORM calls unless told that loop is not their caller."""
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "1")
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True,
                                         args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    yield context.new_page()
    context.close()


def test_the_login_page_shows_the_sign_in_button_in_light_and_dark(browser, live_server, oidc_console) -> None:
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1100, "height": 700}, color_scheme=scheme)
        page = context.new_page()
        page.goto(live_server.url + "/login/")
        button = page.locator("#sso-oidc")
        assert button.inner_text() == "Sign in with Test IdP"
        assert button.is_visible()
        page.screenshot(path=str(OUTPUT / f"login-sso-{scheme}.png"), full_page=True)
        context.close()


def test_oidc_login_through_the_providers_pages_lands_with_the_mapped_operator_role(page, live_server, oidc_console,
                                                                                    snapshot) -> None:
    provider = oidc_console()
    page.goto(live_server.url + "/clusters/local/topics/")
    assert "/login/" in page.url
    page.click("#sso-oidc")
    page.wait_for_url(provider.url + "/accounts/login/**")
    page.fill("#provider-username", "olga")
    page.fill("#provider-password", OIDC_PASSWORD)
    page.click("#provider-login")
    page.click("input[name=allow]")  # the provider's consent page
    page.wait_for_url(live_server.url + "/clusters/local/topics/")
    assert page.get_by_role("link", name="+ New topic").is_visible()  # operators only
    assert roles_of("olga") == ["operator"]
    page.screenshot(path=str(OUTPUT / "sso-oidc-operator-topics.png"), full_page=True)


def test_ldap_login_on_the_console_form_lands_with_the_mapped_operator_role(page, live_server, ldap_console,
                                                                            snapshot) -> None:
    page.goto(live_server.url + "/clusters/local/topics/")
    page.fill("input[name=username]", "otto")
    page.fill("input[name=password]", LDAP_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(live_server.url + "/clusters/local/topics/")
    assert page.get_by_role("link", name="+ New topic").is_visible()
    assert roles_of("otto") == ["operator"]
