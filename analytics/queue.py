"""The analytics runs' Celery messages: their task ids, and the runs whose message was lost.

A run is queued as one message on the "analytics" queue. When the broker (Redis) restarts without
keeping its data, or the message is otherwise never delivered, no worker will ever take the run: it
would stay "queued" until ANALYTICS_RUN_TIMEOUT. So beat asks, every minute, where the messages of
runs queued for longer than CONSOLE_ANALYTICS_QUEUE_LOST_SECONDS are: in the queue's lists, among
the messages a worker has taken and not yet acknowledged (kombu keeps them in the "unacked" hash),
or held by a worker that answers. A run whose message is in none of them, twice, is failed with
that reason.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import timedelta

import redis
from django.conf import settings
from django.utils import timezone

from analytics.models import AnalyticsRun

log = logging.getLogger(__name__)

QUEUE = "analytics"
# kombu's Redis transport: a queue's messages of priority p > 0 are in a list of their own, and the
# messages delivered to a worker but not yet acknowledged are in one hash.
_PRIORITY_SEP = "\x06\x16"
_PRIORITIES = (3, 6, 9)
_UNACKED = "unacked"

LOST = ("The run's message was lost from the Celery queue before any worker took it (the broker, Redis, "
        "restarted, or the message was never delivered). Run it again.")


def task_id(run: AnalyticsRun) -> str:
    """The run's Celery task id, known from the row alone (its id and when it was made: ids start
    again on an emptied database, while the broker may still hold older messages)."""
    return f"analytics-run-{run.id}-{int(run.created_at.timestamp() * 1_000_000)}"


def _broker_holds(client: redis.Redis, ids: set[str]) -> set[str]:
    keys = [QUEUE] + [f"{QUEUE}{_PRIORITY_SEP}{p}" for p in _PRIORITIES]
    pipe = client.pipeline(transaction=False)
    for k in keys:
        pipe.lrange(k, 0, -1)
    pipe.hvals(_UNACKED)
    raw = b"\n".join(item for found in pipe.execute() for item in found)
    return {i for i in ids if i.encode() in raw}


def _workers_hold(ids: set[str]) -> set[str]:
    """The ids among these that a worker reports reserved or running (a busy solo worker may not answer:
    what it took but has not begun is in the unacked hash anyway)."""
    from console.celery import app

    try:
        # A connection of its own, closed here: the pool's would keep a channel waiting for replies
        # (BRPOP), and kombu closes pooled channels in a forked child by reading from that socket,
        # which hangs the child (a multiprocessing fork in a process that asked the workers once).
        with app.connection_for_write() as conn:
            inspect = app.control.inspect(timeout=1.0, connection=conn)
            replies = [inspect.reserved(), inspect.active()]
    except Exception:  # noqa: BLE001 - no answer is not a reason to keep or to fail a run
        log.warning("could not ask the Celery workers for their tasks", exc_info=True)
        return set()
    text = json.dumps(replies, default=str)
    return {i for i in ids if i in text}


def missing(ids: Iterable[str]) -> set[str] | None:
    """Of these task ids, those neither the broker nor any worker holds; None when the broker cannot
    be read (or is not Redis), since then nothing can be told."""
    wanted = set(ids)
    if not wanted:
        return set()
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    client = redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
    try:
        # Read twice around the workers' answer: a message in flight from the list to a worker at
        # the first read is in the unacked hash, or running, by the second.
        gone = wanted - _broker_holds(client, wanted)
        gone -= _workers_hold(gone) if gone else set()
        gone -= _broker_holds(client, gone) if gone else set()
    except redis.RedisError:
        log.warning("could not read the Celery broker's analytics queue", exc_info=True)
        return None
    finally:
        client.close()
    return gone


def fail_lost_runs() -> list[int]:
    """Fail the runs queued for longer than CONSOLE_ANALYTICS_QUEUE_LOST_SECONDS whose message is
    gone; the ids of those failed."""
    since = timezone.now() - timedelta(seconds=settings.CONSOLE_ANALYTICS_QUEUE_LOST_SECONDS)
    runs = {task_id(r): r for r in AnalyticsRun.objects.filter(state=AnalyticsRun.QUEUED, created_at__lt=since)}
    gone = missing(runs)
    if not gone:
        return []
    failed = []
    for tid in gone:
        run = runs[tid]
        # Only while still queued: a worker that took it meanwhile has made it running.
        if AnalyticsRun.objects.filter(id=run.id, state=AnalyticsRun.QUEUED).update(
                state=AnalyticsRun.FAILED, stage="failed", error=LOST, finished_at=timezone.now()):
            failed.append(run.id)
    return sorted(failed)
