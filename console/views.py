"""Pages that belong to no single app: home, health, audit log."""

from __future__ import annotations

import time
from typing import Any

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render

from console import gateway
from console.auth import role_required
from console.models import AuditEntry
from console.watcher import store


def home(request: HttpRequest) -> HttpResponse:
    return redirect("overview", cluster=gateway.cluster_configs()[0].name)


def healthz(request: HttpRequest) -> JsonResponse:
    """State of every part; 200 when all are fine, 503 otherwise. Needs no login."""
    checks: dict[str, Any] = {}
    ok = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = {"ok": True}
    except Exception as exc:  # noqa: BLE001 - report, never fail the health check itself
        checks["database"] = {"ok": False, "error": str(exc)}
        ok = False
    redis_ok = True
    try:
        store.client().ping()
        checks["redis"] = {"ok": True}
    except Exception as exc:  # noqa: BLE001
        checks["redis"] = {"ok": False, "error": f"Redis is unreachable ({exc})"}
        redis_ok = ok = False
    watcher_age = celery_age = None
    if redis_ok:
        watcher_age = store.heartbeat_age()
        celery_age = store.heartbeat_age(store.CELERY_HEARTBEAT_KEY)
    watcher_ok = watcher_age is not None and watcher_age < 15
    celery_ok = celery_age is not None and celery_age < 45
    checks["watcher"] = {"ok": watcher_ok, "heartbeat_age_seconds": None if watcher_age is None else round(watcher_age, 1)}
    checks["celery"] = {"ok": celery_ok, "heartbeat_age_seconds": None if celery_age is None else round(celery_age, 1)}
    ok = ok and watcher_ok and celery_ok
    clusters = {}
    for config in gateway.cluster_configs():
        snap = None
        if redis_ok:
            try:
                snap = store.load(config.name)
            except store.StoreUnavailable:
                snap = None
        age = None if snap is None or snap.taken_at is None else round(max(0.0, time.time() - snap.taken_at), 1)
        reachable = bool(snap and snap.reachable)
        clusters[config.name] = {
            "ok": reachable,
            "reachable": reachable,
            "error": snap.error if snap else "no snapshot yet",
            "snapshot_age_seconds": age,
            "brokers_up": len(snap.live_broker_ids()) if snap else 0,
            "brokers": len(snap.brokers) if snap else 0,
        }
        ok = ok and reachable
    checks["clusters"] = clusters
    return JsonResponse({"ok": ok, **checks}, status=200 if ok else 503)


@role_required("admin")
def audit(request: HttpRequest) -> HttpResponse:
    return render(request, "audit.html", {"entries": AuditEntry.objects.all()[:500], "view": "audit"})
