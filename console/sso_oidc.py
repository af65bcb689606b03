"""OpenID Connect login: the authorization code flow with PKCE, through mozilla-django-oidc.

The login page's "Sign in with ..." button opens `AuthenticateView` (/oidc/authenticate/), which
sends the browser to the provider; the provider sends it back to `CallbackView` (/oidc/callback/),
which exchanges the code (with the PKCE verifier) for tokens, checks the ID token's signature,
issuer, audience and nonce, and logs the user in with the role their groups map to (console/sso.py).
Anything that goes wrong comes back to the login page as one sentence, never a stack trace.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.views import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from console.sso import SignOnRefused, assign_role, audit_refusal, check_not_local, groups_to_role

log = logging.getLogger(__name__)

# mozilla-django-oidc's endpoint settings, and where each comes from: CONSOLE_OIDC_<name>_ENDPOINT,
# else the issuer's discovery document.
_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": ("AUTHORIZATION", "authorization_endpoint"),
    "OIDC_OP_TOKEN_ENDPOINT": ("TOKEN", "token_endpoint"),
    "OIDC_OP_USER_ENDPOINT": ("USERINFO", "userinfo_endpoint"),
    "OIDC_OP_JWKS_ENDPOINT": ("JWKS", "jwks_uri"),
}


class SignOnUnavailable(Exception):
    """The provider cannot be used right now (unreachable, or it answered nonsense); the message says so."""


@lru_cache(maxsize=8)  # a failed read raises, and is not cached: the next login tries again
def discovery(issuer: str) -> dict[str, Any]:
    url = issuer + "/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL)
        response.raise_for_status()
        document: Any = response.json()
    except (requests.RequestException, ValueError) as exc:
        log.warning("OpenID Connect discovery at %s failed: %s", url, exc)
        raise SignOnUnavailable(f"The sign-in provider could not be reached (its discovery document at {url} "
                                "did not answer); try again later, or log in with a local account.") from None
    if not isinstance(document, dict) or str(document.get("issuer", "")).rstrip("/") != issuer:
        raise SignOnUnavailable(f"The discovery document at {url} is not that of the issuer {issuer} "
                                "(CONSOLE_OIDC_ISSUER); ask an admin to check the setting.")
    return document


def oidc_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings, with the provider's endpoints resolved when first needed."""
    if attr not in _ENDPOINTS:
        return import_from_settings(attr, *default)
    name, key = _ENDPOINTS[attr]
    configured: str = settings.CONSOLE_OIDC_ENDPOINTS.get(name, "")
    if configured:
        return configured
    value = discovery(settings.CONSOLE_OIDC_ISSUER).get(key)
    if not value:
        raise SignOnUnavailable(f"The sign-in provider's discovery document names no {key}; set "
                                f"CONSOLE_OIDC_{name}_ENDPOINT.")
    return str(value)


def claim(claims: dict[str, Any], path: str) -> Any:
    """A claim by name, or by a dotted path into nested claims (Keycloak's `realm_access.roles`)."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def groups_of(claims: dict[str, Any]) -> list[str]:
    value = claim(claims, settings.CONSOLE_OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [value]
    return [str(g) for g in value if isinstance(g, str | int)] if isinstance(value, list) else []


class OIDCBackend(OIDCAuthenticationBackend):
    """Finds or creates the console user a provider's login stands for, and sets its role."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django builds every backend for every login, local ones too: the provider's endpoints are
        # resolved only when a provider login is being completed, so a provider that is down never
        # stops a local login.
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        self.claims: dict[str, Any] = {}

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if request is None or "nonce" not in kwargs:
            return None  # only CallbackView completes a provider login (it passes the nonce it stored)
        for attr in ("OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT", "OIDC_OP_JWKS_ENDPOINT"):
            setattr(self, attr, oidc_setting(attr))
        return super().authenticate(request, **kwargs)

    def verify_token(self, token: str, **kwargs: Any) -> Any:
        """mozilla-django-oidc checks the signature and the nonce; the issuer and audience are checked here."""
        payload = super().verify_token(token, **kwargs)
        issuer = settings.CONSOLE_OIDC_ISSUER
        if issuer and str(payload.get("iss", "")).rstrip("/") != issuer:
            raise SuspiciousOperation(f"The ID token was issued by {payload.get('iss')!r}, not {issuer!r}.")
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else list(audience or [])
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("The ID token was not issued to this console (its audience is another client).")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The ID token's claims with the userinfo endpoint's on top (groups may be in either)."""
        info = super().get_userinfo(access_token, id_token, payload)
        if not isinstance(info, dict) or info.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("The provider's userinfo answer is about another subject than the ID token.")
        self.claims = {**payload, **info}
        return self.claims

    def username(self, claims: dict[str, Any]) -> str:
        value = claim(claims, settings.CONSOLE_OIDC_USERNAME_CLAIM)
        return str(value).strip() if isinstance(value, str | int) else ""

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        name = self.username(claims)
        if not name:
            raise SignOnRefused(f"The sign-in provider sent no '{settings.CONSOLE_OIDC_USERNAME_CLAIM}' claim to name "
                                "you by (CONSOLE_OIDC_USERNAME_CLAIM); ask an admin.")
        if len(name) > 150:
            raise SignOnRefused("Your user name at the sign-in provider is longer than the console's 150 characters.")
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        return self.UserModel.objects.filter(username=self.username(claims))

    def create_user(self, claims: dict[str, Any]) -> Any:
        groups_to_role(groups_of(claims), "oidc")  # refuses before an account is made for nobody
        user = self.UserModel(username=self.username(claims))
        user.set_unusable_password()
        return self.update_user(user, claims)

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        check_not_local(user)
        if user.pk is not None and not user.is_active:
            raise SignOnRefused("Your console account is deactivated; ask an admin.")
        user.email = str(claims.get("email") or user.email or "")[:254]
        user.first_name = str(claims.get("given_name") or user.first_name or "")[:150]
        user.last_name = str(claims.get("family_name") or user.last_name or "")[:150]
        groups = groups_of(claims)
        groups_to_role(groups, "oidc")
        user.save()
        assign_role(user, groups, "oidc")
        return user

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        try:
            return super().get_or_create_user(access_token, id_token, payload)
        except SignOnRefused as exc:
            request: Any = self.request
            request.sso_refusal = str(exc)
            audit_refusal(request, self.username(self.claims), "oidc", str(exc))
            raise


def _back_to_login(request: HttpRequest, message: str) -> HttpResponse:
    messages.error(request, message)
    return redirect("login")


class AuthenticateView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider's login, with state, nonce and the PKCE challenge."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # the endpoint is resolved in get(), where a failure can be shown

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.CONSOLE_OIDC_ENABLED:
            return _back_to_login(request, "Single sign-on is not configured on this console; log in with a local account.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except SignOnUnavailable as exc:
            return _back_to_login(request, str(exc))
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        response: HttpResponse = super().get(request)
        return response


class CallbackView(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back: completes the login or says why it did not."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        provider = settings.CONSOLE_OIDC_PROVIDER_NAME
        if not settings.CONSOLE_OIDC_ENABLED:
            return _back_to_login(request, "Single sign-on is not configured on this console; log in with a local account.")
        error = request.GET.get("error")
        if error:
            detail = request.GET.get("error_description") or error
            messages.error(request, f"Sign-in with {provider} did not complete: the provider said {detail[:200]!r}.")
        try:
            response: HttpResponse = super().get(request)
            return response
        except SignOnUnavailable as exc:
            return _back_to_login(request, str(exc))
        except requests.RequestException as exc:
            log.warning("OpenID Connect login failed talking to the provider: %s", exc)
            return _back_to_login(request, f"Sign-in with {provider} failed: the provider did not answer the console "
                                           "(its token or userinfo endpoint); try again later, or log in with a local account.")
        except SuspiciousOperation as exc:
            log.warning("OpenID Connect login refused: %s", exc)
            if "state" in str(exc):  # mozilla-django-oidc's words for an answer to no sign-in of this session
                return _back_to_login(request, f"This answer from {provider} belongs to no sign-in started in this browser "
                                               "(or was used already); sign in again from the login page.")
            return _back_to_login(request, f"Sign-in with {provider} was refused: {exc} Sign in again from the login page.")

    def login_failure(self) -> HttpResponse:
        request: Any = self.request
        if not request.GET.get("error"):
            reason = getattr(request, "sso_refusal", "") or "the provider's answer could not be used (see the console's log)."
            messages.error(request, f"Sign-in with {settings.CONSOLE_OIDC_PROVIDER_NAME} failed: {reason}")
        return HttpResponseRedirect(self.failure_url)
