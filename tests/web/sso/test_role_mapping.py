"""The mapping from an identity provider's groups to a console role (console/sso.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from console import auth
from console.env import SettingError
from console.sso import ROLES, SignOnRefused, assign_role, groups_to_role, mapped_role, parse_role_map

ROLE_MAP = parse_role_map("CONSOLE_OIDC_ROLE_MAP", '{"kafka-admins": "admin", "kafka-ops": "operator", "Readers": "viewer"}')


def test_the_sign_on_roles_are_the_consoles_roles_in_the_same_order() -> None:
    assert ROLES == auth.ROLES


def test_the_highest_mapped_role_wins() -> None:
    assert mapped_role(["kafka-ops", "kafka-admins", "other"], ROLE_MAP) == "admin"
    assert mapped_role(["readers", "kafka-ops"], ROLE_MAP) == "operator"


def test_group_names_are_compared_without_regard_to_case() -> None:
    assert mapped_role(["KAFKA-OPS"], ROLE_MAP) == "operator"


def test_no_mapped_group_maps_to_nothing() -> None:
    assert mapped_role([], ROLE_MAP) is None
    assert mapped_role(["kafka"], ROLE_MAP) is None


def test_a_user_in_no_mapped_group_is_a_viewer(settings) -> None:
    settings.CONSOLE_SSO_ROLE_MAPS = {"oidc": ROLE_MAP, "ldap": {}}
    settings.CONSOLE_SSO_REQUIRE_MAPPED_GROUP = False
    assert groups_to_role(["somewhere-else"]) == "viewer"
    assert groups_to_role(["kafka-ops"]) == "operator"
    assert groups_to_role(["kafka-ops"], "ldap") == "viewer"  # each provider has its own map


def test_a_user_in_no_mapped_group_is_refused_when_the_setting_says_so(settings) -> None:
    settings.CONSOLE_SSO_ROLE_MAPS = {"oidc": ROLE_MAP, "ldap": {}}
    settings.CONSOLE_SSO_REQUIRE_MAPPED_GROUP = True
    with pytest.raises(SignOnRefused, match="None of your groups"):
        groups_to_role(["somewhere-else"])
    assert groups_to_role(["kafka-admins"]) == "admin"


@pytest.mark.parametrize(("raw", "message"), [
    ("kafka-ops=operator", "must be a JSON object"),
    ('["kafka-ops"]', "must be a JSON object"),
    ('{"kafka-ops": "root"}', "maps group 'kafka-ops' to 'root'; roles are viewer, operator, admin"),
])
def test_a_bad_role_map_stops_the_console_with_a_sentence(raw: str, message: str) -> None:
    with pytest.raises(SettingError, match=message):
        parse_role_map("CONSOLE_OIDC_ROLE_MAP", raw)


def test_an_empty_role_map_maps_nothing() -> None:
    assert parse_role_map("CONSOLE_LDAP_ROLE_MAP", " ") == {}


@pytest.mark.django_db
def test_a_login_replaces_the_earlier_role_and_keeps_other_groups(settings) -> None:
    settings.CONSOLE_SSO_ROLE_MAPS = {"oidc": ROLE_MAP, "ldap": {}}
    user = User.objects.create_user("sso-user")
    user.groups.add(Group.objects.get_or_create(name="admin")[0], Group.objects.get_or_create(name="team-a")[0])
    assert assign_role(user, ["kafka-ops", "kafka-ops", "x"], "oidc") == "operator"
    assert sorted(user.groups.values_list("name", flat=True)) == ["oidc:kafka-ops", "oidc:x", "operator", "team-a"]
    assert user.sso_groups == ["kafka-ops", "x"]  # type: ignore[attr-defined]
    assert auth.role_of(User.objects.get(pk=user.pk)) == "operator"


@pytest.mark.django_db
def test_a_provider_group_with_a_role_binding_gives_its_scope_and_no_role_everywhere(settings) -> None:
    from console.models import RoleBinding

    settings.CONSOLE_SSO_ROLE_MAPS = {"oidc": ROLE_MAP, "ldap": {}}
    RoleBinding.objects.create(subject_kind="group", subject="oidc:team-a", role="operator", topic_kind="prefix",
                               topic_pattern="team-a.", group_kind="prefix", group_pattern="team-a")
    user = User.objects.create_user("sso-team-a")
    assert assign_role(user, ["team-a"], "oidc") is None  # (no mapped role: the binding says what they may do)
    fresh = User.objects.get(pk=user.pk)
    assert auth.may(fresh, "topic.purge", "local", topic="team-a.orders")
    assert not auth.may(fresh, "topic.view", "local", topic="team-b.orders")
    # A provider group named like a console role is a group of the provider, never the role.
    assert assign_role(User.objects.get(pk=user.pk), ["team-a", "admin"], "oidc") is None
    again = User.objects.get(pk=user.pk)
    assert sorted(again.groups.values_list("name", flat=True)) == ["oidc:admin", "oidc:team-a"]
    assert not auth.may(again, "topic.delete", "local", topic="team-b.orders")
    # Leaving the group at the provider drops the scope at the next login.
    assign_role(again, ["elsewhere"], "oidc")
    assert sorted(User.objects.get(pk=user.pk).groups.values_list("name", flat=True)) == ["oidc:elsewhere", "viewer"]

