"""The effective-permission check's rules, case by case (the integration test checks them against a broker)."""

from __future__ import annotations

import pytest

from console.errors import BadParameter
from security_app.acl_rules import AclIndex, make_acl, presets


def acl(principal="User:bob", op="READ", rtype="TOPIC", name="orders", pattern="LITERAL", perm="ALLOW", host="*"):
    return make_acl(principal_name=principal, host=host, operation=op, permission=perm, resource_type=rtype,
                    resource_name=name, pattern_type=pattern)


def decide(acls, principal="User:bob", op="READ", rtype="TOPIC", name="orders", host="10.0.0.1", **kw):
    return AclIndex(acls).decide(principal, op, rtype, name, host, **kw)


def test_an_allow_for_the_literal_name_allows_and_names_itself():
    d = decide([acl()])
    assert d.allowed and d.reason == "allow" and d.decided_by == (acl(),)


def test_deny_wins_over_allow_and_names_the_deny():
    deny = acl(perm="DENY", op="ALL", name="ord", pattern="PREFIXED")
    d = decide([acl(), deny])
    assert not d.allowed and d.decided_by == (deny,)


def test_prefixed_covers_names_that_start_with_it_only():
    assert decide([acl(name="ord", pattern="PREFIXED")]).allowed
    assert not decide([acl(name="orx", pattern="PREFIXED")]).allowed
    assert not decide([acl(name="ord")]).allowed  # a literal prefix of the name is not the name


def test_the_literal_wildcard_covers_every_name_and_user_star_every_principal():
    assert decide([acl(name="*")]).allowed
    assert decide([acl(principal="User:*")]).allowed
    assert not decide([acl(principal="User:carol")]).allowed


def test_describe_is_implied_by_read_write_delete_alter_but_not_by_a_deny():
    for op in ("READ", "WRITE", "DELETE", "ALTER"):
        assert decide([acl(op=op)], op="DESCRIBE").allowed, op
    assert not decide([acl(op="CREATE")], op="DESCRIBE").allowed
    assert not decide([acl(op="ALTER_CONFIGS")], op="DESCRIBE").allowed
    # A DENY READ does not deny DESCRIBE (only ALLOWs imply).
    assert decide([acl(op="DESCRIBE"), acl(op="READ", perm="DENY")], op="DESCRIBE").allowed


def test_describe_configs_is_implied_by_alter_configs():
    assert decide([acl(op="ALTER_CONFIGS")], op="DESCRIBE_CONFIGS").allowed
    assert not decide([acl(op="DESCRIBE_CONFIGS")], op="ALTER_CONFIGS").allowed


def test_host_must_match_unless_star():
    assert not decide([acl(host="10.0.0.2")]).allowed
    assert decide([acl(host="10.0.0.1")]).allowed


def test_no_acl_for_the_resource_follows_allow_everyone_otherwise_deny():
    other = acl(name="payments")
    assert not decide([other]).allowed
    assert decide([other], allow_if_no_acl=True).allowed
    assert decide([other], allow_if_no_acl=True).reason == "no ACL for the resource"
    # An ACL for someone else on this resource takes the default away.
    d = decide([acl(principal="User:carol")], allow_if_no_acl=True)
    assert not d.allowed and d.reason == "no matching ALLOW"


def test_super_users_may_do_anything():
    d = decide([acl(perm="DENY", op="ALL")], super_users=frozenset({"User:bob"}))
    assert d.allowed and d.reason == "super user"


def test_resource_types_do_not_mix():
    assert not decide([acl(rtype="GROUP")]).allowed


@pytest.mark.parametrize(("fields", "words"), [
    ({"op": "FLY"}, "'operation' must be one of"),
    ({"op": "WRITE", "rtype": "GROUP"}, "does not apply to a GROUP"),
    ({"rtype": "CLUSTER", "op": "ALTER", "name": "kafka-cluster", "pattern": "PREFIXED"}, "always the LITERAL name"),
    ({"name": "*", "pattern": "PREFIXED"}, "cannot be '*'"),
    ({"pattern": "REGEX"}, "'pattern_type' must be one of"),
    ({"perm": "MAYBE"}, "'permission' must be one of"),
    ({"principal": "User:"}, "Type:name"),
    ({"host": "10.0.0.1 10.0.0.2"}, "'host' must be"),
])
def test_bad_acls_get_a_sentence(fields, words):
    with pytest.raises(BadParameter, match=words):
        acl(**fields)


def test_a_bare_name_is_a_user():
    assert acl(principal="bob").principal == "User:bob"


def test_presets():
    consumer = presets("consumer", principal_name="bob", host="*", topic="orders", pattern_type="LITERAL", group="billing")
    assert {(a.resource_type, a.operation, a.resource_name) for a in consumer} == {
        ("TOPIC", "READ", "orders"), ("TOPIC", "DESCRIBE", "orders"), ("GROUP", "READ", "billing")}
    with pytest.raises(BadParameter, match="needs 'group'"):
        presets("consumer", principal_name="bob", host="*", topic="orders", pattern_type="LITERAL")
    tx = presets("transactional_producer", principal_name="bob", host="*", topic="o", pattern_type="PREFIXED",
                 transactional_id="tx-")
    assert ("TRANSACTIONAL_ID", "WRITE", "tx-", "PREFIXED") in {(a.resource_type, a.operation, a.resource_name, a.pattern_type)
                                                               for a in tx}
    with pytest.raises(BadParameter, match="PREFIXED"):
        presets("prefix_admin", principal_name="bob", host="*", topic="team-", pattern_type="LITERAL")
