"""ACLs: describe, create and delete (DescribeAcls, CreateAcls, DeleteAcls), and which authorizer
the brokers run.

Sent through kafka-python, whose enums know every resource type and operation of KRaft's
authorizer (librdkafka's lack USER, DELEGATION_TOKEN and the token operations). A cluster's ACLs
are read in one request, and the answer is turned straight into `Acl` values, without kafka-python's
per-ACL objects, since a cluster can hold a hundred thousand.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import kafka.errors as kp_errors
from confluent_kafka.admin import ConfigResource
from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient, ResourceType
from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from console.gateway.connections import Connections
from console.gateway.types import Acl

_RESOURCE = {m.value: m.name for m in ResourceType}
_PATTERN = {m.value: m.name for m in ACLResourcePatternType}
_OPERATION = {m.value: m.name for m in ACLOperation}
_PERMISSION = {m.value: m.name for m in ACLPermissionType}


def _raise(code: int, message: str | None, action: str) -> None:
    if code:
        error = kp_errors.for_code(code)
        raise error(f"{message or error.__name__} ({action})")


def _acl(resource_type: int, name: str, pattern: int, entry: Any) -> Acl:
    return Acl(_RESOURCE.get(resource_type, "UNKNOWN"), _PATTERN.get(pattern, "UNKNOWN"), name, entry.principal, entry.host,
               _OPERATION.get(entry.operation, "UNKNOWN"), _PERMISSION.get(entry.permission_type, "UNKNOWN"))


class AclAdmin(Connections):
    """ACL reads and changes."""

    def acls(self) -> list[Acl]:
        """Every ACL of the cluster (what `kafka-acls --list` prints)."""

        def run(client: KafkaAdminClient) -> list[Acl]:
            request = DescribeAclsRequest(
                resource_type_filter=ResourceType.ANY, resource_name_filter=None, pattern_type_filter=ACLResourcePatternType.ANY,
                principal_filter=None, host_filter=None, operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY)
            response = client._manager.run(client._manager.send, request)
            _raise(response.error_code, response.error_message, "describe ACLs")
            return [_acl(r.resource_type, r.resource_name, r.pattern_type, e) for r in response.resources for e in r.acls]

        return self._call("describe ACLs", lambda: self._with_kafka_python("acls", run))

    def create_acls(self, acls: Iterable[Acl]) -> None:
        wanted = list(acls)

        def run(client: KafkaAdminClient) -> None:
            creations = [CreateAclsRequest.AclCreation(
                resource_type=ResourceType[a.resource_type], resource_name=a.resource_name,
                resource_pattern_type=ACLResourcePatternType[a.pattern_type], principal=a.principal, host=a.host,
                operation=ACLOperation[a.operation], permission_type=ACLPermissionType[a.permission]) for a in wanted]
            min_version = 3 if any(a.resource_type == "USER" for a in wanted) else 0
            response = client._manager.run(client._manager.send, CreateAclsRequest(creations=creations, min_version=min_version))
            for result in response.results:
                _raise(result.error_code, result.error_message, "create ACLs")

        if wanted:
            self._call("create ACLs", lambda: self._with_kafka_python("acls", run))

    def delete_acls(self, acls: Iterable[Acl]) -> list[Acl]:
        """Delete exactly these ACLs; returns the ones Kafka deleted."""
        wanted = list(acls)

        def run(client: KafkaAdminClient) -> list[Acl]:
            filters = [DeleteAclsRequest.DeleteAclsFilter(
                resource_type_filter=ResourceType[a.resource_type], resource_name_filter=a.resource_name,
                pattern_type_filter=ACLResourcePatternType[a.pattern_type], principal_filter=a.principal, host_filter=a.host,
                operation=ACLOperation[a.operation], permission_type=ACLPermissionType[a.permission]) for a in wanted]
            min_version = 3 if any(a.resource_type == "USER" for a in wanted) else 0
            response = client._manager.run(client._manager.send, DeleteAclsRequest(filters=filters, min_version=min_version))
            deleted = []
            for result in response.filter_results:
                _raise(result.error_code, result.error_message, "delete ACLs")
                deleted += [_acl(m.resource_type, m.resource_name, m.pattern_type, m) for m in result.matching_acls]
            return deleted

        return self._call("delete ACLs", lambda: self._with_kafka_python("acls", run)) if wanted else []

    def authorizer(self) -> tuple[str, bool]:
        """The authorizer class of one live broker and whether it has super users (Kafka hides who:
        DescribeConfigs reports super.users as sensitive). The brokers of a cluster share both."""

        def run() -> tuple[str, bool]:
            admin = self._admin_client()
            node = self._result(admin.describe_cluster(request_timeout=self.timeout)).nodes[0].id
            futures = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(node))], request_timeout=self.timeout)
            entries = self._result(next(iter(futures.values())))
            authorizer = entries["authorizer.class.name"].value or "" if "authorizer.class.name" in entries else ""
            supers = entries.get("super.users")
            return authorizer, supers is not None and (bool(supers.value) or bool(supers.is_sensitive))

        return self._call("describe the broker's authorizer", run)
