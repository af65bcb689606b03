"""Streams groups (KIP-1071) on the group page and in the API, with Kafka's answers faked at the gateway:
the topology, members' tasks and input lag; a reset refused while the application runs, with a
sentence; reset and delete of an inactive group; roles; odd names shown as text."""

from __future__ import annotations

from typing import Any

import pytest

from console.converters import encode_name
from console.gateway.errors import ClusterUnavailable
from console.gateway.streams import StreamsAssignment, StreamsGroup, StreamsMember, Subtopology
from console.models import AuditEntry
from console.snapshots import store
from console.snapshots.model import GroupState, MemberState, Snapshot
from tests.web.kafka_double import KafkaDouble

APP = "word<script>alert(1)</script>/50% 'ü\""
REPARTITION = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
CHANGELOG = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"
API = f"/api/v1/clusters/local/consumer-groups/{encode_name(APP)}/"
PAGE = f"/clusters/local/groups/{encode_name(APP)}/"


def described(state: str = "Stable") -> StreamsGroup:
    tasks = StreamsAssignment(active=(("0", (0, 1)), ("1", (0,))), standby=(), warmup=(("1", (1,)),))
    member = StreamsMember(member_id="m-<b>1</b>", instance_id=None, client_id=f"{APP}-StreamThread-1", host="10.0.0.9",
                           process_id="proc-'1'", member_epoch=7, topology_epoch=0, is_classic=False,
                           assignment=tasks, target_assignment=tasks)
    return StreamsGroup(
        group_id=APP, state=state, group_epoch=7, assignment_epoch=6, topology_epoch=0, coordinator=2,
        subtopologies=(Subtopology("0", ("orders",), (REPARTITION,), (), ()),
                       Subtopology("1", (), (), ((REPARTITION, 4),), (CHANGELOG,))),
        members=(member,) if state == "Stable" else ())


class StreamsKafka(KafkaDouble):
    def __init__(self, state: str = "Stable") -> None:
        super().__init__()
        self.state = state

    def streams_group(self, group_id: str) -> StreamsGroup:
        if self.state == "unreachable":
            raise ClusterUnavailable("Cluster 'local' did not answer in time (describe streams group).")
        return described(self.state)

    def group_state(self, group_id: str) -> tuple[str, int, str]:
        return (self.state, 1 if self.state == "Stable" else 0, "streams")

    def authorizer(self) -> tuple[str | None, bool]:  # the page's ACL section: no authorizer here
        return None, False


@pytest.fixture
def streams_group(snapshot: Snapshot) -> Snapshot:
    members = [MemberState("m-<b>1</b>", f"{APP}-StreamThread-1", "10.0.0.9", [["orders", 0], ["orders", 1]])]
    snapshot.groups = {**snapshot.groups, APP: GroupState(APP, "Stable", "streams", "streams", "", members,
                                                          {"orders:0": 4, "orders:1": 20})}
    snapshot.topic_groups["orders"] = [APP]
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    return snapshot


def kafka_as(monkeypatch: pytest.MonkeyPatch, state: str) -> StreamsKafka:
    from console import gateway

    double = StreamsKafka(state)
    monkeypatch.setattr(gateway, "for_cluster", lambda name: (gateway.cluster_config(name), double)[1])
    return double


def test_the_api_describes_members_tasks_topology_and_the_lag_of_each_subtopologys_inputs(
        client_as: Any, monkeypatch: pytest.MonkeyPatch, streams_group: Snapshot) -> None:
    kafka_as(monkeypatch, "Stable")
    r = client_as("viewer").get(API + "streams/")
    assert r.status_code == 200, r.content
    d = r.json()
    assert (d["group"], d["state"], d["group_epoch"], d["assignment_epoch"], d["topology_epoch"]) == (APP, "Stable", 7, 6, 0)
    (m,) = d["members"]
    assert (m["process_id"], m["protocol"], m["member_epoch"]) == ("proc-'1'", "streams", 7)
    assert m["assignment"] == {"active": [{"subtopology": "0", "partitions": [0, 1]}, {"subtopology": "1", "partitions": [0]}],
                               "standby": [], "warmup": [{"subtopology": "1", "partitions": [1]}]}
    assert d["subtopologies"][1] == {"subtopology": "1", "source_topics": [], "repartition_sink_topics": [],
                                     "repartition_source_topics": [{"topic": REPARTITION, "partitions": 4}],
                                     "changelog_topics": [CHANGELOG]}
    first = d["lag"][0]
    # orders: ends 10, 20, unknown, 5 (the sample snapshot); committed 4 and 20 on partitions 0 and 1
    assert [(r["partition"], r["committed"], r["end_offset"], r["lag"]) for r in first["partitions"]] == [
        (0, 4, 10, 6), (1, 20, 20, 0), (2, None, None, None), (3, None, 5, None)]
    assert (first["subtopology"], first["lag"], first["unknown_partitions"]) == ("0", 6, 2)
    assert d["lag"][1] == {"subtopology": "1", "lag": None, "unknown_partitions": 0, "partitions": []}  # not in the snapshot


def test_the_group_page_shows_the_topology_and_tasks_with_odd_names_as_text(
        client_as: Any, monkeypatch: pytest.MonkeyPatch, streams_group: Snapshot) -> None:
    kafka_as(monkeypatch, "Stable")
    r = client_as("viewer").get(PAGE)
    assert r.status_code == 200
    html = r.content.decode()
    assert 'id="streams-topology"' in html and 'id="streams-members"' in html and 'id="streams-lag"' in html
    assert "<script>alert(1)" not in html and "word&lt;script&gt;alert(1)&lt;/script&gt;/50% &#x27;ü&quot;" in html
    assert "m-&lt;b&gt;1&lt;/b&gt;" in html and "proc-&#x27;1&#x27;" in html
    assert '<td class="mono small tasks-warmup"><div>1: 1</div>' in html
    assert '<td class="mono small tasks-active"><div>0: 0, 1</div><div>1: 0</div>' in html


def test_the_page_says_why_when_kafka_cannot_describe_the_group_now(
        client_as: Any, monkeypatch: pytest.MonkeyPatch, streams_group: Snapshot) -> None:
    kafka_as(monkeypatch, "unreachable")
    r = client_as("viewer").get(PAGE)
    assert r.status_code == 200
    assert b'id="streams-error"' in r.content and b"did not answer in time" in r.content
    assert client_as("viewer").get(API + "streams/").status_code == 503


def test_a_group_of_another_kind_is_refused_and_an_unknown_one_is_a_404(
        client_as: Any, monkeypatch: pytest.MonkeyPatch, streams_group: Snapshot) -> None:
    from tests.web.kafka_double import add_empty_group

    kafka_as(monkeypatch, "Stable")
    add_empty_group(streams_group)
    r = client_as("viewer").get("/api/v1/clusters/local/consumer-groups/billing~2Fsettle/streams/")
    assert r.status_code == 400 and r.json()["detail"] == "Group 'billing/settle' is a classic group, not a streams group (KIP-1071)."
    r = client_as("viewer").get("/api/v1/clusters/local/consumer-groups/nope/streams/")
    assert r.status_code == 404 and "'nope' does not exist" in r.json()["detail"]


def test_a_reset_of_a_running_streams_application_is_refused_with_a_sentence(
        client_as: Any, monkeypatch: pytest.MonkeyPatch, streams_group: Snapshot) -> None:
    kafka = kafka_as(monkeypatch, "Stable")
    body = {"to": "earliest", "topics": ["orders"], "confirm": APP}
    r = client_as("operator").post(API + "offsets/", body, content_type="application/json")
    assert r.status_code == 400, r.content
    assert r.json()["detail"] == (f"Streams group '{APP}' is Stable with 1 member: its offsets can only be reset while the "
                                  "group is inactive (empty). Stop every instance of the Streams application first.")
    assert kafka.changes("alter_group_offsets") == []
    assert AuditEntry.objects.get(action="reset_offsets", target=APP).outcome == "refused"


def test_an_inactive_streams_group_is_previewed_reset_and_deleted_by_an_operator_not_a_viewer(
        client_as: Any, monkeypatch: pytest.MonkeyPatch, streams_group: Snapshot) -> None:
    kafka = kafka_as(monkeypatch, "Empty")
    body = {"to": "earliest", "topics": ["orders"], "confirm": APP}
    assert client_as("viewer").post(API + "offsets/", body, content_type="application/json").status_code == 403
    preview = client_as("operator").post(API + "offsets/", {**body, "dry_run": True}, content_type="application/json")
    assert preview.status_code == 200 and preview.json()["dry_run"] is True
    assert kafka.changes("alter_group_offsets") == []
    r = client_as("operator").post(API + "offsets/", body, content_type="application/json")
    assert r.status_code == 200, r.content
    assert kafka.changes("alter_group_offsets") == [(APP, {("orders", p): 0 for p in range(4)})]
    assert client_as("viewer").delete(API, {"confirm": APP}, content_type="application/json").status_code == 403
    r = client_as("operator").delete(API, {"confirm": APP}, content_type="application/json")
    assert r.status_code == 200 and kafka.changes("delete_group") == [APP]
    assert AuditEntry.objects.filter(action="delete_group", target=APP, outcome="ok").count() == 1


def test_an_admin_deletes_the_group_with_its_internal_topics_an_operator_may_not(
        client_as: Any, monkeypatch: pytest.MonkeyPatch, streams_group: Snapshot) -> None:
    kafka = kafka_as(monkeypatch, "Empty")
    body = {"confirm": APP, "internal_topics": True}
    r = client_as("operator").delete(API, body, content_type="application/json")
    assert r.status_code == 403 and "delete" in r.json()["detail"], r.content
    assert kafka.changes("delete_group") == [] and kafka.changes("delete_topic") == []
    r = client_as("admin").delete(API, body, content_type="application/json")
    assert r.status_code == 200, r.content
    assert r.json() == {"deleted": APP, "deleted_topics": sorted([CHANGELOG, REPARTITION])}
    assert kafka.changes("delete_group") == [APP] and kafka.changes("delete_topic") == sorted([CHANGELOG, REPARTITION])
    entry = AuditEntry.objects.get(action="delete_group", target=APP, outcome="ok")
    assert entry.details["topics"] == sorted([CHANGELOG, REPARTITION])


def test_only_a_streams_group_has_internal_topics_to_delete(client_as: Any, monkeypatch: pytest.MonkeyPatch,
                                                             streams_group: Snapshot) -> None:
    from tests.web.kafka_double import add_empty_group

    kafka = kafka_as(monkeypatch, "Empty")
    add_empty_group(streams_group)
    r = client_as("admin").delete("/api/v1/clusters/local/consumer-groups/billing~2Fsettle/",
                                  {"confirm": "billing/settle", "internal_topics": True}, content_type="application/json")
    assert r.status_code == 400 and "only a streams group has internal topics" in r.json()["detail"]
    assert kafka.changes("delete_group") == []


def test_the_pages_delete_form_offers_the_internal_topics_and_deletes_them(client_as: Any, monkeypatch: pytest.MonkeyPatch,
                                                                          streams_group: Snapshot) -> None:
    kafka = kafka_as(monkeypatch, "Empty")
    admin = client_as("admin")
    assert b'name="internal_topics"' in admin.get(PAGE).content
    r = admin.post(PAGE + "delete/", {"confirm": APP, "internal_topics": "1"}, follow=True)
    assert r.status_code == 200 and kafka.changes("delete_topic") == sorted([CHANGELOG, REPARTITION])
    assert "and its internal topics" in r.content.decode()


def test_a_reset_without_topics_takes_the_topologys_input_topics_not_its_repartition_topics(
        client_as: Any, monkeypatch: pytest.MonkeyPatch, streams_group: Snapshot) -> None:
    kafka_as(monkeypatch, "Empty")
    r = client_as("operator").post(API + "offsets/", {"to": "earliest", "dry_run": True}, content_type="application/json")
    assert r.status_code == 200, r.content
    assert {row["topic"] for row in r.json()["offsets"]} == {"orders"}
