"""Single sign-on: an identity provider's groups become a console role.

Both sign-on backends (OpenID Connect in console/sso_oidc.py, LDAP in console/sso_ldap.py) call
`assign_role` at every login, so a change of groups at the provider counts from the next login.
The mapping itself is `groups_to_role`; the provider's raw group names are kept on the user's
session (`SESSION_GROUPS`) so that scoped role bindings can be mapped from them later.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest

from console.env import SettingError

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

# console.auth.ROLES, lowest first (a test holds them equal): the settings read the role maps before
# Django's apps are loaded, when console.auth, which imports the user model, cannot be imported.
ROLES = ("viewer", "operator", "admin")
SESSION_GROUPS = "sso_groups"
SESSION_PROVIDER = "sso_provider"


class SignOnRefused(PermissionDenied):
    """The provider vouched for the user, but the console will not let them in; the message says why."""


def parse_role_map(name: str, raw: str) -> dict[str, str]:
    """`{"kafka-admins": "admin", "kafka-ops": "operator"}` from the variable `name`; group names are
    compared without regard to case (LDAP names and DNs are case-insensitive)."""
    if not raw.strip():
        return {}
    try:
        parsed: Any = json.loads(raw)
    except ValueError as exc:
        raise SettingError(f"{name} must be a JSON object of group name to role, not {raw!r} ({exc})") from None
    if not isinstance(parsed, dict):
        raise SettingError(f"{name} must be a JSON object of group name to role, e.g. {{\"kafka-ops\": \"operator\"}}")
    mapping: dict[str, str] = {}
    for group, role in parsed.items():
        if role not in ROLES:
            raise SettingError(f"{name} maps group {group!r} to {role!r}; roles are {', '.join(ROLES)}")
        mapping[str(group).casefold()] = role
    return mapping


def mapped_role(groups: Iterable[str], role_map: Mapping[str, str]) -> str | None:
    """The highest role any of the groups maps to; None when no group is mapped."""
    found = {role_map.get(group.casefold()) for group in groups}
    return next((role for role in reversed(ROLES) if role in found), None)


def groups_to_role(groups: Iterable[str], provider: str = "oidc", scoped: bool = False) -> str | None:
    """The console role for a user of `provider` ("oidc" or "ldap") in these groups: the highest
    mapped one; else, for a user whose groups have role bindings (`scoped`), no role (the bindings
    say what they may do); else viewer, or a refusal when CONSOLE_SSO_REQUIRE_MAPPED_GROUP is set."""
    role_map: Mapping[str, str] = getattr(settings, "CONSOLE_SSO_ROLE_MAPS", {}).get(provider, {})
    role = mapped_role(groups, role_map)
    if role is not None:
        return role
    if scoped:
        return None
    if getattr(settings, "CONSOLE_SSO_REQUIRE_MAPPED_GROUP", False):
        raise SignOnRefused("None of your groups at the sign-in provider is given a console role; ask an admin "
                            "to map one of them.")
    return "viewer"


def check_not_local(user: AbstractBaseUser) -> None:
    """A local account (one with a password of its own) is never taken over by a provider's user of
    the same name: that would let whoever names an account at the provider become a local admin."""
    if user.pk is not None and user.has_usable_password():
        raise SignOnRefused(f"The console has a local account named '{user.get_username()}'; log in with its "
                            "password, or ask an admin to remove it so that sign-on can use the name.")


def provider_group(provider: str, group: str) -> str:
    """The Django group that stands for a provider's group: prefixed, so that a provider group
    named `admin` can never be the console's admin role; role bindings name it (`oidc:team-a`)."""
    return f"{provider}:{group}"[:150]


def assign_role(user: Any, groups: Iterable[str], provider: str) -> str | None:
    """Give the user (saved) the role its groups map to, replacing any earlier role, put them in the
    provider's groups as Django groups (for scoped role bindings), and remember the groups for the
    session. Raises SignOnRefused when the user may not log in."""
    from django.contrib.auth.models import Group

    from console.models import RoleBinding

    kept = sorted(set(groups))
    names = {provider_group(provider, g) for g in kept}
    scoped = RoleBinding.objects.filter(subject_kind="group", subject__in=names).exists()
    role = groups_to_role(kept, provider, scoped=scoped)
    current = [g for g in user.groups.all() if g.name in ROLES]
    if [g.name for g in current] != ([role] if role else []):
        user.groups.remove(*current)
        if role is not None:
            user.groups.add(Group.objects.get_or_create(name=role)[0])
    stale = [g for g in user.groups.all() if g.name.startswith(f"{provider}:") and g.name not in names]
    user.groups.remove(*stale)
    user.groups.add(*(Group.objects.get_or_create(name=n)[0] for n in sorted(names)))
    user.sso_groups = kept
    user.sso_provider = provider
    return role


@receiver(user_logged_in)
def _remember_groups(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    """The provider's groups, as given at this login, stay on the session (for scoped roles)."""
    if request is None or not hasattr(request, "session"):
        return
    groups = getattr(user, "sso_groups", None)
    if groups is None:
        request.session.pop(SESSION_GROUPS, None)
        request.session.pop(SESSION_PROVIDER, None)
        return
    request.session[SESSION_GROUPS] = list(groups)
    request.session[SESSION_PROVIDER] = getattr(user, "sso_provider", "")


def audit_refusal(request: HttpRequest | None, username: str, provider: str, reason: str) -> None:
    """A login the provider vouched for but the console refused goes to the audit log with its reason."""
    from console.audit import record

    record(None, "login", username=username, outcome="refused", details={"via": provider, "reason": reason},
           request=request)
