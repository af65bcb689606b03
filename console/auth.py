"""The one enforcement point: every page, API method and websocket message asks `may(user, action,
cluster, topic, group)` (console/access.py says what the actions are and how scopes match).

Every page and API view declares the action each HTTP method performs, in one shape:
`actions = {"GET": "topic.view", "DELETE": "topic.delete"}` on an API view (checked by
`ActionPermission`, the API's default permission) and `@allow(GET="topic.view", POST="topic.purge")`
on a page. The resource comes from the URL (its `cluster`, `topic` and `group`). A method a view does
not declare is refused (405), so a new handler without a decision cannot leak; HEAD is checked as
GET, and OPTIONS never runs a page's body (it answers the allowed methods).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from rest_framework.permissions import BasePermission

from console import error_responses
from console.access import ACTIONS, ROLES, WORDS, Access, check_action, compile_access

if TYPE_CHECKING:  # rest_framework.views imports the API settings, which name this module
    from rest_framework.request import Request
    from rest_framework.views import APIView

__all__ = ["ROLES", "ActionPermission", "access_for", "allow", "has_role", "may", "require", "role_of", "viewing", "visible"]

User = AbstractBaseUser | AnonymousUser

# Compiled grants per (bindings' generation, user, groups), shared by the requests of a process: the
# bindings are read again only when their generation (count, newest change) moves.
_COMPILED: OrderedDict[tuple[Any, ...], Access] = OrderedDict()
COMPILED_KEPT = 4096
_BINDINGS: dict[str, Any] = {"generation": object(), "by_subject": {}}  # (no generation read yet)


def _groups_and_generation(user_pk: Any) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The user's group names and the bindings' generation, in plain SQL: the check runs on every
    request and socket message, and through the ORM these two reads would be most of its time."""
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from console.models import AccessVersion

    memberships = User.groups.through._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT g.name FROM {Group._meta.db_table} g JOIN {memberships} m ON m.group_id = g.id "  # noqa: S608
                       "WHERE m.user_id = %s", [user_pk])
        groups = tuple(sorted(row[0] for row in cursor.fetchall()))
        cursor.execute(f"SELECT value FROM {AccessVersion._meta.db_table} WHERE id = 1")  # noqa: S608
        row = cursor.fetchone()
    return groups, (row[0] if row else None,)


def bump_generation(**kwargs: Any) -> None:
    """After any change of a role binding (saved or deleted, by any process): every process compiles
    the bindings again on its next request. A random number, not a count: a count that a rolled-back
    transaction (or a restored database) took back would come again and name other bindings."""
    import secrets

    from console.models import AccessVersion

    AccessVersion.objects.update_or_create(pk=1, defaults={"value": secrets.randbits(62)})


def _bindings(generation: tuple[Any, ...]) -> dict[tuple[str, str], list[Any]]:
    from console.models import RoleBinding

    if _BINDINGS["generation"] != generation:
        by_subject: dict[tuple[str, str], list[Any]] = {}
        for b in RoleBinding.objects.all():
            by_subject.setdefault((b.subject_kind, b.subject), []).append(b)
        _BINDINGS.update(generation=generation, by_subject=by_subject)
    held: dict[tuple[str, str], list[Any]] = _BINDINGS["by_subject"]
    return held


def access_for(user: User) -> Access:
    """The user's compiled grants, read once per request (a request loads its user anew, so a changed
    role or binding counts from the next request on)."""
    known: Access | None = getattr(user, "_console_access", None)
    if known is not None:
        return known
    if not user.is_authenticated or not getattr(user, "is_active", True):
        access = Access(())
    else:
        superuser = bool(getattr(user, "is_superuser", False))
        groups, generation = _groups_and_generation(user.pk)
        key = (generation, user.pk, user.get_username(), groups, superuser)
        access = _COMPILED.get(key)  # type: ignore[assignment]
        if access is None:
            by_subject = _bindings(generation)
            bound = list(by_subject.get(("user", user.get_username()), []))
            for g in groups:
                bound += by_subject.get(("group", g), [])
            access = compile_access(superuser=superuser, roles=groups, bindings=bound,
                                    default_role=getattr(settings, "CONSOLE_DEFAULT_ROLE", "viewer"))
            _COMPILED[key] = access
            if len(_COMPILED) > COMPILED_KEPT:
                _COMPILED.popitem(last=False)
    user._console_access = access  # type: ignore[union-attr]
    return access


# The user whose request or socket message is being answered, set by the check itself: lists,
# counts and live fragments cut what they show with `visible()`. Unset (the watcher, Celery, reports
# built for everyone) nothing is cut.
_VIEWER: ContextVar[Any] = ContextVar("console_viewer", default=None)


def viewing(user: Any) -> Any:
    """Make `user` the one whose lists are drawn; returns the token to reset."""
    return _VIEWER.set(user)


def visible(action: str, cluster: str, of: str) -> Callable[[str], bool] | None:
    """The predicate of the topic (`of="topics"`) or group (`of="groups"`) names the current user may
    `action` on the cluster; None: no cut to make."""
    user = _VIEWER.get()
    return None if user is None else access_for(user).names(action, cluster, of)


def may(user: User, action: str, cluster: str | None = None, topic: str | None = None, group: str | None = None) -> bool:
    return access_for(user).may(action, cluster, topic, group)


def refusal(action: str, cluster: str | None = None, topic: str | None = None, group: str | None = None) -> str:
    what = f"topic '{topic}'" if topic is not None else f"consumer group '{group}'" if group is not None else (
        f"cluster '{cluster}'" if cluster else "this console")
    least = ACTIONS[action][0] if action in ACTIONS else "admin"
    return f"You may not {WORDS.get(action, action)} {what}: it needs the {least} role, or a binding that gives {action}."


def require(user: User, action: str, cluster: str | None = None, topic: str | None = None, group: str | None = None) -> None:
    """For names that come in a body (a topic to create, a republish target): a 403 ConsoleError."""
    from console.errors import Forbidden

    if not may(user, action, cluster, topic, group):
        raise Forbidden(refusal(action, cluster, topic, group))


def role_of(user: User) -> str | None:
    """The role shown beside the user's name (and used by masking policies): their highest whole role."""
    if not user.is_authenticated:
        return None
    return access_for(user).role


def has_role(user: User, role: str) -> bool:
    mine = role_of(user)
    return mine is not None and ROLES.index(mine) >= ROLES.index(role)


def action_for(actions: Mapping[str, str], method: str) -> str | None:
    """The action a method performs, None when the view does not declare it. HEAD is a GET."""
    method = method.upper()
    if method == "HEAD":
        method = "GET"
    return actions.get(method)


def resource_of(kwargs: Mapping[str, Any]) -> dict[str, str | None]:
    return {"cluster": kwargs.get("cluster"), "topic": kwargs.get("topic"), "group": kwargs.get("group")}


def _check_actions(actions: Mapping[str, str]) -> None:
    for method, action in actions.items():
        if method.upper() in ("HEAD", "OPTIONS"):
            raise ValueError(f"{method} is answered by the check itself; declare GET instead.")
        check_action(action)


def allow(**actions: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A page's action per method: `@allow(GET="topic.view", POST="topic.purge")`; other methods get 405.
    Anonymous requests never get here: LoginRequiredMiddleware sends them to the login page."""
    _check_actions(actions)
    allowed = sorted({*actions, *(["HEAD"] if "GET" in actions else []), "OPTIONS"})

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            method = (request.method or "GET").upper()
            resource = resource_of(kwargs)
            if method == "OPTIONS":
                # The methods, never the body: a body run for OPTIONS would act with no check of its own.
                if not any(may(request.user, a, **resource) for a in actions.values()):
                    return _refused(request, next(iter(actions.values())), resource)
                response = HttpResponse(status=200)
                response["Allow"] = ", ".join(allowed)
                return response
            needed = action_for(actions, method)
            if needed is None:
                return HttpResponseNotAllowed(allowed)
            if not may(request.user, needed, **resource):
                return _refused(request, needed, resource)
            token = viewing(request.user)
            try:
                return view(request, *args, **kwargs)
            finally:
                _VIEWER.reset(token)

        wrapped.actions = dict(actions)  # type: ignore[attr-defined]
        return wrapped

    return decorate


def _refused(request: HttpRequest, action: str, resource: Mapping[str, str | None]) -> HttpResponse:
    return error_responses.page(request, refusal(action, **resource), 403)


class ActionPermission(BasePermission):
    """The API's one permission: the view's `actions` maps each method to the action it performs.

    A method the view implements but does not declare is refused (403); a method it does not
    implement falls through to DRF's 405. OPTIONS (DRF's description of the endpoint, which runs no
    handler) needs one of the view's actions on the resource. No `actions` at all refuses everything."""

    message = "You may not do this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401 with WWW-Authenticate
        actions: Mapping[str, str] = getattr(view, "actions", None) or {}
        resource = resource_of(view.kwargs)
        method = (request.method or "GET").upper()
        if method == "OPTIONS" and actions:
            self.message = refusal(next(iter(actions.values())), **resource)
            return any(may(request.user, a, **resource) for a in actions.values())
        needed = action_for(actions, method)
        if needed is None:
            if not hasattr(view, method.lower()):
                return True  # not implemented: DRF answers 405
            self.message = f"This endpoint declares no action for {method}, so it is refused."
            return False
        if needed not in ACTIONS:
            self.message = f"This endpoint declares an unknown action for {method}, so it is refused."
            return False
        self.message = refusal(needed, **resource)
        if not may(request.user, needed, **resource):
            return False
        viewing(request.user)  # (DRF authenticates tokens inside the view, so the check names the viewer)
        return True
