"""Kafka's rules for client quotas: which keys an entity may have, valid values, and which quota applies
to a connection by Kafka's precedence; pure, no I/O.

An entity is a dict of type -> name, types "user", "client-id" and "ip", name None for that type's
default entity (Kafka's `<default>`). Quotas are resolved per key: each of Kafka's quota managers
(produce, fetch, request, controller mutation) looks for the first entity in PRECEDENCE that sets its
own key, so a user's produce quota and a client-id's fetch quota can apply to the same connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from console.errors import BadParameter

# Whole bytes per second; the rest are fractions (a percentage of one request thread, mutations/s, connections/s).
BYTE_RATES = ("producer_byte_rate", "consumer_byte_rate")
CLIENT_KEYS = (*BYTE_RATES, "request_percentage", "controller_mutation_rate")
IP_KEYS = ("connection_creation_rate",)
KEYS = (*CLIENT_KEYS, *IP_KEYS)
LABELS = {"producer_byte_rate": "Produce", "consumer_byte_rate": "Fetch", "request_percentage": "Request time",
          "controller_mutation_rate": "Controller mutations", "connection_creation_rate": "New connections"}
ENTITY_TYPES = ("user", "client-id", "ip")
MAX_NAME_LENGTH = 1000  # a console limit: Kafka's own is the request size
MAX_VALUE = 2**63 - 1

Entity = dict[str, "str | None"]

# Kafka's order (its documentation, "Quotas"): the first entity that sets a key gives that key's quota.
# "name" stands for the connection's own user or client-id, None for the default entity.
PRECEDENCE: tuple[tuple[tuple[str, str | None], ...], ...] = (
    (("user", "name"), ("client-id", "name")),
    (("user", "name"), ("client-id", None)),
    (("user", "name"),),
    (("user", None), ("client-id", "name")),
    (("user", None), ("client-id", None)),
    (("user", None),),
    (("client-id", "name"),),
    (("client-id", None),),
)
IP_PRECEDENCE: tuple[tuple[tuple[str, str | None], ...], ...] = ((("ip", "name"),), (("ip", None),))


def shown(key: str, value: float) -> str:
    """A quota as a person reads it: byte rates in KiB/s or MiB/s, the rest with their unit."""
    number = int(value) if value == int(value) else value
    if key in BYTE_RATES:
        for unit, size in (("GiB/s", 2**30), ("MiB/s", 2**20), ("KiB/s", 2**10)):
            if value >= size:
                return f"{value / size:.4g} {unit}"
        return f"{number} B/s"
    return f"{number} %" if key == "request_percentage" else f"{number}/s"


def describe(entity: Mapping[str, str | None]) -> str:
    """An entity as a short phrase: user 'bob' + default client-id."""
    parts = []
    for t in ENTITY_TYPES:
        if t in entity:
            name = entity[t]
            parts.append(f"default {t}" if name is None else f"{t} '{name}'")
    return " + ".join(parts)


def check_entity(entity: Mapping[str, str | None]) -> Entity:
    """The types Kafka accepts together: user, client-id, user + client-id, or ip alone."""
    unknown = sorted(set(entity) - set(ENTITY_TYPES))
    if unknown:
        raise BadParameter(f"Unknown quota entity type '{unknown[0]}'; the types are user, client-id and ip.")
    if not entity:
        raise BadParameter("Name the quota's entity: a user, a client-id, both, or an ip.")
    if "ip" in entity and len(entity) > 1:
        raise BadParameter("An ip quota stands alone: it cannot be combined with a user or a client-id.")
    for t, name in entity.items():
        if name is not None and (name == "" or len(name) > MAX_NAME_LENGTH):
            raise BadParameter(f"The {t} name must be 1 to {MAX_NAME_LENGTH} characters long; "
                               f"for the default {t}, set 'default' instead of a name.")
    return {t: entity[t] for t in ENTITY_TYPES if t in entity}


def allowed_keys(entity: Mapping[str, str | None]) -> tuple[str, ...]:
    return IP_KEYS if "ip" in entity else CLIENT_KEYS


def check_keys(entity: Mapping[str, str | None], keys: Iterable[str]) -> None:
    allowed = allowed_keys(entity)
    for key in keys:
        if key not in KEYS:
            raise BadParameter(f"Unknown quota '{key}'; the quotas are {', '.join(KEYS)}.")
        if key not in allowed:
            kind = "an ip" if "ip" in entity else "a user or client-id"
            raise BadParameter(f"Quota '{key}' cannot be set on {kind}; it takes {', '.join(allowed)}.")


def check_value(key: str, value: float) -> float:
    """A positive number; byte rates in whole bytes per second (as Kafka stores them)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise BadParameter(f"Quota '{key}' must be a number.")
    if value <= 0:
        raise BadParameter(f"Quota '{key}' must be more than 0, not {value:g}; to lift a quota, remove it.")
    if value > MAX_VALUE:
        raise BadParameter(f"Quota '{key}' is too large (at most {MAX_VALUE}).")
    if key in BYTE_RATES and value != int(value):
        raise BadParameter(f"Quota '{key}' is in whole bytes per second, not {value:g}.")
    return float(value)


def check_change(entity: Mapping[str, str | None], set_values: Mapping[str, float], remove: Iterable[str]) -> Entity:
    """The whole change checked: its entity, its keys for that entity, its values; something to do."""
    checked = check_entity(entity)
    remove = list(remove)
    check_keys(checked, [*set_values, *remove])
    both = sorted(set(set_values) & set(remove))
    if both:
        raise BadParameter(f"Quota '{both[0]}' is both set and removed; name it in one of the two.")
    if not set_values and not remove:
        raise BadParameter("Nothing to change: give quotas to set or to remove.")
    for key, value in set_values.items():
        check_value(key, value)
    return checked


@dataclass(frozen=True)
class Applied:
    key: str
    value: float | None  # None: no quota of this kind applies
    entity: Entity | None  # the entity whose quota applies
    rank: int | None  # 1-based place of that entity in Kafka's precedence


def _candidates(rules: tuple[tuple[tuple[str, str | None], ...], ...], names: Mapping[str, str | None]) -> list[Entity]:
    found: list[Entity] = []
    for rule in rules:
        if any(name == "name" and names.get(t) is None for t, name in rule):
            found.append({})  # this rule needs a name the connection does not have
            continue
        found.append({t: (names[t] if name == "name" else None) for t, name in rule})
    return found


def effective(quotas: Iterable[tuple[Mapping[str, str | None], Mapping[str, float]]], user: str | None,
              client_id: str | None, ip: str | None = None) -> list[Applied]:
    """For each key, the quota a connection of this user and client-id (and from this ip) gets, and
    the entity it comes from; quotas are (entity, values) pairs as Kafka lists them."""
    by_entity = {tuple(sorted(e.items(), key=lambda p: ENTITY_TYPES.index(p[0]))): dict(v) for e, v in quotas}
    names = {"user": user, "client-id": client_id, "ip": ip}
    answer = []
    for keys, rules in ((CLIENT_KEYS, PRECEDENCE), (IP_KEYS, IP_PRECEDENCE)):
        candidates = _candidates(rules, names)
        for key in keys:
            applied = Applied(key, None, None, None)
            for rank, entity in enumerate(candidates, start=1):
                values = by_entity.get(tuple(entity.items())) if entity else None
                if values is not None and key in values:
                    applied = Applied(key, values[key], entity, rank)
                    break
            answer.append(applied)
    return answer
