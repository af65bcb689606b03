"""Topics: list and detail equal Kafka's own tools; every change is checked, dry-run first, audited."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.conftest import Stack, kafka_tool, unique, wait_for

pytestmark = pytest.mark.cluster

API = "/api/v1/clusters/local/topics/"


def post(stack: Stack, path: str, body: dict[str, Any], user: str = "operator", method: str = "post") -> requests.Response:
    return getattr(stack.api(user), method)(stack.base_url + path, json=body, timeout=30)


def topic_names(stack: Stack) -> set[str]:
    return {r["name"] for r in stack.get(API, params={"page_size": 1000}).json()["results"]}


def make_topic(stack: Stack, prefix: str, partitions: int = 3, rf: int = 3, configs: dict[str, str] | None = None) -> str:
    name = unique(prefix)
    r = post(stack, API, {"name": name, "partitions": partitions, "replication_factor": rf, "configs": configs or {}})
    assert r.status_code == 201, r.text
    wait_for(lambda: name in topic_names(stack), 15, what=f"{name} in the topics list")
    return name


def produce(stack: Stack, topic: str, n: int) -> None:
    kafka_tool("kafka-producer-perf-test", "--topic", topic, "--num-records", str(n), "--record-size", "200",
               "--throughput", "-1", "--producer-props", f"bootstrap.servers={stack.cluster.bootstrap}", "acks=all")


def describe_configs(stack: Stack, topic: str) -> dict[str, str]:
    out = stack.cluster.tool("kafka-configs", "--describe", "--all", "--entity-type", "topics", "--entity-name", topic)
    configs = {}
    for line in out.splitlines():
        line = line.strip()
        if "=" in line and not line.startswith("All configs"):
            key, _, rest = line.partition("=")
            configs[key] = rest.split(" sensitive=")[0]
    return configs


def test_create_dry_run_shows_kafkas_verdict_and_creates_nothing(stack: Stack) -> None:
    name = unique("dry")
    r = post(stack, API, {"name": name, "partitions": 2, "replication_factor": 3, "dry_run": True})
    assert r.status_code == 200 and r.json()["dry_run"] is True
    assert "Kafka accepts" in r.json()["message"]
    assert name not in stack.cluster.tool("kafka-topics", "--list").split()


def test_created_topic_has_the_layout_and_configs_asked_for(stack: Stack) -> None:
    name = make_topic(stack, "created", partitions=4, rf=2, configs={"retention.ms": "3600000", "cleanup.policy": "compact"})
    detail = stack.get(API + name + "/").json()
    assert (detail["partition_count"], len(detail["partitions"]), detail["replication_factor"]) == (4, 4, 2)
    out = stack.cluster.tool("kafka-topics", "--describe", "--topic", name)
    assert "PartitionCount: 4" in out and "ReplicationFactor: 2" in out
    configs = describe_configs(stack, name)
    assert configs["retention.ms"] == "3600000" and configs["cleanup.policy"] == "compact"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"name": "x" * 250, "partitions": 1, "replication_factor": 1}, "at most 249"),
        ({"name": "bad name!", "partitions": 1, "replication_factor": 1}, "' '"),
        ({"name": ".", "partitions": 1, "replication_factor": 1}, "cannot be named '.'"),
        ({"name": "..", "partitions": 1, "replication_factor": 1}, "cannot be named '..'"),
        ({"name": "ok-name-zero", "partitions": 0, "replication_factor": 1}, "at least 1 partition"),
        ({"name": "ok-name-neg", "partitions": -3, "replication_factor": 1}, "at least 1 partition"),
        ({"name": "ok-name-rf", "partitions": 1, "replication_factor": 4}, "more than the 3 live brokers"),
        ({"name": "ok-name-key", "partitions": 1, "replication_factor": 1, "configs": {"no.such.config": "1"}}, "no.such.config"),
        ({"name": "ok-name-value", "partitions": 1, "replication_factor": 1, "configs": {"retention.ms": "soon"}}, "retention.ms"),
        ({"name": "ok-name-type", "partitions": "three", "replication_factor": 1}, "'partitions'"),
        ({"partitions": 1, "replication_factor": 1}, "'name'"),
    ],
)
def test_bad_topic_is_refused_with_a_clear_message_and_nothing_is_created(stack: Stack, body: dict, words: str) -> None:
    r = post(stack, API, body)
    assert r.status_code == 400, r.text
    assert words in r.json()["detail"]
    assert str(body.get("name")) not in stack.cluster.tool("kafka-topics", "--list").split()


def test_name_colliding_by_dot_and_underscore_is_refused(stack: Stack) -> None:
    name = make_topic(stack, "collide.a", partitions=1, rf=1)
    r = post(stack, API, {"name": name.replace(".", "_"), "partitions": 1, "replication_factor": 1})
    assert r.status_code == 400 and "collide" in r.json()["detail"]
    r = post(stack, API, {"name": name, "partitions": 1, "replication_factor": 1})
    assert r.status_code == 400 and "already exists" in r.json()["detail"]


def test_counts_offsets_and_sizes_equal_kafka_get_offsets_and_kafka_log_dirs(stack: Stack) -> None:
    name = make_topic(stack, "counts", partitions=3, rf=3)
    produce(stack, name, 600)
    out = stack.cluster.tool("kafka-get-offsets", "--topic", name)
    ends = {int(line.split(":")[1]): int(line.split(":")[2]) for line in out.split()}
    assert sum(ends.values()) == 600

    def row() -> dict:
        return next(r for r in stack.get(API, params={"q": name}).json()["results"] if r["name"] == name)

    wait_for(lambda: row()["messages"] == 600, 20, what="600 messages in the topics list")
    parts = {p["partition"]: p for p in stack.get(API + name + "/").json()["partitions"]}
    assert {n: p["end_offset"] for n, p in parts.items()} == ends

    import json as _json

    def log_dirs() -> dict[tuple[int, int], int]:
        out = stack.cluster.tool("kafka-log-dirs", "--describe", "--topic-list", name)
        data = _json.loads(next(line for line in out.splitlines() if line.startswith("{")))
        return {(b["broker"], int(p["partition"].rsplit("-", 1)[1])): p["size"]
                for b in data["brokers"] for d in b["logDirs"] for p in d["partitions"]}

    seen: dict[str, Any] = {}

    def sizes_match() -> bool:
        seen["kafka"] = expected = log_dirs()
        now = {p["partition"]: p for p in stack.get(API + name + "/").json()["partitions"]}
        seen["console"] = got = {(int(b), n): size for n, p in now.items() for b, size in p["replica_sizes"].items()}
        return got == expected and sum(got.values()) > 0

    try:
        wait_for(sizes_match, 30, interval=1, what="replica sizes equal to kafka-log-dirs")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {seen}") from None
    wait_for(lambda: row()["size"] == sum(p["size"] for p in stack.get(API + name + "/").json()["partitions"]), 10,
             what="topic size = sum of partition sizes")


def test_configs_equal_kafka_configs_describe_all(stack: Stack) -> None:
    name = make_topic(stack, "cfg", partitions=1, rf=3, configs={"retention.ms": "7200000"})
    ours = {c["name"]: c for c in stack.get(API + name + "/configs/").json()["configs"]}
    theirs = describe_configs(stack, name)
    assert {k: c["value"] for k, c in ours.items() if not c["is_sensitive"]} == {
        k: v for k, v in theirs.items() if k in ours and not ours[k]["is_sensitive"]}
    assert ours["retention.ms"]["source"] == "dynamic topic" and ours["retention.ms"]["overridden"] is True
    assert ours["cleanup.policy"]["source"] == "default" and ours["cleanup.policy"]["overridden"] is False
    assert ours["segment.bytes"]["source"] == "static broker"


def test_config_change_is_validated_previewed_then_applied_incrementally(stack: Stack) -> None:
    name = make_topic(stack, "alter", partitions=1, rf=3, configs={"retention.ms": "7200000", "max.message.bytes": "2000000"})
    path = API + name + "/configs/"
    r = post(stack, path, {"set": {"retention.ms": "60000"}, "dry_run": True}, method="patch")
    assert r.status_code == 200 and r.json()["diff"] == [
        {"name": "retention.ms", "old": "7200000", "new": "60000", "old_source": "dynamic topic"}]
    assert describe_configs(stack, name)["retention.ms"] == "7200000"
    r = post(stack, path, {"set": {"retention.ms": "60000"}, "delete": ["max.message.bytes"]}, method="patch")
    assert r.status_code == 200, r.text
    after = describe_configs(stack, name)
    assert after["retention.ms"] == "60000"
    assert after["max.message.bytes"] == "1048588"  # back to the default; nothing else touched
    for bad, word in (({"set": {"nope.key": "1"}}, "nope.key"), ({"set": {"retention.ms": "-5x"}}, "retention.ms")):
        r = post(stack, path, bad, method="patch")
        assert r.status_code == 400 and word in r.json()["detail"], r.text
    assert describe_configs(stack, name)["retention.ms"] == "60000"


def test_adding_partitions_needs_a_larger_count_and_changes_kafkas_layout(stack: Stack) -> None:
    name = make_topic(stack, "grow", partitions=2, rf=3)
    path = API + name + "/partitions/"
    for count, words in ((2, "more than that"), (1, "more than that"), (0, "at least 1")):
        r = post(stack, path, {"count": count})
        assert r.status_code == 400 and words in r.json()["detail"], r.text
    r = post(stack, path, {"count": 5, "dry_run": True})
    assert r.status_code == 200 and "different partitions" in r.json()["message"]
    assert "PartitionCount: 2" in stack.cluster.tool("kafka-topics", "--describe", "--topic", name)
    assert post(stack, path, {"count": 5}).status_code == 200
    assert "PartitionCount: 5" in stack.cluster.tool("kafka-topics", "--describe", "--topic", name)
    wait_for(lambda: len(stack.get(path).json()["partitions"]) == 5, 15, what="5 partitions in the API")


def test_purge_deletes_records_below_the_offset(stack: Stack) -> None:
    name = make_topic(stack, "purge", partitions=1, rf=3)
    produce(stack, name, 300)
    path = API + name + "/records/"
    r = post(stack, path, {"offsets": {"0": 9999}}, method="delete")
    assert r.status_code == 400 and "outside partition 0" in r.json()["detail"]
    r = post(stack, path, {"offsets": {"7": 1}}, method="delete")
    assert r.status_code == 400 and "no partition 7" in r.json()["detail"]
    r = post(stack, path, {"offsets": {"0": 120}}, method="delete")
    assert r.status_code == 200, r.text
    assert stack.cluster.tool("kafka-get-offsets", "--topic", name, "--time", "-2").split() == [f"{name}:0:120"]
    assert post(stack, path, {"all": True}, method="delete").status_code == 200
    assert stack.cluster.tool("kafka-get-offsets", "--topic", name, "--time", "-2").split() == [f"{name}:0:300"]


def test_only_an_admin_deletes_a_topic_and_only_after_typing_its_name(stack: Stack) -> None:
    name = make_topic(stack, "doomed", partitions=1, rf=1)
    for user in ("viewer", "operator"):
        assert post(stack, API + name + "/", {"confirm": name}, user=user, method="delete").status_code == 403
    r = post(stack, API + name + "/", {"confirm": "something-else"}, user="admin", method="delete")
    assert r.status_code == 400 and "type its name" in r.json()["detail"]
    assert name in stack.cluster.tool("kafka-topics", "--list").split()
    assert post(stack, API + name + "/", {"confirm": name}, user="admin", method="delete").status_code == 200
    wait_for(lambda: name not in stack.cluster.tool("kafka-topics", "--list").split(), 20, what="topic gone in Kafka")


def test_viewer_can_browse_topics_but_not_change_them(stack: Stack) -> None:
    name = make_topic(stack, "readonly", partitions=1, rf=1)
    assert stack.get(API, user="viewer").status_code == 200
    assert stack.get(API + name + "/configs/", user="viewer").status_code == 200
    attempts: list[tuple[str, dict[str, Any], str]] = [
        (API, {"name": unique("v"), "partitions": 1, "replication_factor": 1}, "post"),
        (API + name + "/configs/", {"set": {"retention.ms": "1000"}}, "patch"),
        (API + name + "/partitions/", {"count": 3}, "post"),
        (API + name + "/records/", {"all": True}, "delete"),
    ]
    for path, body, method in attempts:
        r = post(stack, path, body, user="viewer", method=method)
        assert r.status_code == 403 and "operator" in r.json()["detail"], (path, r.text)


def test_every_change_by_an_operator_is_in_the_audit_log(stack: Stack) -> None:
    name = make_topic(stack, "audited", partitions=1, rf=1)
    post(stack, API + name + "/configs/", {"set": {"retention.ms": "1000000"}}, method="patch")
    post(stack, API + name + "/partitions/", {"count": 2})
    entries = [e for e in stack.get("/api/v1/audit/").json()["entries"] if e["target"] == name]
    assert [(e["action"], e["user"], e["outcome"]) for e in reversed(entries)] == [
        ("create_topic", "operator", "ok"), ("alter_topic_configs", "operator", "ok"), ("add_partitions", "operator", "ok")]


def test_topics_list_searches_by_substring_and_regex_and_sorts(stack: Stack) -> None:
    prefix = unique("srch")
    for suffix, partitions in (("alpha", 1), ("beta", 3), ("gamma", 2)):
        r = post(stack, API, {"name": f"{prefix}-{suffix}", "partitions": partitions, "replication_factor": 1})
        assert r.status_code == 201
    wait_for(lambda: len(stack.get(API, params={"q": prefix}).json()["results"]) == 3, 15, what="three topics")
    by_partitions = stack.get(API, params={"q": prefix, "ordering": "-partitions"}).json()["results"]
    assert [r["name"].rsplit("-", 1)[1] for r in by_partitions] == ["beta", "gamma", "alpha"]
    regex = stack.get(API, params={"q": f"^{prefix}-(alpha|gamma)$", "regex": "true"}).json()["results"]
    assert sorted(r["name"] for r in regex) == [f"{prefix}-alpha", f"{prefix}-gamma"]
    r = stack.get(API, params={"q": "([unclosed", "regex": "true"})
    assert r.status_code == 400 and "not a valid regular expression" in r.json()["detail"]
    page = stack.get(API, params={"q": prefix, "page_size": 2, "page": 2}).json()
    assert (page["count"], page["pages"], len(page["results"])) == (3, 2, 1)
    # A consumer group makes Kafka create its internal __consumer_offsets topic.
    kafka_tool("kafka-console-consumer", "--bootstrap-server", stack.cluster.bootstrap, "--topic", f"{prefix}-alpha",
               "--group", unique("g"), "--timeout-ms", "3000")
    wait_for(lambda: "__consumer_offsets" in {r["name"] for r in stack.get(API, params={"page_size": 1000, "internal": "true"}).json()["results"]},
             20, what="__consumer_offsets listed with internal=true")
    assert "__consumer_offsets" not in {r["name"] for r in stack.get(API, params={"page_size": 1000}).json()["results"]}
