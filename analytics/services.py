"""Analytics runs and lag reports: requesting them, reading their results (Django side; Spark stays in tasks)."""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analytics import queue
from analytics.models import AnalyticsRun, ReportSchedule
from console import gateway
from console.audit import audited
from console.errors import BadParameter, LimitReached
from console.gateway.errors import NotFound
from console.inert import chart_text, csv_writer

DEFAULT_SCHEDULES = (("hourly", 60, 60), ("daily", 1440, 1440))
STAGES = ("queued", "starting Spark", "reading samples", "computing tables", "writing the report", "done")


def results_dir(run: AnalyticsRun) -> Path:
    return Path(settings.VAR_DIR) / "analytics" / run.cluster / str(run.id)


def ensure_schedules(cluster: str) -> list[ReportSchedule]:
    for name, every, window in DEFAULT_SCHEDULES:
        # Counted from now: the first report covers a whole window of samples.
        ReportSchedule.objects.get_or_create(cluster=cluster, name=name, defaults={
            "every_minutes": every, "window_minutes": window, "last_run_at": timezone.now()})
    return list(ReportSchedule.objects.filter(cluster=cluster))


def check_window(start_ms: int | None, end_ms: int | None, now_ms: int | None = None) -> tuple[int, int]:
    """A window of samples to read: end after start, not in the future, within the sample topic's retention."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    retention_ms = int(settings.ANALYTICS_RETENTION_HOURS * 3600 * 1000)
    end = now_ms if end_ms is None else end_ms
    start = end - 3600 * 1000 if start_ms is None else start_ms
    if end <= start:
        raise BadParameter("The time range ends before it starts: give an end after the start.")
    if end > now_ms + 60_000:
        raise BadParameter("The time range ends in the future.")
    if start < now_ms - retention_ms:
        hours = settings.ANALYTICS_RETENTION_HOURS
        raise BadParameter(f"The time range starts before the oldest samples kept ({hours:g} hours, ANALYTICS_RETENTION_HOURS).")
    return start, end


def request_run(cluster: str, user: Any, kind: str = "run", start_ms: int | None = None, end_ms: int | None = None,
                schedule: ReportSchedule | None = None) -> AnalyticsRun:
    gateway.cluster_config(cluster)
    start, end = check_window(start_ms, end_ms)
    with transaction.atomic():
        run = AnalyticsRun.objects.create(cluster=cluster, kind=kind, schedule=schedule, window_start_ms=start, window_end_ms=end,
                                          requested_by=getattr(user, "username", "") or "", stage="queued")
    dispatch(run)
    return run


def run_now(cluster: str, user: Any, start_ms: int | None = None, end_ms: int | None = None) -> tuple[AnalyticsRun, bool]:
    """"Run now": a new run, or the cluster's run still queued (True), since a second run queued
    behind it would compute the same tables again; a user may have at most
    CONSOLE_ANALYTICS_MAX_QUEUED_PER_USER runs queued. Audited as asked, whichever of the two it is."""
    with audited(user, "analytics_run", cluster=cluster, details={"start_ms": start_ms, "end_ms": end_ms}):
        return _run_now(cluster, user, start_ms, end_ms)


def _run_now(cluster: str, user: Any, start_ms: int | None, end_ms: int | None) -> tuple[AnalyticsRun, bool]:
    gateway.cluster_config(cluster)
    start, end = check_window(start_ms, end_ms)
    with _run_now_lock(cluster):
        queued = AnalyticsRun.objects.filter(cluster=cluster, kind="run", state=AnalyticsRun.QUEUED).order_by("id").first()
        if queued is not None:
            return queued, True
        name = getattr(user, "username", "") or ""
        limit = settings.CONSOLE_ANALYTICS_MAX_QUEUED_PER_USER
        if name and AnalyticsRun.objects.filter(requested_by=name, state=AnalyticsRun.QUEUED).count() >= limit:
            raise LimitReached(f"You already have {limit} analytics runs queued, the most one user may "
                               "(CONSOLE_ANALYTICS_MAX_QUEUED_PER_USER): wait until one has started.")
        return request_run(cluster, user, "run", start, end), False


def already_queued(run: AnalyticsRun) -> str:
    return (f"Run #{run.id} is already queued for cluster '{run.cluster}' (asked by {run.requested_by or 'the schedule'}): "
            "it computes the tables once it starts, so no second run was queued.")


@contextmanager
def _run_now_lock(cluster: str) -> Iterator[None]:
    """Held while looking for a queued run and queuing one, so that two "Run now" at once (in two
    web processes) cannot both find none. Without Redis it is not held, and the run cannot be queued
    anyway (Redis is the Celery broker)."""
    from console import snapshots

    lock = snapshots.redis_client().lock(f"console:analytics:run-now:{cluster}", timeout=10, blocking_timeout=5)
    try:
        held = bool(lock.acquire())
    except redis.RedisError:
        held = False
    try:
        yield
    finally:
        if held:
            with suppress(redis.RedisError):  # (it expires after its timeout)
                lock.release()


def update_schedule(user: Any, cluster: str, data: Mapping[str, Any]) -> ReportSchedule:
    name = str(data.get("name", "")).strip()
    schedule = ReportSchedule.objects.filter(cluster=cluster, name=name).first()
    if schedule is None:
        raise NotFound(f"There is no report schedule '{name[:40]}' on cluster '{cluster}'.")

    def minutes(field: str, current: int) -> int:
        raw = data.get(field, current)
        try:
            value = int(raw)
        except (TypeError, ValueError):
            raise BadParameter(f"'{field}' must be a whole number of minutes.") from None
        if not 1 <= value <= 7 * 24 * 60:
            raise BadParameter(f"'{field}' must be between 1 minute and 7 days (10080 minutes).")
        return value

    every, window = minutes("every_minutes", schedule.every_minutes), minutes("window_minutes", schedule.window_minutes)
    enabled = data.get("enabled", schedule.enabled)
    enabled = enabled in (True, "1", "on", "true") if not isinstance(enabled, bool) else enabled
    emails = data.get("email_to", schedule.email_to)
    addresses = emails if isinstance(emails, list) else [a.strip() for a in str(emails).split(",") if a.strip()]
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    for a in addresses:
        try:
            validate_email(a)
        except ValidationError:
            raise BadParameter(f"'{str(a)[:80]}' is not an e-mail address.") from None
    with audited(user, "report_schedule", cluster=cluster, target=name,
                 details={"every_minutes": every, "window_minutes": window, "enabled": enabled, "email_to": addresses}):
        schedule.every_minutes, schedule.window_minutes, schedule.enabled = every, window, enabled
        schedule.email_to = ", ".join(addresses)
        schedule.save()
    return schedule


def dispatch(run: AnalyticsRun) -> None:
    """Queue the run's Spark task by its name: services never import tasks, which import services."""
    from console.celery import app

    run_id = run.id
    try:
        app.send_task("analytics.tasks.run_analytics", args=(run_id,), queue=queue.QUEUE, task_id=queue.task_id(run))
    except Exception as exc:  # noqa: BLE001 - the run fails with the reason rather than waiting forever
        AnalyticsRun.objects.filter(id=run_id).update(state=AnalyticsRun.FAILED, error=f"Could not queue the run: {exc}"[:500],
                                                      finished_at=timezone.now())


def get_run(run_id: int, cluster: str | None = None, kind: str | None = None) -> AnalyticsRun:
    qs = AnalyticsRun.objects.filter(id=run_id) if 0 < run_id < 2**63 else AnalyticsRun.objects.none()
    if cluster:
        qs = qs.filter(cluster=cluster)
    if kind:
        qs = qs.filter(kind=kind)
    run = qs.first()
    if run is None:
        raise NotFound(f"There is no {'report' if kind == 'report' else 'analytics run'} {run_id}.")
    return run


def latest_done(cluster: str) -> AnalyticsRun | None:
    found = list(AnalyticsRun.objects.raw(_latest_done_sql(), [cluster, AnalyticsRun.DONE]))
    return found[0] if found else None


@functools.cache
def _latest_done_sql() -> str:
    """latest_done's query, written once: a group's and a topic's pages read it on every view, and the
    ORM took longer to build it than the database took to answer it."""
    from django.db import connection

    qn = connection.ops.quote_name
    meta = AnalyticsRun._meta
    columns = ", ".join(qn(str(f.column)) for f in meta.concrete_fields)
    cluster, state, pk = (qn(str(getattr(meta.get_field(name), "column", name))) for name in ("cluster", "state", "id"))
    return (f"SELECT {columns} FROM {qn(meta.db_table)} WHERE {cluster} = %s AND {state} = %s "  # noqa: S608 - names from the model
            f"ORDER BY {pk} DESC LIMIT 1")


def table(run: AnalyticsRun, name: str, filters: list[tuple[str, str, Any]] | None = None,
          columns: list[str] | None = None) -> list[dict[str, Any]]:
    """Rows of one Parquet table of a finished run (pyarrow: the web process needs no Spark)."""
    import pyarrow.dataset as ds

    path = results_dir(run) / name
    if not path.exists():
        return []
    dataset = ds.dataset(str(path), format="parquet")
    expr = None
    for col, op, value in filters or []:
        term = (ds.field(col) == value) if op == "==" else (ds.field(col) >= value)
        expr = term if expr is None else expr & term
    return dataset.to_table(filter=expr, columns=columns).to_pylist()


def topic_history(cluster: str, topic: str, resolution: int = 60) -> dict[str, list[Any]]:
    run = latest_done(cluster)
    if run is None:
        return {"t": [], "messages": [], "messages_per_s": [], "bytes_per_s": []}
    rows = table(run, "topic_throughput", [("topic", "==", topic), ("resolution_s", "==", resolution)],
                 ["start", "messages", "messages_per_s", "bytes_per_s"])
    rows.sort(key=lambda r: r["start"])
    return {"t": [_epoch(r["start"]) for r in rows], "messages": [r["messages"] for r in rows],
            "messages_per_s": [r["messages_per_s"] for r in rows],
            "bytes_per_s": [r["bytes_per_s"] for r in rows]}


def history_or_none(fn: Any, cluster: str, name: str) -> dict[str, Any] | None:
    """A page's history chart data, or None when there is none (no run yet, or its files unreadable)."""
    import logging

    try:
        history: dict[str, Any] = fn(cluster, name)
    except Exception:  # noqa: BLE001 - the page works without its history chart
        logging.getLogger(__name__).warning("could not read the analytics history of %s", name, exc_info=True)
        return None
    return history if history.get("t") else None


def group_history(cluster: str, group: str) -> dict[str, list[Any]]:
    run = latest_done(cluster)
    if run is None:
        return {"t": [], "lag": [], "time_lag": [], "status": []}
    rows = table(run, "group_status", [("group_id", "==", group)], ["time_ms", "total_lag", "status"])
    lags = {r["time_ms"]: r["time_lag_s"] for r in table(run, "group_lag_history", [("group_id", "==", group)], ["time_ms", "time_lag_s"])}
    rows.sort(key=lambda r: r["time_ms"])
    return {"t": [r["time_ms"] / 1000 for r in rows], "lag": [r["total_lag"] for r in rows],
            "time_lag": [lags.get(r["time_ms"]) for r in rows], "status": [r["status"] for r in rows]}


def _epoch(value: Any) -> float:
    """A Parquet timestamp (naive, UTC, as Spark writes them with the session in UTC) in seconds."""
    from datetime import UTC

    return float(value.replace(tzinfo=UTC).timestamp() if value.tzinfo is None else value.timestamp())


def status_changes(run: AnalyticsRun, limit: int = 200) -> list[dict[str, Any]]:
    """Each group status interval that began inside the run's window, newest first."""
    rows = table(run, "group_status_intervals")
    out = []
    for r in rows:
        start = r.get("start")
        start_ms = int(_epoch(start) * 1000) if hasattr(start, "timestamp") else None
        if start_ms is not None and start_ms >= run.window_start_ms:
            out.append({"group_id": r.get("group_id"), "status": r.get("status"), "start": start.isoformat() if start else None,
                        "samples": r.get("samples")})
    out.sort(key=lambda r: r["start"] or "", reverse=True)
    return out[:limit]


def report_csv(run: AnalyticsRun) -> str:
    """Worst groups, then topics by throughput, then forecasts: one CSV, a section column first (names neutralised)."""
    s = run.summary
    buf = io.StringIO()
    w = csv_writer(buf)
    w.writerow(["section", "name", "status", "total_lag", "max_lag", "time_lag_s", "messages_per_s", "messages", "bytes", "eta_seconds"])
    for g in s.get("worst_groups", []):
        w.writerow(["worst_groups", g.get("group_id"), g.get("status"), g.get("total_lag"), g.get("max_lag"), g.get("time_lag_s"), "", "", "", ""])
    for t in s.get("topics_by_throughput", []):
        w.writerow(["topics_by_throughput", t.get("topic"), "", "", "", "", t.get("messages_per_s"), t.get("messages"), t.get("bytes"), ""])
    for f in s.get("forecasts", []):
        w.writerow(["forecasts", f.get("group_id"), "", f.get("lag"), "", "", "", "", "", f.get("seconds")])
    return buf.getvalue()


def report_html(run: AnalyticsRun) -> str:
    """The report as one self-contained HTML file: styles and Plotly inline, so its charts work offline."""
    from django.template.loader import render_to_string

    plotly = (Path(settings.PLOTLY_JS_DIR) / "plotly.min.js").read_text()
    charts_js = (Path(settings.BASE_DIR) / "static" / "analytics.js").read_text()
    return render_to_string("analytics/report_file.html", {
        "run": run, "summary": run.summary, "changes": status_changes(run), "plotly_js": plotly.replace("</script", "<\\/script"),
        "charts_js": charts_js, "chart_obj": chart_data(run),
    })


def chart_data(run: AnalyticsRun) -> dict[str, Any]:
    """Cluster-wide messages/s per minute and the worst groups' lag over the window, for the charts.

    The lag series are keyed by the group id as Plotly text (escaped), since the key becomes the trace's name."""
    rows = table(run, "topic_throughput", [("resolution_s", "==", 60)], ["start", "messages_per_s"])
    per_minute: dict[float, float] = {}
    for r in rows:
        t = _epoch(r["start"]) * 1000
        per_minute[t] = per_minute.get(t, 0.0) + (r["messages_per_s"] or 0.0)
    worst = [g.get("group_id") for g in run.summary.get("worst_groups", [])[:5]]
    lags = {}
    for gid in worst:
        hist = [r for r in table(run, "group_status", [("group_id", "==", gid)], ["time_ms", "total_lag"])]
        hist.sort(key=lambda r: r["time_ms"])
        lags[chart_text(str(gid))] = {"t": [r["time_ms"] for r in hist], "lag": [r["total_lag"] for r in hist]}
    times = sorted(per_minute)
    return {"throughput": {"t": times, "messages_per_s": [per_minute[t] for t in times]}, "lag": lags}
