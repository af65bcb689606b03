"""The quotas page: every entity's quotas, a form to set or remove them, and the quota a given
(user, client-id) gets by Kafka's precedence (admins change, viewers read).

As on the users page, a POST is a dry run (Kafka's own verdict) unless it carries apply=1, and a
refused form is shown again with its sentence and without the list.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse

from console import error_responses, gateway, snapshots
from console.auth import allow, may
from console.errors import BadParameter, ConsoleError
from console.gateway import throttling
from console.gateway.errors import GatewayError
from security_app import quota_rules, quotas
from security_app.users import Outcome

ENTITY_FIELDS = (("user", "user"), ("client_id", "client-id"), ("ip", "ip"))


def entity_from(p: QueryDict) -> dict[str, str | None]:
    """The form's entity: each type named, or its default box ticked (default wins over a name)."""
    entity: dict[str, str | None] = {}
    for field, kind in ENTITY_FIELDS:
        if p.get(f"{field}_default") == "1":
            entity[kind] = None
        elif p.get(field, "").strip():
            entity[kind] = p.get(field, "").strip()
    return entity


def values_from(p: QueryDict) -> tuple[dict[str, float], list[str]]:
    set_values: dict[str, float] = {}
    for key in quota_rules.KEYS:
        raw = p.get(key, "").strip()
        if raw:
            try:
                set_values[key] = float(raw)
            except ValueError:
                raise BadParameter(f"Quota '{key}' must be a number, not '{raw[:50]}'.") from None
    return set_values, [k for k in p.getlist("remove") if k]


def _change(request: HttpRequest, cluster: str, apply: bool) -> Outcome:
    p = request.POST
    entity = entity_from(p)
    if p.get("op") == "remove":
        return quotas.alter(request.user, cluster, entity, {}, None, dry_run=not apply)
    if p.get("op") == "set":
        set_values, remove = values_from(p)
        return quotas.alter(request.user, cluster, entity, set_values, remove, dry_run=not apply)
    raise BadParameter("Choose what to do: op=set (set or remove quotas of an entity) or op=remove (all of its quotas).")


def _effective(cluster: str, p: QueryDict) -> dict[str, Any]:
    user, client_id = p.get("user", "").strip() or None, p.get("client_id", "").strip() or None
    if user is None and client_id is None:
        return {}
    answer = quotas.effective(cluster, user, client_id, p.get("ip", "").strip() or None)
    for a in answer["quotas"]:
        a["text"] = None if a["value"] is None else quota_rules.shown(a["key"], a["value"])
    return {"effective": answer}


def _rows(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The list with one cell per quota key, each as a person reads it and exactly."""
    return [{**q, "cells": [{"text": quota_rules.shown(k, q["values"][k]), "exact": q["values"][k]} if k in q["values"] else {}
                            for k in quota_rules.KEYS]} for q in listed]


def _listed(cluster: str, p: QueryDict) -> dict[str, Any]:
    try:
        return {"quotas": _rows(quotas.list_quotas(cluster)), **_effective(cluster, p)}
    except GatewayError as exc:
        return {"list_error": error_responses.message(exc)}


def throttled(cluster: str) -> list[dict[str, Any]]:
    """How often Kafka held this web process's clients back by a quota, per client and broker (ten minutes)."""
    return throttling.log_for(cluster).summary()


def _page(request: HttpRequest, cluster: str, extra: dict[str, Any], status: int = 200) -> HttpResponse:
    context = {"view": "security_quotas", "cluster": cluster, "keys": quota_rules.KEYS, "labels": quota_rules.LABELS, "client_keys": quota_rules.CLIENT_KEYS,
               "live": snapshots.live(cluster), "can_manage": may(request.user, "quotas.manage", cluster), "form": {}, "query": request.GET,
               "console_throttled": throttled(cluster), **extra}
    return render(request, "security_app/quotas.html", context, status=status)


@allow(GET="quotas.view", POST="quotas.manage")
def quotas_page(request: HttpRequest, cluster: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    if request.method != "POST":
        return _page(request, cluster, _listed(cluster, request.GET))
    apply = request.POST.get("apply") == "1"
    form: dict[str, Any] = {**request.POST.dict(), "remove": request.POST.getlist("remove")}
    try:
        outcome = _change(request, cluster, apply)
    except ConsoleError as exc:
        error, status = error_responses.form_error(exc)
        return _page(request, cluster, {"form": form, "error": error}, status)
    if apply:
        messages.success(request, outcome.message)
        return redirect(reverse("security_quotas", args=[cluster]))
    return _page(request, cluster, {"form": form, "outcome": outcome, **_listed(cluster, request.GET)})
