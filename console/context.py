from __future__ import annotations

import functools
from typing import Any

from django.http import HttpRequest
from django.urls import get_script_prefix, reverse

from console import gateway
from console.auth import access_for, role_of


def console_context(request: HttpRequest) -> dict[str, Any]:
    match = getattr(request, "resolver_match", None)
    current = match.kwargs.get("cluster") if match else None
    user = getattr(request, "user", None)
    shown = access_for(user).clusters("cluster.view") if user is not None and user.is_authenticated else (lambda name: False)
    names = [c.name for c in gateway.cluster_configs() if shown(c.name)]
    current = current or (names[0] if names else None)
    return {
        "clusters": names,
        "current_cluster": current,
        "tabs": _tabs(get_script_prefix(), current) if current else {},
        "user_role": role_of(request.user) if hasattr(request, "user") else None,
    }


TABS = ("overview", "topics", "groups", "layout", "at_risk", "events", "reassignments", "analytics", "acls", "alerts",
        "transactions", "connectors")


@functools.lru_cache(maxsize=256)
def _tabs(prefix: str, cluster: str) -> dict[str, str]:
    """The header's links of a cluster, reversed once per process (every page draws them)."""
    return {name: reverse(name, args=[cluster]) for name in TABS}
