"""/api/v1/masking-policies/: admins list, create, change and delete policies; every change is audited;
every mistake is a 400 naming the field; other roles are refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console.models import AuditEntry
from topics_app.models import MaskingPolicy

URL = "/api/v1/masking-policies/"
GOOD = {"name": "cards", "topic_kind": "prefix", "topic_pattern": "payments.", "applies_to": ["viewer", "support"],
        "exempt": ["admin"], "targets": [{"kind": "json_path", "path": "$.cards[*].number"}, {"kind": "header", "name": "auth"}]}


def post(c: Client, body: dict[str, Any]) -> Any:
    return c.post(URL, body, content_type="application/json")


def test_an_admin_creates_lists_changes_and_deletes_a_policy_and_each_change_is_audited(client_as) -> None:
    admin = client_as("admin")
    created = post(admin, GOOD)
    assert created.status_code == 201, created.content
    policy = created.json()
    assert policy["cluster"] == "*" and policy["enabled"] is True and policy["applies_to"] == ["support", "viewer"]
    assert [p["name"] for p in admin.get(URL).json()["results"]] == ["cards"]
    changed = admin.patch(f"{URL}{policy['id']}/", {"enabled": False, "cluster": "local"}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["enabled"] is False and changed.json()["cluster"] == "local"
    assert admin.delete(f"{URL}{policy['id']}/").status_code == 204
    assert not MaskingPolicy.objects.exists()
    actions = list(AuditEntry.objects.filter(action__endswith="masking_policy").order_by("id").values_list("action", "target"))
    assert actions == [("create_masking_policy", "cards"), ("update_masking_policy", "cards"), ("delete_masking_policy", "cards")]


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_other_roles_may_not_read_or_change_policies(client_as, role: str) -> None:
    c = client_as(role)
    assert c.get(URL).status_code == 403
    assert post(c, GOOD).status_code == 403
    assert not MaskingPolicy.objects.exists()


@pytest.mark.parametrize(("change", "says"), [
    ({"topic_kind": "regex", "topic_pattern": "(orders"}, "'topic_pattern' is not a valid regular expression"),
    ({"topic_kind": "glob"}, "'topic_kind' must be one of literal, prefix, regex"),
    ({"targets": [{"kind": "json_path", "path": "$.cards[x]"}]}, "'targets[0]'.path: it is not a valid JSON path"),
    ({"targets": [{"kind": "column", "name": "x"}]}, "'targets[0]'.kind must be one of json_path, header, key, value"),
    ({"targets": []}, "'targets' must be a non-empty list"),
    ({"applies_to": "viewer"}, "'applies_to' must be a list of role or group names"),
    ({"exempt": [""]}, "'exempt"),
    ({"cluster": " "}, "'cluster' must not be empty"),
    ({"colour": "red"}, "'colour' is not a field of this request"),
])
def test_bad_policies_are_refused_with_a_sentence_naming_the_field(client_as, change: dict[str, Any], says: str) -> None:
    response = post(client_as("admin"), {**GOOD, **change})
    assert response.status_code == 400 and says in response.json()["detail"], response.content
    assert not MaskingPolicy.objects.exists()


def test_a_second_policy_of_the_same_name_and_an_unknown_id_are_clear_refusals(client_as) -> None:
    admin = client_as("admin")
    assert post(admin, GOOD).status_code == 201
    again = post(admin, GOOD)
    assert again.status_code == 400 and "already exists" in again.json()["detail"]
    missing = admin.patch(f"{URL}999999/", {"enabled": False}, content_type="application/json")
    assert missing.status_code == 404 and "no masking policy 999999" in missing.json()["detail"]
    bad_patch = admin.patch(f"{URL}{MaskingPolicy.objects.get().pk}/", {"targets": "key"}, content_type="application/json")
    assert bad_patch.status_code == 400 and "'targets'" in bad_patch.json()["detail"]


def test_django_admin_checks_a_policy_like_the_api_and_audits_the_change(client_as) -> None:
    admin = client_as("admin")
    form = {"name": "pii", "cluster": "*", "topic_kind": "regex", "topic_pattern": "(orders", "applies_to": "[]",
            "exempt": '["admin"]', "targets": '[{"kind": "key"}]', "enabled": "on"}
    refused = admin.post("/admin/topics_app/maskingpolicy/add/", form)
    assert refused.status_code == 200 and "is not a valid regular expression" in refused.content.decode()
    assert not MaskingPolicy.objects.exists()
    saved = admin.post("/admin/topics_app/maskingpolicy/add/", {**form, "topic_pattern": "orders.*"})
    assert saved.status_code == 302 and MaskingPolicy.objects.get().topic_pattern == "orders.*"
    assert AuditEntry.objects.get(action="create_masking_policy").details["via"] == "admin"
