"""The single sign-on tests' real servers (tests/sso_servers.py) and the console's settings for them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from console import sso_oidc
from console.sso import parse_role_map
from tests.sso_servers import Directory, Provider, running_oidc_provider, running_slapd

# The console's callback as the test client sees it; the browser tests add the live server's.
TEST_CLIENT_CALLBACK = "http://testserver/oidc/callback/"
LOCAL_BACKENDS = ["axes.backends.AxesStandaloneBackend", "console.user_backend.ModelBackend"]


@pytest.fixture(scope="session")
def directory() -> Iterator[Directory]:
    with running_slapd() as running:
        yield running


@pytest.fixture(scope="session")
def provider(live_server: Any) -> Iterator[Provider]:
    with running_oidc_provider(f"{TEST_CLIENT_CALLBACK} {live_server.url}/oidc/callback/") as running:
        yield running


@pytest.fixture
def ldap_console(settings: Any, directory: Directory, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Configure the console's LDAP login as CONSOLE_LDAP_* would (call again to change a setting)."""
    from console.sso_settings import ldap_settings

    def configure(require_mapped_group: bool = False, **env: str) -> None:
        values = {**directory.env(), **env}
        for name, value in values.items():
            monkeypatch.setitem(os.environ, name, value)
        for name, value in ldap_settings().items():
            setattr(settings, name, value)
        settings.CONSOLE_LDAP_ENABLED = True
        settings.CONSOLE_SSO_ROLE_MAPS = {**settings.CONSOLE_SSO_ROLE_MAPS,
                                          "ldap": parse_role_map("CONSOLE_LDAP_ROLE_MAP", values["CONSOLE_LDAP_ROLE_MAP"])}
        settings.CONSOLE_SSO_REQUIRE_MAPPED_GROUP = require_mapped_group
        backends = [b for b in settings.AUTHENTICATION_BACKENDS if b != "console.sso_ldap.LDAPBackend"]
        settings.AUTHENTICATION_BACKENDS = [*backends, "console.sso_ldap.LDAPBackend"]

    configure()
    return configure


@pytest.fixture
def oidc_console(settings: Any, provider: Provider) -> Callable[..., Provider]:
    """Configure the console's OpenID Connect login for the test provider (call again to change a setting)."""

    def configure(role_map: str = '{"kafka-ops": "operator", "kafka-admins": "admin"}',
                  require_mapped_group: bool = False, **overrides: Any) -> Provider:
        for name, value in {**provider.settings(), **overrides}.items():
            setattr(settings, name, value)
        settings.CONSOLE_SSO_ROLE_MAPS = {**settings.CONSOLE_SSO_ROLE_MAPS,
                                          "oidc": parse_role_map("CONSOLE_OIDC_ROLE_MAP", role_map)}
        settings.CONSOLE_SSO_REQUIRE_MAPPED_GROUP = require_mapped_group
        backends = [b for b in settings.AUTHENTICATION_BACKENDS if b != "console.sso_oidc.OIDCBackend"]
        settings.AUTHENTICATION_BACKENDS = [*backends, "console.sso_oidc.OIDCBackend"]
        sso_oidc.discovery.cache_clear()
        return provider

    configure()
    return configure
