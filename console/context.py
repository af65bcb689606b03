from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from console import gateway
from console.auth import access_for, role_of


def console_context(request: HttpRequest) -> dict[str, Any]:
    match = getattr(request, "resolver_match", None)
    current = match.kwargs.get("cluster") if match else None
    user = getattr(request, "user", None)
    shown = access_for(user).clusters("cluster.view") if user is not None and user.is_authenticated else (lambda name: False)
    names = [c.name for c in gateway.cluster_configs() if shown(c.name)]
    return {
        "clusters": names,
        "current_cluster": current or (names[0] if names else None),
        "user_role": role_of(request.user) if hasattr(request, "user") else None,
    }
