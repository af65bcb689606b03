"""The `connect_task_failing` condition: Kafka Connect tasks FAILED in the watcher's last read of each
Connect cluster that no auto-restart policy is restarting (none, off, or it gave up after its N
restarts): connect_app/restarts.py `failing_tasks`. A state, not an event: it resolves once the task
runs again. A rule's target names connectors."""

from __future__ import annotations

from alerts_app.conditions import Match
from connect_app.restarts import failing_tasks


def task_matches(cluster: str) -> dict[str, list[Match]]:
    """Subject (the connector's name) -> a match per failing task."""
    found: dict[str, list[Match]] = {}
    for t in failing_tasks(cluster):
        why = (f"auto-restart gave up after {t.restarts} restart{'s' if t.restarts != 1 else ''}" if t.gave_up_at is not None
               else "no auto-restart policy restarts it")
        trace = f": {t.trace}" if t.trace else ""
        found.setdefault(t.connector, []).append(Match(
            f"task:{t.connect}/{t.connector}/{t.task}", t.connector, float(t.restarts),
            f"Task {t.task} of connector '{t.connector}' (Connect cluster '{t.connect}') is FAILED; {why}{trace}.",
            {"connect": t.connect, "connector": t.connector, "task": t.task, "restarts": t.restarts, "gave_up_at": t.gave_up_at,
             "trace": t.trace}))
    for matches in found.values():
        matches.sort(key=lambda m: m.key)
    return found
