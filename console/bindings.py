"""Role bindings: validated, saved and audited here, whether they come from the access page or the API."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User

from console.access import ACTIONS, ALL, PATTERN_KINDS, ROLES, Pattern
from console.audit import audited
from console.errors import BadParameter
from console.gateway import cluster_configs
from console.gateway.errors import NotFound
from console.models import RoleBinding

FIELDS = ("subject_kind", "subject", "role", "actions", "cluster", "topic_kind", "topic_pattern", "group_kind",
          "group_pattern", "note")


def as_dict(b: RoleBinding) -> dict[str, Any]:
    return {"id": b.id, **{f: getattr(b, f) for f in FIELDS}, "created_by": b.created_by,
            "created_at": b.created_at.isoformat(), "updated_at": b.updated_at.isoformat()}


def _validated(d: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(d) - set(FIELDS))
    if unknown:
        raise BadParameter(f"Unknown field(s) {', '.join(unknown)}; a binding has {', '.join(FIELDS)}.")
    out = {f: d[f] for f in FIELDS if f in d}
    for f in FIELDS:
        if f in out and f != "actions" and not isinstance(out[f], str):
            raise BadParameter(f"'{f}' must be a string.")
    if out.get("subject_kind", "user") not in ("user", "group"):
        raise BadParameter("'subject_kind' must be user or group.")
    if "subject" in out and not out["subject"].strip():
        raise BadParameter("'subject' names the user or group the binding is for.")
    if out.get("role", "") not in ("", *ROLES):
        raise BadParameter(f"'role' must be one of {', '.join(ROLES)} (or empty with 'actions').")
    actions = out.get("actions", [])
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise BadParameter("'actions' must be a list of action names.")
    bad = [a for a in actions if a not in ACTIONS]
    if bad:
        raise BadParameter(f"Unknown action(s) {', '.join(bad)}; actions are {', '.join(ACTIONS)}.")
    cluster = out.get("cluster", ALL)
    if cluster != ALL and cluster not in {c.name for c in cluster_configs()}:
        raise BadParameter(f"'cluster' must be '*' or a configured cluster, not '{cluster[:64]}'.")
    for kind, text in (("topic_kind", "topic_pattern"), ("group_kind", "group_pattern")):
        if out.get(kind, "all") not in PATTERN_KINDS:
            raise BadParameter(f"'{kind}' must be one of {', '.join(PATTERN_KINDS)}.")
        Pattern(out.get(kind, "all"), out.get(text, "")).validated(text)
    return out


def _check_whole(b: RoleBinding) -> None:
    if not b.role and not b.actions:
        raise BadParameter("A binding needs a 'role' or a list of 'actions'.")
    exists = (User if b.subject_kind == "user" else Group).objects.filter(
        **{"username" if b.subject_kind == "user" else "name": b.subject}).exists()
    if not exists:
        raise BadParameter(f"There is no {b.subject_kind} named '{b.subject[:150]}'.")


def create(user: Any, data: dict[str, Any]) -> RoleBinding:
    fields = _validated(data)
    b = RoleBinding(**fields, created_by=user.get_username())
    _check_whole(b)
    with audited(user, "create_role_binding", target=f"{b.subject_kind}:{b.subject}", details=fields) as entry:
        b.save()
        entry["id"] = b.id
    return b


def get(binding_id: int) -> RoleBinding:
    found = RoleBinding.objects.filter(pk=binding_id).first()
    if found is None:
        raise NotFound(f"There is no role binding #{binding_id}.")
    return found


def update(user: Any, binding_id: int, data: dict[str, Any]) -> RoleBinding:
    b = get(binding_id)
    fields = _validated(data)
    for f, v in fields.items():
        setattr(b, f, v)
    _check_whole(b)
    with audited(user, "update_role_binding", target=f"{b.subject_kind}:{b.subject}", details={"id": b.id, **fields}):
        b.save()
    return b


def delete(user: Any, binding_id: int) -> None:
    b = get(binding_id)
    with audited(user, "delete_role_binding", target=f"{b.subject_kind}:{b.subject}", details=as_dict(b)):
        b.delete()
