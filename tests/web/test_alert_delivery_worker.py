"""Alert delivery through a real Celery worker (in this process, on the test Redis): enqueue, the
retries' own Celery messages with their backoff, and the sweep that resumes what a dead worker left."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

import alerts_app.tasks  # noqa: F401 - the worker's tasks
from alerts_app import delivery
from alerts_app.models import AlertChannel, Delivery, Notification
from tests.alert_receivers import HttpReceiver, http_receiver
from tests.support import wait_for


@pytest.fixture
def worker(redis_server: str, transactional_db: None) -> Iterator[Any]:
    from celery.contrib.testing.worker import start_worker

    from console.celery import app

    app.control.purge()  # nothing queued by an earlier test
    with override_settings(ALERTS_DELIVERY_BACKOFF=0.05, ALERTS_DELIVERY_BACKOFF_MAX=0.2, ALERTS_DELIVERY_TIMEOUT=2.0), \
            start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, shutdown_timeout=20) as w:
        yield w


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    with http_receiver() as r:
        yield r


def notification(ch: AlertChannel) -> Notification:
    nid = uuid.uuid4()
    now = timezone.now().isoformat()
    n = Notification.objects.create(id=nid, cluster="local", kind="firing", severity="critical", title="Broker 2 is down",
                                    payload={"id": str(nid), "cluster": "local", "kind": "firing", "severity": "critical",
                                             "title": "Broker 2 is down", "rule": {"name": "broker down", "condition": "broker_down"},
                                             "alerts": [{"key": "broker:2", "state": "firing", "message": "Broker 2 left the cluster",
                                                         "since": now, "fired_at": now}], "created_at": now})
    Delivery.objects.create(notification=n, channel=ch)
    return n


def test_a_worker_delivers_on_the_fourth_try_after_three_500s_with_the_same_id(worker: Any, receiver: HttpReceiver) -> None:
    receiver.statuses = [500, 500, 500]
    ch = AlertChannel.objects.create(name="hook <ü>", kind="webhook", url=receiver.url, secret="s")
    n = notification(ch)
    started = time.monotonic()
    delivery.enqueue(str(n.id))
    got = receiver.wait(4, timeout=15)
    assert {r.headers["x-console-delivery"] for r in got} == {str(n.id)}
    gaps = [b.at - a.at for a, b in zip(got, got[1:], strict=False)]
    assert all(g >= 0.04 for g in gaps), gaps  # each retry waited for its backoff
    d = wait_for(lambda: Delivery.objects.filter(notification=n, state="sent").first(), 10, what="the delivery sent")
    assert d.attempts == 4 and time.monotonic() - started < 10
    time.sleep(0.3)
    assert len(receiver.requests) == 4  # and nothing after it was sent


def test_a_restarted_worker_resumes_a_delivery_whose_attempt_was_due(worker: Any, receiver: HttpReceiver) -> None:
    ch = AlertChannel.objects.create(name="hook-2", kind="webhook", url=receiver.url)
    n = notification(ch)
    # As a worker that died mid-attempt leaves it: pending, its lease run out, no Celery message left.
    Delivery.objects.filter(notification=n).update(attempts=1, next_attempt_at=timezone.now() - timedelta(seconds=5))
    from console.celery import app

    app.send_task("alerts_app.tasks.sweep_deliveries")
    [got] = receiver.wait(1, timeout=10)
    assert got.headers["x-console-delivery"] == str(n.id)
    d = wait_for(lambda: Delivery.objects.filter(notification=n, state="sent").first(), 10, what="the delivery sent")
    assert d.attempts == 2
