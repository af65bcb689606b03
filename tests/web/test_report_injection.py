"""A lag report whose group ids are formulas or markup: its CSV opens as text, its charts show the names as text."""

from __future__ import annotations

import csv
import io
import json
import time
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analytics import services
from analytics.models import AnalyticsRun

FORMULA = '=HYPERLINK("http://x","y")'
MARKUP = "<b>x</b><img src=x onerror=alert(1)>"
NOW = int(time.time() * 1000)


def finished_report(*group_ids: str, run_id: int | None = None) -> AnalyticsRun:
    """A done report whose worst groups are the given ids, with a lag history for each (as the Spark job writes it);
    saved, unless given an id of its own (the browser test runs where the database may not be used)."""
    run = AnalyticsRun(id=run_id, cluster="local", kind="report", window_start_ms=NOW - 3600_000, window_end_ms=NOW,
                                      state="done", stage="done", summary={
                                          "range": {"start": None, "end": None, "records": 4},
                                          "worst_groups": [{"group_id": g, "status": "WARN", "total_lag": 7, "max_lag": 7, "time_lag_s": 1.0}
                                                           for g in group_ids],
                                          "topics_by_throughput": [{"topic": "-orders", "messages_per_s": 1.0, "messages": 60, "bytes": 600}],
                                          "forecasts": [{"group_id": group_ids[0], "lag": 7, "seconds": 30}],
                                          "hot_partitions": [], "idle_topics": [], "orphaned_groups": []})
    if run_id is None:
        run.save()
    directory = services.results_dir(run)
    (directory / "group_status").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"group_id": [g for g in group_ids for _ in range(2)], "time_ms": [NOW - 60_000, NOW] * len(group_ids),
                             "total_lag": [3, 7] * len(group_ids)}), directory / "group_status" / "part-0.parquet")
    (directory / "report.csv").write_text(services.report_csv(run))
    (directory / "report.html").write_text(services.report_html(run))
    return run


def chart_json(html: str) -> dict[str, Any]:
    return json.loads(html.split('<script id="analytics-charts" type="application/json">')[1].split("</script>")[0])


def test_a_lag_report_csv_holds_a_formula_group_id_as_text(client_as, snapshot) -> None:
    run = finished_report(FORMULA)
    body = client_as("viewer").get(f"/clusters/local/reports/{run.id}/report.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [(r["section"], r["name"]) for r in rows] == [("worst_groups", "'" + FORMULA), ("topics_by_throughput", "'-orders"),
                                                         ("forecasts", "'" + FORMULA)]
    assert rows[0]["total_lag"] == "7", "numbers stay numbers"
    assert client_as("viewer").get(f"/api/v1/reports/{run.id}/report.csv").content.decode() == body


def test_a_report_chart_carries_a_markup_group_id_escaped(client_as, snapshot) -> None:
    run = finished_report(MARKUP, "a&b")
    escaped = "&lt;b&gt;x&lt;/b&gt;&lt;img src=x onerror=alert(1)&gt;"
    assert list(services.chart_data(run)["lag"]) == [escaped, "a&amp;b"]
    assert services.chart_data(run)["lag"][escaped] == {"t": [NOW - 60_000, NOW], "lag": [3, 7]}
    page = client_as("viewer").get(f"/clusters/local/reports/{run.id}/").content.decode()
    offline = client_as("viewer").get(f"/clusters/local/reports/{run.id}/report.html").content.decode()
    analytics = client_as("viewer").get("/clusters/local/analytics/").content.decode()
    for html in (page, offline, analytics):
        assert list(chart_json(html)["lag"]) == [escaped, "a&amp;b"]
        assert "<img src=x" not in html


@pytest.mark.browser
def test_the_offline_report_draws_a_markup_group_id_as_its_literal_text(browser, settings, tmp_path) -> None:
    settings.VAR_DIR = tmp_path
    run = finished_report(MARKUP, "billing", run_id=1)  # two traces: Plotly shows a legend from two on
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.set_content((services.results_dir(run) / "report.html").read_text(), wait_until="load")
    page.wait_for_selector("#lag-chart .legendtext")
    assert page.locator("#lag-chart .legendtext").all_text_contents() == [MARKUP, "billing"]
    assert page.locator("#lag-chart img, #lag-chart b, #lag-chart a").count() == 0
    assert not dialogs, "no script ran from the name"
    context.close()
