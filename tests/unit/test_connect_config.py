"""console.connect_config: each Kafka cluster's Connect clusters, read from the environment."""

from __future__ import annotations

import json

import pytest

from console.connect_config import ConnectConfig, load_connect_clusters
from console.env import SettingError
from console.gateway.config import load_clusters

LOCAL_URL = "http://127.0.0.1:8083"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("KAFKA_CLUSTERS_FILE", "KAFKA_BOOTSTRAP_SERVERS", "KAFKA_CONNECT_URL", "KAFKA_CONNECT_USERNAME",
                 "KAFKA_CONNECT_PASSWORD", "KAFKA_CONNECT_CA", "KAFKA_CLUSTER_NAME"):
        monkeypatch.delenv(name, raising=False)


def connect_of(monkeypatch, tmp_path, clusters):
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps(clusters))
    monkeypatch.setenv("KAFKA_CLUSTERS_FILE", str(path))
    return load_connect_clusters(load_clusters(9092), LOCAL_URL)


def test_the_local_cluster_gets_the_local_worker():
    assert load_connect_clusters(load_clusters(9092), LOCAL_URL) == {"local": (ConnectConfig("local", LOCAL_URL),)}


def test_a_clusters_file_lists_several_connect_clusters_per_kafka_cluster(monkeypatch, tmp_path):
    found = connect_of(monkeypatch, tmp_path, [
        {"name": "prod", "bootstrap_servers": "k:9092",
         "connect": [{"name": "a", "url": "http://a:8083/"}, {"name": "b", "url": "https://b:8443", "username": "u", "password": "p"}]},
        {"name": "dev", "bootstrap_servers": "d:9092"},
    ])
    assert found == {"prod": (ConnectConfig("a", "http://a:8083"), ConnectConfig("b", "https://b:8443", "u", "p")), "dev": ()}


@pytest.mark.parametrize(("entry", "words"), [
    ({"name": "a", "url": "ftp://a"}, "url must be http(s)://host:port"),
    ({"name": "a", "url": "http://a:1", "colour": "red"}, "unknown keys ['colour']"),
    ({"name": "a b", "url": "http://a:1"}, "Connect cluster name 'a b'"),
    ({"name": "a", "url": "http://a:1", "ca": "/no/such/ca.pem"}, "is not a readable file"),
])
def test_a_bad_connect_entry_stops_start_up_with_a_sentence(monkeypatch, tmp_path, entry, words):
    with pytest.raises(SettingError, match="clusters.json\\[0\\].connect\\[0\\]") as caught:
        connect_of(monkeypatch, tmp_path, [{"name": "prod", "bootstrap_servers": "k:9092", "connect": [entry]}])
    assert words in str(caught.value)


def test_two_connect_clusters_of_one_name_are_refused(monkeypatch, tmp_path):
    with pytest.raises(SettingError, match="must be unique"):
        connect_of(monkeypatch, tmp_path, [{"name": "prod", "bootstrap_servers": "k:9092",
                                            "connect": [{"name": "a", "url": "http://a:1"}, {"name": "a", "url": "http://b:1"}]}])


def test_the_variables_form_takes_kafka_connect_url(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k:9092")
    monkeypatch.setenv("KAFKA_CONNECT_URL", "http://connect:8083")
    monkeypatch.setenv("KAFKA_CONNECT_USERNAME", "me")
    monkeypatch.setenv("KAFKA_CONNECT_PASSWORD", "secret")
    assert load_connect_clusters(load_clusters(9092), LOCAL_URL) == {
        "main": (ConnectConfig("connect", "http://connect:8083", "me", "secret"),)}


def test_the_variables_form_without_a_url_has_no_connect(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k:9092")
    assert load_connect_clusters(load_clusters(9092), LOCAL_URL) == {"main": ()}
