"""API credentials: user tokens that expire, and the metrics-only bearer secret.

User tokens (`Authorization: Token <key>`, DRF's authtoken) older than CONSOLE_API_TOKEN_TTL_HOURS are
refused with a sentence saying so and how to get a new one (`manage.py rotatetoken NAME`), so a
leaked token stops working by itself.

CONSOLE_METRICS_TOKEN is a secret for Prometheus (`Authorization: Bearer <secret>`) that opens
`/metrics` and nothing else: only the metrics view lists its authentication class, every other
route ignores a Bearer header and answers as to an anonymous caller.
"""

from __future__ import annotations

import hmac
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication, TokenAuthentication, get_authorization_header
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request


class ExpiringTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        user, token = super().authenticate_credentials(key)
        hours = settings.CONSOLE_API_TOKEN_TTL_HOURS
        if hours and token.created + timedelta(hours=hours) < timezone.now():
            expired = (token.created + timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M UTC")
            raise AuthenticationFailed(
                f"This API token expired at {expired}: tokens last {hours} hours (CONSOLE_API_TOKEN_TTL_HOURS). "
                f"Ask an admin for a new one (manage.py rotatetoken {user.get_username()}).")
        return user, token


class MetricsCredential:
    """What `request.auth` holds for a caller that showed the metrics secret."""

    def __repr__(self) -> str:
        return "MetricsCredential()"


METRICS = MetricsCredential()


class MetricsTokenAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[AnonymousUser, MetricsCredential] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        secret = settings.CONSOLE_METRICS_TOKEN
        if not secret:
            raise AuthenticationFailed("No metrics token is configured (CONSOLE_METRICS_TOKEN): log in or use an API token.")
        if len(parts) != 2 or not hmac.compare_digest(parts[1], secret.encode()):
            raise AuthenticationFailed("This is not the metrics token (CONSOLE_METRICS_TOKEN).")
        return AnonymousUser(), METRICS

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="metrics"'


class MetricsScrape(BasePermission):
    """Lets a caller holding the metrics secret through; everyone else is judged by the usual check."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return request.auth is METRICS and (request.method or "GET").upper() in ("GET", "HEAD")


class MetricsTokenMixin:
    """For the metrics view only: the metrics secret, besides the usual logins and tokens."""

    def get_authenticators(self) -> list[BaseAuthentication]:
        return [*super().get_authenticators(), MetricsTokenAuthentication()]  # type: ignore[misc]

    def get_permissions(self) -> list[BasePermission]:
        usual = super().get_permissions()  # type: ignore[misc]
        request = getattr(self, "request", None)
        if request is not None and MetricsScrape().has_permission(request, self):
            return [MetricsScrape()]
        return list(usual)
