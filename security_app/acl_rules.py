"""Kafka ACLs as values, their validation, and the effective-permission check.

The check decides as KRaft's StandardAuthorizer does, so the console's answer is the broker's:
- a super user may do anything;
- an ACL applies when its resource type matches, its pattern matches the name (LITERAL: equal, or
  the literal `*`; PREFIXED: the name starts with it), its principal is the caller's or `User:*`,
  and its host is the caller's address or `*`;
- a DENY applies for its own operation or ALL; an ALLOW also for what it implies (DESCRIBE by READ,
  WRITE, DELETE, ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS);
- any applying DENY wins over every ALLOW; with neither, the answer is
  `allow.everyone.if.no.acl.found` only when no ACL at all names the resource, else deny.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from console.errors import BadParameter
from console.gateway.types import Acl

RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
PERMISSIONS = ("ALLOW", "DENY")
# What each resource type can be granted, as Kafka's AclEntry lists it (ALL everywhere).
OPERATIONS: dict[str, tuple[str, ...]] = {
    "TOPIC": ("ALL", "READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"),
    "GROUP": ("ALL", "READ", "DESCRIBE", "DELETE"),
    "CLUSTER": ("ALL", "CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER",
                "DESCRIBE"),
    "TRANSACTIONAL_ID": ("ALL", "DESCRIBE", "WRITE"),
    "DELEGATION_TOKEN": ("ALL", "DESCRIBE"),
    "USER": ("ALL", "CREATE_TOKENS", "DESCRIBE_TOKENS"),
}
ALL_OPERATIONS: tuple[str, ...] = tuple(dict.fromkeys(op for ops in OPERATIONS.values() for op in ops))
CLUSTER_NAME = "kafka-cluster"  # the one name a CLUSTER resource has
WILDCARD = "*"
IMPLIES_DESCRIBE = frozenset({"DESCRIBE", "READ", "WRITE", "DELETE", "ALTER"})
IMPLIES_DESCRIBE_CONFIGS = frozenset({"DESCRIBE_CONFIGS", "ALTER_CONFIGS"})


def _choice(value: str, choices: Iterable[str], field: str) -> str:
    upper = value.strip().upper().replace("-", "_")
    options = tuple(choices)
    if upper not in options:
        raise BadParameter(f"'{field}' must be one of {', '.join(options)}; '{value}' is not.")
    return upper


def principal(value: str) -> str:
    """A principal as Kafka writes it, `Type:name` (a bare name is a User)."""
    value = value.strip()
    if not value:
        raise BadParameter("'principal' must not be empty: name it as User:<name> (or User:* for everyone).")
    if ":" not in value:
        value = f"User:{value}"
    kind, name = value.split(":", 1)
    if not kind or not name:
        raise BadParameter(f"'principal' must be Type:name, such as User:alice; '{value}' is not.")
    if len(value) > 1000:
        raise BadParameter("'principal' must be at most 1000 characters long.")
    return f"{kind}:{name}"


def make_acl(*, principal_name: str, host: str = WILDCARD, operation: str, permission: str = "ALLOW",
             resource_type: str, resource_name: str, pattern_type: str = "LITERAL") -> Acl:
    """One ACL from user input, checked as the broker would check it, with a sentence for each mistake."""
    rtype = _choice(resource_type, RESOURCE_TYPES, "resource_type")
    op = _choice(operation, ALL_OPERATIONS, "operation")
    if op not in OPERATIONS[rtype]:
        raise BadParameter(f"Operation {op} does not apply to a {rtype} resource; it takes {', '.join(OPERATIONS[rtype])}.")
    pattern = _choice(pattern_type, PATTERN_TYPES, "pattern_type")
    perm = _choice(permission, PERMISSIONS, "permission")
    name = resource_name
    if not name:
        raise BadParameter("'resource_name' must not be empty (use * for every resource of the type).")
    if len(name) > 1000:
        raise BadParameter("'resource_name' must be at most 1000 characters long.")
    if rtype == "CLUSTER" and (name != CLUSTER_NAME or pattern != "LITERAL"):
        raise BadParameter(f"A CLUSTER resource is always the LITERAL name '{CLUSTER_NAME}'.")
    if name == WILDCARD and pattern == "PREFIXED":
        raise BadParameter("A PREFIXED pattern cannot be '*': use the LITERAL '*' for every resource of the type.")
    host = (host or WILDCARD).strip()
    if any(c.isspace() for c in host) or len(host) > 255:
        raise BadParameter(f"'host' must be an IP address or *; '{host}' is not.")
    return Acl(rtype, pattern, name, principal(principal_name), host, op, perm)


def operation_applies(acl: Acl, operation: str) -> bool:
    """Whether the ACL speaks to this operation (ALLOW with its implications, DENY only for itself)."""
    if acl.operation in ("ALL", operation):
        return True
    if acl.permission != "ALLOW":
        return False
    if operation == "DESCRIBE":
        return acl.operation in IMPLIES_DESCRIBE
    if operation == "DESCRIBE_CONFIGS":
        return acl.operation in IMPLIES_DESCRIBE_CONFIGS
    return False


@dataclass(frozen=True)
class Decision:
    allowed: bool
    decided_by: tuple[Acl, ...]
    reason: str  # "super user", "deny", "allow", "no ACL for the resource", "no matching ALLOW"

    def as_dict(self) -> dict[str, object]:
        return {"allowed": self.allowed, "decided_by": [a.as_dict() for a in self.decided_by], "reason": self.reason}


def sort_key(acl: Acl) -> tuple[str, ...]:
    return (acl.resource_type, acl.pattern_type, acl.resource_name, acl.principal, acl.host, acl.operation, acl.permission)


class AclIndex:
    """A cluster's ACLs, indexed so one check reads only the ACLs that can name the resource (the
    literal name, the literal `*`, and one lookup per prefix of the name), and a list filtered by
    principal or resource type reads only that principal's or that type's ACLs."""

    def __init__(self, acls: Iterable[Acl]) -> None:
        self.acls: tuple[Acl, ...] = tuple(sorted(set(acls), key=sort_key))
        self._literal: dict[tuple[str, str], list[Acl]] = defaultdict(list)
        self._prefixed: dict[tuple[str, str], list[Acl]] = defaultdict(list)
        self._prefix_lengths: dict[str, set[int]] = defaultdict(set)
        self.by_principal: dict[str, list[Acl]] = defaultdict(list)
        self.by_type: dict[str, list[Acl]] = defaultdict(list)
        for acl in self.acls:
            self.by_principal[acl.principal].append(acl)
            self.by_type[acl.resource_type].append(acl)
            if acl.pattern_type == "PREFIXED":
                self._prefixed[(acl.resource_type, acl.resource_name)].append(acl)
                self._prefix_lengths[acl.resource_type].add(len(acl.resource_name))
            else:
                self._literal[(acl.resource_type, acl.resource_name)].append(acl)
        self._lengths = {rtype: tuple(sorted(lengths)) for rtype, lengths in self._prefix_lengths.items()}

    def naming(self, resource_type: str, name: str) -> list[Acl]:
        """Every ACL whose pattern covers the resource, whatever its principal, host or operation."""
        found = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            found += self._literal.get((resource_type, WILDCARD), ())
        for length in self._lengths.get(resource_type, ()):
            if length <= len(name):
                found += self._prefixed.get((resource_type, name[:length]), ())
        return found

    def decide(self, principal_name: str, operation: str, resource_type: str, name: str, host: str,
               super_users: frozenset[str] = frozenset(), allow_if_no_acl: bool = False) -> Decision:
        who = principal(principal_name)
        if who in super_users:
            return Decision(True, (), "super user")
        acls = self.naming(resource_type, name)
        principals = {who, "User:*"}
        applying = [a for a in acls if a.principal in principals and a.host in (WILDCARD, host) and operation_applies(a, operation)]
        denies = tuple(a for a in applying if a.permission == "DENY")
        if denies:
            return Decision(False, denies, "deny")
        allows = tuple(a for a in applying if a.permission == "ALLOW")
        if allows:
            return Decision(True, allows, "allow")
        if not acls:
            return Decision(allow_if_no_acl, (), "no ACL for the resource")
        return Decision(False, (), "no matching ALLOW")


def presets(preset: str, *, principal_name: str, host: str, topic: str, pattern_type: str, group: str = "",
            transactional_id: str = "") -> list[Acl]:
    """The ACL sets operators grant most, as kafka-acls' --producer / --consumer options and their
    usual companions write them."""
    def grant(rtype: str, name: str, op: str, pattern: str = pattern_type) -> Acl:
        return make_acl(principal_name=principal_name, host=host, operation=op, resource_type=rtype, resource_name=name,
                        pattern_type=pattern)

    if preset == "producer":
        return [grant("TOPIC", topic, op) for op in ("WRITE", "DESCRIBE", "CREATE")]
    if preset == "consumer":
        if not group:
            raise BadParameter("The consumer preset needs 'group': the consumer group (or a prefix of it) it reads as.")
        return [grant("TOPIC", topic, "READ"), grant("TOPIC", topic, "DESCRIBE"), grant("GROUP", group, "READ")]
    if preset == "transactional_producer":
        if not transactional_id:
            raise BadParameter("The transactional producer preset needs 'transactional_id' (or a prefix of it).")
        return [*presets("producer", principal_name=principal_name, host=host, topic=topic, pattern_type=pattern_type),
                grant("TRANSACTIONAL_ID", transactional_id, "WRITE"), grant("TRANSACTIONAL_ID", transactional_id, "DESCRIBE")]
    if preset == "prefix_admin":
        if pattern_type != "PREFIXED":
            raise BadParameter("The prefix admin preset grants a prefix: set 'pattern_type' to PREFIXED.")
        return [grant("TOPIC", topic, "ALL"), grant("GROUP", group or topic, "ALL")]
    raise BadParameter(f"'preset' must be one of producer, consumer, transactional_producer, prefix_admin; '{preset}' is not.")


PRESETS = ("producer", "consumer", "transactional_producer", "prefix_admin")
