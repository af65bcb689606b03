"""Auto-restart of failed Connect tasks: a loop the watcher runs per Kafka cluster while it holds the
cluster's lease (console/watcher/registry.py `register_side_watch`), beside the loop that reads each
Connect cluster (connect_app/state.py), whose last read it acts on.

For each connector with an enabled policy (models.RestartPolicy), a FAILED task is restarted on the
schedule of connect_app/backoff.py; each restart and each give-up is an event on the cluster's
timeline (kinds connect_task_restarted, connect_task_gave_up). Every restart is written to the
database before Connect is asked, so a console process that restarts (or a watcher that takes the
lease over) carries on from the same count and times: it never re-sends a burst. A read made before
a restart had time to show its effect is not taken as a new failure (SETTLE_SECONDS).

`failing_tasks` is what the alert condition connect_task_failing reads: tasks FAILED in the last
read that no policy is restarting (none, disabled, or it gave up).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from connect_app import backoff, state
from connect_app.client import ConnectClient, ConnectError
from connect_app.models import RestartPolicy, TaskRestarts
from connect_app.types import ConnectClusterState, TaskState
from console.connect_config import ConnectConfig
from console.realtime import cluster_group, group_send
from console.watcher import registry

log = logging.getLogger(__name__)

SETTLE_SECONDS = 1.0  # a read this soon after a restart may predate it: it says nothing of the restarted task


def schedule_of(p: RestartPolicy) -> backoff.Schedule:
    return backoff.Schedule(max_restarts=p.max_restarts, window_seconds=float(p.window_seconds),
                            backoff_seconds=p.backoff_seconds, max_backoff_seconds=p.max_backoff_seconds)


def first_line(trace: str) -> str:
    return (trace.strip().splitlines() or [""])[0][:300]


@dataclass(frozen=True)
class FailingTask:
    connect: str
    connector: str
    task: int
    trace: str
    restarts: int  # made by the policy within its window
    gave_up_at: float | None
    policy: bool  # an enabled policy covers the connector


class Restarter:
    """One Kafka cluster's auto-restarts (one per watcher side loop)."""

    def __init__(self, cluster: str, configs: tuple[ConnectConfig, ...]) -> None:
        self.cluster = cluster
        self.configs = {c.name: c for c in configs}
        self.clients: dict[str, ConnectClient] = {}

    def close(self) -> None:
        for c in self.clients.values():
            c.close()

    def client(self, connect: str) -> ConnectClient:
        found = self.clients.get(connect)
        if found is None:
            found = self.clients[connect] = ConnectClient(self.configs[connect])
        return found

    def run_once(self, now: float | None = None) -> int:
        """Look at every enabled policy's connector once; the restarts made."""
        now = time.time() if now is None else now
        policies = list(RestartPolicy.objects.filter(cluster=self.cluster, enabled=True, connect__in=list(self.configs)))
        if not policies:
            return 0
        reads: dict[str, ConnectClusterState | None] = {}
        made = 0
        for p in policies:
            if p.connect not in reads:
                reads[p.connect] = state.stored(self.cluster, p.connect)
            kept = reads[p.connect]
            if kept is None or not kept.reachable or kept.read_at is None:
                continue
            connector = next((c for c in kept.connectors if c.name == p.connector), None)
            if connector is None:
                continue
            rows = {r.task: r for r in TaskRestarts.objects.filter(policy=p)}
            for t in connector.tasks:
                made += self._task(p, t, rows.get(t.id), kept.read_at, now)
        return made

    def _task(self, p: RestartPolicy, t: TaskState, row: TaskRestarts | None, read_at: float, now: float) -> int:
        if row is not None and row.last_restart_at is not None and read_at < row.last_restart_at + SETTLE_SECONDS:
            return 0
        if t.state != "FAILED":
            if row is not None and (row.failed_since is not None or (row.gave_up_at is not None and t.state == "RUNNING")):
                # Running again: the failure is over; after a give-up, someone restarted it by hand.
                row.failed_since = None
                if t.state == "RUNNING" and row.gave_up_at is not None:
                    row.gave_up_at, row.restarts = None, []
                row.save(update_fields=["failed_since", "gave_up_at", "restarts"])
            return 0
        if row is None:
            row = TaskRestarts.objects.create(policy=p, task=t.id, failed_since=now, trace=first_line(t.trace))
        elif row.failed_since is None:
            row.failed_since, row.trace = now, first_line(t.trace)
            row.save(update_fields=["failed_since", "trace"])
        if row.gave_up_at is not None:
            return 0
        decision = backoff.decide(schedule_of(p), row.restarts, row.failed_since or now, row.last_restart_at, now)
        if decision.action == "wait":
            return 0
        if decision.action == "give_up":
            row.gave_up_at = now
            row.save(update_fields=["gave_up_at"])
            self._event(p, t, "connect_task_gave_up", "critical",
                        f"Auto-restart gave up on task {t.id} of connector '{p.connector}': it failed again after "
                        f"{decision.attempt} restarts within {p.window_seconds} s ({first_line(t.trace) or 'no trace'}).",
                        {"restarts": decision.attempt, "window_seconds": p.window_seconds})
            return 0
        # Written before Connect is asked: a process that dies in between does not restart twice.
        row.restarts = [*backoff.within(row.restarts, now, float(p.window_seconds)), now]
        row.last_restart_at, row.failed_since = now, None
        row.save(update_fields=["restarts", "last_restart_at", "failed_since"])
        try:
            self.client(p.connect).restart_task(p.connector, t.id)
            outcome = ""
        except ConnectError as exc:
            outcome = f" Connect refused it: {exc.message}"
        nxt = backoff.delay(decision.attempt, p.backoff_seconds, p.max_backoff_seconds)
        self._event(p, t, "connect_task_restarted", "warning",
                    f"Auto-restarted task {t.id} of connector '{p.connector}' after {decision.delay:g} s "
                    f"(restart {decision.attempt} of {p.max_restarts} within {p.window_seconds} s"
                    + (f"; next after {nxt:g} s" if decision.attempt < p.max_restarts else "") + f").{outcome}",
                    {"attempt": decision.attempt, "delay_seconds": decision.delay, "trace": first_line(t.trace)})
        return 1

    def _event(self, p: RestartPolicy, t: TaskState, kind: str, severity: str, message: str, details: dict[str, Any]) -> None:
        row = registry.EventRow(cluster=self.cluster, at=datetime.now(tz=UTC), kind=kind, severity=severity, message=message,
                                details={"connect": p.connect, "connector": p.connector, "task": t.id, **details})
        try:
            saved = registry.events().save([row])
            group_send(cluster_group(self.cluster), {"type": "events.added", "events": saved, "at": time.time()})
        except Exception:  # noqa: BLE001 - the restart stands (it is in TaskRestarts); the timeline misses it
            log.warning("could not record the event %s of %s: %s", kind, self.cluster, message, exc_info=True)


def watch(cluster: str, stop: threading.Event, active: threading.Event) -> None:
    """The watcher's side loop: one pass per Connect poll interval while the lease is held."""
    configs = tuple(settings.KAFKA_CONNECT.get(cluster, ()))
    if not configs:
        return
    restarter = Restarter(cluster, configs)
    try:
        while not stop.is_set():
            if active.is_set():
                try:
                    close_old_connections()
                    restarter.run_once()
                except Exception:
                    log.exception("auto-restart of Connect tasks of %s failed", cluster)
            stop.wait(settings.CONNECT_POLL_INTERVAL)
    finally:
        restarter.close()


def failing_tasks(cluster: str) -> list[FailingTask]:
    """Tasks FAILED in each Connect cluster's last read that no policy is restarting."""
    found = []
    policies = {(p.connect, p.connector): p for p in RestartPolicy.objects.filter(cluster=cluster, enabled=True)}
    gave_up = {(r.policy.connect, r.policy.connector, r.task): r
               for r in TaskRestarts.objects.filter(policy__cluster=cluster).select_related("policy")}
    for config in settings.KAFKA_CONNECT.get(cluster, ()):
        kept = state.stored(cluster, config.name)
        if kept is None:
            continue
        for c in kept.connectors:
            for t in c.tasks:
                if t.state != "FAILED":
                    continue
                row = gave_up.get((config.name, c.name, t.id))
                covered = (config.name, c.name) in policies
                if covered and (row is None or row.gave_up_at is None):
                    continue  # (the policy is on it)
                found.append(FailingTask(connect=config.name, connector=c.name, task=t.id, trace=first_line(t.trace),
                                         restarts=len(row.restarts) if row is not None else 0,
                                         gave_up_at=row.gave_up_at if row is not None else None, policy=covered))
    return found
