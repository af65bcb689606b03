"""Analytics on a secured cluster: the run reads the samples topic with the cluster's own security
settings and computes the same tables as from the same records read without Kafka.

The secured broker is tests/secured_broker.py's (SASL_PLAINTEXT, SASL_SSL and SSL with a client
certificate). The unit tests' synthetic samples are written to its samples topic over SASL_SSL;
`run_analytics` (the Celery task, called in this process, on one small Spark session) reads them
over SASL_SSL with SCRAM, and `process` computes the reference from the same records as a text file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings as django_settings

from analytics import services, tasks
from analytics.jobs.pipeline import SUMMARY_FILE, process
from analytics.jobs.samples import parse_samples, read_samples
from analytics.kafka_security import spark_options
from analytics.models import AnalyticsRun
from analytics.session import spark_session
from tests.secured_broker import USER_PASSWORD, secured_cluster
from tests.spark_conf import SMALL_SPARK_CONF
from tests.unit.test_analytics_jobs import DAY, T0, Samples, hand_example, idle_and_orphans, stalled_consumer, steady_producer

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]

START, END = T0 - DAY, T0 + 30 * DAY


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory, secured_broker: Any) -> Iterator[tuple[list[bytes], Path]]:
    """The broker, its samples topic holding the synthetic records, and the same records as a text file."""
    s = Samples()
    for build in (steady_producer, stalled_consumer, idle_and_orphans, hand_example):
        build(s)
    path = tmp_path_factory.mktemp("secured-samples") / "samples.jsonl"
    path.write_bytes(b"\n".join(value for _key, value in s.records) + b"\n")
    config: dict[str, str | int | float | bool] = {**secured_cluster("secured").librdkafka()}
    topic = django_settings.ANALYTICS_SAMPLES_TOPIC
    admin = AdminClient(config)  # (kept: a collected client ends the request before its answer)
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(60)
    producer = Producer(config)
    for key, value in s.records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(60) == 0, "every sample record was written to the secured cluster"
    yield [value for _key, value in s.records], path


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", SMALL_SPARK_CONF)
    yield session
    session.stop()
    logging.getLogger("py4j").setLevel(logging.WARNING)


def plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 9)
    return value


def tables(directory: Path) -> dict[str, list[dict[str, Any]]]:
    """Every table of a finished run, rows in a fixed order, and its summary without the time it was written."""
    summary = json.loads((directory / SUMMARY_FILE).read_text())
    summary.pop("written_at")
    out: dict[str, Any] = {"summary": summary}
    for name in summary["tables"]:
        rows = [{k: plain(v) for k, v in row.items()} for row in ds.dataset(str(directory / name)).to_table().to_pylist()]
        out[name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


def test_a_run_on_a_sasl_ssl_scram_cluster_gives_the_tables_of_the_same_samples_read_without_kafka(
        samples: tuple[list[bytes], Path], spark: Any, settings: Any, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    _records, path = samples
    settings.KAFKA_CLUSTERS = (*settings.KAFKA_CLUSTERS, secured_cluster("secured"))
    monkeypatch.setattr(tasks, "_spark", spark)
    run = AnalyticsRun.objects.create(cluster="secured", window_start_ms=START, window_end_ms=END)

    assert tasks.run_analytics(run.id) == "done", AnalyticsRun.objects.get(id=run.id).error
    run.refresh_from_db()
    assert run.state == AnalyticsRun.DONE and run.summary["range"]["records"] > 0

    reference = tmp_path / "from-text"
    process(spark, parse_samples(spark.read.text(str(path)), START, END), reference, now_ms=END)
    secured, expected = tables(services.results_dir(run)), tables(reference)
    assert set(secured) == set(expected)
    for name in expected:
        assert secured[name] == expected[name], name
    assert expected["topic_throughput"] and expected["group_status"], "the comparison compared something"
    # Neither the console's log nor Spark's shows the password it logged in with.
    output = capfd.readouterr()
    assert USER_PASSWORD not in caplog.text + output.out + output.err


@pytest.mark.parametrize(("protocol", "mechanism"), [("SASL_PLAINTEXT", "PLAIN"), ("SSL", "")])
def test_the_samples_are_read_over_sasl_plain_and_over_ssl_with_a_ca_and_client_certificate(
        samples: tuple[list[bytes], Path], spark: Any, protocol: str, mechanism: str) -> None:
    records, _path = samples
    config = secured_cluster("secured", protocol, mechanism)
    with spark_options(config) as options:
        values = read_samples(spark, config.bootstrap_servers, django_settings.ANALYTICS_SAMPLES_TOPIC,
                              options=options).select("value").collect()
    assert sorted(bytes(row.value) for row in values) == sorted(records)
