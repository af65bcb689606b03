from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from console.audit import record
from topics_app.models import MaskingPolicy


@admin.register(MaskingPolicy)
class MaskingPolicyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Edits go through the model's clean() (the API's checks) and into the audit log like the API's."""

    list_display = ("name", "enabled", "cluster", "topic_kind", "topic_pattern", "applies_to", "exempt", "updated_at")
    list_filter = ("enabled", "cluster", "topic_kind")
    search_fields = ("name", "topic_pattern")

    def save_model(self, request: HttpRequest, obj: MaskingPolicy, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        record(request.user, "update_masking_policy" if change else "create_masking_policy", target=obj.name,
               details={"id": obj.pk, "via": "admin", **policy_details(obj)})

    def delete_model(self, request: HttpRequest, obj: MaskingPolicy) -> None:
        details = {"id": obj.pk, "via": "admin", **policy_details(obj)}
        super().delete_model(request, obj)
        record(request.user, "delete_masking_policy", target=obj.name, details=details)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        gone = [(p.name, {"id": p.pk, "via": "admin", **policy_details(p)}) for p in queryset]
        super().delete_queryset(request, queryset)
        for name, details in gone:
            record(request.user, "delete_masking_policy", target=name, details=details)


def policy_details(p: MaskingPolicy) -> dict[str, Any]:
    return {"cluster": p.cluster, "topic_kind": p.topic_kind, "topic_pattern": p.topic_pattern, "applies_to": p.applies_to,
            "exempt": p.exempt, "targets": p.targets, "enabled": p.enabled}
