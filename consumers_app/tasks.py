"""Celery tasks of consumers_app: the rebalance history's retention."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

import console.celery  # noqa: F401  (the app every shared_task here is sent through: console/__init__.py)
from console.retention import prune
from consumers_app.models import Rebalance


@shared_task(ignore_result=True)
def prune_rebalances() -> int:
    """Beat, every few minutes: rebalances that started more than TIMELINE_RETENTION_DAYS ago go,
    and each cluster keeps at most its newest TIMELINE_MAX_ROWS (console/retention.py)."""
    return prune(Rebalance, "started_at", timezone.now() - timedelta(days=settings.TIMELINE_RETENTION_DAYS),
                 settings.TIMELINE_MAX_ROWS)
