"""Analytics and lag report pages: parse input, call the service, render (no Spark in the web process)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse

from analytics import services
from analytics.models import AnalyticsRun
from console import error_responses, gateway, snapshots
from console.auth import allow
from console.errors import BadParameter, ConsoleError
from console.gateway.errors import NotFound


def parse_time(params: Mapping[str, str], name: str) -> int | None:
    """A form's datetime-local (UTC) or milliseconds since the epoch, as milliseconds."""
    raw = params.get(name, "").strip()
    if not raw:
        return None
    if raw.isdigit() and len(raw) <= 15:
        return int(raw)
    try:
        dt = datetime.fromisoformat(raw)
    except ValueError:
        raise BadParameter(f"'{name}' is not a time: give YYYY-MM-DDTHH:MM (UTC) or milliseconds since the epoch.") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def runs_context(cluster: str) -> dict[str, Any]:
    return {"runs": list(AnalyticsRun.objects.filter(cluster=cluster)[:20]), "cluster": cluster}


def runs_fragment(live: snapshots.Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"analytics-runs": render_to_string("analytics/_runs.html", runs_context(live.cluster))}


@allow(GET="analytics.view", POST="analytics.run")
def analytics_page(request: HttpRequest, cluster: str) -> HttpResponse:
    live = snapshots.live(cluster)
    status = 200
    error = None
    if request.method == "POST":
        try:
            start, end = parse_time(request.POST, "start"), parse_time(request.POST, "end")
            run, already = services.run_now(cluster, request.user, start, end)
            if already:
                messages.info(request, services.already_queued(run))
            return redirect(reverse("analytics", args=[cluster]))
        except ConsoleError as exc:
            error, status = error_responses.form_error(exc)
    latest = services.latest_done(cluster)
    context = {"live": live, "view": "analytics", "latest": latest, "summary": latest.summary if latest else None,
               "charts": services.chart_data(latest) if latest else None, "error": error, "form": request.POST,
               **runs_context(cluster)}
    return render(request, "analytics/analytics.html", context, status=status)


@allow(GET="analytics.view", POST="reports.schedule")
def reports_page(request: HttpRequest, cluster: str) -> HttpResponse:
    live = snapshots.live(cluster)
    gateway.cluster_config(cluster)
    schedules = services.ensure_schedules(cluster)
    status, error = 200, None
    if request.method == "POST":
        try:
            services.update_schedule(request.user, cluster, request.POST)
            return redirect(reverse("reports", args=[cluster]))
        except ConsoleError as exc:
            error, status = error_responses.form_error(exc)
    reports = list(AnalyticsRun.objects.filter(cluster=cluster, kind="report")[:100])
    return render(request, "analytics/reports.html", {"live": live, "view": "reports", "schedules": schedules,
                                                      "reports": reports, "error": error}, status=status)


@allow(GET="analytics.view")
def report_page(request: HttpRequest, cluster: str, report_id: int) -> HttpResponse:
    live = snapshots.live(cluster)
    run = services.get_run(report_id, cluster, "report")
    ready = run.state == AnalyticsRun.DONE
    return render(request, "analytics/report.html", {
        "live": live, "view": "reports", "run": run, "summary": run.summary,
        "changes": services.status_changes(run) if ready else [], "charts": services.chart_data(run) if ready else None})


@allow(GET="analytics.view")
def report_download(request: HttpRequest, cluster: str, report_id: int, fmt: str) -> HttpResponse:
    return report_file(services.get_run(report_id, cluster, "report"), fmt)


def report_file(run: AnalyticsRun, fmt: str) -> HttpResponse:
    path = services.results_dir(run) / f"report.{fmt}"
    report_id, cluster = run.id, run.cluster
    if run.state != AnalyticsRun.DONE or not path.exists():
        raise NotFound(f"Report {report_id} has no {fmt.upper()} file yet (it is {run.state}).")
    content_type = "text/csv" if fmt == "csv" else "text/html"
    response = HttpResponse(path.read_bytes(), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="lag-report-{cluster}-{run.id}.{fmt}"'
    return response
