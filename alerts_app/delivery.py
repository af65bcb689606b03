"""Delivery of notifications: one Celery task per pending Delivery row, tried again with exponential
backoff until the channel's max_attempts, then a dead letter. The state is the row, so a worker that
restarts (or a lost Celery message) only delays a delivery: the sweep hands every due row to a worker
again. A row is claimed before each attempt, so two workers never send it at once, and `sent` is final."""

from __future__ import annotations

import logging
import random
import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from alerts_app import channels
from alerts_app.models import AlertChannel, Delivery, Notification
from console import gateway
from console.errors import Conflict
from console.gateway.errors import NotFound

log = logging.getLogger(__name__)

TASK = "alerts_app.tasks.deliver"
# A claimed row is held this long past the request's timeout; a worker that died holding it is then swept.
LEASE_MARGIN = 30.0
# A retry's Celery message may come a little before its time (the clocks of two hosts): it still counts as due.
EARLY = timedelta(milliseconds=500)
# The sweep leaves a due row alone this long, so the retry already queued for it normally wins.
SWEEP_GRACE = timedelta(seconds=2)
SWEEP_BATCH = 1000
# Publishing to a Celery broker that is down gives up at once: the caller (the watcher's evaluation)
# must not wait on it, and the sweep queues the row once the broker is back.
PUBLISH_RETRY = {"max_retries": 0}
# A test from the channel's page is tried once: the operator wants its outcome now, not after the backoff.
TEST_ATTEMPTS = 1


def enqueue(notification_id: str | uuid.UUID) -> None:
    """Hand each pending delivery of the notification to a worker, once the caller's transaction has
    committed (a worker must find the rows)."""
    transaction.on_commit(lambda: dispatch_pending(str(notification_id)))


def dispatch_pending(notification_id: str) -> int:
    ids = list(Delivery.objects.filter(notification_id=notification_id, state="pending").values_list("id", flat=True))
    for delivery_id in ids:
        dispatch(delivery_id)
    return len(ids)


def dispatch(delivery_id: int, eta: datetime | None = None) -> None:
    """Queue the delivery's task by name; when the Celery broker is down the sweep queues it later."""
    from console.celery import app

    try:
        app.send_task(TASK, args=(delivery_id,), eta=eta, retry_policy=PUBLISH_RETRY)
    except Exception:  # noqa: BLE001 - the row stays pending; the sweep dispatches it again
        log.warning("could not queue alert delivery %s now; the sweep will", delivery_id, exc_info=True)


def backoff(failures: int) -> float:
    """Seconds before the next attempt after `failures` failed ones: doubled each time, capped, with a
    little jitter so many deliveries failing together do not all come back in the same instant."""
    base = settings.ALERTS_DELIVERY_BACKOFF * (2 ** max(0, min(failures - 1, 30)))
    return float(min(settings.ALERTS_DELIVERY_BACKOFF_MAX, base * random.uniform(1.0, 1.1)))


def attempt(delivery_id: int) -> str:
    """One attempt of one delivery: 'sent', 'retry', 'dead', or 'skipped' (gone, not due, held by
    another worker, or already sent)."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.ALERTS_DELIVERY_TIMEOUT + LEASE_MARGIN)
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now + EARLY)
    if not Delivery.objects.filter(id=delivery_id, state="pending").filter(due).update(next_attempt_at=lease):
        return "skipped"
    delivery = Delivery.objects.select_related("channel", "notification").filter(id=delivery_id).first()
    if delivery is None:
        return "skipped"
    channel, notification = delivery.channel, delivery.notification
    test = notification.kind == "test"
    if not channel.enabled and not test:
        Delivery.objects.filter(id=delivery_id, state="pending").update(
            state="dead", last_error="Not sent: the channel is disabled.", next_attempt_at=None)
        return "dead"
    payload = {**notification.payload, "id": str(notification.id)}
    try:
        channels.send(channel, payload)
    except channels.DeliveryFailed as exc:
        return _failed(delivery, channel, notification, exc.message, TEST_ATTEMPTS if test else channel.max_attempts)
    except Exception as exc:  # noqa: BLE001 - a fault of the console's own counts as a failed attempt, with its words
        log.exception("alert delivery %s failed in the console", delivery_id)
        words = f"The console could not send it ({type(exc).__name__}: {str(exc)[:200]})."
        return _failed(delivery, channel, notification, words, TEST_ATTEMPTS if test else channel.max_attempts)
    _sent(delivery, channel, notification)
    return "sent"


def _sent(delivery: Delivery, channel: AlertChannel, notification: Notification) -> None:
    now = timezone.now()
    with transaction.atomic():
        Delivery.objects.filter(id=delivery.id).update(state="sent", sent_at=now, attempts=F("attempts") + 1,
                                                       last_error="", next_attempt_at=None)
        recovered = AlertChannel.objects.filter(
            id=channel.id, consecutive_failures__gte=settings.ALERTS_CHANNEL_FAILURE_EVENT_AFTER).update(consecutive_failures=0)
        AlertChannel.objects.filter(id=channel.id).update(consecutive_failures=0, last_sent_at=now, last_error="")
    if recovered:
        _raise_event(channel, notification, "info", f"Alert channel '{channel.name}' ({channel.kind}) delivers again.",
                     {"channel": channel.name, "channel_id": channel.id, "recovered": True})


def _failed(delivery: Delivery, channel: AlertChannel, notification: Notification, error: str, max_attempts: int) -> str:
    now = timezone.now()
    failures = delivery.attempts + 1  # the row is claimed: no one else changes it meanwhile
    dead = failures >= max_attempts
    next_at = None if dead else now + timedelta(seconds=backoff(failures))
    words = f"{error} Gave up after {failures} attempt{'s' if failures != 1 else ''}." if dead else error
    Delivery.objects.filter(id=delivery.id, state="pending").update(
        attempts=failures, last_error=words[:4000], state="dead" if dead else "pending", next_attempt_at=next_at)
    streak = _count_failure(channel, error)
    if streak == settings.ALERTS_CHANNEL_FAILURE_EVENT_AFTER:
        _raise_event(channel, notification, "error",
                     f"Alert channel '{channel.name}' ({channel.kind}) failed {streak} times in a row; the last error: {error}",
                     {"channel": channel.name, "channel_id": channel.id, "failures": streak, "error": error})
    if dead:
        log.warning("alert delivery %s to channel %s is a dead letter after %d attempts: %s", delivery.id, channel.name, failures, error)
        return "dead"
    dispatch(delivery.id, eta=next_at)
    return "retry"


def _count_failure(channel: AlertChannel, error: str) -> int:
    """The channel's failures in a row, this one included. The increment and its read are one
    transaction, whose write lock makes each failure's count unique: exactly one sees the Nth."""
    with transaction.atomic():
        AlertChannel.objects.filter(id=channel.id).update(consecutive_failures=F("consecutive_failures") + 1, last_error=error[:4000])
        return int(AlertChannel.objects.filter(id=channel.id).values_list("consecutive_failures", flat=True).first() or 0)


def _raise_event(channel: AlertChannel, notification: Notification, severity: str, message: str, details: dict[str, object]) -> None:
    """An event on the timeline of the notification's cluster (a test's: the first cluster), pushed to open pages."""
    from console.realtime import cluster_group, group_send
    from console.watcher.registry import EventRow, events

    cluster = notification.cluster or next((c.name for c in gateway.cluster_configs()), "")
    if not cluster:
        return
    try:
        saved = events().save([EventRow(cluster=cluster, at=timezone.now(), kind="alerts", severity=severity,
                                        message=message, details=details)])
    except Exception:  # noqa: BLE001 - the delivery's own row still says what failed
        log.warning("could not save the event of alert channel %s", channel.name, exc_info=True)
        return
    try:
        group_send(cluster_group(cluster), {"type": "events.added", "events": saved, "at": time.time()})
    except Exception:  # noqa: BLE001 - the events page shows it on its next load
        log.debug("could not push the event of alert channel %s", channel.name, exc_info=True)


def sweep() -> int:
    """Queue every pending delivery that is due and that no worker holds; the number queued."""
    cutoff = timezone.now() - SWEEP_GRACE
    ids = list(Delivery.objects.filter(state="pending")
               .filter(Q(next_attempt_at__lte=cutoff) | Q(next_attempt_at__isnull=True, created_at__lte=cutoff))
               .order_by("created_at").values_list("id", flat=True)[:SWEEP_BATCH])
    for delivery_id in ids:
        dispatch(delivery_id)
    return len(ids)


def send_test(channel_id: int) -> Notification:
    """A test notification to one channel, queued at once; its Delivery row tells how it went."""
    channel = AlertChannel.objects.filter(id=channel_id).first()
    if channel is None:
        raise NotFound(f"There is no alert channel #{channel_id}.")
    now = timezone.now().isoformat()
    nid = uuid.uuid4()
    title = f"Test notification to alert channel '{channel.name}'"
    payload = {"id": str(nid), "cluster": "", "kind": "test", "severity": "info", "title": title, "rule": {},
               "alerts": [{"id": None, "key": "test", "state": "firing", "value": None, "since": now, "fired_at": now,
                           "resolved_at": None, "details": {},
                           "message": "A test from the Kafka console: if you read this, the channel works."}],
               "created_at": now}
    with transaction.atomic():
        notification = Notification.objects.create(id=nid, rule=None, cluster="", kind="test", severity="info", title=title,
                                                   payload=payload)
        Delivery.objects.create(notification=notification, channel=channel)
        enqueue(nid)
    return notification


def requeue(delivery_id: int) -> Delivery:
    """A dead letter tried again from its first attempt (an operator fixed the receiver); a pending one
    is left as it is, a sent one is refused: nothing is sent twice."""
    row = Delivery.objects.filter(id=delivery_id).first()
    if row is None:
        raise NotFound(f"There is no alert delivery #{delivery_id}.")
    if row.state == "sent":
        raise Conflict(f"Delivery #{delivery_id} was sent already; it is not sent again.")
    if Delivery.objects.filter(id=delivery_id, state="dead").update(state="pending", attempts=0, next_attempt_at=None):
        transaction.on_commit(lambda: dispatch(delivery_id))
    row.refresh_from_db()
    return row
