"""Kafka Connect against the real worker (fixture `connect_worker`): the console's view equals Connect's own."""

from __future__ import annotations

import pytest

from connect_app.client import ConnectClient, ConnectRefused, ConnectUnreachable
from console.connect_config import ConnectConfig

pytestmark = pytest.mark.cluster


def test_client_reads_the_worker_and_its_plugins(connect_worker: str) -> None:
    client = ConnectClient(ConnectConfig(name="local", url=connect_worker))
    assert client.server_info()["version"]
    classes = {p["class"] for p in client.plugins()}
    assert "org.apache.kafka.connect.file.FileStreamSinkConnector" in classes


def test_client_carries_connects_own_message_for_an_unknown_connector(connect_worker: str) -> None:
    client = ConnectClient(ConnectConfig(name="local", url=connect_worker))
    with pytest.raises(ConnectRefused) as caught:
        client.status("no-such-connector")
    assert caught.value.http_status == 404
    assert "no-such-connector" in caught.value.message and connect_worker in caught.value.message


def test_client_says_a_worker_that_does_not_answer_is_unreachable() -> None:
    client = ConnectClient(ConnectConfig(name="gone", url="http://127.0.0.1:1"), timeout=2)
    with pytest.raises(ConnectUnreachable) as caught:
        client.connectors()
    assert caught.value.message == "Connect cluster 'gone' at http://127.0.0.1:1 is unreachable (connection refused)."
