"""The console under load on PostgreSQL holds its connections within its pools' bounds.

On a Debian PostgreSQL with its 100 connections, a connection kept per thread (the web server runs
each request in a thread of its own, the Celery worker runs tasks in threads) once used them all up:
API calls answered 500. Here many threads load pages and call the API at once while the Celery worker
is kept busy with tasks that use the database, and the server's connections (pg_stat_activity) are
counted throughout: no process holds more than DATABASE_POOL_MAX_SIZE, and no request fails.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.conf import settings

from tests import postgres
from tests.conftest import PASSWORD, Stack, wait_for

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(not postgres.ENABLED, reason="counts PostgreSQL's connections (TEST_DATABASE=postgres)")]

API_PATHS = ["/api/v1/clusters/local/", "/api/v1/clusters/local/topics/", "/api/v1/clusters/local/brokers/",
             "/api/v1/clusters/local/events/", "/api/v1/clusters/local/consumer-groups/",
             "/api/v1/clusters/local/rebalances/most-frequent/", "/api/v1/audit/"]
PAGE_PATHS = ["/clusters/local/", "/clusters/local/topics/", "/clusters/local/events/", "/clusters/local/groups/"]
DB_TASKS = ["brokers_app.tasks.prune_events", "consumers_app.tasks.prune_rebalances",
            "brokers_app.tasks.reassignment_watchdog", "analytics.tasks.fail_lost_runs"]
THREADS = 40
SECONDS = 20.0


def _page_session(stack: Stack) -> requests.Session:
    session = requests.Session()
    session.get(stack.base_url + "/login/", timeout=10)
    r = session.post(stack.base_url + "/login/", timeout=30, headers={"Referer": stack.base_url + "/login/"},
                     data={"username": "admin", "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    assert r.status_code == 200 and "Log out" in r.text, r.text[:500]
    return session


def _connections_by_process() -> Counter[str]:
    with postgres._admin() as conn:
        rows = conn.execute("SELECT application_name, count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                            "AND datname = %s GROUP BY application_name", [postgres.DATABASE]).fetchall()
    return Counter({name: int(count) for name, count in rows})


def test_many_requests_and_a_busy_worker_hold_each_process_within_its_pool_and_none_fails(stack: Stack):
    from console.celery import app

    bound = settings.DATABASES["default"]["OPTIONS"]["pool"]["max_size"]
    stop = threading.Event()
    peaks: Counter[str] = Counter()
    peak_total = [0]

    def count() -> None:
        while not stop.is_set():
            seen = _connections_by_process()
            for name, n in seen.items():
                peaks[name] = max(peaks[name], n)
            peak_total[0] = max(peak_total[0], sum(seen.values()))
            time.sleep(0.05)

    answers: Counter[int] = Counter()
    failures: list[str] = []
    lock = threading.Lock()

    def load(i: int) -> None:
        pages = i % 2 == 0
        session = _page_session(stack) if pages else stack.api("admin")
        paths = PAGE_PATHS if pages else API_PATHS
        end = time.monotonic() + SECONDS
        n = i
        while time.monotonic() < end:
            path = paths[n % len(paths)]
            n += 1
            try:
                status = session.get(stack.base_url + path, timeout=30).status_code
            except requests.RequestException as exc:
                status, detail = -1, f"{path}: {exc}"
            else:
                detail = f"{path}: {status}"
            with lock:
                answers[status] += 1
                if status != 200:
                    failures.append(detail)

    counter = threading.Thread(target=count, daemon=True)
    counter.start()
    for i in range(400):
        app.send_task(DB_TASKS[i % len(DB_TASKS)])
    try:
        with ThreadPoolExecutor(max_workers=THREADS) as executor:
            list(executor.map(load, range(THREADS)))
        import redis

        queue = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        wait_for(lambda: queue.llen("celery") == 0, 120, what="the Celery worker to take every task")
    finally:
        stop.set()
        counter.join(5)
    print(f"\nrequests: {dict(answers)}; peak connections: total {peak_total[0]}, by process {dict(peaks)}")
    assert not failures, f"{len(failures)} of {sum(answers.values())} requests failed: {Counter(failures).most_common(5)}"
    assert sum(answers.values()) > THREADS * 5
    assert peaks, "no connection of the console's was ever seen"
    assert all(name.startswith("kafka-console ") for name in peaks), peaks
    assert max(peaks.values()) <= bound, peaks
    assert peak_total[0] < 97  # (Debian's 100, less the 3 reserved for superusers)
