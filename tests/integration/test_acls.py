"""ACLs on the secured test broker (StandardAuthorizer): the console's list equals kafka-acls', its
changes are Kafka's, and its effective-permission check answers as the broker does when the
principal really tries.

The console runs in this process (the API through Django's test client) against
tests/secured_broker.py, where alice is a super user. Principals p1..p3 get SCRAM credentials and
act through their own clients over SASL_PLAINTEXT from 127.0.0.1.
"""

from __future__ import annotations

import dataclasses
import random
import re
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, Producer, TopicCollection
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from django.contrib.auth.models import User
from django.test import override_settings
from rest_framework.test import APIClient

from console import gateway
from console.gateway.messages import produce as producer_module
from console.gateway.messages.produce import produce
from console.gateway.types import Acl
from console.models import AuditEntry
from security_app import acls as acl_service
from security_app.acl_rules import OPERATIONS, AclIndex
from tests.secured_broker import SASL_PORT, USER, USER_PASSWORD, client_properties, secured_cluster, tool
from tests.support import CHROMIUM_ARGS, OUTPUT, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]

CLUSTER = "secured"
PRINCIPALS = ("p1", "p2", "p3")
PASSWORD = "principal-pw-123"
TOPICS = ("sec-a", "sec-ab", "sec-b")
GROUPS = ("g-a", "g-ab")
HOST = "127.0.0.1"
TRANSIENT = {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"}
SUPERS = frozenset({"User:broker", f"User:{USER}", f"User:CN={USER}", "User:ANONYMOUS"})


def every_acl() -> AclBindingFilter:
    """A filter matching every ACL (confluent-kafka's stubs do not admit its None fields)."""
    return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,  # type: ignore[arg-type]
                            AclOperation.ANY, AclPermissionType.ANY)


def sasl(user: str, password: str) -> dict[str, Any]:
    return {"bootstrap.servers": f"127.0.0.1:{SASL_PORT}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": password}


@pytest.fixture(scope="module")
def broker(redis_server: str, secured_broker: Any) -> Iterator[AdminClient]:
    admin = AdminClient(sasl(USER, USER_PASSWORD))
    # These tests compare the whole ACL list with Kafka's: they start from none (the session's broker
    # holds what other modules' tests granted).
    for f in admin.delete_acls([every_acl()]).values():
        f.result(30)
    present = admin.list_topics(timeout=30).topics  # (the session's broker: a module run again finds them)
    missing = [NewTopic(t, 1, 1) for t in TOPICS if t not in present]
    for f in (admin.create_topics(missing) if missing else {}).values():
        f.result(60)
    upserts: list[Any] = [UserScramCredentialUpsertion(p, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), PASSWORD.encode())
               for p in PRINCIPALS]
    for f in admin.alter_user_scram_credentials(upserts).values():
        f.result(60)
    yield admin


@pytest.fixture
def console(broker: AdminClient) -> Iterator[APIClient]:
    config = dataclasses.replace(secured_cluster(CLUSTER, protocol="SASL_PLAINTEXT"), super_users=";".join(sorted(SUPERS)))
    with override_settings(KAFKA_CLUSTERS=(config,)):
        gateway._gateways.clear()
        acl_service._held.clear()
        client = APIClient()
        root = User.objects.create_superuser("root", "root@example.com", "pw-root-12345")
        client.force_authenticate(root)
        client.force_login(root)
        yield client
        for gw in gateway._gateways.values():
            gw.close()
        gateway._gateways.clear()
        acl_service._held.clear()
        producer_module._producers.pop(config, None)  # (not left retrying a broker the module stops)


def broker_acls(admin: AdminClient) -> set[Acl]:
    found = admin.describe_acls(every_acl()).result(30)
    names = {"BROKER": "CLUSTER"}
    return {Acl(names.get(b.restype.name, b.restype.name), b.resource_pattern_type.name, b.name, b.principal, b.host,
                b.operation.name, b.permission_type.name) for b in found}


def kafka_acls_list() -> set[Acl]:
    """What `kafka-acls --list` prints, parsed."""
    done = tool("kafka-acls", "--command-config", str(client_properties(USER_PASSWORD)), "--list")
    assert done.returncode == 0, done.stderr
    found: set[Acl] = set()
    resource = None
    for line in done.stdout.splitlines():
        head = re.search(r"resourceType=(\w+), name=(.*), patternType=(\w+)\)`", line)
        if head:
            resource = head.groups()
            continue
        entry = re.search(r"\(principal=(.*), host=(.*), operation=(\w+), permissionType=(\w+)\)", line)
        if entry and resource:
            found.add(Acl(resource[0], resource[2], resource[1], *entry.groups()))
    return found


def test_console_list_equals_kafka_acls_and_its_changes_are_kafkas(console: APIClient, broker: AdminClient) -> None:
    base = f"/api/v1/clusters/{CLUSTER}/acls/"
    body = {"principal": "User:p1", "resource_name": "sec-", "pattern_type": "PREFIXED", "preset": "consumer", "group": "g-"}
    dry = console.post(base, {**body, "dry_run": True}, format="json")
    assert dry.status_code == 200, dry.content
    assert len(dry.json()["would_create"]) == 3 and broker_acls(broker) == set()  # a dry run changes nothing
    made = console.post(base, body, format="json")
    assert made.status_code == 200, made.content
    odd = {"principal": "User:o'<b>ü", "operation": "WRITE", "resource_type": "TOPIC", "resource_name": "a/b%<i>",
           "permission": "DENY", "host": "10.0.0.7"}
    assert console.post(base, odd, format="json").status_code == 200
    listed = console.get(base).json()
    ours = {Acl(a["resource_type"], a["pattern_type"], a["resource_name"], a["principal"], a["host"], a["operation"],
                a["permission"]) for a in listed["acls"]}
    assert ours == kafka_acls_list() == broker_acls(broker)
    assert len(ours) == 4 and listed["total"] == 4
    assert set(listed["super_users"]) == SUPERS
    # Filters: MATCH keeps what covers a name, as the authorizer reads it.
    matched = console.get(base, {"resource_type": "TOPIC", "resource_name": "sec-zz", "pattern_type": "MATCH"}).json()
    assert {a["operation"] for a in matched["acls"]} == {"READ", "DESCRIBE"}
    assert console.get(base, {"principal": "User:o'<b>ü"}).json()["total"] == 1
    # The page renders the list (first), names with odd characters escaped.
    page = console.get(f"/clusters/{CLUSTER}/security/acls/")
    assert page.status_code == 200 and b'id="acl-table"' in page.content and b"User:p1" in page.content
    assert "User:o&#x27;&lt;b&gt;ü".encode() in page.content and b"o'<b>" not in page.content
    # What a topic's page and a group's page show: the ACLs that speak to them.
    root = User.objects.get(username="root")
    topic = acl_service.section(root, CLUSTER, "TOPIC", "sec-a")
    assert topic is not None and {(a["principal"], a["operation"]) for a in topic["acls"]} == {
        ("User:p1", "READ"), ("User:p1", "DESCRIBE")}  # from the prefix sec-
    group = acl_service.section(root, CLUSTER, "GROUP", "g-x")
    assert group is not None and [(a["principal"], a["operation"]) for a in group["acls"]] == [("User:p1", "READ")]
    # Delete, dry run first; then it is gone from Kafka and from the next list.
    gone = console.delete(base, {**odd, "dry_run": True}, format="json")
    assert gone.status_code == 200 and gone.json()["would_delete"]
    assert console.delete(base, odd, format="json").status_code == 200
    assert len(console.get(base).json()["acls"]) == 3 == len(kafka_acls_list())
    missing = console.delete(base, odd, format="json")
    assert missing.status_code == 404 and "no such ACL" in missing.json()["detail"]
    actions = list(AuditEntry.objects.filter(cluster=CLUSTER).values_list("action", flat=True))
    # Dry runs are not recorded; the refused delete is.
    assert actions.count("create_acls") == 2 and actions.count("delete_acl") == 2
    assert AuditEntry.objects.filter(action="delete_acl", outcome="refused").count() == 1
    broker.delete_acls([every_acl()])


@pytest.mark.parametrize(("body", "words"), [
    ({"principal": "User:x", "operation": "FLY", "resource_type": "TOPIC", "resource_name": "t"}, "'operation' must be one of"),
    ({"principal": "User:x", "operation": "READ", "resource_type": "CLUSTER", "resource_name": "kafka-cluster"},
     "does not apply to a CLUSTER"),
    ({"principal": "User:x", "operation": "ALTER", "resource_type": "CLUSTER", "resource_name": "kafka-cluster",
      "pattern_type": "PREFIXED"}, "always the LITERAL name"),
    ({"principal": "User:x", "operation": "READ", "resource_type": "TOPIC", "resource_name": "t", "pattern_type": "MATCH"},
     "'pattern_type' must be one of"),
])
def test_bad_acls_are_a_400_sentence(console: APIClient, body: dict[str, str], words: str) -> None:
    answer = console.post(f"/api/v1/clusters/{CLUSTER}/acls/", body, format="json")
    assert answer.status_code == 400 and words in answer.json()["detail"]


# The effective-permission check against the broker ------------------------------------------------

def random_acl(rng: random.Random) -> Acl:
    rtype = rng.choice(("TOPIC", "TOPIC", "GROUP", "CLUSTER"))
    if rtype == "TOPIC":
        name, pattern = rng.choice((("sec-a", "LITERAL"), ("sec-ab", "LITERAL"), ("sec-b", "LITERAL"), ("sec-", "PREFIXED"),
                                    ("sec-a", "PREFIXED"), ("*", "LITERAL"), ("sec-n", "PREFIXED")))
    elif rtype == "GROUP":
        name, pattern = rng.choice((("g-a", "LITERAL"), ("g-", "PREFIXED"), ("*", "LITERAL"), ("g-ab", "LITERAL")))
    else:
        name, pattern = "kafka-cluster", "LITERAL"
    ops = OPERATIONS[rtype] if rtype != "CLUSTER" else ("ALL", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")
    return Acl(rtype, pattern, name, rng.choice(("User:p1", "User:p2", "User:p3", "User:*")),
               rng.choice(("*", "*", "*", HOST, "10.9.9.9")), rng.choice(ops), rng.choice(("ALLOW", "ALLOW", "ALLOW", "ALLOW", "DENY")))


class Attempts:
    """Each principal really trying one request; True when the broker let it through."""

    def __init__(self) -> None:
        self.admins = {p: AdminClient(sasl(p, PASSWORD)) for p in PRINCIPALS}
        self.serial = 0

    @staticmethod
    def _refused(call: Callable[[], Any], *codes: str) -> bool:
        """Whether the call was refused with one of `codes`; a coordinator still loading is asked again."""
        for attempt in range(20):
            try:
                call()
            except KafkaException as exc:
                name = exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else str(exc)
                if any(code in name or code in str(exc) for code in codes):
                    return True
                if attempt < 19 and name in TRANSIENT:
                    time.sleep(0.2)
                    continue
                raise
            return False
        raise AssertionError("unreachable")

    def describe_topic(self, p: str, topic: str) -> bool:
        return not self._refused(lambda: self.admins[p].describe_topics(
            TopicCollection([topic]), request_timeout=10)[topic].result(15),
            "TOPIC_AUTHORIZATION_FAILED")

    def describe_configs(self, p: str, topic: str) -> bool:
        return not self._refused(lambda: next(iter(self.admins[p].describe_configs(
            [ConfigResource(ConfigResource.Type.TOPIC, topic)], request_timeout=10).values())).result(15),
            "TOPIC_AUTHORIZATION_FAILED")

    def alter_configs(self, p: str, topic: str) -> bool:
        entry = ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
        fs = self.admins[p].incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])],
                                                      validate_only=True, request_timeout=10)
        return not self._refused(lambda: next(iter(fs.values())).result(15), "TOPIC_AUTHORIZATION_FAILED")

    def create_topic(self, p: str, topic: str) -> bool:
        fs = self.admins[p].create_topics([NewTopic(topic, 1, 1)], validate_only=True, request_timeout=10)
        return not self._refused(lambda: fs[topic].result(15), "TOPIC_AUTHORIZATION_FAILED")

    def describe_group(self, p: str, group: str) -> bool:
        return not self._refused(lambda: self.admins[p].describe_consumer_groups([group], request_timeout=10)[group].result(15),
                                 "GROUP_AUTHORIZATION_FAILED")

    def commit(self, p: str, group: str, topic: str) -> bool:
        request = [ConsumerGroupTopicPartitions(group, [RdTopicPartition(topic, 0, 0)])]

        def run() -> None:
            fs = self.admins[p].alter_consumer_group_offsets(request, request_timeout=10)
            for tp in fs[group].result(15).topic_partitions:
                if tp.error is not None:
                    raise KafkaException(tp.error)
        return not self._refused(run, "GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED")

    def produce(self, p: str, topic: str) -> bool:
        producer = Producer({**sasl(p, PASSWORD), "enable.idempotence": False, "acks": 1, "message.timeout.ms": 10000,
                             "topic.metadata.refresh.interval.ms": 1000})
        outcome: list[Any] = []
        producer.produce(topic, b"x", on_delivery=lambda err, msg: outcome.append(err))
        producer.flush(15)
        assert outcome, "the produce was answered"
        if outcome[0] is None:
            return True
        assert outcome[0].name() == "TOPIC_AUTHORIZATION_FAILED", outcome[0]
        return False

    def describe_broker_configs(self, p: str) -> bool:
        fs = self.admins[p].describe_configs([ConfigResource(ConfigResource.Type.BROKER, "1")], request_timeout=10)
        return not self._refused(lambda: next(iter(fs.values())).result(15), "CLUSTER_AUTHORIZATION_FAILED")


def expected(index: AclIndex, kind: str, p: str, target: tuple[str, ...]) -> bool:
    """What the requests need, as Kafka's request handlers ask the authorizer."""
    def may(op: str, rtype: str, name: str) -> bool:
        return index.decide(f"User:{p}", op, rtype, name, HOST, SUPERS, False).allowed

    if kind == "describe_topic":
        return may("DESCRIBE", "TOPIC", target[0])
    if kind == "describe_configs":
        return may("DESCRIBE_CONFIGS", "TOPIC", target[0])
    if kind == "alter_configs":
        return may("ALTER_CONFIGS", "TOPIC", target[0])
    if kind == "create_topic":  # CreateTopics: CREATE on the cluster, else on the topic
        return may("CREATE", "CLUSTER", "kafka-cluster") or may("CREATE", "TOPIC", target[0])
    if kind == "describe_group":  # FindCoordinator and DescribeGroups: DESCRIBE on the group
        return may("DESCRIBE", "GROUP", target[0])
    if kind == "commit":  # FindCoordinator (DESCRIBE group), then OffsetCommit (READ group, READ topic)
        group, topic = target
        return may("DESCRIBE", "GROUP", group) and may("READ", "GROUP", group) and may("READ", "TOPIC", topic)
    if kind == "produce":  # Metadata (DESCRIBE topic), then Produce (WRITE topic)
        return may("DESCRIBE", "TOPIC", target[0]) and may("WRITE", "TOPIC", target[0])
    if kind == "describe_broker_configs":
        return may("DESCRIBE_CONFIGS", "CLUSTER", "kafka-cluster")
    raise AssertionError(kind)


def random_request(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    kind = rng.choice(("describe_topic", "describe_configs", "alter_configs", "create_topic", "describe_group", "commit",
                       "produce", "describe_broker_configs", "describe_topic", "commit"))
    if kind == "create_topic":
        return kind, (rng.choice(("sec-new", "sec-ax", "other")),)
    if kind == "describe_group":
        return kind, (rng.choice(GROUPS),)
    if kind == "commit":
        return kind, (rng.choice(GROUPS), rng.choice(TOPICS))
    if kind == "describe_broker_configs":
        return kind, ()
    return kind, (rng.choice(TOPICS),)


def test_the_check_answers_as_the_broker_does_when_the_principal_tries(console: APIClient, broker: AdminClient) -> None:
    rng = random.Random(55)
    attempts = Attempts()
    wait_for(lambda: not attempts._refused(lambda: attempts.admins["p1"].list_topics(timeout=5), "AUTHENTICATION"), 60,
             what="the principals' SCRAM credentials to reach the broker")
    everything = every_acl()
    cases, disagreements, verdicts = 0, [], {True: 0, False: 0}
    for _round in range(25):
        wanted = {random_acl(rng) for _ in range(rng.randint(2, 12))}
        named = sorted({a.principal[5:] for a in wanted if a.principal != "User:*"}) or list(PRINCIPALS)
        for f in broker.delete_acls([everything]).values():
            f.result(30)
        gateway.for_cluster(CLUSTER).create_acls(wanted)
        round_acls = frozenset(wanted)
        wait_for(lambda: broker_acls(broker) == round_acls, 30, interval=0.1,  # noqa: B023 - waited on in this round
                 what="the broker to hold the round's ACLs")
        acl_service._held.clear()
        index = AclIndex(wanted)
        for _case in range(8):
            p = rng.choice(named) if rng.random() < 0.7 else rng.choice(PRINCIPALS)
            kind, target = random_request(rng)
            want = expected(index, kind, p, target)
            got = getattr(attempts, kind)(p, *target)
            cases += 1
            verdicts[got] += 1
            if got != want:
                disagreements.append((p, kind, target, got, want, sorted(wanted)))
        # The console's API gives the same verdicts as its index (one case per round through HTTP).
        p, (kind, target) = rng.choice(PRINCIPALS), ("describe_topic", (rng.choice(TOPICS),))
        answer = console.post(f"/api/v1/clusters/{CLUSTER}/acls/check/", {
            "principal": f"User:{p}", "operation": "DESCRIBE", "resource_type": "TOPIC", "resource_name": target[0],
            "host": HOST}, format="json")
        assert answer.status_code == 200, answer.content
        assert answer.json()["allowed"] == attempts.describe_topic(p, target[0])
    assert cases >= 200
    assert min(verdicts.values()) >= 30, f"both answers are exercised: {verdicts}"
    assert not disagreements, f"{len(disagreements)} of {cases} cases disagree; first: {disagreements[:3]}"
    for f in broker.delete_acls([everything]).values():
        f.result(30)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_acl_pages_in_a_browser_create_with_a_dry_run(broker: AdminClient, live_server: Any) -> None:
    """Chromium of its own, closed when the test ends: the session's browser would leave Playwright's event
    loop running in this thread for the database and asyncio tests that come after."""
    from playwright.sync_api import sync_playwright

    config = dataclasses.replace(secured_cluster(CLUSTER, protocol="SASL_PLAINTEXT"), super_users=";".join(sorted(SUPERS)))
    User.objects.create_superuser("root", "root@example.com", "pw-root-12345")
    with override_settings(KAFKA_CLUSTERS=(config,)), sync_playwright() as playwright:
        gateway._gateways.clear()
        acl_service._held.clear()
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True,
                                             args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1360, "height": 900})
        page = context.new_page()
        page.goto(live_server.url + "/login/")
        page.fill("input[name=username]", "root")
        page.fill("input[name=password]", "pw-root-12345")
        page.click("button[type=submit]")
        page.wait_for_load_state()
        before = broker_acls(broker)  # (the session's broker: other modules' ACLs stay as they are)
        page.goto(f"{live_server.url}/clusters/{CLUSTER}/security/acls/")
        form = page.locator("#acl-create")
        form.locator("select[name=preset]").select_option("consumer")
        form.locator("input[name=principal]").fill("User:team-<b>billing</b>")
        form.locator("input[name=resource_name]").fill("sec-")
        form.locator("select[name=pattern_type]").select_option("PREFIXED")
        form.locator("input[name=group]").fill("billing-")
        form.locator("button[type=submit]").click()
        page.wait_for_selector("#acl-preview")
        assert "3 ACLs would be created" in page.inner_text("#acl-preview")
        assert broker_acls(broker) == before  # the preview changed nothing
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            page.screenshot(path=str(OUTPUT / f"acls-preview-{scheme}.png"), full_page=True)
        page.click("#acl-preview button.primary")
        page.wait_for_selector("#acl-table td:has-text('billing-')")
        created = broker_acls(broker) - before
        assert len(created) == 3 and all(a.principal == "User:team-<b>billing</b>" for a in created)
        assert page.locator("#acl-table a:has-text('User:team-<b>billing</b>')").count() == 3  # shown as text
        page.fill("#acl-filters input[name=principal]", "User:nobody")
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            page.goto(f"{live_server.url}/clusters/{CLUSTER}/security/acls/")
            page.screenshot(path=str(OUTPUT / f"acls-{scheme}.png"), full_page=True)
            page.goto(f"{live_server.url}/clusters/{CLUSTER}/security/check/?principal=User:team-%3Cb%3Ebilling%3C/b%3E"
                      "&operation=DESCRIBE&resource_type=TOPIC&resource_name=sec-a&host=10.1.1.1")
            assert "ALLOWED" in page.inner_text("#verdict")
            page.screenshot(path=str(OUTPUT / f"acl-check-{scheme}.png"), full_page=True)
        context.close()
        browser.close()
        principal = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,  # type: ignore[arg-type]
                                     "User:team-<b>billing</b>", None, AclOperation.ANY, AclPermissionType.ANY)  # type: ignore[arg-type]
        for f in broker.delete_acls([principal]).values():
            f.result(30)
        gateway._gateways.clear()


def test_the_console_says_when_a_quota_holds_it_back(console: APIClient, broker: AdminClient) -> None:
    """A produce quota on the console's own principal: the produce's answer and the quotas page say
    that Kafka throttled the console (throttle_time_ms in Kafka's answers)."""
    config = ["--entity-type", "users", "--entity-name", USER]
    done = tool("kafka-configs", "--command-config", str(client_properties(USER_PASSWORD)), "--alter",
                "--add-config", "producer_byte_rate=1024", *config)
    assert done.returncode == 0, done.stderr
    try:
        held = 0
        for _ in range(10):
            held = produce(gateway.for_cluster(CLUSTER), "sec-b", b"x" * 20_000).throttled_ms  # (the API's path, past its snapshot)
            if held:
                break
        assert held > 0, "a produce over the quota is reported as throttled"
        page = console.get(f"/clusters/{CLUSTER}/security/quotas/")
        section = page.content.split(b'id="console-throttled"')[1].split(b"</section>")[0]
        assert page.status_code == 200 and b"<td>producer</td>" in section
    finally:
        tool("kafka-configs", "--command-config", str(client_properties(USER_PASSWORD)), "--alter",
             "--delete-config", "producer_byte_rate", *config)
