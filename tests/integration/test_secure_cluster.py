"""Every function of the console on the secured local cluster, and a refusal said as a sentence.

The module starts the local cluster as `SECURE=1 make run` does (`manage.py devcluster up` with
DEVCLUSTER_SECURE=1: 3 nodes, SASL_SSL with SCRAM-SHA-512 and PLAIN, StandardAuthorizer) on ports of
its own (400 above TEST_KAFKA_BASE_PORT), and the console's web, watcher and worker processes on it,
configured by that setting alone. Kafka's own tools, logged in with the client config the cluster
wrote, are the oracle. Then a principal without ACLs (bob, a second cluster entry) is told which
operation on which resource it lacks.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from brokers_app.management.commands.demo import GROUPS as DEMO_GROUPS
from brokers_app.management.commands.demo import TOPICS as DEMO_TOPICS
from console import devcluster_secure
from console.gateway.config import ClusterConfig
from tests.integration.test_faults_matrix import FUNCTIONS, PARTITIONS, World, check_all
from tests.secured_broker import port_is_free
from tests.support import (
    BASE_PORT,
    PASSWORD,
    REDIS_PORT,
    ROOT,
    TEST_VAR,
    free_port,
    kafka_tool,
    manage_all,
    stack_env,
    unique,
    wait_for,
)

pytestmark = pytest.mark.cluster

BASE = BASE_PORT + 400  # beside the session's cluster (+0), the Kafka-free layer's (+100) and the broker-killing chain's (+300)
VAR = TEST_VAR / "secure"
CLUSTER_DIR = VAR / "cluster"
CLIENT_CONFIG = VAR / "client.properties"
REDIS_URL = f"redis://127.0.0.1:{REDIS_PORT}/7"  # not the session stack's database: both have a cluster "local"
BOB, BOB_PASSWORD = "bob", "bob-has-no-acls-0"
API = "/api/v1/clusters/local"


def console_env(**extra: str) -> dict[str, str]:
    env = stack_env()
    env.update(DJANGO_SETTINGS_MODULE="console.settings", CONSOLE_VAR_DIR=str(VAR), REDIS_URL=REDIS_URL,
               DATABASE_URL=f"sqlite:///{VAR / 'console.sqlite3'}", CONSOLE_SECRET_KEY="secure-cluster-test-" + "k" * 40,
               DEVCLUSTER_SECURE="1", DEVCLUSTER_DIR=str(CLUSTER_DIR), DEVCLUSTER_BASE_PORT=str(BASE),
               DEVCLUSTER_CLIENT_CONFIG=str(CLIENT_CONFIG))
    env.update(extra)
    return env


def manage(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env or console_env(), capture_output=True,
                          text=True, timeout=300)
    if check:
        assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def connection(user: str = devcluster_secure.CONSOLE_USER, password: str | None = None) -> ClusterConfig:
    fields = devcluster_secure.console_connection(CLUSTER_DIR)
    if password is not None:
        fields.update(sasl_username=user, sasl_password=password)
    return ClusterConfig(name="local", bootstrap_servers=SecureCluster.bootstrap, **fields)  # type: ignore[arg-type]


class SecureCluster:
    """The secured cluster as the fault matrix's checks use a cluster: Kafka's tools, logged in."""

    bootstrap = ",".join(f"127.0.0.1:{BASE + 2 * i}" for i in range(3))

    def tool(self, name: str, *args: str) -> str:
        return kafka_tool(name, "--bootstrap-server", self.bootstrap, "--command-config", str(CLIENT_CONFIG), *args)


class SecureConsole:
    """The console's processes on the secured cluster, as the fault matrix's checks use a stack."""

    def __init__(self) -> None:
        self.base_url = f"http://127.0.0.1:{free_port()}"
        self.cluster = SecureCluster()
        self.tokens: dict[str, str] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def commands(self) -> dict[str, list[str]]:
        return {
            "web": [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", self.base_url.rsplit(":", 1)[1],
                    "console.asgi:application"],
            "watcher": [sys.executable, "manage.py", "watch"],
            "worker": [sys.executable, "-m", "celery", "-A", "console", "worker", "--pool", "threads", "--concurrency", "2",
                       "--loglevel", "WARNING"],
            "analytics": [sys.executable, "-m", "celery", "-A", "console", "worker", "-Q", "analytics", "--pool", "solo",
                          "--concurrency", "1", "-n", "secure-analytics@%h", "--loglevel", "WARNING"],
        }

    def start(self, name: str, **extra: str) -> None:
        with open(VAR / "logs" / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(self.commands()[name], cwd=ROOT, env=console_env(**extra), stdout=log,
                                                stderr=subprocess.STDOUT)

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def api(self, user: str = "admin") -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = f"Token {self.tokens[user]}"
        return session

    def get(self, path: str, user: str = "operator", **params: Any) -> requests.Response:
        return self.api(user).get(self.base_url + path, params=params or None, timeout=30)

    def reachable(self, cluster: str) -> bool:
        return bool(requests.get(self.base_url + "/healthz", timeout=2).json()["clusters"][cluster]["reachable"])


@pytest.fixture(scope="module")
def secure(redis_server: str) -> Iterator[SecureConsole]:
    busy = [p for p in range(BASE, BASE + 6) if not port_is_free(p)]
    assert not busy, f"ports {busy} are taken: set TEST_KAFKA_BASE_PORT to a free region (this module uses it +400)"
    manage("devcluster", "down", "--now", check=False)
    shutil.rmtree(VAR, ignore_errors=True)
    (VAR / "logs").mkdir(parents=True)
    console = SecureConsole()
    try:
        manage("devcluster", "up", "--heap", "320m", "--timeout", "180")
        roles = ("operator", "admin")
        outputs = manage_all([["migrate", "-v0"], *(["ensureuser", role, "--role", role, "--password", PASSWORD] for role in roles),
                              *(["drf_create_token", role] for role in roles)], env=console_env())
        for role, output in zip(roles, outputs[-len(roles):], strict=True):
            console.tokens[role] = output.split()[2]
        for name in console.commands():
            console.start(name)
        wait_for(lambda: console.reachable("local"), 90, what="the console to reach the secured cluster")
        yield console
    finally:
        for name in list(console.procs):
            console.stop(name)
        manage("devcluster", "down", "--now", check=False)


def test_kafkas_tools_log_in_as_the_console_with_the_client_config_the_cluster_wrote(secure: SecureConsole) -> None:
    text = CLIENT_CONFIG.read_text()
    assert "security.protocol=SASL_SSL\n" in text and "sasl.mechanism=SCRAM-SHA-512\n" in text
    assert f"ssl.truststore.type=PEM\nssl.truststore.location={CLUSTER_DIR / 'tls' / 'ca.pem'}\n" in text
    assert 'username="console"' in text and CLIENT_CONFIG.stat().st_mode & 0o077 == 0
    topic = unique("sec-tools")
    secure.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    assert topic in secure.cluster.tool("kafka-topics", "--list").split()
    # The console's principal is a super user: it lists the ACLs, which only the authorizer answers.
    secure.cluster.tool("kafka-acls", "--list")


def test_plaintext_clients_and_wrong_passwords_are_refused_and_the_directory_stays_secure(secure: SecureConsole) -> None:
    plaintext = AdminClient({"bootstrap.servers": SecureCluster.bootstrap, "security.protocol": "PLAINTEXT"})
    with pytest.raises(KafkaException):
        plaintext.list_topics(timeout=5)
    wrong = AdminClient({**connection(devcluster_secure.CONSOLE_USER, "not-the-password").librdkafka()})
    with pytest.raises(KafkaException):
        wrong.list_topics(timeout=5)
    plain = AdminClient({**connection().librdkafka(), "sasl.mechanism": "PLAIN"})  # the other mechanism, same login
    assert plain.list_topics(timeout=10).brokers
    # The same directory started plaintext is refused, not opened.
    refused = manage("devcluster", "up", "--timeout", "10", env=console_env(DEVCLUSTER_SECURE="0"), check=False)
    assert refused.returncode != 0 and "was set up secure, not plaintext" in refused.stderr, refused.stderr


class SecureWorld(World):
    """The fault matrix's topic, messages and groups, written over SASL_SSL."""

    def fill(self, per_partition: int = 20) -> None:
        config = connection().librdkafka()
        producer = Producer({**config, "acks": "all", "enable.idempotence": True})
        self.first_ts = int(time.time() * 1000)
        for p in range(PARTITIONS):
            for i in range(per_partition):
                producer.produce(self.topic, value=f"v{i}".encode(), key=f"k{p}-{i}".encode(), partition=p)
        assert producer.flush(60) == 0
        for i, group in enumerate(self.groups):
            consumer = Consumer({**config, "group.id": group, "client.id": group, "auto.offset.reset": "earliest",
                                 "enable.auto.commit": False})
            consumer.subscribe([self.topic])
            want, got, deadline = 10 + i, 0, time.monotonic() + 30
            while got < want and time.monotonic() < deadline:
                got += sum(1 for m in consumer.consume(num_messages=want - got, timeout=1) if m.error() is None)
            consumer.commit(asynchronous=False)
            consumer.close()


@pytest.fixture(scope="module")
def world(secure: SecureConsole) -> SecureWorld:
    w = SecureWorld(secure)  # type: ignore[arg-type]
    w.create_topic()
    w.fill()
    return w


def test_every_function_of_the_fault_matrix_answers_correctly_on_the_secured_cluster(world: SecureWorld) -> None:
    assert {"overview", "topic detail", "browse newest", "produce", "group lag", "offset reset dry run"} <= set(FUNCTIONS)
    check_all(world, "a start on the secured cluster")


def layout(secure: SecureConsole, topic: str) -> dict[int, tuple[int | None, list[int]]]:
    out = secure.cluster.tool("kafka-topics", "--describe", "--topic", topic)
    return {int(p): (None if leader == "none" else int(leader), [int(r) for r in replicas.split(",")])
            for p, leader, replicas in re.findall(r"Partition:\s*(\d+)\s+Leader:\s*(\S+)\s+Replicas:\s*([\d,]+)", out)}


def test_a_reassignment_and_a_preferred_election_run_through_the_console(secure: SecureConsole) -> None:
    topic = unique("sec-move")
    secure.cluster.tool("kafka-topics", "--create", "--topic", topic, "--replica-assignment", "1:2,2:3,3:1")
    wait_for(lambda: secure.get(f"{API}/topics/", q=topic).json()["results"], 30, what="the topic in the snapshot")
    # Partition 0 moves to other brokers; 1 and 2 keep theirs in the other order (their leaders stay, not preferred).
    target = {0: [2, 3], 1: [3, 2], 2: [1, 3]}
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in target.items()]}
    operator = secure.api("operator")
    r = operator.post(secure.base_url + f"{API}/reassignments/", json={"kind": "import", "plan": plan}, timeout=60)
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    r = operator.post(secure.base_url + f"{API}/reassignments/{job_id}/", json={"action": "execute"}, timeout=60)
    assert r.status_code == 202, r.text
    done = wait_for(lambda: (j := secure.get(f"{API}/reassignments/{job_id}/").json())["state"] in
                    {"completed", "failed", "cancelled"} and j, 180, interval=1, what=f"reassignment job {job_id}")
    assert done["state"] == "completed", done
    assert {p: replicas for p, (_, replicas) in layout(secure, topic).items()} == target
    off_preferred = [p for p, (leader, replicas) in layout(secure, topic).items() if leader != replicas[0]]
    assert off_preferred, "every leader is already preferred: nothing to elect"

    r = operator.post(secure.base_url + f"{API}/leader-elections/", json={"topics": [topic]}, timeout=60)
    assert r.status_code == 200 and r.json()["failed"] == 0, r.text
    assert r.json()["elected"] == len(off_preferred), (r.json(), off_preferred)
    assert all(leader == replicas[0] for leader, replicas in layout(secure, topic).values())


def test_an_analytics_run_reads_the_watchers_samples_over_sasl_ssl(secure: SecureConsole, world: SecureWorld) -> None:
    samples = "__kafka_console_samples"
    wait_for(lambda: samples in secure.cluster.tool("kafka-topics", "--list").split(), 90,
             what="the watcher to write its samples to the secured cluster")
    start_ms = int(time.time() * 1000) - 120_000
    time.sleep(6)  # samples of the matrix topic and its groups
    end_ms = int(time.time() * 1000)
    runs = f"{API}/analytics/runs/"
    r = secure.api("operator").post(secure.base_url + runs, json={"start_ms": start_ms, "end_ms": end_ms}, timeout=30)
    assert r.status_code == 202, r.text
    run = wait_for(lambda: (x := secure.get(f"{runs}{r.json()['id']}/").json())["state"] in {"done", "failed"} and x,
                   400, interval=2, what="the analytics run")
    assert run["state"] == "done", run
    history = secure.get(f"{API}/analytics/consumer-groups/{world.groups[4]}/").json()
    assert history["lag"], history


def test_the_demo_traffic_of_make_run_flows_on_the_secured_cluster(secure: SecureConsole) -> None:
    with open(VAR / "logs" / "demo.log", "wb") as log:
        demo = subprocess.Popen([sys.executable, "manage.py", "demo"], cwd=ROOT, env=console_env(), stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        def every_group_consuming() -> bool:
            rows = secure.get(f"{API}/consumer-groups/", q="demo-", per_page=100).json()["results"]
            return {r["group"] for r in rows} >= set(DEMO_GROUPS)

        wait_for(every_group_consuming, 120, interval=2, what="every demo group in the console")
        assert demo.poll() is None, (VAR / "logs" / "demo.log").read_text()[-2000:]
        ends = secure.cluster.tool("kafka-get-offsets", "--topic", DEMO_TOPICS[0][0])
        assert sum(int(line.rsplit(":", 1)[1]) for line in ends.split()) > 0, ends
    finally:
        demo.terminate()
        try:
            demo.wait(30)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait(10)


def test_a_principal_without_acls_is_told_which_operation_on_which_resource_it_lacks(
        secure: SecureConsole, world: SecureWorld) -> None:
    secure.cluster.tool("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", BOB,
                        "--add-config", f"SCRAM-SHA-512=[password={BOB_PASSWORD}]")
    fields = devcluster_secure.console_connection(CLUSTER_DIR)
    clusters = [{"name": "local", "bootstrap_servers": SecureCluster.bootstrap, **fields},
                {"name": "bob", "bootstrap_servers": SecureCluster.bootstrap, **fields,
                 "sasl_username": BOB, "sasl_password": BOB_PASSWORD}]
    (VAR / "clusters.json").write_text(json.dumps(clusters))
    for name in ("web", "watcher"):
        secure.stop(name)
        secure.start(name, KAFKA_CLUSTERS_FILE=str(VAR / "clusters.json"))
    wait_for(lambda: secure.reachable("bob"), 90, what="the console to log in to cluster 'bob'")
    topic, group = world.topic, world.groups[0]
    bob = "/api/v1/clusters/bob"

    def refused(r: requests.Response, operation: str, resource: str, code: str) -> None:
        assert r.status_code == 403, f"{r.status_code} {r.text[:500]}"
        assert r.json()["detail"].startswith(f"Kafka refused: principal User:{BOB} may not {operation} {resource} ({code})"), r.text
        assert "Traceback" not in r.text

    refused(secure.get(f"{bob}/topics/{topic}/"), "DESCRIBE", f"topic '{topic}'", "TOPIC_AUTHORIZATION_FAILED")
    refused(secure.get(f"{bob}/consumer-groups/{group}/"), "DESCRIBE", f"group '{group}'", "GROUP_AUTHORIZATION_FAILED")
    produce = secure.api("operator").post(secure.base_url + f"{bob}/topics/{topic}/messages/", json={"value": "x"}, timeout=30)
    refused(produce, "DESCRIBE", f"topic '{topic}'", "TOPIC_AUTHORIZATION_FAILED")
    # The ACL the sentence asks for opens what it names, and the next refusal names the next missing operation.
    secure.cluster.tool("kafka-acls", "--add", "--allow-principal", f"User:{BOB}", "--operation", "Describe", "--topic", topic)
    detail = wait_for(lambda: (r := secure.get(f"{bob}/topics/{topic}/")).status_code == 200 and r.json(), 30,
                      what="bob to see the topic once he may describe it")
    assert detail["partition_count"] == PARTITIONS
    refused(secure.get(f"{bob}/topics/{topic}/messages/", start="newest", limit=3), "READ", f"topic '{topic}'",
            "TOPIC_AUTHORIZATION_FAILED")
    # The console's own principal is untouched by bob's ACLs.
    assert secure.get(f"{API}/topics/{topic}/").status_code == 200
