"""Client quotas: Kafka's DescribeClientQuotas and AlterClientQuotas (KIP-546).

librdkafka has neither request, so they go through kafka-python's message classes on the
"quotas" client. An entity is a set of (type, name) pairs: type "user", "client-id" or "ip", name
None for that type's default entity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import kafka.errors as kp_errors
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
)

from console.gateway.connections import Connections

ENTITY_TYPES = ("user", "client-id", "ip")
Entity = tuple[tuple[str, str | None], ...]  # (type, name or None for the default), in ENTITY_TYPES order


def entity_key(pairs: dict[str, str | None]) -> Entity:
    return tuple((t, pairs[t]) for t in ENTITY_TYPES if t in pairs)


@dataclass(frozen=True)
class QuotaEntry:
    entity: Entity
    values: dict[str, float]


def _raise_for(code: int, message: str | None, what: str) -> None:
    if code:
        raise kp_errors.for_code(code)(f"{what}: {message or ''}".rstrip(": "))


def _describe(admin: KafkaAdminClient) -> list[QuotaEntry]:
    # No component and not strict: every entity that has a quota.
    request = DescribeClientQuotasRequest(components=[], strict=False)
    response = admin._manager.run(admin._manager.send, request).to_dict()
    _raise_for(response["error_code"], response.get("error_message"), "describe client quotas")
    found = []
    for entry in response.get("entries") or []:
        pairs = {e["entity_type"]: e["entity_name"] for e in entry["entity"]}
        found.append(QuotaEntry(entity_key(pairs), {v["key"]: float(v["value"]) for v in entry["values"]}))
    return sorted(found, key=lambda q: [(ENTITY_TYPES.index(t), n is not None, n or "") for t, n in q.entity])


def _alter(admin: KafkaAdminClient, entity: Entity, set_values: dict[str, float], remove: list[str],
           validate_only: bool) -> None:
    entry_class: Any = AlterClientQuotasRequest.EntryData
    ops = [entry_class.OpData(key=k, value=float(v), remove=False) for k, v in sorted(set_values.items())]
    ops += [entry_class.OpData(key=k, value=0.0, remove=True) for k in sorted(remove)]
    entry = entry_class(entity=[entry_class.EntityData(entity_type=t, entity_name=n) for t, n in entity], ops=ops)
    request = AlterClientQuotasRequest(entries=[entry], validate_only=validate_only)
    response = admin._manager.run(admin._manager.send, request).to_dict()
    for answer in response["entries"]:
        _raise_for(answer["error_code"], answer.get("error_message"), "alter client quotas")


class ClientQuotas(Connections):
    """List and change client quotas."""

    def client_quotas(self) -> list[QuotaEntry]:
        """Every entity with at least one quota: users, then client-ids, then ips; a default before names."""
        return self._call("describe the client quotas", lambda: self._with_kafka_python("quotas", _describe))

    def alter_client_quotas(self, entity: Entity, set_values: dict[str, float], remove: list[str],
                            validate_only: bool = False) -> None:
        """Set some quota keys of one entity and remove others, in one request (validate_only: Kafka's
        verdict, nothing changes)."""
        self._call("alter the client quotas",
                   lambda: self._with_kafka_python("quotas", lambda a: _alter(a, entity, set_values, remove, validate_only)))
