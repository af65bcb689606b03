"""DescribeGroups for classic groups of any protocol type.

kafka-python decodes every member's metadata as the consumer protocol's subscription, and a group
of another protocol (Kafka Connect's workers, "connect") makes that decoding raise for the whole
request. Consumer groups are described by kafka-python as before; a group of another protocol, or a
request whose answer kafka-python cannot decode, is described again with its members' metadata
left as bytes, so one such group never hides the others.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

import kafka.errors as kp_errors
from kafka.admin import KafkaAdminClient

log = logging.getLogger(__name__)


def describe_classic(admin: KafkaAdminClient, ids: list[str], protocol_of: dict[str, str]) -> dict[str, dict[str, Any]]:
    """{group id: kafka-python's description} for classic groups; `protocol_of`: each group's
    protocol type from ListGroups ("consumer", "connect", "" for a group with no members)."""
    consumer = [gid for gid in ids if protocol_of.get(gid, "consumer") in ("consumer", "")]
    other = [gid for gid in ids if gid not in set(consumer)]
    described: dict[str, dict[str, Any]] = {}
    if consumer:
        try:
            described.update(admin.describe_groups(consumer))
        except ValueError as exc:  # a member's metadata is not what its protocol type says
            log.info("DescribeGroups answer not decodable as the consumer protocol (%s); describing undecoded", exc)
            other = consumer + other
    if other:
        described.update(_undecoded(admin, other))
    return described


def _undecoded(admin: KafkaAdminClient, ids: list[str]) -> dict[str, dict[str, Any]]:
    """DescribeGroups per coordinator, members without their (protocol-specific) metadata and assignment."""
    async def run() -> dict[str, dict[str, Any]]:
        by_coordinator: dict[int, list[str]] = defaultdict(list)
        for gid, coordinator in (await admin._find_coordinator_ids(ids)).items():
            by_coordinator[coordinator].append(gid)
        results: dict[str, dict[str, Any]] = {}
        for coordinator, gids in by_coordinator.items():
            response = await admin._manager.send(admin._describe_groups_request(gids), node_id=coordinator)
            for group in response.groups:
                result = group.to_dict()
                for member in result.get("members", []):
                    member["member_metadata"] = member["member_assignment"] = None
                code = result.pop("error_code")
                message = result.pop("error_message", "") or ""
                result.pop("authorized_operations", None)
                result["error"] = str(kp_errors.for_code(code)(message)) if code else None
                results[group.group_id] = result
        return results

    return admin._manager.run(run)
