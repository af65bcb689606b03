"""console.gateway.refusals: Kafka's authorization refusals name the principal, operation and resource."""

from __future__ import annotations

import kafka.errors as kp_errors
import pytest
from confluent_kafka import KafkaError, KafkaException

from console.gateway.config import ClusterConfig
from console.gateway.errors import NotAuthorized
from console.gateway.refusals import principal, refusal
from console.gateway.translate import translate, translate_error


@pytest.mark.parametrize(("code", "action", "operation", "resource"), [
    ("TOPIC_AUTHORIZATION_FAILED", "describe topic 'orders'", "DESCRIBE", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "read topic 'orders'", "READ", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "produce to 'orders'", "WRITE", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "create topic 'orders'", "CREATE", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "delete topic 'orders'", "DELETE", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "delete records of topic 'orders'", "DELETE", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "add partitions to topic 'orders'", "ALTER", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "alter the configs of topic 'orders'", "ALTER_CONFIGS", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "describe the configs of topic 'orders'", "DESCRIBE_CONFIGS", "topic 'orders'"),
    ("TOPIC_AUTHORIZATION_FAILED", "list latest offsets", "DESCRIBE", "the topic this request names"),
    ("TOPIC_AUTHORIZATION_FAILED", "set the offsets of group 'billing'", "READ", "the topic this request names"),
    ("GROUP_AUTHORIZATION_FAILED", "describe consumer group 'billing'", "DESCRIBE", "group 'billing'"),
    ("GROUP_AUTHORIZATION_FAILED", "set the offsets of group 'billing'", "READ", "group 'billing'"),
    ("GROUP_AUTHORIZATION_FAILED", "delete consumer group 'billing'", "DELETE", "group 'billing'"),
    ("GROUP_AUTHORIZATION_FAILED", "delete offsets of group 'billing'", "DELETE", "group 'billing'"),
    ("CLUSTER_AUTHORIZATION_FAILED", "describe the KRaft quorum", "DESCRIBE", "cluster 'kafka-cluster'"),
    ("CLUSTER_AUTHORIZATION_FAILED", "elect leaders", "ALTER", "cluster 'kafka-cluster'"),
    ("CLUSTER_AUTHORIZATION_FAILED", "alter partition reassignments", "ALTER", "cluster 'kafka-cluster'"),
    ("CLUSTER_AUTHORIZATION_FAILED", "describe broker configs", "DESCRIBE_CONFIGS", "cluster 'kafka-cluster'"),
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "produce to 'orders'", "WRITE", "the transactional id this request names"),
])
def test_a_refusal_names_the_operation_the_request_needs_and_its_resource(code, action, operation, resource):
    sentence = refusal(code, "Broker: authorization failed", "east", action, "User:bob")
    assert sentence is not None
    assert sentence.startswith(f"Kafka refused: principal User:bob may not {operation} {resource} ({code}), "
                               f"so the console could not {action} on cluster 'east'. An ACL allowing it is missing")


def test_the_sentence_says_the_kafka_acls_command_that_would_allow_it():
    sentence = refusal("GROUP_AUTHORIZATION_FAILED", "", "east", "describe consumer group 'billing'", "User:bob")
    assert sentence is not None and sentence.endswith(
        "(for example: kafka-acls --add --allow-principal User:bob --operation Describe --group billing).")
    configs = refusal("CLUSTER_AUTHORIZATION_FAILED", "", "east", "describe broker configs", "User:bob")
    assert configs is not None and configs.endswith("--operation DescribeConfigs --cluster).")


def test_a_group_whose_coordinator_kafka_would_not_find_needs_describe_whatever_the_action():
    detail = "[Error 30] GroupAuthorizationFailedError: FindCoordinatorResponse error for GROUP/billing: "
    sentence = refusal("GROUP_AUTHORIZATION_FAILED", detail, "east", "fetch committed offsets", "User:bob")
    assert sentence is not None and "may not DESCRIBE group 'billing'" in sentence
    delete = refusal("GROUP_AUTHORIZATION_FAILED", detail, "east", "delete consumer group 'billing'", "User:bob")
    assert delete is not None and "may not DESCRIBE group 'billing'" in delete


def test_other_errors_are_no_refusal():
    assert refusal("SASL_AUTHENTICATION_FAILED", "bad password", "east", "describe the cluster", "User:bob") is None
    assert refusal("UNKNOWN_TOPIC_OR_PART", "", "east", "describe topic 'x'", "User:bob") is None


def test_without_a_known_principal_the_sentence_says_the_consoles_and_no_command():
    sentence = refusal("TOPIC_AUTHORIZATION_FAILED", "", "east", "describe topic 'x'", None)
    assert sentence == ("Kafka refused: principal the console's principal may not DESCRIBE topic 'x' "
                        "(TOPIC_AUTHORIZATION_FAILED), so the console could not describe topic 'x' on cluster 'east'. "
                        "An ACL allowing it is missing.")


@pytest.mark.parametrize(("fields", "expected"), [
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "console"}, "User:console"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "alice"}, "User:alice"),
    ({"security_protocol": "PLAINTEXT"}, "User:ANONYMOUS"),
    ({"security_protocol": "SSL", "ssl_certificate_location": "/nonexistent/client.crt"},
     "the principal of the console's client certificate"),
])
def test_the_principal_is_the_one_kafkas_default_builder_gives_the_connection(fields, expected):
    assert principal(ClusterConfig(name="east", bootstrap_servers="h:9093", **fields)) == expected


def test_a_client_certificates_principal_is_its_distinguished_name(tmp_path):
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    path = tmp_path / "client.crt"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    config = ClusterConfig(name="east", bootstrap_servers="h:9093", security_protocol="SSL", ssl_certificate_location=str(path))
    assert principal(config) == "User:CN=alice"


def test_both_clients_refusals_become_not_authorized_with_the_sentence():
    rd = translate(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), "east", "read topic 'x'", "User:bob")
    kp = translate(kp_errors.GroupAuthorizationFailedError("GROUP/g:"), "east", "describe consumer group 'g'", "User:bob")
    assert isinstance(rd, NotAuthorized) and rd.http_status == 403
    assert "principal User:bob may not READ topic 'x' (TOPIC_AUTHORIZATION_FAILED)" in rd.message
    assert isinstance(kp, NotAuthorized)
    assert "principal User:bob may not DESCRIBE group 'g' (GROUP_AUTHORIZATION_FAILED)" in kp.message
    assert isinstance(translate_error("CLUSTER_AUTHORIZATION_FAILED", "", "east", "elect leaders"), NotAuthorized)
