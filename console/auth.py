"""Roles: viewer < operator < admin, held as Django groups; superusers are admins."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

ROLES = ("viewer", "operator", "admin")


def role_of(user: AbstractBaseUser | AnonymousUser) -> str | None:
    if not user.is_authenticated:
        return None
    if getattr(user, "is_superuser", False):
        return "admin"
    names = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
    for role in reversed(ROLES):
        if role in names:
            return role
    return "viewer"  # any logged-in user may look


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    mine = role_of(user)
    return mine is not None and ROLES.index(mine) >= ROLES.index(role)


def role_required(role: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not has_role(request.user, role):
                return render(request, "error.html", {"message": f"This page needs the {role} role."}, status=403)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


class HasRole(BasePermission):
    role = "viewer"
    message = "This needs a higher role."

    def has_permission(self, request: Request, view: APIView) -> bool:
        self.message = f"This needs the {self.role} role."
        return has_role(request.user, self.role)


class IsAdminRole(HasRole):
    role = "admin"


class IsOperatorRole(HasRole):
    role = "operator"
