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
