"""The test Redis, the test Kafka cluster and the whole console running on it (tests and bench).

One cluster per test session (3 KRaft nodes on ports 29092-29097, data under var/test/), started
by `manage.py devcluster` as a user would, so the suite runs beside `make run`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import requests

from console.devcluster import DevCluster
from tests import kafka_tools, postgres, workers  # noqa: F401 - workers: an xdist worker's own ports and data first
from tests.spark_conf import SMALL_SPARK_CONF

ROOT = Path(__file__).resolve().parent.parent
# A second suite (a helper's, say) can run beside this one with its own ports and data:
# TEST_KAFKA_BASE_PORT, TEST_REDIS_PORT and TEST_VAR_DIR (tests/settings.py reads the same names).
TEST_VAR = Path(os.environ.get("TEST_VAR_DIR") or ROOT / "var" / "test")
OUTPUT = ROOT / "test-output"
REDIS_PORT = int(os.environ.get("TEST_REDIS_PORT") or 6391)
SMTP_PORT = int(os.environ.get("TEST_SMTP_PORT") or REDIS_PORT + 20000)  # a test's own mail server (lag reports)
BASE_PORT = int(os.environ.get("TEST_KAFKA_BASE_PORT") or 29092)
# Every voter, as the console's own settings list them: with one node only, Kafka's tools (the
# oracle) and the tests' clients could not reach the cluster while that node was killed (the
# controller-kill test waited 60 s for an answer from the node it had killed).
# The test clusters' nodes and Connect workers compile with the JIT's first tier only: living minutes,
# they spent more CPU compiling than they saved (a third less to start and idle).
TEST_NODE_JVM_OPTS = ("-XX:TieredStopAtLevel=1",)
BOOTSTRAP = DevCluster(TEST_VAR / "cluster", BASE_PORT).bootstrap_servers()


def suite_cluster() -> DevCluster:
    """The suite's local cluster as this process handles it (start and kill a node, as `Cluster.run`'s
    processes do with the same heap and JVM options)."""
    return DevCluster(TEST_VAR / "cluster", BASE_PORT, heap="384m", jvm_opts=TEST_NODE_JVM_OPTS)
PASSWORD = "correct-horse-battery"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 0.25, what: str = "condition") -> Any:
    """Poll until predicate() returns something truthy; fail the test with `what` otherwise."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # the thing we wait for may not answer yet
            last_error = exc
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


def time_budget(seconds: float) -> float:
    """A promised delay as a test may hold the console to it: as promised on a machine with cores to
    spare, three times that while the machine is overloaded (`make test` runs four chains on two cores,
    at a load average of 16 to 18, when the console's processes wait their turn). The figures
    themselves are the benches' (docs/benchmarks.md); a test keeps the order of magnitude."""
    load = os.getloadavg()[0]
    return seconds * (3.0 if load > 2 * (os.cpu_count() or 1) else 1.0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stack_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "DATABASE_URL"))}
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        CONSOLE_VAR_DIR=str(TEST_VAR),
        REDIS_URL=f"redis://127.0.0.1:{REDIS_PORT}/0",
        DEVCLUSTER_BASE_PORT=str(BASE_PORT),
        DEVCLUSTER_DIR=str(TEST_VAR / "cluster"),
        DATABASE_URL=f"sqlite:///{TEST_VAR / 'stack.sqlite3'}",
        PYTHONUNBUFFERED="1",
        # A native crash (SIGSEGV, SIGABRT) prints every thread's Python stack into the process's log.
        PYTHONFAULTHANDLER="1",
        # Faster sampling than production, so tests wait less for offsets, sizes and groups.
        WATCHER_OFFSETS_INTERVAL="1",
        WATCHER_SIZES_INTERVAL="2",
        TIERED_POLL_INTERVAL="3",
        WATCHER_STARTS_INTERVAL="2",
        BALANCE_WATCH_INTERVAL="10",
        # The transactions side loop's look (hanging ones, the LSO of held partitions) every 2 s, not 15,
        # calling a transaction hanging after 3 s as the in-process transactions tests do: the pages they
        # read show the watcher's look.
        TRANSACTION_POLL_INTERVAL="2",
        TRANSACTION_HANGING_SECONDS="3",
        # Connect asked twice a second: a state change must reach an open page within 2 s of Connect
        # reporting it, and on a loaded host the hops after the poll (Redis, the socket) take most of a second.
        CONNECT_POLL_INTERVAL="0.5",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(SMTP_PORT),
        SPARK_CONF=";".join(f"{k}={v}" for k, v in SMALL_SPARK_CONF.items()),
        DEVCLUSTER_JVM_OPTS=" ".join(TEST_NODE_JVM_OPTS),
        **extra,
    )
    return env


def manage(*args: str, timeout: float = 180) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=stack_env(), capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


# One process for several management commands: each `manage.py` start sets Django up again (2 to 3 s of
# CPU, twenty seconds of wall time while the suite's four chains share the two cores).
_MANAGE_ALL = """
import io, json, sys
import django
django.setup()
from django.core.management import call_command
outputs = []
for args in json.loads(sys.argv[1]):
    out = io.StringIO()
    call_command(*args, stdout=out)
    outputs.append(out.getvalue())
print(json.dumps(outputs))
"""


def manage_all(commands: list[list[str]], env: dict[str, str] | None = None, timeout: float = 300) -> list[str]:
    """Run `manage.py` commands in order in one process (as `manage.py NAME ARGS` each would); their outputs."""
    done = subprocess.run([sys.executable, "-c", _MANAGE_ALL, json.dumps(commands)], cwd=ROOT, env=env or stack_env(),
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"manage.py {commands} failed:\n{done.stdout}\n{done.stderr}")
    outputs: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return outputs


def kafka_tool(name: str, *args: str, timeout: float = 90) -> str:
    """Run one of Apache Kafka's own tools (the oracle) against the test cluster."""
    done = kafka_tools.run(name, *args, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{name} {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout



@contextmanager
def running_redis() -> Iterator[str]:
    TEST_VAR.mkdir(parents=True, exist_ok=True)
    import redis

    with open(TEST_VAR / "redis.log", "wb") as log:
        proc = subprocess.Popen(
            ["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"redis://127.0.0.1:{REDIS_PORT}/0"
    try:
        wait_for(lambda: redis.Redis.from_url(url).ping(), 15, what="the test Redis")
        redis.Redis.from_url(url).flushall()
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


class Cluster:
    bootstrap = BOOTSTRAP

    def run(self, *args: str) -> str:
        return manage("devcluster", *args)

    def kill(self, node: int) -> None:
        self.run("kill", str(node))

    def start(self, node: int) -> None:
        self.run("start", str(node))

    def tool(self, name: str, *args: str) -> str:
        return kafka_tool(name, "--bootstrap-server", BOOTSTRAP, *args)


@contextmanager
def running_cluster(heap: str = "384m") -> Iterator[Cluster]:
    subprocess.run([sys.executable, "manage.py", "devcluster", "down", "--now"], cwd=ROOT, env=stack_env(), capture_output=True)
    shutil.rmtree(TEST_VAR / "cluster", ignore_errors=True)
    cluster = Cluster()
    try:
        cluster.run("up", "--heap", heap)
        yield cluster
    finally:
        subprocess.run([sys.executable, "manage.py", "devcluster", "down", "--now"], cwd=ROOT, env=stack_env(), capture_output=True,
                       timeout=120)


class Stack:
    """The console (web, watcher, Celery worker and beat) running against the test cluster."""

    def __init__(self, base_url: str, cluster: Cluster) -> None:
        self.base_url = base_url
        self.cluster = cluster
        self.tokens: dict[str, str] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.commands: dict[str, list[str]] = {}
        self.watcher_log_read = 0  # bytes of the watcher's log already searched for restarts (crash_reports)

    def start_process(self, name: str) -> None:
        logs = TEST_VAR / "logs"
        with open(logs / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(self.commands[name], cwd=ROOT, env=stack_env(), stdout=log, stderr=subprocess.STDOUT)

    def restart_process(self, name: str) -> None:
        """Stop one console process (web, watcher, worker, beat) and start it again."""
        proc = self.procs[name]
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        self.start_process(name)

    def api(self, user: str = "admin") -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = f"Token {self.tokens[user]}"
        return session

    def get(self, path: str, user: str = "admin", **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 10)
        return self.api(user).get(self.base_url + path, **kwargs)


@contextmanager
def running_stack(cluster: Cluster) -> Iterator[Stack]:
    # tests/settings.py drops DATABASE_URL, so the stack's processes share CONSOLE_VAR_DIR's database:
    # start it empty, or jobs and events of an earlier session would be read as this one's.
    for name in ("stack.sqlite3", "console.sqlite3"):
        for suffix in ("", "-wal", "-shm"):
            Path(str(TEST_VAR / name) + suffix).unlink(missing_ok=True)
    if postgres.ENABLED:
        postgres.recreate()
    stack = Stack(f"http://127.0.0.1:{free_port()}", cluster)
    roles = ("viewer", "operator", "admin")
    outputs = manage_all([["migrate", "-v0"], *(["ensureuser", role, "--role", role, "--password", PASSWORD] for role in roles),
                          *(["drf_create_token", role] for role in roles)])
    for role, output in zip(roles, outputs[-len(roles):], strict=True):
        stack.tokens[role] = output.split()[2]
    port = stack.base_url.rsplit(":", 1)[1]
    logs = TEST_VAR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    commands = {
        "web": [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", port, "console.asgi:application"],
        "watcher": [sys.executable, "manage.py", "watch"],
        "worker": [sys.executable, "-m", "celery", "-A", "console", "worker", "--pool", "threads", "--concurrency", "4", "--loglevel", "WARNING"],
        "analytics": [sys.executable, "-m", "celery", "-A", "console", "worker", "-Q", "analytics", "--pool", "solo",
                      "--concurrency", "1", "-n", "analytics@%h", "--loglevel", "WARNING"],
        "beat": [sys.executable, "-m", "celery", "-A", "console", "beat", "--loglevel", "WARNING",
                 "--schedule", str(TEST_VAR / "celerybeat-schedule")],
    }
    stack.commands = commands
    for name in commands:
        (logs / f"{name}.log").unlink(missing_ok=True)
        stack.start_process(name)
    try:
        wait_for(lambda: requests.get(stack.base_url + "/healthz", timeout=2).json()["clusters"]["local"]["reachable"],
                 60, what="the console to report the test cluster reachable")
        yield stack
    finally:
        for proc in stack.procs.values():
            proc.terminate()
        for proc in stack.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


RESTART_NOTE = b"The watcher process ended ("


def crash_reports(log: bytes, read: int, context: int = 60, reach: int = 400) -> tuple[list[str], int]:
    """The supervisor's notes of a watcher child that ended, in `log` past its first `read` bytes,
    each with what the child wrote as it died: from a few lines before faulthandler's "Fatal Python
    error" (the native library's own message comes just before it) when that is within `reach`
    lines, else the `context` lines before the note; and how far the log was read: up to its last
    complete line, so a note being written is found whole next time."""
    end = log.rfind(b"\n") + 1
    if end <= read:
        return [], read
    reports = []
    at = log.find(RESTART_NOTE, read, end)
    while at >= 0:
        line_end = log.find(b"\n", at)
        lines = log[:line_end].decode(errors="replace").splitlines()[-reach - 1:]
        fatal = [i for i, line in enumerate(lines) if line.startswith("Fatal Python error")]
        first = max(0, fatal[-1] - 3) if fatal else max(0, len(lines) - context - 1)
        reports.append("\n".join(lines[first:]))
        at = log.find(RESTART_NOTE, line_end, end)
    return reports, end


def unique(prefix: str) -> str:
    return f"{prefix}-{int(time.time() * 1000) % 10_000_000}"


T = TypeVar("T")


def off_the_test_thread(call: Callable[[], T]) -> T:
    """`call()` in a thread of its own, for async_to_sync in a test that needs no database: a browser test
    earlier in the session leaves Playwright's event loop running in the test thread, where
    async_to_sync refuses to run (pytest-django runs the tests without a database last)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()
