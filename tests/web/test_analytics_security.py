"""A run on a secured cluster hands the connector the cluster's security options, and a failed run
shows no password, neither in its stored error nor in the worker's log (no Spark: the job is faked)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from analytics import tasks
from analytics.models import AnalyticsRun
from console.gateway.config import ClusterConfig

NOW = int(time.time() * 1000)
PASSWORD = 'pw"secret-1'


class FakeGateway:
    def topic_metadata(self, topic: str) -> None:
        return None


@pytest.fixture
def secured(settings: Any, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    settings.KAFKA_CLUSTERS = (*settings.KAFKA_CLUSTERS, ClusterConfig(
        name="secured", bootstrap_servers="127.0.0.1:1", security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
        sasl_username="alice", sasl_password=PASSWORD, ssl_ca_location="/etc/ca.pem"))
    monkeypatch.setattr(tasks, "spark_session", object)
    monkeypatch.setattr(tasks.gateway, "for_cluster", lambda name: FakeGateway())
    seen: list[dict[str, str]] = []

    def failing_run(spark: Any, servers: str, topic: str, directory: Any, start: int, end: int, options: dict[str, str]) -> None:
        seen.append(options)
        raise RuntimeError(f"org.apache.kafka.common.KafkaException: Failed to construct kafka consumer with {options}")

    monkeypatch.setattr("analytics.jobs.pipeline.run", failing_run)
    return seen


def test_a_failed_run_on_a_secured_cluster_shows_no_password(db: None, secured: list[dict[str, str]],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    run = AnalyticsRun.objects.create(cluster="secured", window_start_ms=NOW - 60_000, window_end_ms=NOW)
    assert tasks.run_analytics(run.id) == "failed"
    run.refresh_from_db()
    [options] = secured
    assert options["kafka.security.protocol"] == "SASL_SSL" and options["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert options["kafka.ssl.truststore.location"] == "/etc/ca.pem"
    assert run.error.startswith("Spark failed: org.apache.kafka.common.KafkaException: Failed to construct kafka consumer")
    assert "***" in run.error and "alice" in run.error
    for text in (run.error, caplog.text):
        assert "secret-1" not in text


def test_security_settings_analytics_cannot_use_fail_the_run_with_their_sentence(db: None, settings: Any,
                                                                                 secured: list[dict[str, str]]) -> None:
    settings.KAFKA_CLUSTERS = (*settings.KAFKA_CLUSTERS, ClusterConfig(
        name="kerberos", bootstrap_servers="127.0.0.1:1", security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI"))
    run = AnalyticsRun.objects.create(cluster="kerberos", window_start_ms=NOW - 60_000, window_end_ms=NOW)
    assert tasks.run_analytics(run.id) == "failed"
    run.refresh_from_db()
    assert run.error == ("Cluster 'kerberos' has sasl_mechanism 'GSSAPI': analytics reads over SASL with "
                         "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 only.")
    assert secured == [], "nothing was read"
