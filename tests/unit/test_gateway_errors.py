"""console.gateway.translate.translate / translate_error: client library errors become GatewayErrors."""

from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout
from types import SimpleNamespace
from typing import Any

import kafka.errors as kp_errors
import pytest
from confluent_kafka import KafkaError, KafkaException

from console.gateway.errors import (
    ClusterUnavailable,
    GatewayError,
    InvalidRequest,
    NotAuthorized,
    NotFound,
    PolicyViolation,
)
from console.gateway.translate import translate, translate_error

CLUSTER = "east"
ACTION = "create topic 'orders'"

# translate_error --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected", "status"),
    [
        ("_TRANSPORT", ClusterUnavailable, 503),
        ("_ALL_BROKERS_DOWN", ClusterUnavailable, 503),
        ("REQUEST_TIMED_OUT", ClusterUnavailable, 503),
        ("NOT_CONTROLLER", ClusterUnavailable, 503),
        ("UNKNOWN_TOPIC_OR_PART", NotFound, 404),
        ("GROUP_ID_NOT_FOUND", NotFound, 404),
        ("TOPIC_AUTHORIZATION_FAILED", NotAuthorized, 403),
        ("SASL_AUTHENTICATION_FAILED", NotAuthorized, 403),
        ("POLICY_VIOLATION", PolicyViolation, 400),
        ("INVALID_PARTITIONS", InvalidRequest, 400),
        ("INVALID_REPLICATION_FACTOR", InvalidRequest, 400),
        ("TOPIC_ALREADY_EXISTS", InvalidRequest, 400),
        ("UNSUPPORTED_VERSION", InvalidRequest, 400),
    ],
)
def test_kafka_error_name_maps_to_the_gateway_error_and_http_status(name, expected, status):
    error = translate_error(name, "detail text", CLUSTER, ACTION)
    assert type(error) is expected
    assert error.http_status == status


def test_transport_error_names_the_cluster_the_action_and_the_detail_and_may_be_retried():
    error = translate_error("_TRANSPORT", "Connection refused", CLUSTER, ACTION)
    assert "Cluster 'east'" in error.message
    assert "could not create topic 'orders'" in error.message
    assert "Connection refused" in error.message
    assert error.permanent is False


def test_unknown_topic_error_says_not_found_on_the_cluster():
    error = translate_error("UNKNOWN_TOPIC_OR_PART", "Unknown topic", CLUSTER, "delete topic 'gone'")
    assert "delete topic 'gone'" in error.message
    assert "not found on cluster 'east'" in error.message


def test_authorization_error_names_the_operation_the_resource_the_action_and_the_cluster():
    error = translate_error("TOPIC_AUTHORIZATION_FAILED", "denied", CLUSTER, ACTION, "User:bob")
    assert error.message.startswith("Kafka refused: principal User:bob may not CREATE topic 'orders' "
                                    "(TOPIC_AUTHORIZATION_FAILED), so the console could not create topic 'orders' "
                                    "on cluster 'east'.")


def test_policy_violation_quotes_the_policy_message():
    error = translate_error("POLICY_VIOLATION", "replication factor must be 3", CLUSTER, ACTION)
    assert "Cluster 'east' refused to create topic 'orders' by policy" in error.message
    assert "replication factor must be 3" in error.message


def test_invalid_partitions_error_quotes_kafka_detail():
    error = translate_error("INVALID_PARTITIONS", "Number of partitions must be larger than 0", CLUSTER, ACTION)
    assert "Could not create topic 'orders'" in error.message
    assert "Number of partitions must be larger than 0" in error.message


def test_topic_already_exists_says_so():
    error = translate_error("TOPIC_ALREADY_EXISTS", "Topic 'orders' already exists.", CLUSTER, ACTION)
    assert "Could not create topic 'orders'" in error.message
    assert "already exists" in error.message


def test_unknown_error_name_gives_a_plain_gateway_error_with_name_cluster_and_action():
    error = translate_error("SOMETHING_NEW", "odd", CLUSTER, ACTION)
    assert type(error) is GatewayError
    assert error.http_status == 502
    assert "SOMETHING_NEW" in error.message and "'east'" in error.message and ACTION in error.message


# translate --------------------------------------------------------------------------------------


def test_future_timeout_becomes_cluster_unavailable_naming_cluster_and_action():
    error = translate(FutureTimeout(), CLUSTER, ACTION)
    assert type(error) is ClusterUnavailable
    assert "Cluster 'east'" in error.message
    assert "did not answer in time" in error.message
    assert "create topic 'orders'" in error.message


@pytest.mark.parametrize("exc", [TimeoutError(), kp_errors.KafkaTimeoutError()])
def test_other_timeouts_become_cluster_unavailable(exc):
    assert type(translate(exc, CLUSTER, ACTION)) is ClusterUnavailable


@pytest.mark.parametrize("exc", [ConnectionRefusedError(), kp_errors.KafkaConnectionError(), kp_errors.NodeNotReadyError()])
def test_connection_failures_become_cluster_unavailable_saying_unreachable(exc):
    error = translate(exc, CLUSTER, ACTION)
    assert type(error) is ClusterUnavailable
    assert "Cluster 'east'" in error.message
    assert "create topic 'orders'" in error.message


def test_gateway_error_passes_through_unchanged():
    original = NotFound("already translated")
    assert translate(original, CLUSTER, ACTION) is original


def test_kafka_exception_is_translated_by_its_error_name():
    exc = KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists"))
    assert type(translate(exc, CLUSTER, ACTION)) is InvalidRequest


def test_bare_kafka_error_is_translated_by_its_name_and_keeps_its_detail():
    error = translate(KafkaError(KafkaError._TRANSPORT, "Connection refused"), CLUSTER, ACTION)
    assert type(error) is ClusterUnavailable
    assert "Connection refused" in error.message


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (kp_errors.PolicyViolationError("no"), PolicyViolation),
        (kp_errors.TopicAuthorizationFailedError("no"), NotAuthorized),
        (kp_errors.InvalidPartitionsError("no"), InvalidRequest),
        (kp_errors.NotControllerError("no"), ClusterUnavailable),
        (kp_errors.RequestTimedOutError("no"), ClusterUnavailable),
    ],
)
def test_kafka_python_broker_errors_are_translated_by_their_class_name(exc, expected):
    assert type(translate(exc, CLUSTER, ACTION)) is expected


def test_kafka_python_unknown_topic_error_becomes_not_found():
    assert type(translate(kp_errors.UnknownTopicOrPartitionError("gone"), CLUSTER, ACTION)) is NotFound


def test_unexpected_exception_becomes_a_plain_gateway_error_with_the_action():
    error = translate(ValueError("weird"), CLUSTER, ACTION)
    assert type(error) is GatewayError
    assert "create topic 'orders'" in error.message
    assert "weird" in error.message


def test_offsets_asked_of_a_cluster_nobody_answers_fail_within_the_deadline_naming_the_cause():
    """Offsets are asked only once the client's metadata cache holds the topics (see
    ClusterGateway._cached_topics): when nobody answers that Metadata request, the call ends
    within its deadline, saying why."""
    import time

    from console.gateway.client import ClusterGateway
    from console.gateway.config import ClusterConfig
    from console.gateway.errors import ClusterUnavailable

    gw = ClusterGateway(ClusterConfig(name="c", bootstrap_servers="127.0.0.1:9"), timeout=1.5)
    try:
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable) as caught:
            gw.list_offsets([("t", 0), ("t", 1), ("t", 0)], "latest")
        assert time.monotonic() - started < 1.5 + 2
        assert caught.value.message == "Cluster 'c' is unreachable. No broker is listening at 127.0.0.1:9 (connection refused)."
    finally:
        gw.close()


def test_a_groups_state_asked_while_its_coordinator_moves_is_asked_again_and_never_taken_for_no_group(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """group_state (what an offset reset checks first): a coordinator that is moving or loading answers
    DescribeGroups with an error and no state; that was read as "the group does not exist" (a reset of
    a live KIP-848 group answered 404 right after brokers restarted). Now it is asked again; still so
    after the attempts: a 503 naming the coordinator's answer. A group that does not exist is still a
    404, a live classic group its state at once."""
    from console.gateway import groups
    from console.gateway.client import ClusterGateway
    from console.gateway.config import ClusterConfig
    from console.gateway.errors import ClusterUnavailable, NotFound

    def answer(code: int, state: str = "", members: int = 0) -> dict[str, Any]:
        error = str(kp_errors.for_code(code)("the message")) if code else None
        return {"group_state": state, "members": [{}] * members, "error": error}

    class Admin:
        def __init__(self, *answers: dict[str, Any]) -> None:
            self.answers, self.asked = list(answers), 0

        def describe_groups(self, ids: list[str]) -> dict[str, dict[str, Any]]:
            self.asked += 1
            return {ids[0]: self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]}

    monkeypatch.setattr(groups, "GROUP_STATE_RETRY_SECONDS", 0.0)
    gw = ClusterGateway(ClusterConfig(name="c", bootstrap_servers="127.0.0.1:9"), timeout=1.5)
    try:
        def ask(admin: Admin) -> tuple[str, int, str]:
            monkeypatch.setattr(gw, "_with_kafka_python", lambda purpose, fn: fn(admin))
            return gw.group_state("g/<1>")

        moving = Admin(answer(16), answer(14), answer(0, "Stable", 2))
        assert ask(moving) == ("Stable", 2, "classic") and moving.asked == 3
        stuck = Admin(answer(15))
        with pytest.raises(ClusterUnavailable) as caught:
            ask(stuck)
        assert stuck.asked == groups.GROUP_STATE_ATTEMPTS
        assert "could not be described now" in caught.value.message and "CoordinatorNotAvailable" in caught.value.message
        gone = Admin(answer(0, "Dead"))
        with pytest.raises(NotFound) as missing:
            ask(gone)
        assert gone.asked == 1 and "does not exist" in missing.value.message
        refused = Admin(answer(30))  # (not authorized: no retry, as before)
        with pytest.raises(NotFound):
            ask(refused)
        assert refused.asked == 1
    finally:
        gw.close()


class _CacheFiller:
    """A stand-in admin client: the topics a cluster has, and the Metadata requests asked of it."""

    def __init__(self, existing: set[str]) -> None:
        self.existing = existing
        self.creating: set[str] = set()  # (no partitions yet: LEADER_NOT_AVAILABLE)
        self.asked: list[str | None] = []

    def list_topics(self, topic: str | None = None, timeout: float = 0.0) -> Any:
        self.asked.append(topic)

        def described(name: str) -> Any:
            if name in self.creating:
                return SimpleNamespace(error=KafkaError(KafkaError.LEADER_NOT_AVAILABLE), partitions={})
            if name in self.existing:
                return SimpleNamespace(error=None, partitions={0: SimpleNamespace(id=0)})
            return SimpleNamespace(error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), partitions={})

        names = self.existing | self.creating if topic is None else {topic}
        return SimpleNamespace(topics={n: described(n) for n in names})


def test_a_client_cache_is_filled_before_its_leaders_are_looked_up_and_deleted_topics_cost_one_request() -> None:
    """ListOffsets and DeleteRecords go only to topics the admin client's metadata cache holds
    (librdkafka 2.16 crashed when it had to wait for one: ClusterGateway._cached_topics)."""
    from console.gateway import connections
    from console.gateway.client import ClusterGateway
    from console.gateway.config import ClusterConfig

    gw = ClusterGateway(ClusterConfig(name="c", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    deadline = time.monotonic() + 5
    many = {f"t{i}" for i in range(connections.WARM_ONE_BY_ONE + 5)}
    admin = _CacheFiller(many | {"a"})
    # A client never filled, asked of many topics: one Metadata request for every topic.
    assert gw._cached_topics(admin, many | {"gone"}, deadline) == many  # type: ignore[arg-type]
    assert admin.asked == [None]
    # Known topics cost nothing; a deleted one is not asked for again for a while.
    assert gw._cached_topics(admin, many | {"gone"}, deadline) == many  # type: ignore[arg-type]
    assert admin.asked == [None]
    # A topic created since: asked for alone.
    admin.existing.add("new")
    assert gw._cached_topics(admin, {"new", "a"}, deadline) == {"new", "a"}  # type: ignore[arg-type]
    assert admin.asked == [None, "new"]  # ("a" was in the first answer)
    assert gw._cached_topics(admin, {"new"}, deadline) == {"new"}  # type: ignore[arg-type]
    assert admin.asked == [None, "new"]
    # A topic being created (no partitions yet): librdkafka would wait for its leaders: left out.
    admin.creating.add("young")
    assert gw._cached_topics(admin, {"young", "new"}, deadline) == {"new"}  # type: ignore[arg-type]
    # Another client (renewed): filled again.
    other = _CacheFiller({"a", "new"})
    assert gw._cached_topics(other, {"a", "new"}, deadline) == {"a", "new"}  # type: ignore[arg-type]
    assert set(other.asked) == {"a", "new"} and len(other.asked) == 2
