"""console/access.py: which grants allow which (action, resource), without a database."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from console.access import ACTIONS, ROLE_ACTIONS, Names, Pattern, compile_access
from console.errors import BadParameter


@dataclass
class B:
    role: str = ""
    actions: list[str] = field(default_factory=list)
    cluster: str = "*"
    topic_kind: str = "all"
    topic_pattern: str = ""
    group_kind: str = "all"
    group_pattern: str = ""


def access(*bindings: B, roles: tuple[str, ...] = (), default: str | None = None, superuser: bool = False):
    return compile_access(superuser=superuser, roles=roles, bindings=bindings, default_role=default)


def test_every_role_holds_the_actions_of_the_roles_below_it() -> None:
    assert ROLE_ACTIONS["viewer"] < ROLE_ACTIONS["operator"] < ROLE_ACTIONS["admin"]
    assert ROLE_ACTIONS["admin"] == frozenset(ACTIONS)
    assert "topic.delete" not in ROLE_ACTIONS["operator"] and "messages.produce" not in ROLE_ACTIONS["viewer"]


def test_an_unscoped_role_acts_on_every_cluster_topic_and_group() -> None:
    a = access(roles=("operator",))
    assert a.may("topic.purge", "prod", topic="anything") and a.may("partitions.reassign", "prod")
    assert not a.may("topic.delete", "prod", topic="anything") and not a.may("audit.view")
    assert a.names("topic.view", "prod", "topics") is None  # (nothing to cut)


def test_a_prefix_binding_reaches_only_its_names_on_its_cluster() -> None:
    a = access(B(role="operator", cluster="local", topic_kind="prefix", topic_pattern="team-a.", group_kind="none"))
    assert a.may("topic.edit_config", "local", topic="team-a.orders")
    assert not a.may("topic.edit_config", "local", topic="team-b.orders")
    assert not a.may("topic.edit_config", "other", topic="team-a.orders")
    assert not a.may("group.view", "local", group="team-a")  # (groups: none)
    assert a.may("cluster.view", "local") and not a.may("cluster.view", "other")
    assert not a.may("partitions.reassign", "local")  # touches every topic: needs an unrestricted grant
    assert not a.may("metrics.view") and not a.may("access.manage")


def test_literal_and_regex_patterns_match_the_whole_name() -> None:
    a = access(B(role="viewer", topic_kind="literal", topic_pattern="orders"),
               B(role="viewer", topic_kind="regex", topic_pattern=r"pay\.[a-z]+"))
    assert a.may("topic.view", "x", topic="orders") and not a.may("topic.view", "x", topic="orders2")
    assert a.may("topic.view", "x", topic="pay.eu") and not a.may("topic.view", "x", topic="pay.eu.v2")
    names = a.names("topic.view", "x", "topics")
    assert names is not None
    assert [n for n in ("orders", "orders2", "pay.eu", "pay.eu.v2", "x") if names(n)] == ["orders", "pay.eu"]


def test_explicit_actions_give_exactly_those_actions() -> None:
    a = access(B(actions=["messages.read"], topic_kind="prefix", topic_pattern="pii-"))
    assert a.may("messages.read", "c", topic="pii-users")
    assert not a.may("topic.view", "c", topic="pii-users") and not a.may("messages.produce", "c", topic="pii-users")


def test_no_role_and_no_binding_gets_the_default_role_or_nothing() -> None:
    assert access(default="viewer").may("topic.view", "c", topic="t")
    assert not access(default=None).may("topic.view", "c", topic="t")
    assert not access(default="none").may("console.view")
    bound = access(B(role="viewer", topic_kind="literal", topic_pattern="mine"), default="viewer")
    assert not bound.may("topic.view", "c", topic="theirs")  # (a binding replaces the default, it does not add to it)


def test_a_superuser_may_do_everything_and_sees_every_name() -> None:
    a = access(superuser=True)
    assert all(a.may(action, "c", topic="t", group="g") for action in ACTIONS)
    assert a.names("topic.view", "c", "topics") is None


def test_the_role_shown_is_the_highest_whole_role_held() -> None:
    assert access(roles=("viewer", "operator")).role == "operator"
    assert access(B(role="admin", topic_kind="prefix", topic_pattern="x")).role == "admin"
    assert access(B(actions=["messages.read"])).role is None


def test_names_of_the_same_patterns_share_a_key_whatever_their_order() -> None:
    one = Names([Pattern("prefix", "a"), Pattern("literal", "b")])
    two = Names([Pattern("literal", "b"), Pattern("prefix", "a"), Pattern("all")])
    assert one.key == two.key


@pytest.mark.parametrize(("pattern", "said"), [
    (Pattern("glob", "x"), "kind must be one of"),
    (Pattern("prefix", ""), "needs a pattern"),
    (Pattern("regex", "(unclosed"), "not a valid regular expression"),
    (Pattern("literal", "x" * 501), "too long"),
])
def test_a_bad_pattern_is_refused_with_a_sentence(pattern: Pattern, said: str) -> None:
    with pytest.raises(BadParameter, match=said):
        pattern.validated("topic_pattern")


def test_every_action_has_the_words_a_refusal_uses() -> None:
    from console.access import WORDS

    assert set(WORDS) == set(ACTIONS)
