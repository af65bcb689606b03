"""The SCRAM users page: the list, a form to create a user or change a password, deletes (admin).

A POST is a dry run unless it carries apply=1; an applied change goes back to the list with its
sentence. A refused form is shown again with its sentence and without the list, so nothing is
asked of Kafka for a form the console refuses. The password is never put back into the form.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from console import error_responses, gateway, snapshots
from console.auth import allow, may
from console.errors import BadParameter, ConsoleError
from console.gateway.errors import GatewayError
from console.params import int_param
from security_app import users


def _page(request: HttpRequest, cluster: str, extra: dict[str, Any], status: int = 200) -> HttpResponse:
    context = {"view": "security_users", "cluster": cluster, "mechanisms": users.MECHANISMS,
               "min_password": users.MIN_PASSWORD_LENGTH, "min_iterations": users.MIN_ITERATIONS,
               "max_iterations": users.MAX_ITERATIONS, "default_iterations": users.DEFAULT_ITERATIONS,
               "live": snapshots.live(cluster), "can_manage": may(request.user, "users.manage", cluster), "form": {}, **extra}
    return render(request, "security_app/users.html", context, status=status)


def _listed(cluster: str) -> dict[str, Any]:
    try:
        return {"users": users.list_users(cluster)}
    except GatewayError as exc:
        return {"list_error": error_responses.message(exc)}


def _change(request: HttpRequest, cluster: str, apply: bool) -> users.Outcome:
    p = request.POST
    op = p.get("op", "")
    if op == "set":
        iterations = int_param(p, "iterations", users.DEFAULT_ITERATIONS, minimum=None) or users.DEFAULT_ITERATIONS
        return users.set_password(request.user, cluster, p.get("name", ""), p.get("mechanism", ""), p.get("password", ""),
                                  iterations, dry_run=not apply)
    if op == "delete":
        return users.delete_user(request.user, cluster, p.get("name", ""), p.get("mechanism") or None, dry_run=not apply)
    raise BadParameter("Choose what to do: op=set (create a user or change a password) or op=delete.")


@allow(GET="users.view", POST="users.manage")
def users_page(request: HttpRequest, cluster: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    if request.method != "POST":
        return _page(request, cluster, _listed(cluster))
    apply = request.POST.get("apply") == "1"
    form = {k: request.POST.get(k, "") for k in ("op", "name", "mechanism", "iterations")}  # never the password
    try:
        outcome = _change(request, cluster, apply)
    except ConsoleError as exc:
        error, status = error_responses.form_error(exc)
        return _page(request, cluster, {"form": form, "error": error}, status)
    if apply:
        messages.success(request, outcome.message)
        return redirect(reverse("security_users", args=[cluster]))
    return _page(request, cluster, {"form": form, "outcome": outcome, **_listed(cluster)})
