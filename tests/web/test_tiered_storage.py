"""Tiered storage on the topic page and API in-process, on a stand-in gateway: the figures per partition and
per topic from the offsets and the log dirs, local beside total retention, where each figure comes from,
the topics list's flag, sentences when Kafka does not answer, odd names as text. The real cluster:
tests/integration/test_tiered_storage.py."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from console import gateway
from console.converters import encode_name
from console.gateway import remote_log
from console.gateway.errors import ClusterUnavailable, NotFound
from console.gateway.tiered import TieredOffsets
from console.gateway.types import ConfigValue
from console.snapshots import store
from console.snapshots.model import PartitionState, Snapshot, TopicState
from topics_app import remote_sizes, tiered_watch

ODD = "tiered.odd_Name-1"  # (Kafka's topic names hold only letters, digits, '.', '_' and '-')
API = "/api/v1/clusters/local/topics/"


def segment(sid: str, partition: int, size: int, state: int) -> dict[str, Any]:
    """The fields of a remote log metadata segment record (remote_log.decode's answer)."""
    return {"remote_log_segment_id": {"topic_id_partition": {"name": ODD, "id": "tid", "partition": partition}, "id": sid},
            "segment_size_in_bytes": size, "remote_log_segment_state": state, "event_timestamp_ms": 1}


class FakeKafka:
    def __init__(self) -> None:
        self.offsets_fail = False
        self.configs_fail = False
        self.remote_fail: Exception | None = None
        # Partition 0: two segments copied, one being copied; partition 1: nothing.
        self.remote = [segment("s1", 0, 600_000, remote_sizes.COPY_FINISHED), segment("s2", 0, 400_000, remote_sizes.COPY_FINISHED),
                       segment("s3", 0, 100_000, remote_sizes.COPY_STARTED)]
        self.remote_reads: list[dict[int, int]] = []

    def read_remote(self, gw: Any, positions: dict[int, int], on_record: Any) -> dict[int, int]:
        """Stands for remote_log.read: the records past `positions` (one metadata partition)."""
        if self.remote_fail is not None:
            raise self.remote_fail
        self.remote_reads.append(dict(positions))
        for fields in self.remote[positions.get(0, 0):]:
            on_record(remote_sizes.SEGMENT, fields)
        return {0: len(self.remote)}

    def describe_topic_configs(self, topic: str) -> list[ConfigValue]:
        if self.configs_fail:
            raise ClusterUnavailable("Cluster 'local' is not reachable (no Kafka in this test).")
        values = {"retention.ms": "604800000", "retention.bytes": "-1", "segment.bytes": "1048576",
                  "remote.storage.enable": "true" if topic == ODD else "false",
                  "local.retention.ms": "1000" if topic == ODD else "-2", "local.retention.bytes": "-2"}
        return [ConfigValue(k, v, "dynamic topic", False, False, False) for k, v in sorted(values.items())]

    def tiered_offsets(self, topic: str, partitions: list[int]) -> dict[int, TieredOffsets]:
        if self.offsets_fail:
            raise ClusterUnavailable("Cluster 'local' did not answer ListOffsets in time.")
        return {0: TieredOffsets(earliest=0, earliest_local=3000, latest_tiered=3999, latest=4500),
                1: TieredOffsets(earliest=10, earliest_local=10, latest_tiered=-1, latest=700)}

    def topic_configs(self, topics: Any, keys: Any = None) -> dict[str, dict[str, str]]:
        return {t: {"remote.storage.enable": "true" if t == ODD else "false"} for t in topics}

    def __getattr__(self, name: str) -> Any:  # (the page's other sections: ACLs, ...)
        raise ClusterUnavailable("Cluster 'local' is not reachable (no Kafka in this test).")


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch, snapshot: Snapshot) -> FakeKafka:
    parts = [PartitionState(0, 1, [1, 2], [1, 2], [], 0, 4500, size=1_500_000, replica_sizes={"1": 1_500_000, "2": 1_400_000}),
             PartitionState(1, 2, [2, 1], [2, 1], [], 10, 700, size=300_000, replica_sizes={"2": 300_000, "1": 300_000})]
    snapshot.topics = {**snapshot.topics, ODD: TopicState(ODD, False, parts, min_isr=1)}
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    fake = FakeKafka()
    monkeypatch.setattr(gateway, "for_cluster", lambda name: (gateway.cluster_config(name), fake)[1])
    monkeypatch.setattr(remote_log, "read", fake.read_remote)
    monkeypatch.setattr(tiered_watch, "_indexes", {})
    store.client().delete(tiered_watch.key("local"), remote_sizes.key("local"))
    return fake


def detail(client: Any, topic: str) -> Any:
    return client.get(API + quote(encode_name(topic)) + "/")


def test_the_api_places_each_partition_between_remote_storage_and_the_local_log(client_as: Any, kafka: FakeKafka) -> None:
    assert detail(client_as("viewer"), ODD).json()["tiered_storage"] is None  # (not listed by the watcher yet)
    tiered_watch.look("local")
    t = detail(client_as("viewer"), ODD).json()["tiered_storage"]
    p0, p1 = t["partitions"]
    assert p0 == {"partition": 0, "leader": 1, "local_bytes": 1_500_000, "replica_local_bytes": {"1": 1_500_000, "2": 1_400_000},
                  "earliest_offset": 0, "earliest_local_offset": 3000, "latest_tiered_offset": 3999, "high_watermark": 4500,
                  "remote_only_records": 3000, "tiered_records": 4000, "local_records": 1500, "untiered_records": 500,
                  "remote_bytes": 1_000_000, "remote_segments": 2, "remote_copying_bytes": 100_000}
    # Nothing tiered yet: the whole log waits, and nothing is in remote storage only.
    assert (p1["latest_tiered_offset"], p1["tiered_records"], p1["remote_only_records"], p1["untiered_records"]) == (None, 0, 0, 690)
    assert (p1["remote_bytes"], p1["remote_segments"], p1["remote_copying_bytes"]) == (0, 0, 0)
    assert t["totals"] == {"local_bytes": 1_800_000, "replica_local_bytes": 3_500_000, "remote_only_records": 3000,
                           "tiered_records": 4000, "local_records": 2190, "untiered_records": 1190, "remote_bytes": 1_000_000,
                           "remote_segments": 2, "remote_copying_bytes": 100_000}
    assert t["retention"] == [{"unit": "ms", "total": "604800000", "local": "1000", "local_effective": "1000"},
                              {"unit": "bytes", "total": "-1", "local": "-2", "local_effective": "-1"}]
    assert t["remote_bytes"] == 1_000_000 and t["remote_error"] is None and t["remote_as_of"] > 0
    assert "RemoteLogSizeBytes" in t["sources"]["remote_bytes"] and "__remote_log_metadata" in t["sources"]["remote_bytes"]
    assert "DescribeLogDirs" in t["sources"]["local_bytes"] and "(-4)" in t["sources"]["offsets"]
    assert t["configs"]["remote.storage.enable"] == "true" and t["offsets_error"] is None


def test_each_look_reads_only_what_the_remote_log_metadata_gained_since_the_last(client_as: Any, kafka: FakeKafka) -> None:
    tiered_watch.look("local")
    kafka.remote.append({**segment("s3", 0, 100_000, remote_sizes.COPY_FINISHED)})  # (its copy finished: now held)
    tiered_watch.look("local")
    assert kafka.remote_reads == [{}, {0: 3}]
    t = detail(client_as("viewer"), ODD).json()["tiered_storage"]
    assert (t["remote_bytes"], t["totals"]["remote_segments"], t["totals"]["remote_copying_bytes"]) == (1_100_000, 3, 0)


@pytest.mark.parametrize(("fault", "sentence"), [
    (ClusterUnavailable("Cluster 'local' did not answer in time."), "Cluster &#x27;local&#x27; did not answer in time."),
    (NotFound("Topic '__remote_log_metadata' does not exist."), "has no __remote_log_metadata topic"),
    (remote_log.SchemasMissing("Kafka's remote log metadata schemas are not installed."), "schemas are not installed"),
])
def test_unread_remote_sizes_leave_the_rest_and_say_why(client_as: Any, kafka: FakeKafka, fault: Exception, sentence: str) -> None:
    kafka.remote_fail = fault
    tiered_watch.look("local")
    t = detail(client_as("viewer"), ODD).json()["tiered_storage"]
    assert t["remote_bytes"] is None and t["remote_error"] and t["totals"]["tiered_records"] == 4000
    assert t["partitions"][0]["remote_bytes"] is None
    page = client_as("viewer").get("/clusters/local/topics/" + quote(encode_name(ODD)) + "/").content.decode()
    assert "The remote sizes could not be read: " in page and sentence in page


def test_before_the_watcher_read_remote_sizes_the_page_says_so(client_as: Any, kafka: FakeKafka) -> None:
    page = client_as("viewer").get("/clusters/local/topics/" + quote(encode_name(ODD)) + "/").content.decode()
    assert "The remote sizes are not known yet" in page and 'id="tiered-remote-bytes" data-bytes=""' in page


def test_a_topic_without_remote_storage_has_no_tiered_section(client_as: Any, kafka: FakeKafka) -> None:
    tiered_watch.look("local")
    assert detail(client_as("viewer"), "orders").json()["tiered_storage"] is None
    page = client_as("viewer").get("/clusters/local/topics/orders/")
    assert page.status_code == 200 and b'id="tiered-storage"' not in page.content


def test_the_page_shows_the_figures_and_retention_side_by_side(client_as: Any, kafka: FakeKafka) -> None:
    page = client_as("viewer").get("/clusters/local/topics/" + quote(encode_name(ODD)) + "/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="tiered-storage"' in html
    section = html[html.index('id="tiered-storage"'):]
    assert 'id="tiered-remote-only">3000<' in section and 'id="tiered-lag">1190<' in section
    assert "none yet" in section  # (partition 1: nothing tiered)
    assert "as in total: -1" in section and "local.retention.*" in section
    assert "RemoteLogSizeBytes" in section and "segment.bytes=1048576" in section


def test_unanswered_offsets_leave_the_local_figures_and_say_why(client_as: Any, kafka: FakeKafka) -> None:
    kafka.offsets_fail = True
    tiered_watch.look("local")
    t = detail(client_as("viewer"), ODD).json()["tiered_storage"]
    assert t["offsets_error"] == "Cluster 'local' did not answer ListOffsets in time."
    assert t["totals"]["local_bytes"] == 1_800_000 and t["totals"]["remote_only_records"] is None
    page = client_as("viewer").get("/clusters/local/topics/" + quote(encode_name(ODD)) + "/").content.decode()
    assert "The offsets could not be read: Cluster &#x27;local&#x27; did not answer ListOffsets in time." in page


def test_unreadable_configs_answer_with_the_snapshot_and_a_sentence(client_as: Any, kafka: FakeKafka) -> None:
    tiered_watch.look("local")
    kafka.configs_fail = True
    r = detail(client_as("viewer"), ODD)
    assert r.status_code == 200 and r.json()["partitions"]
    assert r.json()["tiered_storage"] == {"enabled": None, "error": "Cluster 'local' is not reachable (no Kafka in this test)."}


@pytest.mark.parametrize("name", ["no-such-topic", "</script><script>alert(1)</script>", "a%2Fb", "quo\"te'", "ünïcode/x"])
def test_an_unknown_or_impossible_topic_is_a_404_sentence_as_text(name: str, client_as: Any, kafka: FakeKafka) -> None:
    r = detail(client_as("viewer"), name)
    assert r.status_code == 404 and "does not exist" in r.json()["detail"], r.content
    page = client_as("viewer").get("/clusters/local/topics/" + quote(encode_name(name)) + "/")
    assert page.status_code == 404 and b"<script>alert" not in page.content


def test_an_unknown_cluster_is_a_404_sentence(client_as: Any, kafka: FakeKafka) -> None:
    r = client_as("viewer").get("/api/v1/clusters/nowhere/topics/orders/")
    assert r.status_code == 404 and "nowhere" in r.json()["detail"]


def test_the_topics_list_flags_the_topics_the_watcher_found_tiered(client_as: Any, kafka: FakeKafka) -> None:
    rows = client_as("viewer").get(API).json()["results"]
    assert {r["name"]: r["tiered_storage"] for r in rows} == {ODD: False, "orders": False}  # (not looked yet)
    assert tiered_watch.look("local") == [ODD]
    rows = client_as("viewer").get(API).json()["results"]
    assert {r["name"]: r["tiered_storage"] for r in rows} == {ODD: True, "orders": False}
    html = client_as("viewer").get("/clusters/local/topics/").content.decode()
    row = html[html.index(f'data-topic="{ODD}"'):]
    assert ">tiered</span>" in row[:row.index("</tr>")]
    orders = html[html.index('data-topic="orders"'):]
    assert ">tiered</span>" not in orders[:orders.index("</tr>")]
