"""A cluster's ACLs as the console serves them: read once, indexed, kept fresh, filtered and changed.

Reading every ACL from Kafka costs a request whose answer grows with the cluster (a hundred thousand
ACLs take a second to decode), so each process keeps the last answer with its index and answers
from it. It is read again when older than FRESH_FOR, or twenty times what the last read cost (so refreshing
takes at most a twentieth of a core), in the background while it is younger than STALE_AFTER (no
page waits on it); and at once when any process of the console changed the cluster's ACLs (a
generation counter in Redis): a change made through the console shows on the very next request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from console import error_responses, gateway, snapshots
from console.audit import audited
from console.errors import BadParameter, Conflict, ConsoleError
from console.gateway.errors import NotFound
from console.gateway.types import Acl
from security_app.acl_rules import (
    ALL_OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    AclIndex,
    Decision,
    make_acl,
    presets,
    principal,
    sort_key,
)

log = logging.getLogger(__name__)

FRESH_FOR = 5.0
STALE_AFTER = 60.0
PAGE_MAX = 1000


@dataclass(frozen=True)
class Held:
    index: AclIndex
    super_users: frozenset[str]  # declared in the cluster's settings: Kafka does not disclose them
    allow_if_no_acl: bool
    authorizer: str
    broker_has_super_users: bool
    read_at: float
    generation: bytes | None
    cost: float = 0.0  # seconds the read and the index took


_held: dict[str, Held] = {}
_refreshing: set[str] = set()
_lock = threading.Lock()


def _generation_key(cluster: str) -> str:
    return f"console:acl-generation:{cluster}"


def _generation(cluster: str) -> bytes | None:
    try:
        value = snapshots.redis_client().get(_generation_key(cluster))
    except Exception:  # noqa: BLE001 - without Redis, freshness falls back to the age alone
        return None
    return value if isinstance(value, bytes) else None


def _read(cluster: str, generation: bytes | None) -> Held:
    started = time.monotonic()
    gw = gateway.for_cluster(cluster)
    authorizer, has_supers = gw.authorizer()
    acls = gw.acls() if authorizer else []
    config = gateway.cluster_config(cluster)
    now = time.monotonic()
    held = Held(AclIndex(acls), config.super_user_set(), config.allow_everyone_if_no_acl_found, authorizer, has_supers,
                now, generation, now - started)
    with _lock:
        _held[cluster] = held
    return held


def _refresh_in_background(cluster: str, generation: bytes | None) -> None:
    with _lock:
        if cluster in _refreshing:
            return
        _refreshing.add(cluster)

    def run() -> None:
        try:
            _read(cluster, generation)
        except Exception:  # noqa: BLE001 - the next request reads again and shows the error
            log.info("background ACL read of %s failed", cluster, exc_info=True)
        finally:
            with _lock:
                _refreshing.discard(cluster)

    threading.Thread(target=run, name=f"acls-{cluster}", daemon=True).start()


def held(cluster: str) -> Held:
    """The cluster's ACLs and authorizer settings, fresh as the module's rule says."""
    gateway.cluster_config(cluster)
    generation = _generation(cluster)
    found = _held.get(cluster)
    if found is None or found.generation != generation:
        return _read(cluster, generation)
    age = time.monotonic() - found.read_at
    if age > STALE_AFTER:
        return _read(cluster, generation)
    if age > max(FRESH_FOR, 20 * found.cost):
        _refresh_in_background(cluster, generation)
    return found


def authorized(cluster: str) -> Held:
    """held(), for what needs ACLs to exist: a cluster without an authorizer is a clear refusal."""
    found = held(cluster)
    if not found.authorizer:
        raise Conflict(f"The brokers of cluster '{cluster}' run no authorizer (authorizer.class.name is not set): Kafka "
                       "keeps no ACLs and lets every client do everything.")
    return found


def _changed(cluster: str) -> None:
    """Every process reads the cluster's ACLs again on its next request."""
    with _lock:
        _held.pop(cluster, None)
    try:
        snapshots.redis_client().incr(_generation_key(cluster))
    except Exception:  # noqa: BLE001 - this process still re-reads; others within FRESH_FOR
        log.warning("could not announce an ACL change of %s to the other processes", cluster)


# Reads ---------------------------------------------------------------------------------------------
def _upper_choice(params: dict[str, str], name: str, choices: Iterable[str]) -> str | None:
    value = (params.get(name) or "").strip()
    if not value:
        return None
    upper = value.upper().replace("-", "_")
    options = tuple(choices)
    if upper not in options:
        raise BadParameter(f"'{name}' must be one of {', '.join(options)}; '{value}' is not.")
    return upper


def filters(params: Any) -> dict[str, str | None]:
    """The list's filters from query parameters, each checked."""
    p = {k: params.get(k) for k in ("principal", "host", "operation", "permission", "resource_type", "resource_name",
                                     "pattern_type")}
    return {
        "principal": principal(p["principal"]) if p["principal"] else None,
        "host": (p["host"] or "").strip() or None,
        "operation": _upper_choice(p, "operation", ALL_OPERATIONS),
        "permission": _upper_choice(p, "permission", PERMISSIONS),
        "resource_type": _upper_choice(p, "resource_type", RESOURCE_TYPES),
        "resource_name": p["resource_name"] or None,
        "pattern_type": _upper_choice(p, "pattern_type", (*PATTERN_TYPES, "ANY", "MATCH")),
    }


def select(index: AclIndex, f: dict[str, str | None]) -> list[Acl]:
    """The ACLs the filters keep, in the index's order. With a resource name, pattern_type MATCH
    keeps every ACL that covers that name (literal, `*` and prefixes, as the authorizer reads them),
    LITERAL or PREFIXED those of that exact pattern, ANY (the default) either pattern with that
    exact name. The scan starts from the smallest list an index gives."""
    name, pattern, rtype = f["resource_name"], f["pattern_type"], f["resource_type"]
    rows: Iterable[Acl]
    if name is not None and pattern == "MATCH":
        types = [rtype] if rtype else list(RESOURCE_TYPES)
        rows = sorted((a for t in types for a in index.naming(t, name)), key=sort_key)
    elif f["principal"] is not None:
        rows = index.by_principal.get(f["principal"], [])
    elif rtype:
        rows = index.by_type.get(rtype, [])
    else:
        rows = index.acls
    checks: list[Callable[[Acl], bool]] = []
    if name is not None and pattern != "MATCH":
        checks.append(lambda a: a.resource_name == name)
    if pattern in PATTERN_TYPES:
        checks.append(lambda a: a.pattern_type == pattern)
    if rtype:
        checks.append(lambda a: a.resource_type == rtype)
    for field in ("principal", "host", "operation", "permission"):
        wanted = f[field]
        if wanted is not None:
            checks.append(lambda a, field=field, wanted=wanted: getattr(a, field) == wanted)  # type: ignore[misc]
    if checks:
        return [a for a in rows if all(c(a) for c in checks)]
    return list(rows)


def listing(cluster: str, params: Any, offset: int = 0, limit: int = 200) -> dict[str, Any]:
    h = authorized(cluster)
    rows = select(h.index, filters(params))
    page = rows[offset : offset + min(limit, PAGE_MAX)]
    return {"acls": [a.as_dict() for a in page], "total": len(rows), "offset": offset, "all_acls": len(h.index.acls),
            "super_users": sorted(h.super_users), "allow_everyone_if_no_acl_found": h.allow_if_no_acl,
            "authorizer": h.authorizer, "broker_has_super_users": h.broker_has_super_users}


def matching(cluster: str, resource_type: str, name: str) -> list[Acl]:
    """The ACLs that speak to one topic or group (what a topic's or a group's page shows); none
    when the cluster has no authorizer."""
    return sorted(held(cluster).index.naming(resource_type, name), key=sort_key)


def of_principal(cluster: str, who: str) -> dict[str, Any]:
    """Everything one principal may do: its own ACLs and those for everyone (User:*), by resource."""
    who = principal(who)
    h = authorized(cluster)
    rows = sorted([*h.index.by_principal.get(who, []), *(h.index.by_principal.get("User:*", []) if who != "User:*" else [])],
                  key=sort_key)
    return {"principal": who, "super_user": who in h.super_users, "acls": rows,
            "allow_everyone_if_no_acl_found": h.allow_if_no_acl}


def check(cluster: str, *, principal_name: str, operation: str, resource_type: str, resource_name: str,
          host: str = "*") -> Decision:
    """May this principal do this operation on this resource from this host? As the broker decides."""
    probe = make_acl(principal_name=principal_name, host=host or "*", operation=operation, resource_type=resource_type,
                     resource_name=resource_name)
    if probe.operation == "ALL":
        raise BadParameter("'operation' must be one operation, not ALL: the broker checks one at a time.")
    if probe.host == "*":
        raise BadParameter("'host' must be the client's address (such as 10.0.0.5), not *.")
    h = authorized(cluster)
    return h.index.decide(probe.principal, probe.operation, probe.resource_type, probe.resource_name, probe.host,
                          h.super_users, h.allow_if_no_acl)


# Changes -------------------------------------------------------------------------------------------
def wanted_acls(d: dict[str, Any]) -> list[Acl]:
    """The ACLs a create asks for: one ACL from its fields, or a preset's set."""
    if d.get("preset"):
        return presets(d["preset"], principal_name=d["principal"], host=d.get("host") or "*", topic=d["resource_name"],
                       pattern_type=d.get("pattern_type") or "LITERAL", group=d.get("group") or "",
                       transactional_id=d.get("transactional_id") or "")
    if not d.get("operation") or not d.get("resource_type"):
        raise BadParameter("Name 'operation' and 'resource_type' (or a 'preset').")
    return [make_acl(principal_name=d["principal"], host=d.get("host") or "*", operation=d["operation"],
                     permission=d.get("permission") or "ALLOW", resource_type=d["resource_type"],
                     resource_name=d["resource_name"], pattern_type=d.get("pattern_type") or "LITERAL")]


def create(user: Any, cluster: str, acls: list[Acl], dry_run: bool) -> dict[str, Any]:
    existing = set(authorized(cluster).index.acls)
    new = [a for a in dict.fromkeys(acls) if a not in existing]
    details = {"acls": [a.as_dict() for a in acls]}
    with audited(user, "create_acls", cluster=cluster, target=acls[0].principal if acls else "", details=details,
                 dry_run=dry_run):
        if not dry_run and new:
            gateway.for_cluster(cluster).create_acls(new)
            _changed(cluster)
    return {"dry_run": dry_run, "created" if not dry_run else "would_create": [a.as_dict() for a in new],
            "already_present": [a.as_dict() for a in acls if a in existing]}


def delete(user: Any, cluster: str, acl: Acl, dry_run: bool) -> dict[str, Any]:
    with audited(user, "delete_acl", cluster=cluster, target=acl.principal, details={"acl": acl.as_dict()}, dry_run=dry_run):
        if acl not in set(authorized(cluster).index.acls):
            raise NotFound(f"There is no such ACL on cluster '{cluster}': {describe(acl)}.")
        deleted = [] if dry_run else gateway.for_cluster(cluster).delete_acls([acl])
        if not dry_run:
            _changed(cluster)
    return {"dry_run": dry_run, "deleted" if not dry_run else "would_delete": [a.as_dict() for a in (deleted or [acl])]}


def describe(acl: Acl) -> str:
    """An ACL in one line, as an operator reads it."""
    pattern = "prefix " if acl.pattern_type == "PREFIXED" else ""
    host = "" if acl.host == "*" else f" from {acl.host}"
    return f"{acl.permission} {acl.principal} {acl.operation} on {acl.resource_type} {pattern}'{acl.resource_name}'{host}"




def section(user: Any, cluster: str, resource_type: str, name: str) -> dict[str, Any] | None:
    """What a topic's or a group's page shows of its ACLs: None for a user who may not see ACLs or
    a cluster without an authorizer; the ACLs that speak to it, or the sentence why they could not
    be read (the page itself still shows)."""
    from console.auth import may

    if not may(user, "acls.view", cluster):
        return None
    try:
        found = held(cluster)
    except ConsoleError as exc:
        return {"acls": [], "error": error_responses.message(exc), "resource_type": resource_type, "name": name}
    if not found.authorizer:
        return None
    return {"acls": [a.as_dict() for a in sorted(found.index.naming(resource_type, name), key=sort_key)], "error": None,
            "resource_type": resource_type, "name": name}
