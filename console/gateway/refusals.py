"""Kafka's authorization refusals as a sentence naming the principal, the operation and the resource.

Kafka's answer says only which kind of resource refused (TOPIC_AUTHORIZATION_FAILED ...); the
operation and the name come from what the console was doing (the gateway's action sentence, which
names its topic or group), by the rules StandardAuthorizer applies to each request.
"""

from __future__ import annotations

import re

from console.gateway.config import ClusterConfig

# Kafka's error code -> the resource type as ACLs name it, and as kafka-acls takes it.
RESOURCES = {
    "TOPIC_AUTHORIZATION_FAILED": ("topic", "--topic"),
    "GROUP_AUTHORIZATION_FAILED": ("group", "--group"),
    "CLUSTER_AUTHORIZATION_FAILED": ("cluster", "--cluster"),
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": ("transactional id", "--transactional-id"),
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED": ("delegation token", "--delegation-token"),
}
CLUSTER_RESOURCE = "kafka-cluster"  # the one CLUSTER resource's name

# Per resource type, (what the console was doing, the operation the request needs); the first
# match decides, and DESCRIBE is the rest (metadata, ListOffsets, OffsetFetch, DescribeGroups).
_OPERATIONS: dict[str, list[tuple[str, str]]] = {
    "topic": [
        (r"^(produce|connect a producer)", "WRITE"),
        (r"^(read topic|consume|connect a message browser)", "READ"),
        (r"^create topic", "CREATE"),
        (r"^delete (topic|records)", "DELETE"),
        (r"^alter the configs", "ALTER_CONFIGS"),
        (r"^describe .*configs", "DESCRIBE_CONFIGS"),
        (r"^add partitions", "ALTER"),
        (r"^(set the offsets|set the start offsets|delete offsets|commit offsets)", "READ"),
    ],
    "group": [
        (r"^delete consumer group", "DELETE"),
        (r"^delete offsets", "DELETE"),
        (r"^(set the offsets|set the start offsets|commit offsets|consume)", "READ"),
    ],
    "cluster": [
        (r"^(elect|alter partition reassignments)", "ALTER"),
        (r"^alter the configs", "ALTER_CONFIGS"),
        (r"configs", "DESCRIBE_CONFIGS"),
        (r"^create topic", "CREATE"),
        (r"^(produce|connect a producer)", "IDEMPOTENT_WRITE"),
    ],
    "transactional id": [(r"^(produce|connect a producer)", "WRITE")],
}
# Where an action or Kafka's own detail names the resource.
_NAMES = {
    "topic": [r"topic '([^']*)'", r"^produce to '([^']*)'"],
    "group": [r"group '([^']*)'", r"\bGROUP/([^\s:]+)"],
}


def principal(config: ClusterConfig) -> str:
    """The principal Kafka's default builder gives this connection."""
    if config.security_protocol.startswith("SASL_") and config.sasl_username:
        return f"User:{config.sasl_username}"
    if config.security_protocol == "SSL" and config.ssl_certificate_location:
        try:
            from cryptography import x509

            with open(config.ssl_certificate_location, "rb") as f:
                return f"User:{x509.load_pem_x509_certificate(f.read()).subject.rfc4514_string()}"
        except (OSError, ValueError):
            return "the principal of the console's client certificate"
    return "User:ANONYMOUS"


def operation(resource: str, action: str, detail: str = "") -> str:
    if "FindCoordinator" in detail:
        return "DESCRIBE"  # finding a group's coordinator is refused before the request it was for
    for pattern, op in _OPERATIONS.get(resource, []):
        if re.search(pattern, action):
            return op
    return "DESCRIBE"


def resource_name(resource: str, action: str, detail: str) -> str | None:
    if resource == "cluster":
        return CLUSTER_RESOURCE
    for text in (action, detail):
        for pattern in _NAMES.get(resource, []):
            found = re.search(pattern, text)
            if found:
                return found.group(1)
    return None


def refusal(code: str, detail: str, cluster: str, action: str, who: str | None) -> str | None:
    """The sentence for an authorization refusal, or None when `code` is not one."""
    if code not in RESOURCES:
        return None
    resource, flag = RESOURCES[code]
    op = operation(resource, action, detail)
    name = resource_name(resource, action, detail)
    who = who or "the console's principal"  # a caller that knows no config
    what = f"{resource} '{name}'" if name is not None else f"the {resource} this request names"
    sentence = (f"Kafka refused: principal {who} may not {op} {what} ({code}), so the console could not {action} "
                f"on cluster '{cluster}'. An ACL allowing it is missing")
    if not who.startswith("User:"):
        return sentence + "."
    target = f" {name}" if name is not None and resource != "cluster" else ""
    return (f"{sentence} (for example: kafka-acls --add --allow-principal {who} "
            f"--operation {op.title().replace('_', '')} {flag}{target}).")
