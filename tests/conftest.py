"""Shared fixtures: the test Redis, the test Kafka cluster and the whole console running on it."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import (
    CHROMIUM_ARGS,
    OUTPUT,
    PASSWORD,
    Cluster,
    Stack,
    kafka_tool,
    running_cluster,
    running_redis,
    running_stack,
    unique,
    wait_for,
)

# TEST_DATABASE=postgres: the session's own PostgreSQL server, started and removed by this plugin.
pytest_plugins = ["tests.postgres_session"]

__all__ = ["OUTPUT", "PASSWORD", "Stack", "kafka_tool", "unique", "wait_for"]


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    with running_redis() as url:
        yield url


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[Cluster]:
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def connect_worker(kafka_cluster: Cluster) -> Iterator[str]:
    """The URL of a Kafka Connect worker on the test cluster (tests/connect_worker.py), started once for
    every module that needs it: each test uses connector names of its own."""
    from tests.connect_worker import running_connect_worker

    with running_connect_worker() as url:
        yield url


@pytest.fixture(scope="session")
def backup_cluster() -> Iterator[str]:
    """The bootstrap servers of the one-node cluster "backup" (tests/backup_cluster.py), MirrorMaker 2's
    target, started once for every module that needs it."""
    from tests.backup_cluster import running_backup_cluster

    with running_backup_cluster() as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def secured_broker() -> Iterator[Any]:
    """The one-node secured broker (tests/secured_broker.py), started once for every module that
    needs it: each module uses names of its own and removes the quotas it sets."""
    from tests.secured_broker import running_secured_broker

    with running_secured_broker() as tls:
        yield tls


@pytest.fixture(autouse=True)
def _no_broker_left_dead(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test on the cluster (but the fault tests, which kill nodes and bring them back
    themselves): a node that died is reported, with the end of its log, and started again, so one
    broker's death shows where it happened and does not fail every test after it."""
    yield
    if "stack" in request.fixturenames:
        _no_console_process_left_dead(request)
    if "kafka_cluster" not in request.fixturenames or "test_faults" in request.node.nodeid:
        return
    from django.conf import settings

    from console.devcluster import DevCluster

    cluster = DevCluster(settings.DEVCLUSTER_DIR, settings.DEVCLUSTER_BASE_PORT, log_level=settings.DEVCLUSTER_LOG_LEVEL)
    for st in cluster.status():
        if st.running:
            continue
        log = cluster.node_dir(st.node_id) / "server.log"
        tail = log.read_text(errors="replace").splitlines()[-40:] if log.exists() else ["(no log)"]
        warnings.warn(f"Kafka node {st.node_id} was found dead after {request.node.nodeid}; its log ends:\n"
                      + "\n".join(tail) + "\nstarting it again", stacklevel=1)
        request.getfixturevalue("kafka_cluster").start(st.node_id)


def _no_console_process_left_dead(request: pytest.FixtureRequest) -> None:
    """A console process (web, watcher, worker, beat) that exited during a test is reported with the
    end of its log and started again: the watcher once died of a native crash, and every test after
    it failed waiting for snapshots, far from the cause."""
    from tests.support import TEST_VAR

    stack: Stack = request.getfixturevalue("stack")
    for name, proc in list(stack.procs.items()):
        if proc.poll() is None:
            continue
        log = TEST_VAR / "logs" / f"{name}.log"
        tail = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else ["(no log)"]
        warnings.warn(f"console process '{name}' exited ({proc.returncode}) during {request.node.nodeid}; its log ends:\n"
                      + "\n".join(tail) + "\nstarting it again", stacklevel=1)
        stack.start_process(name)
    _report_watcher_restarts(stack)


def _report_watcher_restarts(stack: Stack) -> None:
    """A watcher child that died (its supervisor, `manage.py watch`, starts it again at once, so the
    process the stack started never exits) is reported with the lines its log holds before the
    supervisor's note: the native crash's own message ("double free or corruption", a librdkafka
    assertion) and faulthandler's thread stacks. The stack's logs are cleared at each session's
    start, and CI keeps only pytest's output: without this a crash left no trace but the tests it
    made fail."""
    from tests.support import TEST_VAR, crash_reports

    log = TEST_VAR / "logs" / "watcher.log"
    if not log.exists():
        return
    reports, stack.watcher_log_read = crash_reports(log.read_bytes(), stack.watcher_log_read)
    for report in reports:
        warnings.warn("the watcher process died and its supervisor started it again; its log before that:\n"
                      + report, stacklevel=1)


@pytest.fixture(scope="session")
def stack(redis_server: str, kafka_cluster: Cluster) -> Iterator[Stack]:
    with running_stack(kafka_cluster) as running:
        yield running


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(exist_ok=True)
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def logged_in_page(browser: Any, stack: Stack) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.goto(stack.base_url + "/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/clusters/local/")
    yield page
    context.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Fault tests kill brokers: run them after the others so those see a healthy cluster. The
    reassignment tests come after them: they use the 4th node the fault tests leave (and add it
    themselves when run alone), and they move replicas the fault tests' expectations do not allow for."""
    def order(item: pytest.Item) -> int:
        if "test_reassignment.py" in item.nodeid:
            return 2
        return 1 if "test_faults" in item.nodeid else 0

    items.sort(key=order)
