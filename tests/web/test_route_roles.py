"""Every route x method x role answers as the permission table says, without Kafka.

EXPECTED below is the console's permission map, written down once: each route (its pattern as
Django joins it) and each method it answers, with the least role that may use it (PUBLIC: no
login). The URL resolver is walked, so a route the table does not list, or a method a view
implements but the table does not, fails this module: a new endpoint cannot ship without a
decision about who may call it. Then every (route, method) is requested as anonymous, viewer,
operator and admin: anonymous gets 401 (API) or the login page (pages), a lower role 403, the role
itself and above anything but a refusal, and never a server error.

No request reaches Kafka: every gateway is replaced by one that refuses any use as an unreachable
cluster (503), and changes are sent with bodies that fail validation, so the only answers that
matter here are the permission layer's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from django.http import HttpResponseBase
from django.test import Client
from django.test.client import ClientHandler
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RegexPattern, RoutePattern
from django.views import View
from rest_framework.views import APIView

from console.access import ACTIONS
from console.auth import ROLES, ActionPermission
from console.snapshots.model import Snapshot
from tests.web.conftest import make_user

PUBLIC = "public"
ANONYMOUS = "anonymous"
CALLERS = (ANONYMOUS, *ROLES)
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
C = "clusters/<str:cluster>/"
API = "api/v1/clusters/<str:cluster>/"

# Reads are for viewers, changes for operators; deleting a topic, the audit log and user admin are
# for admins. Deleting a consumer group is an operator's change here, as the README's role list
# says ("admin (deletes topics, audit log)") and the integration tests rely on; Kafka refuses it
# unless the group is empty.
EXPECTED: dict[str, dict[str, str]] = {
    "login/": {"GET": PUBLIC, "POST": PUBLIC},
    "healthz": {"GET": PUBLIC},
    "logout/": {"POST": "console.view"},
    "": {"GET": "console.view"},
    "audit/": {"GET": "audit.view"},
    "access/": {"GET": "access.manage", "POST": "access.manage"},
    "api/v1/role-bindings/": {"GET": "access.manage", "POST": "access.manage"},
    "api/v1/masking-policies/": {"GET": "access.manage", "POST": "access.manage"},
    "api/v1/masking-policies/<int:pk>/": {"GET": "access.manage", "PATCH": "access.manage", "DELETE": "access.manage"},
    "oidc/authenticate/": {"GET": PUBLIC},
    "oidc/callback/": {"GET": PUBLIC},
    "api/v1/role-bindings/<int:binding_id>/": {"GET": "access.manage", "PATCH": "access.manage", "DELETE": "access.manage"},
    "metrics": {"GET": "metrics.view"},
    C: {"GET": "cluster.view"},
    C + "layout/": {"GET": "cluster.view"},
    C + "at-risk/": {"GET": "cluster.view"},
    C + "brokers/<int:broker>/": {"GET": "cluster.view"},
    C + "events/": {"GET": "cluster.view"},
    C + "reassignments/": {"GET": "reassignments.view", "POST": "partitions.reassign"},
    C + "reassignments/<int:job_id>/": {"GET": "reassignments.view", "POST": "partitions.reassign"},
    C + "reassignments/<int:job_id>/plan.json": {"GET": "reassignments.view"},
    C + "analytics/": {"GET": "analytics.view", "POST": "analytics.run"},
    C + "reports/": {"GET": "analytics.view", "POST": "reports.schedule"},
    C + "reports/<int:report_id>/": {"GET": "analytics.view"},
    C + "reports/<int:report_id>/report.html": {"GET": "analytics.view"},
    C + "reports/<int:report_id>/report.csv": {"GET": "analytics.view"},
    C + "groups/": {"GET": "group.view"},
    C + "groups/<name:group>/": {"GET": "group.view"},
    C + "groups/<name:group>/reset/": {"GET": "group.reset_offsets", "POST": "group.reset_offsets"},
    C + "groups/<name:group>/delete/": {"POST": "group.delete"},
    C + "topics/": {"GET": "topic.view"},
    C + "topics/new/": {"GET": "topic.create", "POST": "topic.create"},
    C + "topics/<str:topic>/": {"GET": "topic.view"},
    C + "topics/<str:topic>/configs/": {"GET": "topic.edit_config", "POST": "topic.edit_config"},
    C + "topics/<str:topic>/partitions/": {"GET": "topic.add_partitions", "POST": "topic.add_partitions"},
    C + "topics/<str:topic>/purge/": {"GET": "topic.purge", "POST": "topic.purge"},
    C + "topics/<str:topic>/delete/": {"GET": "topic.delete", "POST": "topic.delete"},
    C + "topics/<str:topic>/messages/": {"GET": "messages.read"},
    C + "topics/<str:topic>/messages/produce/": {"POST": "messages.produce"},
    C + "topics/<str:topic>/messages/republish/": {"POST": "messages.produce"},
    C + "topics/<str:topic>/schemas/": {"POST": "topic.schemas"},
    C + "topics/<str:topic>/schemas/<int:schema_id>/delete/": {"POST": "topic.schemas"},
    "api/schema/": {"GET": "console.view"},
    "api/v1/audit/": {"GET": "audit.view"},
    "api/v1/clusters/": {"GET": "console.view"},
    API: {"GET": "cluster.view"},
    API + "brokers/": {"GET": "cluster.view"},
    API + "brokers/<int:broker>/replica-lag/": {"GET": "cluster.view"},
    API + "events/": {"GET": "cluster.view"},
    API + "leader-elections/": {"POST": "leaders.elect"},
    API + "reassignments/": {"GET": "reassignments.view", "POST": "partitions.reassign"},
    API + "reassignments/<int:job_id>/": {"GET": "reassignments.view", "POST": "partitions.reassign"},
    API + "analytics/runs/": {"GET": "analytics.view", "POST": "analytics.run"},
    API + "analytics/runs/<int:run_id>/": {"GET": "analytics.view"},
    API + "analytics/topics/<str:topic>/": {"GET": "topic.view"},
    API + "analytics/consumer-groups/<name:group>/": {"GET": "group.view"},
    API + "report-schedules/": {"GET": "analytics.view", "PATCH": "reports.schedule"},
    "api/v1/reports/": {"GET": "analytics.view"},
    "api/v1/reports/<int:report_id>/": {"GET": "analytics.view"},
    "api/v1/reports/<int:report_id>/report.csv": {"GET": "analytics.view"},
    "api/v1/reports/<int:report_id>/report.html": {"GET": "analytics.view"},
    API + "consumer-groups/": {"GET": "group.view"},
    API + "rebalances/most-frequent/": {"GET": "group.view"},
    API + "consumer-groups/<name:group>/": {"GET": "group.view", "DELETE": "group.delete"},
    API + "consumer-groups/<name:group>/streams/": {"GET": "group.view"},
    API + "consumer-groups/<name:group>/offsets": {"POST": "group.reset_offsets", "DELETE": "group.reset_offsets"},
    API + "consumer-groups/<name:group>/offsets/": {"POST": "group.reset_offsets", "DELETE": "group.reset_offsets"},
    API + "consumer-groups/<name:group>/rebalances/": {"GET": "group.view"},
    API + "topics/": {"GET": "topic.view", "POST": "topic.create"},
    API + "topics/<str:topic>/": {"GET": "topic.view", "DELETE": "topic.delete"},
    API + "topics/<str:topic>/configs/": {"GET": "topic.view", "PATCH": "topic.edit_config"},
    API + "topics/<str:topic>/records/": {"DELETE": "topic.purge"},
    API + "topics/<str:topic>/partitions/": {"GET": "topic.view", "POST": "topic.add_partitions"},
    API + "topics/<str:topic>/messages/": {"GET": "messages.read", "POST": "messages.produce"},
    API + "topics/<str:topic>/messages/republish/": {"POST": "messages.produce"},
    API + "topics/<str:topic>/schemas/": {"GET": "topic.view", "POST": "topic.schemas"},
    API + "topics/<str:topic>/schemas/<int:schema_id>/": {"GET": "topic.view", "DELETE": "topic.schemas"},
    C + "security/acls/": {"GET": "acls.view", "POST": "acls.manage"},
    C + "security/check/": {"GET": "acls.view"},
    C + "security/principals/<name:principal>/": {"GET": "acls.view"},
    API + "acls/": {"GET": "acls.view", "POST": "acls.manage", "DELETE": "acls.manage"},
    API + "acls/check/": {"POST": "acls.view"},
    C + "security/users/": {"GET": "users.view", "POST": "users.manage"},
    API + "users/": {"GET": "users.view", "POST": "users.manage"},
    C + "transactions/": {"GET": "transactions.view", "POST": "transactions.abort"},
    API + "transactions/": {"GET": "transactions.view"},
    API + "transactions/<name:transactional_id>/abort/": {"POST": "transactions.abort"},
    C + "topics/<str:topic>/producers/": {"GET": "topic.view"},
    API + "topics/<str:topic>/producers/": {"GET": "topic.view"},
    API + "users/<name:user>/": {"DELETE": "users.manage"},
    C + "security/quotas/": {"GET": "quotas.view", "POST": "quotas.manage"},
    API + "quotas/": {"GET": "quotas.view", "POST": "quotas.manage", "DELETE": "quotas.manage"},
    API + "quotas/effective/": {"GET": "quotas.view"},
    C + "alerts/": {"GET": "alerts.view", "POST": "alerts.manage"},
    C + "alerts/history/": {"GET": "alerts.view"},
    C + "alerts/rules/": {"GET": "alerts.view", "POST": "alerts.manage"},
    C + "alerts/rules/<int:rule_id>/": {"GET": "alerts.view", "POST": "alerts.manage"},
    C + "alerts/silences/": {"GET": "alerts.view", "POST": "alerts.manage"},
    C + "alerts/channels/": {"GET": "alerts.view", "POST": "alert_channels.manage"},
    C + "alerts/channels/<name:channel>/": {"GET": "alerts.view", "POST": "alert_channels.manage"},
    "api/v1/alert-channels/": {"GET": "alerts.view", "POST": "alert_channels.manage"},
    "api/v1/alert-channels/<name:channel>/": {"GET": "alerts.view", "PATCH": "alert_channels.manage",
                                             "DELETE": "alert_channels.manage"},
    "api/v1/alert-channels/<name:channel>/test/": {"POST": "alert_channels.manage"},
    "api/v1/alert-channels/<name:channel>/deliveries/<int:delivery_id>/retry/": {"POST": "alert_channels.manage"},
    API + "alert-rules/": {"GET": "alerts.view", "POST": "alerts.manage"},
    API + "alert-rules/preview/": {"POST": "alerts.view"},
    API + "alert-rules/<int:rule_id>/": {"GET": "alerts.view", "PATCH": "alerts.manage", "DELETE": "alerts.manage"},
    API + "alerts/": {"GET": "alerts.view"},
    API + "alerts/<int:alert_id>/acknowledge/": {"POST": "alerts.manage"},
    "api/v1/silences/": {"GET": "alerts.view", "POST": "alerts.manage"},
    "api/v1/silences/<int:silence_id>/": {"GET": "alerts.view", "DELETE": "alerts.manage"},
    C + "connect/": {"GET": "connect.view"},
    C + "connect/plugins/": {"GET": "connect.view"},
    C + "connect/new/": {"GET": "connect.manage", "POST": "connect.manage"},
    C + "connect/<str:connect>/<name:connector>/": {"GET": "connect.view", "POST": "connect.manage"},
    C + "connect/<str:connect>/<name:connector>/edit/": {"GET": "connect.manage", "POST": "connect.manage"},
    C + "connect/<str:connect>/<name:connector>/delete/": {"GET": "connect.manage", "POST": "connect.manage"},
    C + "connect/<str:connect>/<name:connector>/offsets/": {"POST": "connect.offsets"},
    C + "connect/<str:connect>/<name:connector>/restart-policy/": {"POST": "connect.manage"},
    API + "connectors/": {"GET": "connect.view", "POST": "connect.manage"},
    API + "connectors/<name:connector>/": {"GET": "connect.view", "PUT": "connect.manage", "POST": "connect.manage",
                                           "DELETE": "connect.manage"},
    API + "connect-plugins/": {"GET": "connect.view"},
    API + "connectors/<name:connector>/offsets/": {"GET": "connect.view", "PATCH": "connect.offsets", "DELETE": "connect.offsets"},
    API + "connectors/<name:connector>/restart-policy/": {"GET": "connect.view", "PUT": "connect.manage"},
    C + "replication/": {"GET": "replication.view"},
    API + "replication/": {"GET": "replication.view"},
}

# Django's admin site (user and token admin): each of its views asks for is_staff, which only
# admins have, and sends anyone else to its own login form (its logout, to its index, which does
# the same). That form itself opens for any logged-in user and says they are not authorized.
ADMIN_SITE = "admin"
ADMIN_SITE_ROLES = {"GET": "admin", "POST": "admin"}
ADMIN_SITE_OVERRIDES = {"admin/login/": {"GET": "viewer", "POST": "viewer"}}
ADMIN_SITE_REFUSALS = {"admin/logout/": "/admin/"}  # Location of a refusal other than the login form

# Views the console does not decorate, and why.
UNDECLARED_PAGES = {
    "login/": "Django's login form: it is how one gets a role.",
    "logout/": "Django's logout: ends the caller's own session; the login middleware keeps anonymous out.",
    "healthz": "The public health check: fixed sentences, no exception text.",
    "oidc/authenticate/": "The OpenID Connect login's start: sends the browser to the identity provider.",
    "oidc/callback/": "The provider's answer: checked by the OpenID Connect library (state, PKCE, signature).",
}
UNDECLARED_API: dict[str, str] = {}

# An allowed request answered 403 anyway, and why that is not a refusal by role.
ALLOWED_BUT_403 = {
    ("admin/autocomplete/", "GET"): "Django refuses an autocomplete query for a field that has none; no admin here has one.",
    ("admin/autocomplete/", "POST"): "As for GET.",
    **{(f"admin/axes/{model}/add/", method): "django-axes keeps its login records read-only: nobody adds one by hand."
       for model in ("accessattempt", "accessfailurelog", "accesslog") for method in ("GET", "POST")},
}

# Path parameters: the group id has a '/' so the `name` converter is exercised.
SAMPLES = {
    "cluster": "local",
    "topic": "orders",
    "principal": "User:bob",
    "group": "team/service",
    "app_label": "auth",
    "object_id": "1",
    "pk": "1",
    "id": "1",
    "job_id": "1",
    "broker": "1",
    "binding_id": "1",
    "run_id": "1",
    "schema_id": "1",
    "report_id": "1",
    "content_type_id": "1",
    "url": "no-such-page/",
    "user": "svc/orders",
    "channel": "ops/hook",
    "rule_id": "1",
    "alert_id": "1",
    "silence_id": "1",
    "delivery_id": "1",
    "connect": "local",
    "connector": "sink/orders",
    "transactional_id": "txn/orders",
}

# Bodies that fail validation, so an allowed change stops before any Kafka call (default: {}).
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    (C + "topics/<str:topic>/messages/produce/", "POST"): {"value": "x", "encoding": "no-such-encoding"},
    (API + "topics/<str:topic>/messages/", "POST"): {"value": "x", "encoding": "no-such-encoding"},
    (API + "topics/<str:topic>/configs/", "PATCH"): {"set": "not-an-object"},
    (API + "leader-elections/", "POST"): {"type": "sideways"},
    (API + "reassignments/", "POST"): {"kind": "sideways"},
    (API + "reassignments/<int:job_id>/", "POST"): {"action": "sideways"},
    (C + "reassignments/", "POST"): {"kind": "sideways"},
    (C + "reassignments/<int:job_id>/", "POST"): {"action": "sideways"},
    (C + "analytics/", "POST"): {"start": "not-a-time"},
    (C + "reports/", "POST"): {"name": "hourly", "every_minutes": "soon"},
    (API + "analytics/runs/", "POST"): {"start_ms": "yesterday"},
    (API + "report-schedules/", "PATCH"): {"every_minutes": 0},
    (C + "topics/<str:topic>/purge/", "POST"): {"offsets": "0=not-an-offset"},
    (C + "connect/<str:connect>/<name:connector>/", "POST"): {"action": "sideways"},
    (C + "connect/<str:connect>/<name:connector>/delete/", "POST"): {"confirm": "not-its-name"},
    (API + "connectors/", "POST"): {"name": "x", "config": "not-an-object"},
    (API + "connectors/<name:connector>/", "PUT"): {"config": "not-an-object"},
    (API + "connectors/<name:connector>/", "POST"): {"action": "sideways"},
    (C + "connect/<str:connect>/<name:connector>/offsets/", "POST"): {"op": "sideways"},
    (C + "connect/<str:connect>/<name:connector>/restart-policy/", "POST"): {"max_restarts": "-1"},
    (API + "connectors/<name:connector>/offsets/", "PATCH"): {"offsets": "not-a-list"},
    (API + "connectors/<name:connector>/offsets/", "DELETE"): {"confirm": "not-its-name"},
    (API + "connectors/<name:connector>/restart-policy/", "PUT"): {"max_restarts": -1},
}

# Changes allowed to reach the (refusing) gateway, and why: each stops there with a 503.
REACH_GATEWAY = {
    (C + "topics/<str:topic>/configs/", "POST"): "The form reads the topic's current configs before it parses anything.",
    (API + "consumer-groups/<name:group>/", "DELETE"): "No body to get wrong, and the group is in the snapshot "
                                                       "(it has a member, so Kafka would refuse it too).",
    (API + "users/<name:user>/", "DELETE"): "No body: it reads the user's credentials to know what to delete.",
    (C + "security/acls/", "POST"): "A refused form is shown above the ACL list, which the page reads again.",
}


@dataclass(frozen=True)
class Route:
    key: str  # the pattern as Django joins it (ResolverMatch.route)
    path: str  # a request path with the sample values
    namespace: str
    callback: Callable[..., Any]

    @property
    def view_class(self) -> type[View] | None:
        return getattr(self.callback, "view_class", None)

    @property
    def is_api(self) -> bool:
        return self.view_class is not None and issubclass(self.view_class, APIView)

    @property
    def is_admin_site(self) -> bool:
        return self.namespace == ADMIN_SITE


def _fill_route(pattern: RoutePattern) -> str:
    def sample(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in SAMPLES:
            raise KeyError(f"Route '{pattern}' has a parameter '{name}': give it a sample value in SAMPLES.")
        return str(pattern.converters[name].to_url(SAMPLES[name]))

    return re.sub(r"<(?:[^>:]+:)?(?P<name>[^>]+)>", sample, str(pattern))


def _fill_regex(regex: str) -> str:
    """A path the regex matches: each named group becomes its sample value, anchors go."""
    out, i = [], 0
    while i < len(regex):
        m = re.compile(r"\(\?P<(\w+)>").match(regex, i)
        if m is None:
            out.append(regex[i])
            i += 1
            continue
        name, depth, i = m.group(1), 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(regex[i], 0)
            i += 1
        if name not in SAMPLES:
            raise KeyError(f"Route '{regex}' has a parameter '{name}': give it a sample value in SAMPLES.")
        out.append(SAMPLES[name])
    return "".join(out).removeprefix("^").removesuffix("$")


def _fill(pattern: Any) -> str:
    return _fill_route(pattern) if isinstance(pattern, RoutePattern) else _fill_regex(str(pattern))


def _walk(resolver: URLResolver, key: str, path: str, namespace: str) -> Iterator[Route]:
    for p in resolver.url_patterns:
        assert isinstance(p.pattern, RoutePattern | RegexPattern), p
        piece = str(p.pattern)
        joined = key + (piece.removeprefix("^") if key else piece)  # as URLResolver._join_route does
        if isinstance(p, URLResolver):
            yield from _walk(p, joined, path + _fill(p.pattern), p.namespace or namespace)
        else:
            assert isinstance(p, URLPattern)
            yield Route(joined, path + _fill(p.pattern), namespace, p.callback)


ROUTES = list(_walk(get_resolver(), "", "", ""))


def expected_roles(route: Route) -> dict[str, str] | None:
    """The route's table: actions per method (roles on Django's admin site, which has no actions)."""
    if route.is_admin_site:
        return ADMIN_SITE_OVERRIDES.get(route.key, ADMIN_SITE_ROLES)
    return EXPECTED.get(route.key)


def least_role(route: Route, method: str) -> str:
    """The least unscoped role that may call the method: the role of its action (PUBLIC stays)."""
    declared = (expected_roles(route) or {})[method]
    return ACTIONS[declared][0] if declared in ACTIONS else declared


def implemented_methods(view_class: type[View]) -> set[str]:
    return {m.upper() for m in view_class.http_method_names if m not in {"options", "head"} and hasattr(view_class, m)}


# The tables --------------------------------------------------------------------------------------


def test_every_route_is_in_the_permission_table() -> None:
    missing = [r.key for r in ROUTES if expected_roles(r) is None]
    assert not missing, (
        "Routes without an entry in EXPECTED (tests/web/test_route_roles.py); add each with the least "
        f"role per method (and declare that role on the view): {missing}"
    )


def test_the_tables_name_only_routes_that_exist() -> None:
    keys = {r.key for r in ROUTES}
    stale = sorted(EXPECTED.keys() - keys)
    assert not stale, f"EXPECTED lists routes the URL resolver does not have; remove or rename them: {stale}"
    named = {*UNDECLARED_PAGES, *UNDECLARED_API, *ADMIN_SITE_OVERRIDES, *ADMIN_SITE_REFUSALS,
             *(key for key, _ in [*BODIES, *REACH_GATEWAY, *ALLOWED_BUT_403])}
    assert not named - keys, f"Exceptions name routes that do not exist: {sorted(named - keys)}"


def test_every_sample_path_resolves_to_its_own_route() -> None:
    wrong = []
    for route in ROUTES:
        match = resolve("/" + route.path)
        if match.route != route.key or match.func is not route.callback:
            wrong.append(f"/{route.path} resolves to '{match.route}', not '{route.key}'")
    assert not wrong, wrong


def test_every_api_view_declares_the_tables_role_for_each_method_it_implements() -> None:
    problems = []
    for route in [r for r in ROUTES if r.is_api]:
        view = route.view_class
        assert view is not None and issubclass(view, APIView)
        implemented = implemented_methods(view)
        if [type(p) for p in view().get_permissions()] != [ActionPermission]:
            problems.append(f"{route.key}: {view.__name__} must be checked by ActionPermission, the one check")
        roles = getattr(view, "actions", None)
        if not roles:
            problems.append(f"{route.key}: {view.__name__} has no `actions`; declare one per method it implements")
            continue
        if implemented - roles.keys():
            problems.append(f"{route.key}: {view.__name__} implements {sorted(implemented - roles.keys())} without a role")
        if dict(roles) != expected_roles(route):
            problems.append(f"{route.key}: {view.__name__} declares {roles}, the table expects {expected_roles(route)}")
        if implemented != set(expected_roles(route) or {}):
            problems.append(f"{route.key}: {view.__name__} implements {sorted(implemented)}, the table lists "
                            f"{sorted(expected_roles(route) or {})}")
    assert not problems, "\n".join(problems)


def test_every_page_carries_the_tables_roles_unless_it_is_public_by_design() -> None:
    problems = []
    for route in [r for r in ROUTES if not r.is_api and not r.is_admin_site]:
        if route.key in UNDECLARED_PAGES:
            continue
        roles = getattr(route.callback, "actions", None)
        if roles is None:
            problems.append(f"{route.key}: the view has no actions; decorate it with @allow(GET=..., POST=...)")
        elif roles != expected_roles(route):
            problems.append(f"{route.key}: @allow declares {roles}, the table expects {expected_roles(route)}")
    assert not problems, "\n".join(problems)


# The requests ------------------------------------------------------------------------------------


# One request handler for every case: building the middleware stack (WhiteNoise indexes every
# static file) costs more than a request, and each Client would build its own.
_HANDLER = ClientHandler(enforce_csrf_checks=False)


def client_for(caller: str) -> Client:
    client = Client()
    client.handler = _HANDLER
    if caller != ANONYMOUS:
        client.force_login(make_user(caller))  # only the caller's user: hundreds of cases stay fast
    return client


def outcome(route: Route, method: str, caller: str) -> str:
    needed = least_role(route, method)
    if needed == PUBLIC:
        return "allowed"
    if caller == ANONYMOUS:
        return "login"
    return "allowed" if ROLES.index(caller) >= ROLES.index(needed) else "refused"


def send(client: Client, route: Route, method: str) -> HttpResponseBase:
    path = "/" + route.path
    if method == "GET":
        return client.get(path)
    body = BODIES.get((route.key, method), {})
    if route.is_api:
        return client.generic(method, path, json.dumps(body), content_type="application/json")
    return client.post(path, body) if method == "POST" else client.generic(method, path)


def _cases() -> list[Any]:
    cases = []
    for route in ROUTES:
        for method in expected_roles(route) or {}:
            for caller in CALLERS:
                cases.append(pytest.param(route, method, caller, id=f"{method} /{route.path} as {caller}"))
    return cases


def _is_login_redirect(response: HttpResponseBase, login_url: str) -> bool:
    return response.status_code == 302 and response["Location"].startswith(login_url + "?next=")


@pytest.mark.parametrize(("route", "method", "caller"), _cases())
def test_each_role_gets_what_the_table_grants(route: Route, method: str, caller: str, db: None, with_group: Snapshot,
                                              gateway_uses: list[str]) -> None:
    response = send(client_for(caller), route, method)
    status, expected = response.status_code, outcome(route, method, caller)
    where = f"{method} /{route.path} as {caller}: {status}"
    if expected == "login" and route.is_api:
        assert status == 401, f"{where}, expected 401 (no credentials)"
    elif expected == "login":
        assert _is_login_redirect(response, settings.LOGIN_URL), f"{where}, expected a redirect to {settings.LOGIN_URL}"
    elif expected == "refused" and route.key in ADMIN_SITE_REFUSALS:
        assert status == 302 and response["Location"] == ADMIN_SITE_REFUSALS[route.key], f"{where}, expected the admin index"
    elif expected == "refused" and route.is_admin_site:
        assert _is_login_redirect(response, "/admin/login/"), f"{where}, expected the admin site's login form"
    elif expected == "refused":
        assert status == 403, f"{where}, expected 403 (needs {least_role(route, method)})"
    else:
        assert status != 401, where
        assert status != 403 or (route.key, method) in ALLOWED_BUT_403, f"{where}: refused a role the table allows"
        assert not _is_login_redirect(response, settings.LOGIN_URL), f"{where}: sent to the login page"
        assert not _is_login_redirect(response, "/admin/login/"), f"{where}: sent to the admin login page"
        assert status < 500 or status == 503, f"{where}: a server error ({getattr(response, 'content', b'')[:300]!r})"
        if method != "GET" and not route.is_admin_site and (route.key, method) not in REACH_GATEWAY:
            assert not gateway_uses, f"{where}: the change reached the gateway ({gateway_uses}); send a body that fails validation"


def _undeclared_cases() -> list[Any]:
    cases = []
    for route in ROUTES:
        if route.is_admin_site or route.key in UNDECLARED_PAGES or route.key in UNDECLARED_API:
            continue
        for method in sorted(set(METHODS) - set(expected_roles(route) or {})):
            cases.append(pytest.param(route, method, id=f"{method} /{route.path}"))
    return cases


@pytest.mark.parametrize(("route", "method"), _undeclared_cases())
def test_a_method_the_table_does_not_list_is_not_allowed_even_for_an_admin(route: Route, method: str, db: None,
                                                                           with_group: Snapshot,
                                                                           gateway_uses: list[str]) -> None:
    response = send(client_for("admin"), route, method)
    assert response.status_code == 405, f"{method} /{route.path} as admin: {response.status_code}, expected 405"
    assert not gateway_uses
