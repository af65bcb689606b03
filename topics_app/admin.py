from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from topics_app import services
from topics_app.models import MaskingPolicy


@admin.register(MaskingPolicy)
class MaskingPolicyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Edits go through the model's clean() (the API's checks), and are saved and audited by topics_app.services."""

    list_display = ("name", "enabled", "cluster", "topic_kind", "topic_pattern", "applies_to", "exempt", "updated_at")
    list_filter = ("enabled", "cluster", "topic_kind")
    search_fields = ("name", "topic_pattern")

    def save_model(self, request: HttpRequest, obj: MaskingPolicy, form: Any, change: bool) -> None:
        services.save_masking_policy_from_admin(request.user, obj, change)

    def delete_model(self, request: HttpRequest, obj: MaskingPolicy) -> None:
        services.delete_masking_policy_from_admin(request.user, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[MaskingPolicy]) -> None:
        services.delete_masking_policies_from_admin(request.user, queryset)
