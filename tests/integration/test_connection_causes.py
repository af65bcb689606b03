"""A cluster that cannot be reached says why, and the page's status dot is not green meanwhile.

The test starts its own one-node KRaft Kafka (tests/secured_broker.py) and uses its SASL_PLAINTEXT
listener (SCRAM-SHA-256, users added at format time), then runs the console's watcher and web processes
with three clusters in a KAFKA_CLUSTERS_FILE: "secure" (the right password), "badpass" (the same
broker, a wrong password) and "badport" (a port nothing listens on). Each shows its own cause;
the working one works.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from tests.secured_broker import SASL_PORT, USER, USER_PASSWORD, client_properties, tool
from tests.support import PASSWORD, ROOT, TEST_VAR, free_port, stack_env, unique, wait_for

pytestmark = pytest.mark.cluster

# The broker's ports (tests/secured_broker.py), and one above them held shut.
CLOSED_PORT = SASL_PORT + 5
TIMEOUT = 3  # KAFKA_REQUEST_TIMEOUT of the console under test

AUTH_SENTENCE = f"Authentication failed: SCRAM-SHA-256 as user '{USER}' was refused by the broker (wrong user name or password)."
REFUSED_SENTENCE = f"No broker is listening at 127.0.0.1:{CLOSED_PORT} (connection refused)."


@pytest.fixture(scope="module")
def sasl_broker(secured_broker: Any) -> None:
    """The session's secured broker."""


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
