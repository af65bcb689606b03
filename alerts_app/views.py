"""Pages of a cluster's alerts: the active ones (redrawn live with each snapshot), the history with
its filters, and the rules with a create/edit form whose Preview shows what would fire right now.

A refused form is shown again with its sentence (the API's, from alerts_app/rules.py) beside what
was typed, with the status the API would answer; never a server error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from alerts_app import services
from alerts_app.models import CONDITIONS, SEVERITIES, AlertRule
from alerts_app.rules import ALERT_STATES, DESCRIPTIONS, GROUP_STATUSES, TARGETS, THRESHOLDS, alert_filters
from console import error_responses, gateway, snapshots
from console.auth import allow, may, visible
from console.errors import BadParameter, ConsoleError
from console.params import int_param
from console.snapshots import Live

PAGE = 50


def duration(seconds: int | None) -> str:
    """120 -> "2 min", 5400 -> "1 h 30 min", 0 -> "at once"."""
    if not seconds:
        return "at once"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size} {unit}")
            seconds %= size
    return " ".join(parts[:2])


def ago(when: Any) -> str:
    """How long ago, as the page says it: "just now", "42 s ago", "3 min ago", "2 h 5 min ago"."""
    seconds = int((timezone.now() - when).total_seconds())
    return "just now" if seconds < 1 else f"{duration(seconds)} ago"


def rule_summary(r: AlertRule) -> str:
    """What the rule watches, in one line: "group_lag above 1000 records"."""
    if r.condition == "group_status":
        return f"group status {r.status} or worse"
    unit = THRESHOLDS.get(r.condition)
    if unit is not None and r.threshold is not None:
        return f"{r.condition} above {r.threshold:g} {unit}"
    return r.condition


def _base(cluster: str, view: str, **extra: Any) -> dict[str, Any]:
    return {"view": view, "cluster": cluster, "live": snapshots.live(cluster), **extra}


# Active alerts (live) ------------------------------------------------------------------------------


def active_context(cluster: str, can_manage: bool) -> dict[str, Any]:
    rows = services.active(cluster)
    for a in rows:
        a.ago = ago(a.since)  # type: ignore[attr-defined]
    firing = [a for a in rows if a.state == "firing"]
    return {"alerts": rows, "can_manage": can_manage, "cluster": cluster,
            "counts": {"critical": sum(1 for a in firing if a.severity == "critical"),
                       "warning": sum(1 for a in firing if a.severity == "warning"),
                       "info": sum(1 for a in firing if a.severity == "info"),
                       "pending": sum(1 for a in rows if a.state == "pending"),
                       "silenced": sum(1 for a in rows if a.silenced_by_id is not None)}}


def alerts_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    # The socket's user is the one `visible` cuts for: a cut of "alerts.manage" means they may not acknowledge.
    can_manage = visible("alerts.manage", live.cluster, "topics") is None
    return {"live-alerts": render_to_string("alerts_app/_active.html", active_context(live.cluster, can_manage))}


@allow(GET="alerts.view", POST="alerts.manage")
def active_page(request: HttpRequest, cluster: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    status, error = 200, None
    if request.method == "POST":
        try:
            alert_id = int_param(request.POST, "alert", minimum=1)
            if alert_id is None:
                raise BadParameter("Choose the alert to acknowledge.")
            a = services.acknowledge(request.user, cluster, alert_id)
            messages.success(request, f"Acknowledged alert #{a.id} ({a.rule.name}, {a.key}).")
            return redirect(reverse("alerts", args=[cluster]))
        except ConsoleError as exc:
            error, status = error_responses.form_error(exc)
    can_manage = may(request.user, "alerts.manage", cluster)
    return render(request, "alerts_app/active.html",
                  {**_base(cluster, "alerts"), **active_context(cluster, can_manage), "error": error}, status=status)


# History -------------------------------------------------------------------------------------------

HISTORY_FILTERS = ("state", "rule", "severity", "key", "since", "until")


@allow(GET="alerts.view")
def history_page(request: HttpRequest, cluster: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    params = {k: request.GET.get(k, "").strip() for k in HISTORY_FILTERS}
    context = _base(cluster, "alerts_history", params=params, states=ALERT_STATES, severities=SEVERITIES,
                    rule_names=sorted({r.name for r in services.rules_of(cluster)}))
    status = 200
    try:
        offset = int_param(request.GET, "offset", 0, minimum=0) or 0
        rows = services.alerts_of(cluster, alert_filters({k: v for k, v in params.items() if v}))
        total = rows.count()
        shown = list(rows[offset: offset + PAGE])
        for a in shown:
            end = a.resolved_at or (timezone.now() if a.state != "resolved" else None)
            a.lasted = duration(int((end - a.since).total_seconds())) if end else ""  # type: ignore[attr-defined]
        context.update(alerts=shown, total=total, offset=offset, shown_to=offset + len(shown),
                       query=urlencode({k: v for k, v in params.items() if v}),
                       previous=max(offset - PAGE, 0) if offset else None,
                       next=offset + PAGE if offset + PAGE < total else None)
    except ConsoleError as exc:
        context["error"], status = error_responses.form_error(exc)
    return render(request, "alerts_app/history.html", context, status=status)


# Rules ---------------------------------------------------------------------------------------------


def rule_form(p: Mapping[str, Any], getlist: Any) -> dict[str, Any]:
    """A rule's fields as the form posts them (checked by rules.rule as the API's are)."""
    return {"name": p.get("name", ""), "condition": p.get("condition", ""), "target": p.get("target", "").strip() or "*",
            "threshold": p.get("threshold", "").strip() or None, "status": p.get("status", ""),
            "for_seconds": p.get("for_seconds", "").strip() or "0", "severity": p.get("severity", "warning"),
            "channels": getlist("channels"), "repeat_seconds": p.get("repeat_seconds", "").strip() or "0",
            "enabled": p.get("enabled") == "1"}


def _form_values(r: AlertRule | None) -> dict[str, Any]:
    if r is None:
        return {"name": "", "condition": "broker_down", "target": "*", "threshold": "", "status": "ERR", "for_seconds": 60,
                "severity": "critical", "channels": [], "repeat_seconds": 3600, "enabled": True}
    d = services.rule_dict(r)
    return {**d, "threshold": "" if r.threshold is None else f"{r.threshold:g}", "status": r.status or "ERR"}


def _rule_choices() -> dict[str, Any]:
    return {"conditions": [(c, DESCRIPTIONS[c], TARGETS[c], THRESHOLDS.get(c, "")) for c in CONDITIONS],
            "severities": SEVERITIES, "statuses": GROUP_STATUSES, "channel_names": [c.name for c in services.channels()]}


def _rule_post(request: HttpRequest, cluster: str, current: AlertRule | None) -> tuple[dict[str, Any] | HttpResponse, int]:
    """The posted op: preview, save (create or change) or delete; (context to show, status) or a redirect."""
    op = request.POST.get("op", "")
    fields = rule_form(request.POST, request.POST.getlist)
    try:
        if op == "preview":
            return {"preview": services.preview(cluster, {k: v for k, v in fields.items() if k != "enabled"}), "form": fields}, 200
        if op == "save" and current is None:
            r = services.create_rule(request.user, cluster, fields)
            messages.success(request, f"Created rule '{r.name}'.")
            return redirect(reverse("alert_rules", args=[cluster])), 302
        if op == "save" and current is not None:
            r = services.update_rule(request.user, cluster, current.id, fields)
            messages.success(request, f"Saved rule '{r.name}'.")
            return redirect(reverse("alert_rules", args=[cluster])), 302
        if op == "delete" and current is not None:
            services.delete_rule(request.user, cluster, current.id)
            messages.success(request, f"Deleted rule '{current.name}'.")
            return redirect(reverse("alert_rules", args=[cluster])), 302
        raise BadParameter("Choose what to do: op=preview, op=save or op=delete.")
    except ConsoleError as exc:
        error, status = error_responses.form_error(exc)
        return {"error": error, "form": fields}, status


def _rules_page(request: HttpRequest, cluster: str, current: AlertRule | None, template: str) -> HttpResponse:
    can_manage = may(request.user, "alerts.manage", cluster)
    context = _base(cluster, "alert_rules", rule=current, can_manage=can_manage, form=_form_values(current), **_rule_choices())
    status = 200
    if request.method == "POST":
        outcome, status = _rule_post(request, cluster, current)
        if isinstance(outcome, HttpResponse):
            return outcome
        context.update(outcome)
    if current is None:
        context["rules"] = [{"rule": r, "summary": rule_summary(r), "for": duration(r.for_seconds),
                             "channels": [c.name for c in r.channels.all()],
                             "firing": getattr(r, "firing", 0)} for r in _with_firing(services.rules_of(cluster))]
    else:
        context["recent"] = list(services.alerts_of(cluster, {"rule": str(current.id)})[:20])
    return render(request, template, context, status=status)


def _with_firing(rows: Any) -> list[AlertRule]:
    from django.db.models import Count, Q

    return list(rows.annotate(firing=Count("alerts", filter=Q(alerts__state="firing"))))


@allow(GET="alerts.view", POST="alerts.manage")
def rules_page(request: HttpRequest, cluster: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    return _rules_page(request, cluster, None, "alerts_app/rules.html")


@allow(GET="alerts.view", POST="alerts.manage")
def rule_page(request: HttpRequest, cluster: str, rule_id: int) -> HttpResponse:
    gateway.cluster_config(cluster)
    return _rules_page(request, cluster, services.rule(cluster, rule_id), "alerts_app/rule.html")
