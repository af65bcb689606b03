"""Celery tasks of the console itself."""

from __future__ import annotations

import time

from celery import shared_task

import console.celery  # noqa: F401  (the app every shared_task here is sent through: console/__init__.py)
from console import snapshots


@shared_task(ignore_result=True)
def heartbeat() -> None:
    """Scheduled by beat; proves to /healthz that beat and a worker are both alive."""
    snapshots.redis_client().set(snapshots.CELERY_HEARTBEAT_KEY, str(time.time()))
