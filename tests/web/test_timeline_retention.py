"""Timeline retention (console/retention.py): events and rebalances older than
TIMELINE_RETENTION_DAYS go, and each cluster keeps at most TIMELINE_MAX_ROWS of each, the newest;
run by Celery beat."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from brokers_app.models import Event
from brokers_app.tasks import prune_events
from console import retention
from consumers_app.models import Rebalance
from consumers_app.tasks import prune_rebalances

pytestmark = pytest.mark.django_db


def _events(cluster: str, ages_days: list[float], kind: str = "leader_change") -> list[int]:
    now = timezone.now()
    rows = Event.objects.bulk_create([Event(cluster=cluster, at=now - timedelta(days=age), kind=kind, severity="info",
                                            message=f"{cluster} {age}") for age in ages_days])
    return [r.id for r in rows]


def _rebalances(cluster: str, ages_days: list[float]) -> None:
    now = timezone.now()
    Rebalance.objects.bulk_create([Rebalance(cluster=cluster, group="g", started_at=now - timedelta(days=age),
                                             ended_at=now - timedelta(days=age) + timedelta(seconds=3), duration_s=3.0)
                                   for age in ages_days])


@override_settings(TIMELINE_RETENTION_DAYS=30.0, TIMELINE_MAX_ROWS=1000)
def test_events_older_than_the_retention_go_and_younger_ones_stay() -> None:
    _events("a", [0.1, 5, 29.9, 30.1, 45, 400])
    _events("b", [1, 31])
    assert prune_events() == 4
    left = sorted((e.cluster, round((timezone.now() - e.at).total_seconds() / 86400, 1)) for e in Event.objects.all())
    assert left == [("a", 0.1), ("a", 5.0), ("a", 29.9), ("b", 1.0)]


@override_settings(TIMELINE_RETENTION_DAYS=30.0, TIMELINE_MAX_ROWS=3)
def test_each_cluster_keeps_its_newest_rows_up_to_the_count() -> None:
    a = _events("a", [0.5, 0.1, 0.3, 0.2, 0.4, 0.6])  # (inserted out of time order)
    b = _events("b", [0.1, 0.2])
    assert prune_events() == 3
    assert sorted(Event.objects.filter(cluster="a").values_list("id", flat=True)) == sorted([a[1], a[2], a[3]])
    assert sorted(Event.objects.filter(cluster="b").values_list("id", flat=True)) == sorted(b)  # under the count
    assert prune_events() == 0  # nothing more to do


@override_settings(TIMELINE_RETENTION_DAYS=30.0, TIMELINE_MAX_ROWS=2)
def test_rows_at_the_same_time_are_kept_newest_id_first() -> None:
    now = timezone.now()
    rows = Event.objects.bulk_create([Event(cluster="a", at=now, kind="isr_shrink", severity="warning", message=str(i))
                                      for i in range(5)])
    assert prune_events() == 3
    assert sorted(Event.objects.values_list("id", flat=True)) == sorted(r.id for r in rows[-2:])


def test_deletes_go_in_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retention, "BATCH", 7)
    _events("a", [40.0] * 30 + [1.0] * 3)
    with override_settings(TIMELINE_RETENTION_DAYS=30.0, TIMELINE_MAX_ROWS=1000):
        assert prune_events() == 30
    assert Event.objects.count() == 3


@override_settings(TIMELINE_RETENTION_DAYS=7.0, TIMELINE_MAX_ROWS=2)
def test_rebalances_have_the_same_retention() -> None:
    _rebalances("a", [1, 2, 3, 8])
    _rebalances("b", [10])
    assert prune_rebalances() == 3  # a's 8-day and b's 10-day ones by age, then a's oldest beyond 2
    left = sorted((r.cluster, round((timezone.now() - r.started_at).total_seconds() / 86400)) for r in Rebalance.objects.all())
    assert left == [("a", 1), ("a", 2)]


def test_celery_beat_runs_both_and_they_are_registered_tasks() -> None:
    from django.conf import settings

    from console.celery import app

    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"brokers_app.tasks.prune_events", "consumers_app.tasks.prune_rebalances"} <= scheduled
    assert scheduled <= set(app.tasks), scheduled - set(app.tasks)
