"""The audit log: who changed what. Logins, logouts and login lockouts are recorded too (failed
logins are only counted, by django-axes: console/throttle.py records one entry per lockout, so a
password-guessing run cannot flood the log). Each entry keeps the client's address and user agent,
taken from the request being served (console/request_context.py).

Every change made through a page or the API runs inside `audited()`, which writes one entry
whatever happens: "ok", "refused" (the console or Kafka said no: a 4xx sentence) or "failed"
(the cluster could not be reached, or the console broke). Dry runs change nothing and are not
recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out
from django.dispatch import receiver
from django.http import HttpRequest

from console import error_responses
from console.errors import ConsoleError
from console.models import AuditEntry
from console.request_context import client_ip, current_request, user_agent


def record(user: Any, action: str, *, cluster: str = "", target: str = "", details: dict[str, Any] | None = None,
           outcome: str = "ok", username: str | None = None, request: HttpRequest | None = None) -> AuditEntry:
    """One entry. `username` names who it is about when `user` is not a known account (a login
    lockout); the client's address and user agent come from `request`, else the one being served."""
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    request = request if request is not None else current_request()
    return AuditEntry.objects.create(
        user=user if authenticated else None,
        username=(username if username is not None else getattr(user, "username", "") or "")[:150],
        cluster=cluster,
        action=action,
        target=target,
        details=details or {},
        outcome=outcome,
        client_ip=client_ip(request) if request is not None else "",
        user_agent=user_agent(request) if request is not None else "",
    )


@contextmanager
def audited(user: Any, action: str, *, cluster: str = "", target: str = "", details: dict[str, Any] | None = None,
            dry_run: bool = False) -> Iterator[dict[str, Any]]:
    """Run a change and record its outcome. Yields the entry's details, to which the change may
    add what it learned (new offsets, the diff applied) before the entry is written.

        with audited(request.user, "create_topic", cluster=cluster, target=name, details={...}) as entry:
            entry.update(services.create_topic(...).details)
    """
    entry: dict[str, Any] = dict(details or {})
    try:
        yield entry
    except ConsoleError as exc:
        if not dry_run:
            outcome = "refused" if error_responses.status(exc) < 500 else "failed"
            record(user, action, cluster=cluster, target=target, details={**entry, "error": error_responses.message(exc)},
                   outcome=outcome)
        raise
    except Exception:
        if not dry_run:
            record(user, action, cluster=cluster, target=target,
                   details={**entry, "error": "The console failed; the error is in its log."}, outcome="failed")
        raise
    if not dry_run:
        record(user, action, cluster=cluster, target=target, details=entry)


@receiver(user_logged_in)
def _logged_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    record(user, "login", request=request)


@receiver(user_logged_out)
def _logged_out(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if user is not None:
        record(user, "logout", request=request)
