"""Settings of single sign-on (OpenID Connect and LDAP), read from CONSOLE_OIDC_* and CONSOLE_LDAP_*.

Each is off unless configured: OpenID Connect when CONSOLE_OIDC_CLIENT_ID is set, LDAP when
CONSOLE_LDAP_SERVER_URI is. console/settings.py imports every name here; SSO_BACKENDS are added
after the local accounts' backends, which stay for small teams. docs/settings.md lists them all.
"""

from __future__ import annotations

from typing import Any

from console.env import SettingError, env_bool, env_float, env_str
from console.sso import parse_role_map

_OIDC_ENDPOINTS = ("AUTHORIZATION", "TOKEN", "USERINFO", "JWKS")

CONSOLE_SSO_REQUIRE_MAPPED_GROUP = env_bool("CONSOLE_SSO_REQUIRE_MAPPED_GROUP", False)

CONSOLE_OIDC_ENABLED = bool(env_str("CONSOLE_OIDC_CLIENT_ID", ""))
CONSOLE_OIDC_PROVIDER_NAME = env_str("CONSOLE_OIDC_PROVIDER_NAME", "single sign-on")
CONSOLE_OIDC_ISSUER = env_str("CONSOLE_OIDC_ISSUER", "").rstrip("/")
CONSOLE_OIDC_GROUPS_CLAIM = env_str("CONSOLE_OIDC_GROUPS_CLAIM", "groups")
CONSOLE_OIDC_USERNAME_CLAIM = env_str("CONSOLE_OIDC_USERNAME_CLAIM", "preferred_username")
# Endpoints not given come from the issuer's discovery document (console/sso_oidc.py), read once.
CONSOLE_OIDC_ENDPOINTS = {name: env_str(f"CONSOLE_OIDC_{name}_ENDPOINT", "") for name in _OIDC_ENDPOINTS}
if CONSOLE_OIDC_ENABLED and not CONSOLE_OIDC_ISSUER and not all(CONSOLE_OIDC_ENDPOINTS.values()):
    raise SettingError("CONSOLE_OIDC_CLIENT_ID is set: set CONSOLE_OIDC_ISSUER too (its discovery document names the "
                       "endpoints), or every one of CONSOLE_OIDC_AUTHORIZATION_ENDPOINT, CONSOLE_OIDC_TOKEN_ENDPOINT, "
                       "CONSOLE_OIDC_USERINFO_ENDPOINT and CONSOLE_OIDC_JWKS_ENDPOINT")

# mozilla-django-oidc's own settings. The endpoints are resolved by the console's subclasses.
OIDC_RP_CLIENT_ID = env_str("CONSOLE_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = env_str("CONSOLE_OIDC_CLIENT_SECRET", "")
OIDC_RP_SCOPES = env_str("CONSOLE_OIDC_SCOPES", "openid profile email")
OIDC_RP_SIGN_ALGO = env_str("CONSOLE_OIDC_SIGN_ALGO", "RS256")
OIDC_USE_PKCE = True  # authorization code flow with PKCE (S256), whether or not the client has a secret
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_TIMEOUT = env_float("CONSOLE_OIDC_TIMEOUT", 10.0, minimum=1.0)
OIDC_VERIFY_SSL = env_bool("CONSOLE_OIDC_VERIFY_TLS", True)
OIDC_CALLBACK_CLASS = "console.sso_oidc.CallbackView"
OIDC_AUTHENTICATE_CLASS = "console.sso_oidc.AuthenticateView"
LOGIN_REDIRECT_URL_FAILURE = "/login/"

CONSOLE_LDAP_ENABLED = bool(env_str("CONSOLE_LDAP_SERVER_URI", ""))
CONSOLE_LDAP_GROUP_TYPES = ("groupOfNames", "groupOfUniqueNames", "posixGroup", "nestedGroupOfNames", "activeDirectory")

CONSOLE_SSO_ROLE_MAPS = {
    "oidc": parse_role_map("CONSOLE_OIDC_ROLE_MAP", env_str("CONSOLE_OIDC_ROLE_MAP", "")),
    "ldap": parse_role_map("CONSOLE_LDAP_ROLE_MAP", env_str("CONSOLE_LDAP_ROLE_MAP", "")),
}

SSO_BACKENDS = [
    *(["console.sso_ldap.LDAPBackend"] if CONSOLE_LDAP_ENABLED else []),
    *(["console.sso_oidc.OIDCBackend"] if CONSOLE_OIDC_ENABLED else []),
]


def ldap_settings() -> dict[str, Any]:
    """django-auth-ldap's AUTH_LDAP_* settings from CONSOLE_LDAP_* (python-ldap is imported only when
    LDAP is configured)."""
    import ldap
    from django_auth_ldap import config

    group_type = env_str("CONSOLE_LDAP_GROUP_TYPE", "groupOfNames")
    types: dict[str, Any] = {
        "groupOfNames": config.GroupOfNamesType, "groupOfUniqueNames": config.GroupOfUniqueNamesType,
        "posixGroup": config.PosixGroupType, "nestedGroupOfNames": config.NestedGroupOfNamesType,
        "activeDirectory": config.ActiveDirectoryGroupType,
    }
    if group_type not in types:
        raise SettingError(f"CONSOLE_LDAP_GROUP_TYPE must be one of {', '.join(CONSOLE_LDAP_GROUP_TYPES)}, not {group_type!r}")
    user_base = env_str("CONSOLE_LDAP_USER_SEARCH_BASE", "")
    if not user_base:
        raise SettingError("CONSOLE_LDAP_SERVER_URI is set: set CONSOLE_LDAP_USER_SEARCH_BASE too (where users are "
                           "looked up, e.g. ou=people,dc=example,dc=org)")
    group_base = env_str("CONSOLE_LDAP_GROUP_SEARCH_BASE", "")
    group_filter = env_str("CONSOLE_LDAP_GROUP_SEARCH_FILTER", "(objectClass=*)")
    timeout = env_float("CONSOLE_LDAP_TIMEOUT", 5.0, minimum=0.5)
    try:
        user_search = config.LDAPSearch(user_base, ldap.SCOPE_SUBTREE,
                                        env_str("CONSOLE_LDAP_USER_SEARCH_FILTER", "(uid=%(user)s)"))
        group_search = config.LDAPSearch(group_base, ldap.SCOPE_SUBTREE, group_filter) if group_base else None
    except (TypeError, ValueError) as exc:
        raise SettingError(f"CONSOLE_LDAP_USER_SEARCH_FILTER or CONSOLE_LDAP_GROUP_SEARCH_FILTER is not usable: {exc}") from None
    values: dict[str, Any] = {
        "AUTH_LDAP_SERVER_URI": env_str("CONSOLE_LDAP_SERVER_URI", ""),
        "AUTH_LDAP_BIND_DN": env_str("CONSOLE_LDAP_BIND_DN", ""),
        "AUTH_LDAP_BIND_PASSWORD": env_str("CONSOLE_LDAP_BIND_PASSWORD", ""),
        "AUTH_LDAP_START_TLS": env_bool("CONSOLE_LDAP_START_TLS", False),
        "AUTH_LDAP_USER_SEARCH": user_search,
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        # Every call has a timeout: a directory that does not answer cannot hold a login page.
        "AUTH_LDAP_CONNECTION_OPTIONS": {ldap.OPT_NETWORK_TIMEOUT: timeout, ldap.OPT_TIMEOUT: timeout,
                                         ldap.OPT_REFERRALS: 0},
    }
    if group_search is not None:
        values["AUTH_LDAP_GROUP_SEARCH"] = group_search
        values["AUTH_LDAP_GROUP_TYPE"] = types[group_type]()
    return values


# What console/settings.py takes: the settings only (django-auth-ldap's AUTH_LDAP_* when LDAP is configured).
__all__ = [
    "CONSOLE_SSO_REQUIRE_MAPPED_GROUP",
    "CONSOLE_OIDC_ENABLED",
    "CONSOLE_OIDC_PROVIDER_NAME",
    "CONSOLE_OIDC_ISSUER",
    "CONSOLE_OIDC_GROUPS_CLAIM",
    "CONSOLE_OIDC_USERNAME_CLAIM",
    "CONSOLE_OIDC_ENDPOINTS",
    "OIDC_RP_CLIENT_ID",
    "OIDC_RP_CLIENT_SECRET",
    "OIDC_RP_SCOPES",
    "OIDC_RP_SIGN_ALGO",
    "OIDC_USE_PKCE",
    "OIDC_PKCE_CODE_CHALLENGE_METHOD",
    "OIDC_TIMEOUT",
    "OIDC_VERIFY_SSL",
    "OIDC_CALLBACK_CLASS",
    "OIDC_AUTHENTICATE_CLASS",
    "LOGIN_REDIRECT_URL_FAILURE",
    "CONSOLE_LDAP_ENABLED",
    "CONSOLE_LDAP_GROUP_TYPES",
    "CONSOLE_SSO_ROLE_MAPS",
    "SSO_BACKENDS",
]
if CONSOLE_LDAP_ENABLED:
    _LDAP = ldap_settings()
    globals().update(_LDAP)
    __all__.extend(sorted(_LDAP))
