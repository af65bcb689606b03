"""The README's production layout on the session's stack. Several web processes behind one proxy need
no sticky sessions: a second Daphne (the stack's Redis, database and one watcher) pushes the same live
updates as the first, lists a change made through the first at once, and accepts a login made on the
first. A second watcher stands by and takes the cluster over when the active one stops."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis
import requests
from websockets.sync.client import ClientConnection, connect
from websockets.sync.connection import Connection
from websockets.typing import Origin

from tests.conftest import Stack, unique, wait_for
from tests.support import PASSWORD, REDIS_PORT, ROOT, TEST_VAR, free_port, stack_env

pytestmark = pytest.mark.cluster

API = "/api/v1/clusters/local/topics/"
LEASE = "console:watcher:lease:local"  # (console.snapshots.store.acquire_lease)


@pytest.fixture(scope="module")
def second_web(stack: Stack) -> Iterator[str]:
    """Web B: the stack's own web command on a port of its own, with the same environment."""
    port = str(free_port())
    command = list(stack.commands["web"])
    command[command.index("-p") + 1] = port
    with open(TEST_VAR / "logs" / "web-b.log", "ab") as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=stack_env(), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: requests.get(url + "/healthz", timeout=2).json()["clusters"]["local"]["reachable"],
                 60, what="the second web process to answer")
        yield url
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def login(base_url: str, user: str = "viewer") -> requests.Session:
    """A browser-like session logged in through the login form of one web process."""
    session = requests.Session()
    session.get(base_url + "/login/", timeout=10)
    r = session.post(base_url + "/login/", timeout=30, headers={"Referer": base_url + "/login/"},
                     data={"username": user, "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    assert r.status_code == 200 and "Log out" in r.text, r.text[:500]
    return session


def logged_in(session: requests.Session, base_url: str) -> bool:
    r = session.get(base_url + "/clusters/local/", timeout=10, allow_redirects=False)
    return r.status_code == 200 and "Log out" in r.text


def live_socket(base_url: str, session: requests.Session, query: str) -> ClientConnection:
    """A page's live websocket, as the browser opens it (its origin, its session cookie)."""
    cookie = "; ".join(f"{k}={v}" for k, v in session.cookies.items())
    return connect(base_url.replace("http://", "ws://") + "/ws/clusters/local/live/?" + query, origin=Origin(base_url),
                   additional_headers={"Cookie": cookie}, proxy=None, max_queue=None, open_timeout=10)


def row_pushed(socket: Connection, topic: str, timeout: float) -> bool:
    """Does the socket receive, within `timeout`, a topics list fragment holding the topic's row?"""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = json.loads(socket.recv(timeout=left))
        except TimeoutError:
            return False
        if message["type"] == "fragment" and message["target"] == "live-topics" and f'data-topic="{topic}"' in message["html"]:
            return True
    return False


def test_a_login_made_on_one_web_process_is_valid_on_the_other_and_a_logout_ends_it_on_both(
        stack: Stack, second_web: str) -> None:
    session = login(stack.base_url)
    assert logged_in(session, second_web)
    r = session.post(second_web + "/logout/", data={"csrfmiddlewaretoken": session.cookies["csrftoken"]},
                     headers={"Referer": second_web + "/"}, timeout=10, allow_redirects=False)
    assert r.status_code == 302, r.text[:300]
    assert not logged_in(session, stack.base_url)


def test_a_topic_created_through_one_web_process_is_pushed_to_live_pages_on_both(stack: Stack, second_web: str) -> None:
    name = unique("two-webs")
    query = "view=topics&q=" + name
    with live_socket(stack.base_url, login(stack.base_url), query) as on_a, live_socket(second_web, login(second_web), query) as on_b:
        r = stack.api("operator").post(stack.base_url + API, json={"name": name, "partitions": 1, "replication_factor": 1},
                                       timeout=30)
        assert r.status_code == 201, r.text
        assert row_pushed(on_a, name, 20), "web A's live page never showed the topic"
        assert row_pushed(on_b, name, 20), "web B's live page never showed the topic web A created"


def test_a_topic_created_through_one_web_process_is_listed_at_once_by_the_other(stack: Stack, second_web: str) -> None:
    name = unique("two-webs-read")
    r = stack.api("operator").post(stack.base_url + API, json={"name": name, "partitions": 2, "replication_factor": 1},
                                   timeout=30)
    assert r.status_code == 201, r.text
    # (the list, not the topic's page: that one asks Kafka for a topic the snapshot lacks)
    r = stack.api().get(second_web + API, params={"q": name}, timeout=30)
    assert r.status_code == 200 and [t["name"] for t in r.json()["results"]] == [name], r.text[:500]


def lease_owner() -> str:
    owner = redis.Redis.from_url(f"redis://127.0.0.1:{REDIS_PORT}/0").get(LEASE)
    return owner.decode() if owner else ""


def watcher_name(proc: subprocess.Popen[bytes]) -> str:
    """The name `manage.py watch` holds its leases under (WATCHER_OWNER unset): host and its process id."""
    return f"{socket.gethostname()}:{proc.pid}"


def test_a_standby_watcher_takes_the_cluster_over_when_the_active_one_stops(stack: Stack, second_web: str) -> None:
    log_path = TEST_VAR / "logs" / "watcher-b.log"
    log_path.unlink(missing_ok=True)
    with open(log_path, "ab") as log:
        standby = subprocess.Popen([sys.executable, "manage.py", "watch"], cwd=ROOT, env=stack_env(), stdout=log,
                                   stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "watcher started" in log_path.read_text(errors="replace"), 60, what="the standby watcher to start")
        assert lease_owner() == watcher_name(stack.procs["watcher"]), "the standby took the lease from a running watcher"
        stop(stack.procs["watcher"])
        stopped = time.monotonic()
        wait_for(lambda: lease_owner() == watcher_name(standby), 30, what="the standby to take the lease")
        took = time.monotonic() - stopped
        assert took <= 20, f"the standby took the cluster over {took:.0f} s after the active watcher stopped"
        name = unique("standby")
        r = stack.api("operator").post(second_web + API, json={"name": name, "partitions": 1, "replication_factor": 1},
                                       timeout=30)
        assert r.status_code == 201, r.text
        r = stack.api().get(stack.base_url + API, params={"q": name}, timeout=30)
        assert [t["name"] for t in r.json()["results"]] == [name], r.text[:500]
    finally:
        stop(standby)
        stack.start_process("watcher")
        wait_for(lambda: lease_owner() == watcher_name(stack.procs["watcher"]), 60,
                 what="the stack's watcher to take the cluster back")
