"""A consumer group's history for its pages: its lag over the last hour (the watcher's samples in
Redis) and the groups that rebalanced most often (the rebalance rows)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from django.db import connection
from django.db.models import Field
from django.utils.dateparse import parse_datetime

from console import snapshots
from consumers_app.models import Rebalance


def lag_history(cluster: str, group_id: str, seconds: float = 3600) -> dict[str, list[Any]]:
    """The watcher's samples of the group's total lag and time lag over the last hour, for the chart."""
    try:
        points = snapshots.lag_history(cluster, group_id, time.time() - seconds)
    except Exception:  # noqa: BLE001 - the chart is secondary: an empty one beats a failed page
        points = []
    return {"t": [p[0] for p in points], "lag": [p[1] for p in points], "time_lag": [p[2] for p in points]}


def recent_rebalances(cluster: str, group_id: str, limit: int = 20) -> list[Rebalance]:
    """The group's last `limit` rebalances, newest first (its page's table)."""
    return list(Rebalance.objects.raw(_recent_sql(), [cluster, group_id, limit]))


def most_rebalancing(cluster: str, hours: float = 24, limit: int = 10,
                     visible: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
    """Groups that rebalanced most often in the last `hours`, with their total time spent rebalancing.
    `visible`: the group ids the user may see (the busiest 1,000 are read and cut)."""
    since = datetime.now(tz=UTC) - timedelta(hours=hours)
    ended_at = cast(Field, Rebalance._meta.get_field("ended_at"))
    with connection.cursor() as cursor:
        cursor.execute(_busiest_sql(), [cluster, ended_at.get_db_prep_value(since, connection),
                                        limit if visible is None else max(limit, 1000)])
        found = [row for row in cursor.fetchall() if visible is None or visible(row[0])][:limit]
    return [{"group": group, "rebalances": count, "seconds": round(seconds or 0, 1), "last": _aware(last)}
            for group, count, seconds, last in found]


def _aware(value: Any) -> Any:
    """A time as the database hands it back from a raw query (text on SQLite) as an aware datetime."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


@functools.cache
def _busiest_sql() -> str:
    """most_rebalancing's aggregate, written once (the ORM took longer to build it on each view of the
    groups page than the database took to answer it)."""
    qn = connection.ops.quote_name
    meta = Rebalance._meta
    column = {name: qn(str(cast(Field, meta.get_field(name)).column)) for name in ("id", "cluster", "group", "ended_at", "duration_s")}
    return (f"SELECT {column['group']}, COUNT({column['id']}), SUM({column['duration_s']}), MAX({column['ended_at']}) "
            f"FROM {qn(meta.db_table)} WHERE {column['cluster']} = %s AND {column['ended_at']} >= %s "
            f"GROUP BY {column['group']} ORDER BY COUNT({column['id']}) DESC, {column['group']} LIMIT %s")


@functools.cache
def _recent_sql() -> str:
    """recent_rebalances' query, written once: a group's page reads it on every view, and the ORM
    took longer to build it than the database took to answer it."""
    qn = connection.ops.quote_name
    meta = Rebalance._meta
    columns = ", ".join(qn(str(cast(Field, f).column)) for f in meta.concrete_fields)
    cluster, group, started_at = (qn(str(cast(Field, meta.get_field(name)).column)) for name in ("cluster", "group", "started_at"))
    return (f"SELECT {columns} FROM {qn(meta.db_table)} WHERE {cluster} = %s AND {group} = %s "  # noqa: S608 - names from the model
            f"ORDER BY {started_at} DESC LIMIT %s")
