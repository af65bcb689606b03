"""The audit log: who changed what. Logins and logouts are recorded too."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest

from console.models import AuditEntry


def record(user: Any, action: str, *, cluster: str = "", target: str = "", details: dict[str, Any] | None = None,
           outcome: str = "ok") -> AuditEntry:
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    return AuditEntry.objects.create(
        user=user if authenticated else None,
        username=getattr(user, "username", "") or "",
        cluster=cluster,
        action=action,
        target=target,
        details=details or {},
        outcome=outcome,
    )


@receiver(user_logged_in)
def _logged_in(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    record(user, "login")


@receiver(user_logged_out)
def _logged_out(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    if user is not None:
        record(user, "logout")


@receiver(user_login_failed)
def _login_failed(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any) -> None:
    AuditEntry.objects.create(username=str(credentials.get("username", ""))[:150], action="login", outcome="failed")
