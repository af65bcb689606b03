"""LDAP login on the console's login form, against a real slapd: the directory's groups set the role."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from console.models import AuditEntry
from console.sso import SESSION_GROUPS, SESSION_PROVIDER
from tests.sso_servers import LDAP_BASE, LDAP_PASSWORD

pytestmark = pytest.mark.django_db


def roles_of(username: str) -> list[str]:
    return sorted(n for n in User.objects.get(username=username).groups.values_list("name", flat=True) if ":" not in n)


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


def log_in(username: str, password: str = LDAP_PASSWORD) -> tuple[Client, Any]:
    client = Client()
    response = client.post("/login/", {"username": username, "password": password}, follow=True)
    return client, response


def test_a_directory_user_in_the_operators_group_logs_in_as_operator(ldap_console) -> None:
    client, response = log_in("otto")
    assert response.redirect_chain and response.redirect_chain[0][0] == "/"
    assert roles_of("otto") == ["operator"]
    user = User.objects.get(username="otto")
    assert user.email == "otto@example.org" and not user.has_usable_password()
    assert client.session[SESSION_PROVIDER] == "ldap"
    assert "kafka-operators" in client.session[SESSION_GROUPS]
    assert f"cn=kafka-operators,ou=groups,{LDAP_BASE}" in client.session[SESSION_GROUPS]
    assert AuditEntry.objects.filter(username="otto", action="login", outcome="ok").count() == 1


def test_a_group_may_be_mapped_by_its_dn(ldap_console) -> None:
    ldap_console(CONSOLE_LDAP_ROLE_MAP=f'{{"CN=Kafka-Admins,OU=groups,{LDAP_BASE.upper()}": "admin"}}')
    log_in("alma")
    assert roles_of("alma") == ["admin"]


def test_a_directory_user_in_no_mapped_group_is_a_viewer(ldap_console) -> None:
    log_in("vera")
    assert roles_of("vera") == ["viewer"]


def test_a_user_in_no_mapped_group_is_refused_when_a_mapped_group_is_required(ldap_console) -> None:
    ldap_console(require_mapped_group=True)
    client, response = log_in("vera")
    assert "_auth_user_id" not in client.session
    assert "None of your groups at the sign-in provider is given a console role" in text(response)
    assert not User.objects.filter(username="vera").exists()
    refusal = AuditEntry.objects.get(username="vera", action="login")
    assert refusal.outcome == "refused" and refusal.details["via"] == "ldap"


def test_the_role_follows_the_directory_groups_at_each_login(ldap_console) -> None:
    log_in("otto")
    assert roles_of("otto") == ["operator"]
    ldap_console(CONSOLE_LDAP_ROLE_MAP='{"kafka-operators": "admin"}')
    log_in("otto")
    assert roles_of("otto") == ["admin"]


def test_a_wrong_directory_password_is_refused(ldap_console) -> None:
    client, response = log_in("otto", "not-the-password")
    assert "_auth_user_id" not in client.session
    assert "did not match" in text(response)


def test_a_local_account_is_not_taken_over_by_a_directory_user_of_the_same_name(ldap_console) -> None:
    User.objects.create_user("otto", password="local-password-1")
    client, response = log_in("otto")
    assert "_auth_user_id" not in client.session
    assert "The console has a local account named 'otto'" in text(response)
    assert roles_of("otto") == []
    client, _ = log_in("otto", "local-password-1")  # the local account still logs in with its own password
    assert client.session["_auth_user_id"] == str(User.objects.get(username="otto").pk)


def test_a_directory_that_cannot_be_reached_is_said_so(ldap_console) -> None:
    ldap_console(CONSOLE_LDAP_SERVER_URI="ldap://127.0.0.1:9/", CONSOLE_LDAP_TIMEOUT="2")
    client, response = log_in("otto")
    assert "_auth_user_id" not in client.session
    assert "The LDAP directory could not be reached" in text(response)
