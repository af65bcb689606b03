"""The replication page and API without Kafka: bad input is a 400 sentence, an unknown flow a 404, a flow
whose clusters do not answer and a Connect that does not answer are sentences on a 200, never a 500;
MM2's checkpoint records decode as Kafka writes them. Connect is tests/connect_double.py."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from connect_app.mirror import Flow
from connect_app.mirror_codec import Checkpoint, Undecodable, decode_checkpoint, encode_checkpoint
from console.connect_config import ConnectConfig
from console.devcluster_mirror import mirror_configs
from tests.connect_double import ConnectDouble, running_double

API = "/api/v1/clusters/local/replication/"
PAGE = "/clusters/local/replication/"
NOWHERE = "127.0.0.1:1"  # no Kafka: the measurement must say so


@pytest.fixture
def double(redis_server: str) -> Iterator[ConnectDouble]:
    with running_double() as d, override_settings(KAFKA_CONNECT={"local": (ConnectConfig("local", d.url),)}):
        for name, config in mirror_configs("east", NOWHERE, "west", NOWHERE, topics=r"orders\..*").items():
            d.add(name, plugin=config.pop("connector.class"), config=config)
        d.add("orders-sink")  # not MM2: not a flow
        yield d


@pytest.mark.parametrize(("query", "status", "sentence"), [
    ({"group": "g" * 256}, 400, "A consumer group name is at most 255 characters, with no control characters."),
    ({"group": "bad\x01group"}, 400, "A consumer group name is at most 255 characters, with no control characters."),
    ({"flow": "x" * 401}, 400, "A flow is named '<connect>:<source>-><target>', as the replication page lists it."),
    ({"flow": "local:north->south"}, 404, "There is no MirrorMaker 2 flow 'local:north->south' on the Connect clusters of 'local'."),
])
def test_bad_input_is_a_sentence(client_as: Any, double: ConnectDouble, query: dict[str, str], status: int, sentence: str) -> None:
    viewer = client_as("viewer")
    answer = viewer.get(API, query)
    assert answer.status_code == status and answer.json() == {"detail": sentence}
    page = viewer.get(PAGE, query)
    assert page.status_code == status and html.escape(sentence) in page.content.decode()


def test_a_flow_whose_clusters_do_not_answer_is_found_and_says_so(client_as: Any, double: ConnectDouble) -> None:
    answer = client_as("viewer").get(API, {"flow": "local:east->west"})
    assert answer.status_code == 200
    (flow,) = answer.json()["flows"]
    assert flow["id"] == "local:east->west" and flow["source"]["alias"] == "east" and flow["target"]["alias"] == "west"
    assert sorted(c["kind"] for c in flow["connectors"]) == ["checkpoint", "heartbeat", "source"]
    assert flow["topics"] == [] and flow["errors"] and flow["errors"][0].startswith("The source cluster did not answer")
    page = client_as("viewer").get(PAGE)
    assert page.status_code == 200 and "The source cluster did not answer" in page.content.decode()


def test_a_connect_that_does_not_answer_is_a_sentence(client_as: Any, redis_server: str) -> None:
    with override_settings(KAFKA_CONNECT={"local": (ConnectConfig("local", "http://127.0.0.1:1"),)}):
        answer = client_as("viewer").get(API)
        assert answer.status_code == 200 and answer.json()["flows"] == []
        assert answer.json()["errors"] == ["Connect cluster 'local': Connect cluster 'local' at http://127.0.0.1:1 is "
                                           "unreachable (connection refused)."]
        assert "No MirrorMaker 2 flow" in client_as("viewer").get(PAGE).content.decode()


def test_anonymous_callers_are_refused(client: Any, double: ConnectDouble) -> None:
    assert client.get(API).status_code == 401


def test_checkpoints_decode_as_kafka_writes_them() -> None:
    c = Checkpoint("billing", "east.orders", 3, 120, 118, "")
    key, value = encode_checkpoint(c)
    # Kafka's own bytes for this checkpoint: INT16-length strings, INT32 partition; version 0, two INT64s, metadata.
    assert key == b"\x00\x07billing\x00\x0beast.orders\x00\x00\x00\x03"
    assert value == b"\x00\x00" + (120).to_bytes(8, "big") + (118).to_bytes(8, "big") + b"\x00\x00"
    assert decode_checkpoint(key, value) == c
    for bad in ((key, value[:5]), (key, b"\x00\x01" + value[2:]), (None, value), (key[:3], value)):
        with pytest.raises(Undecodable):
            decode_checkpoint(*bad)


def test_remote_topics_and_filters_follow_the_replication_policy() -> None:
    flow = Flow("c", "east", "west", NOWHERE, NOWHERE, None, None, {}, topics=r"orders\..*, audit")
    assert flow.remote_topic("orders.eu") == "east.orders.eu" and flow.checkpoints_topic == "east.checkpoints.internal"
    assert [t for t in ("orders.eu", "audit", "auditx", "heartbeats", "west.orders.eu", "mm2-offset-syncs.west.internal",
                        "__consumer_offsets") if flow.replicates(t)] == ["orders.eu", "audit", "heartbeats"]
