"""Pages of ACLs: the list with its filters, create (one ACL or a preset, dry run first) and delete,
the effective-permission check, and one principal's grants."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from console import error_responses, snapshots
from console.auth import allow, may
from console.errors import BadParameter, ConsoleError
from console.params import int_param
from security_app import acls
from security_app.acl_rules import ALL_OPERATIONS, PATTERN_TYPES, PERMISSIONS, PRESETS, RESOURCE_TYPES, make_acl

PAGE = 100
FILTERS = ("principal", "host", "operation", "permission", "resource_type", "resource_name", "pattern_type")


def _choices() -> dict[str, Any]:
    return {"resource_types": RESOURCE_TYPES, "operations": ALL_OPERATIONS, "permissions": PERMISSIONS,
            "pattern_types": PATTERN_TYPES, "presets": PRESETS}


def _change(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """A create or delete posted from the list: without `apply`, a dry run shown first."""
    p = request.POST
    apply = p.get("apply") == "1"
    if p.get("delete_acl"):
        try:
            fields = json.loads(p["delete_acl"])
            acl = make_acl(principal_name=fields["principal"], host=fields["host"], operation=fields["operation"],
                           permission=fields["permission"], resource_type=fields["resource_type"],
                           resource_name=fields["resource_name"], pattern_type=fields["pattern_type"])
        except (ValueError, KeyError, TypeError, AttributeError):
            raise BadParameter("'delete_acl' must name an ACL by all its fields.") from None
        return {"deleting": acl, **acls.delete(request.user, cluster, acl, dry_run=not apply)}
    wanted = acls.wanted_acls({k: p.get(k, "") for k in (*FILTERS, "preset", "group", "transactional_id")})
    return {"creating": wanted, **acls.create(request.user, cluster, wanted, dry_run=not apply)}


@allow(GET="acls.view", POST="acls.manage")
def acls_page(request: HttpRequest, cluster: str) -> HttpResponse:
    context: dict[str, Any] = {"form": request.POST, "view": "acls", **_choices()}
    status = 200
    if request.method == "POST":
        try:
            outcome = _change(request, cluster)
            if not outcome["dry_run"]:
                done = outcome.get("created", outcome.get("deleted", []))
                verb = "Created" if "created" in outcome else "Deleted"
                messages.success(request, f"{verb} {len(done)} ACL{'s' if len(done) != 1 else ''}.")
                return redirect(request.get_full_path())
            context["outcome"] = outcome
        except ConsoleError as exc:
            context["error"], status = error_responses.form_error(exc)
    params = {k: request.GET.get(k, "") for k in FILTERS}
    offset = int_param(request.GET, "offset", 0, minimum=0) or 0
    try:
        context["listing"] = acls.listing(cluster, request.GET, offset, PAGE)
    except ConsoleError as exc:
        context["list_error"], list_status = error_responses.form_error(exc)
        status = max(status, list_status)
    listing = context.get("listing") or {"total": 0}
    if "acls" in listing:
        # The rows' links and delete buttons are made here: a template per row is most of a page's time.
        base = reverse("principal", args=[cluster, "~P~"])
        listing["rows"] = [{**a, "url": base.replace("~P~", _path_part(a["principal"])),
                            "json": json.dumps(a, separators=(",", ":"))} for a in listing["acls"]]
    query = urlencode({k: v for k, v in params.items() if v})
    context.update(params=params, offset=offset, page=PAGE, query=query,
                   previous=max(offset - PAGE, 0) if offset else None,
                   next=offset + PAGE if offset + PAGE < listing["total"] else None,
                   may_manage=may(request.user, "acls.manage", cluster), live=snapshots.live(cluster))
    return render(request, "security_app/acls.html", context, status=status)


def _path_part(principal: str) -> str:
    from console.converters import FreeNameConverter

    return str(FreeNameConverter().to_url(principal))


@allow(GET="acls.view")
def check_page(request: HttpRequest, cluster: str) -> HttpResponse:
    fields = ("principal", "operation", "resource_type", "resource_name", "host")
    asked = {k: request.GET.get(k, "") for k in fields}
    context: dict[str, Any] = {"asked": asked, "view": "acl_check", **_choices(), "live": snapshots.live(cluster)}
    status = 200
    if asked["principal"]:
        try:
            context["decision"] = acls.check(cluster, principal_name=asked["principal"], operation=asked["operation"],
                                             resource_type=asked["resource_type"] or "TOPIC",
                                             resource_name=asked["resource_name"], host=asked["host"])
            context["deciding"] = [acls.describe(a) for a in context["decision"].decided_by]
        except ConsoleError as exc:
            context["error"], status = error_responses.form_error(exc)
    return render(request, "security_app/check.html", context, status=status)


@allow(GET="acls.view")
def principal_page(request: HttpRequest, cluster: str, principal: str) -> HttpResponse:
    context: dict[str, Any] = {"view": "principal", "live": snapshots.live(cluster)}
    status = 200
    try:
        found = acls.of_principal(cluster, principal)
        by_type: dict[str, list[Any]] = {}
        for acl in found["acls"]:
            by_type.setdefault(acl.resource_type, []).append(acl)
        context.update(found=found, by_type=sorted(by_type.items()))
    except ConsoleError as exc:
        context["error"], status = error_responses.form_error(exc)
    context["principal"] = principal
    return render(request, "security_app/principal.html", context, status=status)
