"""A connector's auto-restart policy for the pages and the API: read it with what it did to each task,
and change it (checked here, audited). The restarts themselves are made by connect_app/restarts.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from connect_app import backoff, services
from connect_app.models import RestartPolicy, TaskRestarts
from console.audit import audited
from console.errors import BadParameter

DEFAULTS = {"enabled": False, "max_restarts": 3, "window_seconds": 600, "backoff_seconds": 10.0, "max_backoff_seconds": 300.0}
LIMITS = {"max_restarts": (1, 1000), "window_seconds": (1, 7 * 24 * 3600), "backoff_seconds": (0.1, 24 * 3600.0),
          "max_backoff_seconds": (0.1, 24 * 3600.0)}
WORDS = {"max_restarts": "restarts", "window_seconds": "seconds", "backoff_seconds": "seconds", "max_backoff_seconds": "seconds"}


@dataclass(frozen=True)
class PolicyView:
    connect: str
    connector: str
    policy: dict[str, Any]  # DEFAULTS' keys; `saved` says whether a policy row exists
    tasks: list[dict[str, Any]]  # {task, restarts, last_restart_at, failed_since, gave_up_at, trace}
    schedule: list[float]  # the waits before each restart within the window

    def as_dict(self) -> dict[str, Any]:
        return {"connector": self.connector, "connect": self.connect, **self.policy, "schedule_seconds": self.schedule,
                "tasks": self.tasks}


def _number(value: Any, key: str, whole: bool) -> float:
    low, high = LIMITS[key]
    if isinstance(value, str):
        try:
            value = float(value.strip()) if value.strip() else None
        except ValueError:
            raise BadParameter(f"'{key}' must be a number of {WORDS[key]}, not '{value[:40]}'.") from None
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadParameter(f"'{key}' must be a number of {WORDS[key]}.")
    if whole and value != int(value):
        raise BadParameter(f"'{key}' must be a whole number of {WORDS[key]}.")
    if value < low:
        raise BadParameter(f"'{key}' must be {low:g} or more {WORDS[key]}.")
    if value > high:
        raise BadParameter(f"'{key}' must be at most {high:g} {WORDS[key]}.")
    return float(value)


def check_policy(values: dict[str, Any]) -> dict[str, Any]:
    """A policy's fields (missing ones: the defaults), each mistake one sentence naming the field."""
    unknown = sorted(set(values) - set(DEFAULTS))
    if unknown:
        raise BadParameter(f"Unknown field '{unknown[0][:40]}'; a restart policy has {', '.join(DEFAULTS)}.")
    merged = {**DEFAULTS, **values}
    enabled = merged["enabled"]
    if not isinstance(enabled, bool):
        raise BadParameter("'enabled' must be true or false.")
    out: dict[str, Any] = {"enabled": enabled}
    for key in ("max_restarts", "window_seconds"):
        out[key] = int(_number(merged[key], key, whole=True))
    for key in ("backoff_seconds", "max_backoff_seconds"):
        out[key] = _number(merged[key], key, whole=False)
    if out["max_backoff_seconds"] < out["backoff_seconds"]:
        raise BadParameter(f"'max_backoff_seconds' ({out['max_backoff_seconds']:g}) must be at least 'backoff_seconds' "
                           f"({out['backoff_seconds']:g}).")
    return out


def _schedule(p: dict[str, Any]) -> list[float]:
    return [backoff.delay(k, p["backoff_seconds"], p["max_backoff_seconds"]) for k in range(min(p["max_restarts"], 20))]


def read(cluster: str, connect: str | None, name: str) -> PolicyView:
    services.check_name(name)
    target = services.locate(cluster, name, connect)
    row = RestartPolicy.objects.filter(cluster=cluster, connect=target.name, connector=name).first()
    policy = {k: getattr(row, k) for k in DEFAULTS} if row is not None else dict(DEFAULTS)
    tasks = [{"task": t.task, "restarts": len(t.restarts), "restart_times": t.restarts, "last_restart_at": t.last_restart_at,
              "failed_since": t.failed_since, "gave_up_at": t.gave_up_at, "trace": t.trace or None}
             for t in (TaskRestarts.objects.filter(policy=row) if row is not None else [])]
    return PolicyView(connect=target.name, connector=name, policy={**policy, "saved": row is not None}, tasks=tasks,
                      schedule=_schedule(policy))


def save(user: Any, cluster: str, connect: str | None, name: str, values: dict[str, Any]) -> tuple[services.Outcome, PolicyView]:
    """Set a connector's policy; its tasks' restart counts start afresh (a changed policy is a new start)."""
    services.check_name(name)
    checked = check_policy(values)
    target = services.locate(cluster, name, connect)
    with audited(user, "connector_restart_policy", cluster=cluster, target=name, details={"connect": target.name, **checked}), \
            transaction.atomic():
        row, _ = RestartPolicy.objects.update_or_create(cluster=cluster, connect=target.name, connector=name,
                                                        defaults={**checked, "updated_by": getattr(user, "username", "") or ""})
        TaskRestarts.objects.filter(policy=row).delete()
    if checked["enabled"]:
        waits = ", ".join(f"{w:g}" for w in _schedule(checked))
        message = (f"Auto-restart of connector '{name}' is on: a failed task is restarted after {waits} s, at most "
                   f"{checked['max_restarts']} times within {checked['window_seconds']} s, then given up on.")
    else:
        message = f"Auto-restart of connector '{name}' is off."
    return services.Outcome(message, {"connect": target.name}), read(cluster, target.name, name)
