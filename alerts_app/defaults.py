"""The rules the console ships per cluster: offline partitions, partitions under min ISR, a broker
down, a consumer group in ERR (STOP included). They are made, enabled and without a channel (so
nothing is sent until one is set), the first time the cluster is evaluated while it has no rule at
all: a cluster whose operators made or removed rules is left as they made it."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from alerts_app.generation import bump_generation
from alerts_app.models import AlertRule

DEFAULTS: tuple[dict[str, Any], ...] = (
    {"name": "Partitions offline", "condition": "offline", "severity": "critical", "for_seconds": 0},
    {"name": "Partitions under min ISR", "condition": "under_min_isr", "severity": "critical", "for_seconds": 60},
    {"name": "Broker down", "condition": "broker_down", "severity": "critical", "for_seconds": 0},
    {"name": "Consumer group in error (ERR or STOP)", "condition": "group_status", "status": "ERR", "severity": "warning",
     "for_seconds": 120},
)


def ensure_defaults(cluster: str) -> int:
    """Make the shipped rules of a cluster that has no rule; how many were made."""
    if AlertRule.objects.filter(cluster=cluster).exists():
        return 0
    try:
        with transaction.atomic():
            AlertRule.objects.bulk_create([AlertRule(cluster=cluster, target="*", builtin=True, enabled=True, created_by="console", **d)
                                           for d in DEFAULTS])
    except IntegrityError:  # (another process made them meanwhile)
        return 0
    bump_generation()  # (a bulk insert sends no post_save: the groups' evaluator is told so)
    return len(DEFAULTS)
