"""The Prometheus Alertmanager webhook payload (version 4), so a receiver written for Alertmanager
(PagerDuty bridges, Opsgenie, a team's own) takes the console's notifications as they are."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from alerts_app.channels_mail import subject

ZERO_TIME = "0001-01-01T00:00:00Z"  # Alertmanager's "not ended yet"


def _time(value: Any) -> str:
    """RFC 3339 in UTC with a Z, as Alertmanager writes it."""
    text = str(value or "")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _label(value: Any) -> str:
    return "" if value is None else str(value)


def fingerprint(labels: Mapping[str, str]) -> str:
    """A stable id per label set (Alertmanager's is a hash of the labels, 16 hex digits)."""
    text = "\xff".join(f"{k}\xff{labels[k]}" for k in sorted(labels))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def alert_labels(payload: Mapping[str, Any], alert: Mapping[str, Any]) -> dict[str, str]:
    rule = payload.get("rule") or {}
    labels = {"alertname": _label(rule.get("name") or payload.get("title") or "console alert"),
              "cluster": _label(payload.get("cluster")), "severity": _label(alert.get("severity") or payload.get("severity")),
              "key": _label(alert.get("key")), "condition": _label(rule.get("condition")),
              "target": _label(rule.get("target")), "source": "kafka-console"}
    if payload.get("kind") == "test":
        labels["test"] = "true"
    return {k: v for k, v in labels.items() if v}


def alertmanager_body(payload: Mapping[str, Any], receiver: str, external_url: str) -> dict[str, Any]:
    cluster = _label(payload.get("cluster"))
    page = f"{external_url}/clusters/{cluster}/alerts/" if external_url and cluster else ""
    alerts: list[dict[str, Any]] = []
    for alert in payload.get("alerts") or []:
        labels = alert_labels(payload, alert)
        resolved = alert.get("state") == "resolved"
        annotations = {"summary": _label(alert.get("message") or subject(payload)), "title": subject(payload)}
        if alert.get("value") is not None:
            annotations["value"] = _label(alert.get("value"))
        alerts.append({
            "status": "resolved" if resolved else "firing", "labels": labels, "annotations": annotations,
            "startsAt": _time(alert.get("fired_at") or alert.get("since") or payload.get("created_at")),
            "endsAt": _time(alert.get("resolved_at")) if resolved and alert.get("resolved_at") else ZERO_TIME,
            "generatorURL": page, "fingerprint": fingerprint(labels)})
    group_labels = {"alertname": alert_labels(payload, {})["alertname"], "cluster": cluster} if cluster else \
        {"alertname": alert_labels(payload, {})["alertname"]}
    common = dict(alerts[0]["labels"]) if alerts else dict(group_labels)
    for a in alerts[1:]:
        common = {k: v for k, v in common.items() if a["labels"].get(k) == v}
    common_annotations = dict(alerts[0]["annotations"]) if alerts else {}
    for a in alerts[1:]:
        common_annotations = {k: v for k, v in common_annotations.items() if a["annotations"].get(k) == v}
    firing = any(a["status"] == "firing" for a in alerts) or not alerts
    group_key = "{}:{" + ", ".join(f'{k}="{v}"' for k, v in sorted(group_labels.items())) + "}"
    return {"version": "4", "groupKey": group_key, "truncatedAlerts": 0, "status": "firing" if firing else "resolved",
            "receiver": receiver, "groupLabels": group_labels, "commonLabels": common, "commonAnnotations": common_annotations,
            "externalURL": external_url, "alerts": alerts}
