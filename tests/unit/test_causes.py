"""console.gateway.causes: librdkafka's connection errors become one sentence naming the cause.

The error lines are the ones librdkafka 2.16 reported through error_cb against a real broker
(SASL_PLAINTEXT SCRAM-SHA-256), a closed port, an unresolvable name, a TLS server with a
self-signed certificate and a silent socket.
"""

from __future__ import annotations

import time

import pytest

from console.gateway import causes
from console.gateway.causes import Cause, ErrorLog, Observed, classify
from console.gateway.config import ClusterConfig

SCRAM = ClusterConfig(name="badpass", bootstrap_servers="127.0.0.1:39092", security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="SCRAM-SHA-256", sasl_username="alice", sasl_password="wrong")
PLAIN = ClusterConfig(name="plain", bootstrap_servers="127.0.0.1:39092")
TLS = ClusterConfig(name="tls", bootstrap_servers="127.0.0.1:39098", security_protocol="SSL")

BAD_PASSWORD = ("sasl_plaintext://127.0.0.1:39092/bootstrap: SASL authentication error: Authentication failed during "
                "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256 (after 319ms in state AUTH_REQ)")
REFUSED = ("sasl_plaintext://127.0.0.1:39999/bootstrap: Connect to ipv4#127.0.0.1:39999 failed: Connection refused "
           "(after 0ms in state CONNECT)")
WRONG_MECHANISM = ("sasl_plaintext://127.0.0.1:39092/bootstrap: SASL SCRAM-SHA-512 mechanism handshake failed: Broker: "
                   "Unsupported SASL mechanism: broker's supported mechanisms: SCRAM-SHA-256 (after 301ms in state AUTH_HANDSHAKE)")
SASL_TO_PLAIN = ("sasl_plaintext://127.0.0.1:39093/bootstrap: SASL SCRAM-SHA-256 mechanism handshake failed: Broker: Request "
                 "not valid in current SASL state: broker's supported mechanisms:  (after 2ms in state AUTH_HANDSHAKE)")
UNVERIFIED = ("ssl://127.0.0.1:39098/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: "
              "broker certificate could not be verified, verify that ssl.ca.location is correctly configured or root CA "
              "certificates are installed (install ca-certificates package) (after 6ms in state SSL_HANDSHAKE)")
UNVERIFIED_SHORT = ("ssl://127.0.0.1:39098/bootstrap: error:0A000086:SSL routines::certificate verify failed "
                    "(after 3ms in state SSL_HANDSHAKE)")
TLS_TO_PLAIN = ("ssl://127.0.0.1:39092/bootstrap: SSL handshake failed: Disconnected: SSL connection closed by peer: "
                "connecting to a PLAINTEXT broker listener? (after 102ms in state SSL_HANDSHAKE)")
UNRESOLVED = ("sasl_plaintext://no-such-host.invalid:39092/bootstrap: Failed to resolve 'no-such-host.invalid:39092': "
              "Name or service not known (after 2ms in state CONNECT)")
HTTP_ANSWER = ("10.1.2.3:9092/bootstrap: Receive failed: Invalid response size 1213486160 (0..100000000): "
               "increase receive.message.max.bytes (after 0ms in state APIVERSION_QUERY)")
PLAIN_TO_TLS = ("127.0.0.1:29093/bootstrap: Disconnected while requesting ApiVersion: might be caused by incorrect "
                "security.protocol configuration (connecting to a SSL listener?) or broker version is < 0.10 "
                "(see api.version.request) (after 0ms in state APIVERSION_QUERY)")


def seen(*lines: tuple[str, str]) -> list[Observed]:
    return [Observed(name, detail) for name, detail in lines]


def test_a_wrong_scram_password_names_the_mechanism_and_the_user() -> None:
    cause = classify(seen(("_AUTHENTICATION", BAD_PASSWORD)), SCRAM, timeout=5)
    assert cause == Cause(causes.AUTHENTICATION, "Authentication failed: SCRAM-SHA-256 as user 'alice' was refused by the "
                                                 "broker (wrong user name or password).")


def test_a_closed_port_says_no_broker_is_listening_at_that_address() -> None:
    cause = classify(seen(("_TRANSPORT", REFUSED), ("_TRANSPORT", REFUSED)), SCRAM, timeout=5)
    assert cause == Cause(causes.REFUSED, "No broker is listening at 127.0.0.1:39999 (connection refused).")


def test_every_refusing_address_is_named_once() -> None:
    other = REFUSED.replace("39999", "39997")
    cause = classify(seen(("_TRANSPORT", REFUSED), ("_TRANSPORT", other), ("_TRANSPORT", REFUSED)), SCRAM, timeout=5)
    assert cause is not None
    assert cause.sentence == "No broker is listening at 127.0.0.1:39997, 127.0.0.1:39999 (connection refused)."


def test_a_mechanism_the_broker_does_not_offer_names_what_it_offers() -> None:
    config = ClusterConfig(name="x", bootstrap_servers="127.0.0.1:39092", security_protocol="SASL_PLAINTEXT",
                           sasl_mechanism="SCRAM-SHA-512", sasl_username="alice")
    cause = classify(seen(("_AUTHENTICATION", WRONG_MECHANISM)), config, timeout=5)
    assert cause == Cause(causes.AUTHENTICATION, "Authentication failed: the broker does not offer SASL mechanism SCRAM-SHA-512 "
                                                 "(it offers SCRAM-SHA-256).")


def test_sasl_against_a_listener_without_sasl_says_the_protocol_does_not_match() -> None:
    cause = classify(seen(("_AUTHENTICATION", SASL_TO_PLAIN)), SCRAM, timeout=5)
    assert cause is not None and cause.kind == causes.AUTHENTICATION
    assert "listener at 127.0.0.1:39093 does not use SASL" in cause.sentence
    assert "SASL_PLAINTEXT" in cause.sentence


def test_an_unverifiable_certificate_says_why_and_what_to_set() -> None:
    cause = classify(seen(("_SSL", UNVERIFIED), ("_TRANSPORT", UNVERIFIED_SHORT)), TLS, timeout=5)
    assert cause is not None and cause.kind == causes.TLS
    assert cause.sentence.startswith("TLS handshake failed: the certificate of the broker at 127.0.0.1:39098 could not be verified; "
                                     "set ssl_ca_location")
    assert "certificate verify failed" in cause.sentence
    assert "error:0A000086" not in cause.sentence and "(after" not in cause.sentence


def test_tls_against_a_plaintext_listener_says_the_listener_does_not_speak_tls() -> None:
    cause = classify(seen(("_TRANSPORT", TLS_TO_PLAIN)), TLS, timeout=5)
    assert cause == Cause(causes.TLS, "TLS handshake failed: the listener at 127.0.0.1:39092 does not speak TLS "
                                      "(is it a PLAINTEXT or SASL_PLAINTEXT listener?).")


def test_an_unresolvable_name_says_so() -> None:
    cause = classify(seen(("_RESOLVE", UNRESOLVED)), SCRAM, timeout=5)
    assert cause == Cause(causes.RESOLVE, "The broker address no-such-host.invalid:39092 cannot be resolved (DNS lookup failed).")


def test_a_service_that_is_not_kafka_is_named() -> None:
    cause = classify(seen(("_BAD_MSG", HTTP_ANSWER)), PLAIN, timeout=5)
    assert cause is not None and cause.kind == causes.NOT_KAFKA
    assert "10.1.2.3:9092 does not answer in the Kafka protocol" in cause.sentence


def test_plaintext_against_a_tls_listener_suggests_another_security_protocol() -> None:
    cause = classify(seen(("_TRANSPORT", PLAIN_TO_TLS)), PLAIN, timeout=5)
    assert cause is not None and cause.kind == causes.PROTOCOL
    assert "127.0.0.1:29093" in cause.sentence and "PLAINTEXT" in cause.sentence


def test_nothing_reported_for_the_whole_timeout_is_a_timeout() -> None:
    cause = classify([], SCRAM, timeout=5, elapsed=5.0)
    assert cause == Cause(causes.TIMEOUT, "Timed out after 5 s waiting for the cluster: no broker at 127.0.0.1:39092 answered.")


def test_nothing_reported_and_a_quick_failure_is_a_closed_connection() -> None:
    cause = classify([], PLAIN, timeout=5, elapsed=0.01)
    assert cause is not None and cause.kind == causes.CLOSED
    assert "closed the connection" in cause.sentence and "PLAINTEXT" in cause.sentence


def test_nothing_to_go_on_gives_no_cause() -> None:
    assert classify([], PLAIN, timeout=5) is None


def test_an_authentication_failure_outranks_a_refused_connection() -> None:
    cause = classify(seen(("_TRANSPORT", REFUSED), ("_AUTHENTICATION", BAD_PASSWORD), ("_TRANSPORT", REFUSED)), SCRAM, timeout=5)
    assert cause is not None and cause.kind == causes.AUTHENTICATION


def test_the_sentence_never_contains_the_password() -> None:
    for detail in (BAD_PASSWORD, REFUSED, SASL_TO_PLAIN):
        cause = classify(seen(("_AUTHENTICATION", detail)), SCRAM, timeout=5)
        assert cause is not None and "wrong" not in cause.sentence.replace("wrong user name", "")


@pytest.mark.parametrize("kind", list(causes.SUMMARIES))
def test_every_kind_has_a_summary_without_addresses(kind: str) -> None:
    summary = Cause(kind, "x").summary
    assert summary and not any(ch.isdigit() for ch in summary) and "'" not in summary


def test_the_error_log_keeps_recent_connection_errors_and_skips_the_rest() -> None:
    log = ErrorLog(keep=3)
    log.record("_ALL_BROKERS_DOWN", "1/1 brokers are down", at=1.0)
    log.record("UNKNOWN_TOPIC_OR_PART", "no such topic", at=1.0)
    for i in range(5):
        log.record("_TRANSPORT", f"refused {i}", at=float(i))
    assert [o.detail for o in log.since(0.0)] == ["refused 2", "refused 3", "refused 4"]
    assert [o.detail for o in log.since(4.0)] == ["refused 4"]


def test_a_refusal_reported_before_a_call_and_not_repeated_is_still_its_cause() -> None:
    from confluent_kafka import KafkaError, KafkaException

    from console.gateway.connections import Connections

    conns = Connections(PLAIN, timeout=0.05)

    def times_out() -> None:
        time.sleep(0.05)  # the whole timeout, with no error reported meanwhile
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

    conns.connection_errors.record("_TRANSPORT", REFUSED)
    time.sleep(0.01)
    with pytest.raises(Exception, match="connection refused"):
        conns._call("describe the cluster", times_out, silence_is_a_cause=True)
    conns._call("describe the cluster", lambda: None)  # it answered: earlier errors are no longer the cause
    with pytest.raises(Exception, match="Timed out"):
        conns._call("describe the cluster", times_out, silence_is_a_cause=True)
