from __future__ import annotations

from typing import Any

from django.db import models


class Event(models.Model):
    """One change the watcher saw between two snapshots of a cluster (the events timeline)."""

    cluster = models.CharField(max_length=64)
    at = models.DateTimeField()
    kind = models.CharField(max_length=32)
    severity = models.CharField(max_length=16)
    message = models.TextField()
    topic = models.CharField(max_length=249, null=True, blank=True)
    partition = models.IntegerField(null=True, blank=True)
    broker = models.IntegerField(null=True, blank=True)
    details = models.JSONField(default=dict)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["cluster", "-at"]),
            models.Index(fields=["cluster", "kind", "-at"]),
            models.Index(fields=["cluster", "topic", "-at"]),
            models.Index(fields=["cluster", "broker", "-at"]),
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cluster": self.cluster,
            "at": self.at.isoformat(),
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "topic": self.topic,
            "partition": self.partition,
            "broker": self.broker,
            "details": self.details,
        }


class ReassignmentJob(models.Model):
    """A reassignment plan and, once executed, its run: state in the database, so a worker that dies
    is replaced by another that carries on from here and Kafka's list of ongoing reassignments.

    `plan` is the planner's answer (placement.Plan.to_dict()); `moves` holds one state per entry of
    plan["partitions"]: pending, moving, done, reverting, reverted, skipped."""

    PLANNED, QUEUED, RUNNING, CANCELLING = "planned", "queued", "running", "cancelling"
    COMPLETED, CANCELLED, FAILED = "completed", "cancelled", "failed"
    ACTIVE = (QUEUED, RUNNING, CANCELLING)

    cluster = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True)
    kind = models.CharField(max_length=32)
    plan = models.JSONField(default=dict)
    state = models.CharField(max_length=16, default=PLANNED)
    active = models.BooleanField(default=False)  # queued, running or cancelling: at most one per cluster
    throttle = models.BigIntegerField(default=0)  # bytes/s
    max_moves = models.IntegerField(default=5)  # concurrent movements per broker
    moves = models.JSONField(default=list)
    throttles = models.JSONField(default=dict)  # what the job set: {"brokers": [...], "topics": [...]}
    baseline = models.JSONField(default=dict)  # offsets before the first move: {"topic\tpartition": [start, end]}
    progress = models.JSONField(default=dict)
    verification = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    executed_by = models.CharField(max_length=150, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["cluster"], condition=models.Q(active=True), name="one_active_reassignment_per_cluster"),
        ]

    def summary(self) -> dict[str, Any]:
        totals = self.plan.get("totals", {})
        return {
            "id": self.id,
            "cluster": self.cluster,
            "kind": self.kind,
            "request": self.plan.get("request", {}),
            "state": self.state,
            "created_at": self.created_at.isoformat(),
            "created_by": self.created_by,
            "executed_by": self.executed_by or None,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "partitions_changed": totals.get("partitions_changed", 0),
            "bytes_to_move": totals.get("bytes_to_move", 0),
            "throttle_bytes_per_second": self.throttle or None,
            "max_moves_per_broker": self.max_moves,
            "progress": self.progress,
            "verified": None if self.verification is None else self.verification.get("ok"),
            "error": self.error or None,
        }

    def as_dict(self) -> dict[str, Any]:
        partitions = [{**p, "state": s} for p, s in zip(self.plan.get("partitions", []), self.moves or [], strict=False)]
        return {
            **self.summary(),
            **{k: v for k, v in self.plan.items() if k != "partitions"},
            "partitions": partitions if self.moves else self.plan.get("partitions", []),
            "verification": self.verification,
            "throttles": self.throttles,
        }
