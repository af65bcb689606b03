"""The changes people make to alerting, for the pages and the API alike: rules, channels, silences and
acknowledgements. Each is checked (alerts_app/rules.py, alerts_app/channels.py), saved and audited
here; views and the API only parse and render."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from alerts_app import rules
from alerts_app.models import Alert, AlertChannel, AlertRule, Delivery, Silence
from console import gateway
from console.audit import audited
from console.errors import BadParameter, Conflict, ConsoleError


class Missing(ConsoleError):
    http_status = 404


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def _who(user: Any) -> str:
    return str(getattr(user, "username", "") or "")[:150]


# Channels ------------------------------------------------------------------------------------------

CHANNEL_FIELDS = ("name", "kind", "url", "to", "secret", "max_attempts", "enabled")


def _shown_url(url: str, full: bool) -> str:
    """A webhook URL is its own credential (Slack's and Teams' carry their key in the path), so those
    who may not change channels see its scheme and host only."""
    if full or not url:
        return url
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}/…" if parts.scheme else "…"


def channel_dict(ch: AlertChannel, full: bool = False) -> dict[str, Any]:
    return {"id": ch.id, "name": ch.name, "kind": ch.kind, "url": _shown_url(ch.url, full), "to": list(ch.to or []),
            "secret_set": bool(ch.secret), "enabled": ch.enabled, "max_attempts": ch.max_attempts,
            "consecutive_failures": ch.consecutive_failures, "last_error": ch.last_error, "last_sent_at": _iso(ch.last_sent_at),
            "created_by": ch.created_by, "created_at": _iso(ch.created_at), "updated_at": _iso(ch.updated_at)}


def channel(name: str) -> AlertChannel:
    found = AlertChannel.objects.filter(name=name).first()
    if found is None:
        raise Missing(f"There is no alert channel '{name}'.")
    return found


def channels() -> list[AlertChannel]:
    return list(AlertChannel.objects.all())


def _checked_channel(fields: Mapping[str, Any], current: AlertChannel | None) -> dict[str, Any]:
    """The whole channel checked (an edit merged into the saved fields, since what is required
    follows from the kind; a new kind drops the old kind's address and key)."""
    from alerts_app.channels import validate_channel

    merged: dict[str, Any] = {}
    if current is not None:
        merged = {"name": current.name, "kind": current.kind, "max_attempts": current.max_attempts, "enabled": current.enabled}
        if fields.get("kind", current.kind) == current.kind:
            merged.update(url=current.url, to=list(current.to or []), secret=current.secret)
            merged = {k: v for k, v in merged.items() if v not in ("", [])}
    merged.update(fields)
    return {k: v for k, v in validate_channel(merged).items() if k in CHANNEL_FIELDS}


def _saved_channel(ch: AlertChannel, fields: dict[str, Any]) -> AlertChannel:
    for k, v in fields.items():
        setattr(ch, k, v)
    try:
        with transaction.atomic():
            ch.save()
    except IntegrityError:
        raise Conflict(f"An alert channel named '{ch.name}' exists already.") from None
    return ch


def _channel_details(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k in ("name", "kind", "to", "max_attempts", "enabled")} | {
        "secret_set": bool(fields.get("secret"))}  # never the secret; the URL may hold a key too


def create_channel(user: Any, fields: Mapping[str, Any]) -> AlertChannel:
    with audited(user, "alert_channel_create", target=str(fields.get("name", ""))[:200]) as entry:
        checked = _checked_channel(fields, None)
        entry.update(_channel_details(checked))
        return _saved_channel(AlertChannel(created_by=_who(user)), checked)


def update_channel(user: Any, name: str, fields: Mapping[str, Any]) -> AlertChannel:
    with audited(user, "alert_channel_update", target=name) as entry:
        ch = channel(name)
        checked = _checked_channel(fields, ch)
        entry.update(changed=sorted(str(k) for k in fields))
        return _saved_channel(ch, checked)


def delete_channel(user: Any, name: str) -> None:
    with audited(user, "alert_channel_delete", target=name) as entry:
        ch = channel(name)
        entry["rules"] = sorted(f"{r.cluster}/{r.name}" for r in ch.rules.all())
        ch.delete()


def test_channel(user: Any, name: str) -> dict[str, Any]:
    """Send a test message through the channel now (through the delivery worker, with its retries)."""
    from alerts_app.delivery import send_test

    with audited(user, "alert_channel_test", target=name) as entry:
        ch = channel(name)
        notification = send_test(ch.id)
        entry["notification"] = str(notification.id)
        return {"channel": ch.name, "notification": str(notification.id),
                "message": f"A test message is on its way to channel '{ch.name}': its delivery is listed below."}


def retry_delivery(user: Any, name: str, delivery_id: int) -> dict[str, Any]:
    """A dead letter of the channel sent again from its first attempt (once its receiver is mended)."""
    from alerts_app.delivery import requeue

    with audited(user, "alert_delivery_retry", target=name, details={"delivery": delivery_id}):
        ch = channel(name)
        if not Delivery.objects.filter(id=delivery_id, channel=ch).exists():
            raise Missing(f"Channel '{name}' has no delivery #{delivery_id}.")
        row = requeue(delivery_id)
        return {"id": row.id, "state": row.state, "attempts": row.attempts,
                "message": f"Delivery #{row.id} is queued again to channel '{name}'."}


def deliveries(ch: AlertChannel, state: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    rows = Delivery.objects.filter(channel=ch).select_related("notification")
    if state:
        rows = rows.filter(state=state)
    return [{"id": d.id, "state": d.state, "attempts": d.attempts, "last_error": d.last_error,
             "next_attempt_at": _iso(d.next_attempt_at), "sent_at": _iso(d.sent_at), "created_at": _iso(d.created_at),
             "notification": str(d.notification_id), "title": d.notification.title, "kind": d.notification.kind,
             "cluster": d.notification.cluster, "severity": d.notification.severity} for d in rows[:limit]]


# Rules ---------------------------------------------------------------------------------------------


def rule_dict(r: AlertRule) -> dict[str, Any]:
    return {"id": r.id, "cluster": r.cluster, "name": r.name, "condition": r.condition, "target": r.target,
            "threshold": r.threshold, "status": r.status or None, "for_seconds": r.for_seconds, "severity": r.severity,
            "channels": [c.name for c in r.channels.all()], "repeat_seconds": r.repeat_seconds, "enabled": r.enabled,
            "builtin": r.builtin, "created_by": r.created_by, "created_at": _iso(r.created_at), "updated_at": _iso(r.updated_at)}


def rules_of(cluster: str) -> QuerySet[AlertRule]:
    return AlertRule.objects.filter(cluster=cluster).prefetch_related("channels")


def rule(cluster: str, rule_id: int) -> AlertRule:
    found = rules_of(cluster).filter(pk=rule_id).first()
    if found is None:
        raise Missing(f"Cluster '{cluster}' has no alert rule #{rule_id}.")
    return found


def _current(r: AlertRule) -> dict[str, Any]:
    d = rule_dict(r)
    return {k: d[k] for k in rules.RULE_FIELDS} | {"status": r.status}


def checked_rule(fields: Mapping[str, Any], current: AlertRule | None = None) -> dict[str, Any]:
    return rules.rule(fields, {c.name for c in AlertChannel.objects.all()}, _current(current) if current else None)


def _saved_rule(r: AlertRule, checked: dict[str, Any]) -> AlertRule:
    names = checked.pop("channels")
    for k, v in checked.items():
        setattr(r, k, v)
    try:
        with transaction.atomic():
            r.save()
            r.channels.set(AlertChannel.objects.filter(name__in=names))
    except IntegrityError:
        raise Conflict(f"Cluster '{r.cluster}' has an alert rule named '{r.name}' already.") from None
    return r


def create_rule(user: Any, cluster: str, fields: Mapping[str, Any]) -> AlertRule:
    gateway.cluster_config(cluster)
    with audited(user, "alert_rule_create", cluster=cluster, target=str(fields.get("name", ""))[:200]) as entry:
        checked = checked_rule(fields)
        entry.update(checked)
        return _saved_rule(AlertRule(cluster=cluster, created_by=_who(user)), dict(checked))


def update_rule(user: Any, cluster: str, rule_id: int, fields: Mapping[str, Any]) -> AlertRule:
    gateway.cluster_config(cluster)
    with audited(user, "alert_rule_update", cluster=cluster, target=f"#{rule_id}") as entry:
        r = rule(cluster, rule_id)
        before = _current(r)
        checked = checked_rule(fields, r)
        entry.update(name=checked["name"], changed={k: [before[k], v] for k, v in checked.items() if before.get(k) != v})
        return _saved_rule(r, dict(checked))


def delete_rule(user: Any, cluster: str, rule_id: int) -> None:
    gateway.cluster_config(cluster)
    with audited(user, "alert_rule_delete", cluster=cluster, target=f"#{rule_id}") as entry:
        r = rule(cluster, rule_id)
        entry.update(name=r.name, condition=r.condition, target=r.target)
        r.delete()


def preview(cluster: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """What the rule would match on the cluster's latest snapshot, before its duration counts."""
    from alerts_app.evaluation import preview as evaluate

    gateway.cluster_config(cluster)
    checked = checked_rule({**fields, "name": fields.get("name") or "preview"})
    matches = evaluate(cluster, checked)
    return {"matches": matches, "count": len(matches), "rule": checked}


# Alerts --------------------------------------------------------------------------------------------


def alert_dict(a: Alert) -> dict[str, Any]:
    s = a.silenced_by
    silenced = None
    if s is not None:
        silenced = {"id": s.id, "by": s.created_by, "comment": s.comment, "ends_at": _iso(s.ends_at),
                    "active": s.ends_at > timezone.now() and not s.expired_early_by}
    acknowledged = {"by": a.acknowledged_by, "at": _iso(a.acknowledged_at)} if a.acknowledged_by else None
    return {"id": a.id, "cluster": a.cluster, "rule": {"id": a.rule_id, "name": a.rule.name, "condition": a.rule.condition},
            "key": a.key, "state": a.state, "severity": a.severity, "message": a.message, "value": a.value,
            "details": a.details, "since": _iso(a.since), "fired_at": _iso(a.fired_at), "resolved_at": _iso(a.resolved_at),
            "last_notified_at": _iso(a.last_notified_at), "silenced": silenced, "acknowledged": acknowledged}


def alerts_of(cluster: str, filters: Mapping[str, Any]) -> QuerySet[Alert]:
    rows = Alert.objects.filter(cluster=cluster).select_related("rule", "silenced_by")
    state = filters.get("state")
    if state == "active":
        rows = rows.filter(state__in=("pending", "firing"))
    elif state:
        rows = rows.filter(state=state)
    if filters.get("severity"):
        rows = rows.filter(severity=filters["severity"])
    if filters.get("rule"):
        named = filters["rule"]
        rows = rows.filter(Q(rule__name=named) | Q(rule_id=int(named)) if named.isdigit() else Q(rule__name=named))
    if filters.get("key"):
        rows = rows.filter(key__icontains=filters["key"])
    if filters.get("since"):
        rows = rows.filter(since__gte=filters["since"])
    if filters.get("until"):
        rows = rows.filter(since__lte=filters["until"])
    return rows


def listing(cluster: str, params: Mapping[str, str], offset: int, limit: int) -> dict[str, Any]:
    gateway.cluster_config(cluster)
    filters = rules.alert_filters(params)
    rows = alerts_of(cluster, filters)
    total = rows.count()
    return {"alerts": [alert_dict(a) for a in rows[offset: offset + limit]], "total": total, "offset": offset, "limit": limit,
            "filters": {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in filters.items()}}


def active(cluster: str) -> list[Alert]:
    """Firing first (most severe, then newest), then pending."""
    order = {"critical": 0, "warning": 1, "info": 2}
    rows = list(alerts_of(cluster, {"state": "active"})[:500])
    return sorted(rows, key=lambda a: (a.state != "firing", order.get(a.severity, 3), -a.since.timestamp()))


def acknowledge(user: Any, cluster: str, alert_id: int) -> Alert:
    gateway.cluster_config(cluster)
    with audited(user, "alert_acknowledge", cluster=cluster, target=f"#{alert_id}") as entry:
        a = Alert.objects.filter(cluster=cluster, pk=alert_id).select_related("rule", "silenced_by").first()
        if a is None:
            raise Missing(f"Cluster '{cluster}' has no alert #{alert_id}.")
        entry.update(rule=a.rule.name, key=a.key)
        if a.state == "resolved":
            raise Conflict(f"Alert #{alert_id} is resolved already; only an active alert is acknowledged.")
        if a.acknowledged_by:
            raise Conflict(f"Alert #{alert_id} was acknowledged by {a.acknowledged_by} already.")
        a.acknowledged_by, a.acknowledged_at = _who(user), timezone.now()
        a.save(update_fields=["acknowledged_by", "acknowledged_at"])
        return a


# Silences ------------------------------------------------------------------------------------------


def silence_dict(s: Silence, now: datetime | None = None) -> dict[str, Any]:
    now = now or timezone.now()
    state = "expired" if s.ends_at <= now or s.expired_early_by else ("pending" if s.starts_at > now else "active")
    return {"id": s.id, "cluster": s.cluster, "matchers": s.matchers, "starts_at": _iso(s.starts_at), "ends_at": _iso(s.ends_at),
            "comment": s.comment, "created_by": s.created_by, "created_at": _iso(s.created_at),
            "expired_early_by": s.expired_early_by or None, "state": state}


def silences(clusters: list[str] | None, include_expired: bool = False) -> QuerySet[Silence]:
    """The silences of these clusters (and those of every cluster); None: all of them."""
    rows = Silence.objects.all()
    if clusters is not None:
        rows = rows.filter(cluster__in=[*clusters, "*"])
    if not include_expired:
        rows = rows.filter(ends_at__gt=timezone.now(), expired_early_by="")
    return rows


SILENCE_FIELDS = ("cluster", "matchers", "ends_at", "duration_seconds", "comment")


def create_silence(user: Any, fields: Mapping[str, Any]) -> Silence:
    cluster = fields.get("cluster") if isinstance(fields.get("cluster"), str) else ""
    with audited(user, "silence_create", cluster=cluster or "*", target=str(fields.get("comment", ""))[:200]) as entry:
        unknown = sorted(str(k) for k in fields if k not in SILENCE_FIELDS)
        if unknown:
            raise BadParameter(f"'{unknown[0][:60]}' is not a field of a silence; the fields are {', '.join(SILENCE_FIELDS)}.")
        now = timezone.now()
        where = rules.cluster_of_silence(fields.get("cluster"), [c.name for c in gateway.cluster_configs()])
        matchers = rules.matchers(fields.get("matchers"))
        ends_at = rules.silence_end(fields.get("ends_at"), fields.get("duration_seconds"), now)
        why = rules.comment(fields.get("comment"))
        entry.update(cluster=where, matchers=matchers, ends_at=ends_at.isoformat())
        return Silence.objects.create(cluster=where, matchers=matchers, starts_at=now, ends_at=ends_at, comment=why,
                                      created_by=_who(user))


def silence(silence_id: int) -> Silence:
    found = Silence.objects.filter(pk=silence_id).first()
    if found is None:
        raise Missing(f"There is no silence #{silence_id}.")
    return found


def expire_silence(user: Any, silence_id: int, may_on: Any = None) -> Silence:
    """End a silence now (it stays in the list as expired, with who ended it). `may_on(cluster)`:
    whether the user may manage the silence's cluster (a Forbidden otherwise)."""
    with audited(user, "silence_expire", target=f"#{silence_id}") as entry:
        s = silence(silence_id)
        entry.update(cluster=s.cluster, comment=s.comment)
        if may_on is not None:
            may_on(s.cluster)
        now = timezone.now()
        if s.ends_at <= now or s.expired_early_by:
            raise Conflict(f"Silence #{silence_id} has ended already.")
        s.ends_at, s.expired_early_by = now, _who(user)
        s.save(update_fields=["ends_at", "expired_early_by"])
        return s
