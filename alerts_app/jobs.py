"""The `job_failed` condition: reassignments and analytics runs of a cluster that failed lately.

Each is kept on its job row (ReassignmentJob, AnalyticsRun: state "failed", finished_at, error),
where the runner and the analytics task record it; this reads those rows, a failure holding for
EVENT_HOLD_SECONDS after it ended (an event, not a state: see conditions.EVENT_CONDITIONS)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alerts_app.conditions import EVENT_HOLD_SECONDS, Match
from analytics.models import AnalyticsRun
from brokers_app.models import ReassignmentJob

KINDS = ("reassignment", "analytics")
# Failed jobs looked at per kind, newest first: a burst of failures beyond it is named by its newest.
LIMIT = 200


def job_matches(cluster: str, now: float) -> dict[str, list[Match]]:
    """Subject (the job's kind) -> a match per job that failed within EVENT_HOLD_SECONDS."""
    since = datetime.fromtimestamp(now, tz=UTC) - timedelta(seconds=EVENT_HOLD_SECONDS)
    found: dict[str, list[Match]] = {}
    jobs = ReassignmentJob.objects.filter(cluster=cluster, state=ReassignmentJob.FAILED, finished_at__gte=since) \
        .order_by("-finished_at").values_list("id", "kind", "error", "finished_at")[:LIMIT]
    for job_id, kind, error, finished in jobs:
        found.setdefault("reassignment", []).append(Match(
            f"job:reassignment:{job_id}", "reassignment", float(job_id),
            f"Reassignment job #{job_id} failed: {_sentence(error)}",
            {"job": job_id, "kind": "reassignment", "job_kind": kind, "error": error, "finished_at": finished.isoformat() if finished else None}))
    runs = AnalyticsRun.objects.filter(cluster=cluster, state=AnalyticsRun.FAILED, finished_at__gte=since) \
        .order_by("-finished_at").values_list("id", "kind", "error", "finished_at")[:LIMIT]
    for run_id, kind, error, finished in runs:
        found.setdefault("analytics", []).append(Match(
            f"job:analytics:{run_id}", "analytics", float(run_id),
            f"Analytics {'report' if kind == 'report' else 'run'} #{run_id} failed: {_sentence(error)}",
            {"job": run_id, "kind": "analytics", "job_kind": kind, "error": error, "finished_at": finished.isoformat() if finished else None}))
    for matches in found.values():
        matches.sort(key=lambda m: m.key)
    return found


def _sentence(error: str) -> str:
    text = " ".join((error or "no reason was recorded").split())[:300]
    return text if text.endswith(".") else text + "."
