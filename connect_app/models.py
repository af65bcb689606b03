"""What the console keeps of Kafka Connect beyond Connect itself: each connector's auto-restart policy
and, per task, the restarts it made under it (in the database, so a restarted console process carries
on from them instead of restarting a failing task again at once)."""

from __future__ import annotations

from django.db import models


class RestartPolicy(models.Model):
    """Restart a connector's FAILED tasks: after `backoff_seconds`, doubling with each restart up to
    `max_backoff_seconds`; after `max_restarts` restarts within `window_seconds`, give up (an event,
    and the alert condition connect_task_failing)."""

    cluster = models.CharField(max_length=64)
    connect = models.CharField(max_length=100)  # the Connect cluster's name
    connector = models.CharField(max_length=249)
    enabled = models.BooleanField(default=True)
    max_restarts = models.PositiveIntegerField(default=3)
    window_seconds = models.PositiveIntegerField(default=600)
    backoff_seconds = models.FloatField(default=10.0)
    max_backoff_seconds = models.FloatField(default=300.0)
    updated_by = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster", "connect", "connector"]
        constraints = [models.UniqueConstraint(fields=["cluster", "connect", "connector"], name="connect_restart_policy_per_connector")]


class TaskRestarts(models.Model):
    """One task's restarts under its connector's policy: when each was made (those within the window
    count), when its current failure was first seen, and whether the policy gave up on it."""

    policy = models.ForeignKey(RestartPolicy, on_delete=models.CASCADE, related_name="tasks")
    task = models.PositiveIntegerField()
    restarts = models.JSONField(default=list)  # epoch seconds of the restarts made within the window
    failed_since = models.FloatField(null=True, blank=True)  # the current failure, first seen (epoch seconds)
    last_restart_at = models.FloatField(null=True, blank=True)
    gave_up_at = models.FloatField(null=True, blank=True)
    trace = models.TextField(blank=True)  # the failure's first line when last seen

    class Meta:
        ordering = ["policy", "task"]
        constraints = [models.UniqueConstraint(fields=["policy", "task"], name="connect_task_restarts_per_task")]
