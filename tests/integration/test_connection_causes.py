"""A cluster that cannot be reached says why, and the page's status dot is not green meanwhile.

The test starts its own one-node KRaft Kafka from the same jars with a SASL_PLAINTEXT listener
(SCRAM-SHA-256, users added at format time), then runs the console's watcher and web processes
with three clusters in a KAFKA_CLUSTERS_FILE: "secure" (the right password), "badpass" (the same
broker, a wrong password) and "badport" (a port nothing listens on). Each shows its own cause;
the working one works.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support import PASSWORD, ROOT, TEST_VAR, free_port, stack_env, unique, wait_for

pytestmark = pytest.mark.cluster

# Beside the other suites (29092, 37092, 38092): the broker, its controller, and a port held shut.
# Below Linux's ephemeral range (32768-60999): there, any outgoing connection of the suite may hold
# the port for a moment, and a full run once found 39092 taken so.
SASL_PORT = int(os.environ.get("TEST_SASL_PORT") or 31092)
CONTROLLER_PORT = SASL_PORT + 1
CLOSED_PORT = SASL_PORT + 5
USER, USER_PASSWORD = "alice", "secret-alice-pw"
BROKER_USER, BROKER_PASSWORD = "broker", "secret-broker-pw"
DIR = TEST_VAR / "sasl-broker"
TIMEOUT = 3  # KAFKA_REQUEST_TIMEOUT of the console under test

AUTH_SENTENCE = f"Authentication failed: SCRAM-SHA-256 as user '{USER}' was refused by the broker (wrong user name or password)."
REFUSED_SENTENCE = f"No broker is listening at 127.0.0.1:{CLOSED_PORT} (connection refused)."


def broker_properties() -> str:
    jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{BROKER_USER}" '
            f'password="{BROKER_PASSWORD}";')
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{CONTROLLER_PORT}",
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{SASL_PORT},CONTROLLER://127.0.0.1:{CONTROLLER_PORT}",
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{SASL_PORT}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": jaas,
        "log.dirs": str(DIR / "data"),
        "auto.create.topics.enable": "false",
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "1",
        "num.io.threads": "2",
        "background.threads": "2",
        "log.cleaner.threads": "1",
        "num.recovery.threads.per.data.dir": "1",
    }
    return "".join(f"{k}={v}\n" for k, v in lines.items())


def client_properties(password: str) -> Path:
    """A --command-config file for Kafka's own tools (the oracle), as the given user."""
    path = DIR / f"client-{password}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{USER}" password="{password}";\n'
    )
    return path


def tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "kafka" / "bin" / name), "--bootstrap-server", f"127.0.0.1:{SASL_PORT}", *args],
                          capture_output=True, text=True, timeout=90)


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Kafka binds: a TIME_WAIT left by the last run is fine
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def sasl_broker() -> Iterator[None]:
    for port in (SASL_PORT, CONTROLLER_PORT):
        if not port_is_free(port):
            pytest.fail(f"port {port} is taken: set TEST_SASL_PORT to a free region for the SASL test broker")
    shutil.rmtree(DIR, ignore_errors=True)
    (DIR / "data").mkdir(parents=True)
    (DIR / "server.properties").write_text(broker_properties())
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    formatted = subprocess.run(
        [str(ROOT / "kafka" / "bin" / "kafka-storage"), "format", f"--cluster-id={cluster_id}", "-c", str(DIR / "server.properties"),
         "--add-scram", f"SCRAM-SHA-256=[name={BROKER_USER},password={BROKER_PASSWORD}]",
         "--add-scram", f"SCRAM-SHA-256=[name={USER},password={USER_PASSWORD}]"],
        capture_output=True, text=True, timeout=120,
    )
    assert formatted.returncode == 0, formatted.stderr or formatted.stdout
    with open(DIR / "server.log", "wb") as log:
        proc = subprocess.Popen(
            ["java", "-Xmx256m", "-Xms64m", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
             f"-Dlog4j2.configurationFile={ROOT / 'kafka' / 'log4j2.properties'}", "-Dkafka.root.level=WARN",
             "-cp", str(ROOT / "kafka" / "lib" / "*"), "kafka.Kafka", str(DIR / "server.properties")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    try:
        config = client_properties(USER_PASSWORD)

        def ready() -> bool:
            assert proc.poll() is None, f"the SASL broker exited; see {DIR / 'server.log'}"
            return tool("kafka-topics", "--command-config", str(config), "--list").returncode == 0

        wait_for(ready, 120, interval=1, what="the SASL test broker to accept alice")
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@dataclass
class Console:
    base_url: str
    token: str
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def api(self, path: str, method: str = "GET", body: dict[str, Any] | None = None, **params: Any) -> requests.Response:
        return requests.request(method, self.base_url + path, json=body, params=params or None, timeout=30,
                                headers={"Authorization": f"Token {self.token}"})

    def status(self, cluster: str) -> dict[str, Any]:
        clusters = self.api("/api/v1/clusters/").json()["clusters"]
        found: dict[str, Any] = next(c for c in clusters if c["name"] == cluster)
        return found

    def login(self) -> requests.Session:
        session = requests.Session()
        session.get(self.base_url + "/login/", timeout=10)
        r = session.post(self.base_url + "/login/", timeout=30, headers={"Referer": self.base_url + "/login/"},
                         data={"username": "admin", "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]})
        assert r.status_code == 200 and "Log out" in r.text, r.text[:500]
        return session


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """Hold CLOSED_PORT bound but not listening: connections to it are refused, and the kernel
    cannot hand it out as the source port of a connection to itself (a silent self-connect)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", CLOSED_PORT))
        except OSError:
            pytest.fail(f"port {CLOSED_PORT} is taken: set TEST_SASL_PORT to a free region for the SASL test broker")
        yield CLOSED_PORT


@pytest.fixture(scope="module")
def console(sasl_broker: None, closed_port: int, redis_server: str) -> Iterator[Console]:
    """The console's web and watcher processes with the three clusters, on the suite's test Redis."""
    var = TEST_VAR / "causes-console"
    shutil.rmtree(var, ignore_errors=True)
    (var / "logs").mkdir(parents=True)
    secure = {"bootstrap_servers": f"127.0.0.1:{SASL_PORT}", "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": "SCRAM-SHA-256", "sasl_username": USER}
    clusters = [
        {"name": "secure", **secure, "sasl_password": USER_PASSWORD},
        {"name": "badpass", **secure, "sasl_password": "not-" + USER_PASSWORD},
        {"name": "badport", **secure, "bootstrap_servers": f"127.0.0.1:{closed_port}", "sasl_password": USER_PASSWORD},
    ]
    (var / "clusters.json").write_text(json.dumps(clusters))
    # tests.settings drops every KAFKA_* variable (the suite's own cluster only): run on the real settings.
    env = stack_env(KAFKA_CLUSTERS_FILE=str(var / "clusters.json"), KAFKA_REQUEST_TIMEOUT=str(TIMEOUT))
    env.update(DJANGO_SETTINGS_MODULE="console.settings", CONSOLE_VAR_DIR=str(var),
               DATABASE_URL=f"sqlite:///{var / 'console.sqlite3'}", CONSOLE_SECRET_KEY="causes-test-secret-" + "x" * 40)

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    run("migrate", "-v0")
    run("ensureuser", "admin", "--role", "admin", "--password", PASSWORD)
    console = Console(f"http://127.0.0.1:{free_port()}", run("drf_create_token", "admin").split()[2])
    port = console.base_url.rsplit(":", 1)[1]
    commands = {
        "web": [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", port, "console.asgi:application"],
        "watcher": [sys.executable, "manage.py", "watch"],
    }
    for name, command in commands.items():
        with open(var / "logs" / f"{name}.log", "wb") as log:
            console.procs[name] = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: requests.get(console.base_url + "/healthz", timeout=2).json()["clusters"]["secure"]["reachable"],
                 60, what="the console to report cluster 'secure' reachable")
        yield console
    finally:
        for proc in console.procs.values():
            proc.terminate()
        for proc in console.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


def unreachable(console: Console, cluster: str) -> dict[str, Any]:
    def down() -> dict[str, Any] | None:
        status = console.status(cluster)
        return status if status["version"] is not None and not status["reachable"] and status["cause"] else None

    found: dict[str, Any] = wait_for(down, 30, what=f"a snapshot of cluster '{cluster}' with its cause")
    return found


def page(session: requests.Session, console: Console, cluster: str) -> str:
    r = session.get(f"{console.base_url}/clusters/{cluster}/", timeout=30)
    assert r.status_code == 200, r.text[:300]
    return r.text


def status_bar(text: str) -> tuple[str, str, str]:
    """The server-rendered banner, status dot classes and status text of a page."""
    banner = re.search(r'<div id="banner" class="([^"]*)"[^>]*>(.*?)</div>', text, re.S)
    dot = re.search(r'<span class="([^"]*)" id="live-dot">', text)
    state = re.search(r'<span id="live-state">([^<]*)</span>', text)
    assert banner and dot and state, text[:2000]
    shown = "" if "hidden" in banner.group(1).split() else " ".join(html.unescape(banner.group(2)).split())
    return shown, dot.group(1), state.group(1)


def test_the_working_sasl_cluster_is_usable(console: Console) -> None:
    status = console.status("secure")
    assert status["reachable"] and status["error"] is None and status["cause"] is None
    brokers = console.api("/api/v1/clusters/secure/brokers/").json()["brokers"]
    assert [(b["id"], b["port"], b["up"]) for b in brokers] == [(1, SASL_PORT, True)]
    quorum = console.api("/api/v1/clusters/secure/").json()
    assert quorum["status"]["reachable"], quorum

    topic = unique("causes-secure")
    created = console.api("/api/v1/clusters/secure/topics/", "POST", {"name": topic, "partitions": 2, "replication_factor": 1})
    assert created.status_code == 201, created.text
    produced = console.api(f"/api/v1/clusters/secure/topics/{topic}/messages/", "POST", {"key": "k1", "value": "hello over SCRAM"})
    assert produced.status_code == 201, produced.text
    browsed = console.api(f"/api/v1/clusters/secure/topics/{topic}/messages/", start="oldest", limit=10)
    assert browsed.status_code == 200, browsed.text
    assert [r["value"] for r in browsed.json()["records"]] == ["hello over SCRAM"]
    listed = wait_for(lambda: topic in [t["name"] for t in console.api("/api/v1/clusters/secure/topics/", q=topic).json()["results"]],
                      15, what=f"topic {topic} in the snapshot")
    assert listed

    # Kafka's own tool, as alice over SCRAM, sees the topic the console created, with its two partitions.
    described = tool("kafka-topics", "--command-config", str(client_properties(USER_PASSWORD)), "--describe", "--topic", topic)
    assert described.returncode == 0, described.stderr
    assert "PartitionCount: 2" in described.stdout


def test_a_wrong_password_shows_the_authentication_cause(console: Console) -> None:
    status = unreachable(console, "badpass")
    assert status["cause"] == "authentication", status
    assert status["error"] == f"Cluster 'badpass' is unreachable. {AUTH_SENTENCE}"
    assert "Broker transport failure" not in status["error"]
    # Kafka's own tool agrees that this password is refused.
    refused = tool("kafka-topics", "--command-config", str(client_properties("not-" + USER_PASSWORD)), "--list")
    assert refused.returncode != 0 and "Authentication failed" in refused.stdout + refused.stderr


def test_a_closed_port_shows_that_no_broker_listens_there(console: Console) -> None:
    status = unreachable(console, "badport")
    assert status["cause"] == "refused", status
    assert status["error"] == f"Cluster 'badport' is unreachable. {REFUSED_SENTENCE}"


def test_each_page_shows_its_own_cause_and_only_the_working_cluster_has_a_live_dot(console: Console) -> None:
    for cluster in ("badpass", "badport"):
        unreachable(console, cluster)
    session = console.login()
    expected = {"badpass": AUTH_SENTENCE, "badport": REFUSED_SENTENCE}
    for cluster, sentence in expected.items():
        banner, dot, state = status_bar(page(session, console, cluster))
        assert sentence in banner, (cluster, banner)
        assert banner.endswith("Showing the last known state."), banner
        assert dot.split() == ["dot", "fault"] and state == "cluster unreachable", (cluster, dot, state)
        other = expected["badport" if cluster == "badpass" else "badpass"]
        assert other not in banner
    banner, dot, state = status_bar(page(session, console, "secure"))
    assert banner == "" and "fault" not in dot.split() and state != "cluster unreachable"


def test_healthz_names_the_kind_of_failure_without_users_or_addresses(console: Console) -> None:
    for cluster in ("badpass", "badport"):
        unreachable(console, cluster)
    r = requests.get(console.base_url + "/healthz", timeout=10)
    assert r.status_code == 503
    clusters = r.json()["clusters"]
    assert clusters["secure"]["ok"] and clusters["secure"]["error"] is None
    assert clusters["badpass"]["error"] == "Cluster 'badpass' is unreachable: authentication failed."
    assert clusters["badport"]["error"] == "Cluster 'badport' is unreachable: no broker is listening at its address."
    assert USER not in r.text and str(CLOSED_PORT) not in r.text and "127.0.0.1" not in r.text


@pytest.mark.browser
def test_the_status_dot_in_the_browser_follows_the_cluster_not_only_the_socket(console: Console, browser: Any) -> None:
    for cluster in ("badpass", "badport"):
        unreachable(console, cluster)
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(console.base_url + "/login/")
        tab.fill("input[name=username]", "admin")
        tab.fill("input[name=password]", PASSWORD)
        tab.click("button[type=submit]")
        tab.wait_for_url("**/clusters/secure/")
        tab.wait_for_selector("#live-state:text('live')", timeout=15_000)  # socket up, cluster reachable
        assert tab.get_attribute("#live-dot", "class") == "dot live"
        for cluster, sentence in (("badpass", AUTH_SENTENCE), ("badport", REFUSED_SENTENCE)):
            tab.goto(f"{console.base_url}/clusters/{cluster}/")
            # Long enough for the socket to open and the watcher to push this cluster's status again.
            time.sleep(TIMEOUT + 2)
            assert tab.text_content("#live-state") == "cluster unreachable"
            assert tab.get_attribute("#live-dot", "class") == "dot fault"
            banner = tab.text_content("#banner") or ""
            # Under load a refused connection can be reported as a timeout first; both name the address.
            assert sentence in banner or (cluster == "badport" and "no broker at 127.0.0.1" in banner), banner
    finally:
        context.close()
