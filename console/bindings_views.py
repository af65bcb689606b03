"""The access page and API: role bindings listed, created, changed and deleted by admins."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import bindings, error_responses
from console.access import ACTIONS, PATTERN_KINDS, ROLES
from console.api_edge import Body, StrictCharField, validated
from console.auth import allow
from console.errors import BadParameter, ConsoleError
from console.models import RoleBinding


class BindingBody(Body):
    """A role binding; console/bindings.py checks the values (roles, actions, patterns, the subject)."""

    subject_kind = StrictCharField(required=False, default="user", help_text="user or group")
    subject = StrictCharField(max_length=150, help_text="The user's or Django group's name (SSO: oidc:<group>, ldap:<group>).")
    role = StrictCharField(required=False, allow_blank=True, default="", help_text="viewer, operator or admin; or empty with actions")
    actions = serializers.ListField(child=StrictCharField(max_length=64), required=False, default=list,
                                    help_text="Action names (console/access.py), instead of a role.")
    cluster = StrictCharField(required=False, default="*", max_length=64, help_text="A cluster's name, or * for every one.")
    topic_kind = StrictCharField(required=False, default="all", help_text="all, literal, prefix, regex or none")
    topic_pattern = StrictCharField(required=False, allow_blank=True, default="", max_length=500)
    group_kind = StrictCharField(required=False, default="all", help_text="all, literal, prefix, regex or none")
    group_pattern = StrictCharField(required=False, allow_blank=True, default="", max_length=500)
    note = StrictCharField(required=False, allow_blank=True, default="", max_length=300)


class BindingPatch(BindingBody):
    """The fields to change; those not named keep their values."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for f in self.fields.values():
            f.required = False
            f.default = serializers.empty


class Bindings(APIView):
    actions = {"GET": "access.manage", "POST": "access.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Role bindings: a role or actions on a cluster and name patterns")
    def get(self, request: Request) -> Response:
        return Response({"bindings": [bindings.as_dict(b) for b in RoleBinding.objects.all()]})

    @extend_schema(request=BindingBody, responses=OpenApiTypes.OBJECT, summary="Create a role binding")
    def post(self, request: Request) -> Response:
        return Response(bindings.as_dict(bindings.create(request.user, validated(BindingBody, request))), status=201)


class BindingDetail(APIView):
    actions = {"GET": "access.manage", "PATCH": "access.manage", "DELETE": "access.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="One role binding")
    def get(self, request: Request, binding_id: int) -> Response:
        return Response(bindings.as_dict(bindings.get(binding_id)))

    @extend_schema(request=BindingPatch, responses=OpenApiTypes.OBJECT, summary="Change a role binding")
    def patch(self, request: Request, binding_id: int) -> Response:
        return Response(bindings.as_dict(bindings.update(request.user, binding_id, validated(BindingPatch, request))))

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
            error, status = error_responses.form_error(exc)
    return render(request, "access.html", {"view": "access", "bindings": RoleBinding.objects.all(), "roles": ROLES,
                                           "actions": list(ACTIONS), "kinds": PATTERN_KINDS, "error": error,
                                           "form": request.POST}, status=status)
