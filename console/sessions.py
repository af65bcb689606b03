"""Session lifetime: an idle timeout and an absolute maximum age.

Django's own expiry is one number (SESSION_COOKIE_AGE, here the absolute maximum): a session renewed
on every request (SESSION_SAVE_EVERY_REQUEST) would write the database on every request and still
never end while a tab keeps polling. So the session keeps two times of its own: when it started (the
login) and when it was last used, the latter written at most once a minute.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

from console.audit import record

STARTED = "console_started_at"
SEEN = "console_seen_at"
SEEN_RESOLUTION = 60.0  # seconds: the last-use time is written at most this often


def expired(session: MutableMapping[str, Any], now: float) -> str | None:
    """Why this session is over ("idle" or "max_age"), None while it may go on. A session without
    the times (made before they were kept) counts from now."""
    started = float(session.get(STARTED, now))
    seen = float(session.get(SEEN, now))
    if now - started > settings.CONSOLE_SESSION_MAX_AGE_SECONDS:
        return "max_age"
    if now - seen > settings.CONSOLE_SESSION_IDLE_SECONDS:
        return "idle"
    return None


def touch(session: MutableMapping[str, Any], now: float) -> None:
    session.setdefault(STARTED, now)
    if now - float(session.get(SEEN, 0.0)) >= SEEN_RESOLUTION:
        session[SEEN] = now


@receiver(user_logged_in)
def _started(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if request is not None and hasattr(request, "session"):
        now = time.time()
        request.session[STARTED] = request.session[SEEN] = now


class SessionLifetimeMiddleware:
    """Ends a logged-in session that was idle too long or is older than the maximum; the request
    then goes on as anonymous (pages send it to the login form, the API answers 401)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and hasattr(request, "session"):
            now = time.time()
            why = expired(request.session, now)
            if why is None:
                touch(request.session, now)
            else:
                request.session.flush()
                request.user = AnonymousUser()
                limit = settings.CONSOLE_SESSION_IDLE_SECONDS if why == "idle" else settings.CONSOLE_SESSION_MAX_AGE_SECONDS
                record(user, "session_expired", details={"reason": why, "limit_seconds": limit}, request=request)
        return self.get_response(request)
