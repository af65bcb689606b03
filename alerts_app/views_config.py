"""Pages of what shapes the alerts of every cluster: silences (matchers, an end and why; expired early
by hand) and channels (admins create them, send a test, and see each one's deliveries and dead
letters). Both are global; they are shown under a cluster's pages to keep its header and tabs."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from alerts_app import services
from alerts_app.models import CHANNEL_KINDS, AlertChannel
from alerts_app.rules import MATCHER_FIELDS
from console import error_responses, gateway, snapshots
from console.auth import allow, may, require
from console.errors import BadParameter, ConsoleError
from console.params import int_param

MATCHER_ROWS = 3
DURATIONS = (("3600", "1 hour"), ("14400", "4 hours"), ("28800", "8 hours"), ("86400", "1 day"), ("604800", "1 week"))


def _base(cluster: str, view: str, **extra: Any) -> dict[str, Any]:
    return {"view": view, "cluster": cluster, "live": snapshots.live(cluster), **extra}


# Silences ------------------------------------------------------------------------------------------


def silence_form(p: Mapping[str, str]) -> dict[str, Any]:
    """A silence's fields as the form posts them: up to three matcher rows, an end, why."""
    matchers = []
    for i in range(MATCHER_ROWS):
        value = p.get(f"value{i}", "").strip()
        if value:
            matchers.append({"field": p.get(f"field{i}", ""), "value": value, "regex": p.get(f"regex{i}") == "1"})
    ends_at = p.get("ends_at", "").strip()
    fields: dict[str, Any] = {"cluster": p.get("cluster", ""), "matchers": matchers, "comment": p.get("comment", "")}
    if ends_at:
        fields["ends_at"] = _local_time(ends_at)
    else:
        fields["duration_seconds"] = p.get("duration_seconds", "").strip() or None
    return fields


def _local_time(raw: str) -> str:
    """A datetime-local field (no zone) is read in the server's zone, as the page shows times."""
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise BadParameter(f"'ends_at' must be a date and time, not '{raw[:40]}'.") from None
    if when.tzinfo is None:
        when = timezone.make_aware(when)
    return when.isoformat()


@allow(GET="alerts.view", POST="alerts.manage")
def silences_page(request: HttpRequest, cluster: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    context = _base(cluster, "alert_silences", fields=MATCHER_FIELDS, durations=DURATIONS, rows=range(MATCHER_ROWS),
                    can_manage=may(request.user, "alerts.manage", cluster), form={})
    status = 200
    if request.method == "POST":
        p = request.POST
        try:
            if p.get("op") == "expire":
                silence_id = int_param(p, "silence", minimum=1)
                if silence_id is None:
                    raise BadParameter("Choose the silence to expire.")
                services.expire_silence(request.user, silence_id, lambda c: require(request.user, "alerts.manage", c))
                messages.success(request, f"Silence #{silence_id} has ended.")
                return redirect(reverse("alert_silences", args=[cluster]))
            if p.get("op") != "create":
                raise BadParameter("Choose what to do: op=create or op=expire.")
            fields = silence_form(p)
            require(request.user, "alerts.manage", fields["cluster"] or "*")
            s = services.create_silence(request.user, fields)
            messages.success(request, f"Silenced until {timezone.localtime(s.ends_at):%Y-%m-%d %H:%M}.")
            return redirect(reverse("alert_silences", args=[cluster]))
        except ConsoleError as exc:
            context["error"], status = error_responses.form_error(exc)
            context["form"] = p
    now = timezone.now()
    shown = services.silences([cluster], include_expired=True)
    context["silences"] = [services.silence_dict(s, now) | {"row": s} for s in shown[:200]]
    return render(request, "alerts_app/silences.html", context, status=status)


# Channels ------------------------------------------------------------------------------------------


def channel_form(p: Mapping[str, str], editing: bool) -> dict[str, Any]:
    """A channel's fields as the form posts them; a blank secret on an edit keeps the saved one."""
    fields: dict[str, Any] = {"name": p.get("name", "").strip(), "kind": p.get("kind", ""), "enabled": p.get("enabled") == "1"}
    if fields["kind"] == "email":
        fields["to"] = [a.strip() for a in p.get("to", "").replace("\n", ",").split(",") if a.strip()]
    else:
        fields["url"] = p.get("url", "").strip()
    if p.get("secret") or not editing:
        fields["secret"] = p.get("secret", "")
    attempts = p.get("max_attempts", "").strip()
    if attempts:
        fields["max_attempts"] = int(attempts) if attempts.isdigit() else attempts
    return fields


def _channel_post(request: HttpRequest, cluster: str, current: AlertChannel | None) -> HttpResponse | None:
    p = request.POST
    op = p.get("op", "")
    if op == "test" and current is not None:
        outcome = services.test_channel(request.user, current.name)
        messages.success(request, outcome["message"])
        return redirect(reverse("alert_channel", args=[cluster, current.name]))
    if op == "retry" and current is not None:
        delivery_id = int_param(p, "delivery", minimum=1)
        if delivery_id is None:
            raise BadParameter("Choose the dead letter to send again.")
        messages.success(request, services.retry_delivery(request.user, current.name, delivery_id)["message"])
        return redirect(reverse("alert_channel", args=[cluster, current.name]))
    if op == "delete" and current is not None:
        services.delete_channel(request.user, current.name)
        messages.success(request, f"Deleted channel '{current.name}'.")
        return redirect(reverse("alert_channels", args=[cluster]))
    if op == "save":
        fields = channel_form(p, current is not None)
        ch = (services.update_channel(request.user, current.name, fields) if current is not None
              else services.create_channel(request.user, fields))
        messages.success(request, f"Saved channel '{ch.name}'.")
        return redirect(reverse("alert_channel", args=[cluster, ch.name]))
    raise BadParameter("Choose what to do: op=save, op=test, op=retry or op=delete.")


@allow(GET="alerts.view", POST="alert_channels.manage")
def channels_page(request: HttpRequest, cluster: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    can_manage = may(request.user, "alert_channels.manage", cluster)
    context = _base(cluster, "alert_channels", kinds=CHANNEL_KINDS, can_manage=can_manage, form={"kind": "webhook", "enabled": "1"})
    status = 200
    if request.method == "POST":
        try:
            done = _channel_post(request, cluster, None)
            if done is not None:
                return done
        except ConsoleError as exc:
            context["error"], status = error_responses.form_error(exc)
            context["form"] = request.POST
    context["channels"] = [services.channel_dict(c, can_manage) for c in services.channels()]
    return render(request, "alerts_app/channels.html", context, status=status)


@allow(GET="alerts.view", POST="alert_channels.manage")
def channel_page(request: HttpRequest, cluster: str, channel: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    current = services.channel(channel)
    can_manage = may(request.user, "alert_channels.manage", cluster)
    shown = services.channel_dict(current, can_manage)
    context = _base(cluster, "alert_channels", kinds=CHANNEL_KINDS, can_manage=can_manage, channel=shown,
                    form={**shown, "to": ", ".join(shown["to"]), "enabled": "1" if shown["enabled"] else ""})
    status = 200
    if request.method == "POST":
        try:
            done = _channel_post(request, cluster, current)
            if done is not None:
                return done
        except ConsoleError as exc:
            context["error"], status = error_responses.form_error(exc)
            context["form"] = request.POST
    context["deliveries"] = services.deliveries(current, limit=30)
    context["dead_letters"] = services.deliveries(current, "dead", limit=30)
    context["rules"] = sorted(current.rules.all(), key=lambda r: (r.cluster, r.name))
    return render(request, "alerts_app/channel.html", context, status=status)
