"""The connector page's forms for its offsets (preview, then alter or reset: a reset needs the
connector's name typed) and its auto-restart policy. A preview or a refusal is shown on the detail
page itself (views.render_detail); a change done redirects to it with its sentence."""

from __future__ import annotations

from typing import Any

import orjson
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from connect_app import offsets_card, services, services_offsets, services_restarts
from connect_app.views import render_detail
from console import error_responses
from console.auth import allow
from console.errors import BadParameter, ConsoleError

OPS = ("preview_alter", "alter", "preview_reset", "reset")


def _offsets(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise BadParameter(f"The offsets are not JSON: {str(exc).split(':')[0]}.") from None


def _back(cluster: str, connect: str, connector: str, anchor: str) -> HttpResponse:
    return redirect(reverse("connector", args=[cluster, connect, connector]) + anchor)


@allow(POST="connect.offsets")
def connector_offsets(request: HttpRequest, cluster: str, connect: str, connector: str) -> HttpResponse:
    services.connect_config(cluster, connect)
    op, text = request.POST.get("op", ""), request.POST.get("offsets", "")
    extra: dict[str, Any] = {"offsets_op": op, "offsets_posted": text}
    try:
        if op not in OPS:
            raise BadParameter(f"Choose what to do with the offsets: {', '.join(OPS)}.")
        if op == "preview_alter":
            plan = services_offsets.preview_alter(cluster, connect, connector, _offsets(text))
        elif op == "preview_reset":
            plan = services_offsets.preview_reset(cluster, connect, connector)
        elif op == "alter":
            outcome, _ = services_offsets.alter(request.user, cluster, connect, connector, _offsets(text))
            messages.success(request, outcome.message)
            return _back(cluster, connect, connector, "#offsets")
        else:
            outcome, _ = services_offsets.reset(request.user, cluster, connect, connector, request.POST.get("confirm", ""))
            messages.success(request, outcome.message)
            return _back(cluster, connect, connector, "#offsets")
        extra.update({"offsets_preview": plan, "preview_rows": offsets_card.preview_rows(plan)})
        return render_detail(request, cluster, connect, connector, extra)
    except services.NotFound:
        raise
    except ConsoleError as exc:
        extra["offsets_form_error"], status = error_responses.form_error(exc)
        return render_detail(request, cluster, connect, connector, extra, status)


@allow(POST="connect.manage")
def connector_restart_policy(request: HttpRequest, cluster: str, connect: str, connector: str) -> HttpResponse:
    services.connect_config(cluster, connect)
    p = request.POST
    values = {k: p.get(k, "") for k in ("max_restarts", "window_seconds", "backoff_seconds", "max_backoff_seconds")}
    try:
        outcome, _ = services_restarts.save(request.user, cluster, connect, connector, {"enabled": p.get("enabled") == "true", **values})
        messages.success(request, outcome.message)
        return _back(cluster, connect, connector, "#restart-policy")
    except services.NotFound:
        raise
    except ConsoleError as exc:
        error, status = error_responses.form_error(exc)
        return render_detail(request, cluster, connect, connector, {"policy_form_error": error, "policy_posted": values}, status)
