"""Client quotas of a cluster: list, set, remove (admin), and the quota a (user, client-id) gets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from console import gateway
from console.audit import audited
from console.gateway.errors import NotFound
from console.gateway.quotas import QuotaEntry, entity_key
from security_app import quota_rules
from security_app.users import Outcome


def entity_dict(entry: QuotaEntry) -> dict[str, str | None]:
    return dict(entry.entity)


def _value(key: str, value: float) -> float | int:
    return int(value) if value == int(value) else value


def as_dict(entry: QuotaEntry) -> dict[str, Any]:
    entity = entity_dict(entry)
    return {"entity": entity, "entity_text": quota_rules.describe(entity),
            "values": {k: _value(k, v) for k, v in sorted(entry.values.items())}}


def list_quotas(cluster: str) -> list[dict[str, Any]]:
    return [as_dict(e) for e in gateway.for_cluster(cluster).client_quotas()]


def effective(cluster: str, user: str | None, client_id: str | None, ip: str | None = None) -> dict[str, Any]:
    """Which quota of each kind applies to this user and client-id (and ip), and the entity it comes from."""
    entries = gateway.for_cluster(cluster).client_quotas()
    applied = quota_rules.effective(((entity_dict(e), e.values) for e in entries), user, client_id, ip)
    return {
        "user": user, "client_id": client_id, "ip": ip,
        "quotas": [{"key": a.key, "value": None if a.value is None else _value(a.key, a.value), "entity": a.entity,
                    "entity_text": quota_rules.describe(a.entity) if a.entity else None, "rank": a.rank}
                   for a in applied if a.key not in quota_rules.IP_KEYS or ip is not None],
    }


def alter(user: Any, cluster: str, entity: Mapping[str, str | None], set_values: Mapping[str, float],
          remove: list[str] | None, dry_run: bool = False) -> Outcome:
    """Set some quotas of one entity and remove others (remove None: every quota it has). Kafka
    validates first either way, so a refused value never half-applies."""
    details = {"entity": dict(entity), "set": dict(set_values), "remove": "all" if remove is None else sorted(remove)}

    def change() -> Outcome:
        gw = gateway.for_cluster(cluster)
        removing = remove
        if removing is None:
            checked = quota_rules.check_entity(entity)
            found = next((e for e in gw.client_quotas() if e.entity == entity_key(checked)), None)
            if found is None:
                raise NotFound(f"Cluster '{cluster}' has no quota for {quota_rules.describe(checked)}.")
            removing = sorted(found.values)
        checked = quota_rules.check_change(entity, set_values, removing)
        values = {k: float(v) for k, v in set_values.items()}
        key = entity_key(checked)
        gw.alter_client_quotas(key, values, sorted(removing), validate_only=True)
        if not dry_run:
            gw.alter_client_quotas(key, values, sorted(removing))
        parts = [f"{k}={_value(k, v)}" for k, v in sorted(values.items())] + [f"removed {k}" for k in sorted(removing)]
        verb = "Kafka accepts" if dry_run else "Applied"
        return Outcome(dry_run, f"{verb} {', '.join(parts)} for {quota_rules.describe(checked)}.", {"removed": sorted(removing)})

    with audited(user, "quotas_alter", cluster=cluster, target=quota_rules.describe(entity)[:255], dry_run=dry_run,
                 details=details) as entry:
        outcome = change()
        entry.update(outcome.details)
    return outcome
