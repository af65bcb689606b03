from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import models


class ReportSchedule(models.Model):
    """When a cluster's lag report is made: every `every_minutes`, over the last `window_minutes`."""

    cluster = models.CharField(max_length=64)
    name = models.CharField(max_length=32)  # "hourly", "daily", or an admin's own
    every_minutes = models.IntegerField()
    window_minutes = models.IntegerField()
    enabled = models.BooleanField(default=True)
    email_to = models.TextField(blank=True)  # comma-separated addresses; empty: no e-mail
    last_run_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster", "every_minutes", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="one_schedule_name_per_cluster")]

    def as_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "name": self.name, "every_minutes": self.every_minutes,
                "window_minutes": self.window_minutes, "enabled": self.enabled,
                "email_to": [a for a in (x.strip() for x in self.email_to.split(",")) if a],
                "last_run_at": self.last_run_at.isoformat() if self.last_run_at else None}


class AnalyticsRun(models.Model):
    """One Spark run over a window of samples: "Run now" (kind run) or a lag report (kind report)."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"

    cluster = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, default="run")
    schedule = models.ForeignKey(ReportSchedule, null=True, blank=True, on_delete=models.SET_NULL)
    requested_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=16, default=QUEUED)
    stage = models.CharField(max_length=64, blank=True)
    window_start_ms = models.BigIntegerField()
    window_end_ms = models.BigIntegerField()
    summary = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    seconds = models.FloatField(null=True, blank=True)
    emailed_to = models.TextField(blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["cluster", "kind", "-id"])]

    @property
    def window_start(self) -> datetime:
        return datetime.fromtimestamp(self.window_start_ms / 1000, tz=UTC)

    @property
    def window_end(self) -> datetime:
        return datetime.fromtimestamp(self.window_end_ms / 1000, tz=UTC)

    @property
    def window_minutes(self) -> int:
        return round((self.window_end_ms - self.window_start_ms) / 60_000)

    def as_dict(self, full: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "cluster": self.cluster, "kind": self.kind, "state": self.state, "stage": self.stage,
            "schedule": self.schedule.name if self.schedule_id and self.schedule else None,
            "requested_by": self.requested_by or None, "created_at": self.created_at.isoformat(),
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "window_start_ms": self.window_start_ms, "window_end_ms": self.window_end_ms,
            "seconds": self.seconds, "error": self.error or None, "emailed_to": self.emailed_to or None,
        }
        if full:
            out["summary"] = self.summary
        return out
