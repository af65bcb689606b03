"""OpenID Connect login (authorization code flow with PKCE) through a real provider, django-oauth-toolkit's.

The console is driven with Django's test client; the provider's login and consent pages with a plain
HTTP session, as a browser would post them (the browser itself is in test_sso_browser.py).
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth.models import User
from django.core.exceptions import SuspiciousOperation
from django.test import Client
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from console.models import AuditEntry
from console.sso import SESSION_GROUPS, SESSION_PROVIDER
from console.sso_oidc import OIDCBackend
from tests.sso_servers import CLIENT_ID, OIDC_PASSWORD

pytestmark = pytest.mark.django_db


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


def hidden_inputs(page: str) -> dict[str, str]:
    fields = {}
    for tag in re.findall(r"<input[^>]*>", page):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name and 'type="hidden"' in tag:
            fields[name.group(1)] = html.unescape(value.group(1)) if value else ""
    return fields


def approve_at_provider(authorize_url: str, username: str, password: str = OIDC_PASSWORD) -> str:
    """Log in on the provider's page and allow the console; returns where the provider sends the browser."""
    browser = requests.Session()
    login_page = browser.get(authorize_url, timeout=10)
    assert "/accounts/login/" in login_page.url, login_page.text[:500]
    consent = browser.post(login_page.url, timeout=10, data={
        "username": username, "password": password, "csrfmiddlewaretoken": browser.cookies["provider_csrftoken"],
        "next": parse_qs(urlsplit(login_page.url).query)["next"][0]})
    assert 'name="allow"' in consent.text, consent.text[:500]
    answer = browser.post(consent.url, data={**hidden_inputs(consent.text), "allow": "Authorize"}, timeout=10,
                          allow_redirects=False)
    assert answer.status_code == 302, answer.text[:500]
    return str(answer.headers["Location"])


def sign_in(client: Client, username: str) -> Any:
    """The whole flow: the console's button, the provider, and back to the console's callback."""
    start = client.get("/oidc/authenticate/?next=/clusters/local/topics/")
    assert start.status_code == 302
    back = urlsplit(approve_at_provider(start["Location"], username))
    assert back.netloc == "testserver" and back.path == "/oidc/callback/"
    return client.get(back.path + "?" + back.query, follow=True)


def roles_of(username: str) -> list[str]:
    return sorted(n for n in User.objects.get(username=username).groups.values_list("name", flat=True) if ":" not in n)


def test_the_console_asks_the_provider_for_a_code_with_a_pkce_challenge(oidc_console) -> None:
    provider = oidc_console()
    start = Client().get("/oidc/authenticate/")
    target = urlsplit(start["Location"])
    query = parse_qs(target.query)
    assert f"{target.scheme}://{target.netloc}{target.path}" == provider.issuer + "/authorize/"
    assert query["response_type"] == ["code"] and query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43 and query["nonce"] and query["state"]


def test_a_provider_user_in_kafka_ops_signs_in_as_operator(oidc_console) -> None:
    client = Client()
    response = sign_in(client, "olga")
    assert response.redirect_chain[-1][0] == "/clusters/local/topics/"
    assert roles_of("olga") == ["operator"]
    user = User.objects.get(username="olga")
    assert user.email == "olga@example.org" and not user.has_usable_password()
    assert client.session[SESSION_GROUPS] == ["kafka-ops"] and client.session[SESSION_PROVIDER] == "oidc"
    assert AuditEntry.objects.filter(username="olga", action="login", outcome="ok").count() == 1


def test_the_highest_mapped_group_wins(oidc_console) -> None:
    sign_in(Client(), "ada")
    assert roles_of("ada") == ["admin"]


def test_a_provider_user_in_no_mapped_group_is_a_viewer(oidc_console) -> None:
    sign_in(Client(), "nina")
    assert roles_of("nina") == ["viewer"]


def test_a_user_in_no_mapped_group_is_refused_when_required_and_the_refusal_is_audited(oidc_console) -> None:
    oidc_console(require_mapped_group=True)
    client = Client()
    response = sign_in(client, "nina")
    assert "_auth_user_id" not in client.session
    assert "Sign-in with Test IdP failed: None of your groups at the sign-in provider is given a console role" in text(response)
    assert not User.objects.filter(username="nina").exists()
    refusal = AuditEntry.objects.get(username="nina", action="login")
    assert refusal.outcome == "refused" and refusal.details["via"] == "oidc"


def test_a_local_account_is_not_taken_over_by_a_provider_user_of_the_same_name(oidc_console) -> None:
    User.objects.create_user("olga", password="local-password-1")
    client = Client()
    response = sign_in(client, "olga")
    assert "_auth_user_id" not in client.session
    assert "The console has a local account named 'olga'" in text(response)
    assert roles_of("olga") == []


def test_the_login_page_offers_the_provider_only_when_it_is_configured(settings, oidc_console) -> None:
    page = text(Client().get("/login/?next=/clusters/local/"))
    assert 'href="/oidc/authenticate/?next=%2Fclusters%2Flocal%2F">Sign in with Test IdP</a>' in page
    settings.CONSOLE_OIDC_ENABLED = False
    assert "Sign in with" not in text(Client().get("/login/"))
    response = Client().get("/oidc/authenticate/", follow=True)
    assert "Single sign-on is not configured on this console" in text(response)


def test_a_provider_that_cannot_be_reached_is_said_so_on_the_login_page(oidc_console) -> None:
    oidc_console(CONSOLE_OIDC_ISSUER="http://127.0.0.1:9/o")
    response = Client().get("/oidc/authenticate/", follow=True)
    assert response.redirect_chain[-1][0] == "/login/"
    assert "The sign-in provider could not be reached" in text(response)


def test_a_callback_the_console_did_not_start_is_refused_with_a_message(oidc_console) -> None:
    client = Client()
    response = client.get("/oidc/callback/?code=forged&state=forged", follow=True)
    assert "_auth_user_id" not in client.session
    assert response.redirect_chain[-1][0] == "/login/"
    assert "Sign-in with Test IdP failed" in text(response)


def test_an_answer_to_another_sign_in_is_refused_with_a_message(oidc_console) -> None:
    client = Client()
    client.get("/oidc/authenticate/")  # a sign-in of this session, whose state the answer below does not carry
    response = client.get("/oidc/callback/?code=forged&state=forged", follow=True)
    assert "_auth_user_id" not in client.session
    assert "This answer from Test IdP belongs to no sign-in started in this browser" in text(response)


def test_a_refusal_at_the_provider_is_shown_in_its_words(oidc_console) -> None:
    response = Client().get("/oidc/callback/?error=access_denied&error_description=The+user+denied+access", follow=True)
    assert "Sign-in with Test IdP did not complete: the provider said 'The user denied access'." in text(response)


@pytest.mark.parametrize(("claims", "refusal"), [
    ({"aud": "another-client"}, "not issued to this console"),
    ({"iss": "http://127.0.0.1:9/o"}, "was issued by 'http://127.0.0.1:9/o'"),
])
def test_an_id_token_for_another_client_or_from_another_issuer_is_refused(oidc_console, monkeypatch, claims, refusal) -> None:
    provider = oidc_console()
    signed = {"iss": provider.issuer, "aud": [CLIENT_ID, "other"], "sub": "1"}
    monkeypatch.setattr(OIDCAuthenticationBackend, "verify_token", lambda self, token, **kwargs: {**signed, **claims})
    with pytest.raises(SuspiciousOperation, match=refusal):
        OIDCBackend().verify_token("a-token-whose-signature-mozilla-django-oidc-checked")
    monkeypatch.setattr(OIDCAuthenticationBackend, "verify_token", lambda self, token, **kwargs: signed)
    assert OIDCBackend().verify_token("a-token") == signed
