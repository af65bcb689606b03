"""Celery tasks of the console itself."""

from __future__ import annotations

import time

from celery import shared_task

from console.watcher import store


@shared_task(ignore_result=True)
def heartbeat() -> None:
    """Scheduled by beat; proves to /healthz that beat and a worker are both alive."""
    store.client().set(store.CELERY_HEARTBEAT_KEY, str(time.time()))
