"""Queued analytics runs: a second "Run now" for a cluster returns the run already queued, a user
may have only so many queued, and a run whose queue message was lost is failed with that reason
within minutes, not left queued for the run timeout (the test Redis is the Celery broker here, and
no worker runs)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings

from analytics import queue, services, tasks
from analytics.models import AnalyticsRun

pytestmark = pytest.mark.django_db

RUNS = "/api/v1/clusters/local/analytics/runs/"


def queued_row(cluster: str, by: str) -> AnalyticsRun:
    """A queued run whose message was never sent (as one the broker lost)."""
    return AnalyticsRun.objects.create(cluster=cluster, kind="run", requested_by=by, stage="queued",
                                       window_start_ms=1, window_end_ms=2)


def test_a_second_run_now_while_one_is_queued_returns_the_queued_run(client_as, snapshot) -> None:  # noqa: ANN001
    first = client_as("operator").post(RUNS, {}, content_type="application/json")
    assert first.status_code == 202 and first.json()["already_queued"] is False, first.content
    again = client_as("admin").post(RUNS, {}, content_type="application/json")
    assert again.status_code == 200, again.content
    body = again.json()
    assert body["id"] == first.json()["id"] and body["already_queued"] is True and body["state"] == "queued"
    assert f"Run #{body['id']} is already queued for cluster 'local' (asked by operator)" in body["message"]
    page = client_as("operator").post("/clusters/local/analytics/", {}, follow=True)
    assert page.status_code == 200 and f"Run #{body['id']} is already queued" in page.content.decode()
    assert AnalyticsRun.objects.count() == 1, "no second row"


def test_a_user_may_have_only_so_many_runs_queued(client_as, snapshot, settings: Any) -> None:  # noqa: ANN001
    settings.CONSOLE_ANALYTICS_MAX_QUEUED_PER_USER = 1
    queued_row("elsewhere", "operator")
    r = client_as("operator").post(RUNS, {}, content_type="application/json")
    assert r.status_code == 429 and "CONSOLE_ANALYTICS_MAX_QUEUED_PER_USER" in r.json()["detail"], r.content
    page = client_as("operator").post("/clusters/local/analytics/", {})
    assert page.status_code == 429 and "You already have 1 analytics runs queued" in page.content.decode()
    assert not AnalyticsRun.objects.filter(cluster="local").exists()
    other = client_as("admin").post(RUNS, {}, content_type="application/json")
    assert other.status_code == 202, "another user is not limited by it"


def test_a_run_whose_queue_message_is_gone_is_failed_by_the_sweep_with_the_reason(snapshot, settings: Any) -> None:  # noqa: ANN001
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    broker.delete(queue.QUEUE, "unacked")  # (messages of former tests)
    settings.CONSOLE_ANALYTICS_QUEUE_LOST_SECONDS = 0  # (every queued run is old enough to be looked for)
    sent = services.request_run("local", None, "report")  # its message is in the queue
    assert sent.state == AnalyticsRun.QUEUED
    never = queued_row("local", "operator")
    assert tasks.fail_lost_runs() == [never.id]
    never.refresh_from_db()
    sent.refresh_from_db()
    assert (never.state, never.error) == (AnalyticsRun.FAILED, queue.LOST) and "Run it again" in never.error
    assert sent.state == AnalyticsRun.QUEUED, "a run whose message waits in the queue stays queued"
    broker.delete(queue.QUEUE)  # the broker restarted and lost its queue
    assert tasks.fail_lost_runs() == [sent.id]
    sent.refresh_from_db()
    assert sent.state == AnalyticsRun.FAILED and sent.error == queue.LOST


def test_a_run_queued_a_short_while_ago_is_not_looked_for(snapshot) -> None:  # noqa: ANN001
    queued_row("local", "operator")
    assert tasks.fail_lost_runs() == []  # (CONSOLE_ANALYTICS_QUEUE_LOST_SECONDS, 180 by default, not yet over)
    assert AnalyticsRun.objects.get().state == AnalyticsRun.QUEUED


def test_a_run_is_queued_by_the_name_of_the_task_the_analytics_worker_runs(snapshot) -> None:  # noqa: ANN001
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    broker.delete(queue.QUEUE)
    sent = services.request_run("local", None, "report")
    messages = [json.loads(m) for m in broker.lrange(queue.QUEUE, 0, -1)]
    assert [(m["headers"]["task"], m["headers"]["id"]) for m in messages] == [(tasks.run_analytics.name, queue.task_id(sent))]
    assert json.loads(base64.b64decode(messages[0]["body"]))[0] == [sent.id]
    broker.delete(queue.QUEUE)
