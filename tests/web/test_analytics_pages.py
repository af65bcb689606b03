"""Analytics and lag reports through pages and API, without Spark: input, roles, rendering, downloads.

The Spark side runs for real in tests/unit/test_analytics_jobs.py and tests/integration/test_analytics_live.py."""

from __future__ import annotations

import csv
import io
import time

from analytics import services
from analytics.models import AnalyticsRun, ReportSchedule
from console.models import AuditEntry

RUNS = "/api/v1/clusters/local/analytics/runs/"
NOW = int(time.time() * 1000)


def post(client, path: str, body: dict):  # noqa: ANN001, ANN201
    return client.post(path, body, content_type="application/json")


def test_bad_ranges_get_a_sentence_and_queue_nothing(client_as, snapshot) -> None:
    op = client_as("operator")
    cases: list[tuple[dict, str]] = [
        ({"start_ms": NOW - 1000, "end_ms": NOW - 2000}, "ends before it starts"),
        ({"start_ms": NOW - 30 * 24 * 3600 * 1000, "end_ms": NOW}, "before the oldest samples kept (168 hours"),
        ({"start_ms": NOW, "end_ms": NOW + 3600 * 1000}, "ends in the future"),
        ({"start_ms": "yesterday"}, "start_ms"),
    ]
    for body, words in cases:
        r = post(op, RUNS, body)
        assert r.status_code == 400, (body, r.content)
        assert words in r.json()["detail"], (body, r.json())
    page = op.post("/clusters/local/analytics/", {"start": "2026-13-45T99:00"})
    assert page.status_code == 400 and "is not a time" in page.content.decode()
    assert AnalyticsRun.objects.count() == 0


def test_run_now_queues_a_run_audits_it_and_lists_it(client_as, snapshot) -> None:
    r = post(client_as("operator"), RUNS, {})
    assert r.status_code == 202, r.content
    body = r.json()
    assert body["state"] in ("queued", "failed") and body["window_end_ms"] - body["window_start_ms"] == 3600 * 1000
    assert [x["id"] for x in client_as("viewer").get(RUNS).json()["runs"]] == [body["id"]]
    assert AuditEntry.objects.filter(action="analytics_run", outcome="ok").count() == 1
    assert post(client_as("viewer"), RUNS, {}).status_code == 403
    page = client_as("viewer").get("/clusters/local/analytics/").content.decode()
    assert f'data-run="{body["id"]}"' in page and 'id="run-now"' not in page, "a viewer sees runs but no Run now"
    run = AnalyticsRun.objects.get(id=body["id"])
    start, end = run.window_start.strftime("%Y-%m-%d %H:%M"), run.window_end.strftime("%H:%M")
    if run.window_start.date() != run.window_end.date():
        end = run.window_end.strftime("%Y-%m-%d %H:%M")
    assert f"{start} &rarr; {end} <span class=\"muted\">(60 min)</span>" in page, "the window in UTC, not an age"
    assert 'id="run-now"' in client_as("operator").get("/clusters/local/analytics/").content.decode()


def test_unknown_topic_group_and_report_are_404(client_as, snapshot) -> None:
    v = client_as("viewer")
    assert v.get("/api/v1/clusters/local/analytics/topics/nope/").status_code == 404
    assert v.get("/api/v1/clusters/local/analytics/consumer-groups/nope/").status_code == 404
    assert v.get("/api/v1/clusters/local/analytics/topics/orders/?resolution=7").status_code == 400
    assert v.get("/api/v1/clusters/local/analytics/topics/orders/").json()["t"] == []
    assert v.get("/api/v1/reports/12345/").status_code == 404
    assert v.get("/clusters/local/reports/12345/report.csv").status_code == 404


def test_schedules_are_for_admins_and_a_malformed_one_is_refused(client_as, snapshot) -> None:
    path = "/api/v1/clusters/local/report-schedules/"
    names = [s["name"] for s in client_as("viewer").get(path).json()["schedules"]]
    assert names == ["hourly", "daily"]
    assert client_as("operator").patch(path + "?name=hourly", {"every_minutes": 5}, content_type="application/json").status_code == 403
    for body, words in (({"every_minutes": 0}, "every_minutes"), ({"email_to": ["not-an-address"]}, "email_to"),
                        ({"window_minutes": "soon"}, "window_minutes")):
        r = client_as("admin").patch(path + "?name=hourly", body, content_type="application/json")
        assert r.status_code == 400 and words in r.content.decode(), (body, r.content)
    assert client_as("admin").patch(path + "?name=weekly", {"every_minutes": 5}, content_type="application/json").status_code == 404
    r = client_as("admin").patch(path + "?name=hourly", {"every_minutes": 5, "email_to": ["ops@example.com"]}, content_type="application/json")
    assert r.status_code == 200 and r.json()["every_minutes"] == 5 and r.json()["email_to"] == ["ops@example.com"]
    page = client_as("admin").post("/clusters/local/reports/", {"name": "daily", "every_minutes": "soon", "window_minutes": "60"})
    assert page.status_code == 400 and "whole number of minutes" in page.content.decode()
    assert ReportSchedule.objects.get(cluster="local", name="daily").every_minutes == 1440


def finished_report(tmp_settings_var=None) -> AnalyticsRun:  # noqa: ANN001
    run = AnalyticsRun.objects.create(cluster="local", kind="report", window_start_ms=NOW - 3600_000, window_end_ms=NOW,
                                      state="done", stage="done", summary={
                                          "range": {"start": "2026-11-23T10:00:00.000+00:00", "end": "2026-11-23T11:00:00.000+00:00", "records": 10},
                                          "worst_groups": [{"group_id": "</script><b>x", "status": "WARN", "total_lag": 42, "max_lag": 40, "time_lag_s": 3.5}],
                                          "topics_by_throughput": [{"topic": "orders", "messages_per_s": 2.5, "messages": 9000, "bytes": 100}],
                                          "forecasts": [], "hot_partitions": [], "idle_topics": [], "orphaned_groups": []})
    directory = services.results_dir(run)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.csv").write_text(services.report_csv(run))
    (directory / "report.html").write_text(services.report_html(run))
    return run


def test_a_report_page_csv_and_offline_file_agree_and_escape_names(client_as, snapshot) -> None:
    run = finished_report()
    page = client_as("viewer").get(f"/clusters/local/reports/{run.id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "&lt;/script&gt;&lt;b&gt;x" in html and "</script><b>x" not in html
    rows = list(csv.DictReader(io.StringIO(client_as("viewer").get(f"/clusters/local/reports/{run.id}/report.csv").content.decode())))
    assert [(r["section"], r["name"], r["total_lag"]) for r in rows] == [("worst_groups", "</script><b>x", "42"),
                                                                         ("topics_by_throughput", "orders", "")]
    offline = client_as("viewer").get(f"/clusters/local/reports/{run.id}/report.html")
    assert offline["Content-Disposition"].startswith("attachment;")
    text = offline.content.decode()
    assert "/static/" not in text and "https://" not in text.split("<script>")[0], "the file needs nothing from a server"
    assert "Plotly" in text and len(text) > 1_000_000, "Plotly is inside the file"
    assert "</script><b>x" not in text
    listed = client_as("viewer").get("/api/v1/reports/?cluster=local").json()["reports"]
    assert [r["id"] for r in listed] == [run.id]
    detail = client_as("viewer").get(f"/api/v1/reports/{run.id}/").json()
    assert detail["csv"] == f"/api/v1/reports/{run.id}/report.csv" and detail["summary"]["worst_groups"][0]["total_lag"] == 42
    assert client_as("viewer").get(detail["csv"]).content == client_as("viewer").get(f"/clusters/local/reports/{run.id}/report.csv").content


def test_a_run_no_worker_took_ends_with_the_reason_instead_of_staying_queued(db, settings) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from analytics.tasks import due_reports

    old = AnalyticsRun.objects.create(cluster="local", window_start_ms=NOW - 60_000, window_end_ms=NOW)
    fresh = AnalyticsRun.objects.create(cluster="local", window_start_ms=NOW - 60_000, window_end_ms=NOW)
    AnalyticsRun.objects.filter(id=old.id).update(created_at=timezone.now() - timedelta(seconds=settings.ANALYTICS_RUN_TIMEOUT + 60))
    assert due_reports() == [], "no schedule is due right after it is made"
    old.refresh_from_db()
    fresh.refresh_from_db()
    assert (old.state, old.error) == ("failed", "No analytics worker took this run (is the 'analytics' Celery worker running?).")
    assert fresh.state == "queued"
