"""Retention of the timeline tables (events, rebalances): rows older than a number of days go, and
so do a cluster's oldest rows beyond a count. A large, busy cluster gives the watcher thousands of
events a second; kept for ever, the table (and its four indexes) grows without bound and every
timeline query and insert slows with it.

Deleted in batches of ids, each its own statement, so no delete holds the database for long and
the watcher's inserts go on between them. Run by Celery beat
(brokers_app.tasks.prune_events, consumers_app.tasks.prune_rebalances)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db.models import Model, Q

log = logging.getLogger(__name__)

BATCH = 5000


def _delete_in_batches(model: type[Model], where: Q) -> int:
    deleted = 0
    manager: Any = model._default_manager
    while True:
        ids = list(manager.filter(where).order_by().values_list("id", flat=True)[:BATCH])
        if not ids:
            return deleted
        deleted += manager.filter(id__in=ids).delete()[0]


def prune(model: type[Model], time_field: str, older_than: datetime, keep_per_cluster: int) -> int:
    """Delete the rows of `model` whose `time_field` is before `older_than`, then of each cluster
    every row but its newest `keep_per_cluster` (by time, then id). Returns the rows deleted."""
    manager: Any = model._default_manager
    deleted = 0
    # (cluster by cluster: the tables are indexed by cluster and time, not by time alone)
    for cluster in list(manager.order_by().values_list("cluster", flat=True).distinct()):
        deleted += _delete_in_batches(model, Q(cluster=cluster, **{f"{time_field}__lt": older_than}))
        newest = manager.filter(cluster=cluster).order_by(f"-{time_field}", "-id")
        boundary = list(newest.values_list(time_field, "id")[keep_per_cluster:keep_per_cluster + 1])
        if not boundary:
            continue
        at, row = boundary[0]  # the newest row beyond the count: it and everything older go
        deleted += _delete_in_batches(model, Q(cluster=cluster) & (Q(**{f"{time_field}__lt": at})
                                                                    | Q(**{time_field: at, "id__lte": row})))
    if deleted:
        log.info("timeline retention: deleted %d %s rows", deleted, model.__name__)
    return deleted
