from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    """Who changed what, on which cluster, with what outcome."""

    at = models.DateTimeField(auto_now_add=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150)
    cluster = models.CharField(max_length=64, blank=True)
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=300, blank=True)
    details = models.JSONField(default=dict)
    outcome = models.CharField(max_length=16, default="ok")
    client_ip = models.CharField(max_length=64, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
