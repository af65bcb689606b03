"""Alerts: rules on what the watcher sees, the channels that carry them, silences, and the state
of every alert (kept in the database so a restarted process neither forgets nor re-sends)."""

from __future__ import annotations

import uuid

from django.db import models

CONDITIONS = (
    "group_status",  # group lag status at or worse than the threshold's status (WARN/ERR/STOP/STALL): `status`
    "group_lag",  # a group's total lag above `threshold` records
    "partition_lag",  # one group partition's lag above `threshold` records
    "time_lag",  # a group's time lag above `threshold` seconds
    "under_replicated",  # partitions with fewer in-sync replicas than replicas
    "under_min_isr",  # partitions with fewer in-sync replicas than min.insync.replicas
    "offline",  # partitions without a leader
    "broker_down",  # a broker left the cluster or the console cannot reach it
    "no_controller",  # no active controller
    "controller_moved",  # the active controller changed
    "quorum_lag",  # a KRaft quorum follower more than `threshold` records behind the leader
    "produce_rate_zero",  # a topic with no records produced for `for_seconds`
    "job_failed",  # a reassignment or an analytics run failed
    "connect_task_failing",  # a Kafka Connect task FAILED that no auto-restart policy restarts (none, or it gave up)
    "transaction_hanging",  # a transaction holds a partition's last stable offset (transactions_app)
)
SEVERITIES = ("info", "warning", "critical")
CHANNEL_KINDS = ("webhook", "email", "slack", "teams", "alertmanager")


class AlertChannel(models.Model):
    """Where notifications go. Channels are shared by every cluster's rules."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=[(k, k) for k in CHANNEL_KINDS])
    url = models.CharField(max_length=2000, blank=True)  # webhook, slack, teams, alertmanager
    to = models.JSONField(default=list, blank=True)  # email: the addresses
    secret = models.CharField(max_length=200, blank=True)  # webhook: the HMAC key (never shown back)
    enabled = models.BooleanField(default=True)
    max_attempts = models.PositiveIntegerField(default=5)  # then the delivery is a dead letter
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]


class AlertRule(models.Model):
    """A condition on a target of one cluster, true for `for_seconds` before it fires."""

    cluster = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    condition = models.CharField(max_length=32, choices=[(c, c) for c in CONDITIONS])
    # A name, a glob (`orders-*`), `*` for every one, or `re:<regex>`; what it names (broker id,
    # topic or group) follows from the condition.
    target = models.CharField(max_length=500, default="*")
    threshold = models.FloatField(null=True, blank=True)
    status = models.CharField(max_length=8, blank=True)  # group_status: WARN, ERR, STOP or STALL
    for_seconds = models.PositiveIntegerField(default=0)
    severity = models.CharField(max_length=16, choices=[(s, s) for s in SEVERITIES], default="warning")
    channels = models.ManyToManyField(AlertChannel, blank=True, related_name="rules")
    repeat_seconds = models.PositiveIntegerField(default=3600)  # a firing alert is sent again after this long (0: never)
    enabled = models.BooleanField(default=True)
    builtin = models.BooleanField(default=False)  # shipped by the console (off until a channel is set)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="alert_rule_name_per_cluster")]


class Alert(models.Model):
    """One subject (a broker, a partition, a group...) a rule holds true for: pending while its
    duration runs, firing, then resolved. A subject firing again is a new row."""

    STATES = ("pending", "firing", "resolved")

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    cluster = models.CharField(max_length=64)
    key = models.CharField(max_length=600)  # the subject: "broker:2", "partition:orders:3", "group:g1", "cluster"
    state = models.CharField(max_length=10, choices=[(s, s) for s in STATES])
    severity = models.CharField(max_length=16)
    message = models.TextField()
    value = models.FloatField(null=True, blank=True)
    details = models.JSONField(default=dict)
    since = models.DateTimeField()  # when the condition was first seen true
    fired_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    last_notified_at = models.DateTimeField(null=True, blank=True)
    silenced_by = models.ForeignKey("Silence", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    acknowledged_by = models.CharField(max_length=150, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-since", "-id"]
        indexes = [models.Index(fields=["cluster", "state"]), models.Index(fields=["rule", "key", "state"])]


class Silence(models.Model):
    """While it lasts, alerts its matchers match are kept and shown but not sent. A matcher is
    {"field": "rule"|"condition"|"key"|"severity"|"target", "value": ..., "regex": bool}."""

    cluster = models.CharField(max_length=64, default="*")
    matchers = models.JSONField(default=list)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    comment = models.TextField()
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    expired_early_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-ends_at", "-id"]


class Notification(models.Model):
    """One message about a rule on a cluster: every alert of the rule that fired (or resolved) in the
    same evaluation, grouped; its id is the idempotency key a receiver sees on every retry."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    rule = models.ForeignKey(AlertRule, null=True, on_delete=models.SET_NULL, related_name="notifications")
    cluster = models.CharField(max_length=64)
    kind = models.CharField(max_length=10)  # firing, resolved, repeat, test
    severity = models.CharField(max_length=16)
    title = models.CharField(max_length=500)
    alerts = models.ManyToManyField(Alert, blank=True, related_name="notifications")
    payload = models.JSONField(default=dict)  # what the channels render from
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]


class Delivery(models.Model):
    """One notification to one channel: attempts with backoff, then sent or a dead letter."""

    STATES = ("pending", "sent", "dead")

    notification = models.ForeignKey(Notification, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(AlertChannel, on_delete=models.CASCADE, related_name="deliveries")
    state = models.CharField(max_length=8, choices=[(s, s) for s in STATES], default="pending")
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]
