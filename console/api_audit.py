"""`GET /api/v1/audit/`: the audit log, filtered and paged as the audit page is (console/audit_query.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import audit_query

_PARAMETERS = [
    OpenApiParameter("user", str, description="exact user name"),
    OpenApiParameter("action", str, description="e.g. create_topic, login, login_lockout"),
    OpenApiParameter("outcome", str, enum=list(audit_query.OUTCOMES)),
    OpenApiParameter("cluster", str),
    OpenApiParameter("since", str, description="ISO 8601 date or time (UTC unless it names its zone)"),
    OpenApiParameter("until", str, description="ISO 8601 date (to its end) or time"),
    OpenApiParameter("q", str, description="text in the target or the details"),
    OpenApiParameter("page", int),
    OpenApiParameter("per_page", int, description=f"at most {audit_query.MAX_PER_PAGE}"),
]


class AuditList(APIView):
    actions = {"GET": "audit.view"}

    @extend_schema(parameters=_PARAMETERS, summary="The audit log, newest first, filtered and paged")
    def get(self, request: Request) -> Response:
        found = audit_query.search(audit_query.parse(request.query_params))
        return Response({
            "entries": [audit_query.as_dict(e) for e in found.entries],
            "total": found.total,
            "page": found.page,
            "pages": found.pages,
            "per_page": found.query.per_page,
        })
