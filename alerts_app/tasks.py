"""Celery tasks of alerts_app: one attempt of one delivery, and the sweep of due deliveries."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

import console.celery  # noqa: F401  (the app every shared_task here is sent through: console/__init__.py)
from alerts_app import delivery

log = logging.getLogger(__name__)


@shared_task(ignore_result=True, acks_late=True)
def deliver(delivery_id: int) -> str:
    """One attempt; returns at once when the row is gone, sent, not due, or held by another worker."""
    return delivery.attempt(delivery_id)


@shared_task(ignore_result=True)
def sweep_deliveries() -> int:
    """Beat, every few seconds: queue the deliveries whose next attempt is due and that no worker holds."""
    return delivery.sweep()


@worker_ready.connect
def _resume_deliveries(**_: Any) -> None:
    """A worker that starts (after a restart, say) picks up what was due at once, not at the next beat."""
    try:
        delivery.sweep()
    except Exception:  # noqa: BLE001 - the beat's sweep comes within seconds
        log.warning("could not sweep alert deliveries at start-up", exc_info=True)
