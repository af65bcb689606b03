"""Roles: viewer < operator < admin, held as Django groups; superusers are admins.

Every page and API view declares the role it needs per HTTP method, in one shape:
`roles = {"GET": "viewer", "POST": "operator", "DELETE": "admin"}` on an API view (checked by
`RolePermission`, the API's default permission) and `@allow(GET="viewer", POST="operator")` on a
page. A method a view does not declare is refused, so a new handler without a role cannot leak.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import render
from rest_framework.permissions import BasePermission

if TYPE_CHECKING:  # rest_framework.views imports the API settings, which name this module
    from rest_framework.request import Request
    from rest_framework.views import APIView

ROLES = ("viewer", "operator", "admin")


def role_of(user: AbstractBaseUser | AnonymousUser) -> str | None:
    if not user.is_authenticated:
        return None
    if getattr(user, "is_superuser", False):
        return "admin"
    # Asked by the view's check and again by the page's layout: one query per request (a request
    # loads its user anew, so a changed role counts from the next request on).
    known: str | None = getattr(user, "_console_role", None)
    if known is not None:
        return known
    names = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
    role = next((r for r in reversed(ROLES) if r in names), "viewer")  # any logged-in user may look
    user._console_role = role  # type: ignore[union-attr,attr-defined]
    return role


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    mine = role_of(user)
    return mine is not None and ROLES.index(mine) >= ROLES.index(role)


def role_for(roles: Mapping[str, str], method: str) -> str | None:
    """The role a method needs, None when the view does not declare it. HEAD is a GET; OPTIONS
    (a description of the endpoint, which changes nothing) needs only a login."""
    method = method.upper()
    if method == "HEAD":
        method = "GET"
    if method == "OPTIONS" and roles:
        return roles.get("OPTIONS", "viewer")
    return roles.get(method)


def _check_roles(roles: Mapping[str, str]) -> None:
    for method, role in roles.items():
        if role not in ROLES:
            raise ValueError(f"{method} declares role '{role}'; roles are {', '.join(ROLES)}.")


def allow(**roles: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A page's role per method: `@allow(GET="viewer", POST="operator")`; other methods get 405.
    Anonymous requests never get here: LoginRequiredMiddleware sends them to the login page."""
    _check_roles(roles)

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            needed = role_for(roles, request.method or "GET")
            if needed is None:
                return HttpResponseNotAllowed(sorted(roles))
            if not has_role(request.user, needed):
                return render(request, "error.html", {"message": f"This page needs the {needed} role."}, status=403)
            return view(request, *args, **kwargs)

        wrapped.roles = dict(roles)  # type: ignore[attr-defined]
        return wrapped

    return decorate


class RolePermission(BasePermission):
    """The API's one permission: the view's `roles` maps each method to the role it needs.

    A method the view implements but does not declare is refused (403); a method it does not
    implement falls through to DRF's 405. No `roles` at all refuses everything."""

    message = "This needs a higher role."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401 with WWW-Authenticate
        roles: Mapping[str, str] = getattr(view, "roles", None) or {}
        method = request.method or "GET"
        needed = role_for(roles, method)
        if needed is None:
            if not hasattr(view, method.lower()):
                return True  # not implemented: DRF answers 405
            self.message = f"This endpoint declares no role for {method}, so it is refused."
            return False
        self.message = f"This needs the {needed} role."
        return has_role(request.user, needed)
