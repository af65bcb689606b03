"""The watcher's event store writes rows with one INSERT ... RETURNING per batch: what it returns and
what the ORM reads back must be the same events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from brokers_app.models import Event
from brokers_app.watching import EventTable
from console.watcher.registry import EventRow

pytestmark = pytest.mark.django_db


def test_rows_saved_in_batches_read_back_equal_with_their_ids() -> None:
    at = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
    odd = "odd/%<script>'\"é"
    rows = [EventRow(cluster="ev", at=at + timedelta(microseconds=i), kind="leader_change", severity="info",
                     message=f"Partition {odd}-{i} leader 1 → 2", topic=odd, partition=i, broker=None if i % 2 else 2,
                     details={"from": 1, "to": 2, "name": odd, "nested": [i, None]})
            for i in range(1203)]  # three batches, the last short
    saved = EventTable().save(rows)
    assert len(saved) == len(rows) and len({e["id"] for e in saved}) == len(rows)
    by_id = {e.id: e for e in Event.objects.filter(cluster="ev")}
    assert len(by_id) == len(rows)
    for returned, row in zip(saved, rows, strict=True):
        stored = by_id[returned["id"]]
        assert stored.as_dict() == returned
        assert (stored.at, stored.partition, stored.broker, stored.details, stored.topic) == \
            (row.at, row.partition, row.broker, row.details, row.topic)
    assert EventTable().save([]) == []


def test_a_cycles_events_are_saved_all_or_none() -> None:
    """The batches of one save are one transaction: a batch refused leaves none of the others saved,
    so the publisher's retry of the whole cycle's events (publisher.Publisher.record) saves each
    once, not the batches before the refused one twice."""
    from django.db import IntegrityError

    at = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
    rows = [EventRow(cluster="ev-atomic", at=at, kind="leader_change", severity="info", message=f"m{i}", topic="t",
                     partition=i, broker=None, details={}) for i in range(1100)]
    bad = rows[:]
    bad[700] = EventRow(cluster="ev-atomic", at=at, kind="leader_change", severity="info", message=None,  # type: ignore[arg-type]
                        topic="t", partition=700, broker=None, details={})
    with pytest.raises(IntegrityError):
        EventTable().save(bad)  # the second batch is refused (NOT NULL)
    assert Event.objects.filter(cluster="ev-atomic").count() == 0  # the first batch is not left behind
    assert len(EventTable().save(rows)) == 1100
    assert Event.objects.filter(cluster="ev-atomic").count() == 1100
