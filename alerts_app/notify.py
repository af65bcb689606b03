"""Notifications of an evaluation: every alert of one rule that fired (or resolved, or is repeated)
in it becomes one Notification, with one pending Delivery per enabled channel of the rule, handed to
the delivery tasks (alerts_app.delivery) once the transaction that made them commits.

The payload is what the channels render from, the same for each of them:
{"id", "cluster", "kind": "firing"|"resolved"|"repeat", "severity", "title", "rule": {...},
 "alerts": [{"id", "key", "state", "message", "value", "since", "fired_at", "resolved_at", "details"}],
 "created_at"} (times in ISO-8601)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction

from alerts_app.models import Alert, AlertRule, Delivery, Notification

log = logging.getLogger(__name__)

ALERTS_LISTED = 1000  # alerts a payload lists (its title says how many there are)


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def title(rule: AlertRule, kind: str, count: int) -> str:
    what = {"firing": "firing", "repeat": "still firing", "resolved": "resolved"}.get(kind, kind)
    return f"[{rule.severity}] {rule.name} on {rule.cluster}: {count} {'alert' if count == 1 else 'alerts'} {what}"[:500]


def payload(nid: uuid.UUID, rule: AlertRule, kind: str, alerts: Sequence[Alert], now: datetime) -> dict[str, Any]:
    return {
        "id": str(nid),
        "cluster": rule.cluster,
        "kind": kind,
        "severity": rule.severity,
        "title": title(rule, kind, len(alerts)),
        "rule": {"id": rule.id, "name": rule.name, "condition": rule.condition, "target": rule.target,
                 "threshold": rule.threshold, "for_seconds": rule.for_seconds, "severity": rule.severity},
        "alerts": [{"id": a.id, "key": a.key, "state": a.state, "message": a.message, "value": a.value,
                    "since": _iso(a.since), "fired_at": _iso(a.fired_at), "resolved_at": _iso(a.resolved_at),
                    "details": a.details} for a in alerts[:ALERTS_LISTED]],
        "created_at": now.isoformat(),
    }


def notify(rule: AlertRule, channel_ids: Sequence[int], kind: str, alerts: Sequence[Alert], now: datetime) -> Notification | None:
    """One notification of these alerts of `rule` to its channels (inside the caller's transaction);
    None when the rule has no channel to send to."""
    if not alerts or not channel_ids:
        return None
    nid = uuid.uuid4()
    n = Notification.objects.create(id=nid, rule=rule, cluster=rule.cluster, kind=kind, severity=rule.severity,
                                    title=title(rule, kind, len(alerts)), payload=payload(nid, rule, kind, alerts, now))
    through = Notification.alerts.through
    through.objects.bulk_create([through(notification_id=nid, alert_id=a.id) for a in alerts])  # (no read of the links first)
    Delivery.objects.bulk_create([Delivery(notification=n, channel_id=c) for c in channel_ids])
    transaction.on_commit(lambda: enqueue(str(nid)))
    return n


def enqueue(notification_id: str) -> None:
    """Hand the notification to the delivery tasks; without them its deliveries stay pending (the
    delivery sweep sends them)."""
    try:
        from alerts_app import delivery
    except ImportError:
        log.warning("alert delivery is not installed: notification %s stays pending", notification_id)
        return
    try:
        delivery.enqueue(notification_id)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the sweep sends what could not be queued now
        log.warning("could not queue the delivery of notification %s", notification_id, exc_info=True)
