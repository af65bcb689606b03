"""The access page and API: role bindings listed, created, changed and deleted by admins."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import bindings
from console.access import ACTIONS, PATTERN_KINDS, ROLES
from console.auth import allow
from console.errors import BadParameter, ConsoleError
from console.models import RoleBinding


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise BadParameter("The body must be a JSON object.")
    return dict(request.data)


class Bindings(APIView):
    actions = {"GET": "access.manage", "POST": "access.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Role bindings: a role or actions on a cluster and name patterns")
    def get(self, request: Request) -> Response:
        return Response({"bindings": [bindings.as_dict(b) for b in RoleBinding.objects.all()]})

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT, summary="Create a role binding")
    def post(self, request: Request) -> Response:
        return Response(bindings.as_dict(bindings.create(request.user, _body(request))), status=201)


class BindingDetail(APIView):
    actions = {"GET": "access.manage", "PATCH": "access.manage", "DELETE": "access.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="One role binding")
    def get(self, request: Request, binding_id: int) -> Response:
        return Response(bindings.as_dict(bindings.get(binding_id)))

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT, summary="Change a role binding")
    def patch(self, request: Request, binding_id: int) -> Response:
        return Response(bindings.as_dict(bindings.update(request.user, binding_id, _body(request))))

    @extend_schema(responses={204: None}, summary="Delete a role binding")
    def delete(self, request: Request, binding_id: int) -> Response:
        bindings.delete(request.user, binding_id)
        return Response(status=204)


@allow(GET="access.manage", POST="access.manage")
def access_page(request: HttpRequest) -> HttpResponse:
    """The bindings with a form to add one; POST `delete=<id>` removes one."""
    error, status = None, 200
    if request.method == "POST":
        try:
            if request.POST.get("delete"):
                if not request.POST["delete"].isdigit():
                    raise BadParameter("'delete' must be a binding's number.")
                bindings.delete(request.user, int(request.POST["delete"]))
                messages.success(request, "The binding was deleted.")
            else:
                data: dict[str, Any] = {f: request.POST.get(f, "") for f in bindings.FIELDS if f != "actions"}
                data["actions"] = request.POST.getlist("actions")
                data = {k: v for k, v in data.items() if v not in ("", [])}
                b = bindings.create(request.user, data)
                messages.success(request, f"Binding #{b.id} for {b.subject_kind} '{b.subject}' was added.")
            return redirect("access")
        except ConsoleError as exc:
            error, status = exc.message, exc.http_status
    return render(request, "access.html", {"view": "access", "bindings": RoleBinding.objects.all(), "roles": ROLES,
                                           "actions": list(ACTIONS), "kinds": PATTERN_KINDS, "error": error,
                                           "form": request.POST}, status=status)
