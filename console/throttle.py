"""Login throttling (django-axes) as the console shows and audits it.

Axes counts failed logins per user name and per client address (settings: AXES_*, from
CONSOLE_LOGIN_FAILURE_LIMIT and CONSOLE_LOGIN_COOLOFF_SECONDS) for every login that goes through
Django's `authenticate` with a request: the console's `/login/` and the admin site's `/admin/login/`.
The API takes tokens only (no password), so it cannot be used to guess passwords around the count.

A lockout is written to the audit log once, when the count first reaches the limit: axes signals
every refused attempt during a lockout as well, and one entry per attempt is what let failed logins
flood the audit page.
"""

from __future__ import annotations

from typing import Any

from axes.helpers import get_failure_limit
from axes.signals import user_locked_out
from django.conf import settings
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from console.audit import record


def lockout_message() -> str:
    minutes = max(1, round(settings.CONSOLE_LOGIN_COOLOFF_SECONDS / 60))
    return (f"Too many failed logins for this user or from this address: logins are refused for {minutes} "
            f"minute{'s' if minutes != 1 else ''} after the last failed one. Try again later, or ask an admin "
            "to lift the lock (manage.py axes_reset_username NAME, axes_reset_ip ADDRESS).")


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None,
                     credentials: dict[str, Any] | None = None) -> HttpResponse:
    """The login page with the lockout sentence (429), for the console's login and the admin's alike."""
    return render(request, "registration/login.html",
                  {"lockout": lockout_message(), "next": request.POST.get("next", "") or request.GET.get("next", "")},
                  status=429)


@receiver(user_locked_out)
def _locked_out(sender: Any, request: HttpRequest | None = None, username: str | None = None,
                ip_address: str | None = None, **kwargs: Any) -> None:
    if request is None:
        return
    failures = getattr(request, "axes_failures_since_start", None)
    # Only the attempt that reached the limit starts a lockout; later refusals belong to the same one.
    if failures is None or failures != get_failure_limit(request, getattr(request, "axes_credentials", None)):
        return
    record(None, "login_lockout", username=username or "", target=getattr(request, "path", ""), outcome="refused",
           details={"failures": failures, "cooloff_seconds": settings.CONSOLE_LOGIN_COOLOFF_SECONDS},
           request=request)
