"""Groups of Kafka 4's new protocols: consumer groups (KIP-848, `group.protocol=consumer`) and share
groups (KIP-932). What the console says equals kafka-consumer-groups and kafka-share-groups."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer

from tests.conftest import Stack, unique, wait_for

pytestmark = pytest.mark.cluster
API = "/api/v1/clusters/local/consumer-groups/"


def rows(output: str, first: str = "GROUP") -> list[dict[str, str]]:
    """Rows of a kafka-*-groups table. Headers can hold a space ("COORDINATOR (ID)") and so can the
    coordinator cell ("host:port  (1)"), so that column is joined back before splitting."""
    found, header = [], None
    for line in output.splitlines():
        line = line.replace("COORDINATOR (ID)", "COORDINATOR")
        parts = line.split()
        if not parts:
            continue
        if parts[0] == first:
            header = parts
            continue
        if header and "COORDINATOR" in header:
            at = header.index("COORDINATOR")
            parts[at:at + 2] = [" ".join(parts[at:at + 2])]
        if header and len(parts) == len(header):
            found.append(dict(zip(header, parts, strict=True)))
    return found


def produce(stack: Stack, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap})
    for i in range(count):
        producer.produce(topic, value=f"m{i}".encode(), partition=i % partitions)
    assert producer.flush(20) == 0


def detail(stack: Stack, group: str) -> dict[str, Any] | None:
    r = stack.get(API + group + "/")
    return r.json() if r.status_code == 200 else None


class NewProtocolMember:
    """A consumer in a KIP-848 group: polls in a thread and commits what it read."""

    def __init__(self, stack: Stack, group: str, topic: str, client_id: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "group.protocol": "consumer",
                                  "client.id": client_id, "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.read = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            messages = self.consumer.consume(num_messages=20, timeout=0.2)
            if messages:
                self.read += len(messages)
                self.consumer.commit(asynchronous=False)
            if self.read >= 60:  # read part of the topic, then keep the membership without reading more
                self.consumer.pause(self.consumer.assignment())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.consumer.close()


@pytest.fixture
def topic(stack: Stack) -> str:
    name = unique("proto-topic")
    stack.cluster.tool("kafka-topics", "--create", "--topic", name, "--partitions", "4", "--replication-factor", "2")
    produce(stack, name, 200, 4)
    return name


def test_new_protocol_group_equals_kafka_consumer_groups(stack: Stack, topic: str) -> None:
    group = unique("proto-consumer")
    first = NewProtocolMember(stack, group, topic, "proto-a")
    second = None
    try:
        wait_for(lambda: (d := detail(stack, group)) and d["members"] == 1 and d["state"] == "Stable"
                 and sum(p["committed"] or 0 for p in d["partitions"]) == first.read >= 60, 40,
                 what="the new-protocol group, stable with its commits, in the console")
        second = NewProtocolMember(stack, group, topic, "proto-b")

        def settled() -> dict[str, Any] | None:
            d = detail(stack, group)
            if not d or d["members"] != 2 or d["state"] != "Stable":
                return None
            members = {m["client_id"]: m for m in d["member_list"]}
            both_assigned = all(m["assignment"] and m["target_assignment"] == m["assignment"] for m in members.values())
            return d if both_assigned and sum(len(m["assignment"]) for m in members.values()) == 4 else None

        wait_for(settled, 40, what="two members with the four partitions reconciled")
        # The describe names the members' partitions with the tuples it is given (the watcher's shared ones).
        from console import gateway
        from tests.integration.test_groups import named_by

        made: dict[tuple[str, int], tuple[str, int]] = {}
        described = {g.group_id: g for g in gateway.for_cluster(gateway.cluster_configs()[0].name).consumer_groups(named_by(made))}
        named = [tp for m in described[group].members for tp in (*m.assignment, *(m.target_assignment or ()))]
        assert len(named) >= 4 and all(tp is made[tp] for tp in named)

        def agree() -> bool:
            d = detail(stack, group)
            assert d is not None
            state = rows(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group, "--state", "--verbose"))
            members = rows(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group, "--members", "--verbose"))
            offsets = rows(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group, "--offsets"))
            assert d["group_type"] == "consumer" and d["error"] is None
            assert (d["state"], str(d["members"]), d["assignor"]) == (state[0]["STATE"], state[0]["#MEMBERS"],
                                                                       state[0]["ASSIGNMENT-STRATEGY"])
            assert str(d["generation"]) == state[0]["GROUP-EPOCH"]
            assert state[0]["COORDINATOR"].endswith(f"({d['coordinator']})")
            ours = {m["member_id"]: (m["client_id"], m["host"], str(m["epoch"]), ",".join(sorted(m["assignment"])))
                    for m in d["member_list"]}
            theirs = {}
            for m in members:
                # CURRENT-ASSIGNMENT looks like "topic:0,1" (one topic here).
                t, _, parts = m["CURRENT-ASSIGNMENT"].partition(":")
                assignment = ",".join(sorted(f"{t}-{p}" for p in parts.split(",") if p))
                theirs[m["CONSUMER-ID"]] = (m["CLIENT-ID"], m["HOST"].lstrip("/"), m["CURRENT-EPOCH"], assignment)
            assert ours == theirs
            by_tp = {(p["topic"], p["partition"]): p for p in d["partitions"]}
            for row in offsets:
                p = by_tp[(row["TOPIC"], int(row["PARTITION"]))]
                committed = None if row["CURRENT-OFFSET"] == "-" else int(row["CURRENT-OFFSET"])
                assert (p["committed"], p["end_offset"]) == (committed, int(row["LOG-END-OFFSET"]))
                if row["LAG"] != "-":
                    assert p["lag"] == int(row["LAG"])
                owner = next((m for m in members if m["CONSUMER-ID"] == row["CONSUMER-ID"]), None)
                assert p["member_id"] == (owner["CONSUMER-ID"] if owner else None)
            return True

        # The two reads are moments apart; a reconciliation in between is retried.
        wait_for(agree, 30, interval=1, what="the console and kafka-consumer-groups to agree")

        # The join bumped the group epoch; the console records it as a rebalance with both epochs.
        def join_recorded() -> dict[str, Any] | None:
            found = stack.get(API + group + "/rebalances/").json()["rebalances"]
            return next((r for r in found if any(j["client_id"] == "proto-b" for j in r["joined"])), None)

        rebalance = wait_for(join_recorded, 20, what="the join of proto-b in the rebalance history")
        assert rebalance["generation_after"] > rebalance["generation_before"] >= 1
    finally:
        first.close()
        if second is not None:
            second.close()


def test_reset_of_an_active_new_protocol_group_is_refused_then_applied_once_empty(stack: Stack, topic: str) -> None:
    group = unique("proto-reset")
    member = NewProtocolMember(stack, group, topic, "proto-r")
    try:
        wait_for(lambda: (d := detail(stack, group)) and d["members"] == 1 and d["state"] == "Stable", 40,
                 what="the new-protocol group in the console")
        body = {"to": "earliest", "topics": [topic], "dry_run": False, "confirm": group}
        r = stack.api("operator").post(stack.base_url + API + group + "/offsets", timeout=20, json=body)
        assert r.status_code == 400 and "empty" in r.json()["detail"], r.text
    finally:
        member.close()
    wait_for(lambda: (d := detail(stack, group)) and d["state"] == "Empty", 40, what="the group empty")
    r = stack.api("operator").post(stack.base_url + API + group + "/offsets", timeout=20, json={"to": "offset", "offset": 7, "topics": [topic],
                                                                      "dry_run": False, "confirm": group})
    assert r.status_code == 200, r.text
    offsets = rows(stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group, "--offsets"))
    assert {int(row["PARTITION"]): row["CURRENT-OFFSET"] for row in offsets} == {p: "7" for p in range(4)}


def test_share_group_equals_kafka_share_groups(stack: Stack, topic: str) -> None:
    group = unique("proto-share")
    stack.cluster.tool("kafka-configs", "--entity-type", "groups", "--entity-name", group, "--alter",
                       "--add-config", "share.auto.offset.reset=earliest")
    consumer = ShareConsumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "client.id": "share-a"})
    consumer.subscribe([topic])
    stop = threading.Event()
    read = [0]

    def run() -> None:
        while not stop.is_set():
            got = consumer.poll(0.5)
            read[0] += len(got)  # a Messages batch; acknowledged implicitly by the next poll

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: read[0] >= 200, 60, what="the share consumer to read the topic")

        def member_shown() -> dict[str, Any] | None:
            d = detail(stack, group)
            return d if d and d["members"] == 1 and d["member_list"][0]["assignment"] else None

        d = wait_for(member_shown, 40, what="the share group and its member in the console")
        assert d["group_type"] == "share" and d["error"] is None
        members = rows(stack.cluster.tool("kafka-share-groups", "--describe", "--group", group, "--members", "--verbose"))
        assert [(m["member_id"], m["client_id"], str(m["epoch"])) for m in d["member_list"]] == [
            (r["CONSUMER-ID"], r["CLIENT-ID"], r["MEMBER-EPOCH"]) for r in members]
        state = rows(stack.cluster.tool("kafka-share-groups", "--describe", "--group", group, "--state", "--verbose"))
        assert (d["state"], str(d["generation"])) == (state[0]["STATE"], state[0]["GROUP-EPOCH"])
    finally:
        stop.set()
        thread.join(5)
        consumer.close()

    # Everything read was acknowledged; what is produced now waits for the group: the start offsets
    # and the lag must equal kafka-share-groups once the console has sampled them.
    produce(stack, topic, 40, 4)

    def agree() -> bool:
        r = stack.get(API + group + "/")
        assert r.status_code == 200, (r.status_code, r.text[:300])
        d = r.json()
        offsets = rows(stack.cluster.tool("kafka-share-groups", "--describe", "--group", group, "--offsets"))
        assert offsets, "kafka-share-groups shows no offsets"
        by_tp = {(p["topic"], p["partition"]): p for p in d["partitions"]}
        for row in offsets:
            p = by_tp[(row["TOPIC"], int(row["PARTITION"]))]
            assert str(p["committed"]) == row["START-OFFSET"] and str(p["lag"]) == row["LAG"], (p, row)
        return sum(p["lag"] for p in d["partitions"]) == 40

    wait_for(agree, 30, interval=1, what="start offsets and lag equal to kafka-share-groups")
    listed = stack.get(API, params={"q": group}).json()
    assert [(g["group"], g["group_type"], g["total_lag"]) for g in listed["results"]] == [(group, "share", 40)]

    # Reset (the group is empty now): the preview equals kafka-share-groups' dry run, and after
    # applying, Kafka reports the new start offsets.
    wait_for(lambda: (d := detail(stack, group)) and d["state"] == "Empty", 30, what="the share group empty")
    reset = stack.api("operator").post(stack.base_url + API + group + "/offsets", timeout=20,
                                       json={"to": "earliest", "topics": [topic], "dry_run": True})
    assert reset.status_code == 200, reset.text
    dry = rows(stack.cluster.tool("kafka-share-groups", "--reset-offsets", "--to-earliest", "--dry-run", "--group", group,
                                  "--topic", topic))
    assert {(r["topic"], r["partition"]): r["new"] for r in reset.json()["offsets"]} == {
        (row["TOPIC"], int(row["PARTITION"])): int(row["NEW-OFFSET"]) for row in dry}
    applied = stack.api("operator").post(stack.base_url + API + group + "/offsets", timeout=20,
                                         json={"to": "offset", "offset": 10, "topics": [topic], "dry_run": False,
                                               "confirm": group})
    assert applied.status_code == 200, applied.text
    after = rows(stack.cluster.tool("kafka-share-groups", "--describe", "--group", group, "--offsets"))
    assert {int(row["PARTITION"]): row["START-OFFSET"] for row in after} == {p: "10" for p in range(4)}
    entries = stack.get("/api/v1/audit/").json()["entries"]
    assert any(e["action"] == "reset_offsets" and e["target"] == group and e["user"] == "operator" for e in entries)

    # Delete its offsets on the topic: kafka-share-groups then shows none.
    gone = stack.api("operator").delete(stack.base_url + API + group + "/offsets", params={"topic": topic, "confirm": group},
                                        timeout=20)
    assert gone.status_code == 200, gone.text
    remaining = rows(stack.cluster.tool("kafka-share-groups", "--describe", "--group", group, "--offsets"))
    assert all(row["START-OFFSET"] == "-" for row in remaining), remaining
