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


class RoleBinding(models.Model):
    """A role (or an explicit list of actions) given to a user or a Django group on one cluster (or
    every cluster, `*`), optionally only for topics and consumer groups whose names match a pattern.
    console/access.py compiles them; the admin edits them on the access page or the API."""

    SUBJECT_KINDS = [("user", "user"), ("group", "group")]
    PATTERN_KINDS = [(k, k) for k in ("all", "literal", "prefix", "regex", "none")]

    subject_kind = models.CharField(max_length=8, choices=SUBJECT_KINDS, default="user")
    subject = models.CharField(max_length=150)
    role = models.CharField(max_length=16, blank=True)
    actions = models.JSONField(default=list, blank=True)
    cluster = models.CharField(max_length=64, default="*")
    topic_kind = models.CharField(max_length=8, choices=PATTERN_KINDS, default="all")
    topic_pattern = models.CharField(max_length=500, blank=True)
    group_kind = models.CharField(max_length=8, choices=PATTERN_KINDS, default="all")
    group_pattern = models.CharField(max_length=500, blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["subject_kind", "subject", "id"]
        indexes = [models.Index(fields=["subject_kind", "subject"])]


class AccessVersion(models.Model):
    """One row whose number moves with every change of the role bindings: each process reads it per
    request (a primary-key lookup) and compiles the bindings again only when it moved."""

    value = models.BigIntegerField(default=0)
