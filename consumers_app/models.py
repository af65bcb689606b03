from __future__ import annotations

from typing import Any

from django.db import models


class Rebalance(models.Model):
    """One rebalance of a consumer group, as the watcher saw it (ALGORITHMS.md section 4)."""

    cluster = models.CharField(max_length=64)
    group = models.CharField(max_length=255)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    duration_s = models.FloatField()
    generation_before = models.IntegerField(null=True)
    generation_after = models.IntegerField(null=True)
    joined = models.JSONField(default=list)  # [{"client_id": ..., "host": ...}]
    left = models.JSONField(default=list)
    moved = models.JSONField(default=list)  # [{"topic", "partition", "from", "to"}]
    trigger = models.CharField(max_length=64, default="unknown")
    missed = models.BooleanField(default=False)  # inferred from a generation jump, not observed

    class Meta:
        indexes = [models.Index(fields=["cluster", "group", "-started_at"]), models.Index(fields=["cluster", "-started_at"])]

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat(),
            "duration_s": round(self.duration_s, 3),
            "generation_before": self.generation_before,
            "generation_after": self.generation_after,
            "joined": self.joined,
            "left": self.left,
            "moved": self.moved,
            "trigger": self.trigger,
            "missed": self.missed,
        }
