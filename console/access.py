"""Who may do what: one check of (user, action, resource) for pages, API calls and websocket messages.

An action is a name from ACTIONS; each has the least role that holds it and the kind of resource it
acts on. A user holds grants:
- an unscoped role from the Django groups `viewer`, `operator`, `admin` (superusers are admins), on
  every cluster, topic and group;
- role bindings (console.models.RoleBinding), each a role or an explicit list of actions on one
  cluster (or `*`) and, optionally, topic and consumer-group name patterns (literal, prefix, regex);
  a binding names a user or a Django group (SSO maps identity-provider groups onto those).
A user with neither gets CONSOLE_DEFAULT_ROLE (viewer unless set to `none`), so a console without
bindings behaves as before and a company can deny by default.

Kinds: `topic`/`group` actions need a grant whose patterns match the name; `cluster` actions (seeing
the brokers, the analytics page) any grant on the cluster, whose lists are then cut to what the user
may see; `cluster_wide` actions (moving replicas, elections) a grant on the cluster without name
patterns, since they touch every topic; `global` ones (the audit log, bindings) an unscoped grant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from console.errors import BadParameter

ROLES = ("viewer", "operator", "admin")

# action -> (least role that holds it, kind of resource)
ACTIONS: dict[str, tuple[str, str]] = {
    "console.view": ("viewer", "any"),
    "cluster.view": ("viewer", "cluster"),
    "topic.view": ("viewer", "topic"),
    "topic.create": ("operator", "topic"),
    "topic.edit_config": ("operator", "topic"),
    "topic.add_partitions": ("operator", "topic"),
    "topic.purge": ("operator", "topic"),
    "topic.delete": ("admin", "topic"),
    "messages.read": ("viewer", "topic"),
    "messages.produce": ("operator", "topic"),
    "topic.schemas": ("operator", "topic"),  # upload and remove the schemas records are decoded with (topics_app/schemas.py)
    "group.view": ("viewer", "group"),
    "group.reset_offsets": ("operator", "group"),
    "group.delete": ("operator", "group"),
    "reassignments.view": ("viewer", "cluster_wide"),
    "partitions.reassign": ("operator", "cluster_wide"),
    "leaders.elect": ("operator", "cluster_wide"),
    "leaders.elect_unclean": ("admin", "cluster_wide"),
    "analytics.view": ("viewer", "cluster_wide"),
    "analytics.run": ("operator", "cluster_wide"),
    "reports.schedule": ("admin", "cluster_wide"),
    "metrics.view": ("viewer", "global"),
    "audit.view": ("admin", "global"),
    "access.manage": ("admin", "global"),
    # Kafka's own security (security_app): principals and grants of every topic, so cluster-wide.
    "acls.view": ("viewer", "cluster_wide"),
    "acls.manage": ("admin", "cluster_wide"),
    "users.view": ("viewer", "cluster_wide"),
    "users.manage": ("admin", "cluster_wide"),
    "quotas.view": ("viewer", "cluster_wide"),
    "quotas.manage": ("admin", "cluster_wide"),
    # Alerts (alerts_app): they name topics and groups of the whole cluster, so cluster-wide; channels
    # (where notifications go, with their URLs and keys) are shared by every cluster, so global.
    "alerts.view": ("viewer", "cluster_wide"),
    "alerts.manage": ("operator", "cluster_wide"),
    "alert_channels.manage": ("admin", "global"),
    # Kafka Connect (connect_app): connectors name topics of the whole cluster and carry its clients'
    # configs, so cluster-wide.
    "connect.view": ("viewer", "cluster_wide"),
    "connect.manage": ("operator", "cluster_wide"),
    "connect.offsets": ("operator", "cluster_wide"),  # reset or alter a stopped connector's offsets (KIP-875)
    "transactions.view": ("viewer", "cluster_wide"),  # transactional ids and the producers of every partition
    "transactions.abort": ("admin", "cluster_wide"),  # write abort markers for a hanging transaction
    # MirrorMaker 2 flows (connect_app/mirror.py): every replicated topic's lag and groups' offsets, so cluster-wide.
    "replication.view": ("viewer", "cluster_wide"),
}
# What each action does, as a refusal says it ("You may not <words> topic 'x'.").
WORDS: dict[str, str] = {
    "console.view": "use", "cluster.view": "see", "topic.view": "see", "topic.create": "create",
    "topic.edit_config": "edit the configs of", "topic.add_partitions": "add partitions to", "topic.purge": "purge",
    "topic.delete": "delete", "messages.read": "read the messages of", "messages.produce": "produce to",
    "topic.schemas": "change the schemas of",
    "group.view": "see", "group.reset_offsets": "reset the offsets of", "group.delete": "delete",
    "reassignments.view": "see the reassignments of", "partitions.reassign": "reassign the partitions of",
    "leaders.elect": "elect the leaders of", "leaders.elect_unclean": "run an unclean election on",
    "analytics.view": "see the analytics of", "analytics.run": "run analytics on", "reports.schedule": "schedule the reports of",
    "metrics.view": "read the metrics of", "audit.view": "read the audit log of", "access.manage": "manage the access to",
    "acls.view": "see the ACLs of", "acls.manage": "change the ACLs of", "users.view": "see the SCRAM users of",
    "users.manage": "change the SCRAM users of", "quotas.view": "see the quotas of", "quotas.manage": "change the quotas of",
    "alerts.view": "see the alerts of", "alerts.manage": "change the alert rules, silences and acknowledgements of",
    "alert_channels.manage": "change the alert channels of",
    "connect.view": "see the Kafka Connect connectors of", "connect.manage": "change the Kafka Connect connectors of",
    "connect.offsets": "change the Kafka Connect connector offsets of",
    "transactions.view": "see the transactions of", "transactions.abort": "abort the transactions of",
    "replication.view": "see the MirrorMaker 2 replication of",
}
ROLE_ACTIONS: dict[str, frozenset[str]] = {
    role: frozenset(a for a, (least, _) in ACTIONS.items() if ROLES.index(least) <= ROLES.index(role)) for role in ROLES
}
PATTERN_KINDS = ("all", "literal", "prefix", "regex", "none")
ALL = "*"


def check_action(action: str) -> str:
    if action not in ACTIONS:
        raise ValueError(f"'{action}' is not an action; actions are {', '.join(ACTIONS)}.")
    return action


@dataclass(frozen=True)
class Pattern:
    """A name pattern of a binding: `all` names, none, one literal name, a prefix or a regex (whole name)."""

    kind: str = "all"
    text: str = ""

    def validated(self, what: str) -> Pattern:
        if self.kind not in PATTERN_KINDS:
            raise BadParameter(f"'{what}' kind must be one of {', '.join(PATTERN_KINDS)}, not '{str(self.kind)[:40]}'.")
        if self.kind in ("literal", "prefix", "regex") and not self.text:
            raise BadParameter(f"'{what}' needs a pattern for kind '{self.kind}'.")
        if len(self.text) > 500:
            raise BadParameter(f"'{what}' is too long (at most 500 characters).")
        if self.kind == "regex":
            try:
                re.compile(self.text)
            except re.error as exc:
                raise BadParameter(f"'{what}' is not a valid regular expression: {exc}.") from None
        return self


class Names:
    """Several patterns as one predicate: literal names in a set, prefixes in one startswith, the
    regexes in one alternation, so a list of 10,000 topics is cut in one pass."""

    def __init__(self, patterns: Iterable[Pattern]) -> None:
        kept = sorted({p for p in patterns if p.kind in ("literal", "prefix", "regex")}, key=lambda p: (p.kind, p.text))
        self.key: tuple[tuple[str, str], ...] = tuple((p.kind, p.text) for p in kept)
        self._literal = frozenset(p.text for p in kept if p.kind == "literal")
        self._prefix = tuple(p.text for p in kept if p.kind == "prefix")
        regexes = [p.text for p in kept if p.kind == "regex"]
        self._regex = re.compile("|".join(f"(?:{r})" for r in regexes)) if regexes else None

    def __call__(self, name: str) -> bool:
        return (name in self._literal or (bool(self._prefix) and name.startswith(self._prefix))
                or (self._regex is not None and self._regex.fullmatch(name) is not None))


@dataclass(frozen=True)
class Grant:
    actions: frozenset[str]
    cluster: str = ALL
    topics: Pattern = Pattern()
    groups: Pattern = Pattern()

    def on(self, cluster: str | None) -> bool:
        return self.cluster == ALL or cluster is None or self.cluster == cluster

    @property
    def unrestricted(self) -> bool:
        return self.topics.kind == "all" and self.groups.kind == "all"


def _matches(pattern: Pattern, name: str) -> bool:
    if pattern.kind == "all":
        return True
    if pattern.kind == "none":
        return False
    if pattern.kind == "literal":
        return name == pattern.text
    if pattern.kind == "prefix":
        return name.startswith(pattern.text)
    return re.fullmatch(pattern.text, name) is not None


@dataclass
class Access:
    """One user's grants, compiled once per change of the bindings."""

    grants: tuple[Grant, ...]
    superuser: bool = False
    _names: dict[tuple[str, str, str], Names | None] = field(default_factory=dict)

    def may(self, action: str, cluster: str | None = None, topic: str | None = None, group: str | None = None) -> bool:
        if self.superuser:
            return True
        kind = ACTIONS[action][1]
        for g in self.grants:
            if action not in g.actions or not g.on(cluster):
                continue
            if kind in ("any", "cluster"):
                return True
            if kind == "global" and g.cluster == ALL and g.unrestricted:
                return True
            if kind == "cluster_wide" and g.unrestricted:
                return True
            if kind == "topic" and g.topics.kind != "none" and (topic is None or _matches(g.topics, topic)):
                return True
            if kind == "group" and g.groups.kind != "none" and (group is None or _matches(g.groups, group)):
                return True
        return False

    def names(self, action: str, cluster: str, of: str) -> Callable[[str], bool] | None:
        """The predicate of the `of` ("topics" or "groups") names this user may `action` on the
        cluster; None when every name is allowed (no cut to make)."""
        key = (action, cluster, of)
        if key in self._names:
            return self._names[key]
        found: Names | None
        if self.superuser:
            found = None
        else:
            patterns = [getattr(g, of) for g in self.grants if action in g.actions and g.on(cluster)]
            found = None if any(p.kind == "all" for p in patterns) else Names(patterns)
        self._names[key] = found
        return found

    def clusters(self, action: str) -> Callable[[str], bool]:
        if self.superuser:
            return lambda name: True
        named = {g.cluster for g in self.grants if action in g.actions}
        return lambda name: ALL in named or name in named

    @property
    def role(self) -> str | None:
        """The highest role among the grants that carry a whole role (shown beside the user's name)."""
        if self.superuser:
            return "admin"
        best = None
        for g in self.grants:
            for r in ROLES:
                if ROLE_ACTIONS[r] == g.actions and (best is None or ROLES.index(r) > ROLES.index(best)):
                    best = r
        return best


def event_visible(event: dict[str, Any], topics: Callable[[str], bool] | None, groups: Callable[[str], bool] | None) -> bool:
    """Whether a user who may see these topics and groups (None: all) may see the event: one that
    names a topic or a group they may not see is not shown."""
    topic, group = event.get("topic"), (event.get("details") or {}).get("group")
    return (topics is None or not topic or topics(topic)) and (groups is None or not isinstance(group, str) or groups(group))


def compile_access(*, superuser: bool, roles: Iterable[str], bindings: Iterable[Any], default_role: str | None) -> Access:
    """A user's Access from their unscoped roles (Django groups) and the bindings that name them."""
    grants: list[Grant] = []
    held = [r for r in ROLES if r in set(roles)]
    if held:
        grants.append(Grant(ROLE_ACTIONS[held[-1]]))
    bound = list(bindings)
    for b in bound:
        actions = frozenset(b.actions) if b.actions else ROLE_ACTIONS.get(b.role, frozenset())
        grants.append(Grant(actions & frozenset(ACTIONS), b.cluster or ALL, Pattern(b.topic_kind, b.topic_pattern),
                            Pattern(b.group_kind, b.group_pattern)))
    if not held and not bound and default_role in ROLES:
        grants.append(Grant(ROLE_ACTIONS[default_role]))
    return Access(tuple(grants), superuser=superuser)
