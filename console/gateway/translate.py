"""Client library errors become GatewayErrors that carry a sentence a user can act on."""

from __future__ import annotations

import logging
from concurrent.futures import TimeoutError as FutureTimeout

import kafka.errors as kp_errors
from confluent_kafka import KafkaError, KafkaException

from console.gateway.causes import CONNECTION_ERRORS
from console.gateway.errors import (
    ClusterUnavailable,
    GatewayError,
    InvalidRequest,
    NotAuthorized,
    NotFound,
    PolicyViolation,
)
from console.gateway.refusals import refusal

log = logging.getLogger(__name__)

_UNAVAILABLE = {
    "_TRANSPORT",
    "_ALL_BROKERS_DOWN",
    "_TIMED_OUT",
    "_MSG_TIMED_OUT",
    "_RESOLVE",
    "_DESTROY",
    "REQUEST_TIMED_OUT",
    "NOT_CONTROLLER",
    "BROKER_NOT_AVAILABLE",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_FOR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "NETWORK_EXCEPTION",
}
_NOT_FOUND = {"UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION", "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION", "GROUP_ID_NOT_FOUND", "RESOURCE_NOT_FOUND"}
_NOT_AUTHORIZED = {
    "TOPIC_AUTHORIZATION_FAILED",
    "GROUP_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "SASL_AUTHENTICATION_FAILED",
    "_AUTHENTICATION",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
}


def error_code_name(class_name: str) -> str:
    """kafka-python's name of an error class as Kafka's own error code ("NotCoordinatorError" ->
    "NOT_COORDINATOR"), so both clients' errors are read with one table."""
    upper = "".join("_" + c if c.isupper() else c for c in class_name).upper().lstrip("_")
    return upper.removesuffix("_ERROR")


def translate(exc: BaseException, cluster: str, action: str, principal: str | None = None) -> GatewayError:
    """Turn a client library's error into a GatewayError with a sentence; `principal`: who the
    console is on this cluster, named when Kafka refuses it an operation."""
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err: KafkaError = exc.args[0]
        return translate_error(err.name(), err.str(), cluster, action, principal)
    if isinstance(exc, KafkaError):
        return translate_error(exc.name(), exc.str(), cluster, action, principal)
    if isinstance(exc, (FutureTimeout, TimeoutError, kp_errors.KafkaTimeoutError)):
        return ClusterUnavailable(f"Cluster '{cluster}' did not answer in time while trying to {action}.")
    if isinstance(exc, (kp_errors.KafkaConnectionError, kp_errors.NodeNotReadyError, ConnectionError)):
        return ClusterUnavailable(f"Cluster '{cluster}' is unreachable: no broker accepted a connection ({action}).")
    if isinstance(exc, kp_errors.BrokerResponseError):
        return translate_error(error_code_name(type(exc).__name__), str(exc), cluster, action, principal)
    if isinstance(exc, (kp_errors.UnknownBrokerIdError, kp_errors.KafkaConnectionError)) or (
        isinstance(exc, kp_errors.KafkaError) and getattr(exc, "retriable", False)
    ):
        return ClusterUnavailable(f"Cluster '{cluster}' is unreachable: could not {action} ({exc}).")
    if isinstance(exc, kp_errors.KafkaError):
        log.warning("Kafka client error while trying to %s: %s", action, exc)
        return GatewayError(f"Could not {action} on cluster '{cluster}': {exc}")
    log.exception("unexpected error from a Kafka client while trying to %s", action)
    return GatewayError(f"Kafka client failed while trying to {action}: {exc}")


def translate_error(name: str, detail: str, cluster: str, action: str, principal: str | None = None) -> GatewayError:
    refused = refusal(name, detail, cluster, action, principal)
    if refused is not None:
        return NotAuthorized(refused)
    if name in _UNAVAILABLE:
        return ClusterUnavailable(f"Cluster '{cluster}' is unreachable: could not {action} ({detail}).")
    if name in _NOT_FOUND:
        return NotFound(f"Could not {action}: not found on cluster '{cluster}' ({detail}).")
    if name in _NOT_AUTHORIZED:
        return NotAuthorized(f"Not authorized to {action} on cluster '{cluster}' ({detail}).")
    if name == "POLICY_VIOLATION":
        return PolicyViolation(f"Cluster '{cluster}' refused to {action} by policy: {detail}.")
    if name == "TOPIC_ALREADY_EXISTS":
        return InvalidRequest(f"Could not {action}: the topic already exists.")
    if name.startswith("INVALID_") or name in {"UNSUPPORTED_VERSION", "_INVALID_ARG", "UNKNOWN_TOPIC_ID", "OFFSET_OUT_OF_RANGE", "TOPIC_EXCEPTION",
                                               "INVALID_CONFIG"}:
        return InvalidRequest(f"Could not {action}: {detail}.")
    return GatewayError(f"Could not {action} on cluster '{cluster}': {detail} ({name}).")


# kafka-python's connection errors; the names differ between its releases, so only those present count.
_KP_CONNECTION_ERRORS: tuple[type[BaseException], ...] = tuple(
    e for e in (getattr(kp_errors, name, None) for name in (
        "KafkaTimeoutError", "KafkaConnectionError", "NoBrokersAvailable", "NodeNotReadyError"))
    if isinstance(e, type) and issubclass(e, BaseException))


def connection_failure(exc: BaseException) -> bool:
    """Did the call fail for want of a connection (rather than the broker saying no)?"""
    if isinstance(exc, GatewayError):
        return False
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    if isinstance(err, KafkaError):
        return err.name() in CONNECTION_ERRORS
    return isinstance(exc, (FutureTimeout, TimeoutError, ConnectionError, *_KP_CONNECTION_ERRORS))
