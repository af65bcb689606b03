"""Celery tasks of brokers_app: reassignment jobs, their watchdog, the balance watch, and the
timeline's retention."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import orjson
from celery import shared_task
from django.conf import settings
from django.utils import timezone

import console.celery  # noqa: F401  (the app every shared_task here is sent through: console/__init__.py)
from brokers_app import balance, reassignment_runner, services
from brokers_app.models import Event
from console import gateway, snapshots
from console.retention import prune

log = logging.getLogger(__name__)


@shared_task(ignore_result=True, acks_late=True)
def run_reassignment(job_id: int) -> str:
    """Carry a job to its end; returns at once when another worker holds it or it has ended."""
    return reassignment_runner.Runner(job_id).run()


@shared_task(ignore_result=True)
def reassignment_watchdog() -> list[int]:
    """Beat, every few seconds: hand every active job no worker holds to a worker."""
    orphans = reassignment_runner.orphans()
    for job_id in orphans:
        services.dispatch(job_id)
    return orphans


BALANCE_KEY = "balance:{cluster}"


@shared_task(ignore_result=True)
def balance_watch() -> int:
    """Beat, every few minutes: raise an event for each imbalance that appeared since the last look."""
    raised = 0
    for config in gateway.cluster_configs():
        snap = snapshots.reachable(snapshots.watched(config.name))
        if snap is None:
            continue
        found = balance.findings(snap, settings.BALANCE_SKEW_THRESHOLD)
        key = BALANCE_KEY.format(cluster=config.name)
        try:
            known = set(orjson.loads(snapshots.redis_client().get(key) or b"[]"))
        except Exception:  # noqa: BLE001 - Redis down: look again next time
            log.warning("balance watch: Redis unavailable", exc_info=True)
            continue
        new = [f for f in found if f.signature not in known]
        rows = [Event(cluster=config.name, at=timezone.now(), kind="balance", severity="warning", message=f.message,
                      broker=f.brokers[0] if len(f.brokers) == 1 else None,
                      details={"problem": f.problem, "brokers": list(f.brokers), "offer": f.offer, "offer_query": f.offer_query()})
                for f in new]
        if rows:
            Event.objects.bulk_create(rows)
            raised += len(rows)
            push_events(config.name, rows)
        snapshots.redis_client().set(key, orjson.dumps(sorted(f.signature for f in found)))
    return raised


def push_events(cluster: str, rows: list[Event]) -> None:
    from console.realtime import cluster_group, group_send

    saved = Event.objects.filter(cluster=cluster, kind="balance").order_by("-id")[: len(rows)]
    try:
        group_send(cluster_group(cluster), {"type": "events.added", "events": [e.as_dict() for e in reversed(list(saved))],
                                            "at": time.time()})
    except Exception:  # noqa: BLE001 - the events page shows them on its next load
        log.debug("could not push balance events", exc_info=True)



@shared_task(ignore_result=True)
def prune_events() -> int:
    """Beat, every few minutes: events older than TIMELINE_RETENTION_DAYS go, and each cluster keeps
    at most its newest TIMELINE_MAX_ROWS (console/retention.py)."""
    return prune(Event, "at", timezone.now() - timedelta(days=settings.TIMELINE_RETENTION_DAYS), settings.TIMELINE_MAX_ROWS)
