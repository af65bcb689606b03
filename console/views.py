"""Pages that belong to no single app: home, health, audit log."""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import urlencode

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from console import audit_query, error_responses, gateway, snapshots
from console.auth import access_for, allow
from console.errors import BadParameter
from console.gateway import causes
from console.redis_errors import credentials_sentence

log = logging.getLogger(__name__)


@allow(GET="console.view")
def home(request: HttpRequest) -> HttpResponse:
    shown = access_for(request.user).clusters("cluster.view")
    names = [c.name for c in gateway.cluster_configs() if shown(c.name)]
    if not names:
        return error_responses.page(request, "No cluster is open to you yet: ask an admin for a role.", 403)
    return redirect("overview", cluster=names[0])


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """State of every part; 200 when all are fine, 503 otherwise. Needs no login, so it says what
    is down in fixed sentences and never passes on an exception's text (hosts, paths, versions)."""
    checks: dict[str, Any] = {}
    ok = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = {"ok": True}
    except Exception:  # noqa: BLE001 - report, never fail the health check itself
        log.warning("healthz: the database is unreachable", exc_info=True)
        checks["database"] = {"ok": False, "error": "The database is unreachable."}
        ok = False
    redis_ok = True
    try:
        snapshots.redis_client().ping()
        checks["redis"] = {"ok": True}
    except Exception as exc:  # noqa: BLE001
        log.warning("healthz: Redis is unreachable", exc_info=True)
        refused = isinstance(exc, redis.AuthenticationError)
        checks["redis"] = {"ok": False, "error": credentials_sentence(settings.REDIS_URL) if refused else "Redis is unreachable."}
        redis_ok = ok = False
    watcher_age = celery_age = None
    if redis_ok:
        watcher_age = snapshots.heartbeat_age()
        celery_age = snapshots.heartbeat_age(snapshots.CELERY_HEARTBEAT_KEY)
    checks["watcher"] = _heartbeat("The watcher", watcher_age, 15, redis_ok)
    checks["celery"] = _heartbeat("The Celery worker", celery_age, 45, redis_ok)
    ok = ok and checks["watcher"]["ok"] and checks["celery"]["ok"]
    clusters = {}
    for config in gateway.cluster_configs():
        current = snapshots.watched(config.name) if redis_ok else None
        snap = current.snapshot if current is not None and current.store_error is None else None  # (never a stale copy)
        age = None if snap is None or snap.taken_at is None else round(max(0.0, time.time() - snap.taken_at), 1)
        reachable = bool(snap and snap.reachable)
        if snap is None:
            error: str | None = f"There is no snapshot of cluster '{config.name}' yet."
        elif not reachable:
            # The kind's fixed summary, never the sentence: that names hosts and users.
            why = causes.SUMMARIES.get(snap.cause or "")
            error = f"Cluster '{config.name}' is unreachable: {why}." if why else f"Cluster '{config.name}' is unreachable."
        else:
            error = None
        clusters[config.name] = {
            "ok": reachable,
            "reachable": reachable,
            "error": error,
            "cause": None if snap is None or reachable else snap.cause,
            "snapshot_age_seconds": age,
            "brokers_up": len(snap.live_broker_ids()) if snap else 0,
            "brokers": len(snap.brokers) if snap else 0,
        }
        ok = ok and reachable
    checks["clusters"] = clusters
    return JsonResponse({"ok": ok, **checks}, status=200 if ok else 503)


def _heartbeat(who: str, age: float | None, limit: float, redis_ok: bool) -> dict[str, Any]:
    fine = age is not None and age < limit
    result: dict[str, Any] = {"ok": fine, "heartbeat_age_seconds": None if age is None else round(age, 1)}
    if not fine:
        if not redis_ok:
            result["error"] = f"{who}'s heartbeat cannot be read: Redis is unreachable."
        elif age is None:
            result["error"] = f"{who} has not reported; is it running?"
        else:
            result["error"] = f"{who} last reported {age:.0f} s ago (more than {limit:.0f} s)."
    return result


@allow(GET="audit.view")
def audit(request: HttpRequest) -> HttpResponse:
    """The audit log, newest first, filtered and paged (console/audit_query.py); filters the console
    cannot use are shown on the form (400) beside the entries they would have narrowed."""
    try:
        found = audit_query.search(audit_query.parse(request.GET))
        error, status = "", 200
    except BadParameter as exc:
        found = audit_query.search(audit_query.AuditQuery())
        error, status = error_responses.form_error(exc)
    filters = found.query.filters()
    context = {"view": "audit", "found": found, "error": error, "filters": filters,
               "actions": audit_query.known_actions(), "outcomes": audit_query.OUTCOMES,
               "rows": [(e, json.dumps(e.details, ensure_ascii=False, sort_keys=True) if e.details else "") for e in found.entries],
               "previous": urlencode({**filters, "page": found.page - 1}) if found.page > 1 else "",
               "next": urlencode({**filters, "page": found.page + 1}) if found.page < found.pages else ""}
    return render(request, "audit.html", context, status=status)
